"""Headers of consumer bookkeeping: offsets, send-back, group membership, client unregistering."""

from __future__ import annotations

from .base import CommandHeader, jfield
from .rpc import RpcRequestHeader


class QueryConsumerOffsetRequestHeader(RpcRequestHeader):
    """QUERY_CONSUMER_OFFSET request: the group and queue."""

    java_class = "org.apache.rocketmq.common.protocol.header.QueryConsumerOffsetRequestHeader"

    consumer_group: str | None = jfield("String", required=True)
    topic: str | None = jfield("String", required=True)
    queue_id: int | None = jfield("Integer", required=True)
    bname: str | None = jfield("String", doc="target broker name, inherited from RpcRequestHeader")


class QueryConsumerOffsetResponseHeader(CommandHeader):
    """QUERY_CONSUMER_OFFSET response: the committed offset."""

    java_class = "org.apache.rocketmq.common.protocol.header.QueryConsumerOffsetResponseHeader"

    offset: int | None = jfield("Long", required=True)


class UpdateConsumerOffsetRequestHeader(RpcRequestHeader):
    """UPDATE_CONSUMER_OFFSET request: commit an offset for a group and queue."""

    java_class = "org.apache.rocketmq.common.protocol.header.UpdateConsumerOffsetRequestHeader"

    consumer_group: str | None = jfield("String", required=True)
    topic: str | None = jfield("String", required=True)
    queue_id: int | None = jfield("Integer", required=True)
    commit_offset: int | None = jfield("Long", required=True)
    bname: str | None = jfield("String", doc="target broker name, inherited from RpcRequestHeader")


class UpdateConsumerOffsetResponseHeader(CommandHeader):
    """UPDATE_CONSUMER_OFFSET response (no fields)."""

    java_class = "org.apache.rocketmq.common.protocol.header.UpdateConsumerOffsetResponseHeader"


class ConsumerSendMsgBackRequestHeader(RpcRequestHeader):
    """CONSUMER_SEND_MSG_BACK request: return a message for retry or to the DLQ."""

    java_class = "org.apache.rocketmq.common.protocol.header.ConsumerSendMsgBackRequestHeader"

    offset: int | None = jfield("Long", required=True)
    group: str | None = jfield("String", required=True)
    delay_level: int | None = jfield("Integer", required=True)
    origin_msg_id: str | None = jfield("String")
    origin_topic: str | None = jfield("String")
    unit_mode: bool = jfield("boolean", default=False)
    max_reconsume_times: int | None = jfield("Integer")
    bname: str | None = jfield("String", doc="target broker name, inherited from RpcRequestHeader")


class GetConsumerListByGroupRequestHeader(CommandHeader):
    """GET_CONSUMER_LIST_BY_GROUP request: the group whose client ids are wanted."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetConsumerListByGroupRequestHeader"

    consumer_group: str | None = jfield("String", required=True)


class GetConsumerListByGroupResponseHeader(CommandHeader):
    """GET_CONSUMER_LIST_BY_GROUP response (no fields; the ids are in the body)."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetConsumerListByGroupResponseHeader"


class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED request (broker to client): time to rebalance."""

    java_class = "org.apache.rocketmq.common.protocol.header.NotifyConsumerIdsChangedRequestHeader"

    consumer_group: str | None = jfield("String", required=True)


class UnregisterClientRequestHeader(CommandHeader):
    """UNREGISTER_CLIENT request: a producer and/or consumer client going away."""

    java_class = "org.apache.rocketmq.common.protocol.header.UnregisterClientRequestHeader"

    client_id: str | None = jfield("String", required=True, java="clientID")
    producer_group: str | None = jfield("String")
    consumer_group: str | None = jfield("String")


class UnregisterClientResponseHeader(CommandHeader):
    """UNREGISTER_CLIENT response (no fields)."""

    java_class = "org.apache.rocketmq.common.protocol.header.UnregisterClientResponseHeader"
