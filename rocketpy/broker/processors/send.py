"""SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE and CONSUMER_SEND_MSG_BACK.

The hot path reads the few header fields it needs straight from ``ext_fields`` (V2
one-letter names or V1 long names) instead of building a typed header.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import construct as cs

from ...codecs import RemotingCommand, RequestCode, ResponseCode
from ...codecs.codes import MessageConst, MessageSysFlag, MixAll, MQVersion, PermName, TopicSysFlag
from ...codecs.headers import ConsumerSendMsgBackRequestHeader
from ...codecs.headers.registry import V2_SEND_CODES
from ...codecs.message import BATCH_ENTRY, properties_to_string, string_to_properties
from ...javacompat.hashmap import hashmap_dict, property_key_order
from ...javacompat.lang import parse_java_int
from ...remoting import java_decode_header
from ...store.types import MessageExtBatch, MessageExtBrokerInner, PutMessageResult, PutMessageStatus
from ..responses import error, respond
from .common import SUGGEST_TODO, host_of

if TYPE_CHECKING:
    from ..context import BrokerContext
    from ..controller import BrokerController

log = logging.getLogger("rocketpy.broker")

_V2 = {
    "producerGroup": "a",
    "topic": "b",
    "defaultTopic": "c",
    "defaultTopicQueueNums": "d",
    "queueId": "e",
    "sysFlag": "f",
    "bornTimestamp": "g",
    "flag": "h",
    "properties": "i",
    "reconsumeTimes": "j",
    "unitMode": "k",
    "maxReconsumeTimes": "l",
    "batch": "m",
}
DLQ_NUMS_PER_GROUP = 1
_WAIT = MessageConst.PROPERTY_WAIT_STORE_MSG_OK
_CLUSTER = MessageConst.PROPERTY_CLUSTER
_TRAN_PREPARED = int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)
_TRAN_MASK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)


class SendHeader:
    """The send request header fields, read once from ext_fields."""

    __slots__ = (
        "producer_group",
        "topic",
        "default_topic",
        "default_topic_queue_nums",
        "queue_id",
        "sys_flag",
        "born_timestamp",
        "flag",
        "properties",
        "reconsume_times",
        "unit_mode",
        "max_reconsume_times",
        "batch",
    )

    def __init__(self, request: RemotingCommand) -> None:
        values = send_header_values(request)
        if values is None:
            ext = request.ext_fields or {}
            names = _V2_NAMES if request.code in V2_SEND_CODES else _V1_NAMES
            missing = next(n for n, wire in zip(_FIELDS[:8], names) if ext.get(wire) is None)
            # what Java's decodeCommandCustomHeader throws, answered as SYSTEM_ERROR
            raise ValueError(f"the custom field <{missing}> is null")
        (group, topic, dtopic, dnums, qid, sflag, born, flag, props, rt, unit, mrt, batch) = values
        self.producer_group = group
        self.topic = topic
        self.default_topic = dtopic
        self.default_topic_queue_nums = _java_int(dnums)
        self.queue_id = _java_int(qid)
        self.sys_flag = _java_int(sflag)
        self.born_timestamp = _java_int(born, 64)
        self.flag = _java_int(flag)
        self.properties = props
        self.reconsume_times = _java_int(rt) if rt else 0
        self.unit_mode = unit is not None and unit.lower() == "true"
        self.max_reconsume_times = _java_int(mrt) if mrt else None
        self.batch = batch is not None and batch.lower() == "true"


def _java_int(text: str, bits: int = 32) -> int:
    """Integer.parseInt / Long.parseLong: a value beyond the Java type is refused as Java refuses it (the
    send is answered SYSTEM_ERROR), never carried on to the record builder."""
    value = parse_java_int(text, bits)
    if value is None:
        raise ValueError(f'For input string: "{text[:64]}"')
    return value


def send_header_values(request: RemotingCommand) -> tuple[str, ...] | None:
    """The send header's wire values in _FIELDS order (V2 one-letter or V1 names; absent optional ones
    None), or None when one of the eight @CFNotNull fields is missing."""
    ext = request.ext_fields or {}
    values = tuple(map(ext.get, _V2_NAMES if request.code in V2_SEND_CODES else _V1_NAMES))
    return None if None in values[:8] else values  # type: ignore[return-value]


_FIELDS = (
    "producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp",
    "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch",
)  # fmt: skip
_V1_NAMES = _FIELDS
_V2_NAMES = tuple(_V2[n] for n in _FIELDS)


def props_string(props: dict[str, str]) -> str:
    """messageProperties2String of a Java HashMap holding ``props``."""
    return "\x02".join([f"{k}\x01{v}" for k in property_key_order(tuple(props)) if (v := props[k]) is not None])


def send_extra(broker: BrokerController) -> dict[str, str]:
    cfg = broker.config
    return {
        MessageConst.PROPERTY_MSG_REGION: cfg.region_id,
        MessageConst.PROPERTY_TRACE_SWITCH: "true" if cfg.trace_on else "false",
    }


def _send_error(broker: BrokerController, request: RemotingCommand, code: int, remark: str) -> RemotingCommand:
    # Java made this response with SendMessageResponseHeader and the two ext fields
    return respond(request, code, remark, header={}, extra=send_extra(broker), fast=True)


#: names already checked (the check costs 1-10 us a send), at most VALID_TOPICS_KEPT: a peer sending
#: made-up names (the topic need not exist to be checked) kept 100,000 of them, some 25 MB, for good
_VALID_TOPICS: set[str] = set()
VALID_TOPICS_KEPT = 4096


def validate_topic(topic: str) -> str | None:
    """TopicValidator.validateTopic's remark for a bad name, else None."""
    if topic in _VALID_TOPICS:
        return None
    if not topic.strip():
        return "The specified topic is blank."
    if MixAll.is_topic_or_group_illegal(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > MixAll.TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    if len(_VALID_TOPICS) >= VALID_TOPICS_KEPT:
        _VALID_TOPICS.clear()
    _VALID_TOPICS.add(topic)
    return None


def msg_check(
    broker: BrokerController, ctx: BrokerContext, request: RemotingCommand, h: SendHeader
) -> tuple[Any, RemotingCommand | None]:
    """AbstractSendMessageProcessor.msgCheck: (topic config, error response or None)."""
    cfg = broker.config
    if not PermName.is_writeable(cfg.broker_permission) and broker.topics.is_order(h.topic):
        return None, _send_error(
            broker, request, ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip1}] sending message is forbidden"
        )
    bad = validate_topic(h.topic)
    if bad is not None:
        return None, _send_error(broker, request, ResponseCode.SYSTEM_ERROR, bad)
    if MixAll.is_not_allowed_send_topic(h.topic):
        return None, _send_error(
            broker, request, ResponseCode.NO_PERMISSION, f"Sending message to topic[{h.topic}] is forbidden."
        )
    tc = broker.topics.get(h.topic)
    if tc is None:
        sys_flag = 0
        is_retry = h.topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX)
        if h.unit_mode:
            sys_flag = (
                TopicSysFlag.build_sys_flag(False, True) if is_retry else TopicSysFlag.build_sys_flag(True, False)
            )
        tc = broker.topics.create_in_send(
            h.topic, h.default_topic, ctx.remote_addr, h.default_topic_queue_nums, sys_flag
        )
        if tc is None and is_retry:
            tc = broker.topics.create_in_send_back(h.topic, 1, int(PermName.PERM_WRITE | PermName.PERM_READ), sys_flag)
        if tc is None:
            return None, _send_error(
                broker,
                request,
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{h.topic}] not exist, apply first please!{SUGGEST_TODO}",
            )
    valid = max(tc.write_queue_nums, tc.read_queue_nums)
    if h.queue_id >= valid:
        return None, _send_error(
            broker,
            request,
            ResponseCode.SYSTEM_ERROR,
            f"request queueId[{h.queue_id}] is illegal, {_topic_config_text(tc)} Producer: {ctx.remote_addr}",
        )
    return tc, None


