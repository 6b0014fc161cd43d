"""Consumer-side bodies: queue locks, group membership, offsets, consume stats, and the
broker-to-client queries (running info, status, reset offset, consume directly)."""

from __future__ import annotations

import time
from typing import Any

from ..codes import CMResult, ConsumeFromWhere, ConsumeType, LanguageCode, MessageModel
from .base import ANY, BOOL, DOUBLE, INT, LONG, STR, JsonBody, bfield, enum_of, list_of, map_of, obj, set_of
from .heartbeat import SubscriptionData

_new = object.__new__


class MessageQueue(JsonBody):
    """A queue: topic, broker name, queue id. Hashable and ordered like Java's (topic, then
    broker name, then queue id), since it is a map key in several bodies."""

    java_class = "org.apache.rocketmq.common.message.MessageQueue"

    topic: str | None = bfield(STR)
    broker_name: str | None = bfield(STR)
    queue_id: int = bfield(INT, default=0)

    def __hash__(self) -> int:
        return hash((self.topic, self.broker_name, self.queue_id))

    @classmethod
    def of(cls, topic: str | None, broker_name: str | None, queue_id: int) -> MessageQueue:
        """``MessageQueue(topic=..., broker_name=..., queue_id=...)`` at half the cost (a client makes one per
        send's result): the fields set without the keyword call into the dataclass's __init__."""
        mq = _new(cls)
        mq.topic = topic
        mq.broker_name = broker_name
        mq.queue_id = queue_id
        mq.extra = {}
        return mq

    def sort_key(self) -> tuple[str, str, int]:
        """MessageQueue.compareTo order."""
        return (self.topic or "", self.broker_name or "", self.queue_id)

    def __lt__(self, other: MessageQueue) -> bool:
        return self.sort_key() < other.sort_key()


class LockBatchRequestBody(JsonBody):
    """LOCK_BATCH_MQ request (orderly consumers lock their queues on the broker)."""

    java_class = "org.apache.rocketmq.common.protocol.body.LockBatchRequestBody"

    consumer_group: str | None = bfield(STR)
    client_id: str | None = bfield(STR)
    mq_set: list[MessageQueue] = bfield(set_of(obj(MessageQueue)), default=[])


class LockBatchResponseBody(JsonBody):
    """LOCK_BATCH_MQ response: the queues now locked by the caller."""

    java_class = "org.apache.rocketmq.common.protocol.body.LockBatchResponseBody"

    lock_ok_mq_set: list[MessageQueue] = bfield(set_of(obj(MessageQueue)), java="lockOKMQSet", default=[])


class UnlockBatchRequestBody(JsonBody):
    """UNLOCK_BATCH_MQ request."""

    java_class = "org.apache.rocketmq.common.protocol.body.UnlockBatchRequestBody"

    consumer_group: str | None = bfield(STR)
    client_id: str | None = bfield(STR)
    mq_set: list[MessageQueue] = bfield(set_of(obj(MessageQueue)), default=[])


class GetConsumerListByGroupResponseBody(JsonBody):
    """GET_CONSUMER_LIST_BY_GROUP response: client ids of the group's live consumers."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetConsumerListByGroupResponseBody"

    consumer_id_list: list[str] | None = bfield(list_of(STR))


class Connection(JsonBody):
    """A client connection as the broker sees it."""

    java_class = "org.apache.rocketmq.common.protocol.body.Connection"

    client_id: str | None = bfield(STR)
    client_addr: str | None = bfield(STR)
    language: LanguageCode | None = bfield(enum_of(LanguageCode))
    version: int = bfield(INT, default=0)


class ConsumerConnection(JsonBody):
    """GET_CONSUMER_CONNECTION_LIST response."""

    java_class = "org.apache.rocketmq.common.protocol.body.ConsumerConnection"

    connection_set: list[Connection] = bfield(set_of(obj(Connection)), default=[])
    subscription_table: dict[str, SubscriptionData] = bfield(map_of(STR, obj(SubscriptionData)), default={})
    consume_type: ConsumeType | None = bfield(enum_of(ConsumeType))
    message_model: MessageModel | None = bfield(enum_of(MessageModel))
    consume_from_where: ConsumeFromWhere | None = bfield(enum_of(ConsumeFromWhere))


class OffsetWrapper(JsonBody):
    """Broker and consumer offsets of one queue (ConsumeStats)."""

    java_class = "org.apache.rocketmq.common.admin.OffsetWrapper"

    broker_offset: int = bfield(LONG, default=0)
    consumer_offset: int = bfield(LONG, default=0)
    last_timestamp: int = bfield(LONG, default=0)


class ConsumeStats(JsonBody):
    """GET_CONSUME_STATS response; offsetTable is keyed by MessageQueue objects."""

    java_class = "org.apache.rocketmq.common.admin.ConsumeStats"

    offset_table: dict[MessageQueue, OffsetWrapper] = bfield(map_of(obj(MessageQueue), obj(OffsetWrapper)), default={})
    consume_tps: float = bfield(DOUBLE, default=0.0)

    def total_diff(self) -> int:
        """ConsumeStats.computeTotalDiff: the summed lag."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())


