"""Administration bodies: topic stats, subscription groups, producers, broker stats,
consume-queue inspection, ACL versions."""

from __future__ import annotations

from ..codes import LanguageCode
from .base import BOOL, DOUBLE, INT, LONG, STR, JsonBody, bfield, enum_of, list_of, map_of, obj, set_of
from .consumer import Connection, ConsumeStats, MessageQueue
from .heartbeat import SubscriptionData
from .register import DataVersion


class TopicOffset(JsonBody):
    """Min and max offsets of one queue (TopicStatsTable)."""

    java_class = "org.apache.rocketmq.common.admin.TopicOffset"

    min_offset: int = bfield(LONG, default=0)
    max_offset: int = bfield(LONG, default=0)
    last_update_timestamp: int = bfield(LONG, default=0)


class TopicStatsTable(JsonBody):
    """GET_TOPIC_STATS_INFO response; offsetTable is keyed by MessageQueue objects."""

    java_class = "org.apache.rocketmq.common.admin.TopicStatsTable"

    offset_table: dict[MessageQueue, TopicOffset] = bfield(map_of(obj(MessageQueue), obj(TopicOffset)), default={})


class SubscriptionGroupConfig(JsonBody):
    """A consumer group's broker-side settings (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body)."""

    java_class = "org.apache.rocketmq.common.subscription.SubscriptionGroupConfig"

    group_name: str | None = bfield(STR)
    consume_enable: bool = bfield(BOOL, default=True)
    consume_from_min_enable: bool = bfield(BOOL, default=True)
    consume_broadcast_enable: bool = bfield(BOOL, default=True)
    retry_queue_nums: int = bfield(INT, default=1)
    retry_max_times: int = bfield(INT, default=16)
    broker_id: int = bfield(LONG, default=0)
    which_broker_when_consume_slowly: int = bfield(LONG, default=1)
    notify_consumer_ids_changed_enable: bool = bfield(BOOL, default=True)