def _topic_config_text(tc: Any) -> str:
    ftype = tc.topic_filter_type.name if tc.topic_filter_type is not None else "null"
    return (
        f"TopicConfig [topicName={tc.topic_name}, readQueueNums={tc.read_queue_nums}, "
        f"writeQueueNums={tc.write_queue_nums}, perm={PermName.perm_to_string(tc.perm)}, "
        f"topicFilterType={ftype}, topicSysFlag={tc.topic_sys_flag}, order={'true' if tc.order else 'false'}]"
    )


def _handle_retry_and_dlq(
    broker: BrokerController, request: RemotingCommand, h: SendHeader, msg: MessageExtBrokerInner
) -> RemotingCommand | None:
    """Sends to %RETRY%group past maxReconsumeTimes go to %DLQ%group (handleRetryAndDLQ)."""
    topic = h.topic
    if not topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX):
        return None
    group = topic[len(MixAll.RETRY_GROUP_TOPIC_PREFIX) :]
    sub = broker.groups.find(group)
    if sub is None:
        return _send_error(
            broker,
            request,
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            f"subscription group not exist, {group} {SUGGEST_TODO}",
        )
    max_times = sub.retry_max_times
    if request.version >= MQVersion.V3_4_9 and h.max_reconsume_times is not None:
        max_times = h.max_reconsume_times
    if h.reconsume_times >= max_times:
        dlq = MixAll.get_dlq_topic(group)
        tc = broker.topics.create_in_send_back(dlq, DLQ_NUMS_PER_GROUP, int(PermName.PERM_WRITE), 0)
        if tc is None:
            return _send_error(broker, request, ResponseCode.SYSTEM_ERROR, f"topic[{dlq}] not exist")
        msg.topic = dlq
        msg.queue_id = broker.queue_id_random(DLQ_NUMS_PER_GROUP)
    return None


