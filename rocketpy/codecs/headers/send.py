"""Headers of message sending: SEND_MESSAGE(_V2), batches, replies and the broker's answer."""

from __future__ import annotations

from .base import CommandHeader, jfield
from .rpc import RpcRequestHeader


class SendMessageRequestHeader(RpcRequestHeader):
    """SEND_MESSAGE / SEND_REPLY_MESSAGE request (the long-named form)."""

    java_class = "org.apache.rocketmq.common.protocol.header.SendMessageRequestHeader"

    producer_group: str | None = jfield("String", required=True)
    topic: str | None = jfield("String", required=True)
    default_topic: str | None = jfield("String", required=True)
    default_topic_queue_nums: int | None = jfield("Integer", required=True)
    queue_id: int | None = jfield("Integer", required=True)
    sys_flag: int | None = jfield("Integer", required=True)
    born_timestamp: int | None = jfield("Long", required=True)
    flag: int | None = jfield("Integer", required=True)
    properties: str | None = jfield("String")
    reconsume_times: int | None = jfield("Integer")
    unit_mode: bool = jfield("boolean", default=False)
    batch: bool = jfield("boolean", default=False)
    max_reconsume_times: int | None = jfield("Integer")
    bname: str | None = jfield("String", doc="target broker name, inherited from RpcRequestHeader")


class SendMessageRequestHeaderV2(RpcRequestHeader):
    """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2 request.

    The same content as :class:`SendMessageRequestHeader` under one-letter wire
    names. ``n`` carries the broker name (``bname`` of the long form); the
    inherited ``bname`` field itself is left out of the fast binary encoding."""

    java_class = "org.apache.rocketmq.common.protocol.header.SendMessageRequestHeaderV2"
    fast_codes = True

    producer_group: str | None = jfield("String", required=True, java="a", doc="producerGroup of the long form")
    topic: str | None = jfield("String", required=True, java="b", doc="topic of the long form")
    default_topic: str | None = jfield("String", required=True, java="c", doc="defaultTopic of the long form")
    default_topic_queue_nums: int | None = jfield(
        "Integer", required=True, java="d", doc="defaultTopicQueueNums of the long form"
    )
    queue_id: int | None = jfield("Integer", required=True, java="e", doc="queueId of the long form")
    sys_flag: int | None = jfield("Integer", required=True, java="f", doc="sysFlag of the long form")
    born_timestamp: int | None = jfield("Long", required=True, java="g", doc="bornTimestamp of the long form")
    flag: int | None = jfield("Integer", required=True, java="h", doc="flag of the long form")
    properties: str | None = jfield("String", java="i", doc="properties of the long form")
    reconsume_times: int | None = jfield("Integer", java="j", doc="reconsumeTimes of the long form")
    unit_mode: bool = jfield("boolean", java="k", doc="unitMode of the long form")
    max_reconsume_times: int | None = jfield("Integer", java="l", doc="maxReconsumeTimes of the long form")
    batch: bool = jfield("boolean", java="m", doc="batch of the long form")
    broker_name: str | None = jfield("String", java="n", doc="bname of the long form")
    bname: str | None = jfield("String", doc="inherited from RpcRequestHeader; unused by Java, not fast-encoded")

    def to_ext_fields(self, *, fast_order: bool = False) -> dict[str, str]:
        fields = super().to_ext_fields(fast_order=fast_order)
        if fast_order:
            fields.pop("bname", None)  # the fast encoder writes a..n only
        return fields

    @classmethod
    def from_v1(cls, v1: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
        """The short-named form of a long-named header (``bname`` travels as ``n``)."""
        return cls(
            producer_group=v1.producer_group,
            topic=v1.topic,
            default_topic=v1.default_topic,
            default_topic_queue_nums=v1.default_topic_queue_nums,
            queue_id=v1.queue_id,
            sys_flag=v1.sys_flag,
            born_timestamp=v1.born_timestamp,
            flag=v1.flag,
            properties=v1.properties,
            reconsume_times=v1.reconsume_times,
            unit_mode=v1.unit_mode,
            max_reconsume_times=v1.max_reconsume_times,
            batch=v1.batch,
            broker_name=v1.bname,
        )

    def to_v1(self) -> SendMessageRequestHeader:
        """The long-named form, as the broker converts it before processing."""
        return SendMessageRequestHeader(
            producer_group=self.producer_group,
            topic=self.topic,
            default_topic=self.default_topic,
            default_topic_queue_nums=self.default_topic_queue_nums,
            queue_id=self.queue_id,
            sys_flag=self.sys_flag,
            born_timestamp=self.born_timestamp,
            flag=self.flag,
            properties=self.properties,
            reconsume_times=self.reconsume_times,
            unit_mode=self.unit_mode,
            max_reconsume_times=self.max_reconsume_times,
            batch=self.batch,
            bname=self.broker_name,
        )


class SendMessageResponseHeader(CommandHeader):
    """Response to every send code: where the message was stored."""

    java_class = "org.apache.rocketmq.common.protocol.header.SendMessageResponseHeader"
    fast_codes = True

    msg_id: str | None = jfield("String", required=True)
    queue_id: int | None = jfield("Integer", required=True)
    queue_offset: int | None = jfield("Long", required=True)
    transaction_id: str | None = jfield("String")


class ReplyMessageRequestHeader(CommandHeader):
    """PUSH_REPLY_MESSAGE_TO_CLIENT request: a reply message the broker pushes to the requester."""

    java_class = "org.apache.rocketmq.common.protocol.header.ReplyMessageRequestHeader"

    producer_group: str | None = jfield("String", required=True)
    topic: str | None = jfield("String", required=True)
    default_topic: str | None = jfield("String", required=True)
    default_topic_queue_nums: int | None = jfield("Integer", required=True)
    queue_id: int | None = jfield("Integer", required=True)
    sys_flag: int | None = jfield("Integer", required=True)
    born_timestamp: int | None = jfield("Long", required=True)
    flag: int | None = jfield("Integer", required=True)
    properties: str | None = jfield("String")
    reconsume_times: int | None = jfield("Integer")
    unit_mode: bool = jfield("boolean", default=False)
    born_host: str | None = jfield("String", required=True)
    store_host: str | None = jfield("String", required=True)
    store_timestamp: int = jfield("long", required=True)