class ConsumerOffsetSerializeWrapper(JsonBody):
    """GET_ALL_CONSUMER_OFFSET response and config/consumerOffset.json:
    ``{"offsetTable":{"topic@group":{queueId:offset,...}}}``."""

    java_class = "org.apache.rocketmq.common.protocol.body.ConsumerOffsetSerializeWrapper"

    offset_table: dict[str, dict[int, int]] = bfield(map_of(STR, map_of(INT, LONG)), default={})


class ResetOffsetBody(JsonBody):
    """RESET_CONSUMER_CLIENT_OFFSET request (broker to client) and the reply to
    INVOKE_BROKER_TO_RESET_OFFSET."""

    java_class = "org.apache.rocketmq.common.protocol.body.ResetOffsetBody"

    offset_table: dict[MessageQueue, int] | None = bfield(map_of(obj(MessageQueue), LONG))


class MessageQueueForC(JsonBody):
    """A queue with an offset, the list form sent to C++ clients."""

    java_class = "org.apache.rocketmq.common.message.MessageQueueForC"

    topic: str | None = bfield(STR)
    broker_name: str | None = bfield(STR)
    queue_id: int = bfield(INT, default=0)
    offset: int = bfield(LONG, default=0)


class ResetOffsetBodyForC(JsonBody):
    """RESET_CONSUMER_CLIENT_OFFSET request as sent to clients whose language is CPP."""

    java_class = "org.apache.rocketmq.common.protocol.body.ResetOffsetBodyForC"

    offset_table: list[MessageQueueForC] | None = bfield(list_of(obj(MessageQueueForC)))