class SubscriptionGroupWrapper(JsonBody):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG response and config/subscriptionGroup.json
    (SubscriptionGroupManager has the same two properties)."""

    java_class = "org.apache.rocketmq.common.protocol.body.SubscriptionGroupWrapper"

    subscription_group_table: dict[str, SubscriptionGroupConfig] = bfield(
        map_of(STR, obj(SubscriptionGroupConfig)), default={}
    )
    data_version: DataVersion | None = bfield(obj(DataVersion), factory=DataVersion)


class GroupList(JsonBody):
    """QUERY_TOPIC_CONSUME_BY_WHO response: consumer group names."""

    java_class = "org.apache.rocketmq.common.protocol.body.GroupList"

    group_list: list[str] = bfield(set_of(STR), default=[])


class BrokerStatsItem(JsonBody):
    """Sum, TPS and average of one stats window."""

    java_class = "org.apache.rocketmq.common.protocol.body.BrokerStatsItem"

    sum: int = bfield(LONG, default=0)
    tps: float = bfield(DOUBLE, default=0.0)
    avgpt: float = bfield(DOUBLE, default=0.0)


class BrokerStatsData(JsonBody):
    """VIEW_BROKER_STATS_DATA response."""

    java_class = "org.apache.rocketmq.common.protocol.body.BrokerStatsData"

    stats_minute: BrokerStatsItem | None = bfield(obj(BrokerStatsItem))
    stats_hour: BrokerStatsItem | None = bfield(obj(BrokerStatsItem))
    stats_day: BrokerStatsItem | None = bfield(obj(BrokerStatsItem))


class ProducerConnection(JsonBody):
    """GET_PRODUCER_CONNECTION_LIST response."""

    java_class = "org.apache.rocketmq.common.protocol.body.ProducerConnection"

    connection_set: list[Connection] = bfield(set_of(obj(Connection)), default=[])


class ProducerInfo(JsonBody):
    """One producer client (ProducerTableInfo)."""

    java_class = "org.apache.rocketmq.common.protocol.body.ProducerInfo"

    client_id: str | None = bfield(STR)
    remote_ip: str | None = bfield(STR, java="remoteIP")
    language: LanguageCode | None = bfield(enum_of(LanguageCode))
    version: int = bfield(INT, default=0)
    last_update_timestamp: int = bfield(LONG, default=0)


class ProducerTableInfo(JsonBody):
    """GET_ALL_PRODUCER_INFO response: producer group -> producers."""

    java_class = "org.apache.rocketmq.common.protocol.body.ProducerTableInfo"

    data: dict[str, list[ProducerInfo]] | None = bfield(map_of(STR, list_of(obj(ProducerInfo))))


class ConsumeQueueData(JsonBody):
    """One consume-queue entry (QueryConsumeQueueResponseBody)."""

    java_class = "org.apache.rocketmq.common.protocol.body.ConsumeQueueData"

    physic_offset: int = bfield(LONG, default=0)
    physic_size: int = bfield(INT, default=0)
    tags_code: int = bfield(LONG, default=0)
    extend_data_json: str | None = bfield(STR)
    bit_map: str | None = bfield(STR)
    eval: bool = bfield(BOOL, default=False)
    msg: str | None = bfield(STR)


class QueryConsumeQueueResponseBody(JsonBody):
    """QUERY_CONSUME_QUEUE response."""

    java_class = "org.apache.rocketmq.common.protocol.body.QueryConsumeQueueResponseBody"

    subscription_data: SubscriptionData | None = bfield(obj(SubscriptionData))
    filter_data: str | None = bfield(STR, doc="ConsumerFilterData as pretty JSON text")
    queue_data: list[ConsumeQueueData] | None = bfield(list_of(obj(ConsumeQueueData)))
    max_queue_index: int = bfield(LONG, default=0)
    min_queue_index: int = bfield(LONG, default=0)


class ConsumeStatsList(JsonBody):
    """GET_BROKER_CONSUME_STATS response."""

    java_class = "org.apache.rocketmq.common.protocol.body.ConsumeStatsList"

    consume_stats_list: list[dict[str, list[ConsumeStats]]] = bfield(
        list_of(map_of(STR, list_of(obj(ConsumeStats)))), default=[], doc="[{group: [stats per topic]}]"
    )
    broker_addr: str | None = bfield(STR)
    total_diff: int = bfield(LONG, default=0)


class ConsumeByWho(JsonBody):
    """Which groups consumed a queue position (declared in Java, not sent by 4.9.8)."""

    java_class = "org.apache.rocketmq.common.protocol.body.ConsumeByWho"

    consumed_group: list[str] = bfield(set_of(STR), default=[])
    not_consumed_group: list[str] = bfield(set_of(STR), default=[])
    topic: str | None = bfield(STR)
    queue_id: int = bfield(INT, default=0)
    offset: int = bfield(LONG, default=0)


class ClusterAclVersionInfo(JsonBody):
    """ACL config versions of a broker (built by the admin client from the
    GET_BROKER_CLUSTER_ACL_INFO response header)."""

    java_class = "org.apache.rocketmq.common.protocol.body.ClusterAclVersionInfo"

    broker_name: str | None = bfield(STR)
    broker_addr: str | None = bfield(STR)
    acl_config_data_version: DataVersion | None = bfield(obj(DataVersion), doc="deprecated in Java")
    all_acl_config_data_version: dict[str, DataVersion] | None = bfield(map_of(STR, obj(DataVersion)))
    cluster_name: str | None = bfield(STR)


__all__ = [
    "BrokerStatsData",
    "BrokerStatsItem",
    "ClusterAclVersionInfo",
    "ConsumeByWho",
    "ConsumeQueueData",
    "ConsumeStatsList",
    "GroupList",
    "ProducerConnection",
    "ProducerInfo",
    "ProducerTableInfo",
    "QueryConsumeQueueResponseBody",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicOffset",
    "TopicStatsTable",
]
