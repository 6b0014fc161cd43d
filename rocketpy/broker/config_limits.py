"""What one request may make the broker hold: body sizes by request code, and a heartbeat's groups and
subscriptions.

Java 4.9.8 bounds only the frame (16 MiB, ``com.rocketmq.remoting.frameMaxLength``) and a message
(``maxMessageSize``, checked by the send path and the store): a 14 MiB HEART_BEAT of 100,000
subscriptions was decoded and registered while every other connection's sends waited 1.5 s. Each limit
here is a broker.conf key of ours, in Java's style (a setting like any other, UPDATE_BROKER_CONFIG too);
0 or less lifts it. A request over one is answered SYSTEM_ERROR, naming the key, with one log line in the
dispatcher's form for refused requests, and nothing of it is kept.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..codecs import RemotingCommand, ResponseCode
from ..codecs.bodies import HeartbeatData
from ..codecs.codes import RequestCode
from ..remoting.dispatch import body_over_limit, log_refusal
from .responses import error

if TYPE_CHECKING:
    from .config import BrokerConfig
    from .context import BrokerContext

log = logging.getLogger("rocketpy.broker")

#: request code -> the BrokerConfig attribute bounding its body, in bytes (the key is its camelCase name)
BODY_LIMITS: dict[int, str] = {
    RequestCode.HEART_BEAT: "heartbeat_max_body_size",
    RequestCode.LOCK_BATCH_MQ: "lock_batch_mq_max_body_size",
    RequestCode.UNLOCK_BATCH_MQ: "lock_batch_mq_max_body_size",
    RequestCode.CHECK_CLIENT_CONFIG: "check_client_config_max_body_size",
    RequestCode.UPDATE_BROKER_CONFIG: "update_broker_config_max_body_size",
    # the only subscription-group request of 4.9.8 with a body (DELETE_SUBSCRIPTIONGROUP has a header only)
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: "subscription_group_max_body_size",
}


def key_of(attr: str) -> str:
    """The broker.conf key of a limit attribute (``heartbeat_max_body_size`` -> ``heartbeatMaxBodySize``)."""
    head, *rest = attr.split("_")
    return head + "".join(part.title() for part in rest)


def refuse(ctx: BrokerContext, request: RemotingCommand, cause: str) -> RemotingCommand:
    """SYSTEM_ERROR with ``cause`` as its remark, and one log line (the dispatcher's for a refused request)."""
    log_refusal(log, ctx.remote_addr, request, cause)
    return error(request, ResponseCode.SYSTEM_ERROR, cause)


def body_refusal(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand | None:
    """The refusal of a request whose body is over its code's limit; None when it is within it."""
    attr = BODY_LIMITS.get(request.code)
    if attr is None:
        return None
    cause = body_over_limit(request, key_of(attr), getattr(ctx.state.config, attr))
    return None if cause is None else refuse(ctx, request, cause)


def heartbeat_refusal(config: BrokerConfig, data: HeartbeatData) -> str | None:
    """Why a decoded heartbeat is refused (more groups or subscriptions than the limits), or None."""
    groups = len(data.consumer_data_set or ()) + len(data.producer_data_set or ())
    if 0 < config.heartbeat_max_groups < groups:
        return f"HEART_BEAT with {groups} groups is over heartbeatMaxGroups={config.heartbeat_max_groups}"
    subs = sum(len(cd.subscription_data_set or ()) for cd in data.consumer_data_set or () if cd is not None)
    if 0 < config.heartbeat_max_subscriptions < subs:
        return (f"HEART_BEAT with {subs} subscriptions is over "
                f"heartbeatMaxSubscriptions={config.heartbeat_max_subscriptions}")
    return None
