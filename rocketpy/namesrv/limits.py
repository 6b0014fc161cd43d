"""What one request may make the NameServer hold: body sizes by request code, and a registration's topics.

Java 4.9.8's NameServer bounds only the frame (16 MiB): a hostile or buggy broker's REGISTER_BROKER of
1,000,000 compressed topics (2.6 MB) inflated, decoded and filed them all. Each limit is a key of ours in
``namesrv.properties`` (:data:`.config.LIMITS`, 0 or less lifts it, as Java); a request over one is answered
SYSTEM_ERROR with a remark naming the key and one log line in the dispatcher's form for refused requests,
before anything of it is decoded (a body's size, a compressed registration's inflated size and topic count)
or kept (a plain registration's topic count, read once it is decoded).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..codecs import RemotingCommand, RequestCode, ResponseCode
from ..remoting.dispatch import body_over_limit, log_refusal

if TYPE_CHECKING:
    from .processor import NamesrvContext

log = logging.getLogger("rocketpy.namesrv")

#: request code -> the key bounding its body, in bytes
BODY_LIMITS: dict[int, str] = {
    RequestCode.REGISTER_BROKER: "registerBrokerMaxBodySize",
    RequestCode.QUERY_DATA_VERSION: "queryDataVersionMaxBodySize",
    RequestCode.UPDATE_NAMESRV_CONFIG: "updateNamesrvConfigMaxBodySize",
}
#: a REGISTER_BROKER's topics
MAX_TOPICS = "registerBrokerMaxTopics"


def refuse(ctx: NamesrvContext, request: RemotingCommand, cause: str) -> RemotingCommand:
    """SYSTEM_ERROR with ``cause`` as its remark, and one log line."""
    log_refusal(log, ctx.remote_addr, request, cause)
    return request.response(ResponseCode.SYSTEM_ERROR, remark=cause)


def body_refusal(ctx: NamesrvContext, request: RemotingCommand) -> RemotingCommand | None:
    """The refusal of a request whose body is over its code's limit; None when it is within it."""
    key = BODY_LIMITS.get(request.code)
    if key is None:
        return None
    cause = body_over_limit(request, key, ctx.state.config.limit(key))
    return None if cause is None else refuse(ctx, request, cause)


def topics_cause(count: int, limit: int) -> str:
    return f"REGISTER_BROKER with {count} topics is over {MAX_TOPICS}={limit}"


def inflated_cause(limit: int, key_limit: int) -> str:
    """A compressed body inflating past ``limit`` bytes: the key's (``key_limit``), or the hard cap when the
    key is lifted or higher."""
    if limit == key_limit:
        return f"REGISTER_BROKER body inflates past registerBrokerMaxBodySize={key_limit} bytes"
    return f"REGISTER_BROKER body inflates past {limit} bytes, the most a compressed registration may"
