"""HEART_BEAT: a client's producer and consumer groups and subscriptions."""

from __future__ import annotations

from ...clock import now_ms as _now_ms
from ..codes import ConsumeFromWhere, ConsumeType, ExpressionType, MessageModel
from .base import BOOL, INT, LONG, STR, JsonBody, bfield, enum_of, obj, set_of

SUB_ALL = "*"  # SubscriptionData.SUB_ALL


class SubscriptionData(JsonBody):
    """One topic a consumer group subscribes to, with its expression.

    (Java's filterClassSource is marked serialize=false and never written.)"""

    java_class = "org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData"

    class_filter_mode: bool = bfield(BOOL, default=False)
    topic: str | None = bfield(STR)
    sub_string: str | None = bfield(STR, doc="the expression: '*', 'TagA || TagB', or SQL92")
    tags_set: list[str] = bfield(set_of(STR), default=[])
    code_set: list[int] = bfield(set_of(INT), default=[], doc="String.hashCode() of each tag")
    sub_version: int = bfield(LONG, factory=_now_ms, doc="ms timestamp of the subscription")
    expression_type: str | None = bfield(STR, default=ExpressionType.TAG, doc="TAG or SQL92")


class ProducerData(JsonBody):
    """A producer group in a heartbeat."""

    java_class = "org.apache.rocketmq.common.protocol.heartbeat.ProducerData"

    group_name: str | None = bfield(STR)


class ConsumerData(JsonBody):
    """A consumer group in a heartbeat."""

    java_class = "org.apache.rocketmq.common.protocol.heartbeat.ConsumerData"

    group_name: str | None = bfield(STR)
    consume_type: ConsumeType | None = bfield(enum_of(ConsumeType))
    message_model: MessageModel | None = bfield(enum_of(MessageModel))
    consume_from_where: ConsumeFromWhere | None = bfield(enum_of(ConsumeFromWhere))
    subscription_data_set: list[SubscriptionData] = bfield(set_of(obj(SubscriptionData)), default=[])
    unit_mode: bool = bfield(BOOL, default=False)


class HeartbeatData(JsonBody):
    """HEART_BEAT request body (also UNREGISTER's client id comes in the header)."""

    java_class = "org.apache.rocketmq.common.protocol.heartbeat.HeartbeatData"

    client_id: str | None = bfield(STR, java="clientID")
    producer_data_set: list[ProducerData] = bfield(set_of(obj(ProducerData)), default=[])
    consumer_data_set: list[ConsumerData] = bfield(set_of(obj(ConsumerData)), default=[])


def java_string_hash(text: str) -> int:
    """String.hashCode() (the tag codes in SubscriptionData.codeSet)."""
    data = text.encode("utf-16-be", errors="surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def build_subscription(topic: str, sub_string: str | None, expression_type: str | None = None) -> SubscriptionData:
    """FilterAPI.build for a TAG (or SQL92) subscription: '*' or empty subscribes to all;
    TAG expressions split on '||' into tagsSet and codeSet."""
    sub = SubscriptionData(topic=topic, sub_string=sub_string, expression_type=expression_type or ExpressionType.TAG)
    if not ExpressionType.is_tag_type(expression_type):
        return sub
    if not sub_string or sub_string == SUB_ALL:
        sub.sub_string = SUB_ALL
        return sub
    for tag in sub_string.split("||"):
        tag = tag.strip()
        if tag and tag not in sub.tags_set:
            sub.tags_set.append(tag)
            sub.code_set.append(java_string_hash(tag))
    return sub


__all__ = [
    "SUB_ALL",
    "ConsumerData",
    "HeartbeatData",
    "ProducerData",
    "SubscriptionData",
    "build_subscription",
    "java_string_hash",
]