def build_inner(
    broker: BrokerController, ctx: BrokerContext, request: RemotingCommand, h: SendHeader, queue_id: int
) -> MessageExtBrokerInner:
    props = string_to_properties(h.properties)
    props[_CLUSTER] = broker.config.broker_cluster_name
    wait = props.pop(_WAIT, None)
    stored = props_string(props)  # Java drops WAIT from the stored string to save 9 bytes
    if wait is not None:
        props[_WAIT] = wait
    return MessageExtBrokerInner(
        topic=h.topic,
        body=request.body or b"",
        flag=h.flag,
        properties=props,
        properties_string=stored,
        queue_id=queue_id,
        sys_flag=h.sys_flag,
        born_timestamp=h.born_timestamp,
        born_host=host_of(ctx),
        store_host=broker.store_host,
        reconsume_times=h.reconsume_times,
    )


def put_error(
    result: PutMessageResult | None, disk_util: Callable[[], str] | None = None,
    max_message_size: int = 4 * 1024 * 1024,
) -> tuple[int, str | None, bool]:
    """handlePutMessageResult: (code, remark, send ok); ``disk_util`` gives the store's disk use for the
    SERVICE_NOT_AVAILABLE remark (MessageStore.disk_util), ``max_message_size`` the broker's
    ``maxMessageSize`` for the MESSAGE_ILLEGAL one."""
    if result is None:
        return ResponseCode.SYSTEM_ERROR, "store putMessage return null", False
    s = result.status
    if s is PutMessageStatus.PUT_OK:
        return ResponseCode.SUCCESS, None, True
    if s is PutMessageStatus.FLUSH_DISK_TIMEOUT:
        return ResponseCode.FLUSH_DISK_TIMEOUT, None, True
    if s is PutMessageStatus.FLUSH_SLAVE_TIMEOUT:
        return ResponseCode.FLUSH_SLAVE_TIMEOUT, None, True
    if s is PutMessageStatus.SLAVE_NOT_AVAILABLE:
        return ResponseCode.SLAVE_NOT_AVAILABLE, None, True
    if s is PutMessageStatus.CREATE_MAPEDFILE_FAILED:
        return ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken.", False
    if s in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
        return (
            ResponseCode.MESSAGE_ILLEGAL,
            "the message is illegal, maybe msg body or properties length not matched. msg body length limit "
            f"{max_message_size}B, msg properties length limit 32KB.",
            False,
        )
    if s is PutMessageStatus.SERVICE_NOT_AVAILABLE:
        return (
            ResponseCode.SERVICE_NOT_AVAILABLE,
            "service not available now. It may be caused by one of the following reasons: the broker's disk is "
            f"full [{disk_util() if disk_util is not None else ''}], messages are put to the slave, message store "
            "has been shut down, etc.",
            False,
        )
    if s is PutMessageStatus.OS_PAGECACHE_BUSY:
        return ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while", False
    if s is PutMessageStatus.UNKNOWN_ERROR:
        return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR", False
    return ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT", False


