"""Headers of statistics and connection queries against a broker."""

from __future__ import annotations

from .base import CommandHeader, jfield


class GetTopicStatsInfoRequestHeader(CommandHeader):
    """GET_TOPIC_STATS_INFO request: the topic."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetTopicStatsInfoRequestHeader"

    topic: str | None = jfield("String", required=True)


class GetConsumeStatsRequestHeader(CommandHeader):
    """GET_CONSUME_STATS request: a group, optionally one topic."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetConsumeStatsRequestHeader"

    consumer_group: str | None = jfield("String", required=True)
    topic: str | None = jfield("String")


class GetConsumeStatsInBrokerHeader(CommandHeader):
    """GET_BROKER_CONSUME_STATS request: whether to report ordered groups."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetConsumeStatsInBrokerHeader"

    is_order: bool = jfield("boolean", required=True)


class GetConsumerConnectionListRequestHeader(CommandHeader):
    """GET_CONSUMER_CONNECTION_LIST request: the consumer group."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetConsumerConnectionListRequestHeader"

    consumer_group: str | None = jfield("String", required=True)


class GetProducerConnectionListRequestHeader(CommandHeader):
    """GET_PRODUCER_CONNECTION_LIST request: the producer group."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetProducerConnectionListRequestHeader"

    producer_group: str | None = jfield("String", required=True)


class GetAllProducerInfoRequestHeader(CommandHeader):
    """GET_ALL_PRODUCER_INFO request (no fields)."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetAllProducerInfoRequestHeader"


class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    """QUERY_TOPIC_CONSUME_BY_WHO request: the topic."""

    java_class = "org.apache.rocketmq.common.protocol.header.QueryTopicConsumeByWhoRequestHeader"

    topic: str | None = jfield("String", required=True)


class QueryConsumeTimeSpanRequestHeader(CommandHeader):
    """QUERY_CONSUME_TIME_SPAN request: a topic and a group."""

    java_class = "org.apache.rocketmq.common.protocol.header.QueryConsumeTimeSpanRequestHeader"

    topic: str | None = jfield("String", required=True)
    group: str | None = jfield("String", required=True)


class ViewBrokerStatsDataRequestHeader(CommandHeader):
    """VIEW_BROKER_STATS_DATA request: a stats item name and key."""

    java_class = "org.apache.rocketmq.common.protocol.header.ViewBrokerStatsDataRequestHeader"

    stats_name: str | None = jfield("String", required=True)
    stats_key: str | None = jfield("String", required=True)
