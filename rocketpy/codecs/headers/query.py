"""Headers of message and offset look-ups: query by key, view by id, offsets by queue or time."""

from __future__ import annotations

from .base import CommandHeader, jfield
from .rpc import RpcRequestHeader


class QueryMessageRequestHeader(CommandHeader):
    """QUERY_MESSAGE request: messages of a topic by key within a time range."""

    java_class = "org.apache.rocketmq.common.protocol.header.QueryMessageRequestHeader"

    topic: str | None = jfield("String", required=True)
    key: str | None = jfield("String", required=True)
    max_num: int | None = jfield("Integer", required=True)
    begin_timestamp: int | None = jfield("Long", required=True)
    end_timestamp: int | None = jfield("Long", required=True)


class QueryMessageResponseHeader(CommandHeader):
    """QUERY_MESSAGE response: how fresh the broker's index is."""

    java_class = "org.apache.rocketmq.common.protocol.header.QueryMessageResponseHeader"

    index_last_update_timestamp: int | None = jfield("Long", required=True)
    index_last_update_phyoffset: int | None = jfield("Long", required=True)


class ViewMessageRequestHeader(CommandHeader):
    """VIEW_MESSAGE_BY_ID request: the commit-log offset of the message."""

    java_class = "org.apache.rocketmq.common.protocol.header.ViewMessageRequestHeader"

    offset: int | None = jfield("Long", required=True)


class ViewMessageResponseHeader(CommandHeader):
    """Declared for VIEW_MESSAGE_BY_ID responses; 4.9.8 sends none."""

    java_class = "org.apache.rocketmq.common.protocol.header.ViewMessageResponseHeader"


class SearchOffsetRequestHeader(RpcRequestHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP request: a queue and a time."""

    java_class = "org.apache.rocketmq.common.protocol.header.SearchOffsetRequestHeader"

    topic: str | None = jfield("String", required=True)
    queue_id: int | None = jfield("Integer", required=True)
    timestamp: int | None = jfield("Long", required=True)
    bname: str | None = jfield("String", doc="target broker name, inherited from RpcRequestHeader")


class SearchOffsetResponseHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP response: the offset found."""

    java_class = "org.apache.rocketmq.common.protocol.header.SearchOffsetResponseHeader"

    offset: int | None = jfield("Long", required=True)


class GetMaxOffsetRequestHeader(RpcRequestHeader):
    """GET_MAX_OFFSET request: the queue."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetMaxOffsetRequestHeader"

    topic: str | None = jfield("String", required=True)
    queue_id: int | None = jfield("Integer", required=True)
    bname: str | None = jfield("String", doc="target broker name, inherited from RpcRequestHeader")


class GetMaxOffsetResponseHeader(CommandHeader):
    """GET_MAX_OFFSET response: the queue's max offset."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetMaxOffsetResponseHeader"

    offset: int | None = jfield("Long", required=True)


class GetMinOffsetRequestHeader(RpcRequestHeader):
    """GET_MIN_OFFSET request: the queue."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetMinOffsetRequestHeader"

    topic: str | None = jfield("String", required=True)
    queue_id: int | None = jfield("Integer", required=True)
    bname: str | None = jfield("String", doc="target broker name, inherited from RpcRequestHeader")


class GetMinOffsetResponseHeader(CommandHeader):
    """GET_MIN_OFFSET response: the queue's min offset."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetMinOffsetResponseHeader"

    offset: int | None = jfield("Long", required=True)


class GetEarliestMsgStoretimeRequestHeader(RpcRequestHeader):
    """GET_EARLIEST_MSG_STORETIME request: the queue."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetEarliestMsgStoretimeRequestHeader"

    topic: str | None = jfield("String", required=True)
    queue_id: int | None = jfield("Integer", required=True)
    bname: str | None = jfield("String", doc="target broker name, inherited from RpcRequestHeader")


class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    """GET_EARLIEST_MSG_STORETIME response: store time of the oldest message."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetEarliestMsgStoretimeResponseHeader"

    timestamp: int | None = jfield("Long", required=True)


class QueryConsumeQueueRequestHeader(CommandHeader):
    """QUERY_CONSUME_QUEUE request: dump ``count`` consume-queue entries from ``index``."""

    java_class = "org.apache.rocketmq.common.protocol.header.QueryConsumeQueueRequestHeader"

    topic: str | None = jfield("String")
    queue_id: int = jfield("int")
    index: int = jfield("long")
    count: int = jfield("int")
    consumer_group: str | None = jfield("String")