def send_response(
    broker: BrokerController,
    request: RemotingCommand,
    result: PutMessageResult | None,
    queue_id: int,
    transaction_id: str | None = None,
) -> RemotingCommand:
    code, remark, ok = put_error(result, broker.store.disk_util, broker.config.store.max_message_size)
    if not ok:
        return _send_error(broker, request, code, remark or "")
    assert result is not None and result.append is not None
    header = {
        "msgId": result.append.msg_id,
        "queueId": str(queue_id),
        "queueOffset": str(result.append.logics_offset),
    }
    if transaction_id is not None:
        header["transactionId"] = transaction_id
    return respond(request, code, remark, header=header, extra=send_extra(broker), fast=True)


#: RequestCode.SEND_BATCH_MESSAGE (320, as in Java 4.9.8's RequestCode), bound once for the per-send check below.
#: Java's SendMessageProcessor goes by the header's batch flag alone; its clients set the flag with this code.
_SEND_BATCH_MESSAGE = int(RequestCode.SEND_BATCH_MESSAGE)


async def send_message(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand | None:
    broker = ctx.state
    h = SendHeader(request)
    if h.batch or request.code == _SEND_BATCH_MESSAGE:
        return await _send_batch(broker, ctx, request, h)
    tc, err = msg_check(broker, ctx, request, h)
    if err is not None:
        return err
    queue_id = h.queue_id if h.queue_id >= 0 else broker.queue_id_random(tc.write_queue_nums)
    msg = build_inner(broker, ctx, request, h, queue_id)
    err = _handle_retry_and_dlq(broker, request, h, msg)
    if err is not None:
        return err
    if msg.properties.get(MessageConst.PROPERTY_TRANSACTION_PREPARED, "").lower() == "true":
        if broker.config.reject_transaction_message:
            return _send_error(
                broker,
                request,
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker.config.broker_ip1}] sending transaction message is forbidden",
            )
        result = await broker.transactions.prepare_message(msg)
        return send_response(broker, request, result, queue_id)
    result = broker.put_now(msg)
    if broker.must_wait_flush(result, msg.wait_store_msg_ok) and ctx.nursery is not None:
        ctx.nursery.start_soon(_answer_after_flush, broker, ctx, request, result, queue_id)
        return None
    return send_response(broker, request, result, queue_id)


async def _answer_after_flush(
    broker: BrokerController, ctx: BrokerContext, request: RemotingCommand, result: PutMessageResult, queue_id: int
) -> None:
    """SYNC_FLUSH: the answer waits for the group commit, the connection does not."""
    await broker.wait_flush(result)
    try:
        await ctx.reply(request, send_response(broker, request, result, queue_id))
    except Exception as exc:
        log.warning("send answer to %s lost: %s", ctx.remote_addr, exc)


#: BATCH_ENTRY's fields as Java's batch encoder reads them: one after the other, totalSize not checked
_BATCH_ENTRY_FIELDS = cs.Struct(*(sub for sub in BATCH_ENTRY.subcons if sub is not cs.Terminated))


def batch_body_error(body: bytes) -> str | None:
    """Why Java's batch encoder would throw reading ``body`` (an entry running past its end), else None."""
    stream = io.BytesIO(body)
    pos = 0
    while pos < len(body):
        try:
            _BATCH_ENTRY_FIELDS.parse_stream(stream)
        except cs.ConstructError as exc:
            field = (getattr(exc, "path", None) or "").rpartition("-> ")[2]
            if field in ("body", "properties"):
                return f"entry at {pos}: {field} runs past the batch"
            return f"entry at {pos} is truncated"
        pos = stream.tell()
    return None


