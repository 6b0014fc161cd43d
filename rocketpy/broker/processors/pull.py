"""PULL_MESSAGE (PullMessageProcessor): read a queue, filter by tag, hold when empty."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from ...codecs import RemotingCommand, ResponseCode
from ...codecs.bodies import MessageQueue, OffsetMovedEvent, SubscriptionData, build_subscription
from ...codecs.codes import ExpressionType, MessageConst, MessageModel, MixAll, PermName, PullSysFlag
from ...codecs.message import properties_to_string
from ...javacompat.lang import to_int32
from ...store import GetMessageStatus
from ...store.types import MessageExtBrokerInner
from ..filter import pull_filter
from ..longpoll import HeldPull, now_ms
from ..responses import error, respond
from .common import SUGGEST_TODO

if TYPE_CHECKING:
    from ..context import BrokerContext
    from ..controller import BrokerController

log = logging.getLogger("rocketpy.broker")

_COMMIT = int(PullSysFlag.FLAG_COMMIT_OFFSET)
_SUSPEND = int(PullSysFlag.FLAG_SUSPEND)
_SUBSCRIPTION = int(PullSysFlag.FLAG_SUBSCRIPTION)


class SubscriptionFilter:
    """ExpressionMessageFilter for TAG subscriptions: tag hash codes on the ConsumeQueue."""

    __slots__ = ("match_all", "codes")

    def __init__(self, sub: SubscriptionData | None) -> None:
        self.match_all = (
            sub is None
            or sub.class_filter_mode
            or not ExpressionType.is_tag_type(sub.expression_type)
            or sub.sub_string == "*"
        )
        self.codes = frozenset(sub.code_set) if sub is not None else frozenset()

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        if self.match_all or tags_code is None:
            return True
        return to_int32(tags_code) in self.codes

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        return True


def _pull_error(request: RemotingCommand, code: int, remark: str) -> RemotingCommand:
    return error(request, code, remark, header=True)


def process_pull(
    broker: BrokerController, ctx: BrokerContext, request: RemotingCommand, allow_suspend: bool = True
) -> RemotingCommand | None:
    cfg = broker.config
    ext = request.ext_fields or {}
    try:
        group = ext["consumerGroup"]
        topic = ext["topic"]
        queue_id = int(ext["queueId"])
        queue_offset = int(ext["queueOffset"])
        max_nums = int(ext["maxMsgNums"])
        sys_flag = int(ext["sysFlag"])
        commit_offset = int(ext["commitOffset"])
        suspend_ms = int(ext["suspendTimeoutMillis"])
        sub_version = int(ext["subVersion"])
    except KeyError as exc:
        raise ValueError(f"the custom field <{exc.args[0]}> is null") from None
    if not PermName.is_readable(cfg.broker_permission):
        return _pull_error(
            request, ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip1}] pulling message is forbidden"
        )
    sub_cfg = broker.groups.find(group)
    if sub_cfg is None:
        return _pull_error(
            request,
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            f"subscription group [{group}] does not exist, {SUGGEST_TODO}",
        )
    if not sub_cfg.consume_enable:
        return _pull_error(request, ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
    has_suspend = bool(sys_flag & _SUSPEND)
    has_commit = bool(sys_flag & _COMMIT)
    tc = broker.topics.get(topic)
    if tc is None:
        return _pull_error(
            request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please! {SUGGEST_TODO}"
        )
    if not PermName.is_readable(tc.perm):
        return _pull_error(request, ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden")
    if queue_id < 0 or queue_id >= tc.read_queue_nums:
        return _pull_error(
            request,
            ResponseCode.SYSTEM_ERROR,
            f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{tc.read_queue_nums}] "
            f"consumer:[/{ctx.remote_addr}]",
        )
    if sys_flag & _SUBSCRIPTION:
        sub = build_subscription(topic, ext.get("subscription"), ext.get("expressionType"))
    else:
        info = broker.consumers.get(group)
        if info is None:
            return _pull_error(
                request, ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's group info not exist{SUGGEST_TODO}"
            )
        if not sub_cfg.consume_broadcast_enable and info.message_model == MessageModel.BROADCASTING:
            return _pull_error(
                request, ResponseCode.NO_PERMISSION, f"the consumer group[{group}] can not consume by broadcast way"
            )
        found = info.subscriptions.get(topic)
        if found is None:
            return _pull_error(
                request, ResponseCode.SUBSCRIPTION_NOT_EXIST, f"the consumer's subscription not exist{SUGGEST_TODO}"
            )
        if found.sub_version < sub_version:
            return _pull_error(request, ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        sub = found
    flt: Any = SubscriptionFilter(sub)
    if broker.filter_support_retry or not ExpressionType.is_tag_type(sub.expression_type):  # SQL92 (filter.py)
        flt = pull_filter(broker, request, sub, group, topic, sub_version, bool(sys_flag & _SUBSCRIPTION), flt)
        if isinstance(flt, RemotingCommand):
            return flt
    if not ExpressionType.is_tag_type(sub.expression_type) and not cfg.enable_property_filter:
        return _pull_error(
            request,
            ResponseCode.SYSTEM_ERROR,
            f"The broker does not support consumer to filter message by {sub.expression_type}",
        )
    began = time.perf_counter()
    result = broker.store.get_message(topic, queue_id, queue_offset, max_nums, flt)
    broker.store_stats.latency.get(int((time.perf_counter() - began) * 1000))
    if result is None:
        return _pull_error(request, ResponseCode.SYSTEM_ERROR, "store getMessage return null")
    status = result.status
    header = {
        "suggestWhichBrokerId": str(suggest_which_broker_id(broker, sub_cfg, result.suggest_pulling_from_slave)),
        "nextBeginOffset": str(result.next_begin_offset),
        "minOffset": str(result.min_offset),
        "maxOffset": str(result.max_offset),
    }
    body = None
    # DefaultMessageStore.getMessage counts every read as found or missed
    broker.stats["get_found" if status is GetMessageStatus.FOUND else "get_miss"] += 1
    if status is GetMessageStatus.FOUND:
        code = ResponseCode.SUCCESS
        body = result.body()
        broker.stats["get"] += result.message_count
    elif status is GetMessageStatus.MESSAGE_WAS_REMOVING or status is GetMessageStatus.NO_MATCHED_MESSAGE:
        code = ResponseCode.PULL_RETRY_IMMEDIATELY
    elif status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
        code = ResponseCode.PULL_OFFSET_MOVED if queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
    elif status in (GetMessageStatus.OFFSET_FOUND_NULL, GetMessageStatus.OFFSET_OVERFLOW_ONE):
        code = ResponseCode.PULL_NOT_FOUND
    else:  # OFFSET_OVERFLOW_BADLY, OFFSET_TOO_SMALL
        code = ResponseCode.PULL_OFFSET_MOVED
    if code == ResponseCode.PULL_OFFSET_MOVED and broker.ha.is_slave and not cfg.store.offset_check_in_slave:
        # a slave does not correct offsets (no OFFSET_MOVED_EVENT): "retry", at the group's broker
        header["suggestWhichBrokerId"] = str(int(sub_cfg.broker_id))
        code = ResponseCode.PULL_RETRY_IMMEDIATELY
    response: RemotingCommand | None
    if code == ResponseCode.PULL_NOT_FOUND and allow_suspend and has_suspend:
        polling = suspend_ms if cfg.long_polling_enable else cfg.short_polling_time_mills
        held = HeldPull(request, ctx, polling, now_ms(), queue_offset, flt, resume_pull)
        broker.hold.suspend(topic, queue_id, held)
        response = None
    else:
        response = respond(request, code, status.name, header=header, fast=True, body=body)
    if code == ResponseCode.PULL_OFFSET_MOVED:
        _offset_moved_event(broker, group, topic, queue_id, queue_offset, result.next_begin_offset)
    if allow_suspend and has_commit and not broker.ha.is_slave:  # a slave keeps the master's offsets
        broker.offsets.commit(group, topic, queue_id, commit_offset)
    return response


def suggest_which_broker_id(broker: BrokerController, sub_cfg: Any, suggest_pulling_from_slave: bool) -> int:
    """PullMessageProcessor's suggestWhichBrokerId: with slaveReadEnable, the group's
    whichBrokerWhenConsumeSlowly when the pull reads far behind the CommitLog's end (beyond
    accessMessageInMemoryMaxRatio of memory), else its brokerId; without it, always the master.

    (Java also sets PULL_RETRY_IMMEDIATELY on a slave without slaveReadEnable, then overwrites
    the code from the read's status: the messages are served all the same.)
    """
    if not broker.config.slave_read_enable:
        return MixAll.MASTER_ID
    if suggest_pulling_from_slave:
        return int(sub_cfg.which_broker_when_consume_slowly)
    return int(sub_cfg.broker_id)


def pull_message(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand | None:
    return process_pull(ctx.state, ctx, request, True)


def _offset_moved_event(broker: BrokerController, group: str, topic: str, queue_id: int, old: int, new: int) -> None:
    """generateOffsetMovedEvent: a record of the correction in OFFSET_MOVED_EVENT, tagged by group."""
    mq = MessageQueue(topic=topic, broker_name=broker.config.broker_name, queue_id=queue_id)
    event = OffsetMovedEvent(consumer_group=group, message_queue=mq, offset_request=old, offset_new=new)
    props = {MessageConst.PROPERTY_TAGS: group}
    msg = MessageExtBrokerInner(
        topic=MixAll.RMQ_SYS_OFFSET_MOVED_EVENT,
        body=event.encode(),
        properties=props,
        properties_string=properties_to_string(props),
        queue_id=0,
        born_timestamp=now_ms(),
        born_host=broker.store_host,
        store_host=broker.store_host,
    )
    result = broker.put_now(msg)
    if not result.is_ok:
        log.warning("generateOffsetMovedEvent failed: %s", result.status)


def resume_pull(broker: BrokerController, held: HeldPull) -> RemotingCommand | None:
    """A held pull read again when woken (executeRequestWhenWakeup): answered now, never held again."""
    return process_pull(broker, held.ctx, held.request, allow_suspend=False)