def _human_time(ms: int) -> str:
    """UtilAll.timeMillisToHumanString: yyyyMMddHHmmssSSS in local time."""
    t = time.localtime(ms // 1000)
    return time.strftime("%Y%m%d%H%M%S", t) + f"{ms % 1000:03d}"


class QueueTimeSpan(JsonBody):
    """One queue's stored-time span and consume position (QUERY_CONSUME_TIME_SPAN).

    The three ``*_str`` properties are getters without fields in Java, formatted in the
    JVM's time zone; left as None they are computed in the local zone on encode."""

    java_class = "org.apache.rocketmq.common.protocol.body.QueueTimeSpan"

    message_queue: MessageQueue | None = bfield(obj(MessageQueue))
    min_time_stamp: int = bfield(LONG, default=0)
    max_time_stamp: int = bfield(LONG, default=0)
    consume_time_stamp: int = bfield(LONG, default=0)
    delay_time: int = bfield(LONG, default=0)
    min_time_stamp_str: str | None = bfield(STR, computed=lambda s: _human_time(s.min_time_stamp))
    max_time_stamp_str: str | None = bfield(STR, computed=lambda s: _human_time(s.max_time_stamp))
    consume_time_stamp_str: str | None = bfield(STR, computed=lambda s: _human_time(s.consume_time_stamp))


class QueryConsumeTimeSpanBody(JsonBody):
    """QUERY_CONSUME_TIME_SPAN response."""

    java_class = "org.apache.rocketmq.common.protocol.body.QueryConsumeTimeSpanBody"

    consume_time_span_set: list[QueueTimeSpan] = bfield(list_of(obj(QueueTimeSpan)), default=[])


class QueryCorrectionOffsetBody(JsonBody):
    """QUERY_CORRECTION_OFFSET response: queue id -> offset."""

    java_class = "org.apache.rocketmq.common.protocol.body.QueryCorrectionOffsetBody"

    correction_offsets: dict[int, int] = bfield(map_of(INT, LONG), default={})


class ProcessQueueInfo(JsonBody):
    """A consumer's view of one queue it processes (ConsumerRunningInfo.mqTable)."""

    java_class = "org.apache.rocketmq.common.protocol.body.ProcessQueueInfo"

    commit_offset: int = bfield(LONG, default=0)
    cached_msg_min_offset: int = bfield(LONG, default=0)
    cached_msg_max_offset: int = bfield(LONG, default=0)
    cached_msg_count: int = bfield(INT, default=0)
    cached_msg_size_in_mib: int = bfield(INT, java="cachedMsgSizeInMiB", default=0)
    transaction_msg_min_offset: int = bfield(LONG, default=0)
    transaction_msg_max_offset: int = bfield(LONG, default=0)
    transaction_msg_count: int = bfield(INT, default=0)
    locked: bool = bfield(BOOL, default=False)
    try_unlock_times: int = bfield(LONG, default=0)
    last_lock_timestamp: int = bfield(LONG, default=0)
    droped: bool = bfield(BOOL, default=False, doc="sic: Java's spelling")
    last_pull_timestamp: int = bfield(LONG, default=0)
    last_consume_timestamp: int = bfield(LONG, default=0)


class ConsumeStatus(JsonBody):
    """Per-topic consume rates of a consumer (ConsumerRunningInfo.statusTable)."""

    java_class = "org.apache.rocketmq.common.protocol.body.ConsumeStatus"

    pull_rt: float = bfield(DOUBLE, java="pullRT", default=0.0)
    pull_tps: float = bfield(DOUBLE, java="pullTPS", default=0.0)
    consume_rt: float = bfield(DOUBLE, java="consumeRT", default=0.0)
    consume_ok_tps: float = bfield(DOUBLE, java="consumeOKTPS", default=0.0)
    consume_failed_tps: float = bfield(DOUBLE, java="consumeFailedTPS", default=0.0)
    consume_failed_msgs: int = bfield(LONG, default=0)


class ConsumerRunningInfo(JsonBody):
    """GET_CONSUMER_RUNNING_INFO response from a client (relayed by the broker).

    ``properties`` is a java.util.Properties; the client puts strings and a few other
    values in it, so values are kept as parsed."""

    java_class = "org.apache.rocketmq.common.protocol.body.ConsumerRunningInfo"

    PROP_NAMESERVER_ADDR = "PROP_NAMESERVER_ADDR"
    PROP_THREADPOOL_CORE_SIZE = "PROP_THREADPOOL_CORE_SIZE"
    PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
    PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"
    PROP_CLIENT_VERSION = "PROP_CLIENT_VERSION"
    PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"

    properties: dict[str, Any] = bfield(map_of(STR, ANY), default={})
    subscription_set: list[SubscriptionData] = bfield(set_of(obj(SubscriptionData)), default=[])
    mq_table: dict[MessageQueue, ProcessQueueInfo] = bfield(
        map_of(obj(MessageQueue), obj(ProcessQueueInfo)), default={}
    )
    status_table: dict[str, ConsumeStatus] = bfield(map_of(STR, obj(ConsumeStatus)), default={})
    jstack: str | None = bfield(STR)


class ConsumeMessageDirectlyResult(JsonBody):
    """CONSUME_MESSAGE_DIRECTLY response from a client."""

    java_class = "org.apache.rocketmq.common.protocol.body.ConsumeMessageDirectlyResult"

    order: bool = bfield(BOOL, default=False)
    auto_commit: bool = bfield(BOOL, default=True)
    consume_result: CMResult | None = bfield(enum_of(CMResult))
    remark: str | None = bfield(STR)
    spent_time_mills: int = bfield(LONG, default=0)


class GetConsumerStatusBody(JsonBody):
    """GET_CONSUMER_STATUS_FROM_CLIENT reply (messageQueueTable) and the broker's merged
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS reply (consumerTable: client id -> offsets)."""

    java_class = "org.apache.rocketmq.common.protocol.body.GetConsumerStatusBody"

    message_queue_table: dict[MessageQueue, int] = bfield(map_of(obj(MessageQueue), LONG), default={})
    consumer_table: dict[str, dict[MessageQueue, int]] = bfield(
        map_of(STR, map_of(obj(MessageQueue), LONG)), default={}
    )


class CheckClientRequestBody(JsonBody):
    """CHECK_CLIENT_CONFIG request: can the broker evaluate this subscription?"""

    java_class = "org.apache.rocketmq.common.protocol.body.CheckClientRequestBody"

    client_id: str | None = bfield(STR)
    group: str | None = bfield(STR)
    subscription_data: SubscriptionData | None = bfield(obj(SubscriptionData))


class OffsetMovedEvent(JsonBody):
    """Body of the messages the broker writes to OFFSET_MOVED_EVENT."""

    java_class = "org.apache.rocketmq.common.protocol.topic.OffsetMovedEvent"

    consumer_group: str | None = bfield(STR)
    message_queue: MessageQueue | None = bfield(obj(MessageQueue))
    offset_request: int = bfield(LONG, default=0)
    offset_new: int = bfield(LONG, default=0)


__all__ = [
    "CheckClientRequestBody",
    "Connection",
    "ConsumeMessageDirectlyResult",
    "ConsumeStats",
    "ConsumeStatus",
    "ConsumerConnection",
    "ConsumerOffsetSerializeWrapper",
    "ConsumerRunningInfo",
    "GetConsumerListByGroupResponseBody",
    "GetConsumerStatusBody",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "MessageQueue",
    "MessageQueueForC",
    "OffsetMovedEvent",
    "OffsetWrapper",
    "ProcessQueueInfo",
    "QueryConsumeTimeSpanBody",
    "QueryCorrectionOffsetBody",
    "QueueTimeSpan",
    "ResetOffsetBody",
    "ResetOffsetBodyForC",
    "UnlockBatchRequestBody",
]