async def _send_batch(
    broker: BrokerController, ctx: BrokerContext, request: RemotingCommand, h: SendHeader
) -> RemotingCommand | None:
    tc, err = msg_check(broker, ctx, request, h)
    if err is not None:
        return err
    queue_id = h.queue_id if h.queue_id >= 0 else broker.queue_id_random(tc.write_queue_nums)
    if len(h.topic) > MixAll.TOPIC_MAX_LENGTH:
        return _send_error(
            broker, request, ResponseCode.MESSAGE_ILLEGAL, f"message topic length too long {len(h.topic)}"
        )
    if h.topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX):
        return _send_error(
            broker, request, ResponseCode.MESSAGE_ILLEGAL, f"batch request does not support retry group {h.topic}"
        )
    bad = batch_body_error(request.body or b"")
    if bad is not None:
        # Java's encoder throws (BufferUnderflow / IndexOutOfBounds): the answer is SYSTEM_ERROR
        raise ValueError(f"corrupt batch body: {bad}")
    props = string_to_properties(h.properties)
    props[_CLUSTER] = broker.config.broker_cluster_name
    batch = MessageExtBatch(
        topic=h.topic,
        body=request.body or b"",
        flag=h.flag,
        properties=props,
        properties_string=props_string(props),
        queue_id=queue_id,
        sys_flag=h.sys_flag,
        born_timestamp=h.born_timestamp,
        born_host=host_of(ctx),
        store_host=broker.store_host,
        reconsume_times=h.reconsume_times,
    )
    result = broker.put_batch_now(batch)
    if broker.must_wait_flush(result, batch.wait_store_msg_ok) and ctx.nursery is not None:
        ctx.nursery.start_soon(_answer_after_flush, broker, ctx, request, result, queue_id)
        return None
    return send_response(broker, request, result, queue_id)


async def consumer_send_msg_back(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """A consumer gives a message back: to %RETRY%group with a delay level, or to %DLQ%group."""
    broker = ctx.state
    h = java_decode_header(request, ConsumerSendMsgBackRequestHeader)
    group = h.group or ""
    sub = broker.groups.find(group)
    if sub is None:
        return error(
            request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"subscription group not exist, {group} {SUGGEST_TODO}"
        )
    cfg = broker.config
    if not PermName.is_writeable(cfg.broker_permission):
        return error(request, ResponseCode.NO_PERMISSION, f"the broker[{cfg.broker_ip1}] sending message is forbidden")
    if sub.retry_queue_nums <= 0:
        return respond(request)
    new_topic = MixAll.get_retry_topic(group)
    queue_id = broker.queue_id_random(sub.retry_queue_nums)
    sys_flag = TopicSysFlag.build_sys_flag(False, True) if h.unit_mode else 0
    rw = int(PermName.PERM_WRITE | PermName.PERM_READ)
    tc = broker.topics.create_in_send_back(new_topic, sub.retry_queue_nums, rw, sys_flag)
    if not PermName.is_writeable(tc.perm):
        return error(request, ResponseCode.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden")
    msg = broker.store.look_message_by_offset(h.offset or 0)
    if msg is None:
        return error(request, ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {h.offset}")
    props = dict(msg.properties)
    if MessageConst.PROPERTY_RETRY_TOPIC not in props:
        props[MessageConst.PROPERTY_RETRY_TOPIC] = msg.topic
    props[_WAIT] = "false"
    delay = h.delay_level or 0
    max_times = sub.retry_max_times
    if request.version >= MQVersion.V3_4_9 and h.max_reconsume_times is not None:
        max_times = h.max_reconsume_times
    if msg.reconsume_times >= max_times or delay < 0:
        new_topic = MixAll.get_dlq_topic(group)
        queue_id = broker.queue_id_random(DLQ_NUMS_PER_GROUP)
        broker.topics.create_in_send_back(new_topic, DLQ_NUMS_PER_GROUP, rw, 0)
        props[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = "0"
    else:
        if delay == 0:
            delay = 3 + msg.reconsume_times
        props[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = str(delay)
    if not props.get(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID):
        props[MessageConst.PROPERTY_ORIGIN_MESSAGE_ID] = msg.msg_id
    props = hashmap_dict(props)
    inner = MessageExtBrokerInner(
        topic=new_topic,
        body=msg.body,
        flag=msg.flag,
        properties=props,
        properties_string=properties_to_string(props),
        queue_id=queue_id,
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        store_host=msg.store_host,
        reconsume_times=msg.reconsume_times + 1,
    )
    result = await broker.put_message(inner)
    if result.is_ok:
        # SNDBCK_PUT_NUMS by the topic the message was first sent to (its RETRY_TOPIC once it was retried)
        broker.stats_manager.inc_send_back(group, msg.properties.get(MessageConst.PROPERTY_RETRY_TOPIC) or msg.topic)
        return respond(request)
    return error(request, ResponseCode.SYSTEM_ERROR, result.status.name)
