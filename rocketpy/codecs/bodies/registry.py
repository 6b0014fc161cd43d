"""Which JSON body each request code carries, by direction (RocketMQ 4.9.8 processors,
MQClientAPIImpl, BrokerOuterAPI, Broker2Client, ClientRemotingProcessor).

Both tables are keyed by the REQUEST code; a response body is looked up with the code
of the request it answers. Codes whose bodies are not JSON are absent: messages
(SEND_*, PULL_MESSAGE, VIEW_MESSAGE_BY_ID, QUERY_MESSAGE, CHECK_TRANSACTION_STATE,
CONSUME_MESSAGE_DIRECTLY requests, PUSH_REPLY_MESSAGE_TO_CLIENT...), java.util.Properties
text (UPDATE_BROKER_CONFIG, GET_BROKER_CONFIG, UPDATE_NAMESRV_CONFIG, GET_NAMESRV_CONFIG)
and filter class sources (REGISTER_MESSAGE_FILTER_CLASS).

Special cases a caller must know:
- REGISTER_BROKER requests are compressed when the header says ``compressed=true``
  (``RegisterBrokerBody.decode(body, compressed)``; auto-detected if not given).
- RESET_CONSUMER_CLIENT_OFFSET goes to C++ clients as ResetOffsetBodyForC.
- GET_ROUTEINFO_BY_TOPIC replies are encoded with :func:`route_data_features`.
"""

from __future__ import annotations

from typing import Any

from ..codes import MQVersion, RequestCode
from .admin import (
    BrokerStatsData,
    BrokerStatsItem,
    ClusterAclVersionInfo,
    ConsumeByWho,
    ConsumeQueueData,
    ConsumeStatsList,
    GroupList,
    ProducerConnection,
    ProducerInfo,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicOffset,
    TopicStatsTable,
)
from .base import JsonBody
from .consumer import (
    CheckClientRequestBody,
    Connection,
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumerOffsetSerializeWrapper,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatus,
    GetConsumerListByGroupResponseBody,
    GetConsumerStatusBody,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    MessageQueueForC,
    OffsetMovedEvent,
    OffsetWrapper,
    ProcessQueueInfo,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    QueueTimeSpan,
    ResetOffsetBody,
    ResetOffsetBodyForC,
    UnlockBatchRequestBody,
)
from .heartbeat import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from .register import DataVersion, RegisterBrokerBody, RegisterBrokerResult, TopicConfig, TopicConfigSerializeWrapper
from .route import BrokerData, ClusterInfo, KVTable, QueueData, TopicList, TopicRouteData
from .store_config import (
    BloomFilterData,
    ConsumerFilterData,
    ConsumerFilterManagerData,
    DelayOffsetSerializeWrapper,
    FilterDataMapByTopic,
    KVConfigSerializeWrapper,
    OffsetSerializeWrapper,
)

RC = RequestCode

#: request code -> body class of the request
REQUEST_BODIES: dict[int, type[JsonBody]] = {
    RC.HEART_BEAT: HeartbeatData,
    RC.CHECK_CLIENT_CONFIG: CheckClientRequestBody,
    RC.LOCK_BATCH_MQ: LockBatchRequestBody,
    RC.UNLOCK_BATCH_MQ: UnlockBatchRequestBody,
    RC.REGISTER_BROKER: RegisterBrokerBody,
    RC.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: SubscriptionGroupConfig,
    RC.RESET_CONSUMER_CLIENT_OFFSET: ResetOffsetBody,
    RC.QUERY_DATA_VERSION: DataVersion,
}

#: request code -> body class of a successful response to it
RESPONSE_BODIES: dict[int, type[JsonBody]] = {
    # broker
    RC.GET_ALL_TOPIC_CONFIG: TopicConfigSerializeWrapper,
    RC.GET_BROKER_RUNTIME_INFO: KVTable,
    RC.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupResponseBody,
    RC.LOCK_BATCH_MQ: LockBatchResponseBody,
    RC.GET_ALL_CONSUMER_OFFSET: ConsumerOffsetSerializeWrapper,
    RC.GET_ALL_DELAY_OFFSET: DelayOffsetSerializeWrapper,
    RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: SubscriptionGroupWrapper,
    RC.GET_TOPIC_STATS_INFO: TopicStatsTable,
    RC.GET_CONSUMER_CONNECTION_LIST: ConsumerConnection,
    RC.GET_PRODUCER_CONNECTION_LIST: ProducerConnection,
    RC.GET_CONSUME_STATS: ConsumeStats,
    RC.INVOKE_BROKER_TO_RESET_OFFSET: ResetOffsetBody,
    RC.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: GetConsumerStatusBody,
    RC.QUERY_TOPIC_CONSUME_BY_WHO: GroupList,
    RC.QUERY_CONSUME_TIME_SPAN: QueryConsumeTimeSpanBody,
    RC.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: TopicList,
    RC.QUERY_CORRECTION_OFFSET: QueryCorrectionOffsetBody,
    RC.VIEW_BROKER_STATS_DATA: BrokerStatsData,
    RC.GET_BROKER_CONSUME_STATS: ConsumeStatsList,
    RC.QUERY_CONSUME_QUEUE: QueryConsumeQueueResponseBody,
    RC.GET_ALL_PRODUCER_INFO: ProducerTableInfo,
    # name server
    RC.REGISTER_BROKER: KVTable,
    RC.QUERY_DATA_VERSION: DataVersion,
    RC.GET_ROUTEINFO_BY_TOPIC: TopicRouteData,
    RC.GET_BROKER_CLUSTER_INFO: ClusterInfo,
    RC.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: TopicList,
    RC.GET_KVLIST_BY_NAMESPACE: KVTable,
    RC.GET_TOPICS_BY_CLUSTER: TopicList,
    RC.GET_SYSTEM_TOPIC_LIST_FROM_NS: TopicList,
    RC.GET_UNIT_TOPIC_LIST: TopicList,
    RC.GET_HAS_UNIT_SUB_TOPIC_LIST: TopicList,
    RC.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: TopicList,
    # clients (answering the broker; the broker relays the last two to admin tools)
    RC.GET_CONSUMER_STATUS_FROM_CLIENT: GetConsumerStatusBody,
    RC.GET_CONSUMER_RUNNING_INFO: ConsumerRunningInfo,
    RC.CONSUME_MESSAGE_DIRECTLY: ConsumeMessageDirectlyResult,
}

#: every body and bean class
BODY_TYPES: tuple[type[JsonBody], ...] = (
    # route
    QueueData,
    BrokerData,
    TopicRouteData,
    ClusterInfo,
    TopicList,
    KVTable,
    # register
    DataVersion,
    TopicConfig,
    TopicConfigSerializeWrapper,
    RegisterBrokerBody,
    RegisterBrokerResult,
    # heartbeat
    SubscriptionData,
    ProducerData,
    ConsumerData,
    HeartbeatData,
    # consumer
    MessageQueue,
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
    GetConsumerListByGroupResponseBody,
    Connection,
    ConsumerConnection,
    OffsetWrapper,
    ConsumeStats,
    ConsumerOffsetSerializeWrapper,
    ResetOffsetBody,
    MessageQueueForC,
    ResetOffsetBodyForC,
    QueueTimeSpan,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    ProcessQueueInfo,
    ConsumeStatus,
    ConsumerRunningInfo,
    ConsumeMessageDirectlyResult,
    GetConsumerStatusBody,
    CheckClientRequestBody,
    OffsetMovedEvent,
    # admin
    TopicOffset,
    TopicStatsTable,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    GroupList,
    BrokerStatsItem,
    BrokerStatsData,
    ProducerConnection,
    ProducerInfo,
    ProducerTableInfo,
    ConsumeQueueData,
    QueryConsumeQueueResponseBody,
    ConsumeStatsList,
    ConsumeByWho,
    ClusterAclVersionInfo,
    # files
    DelayOffsetSerializeWrapper,
    BloomFilterData,
    ConsumerFilterData,
    FilterDataMapByTopic,
    ConsumerFilterManagerData,
    KVConfigSerializeWrapper,
    OffsetSerializeWrapper,
)


def request_body_class(code: int) -> type[JsonBody] | None:
    """The JSON body class of a request with this code, if its body is JSON."""
    return REQUEST_BODIES.get(code)


def response_body_class(request_code: int) -> type[JsonBody] | None:
    """The JSON body class of a successful response to a request with this code."""
    return RESPONSE_BODIES.get(request_code)


def route_data_features(version: int, accept_standard_json_only: bool | None) -> dict[str, Any]:
    """Encode features of the 4.9.8 name server's GET_ROUTEINFO_BY_TOPIC reply.

    Clients whose request ``version`` is V4_9_4 or later, or that set the header's
    ``acceptStandardJsonOnly``, get BrowserCompatible + MapSortField (quoted map keys,
    \\uXXXX escapes, sorted maps); older clients get the default dialect (bare integer keys)."""
    if version >= MQVersion.V4_9_4 or accept_standard_json_only:
        return {"browser_compatible": True, "sort_map_keys": True}
    return {}


__all__ = [
    "BODY_TYPES",
    "REQUEST_BODIES",
    "RESPONSE_BODIES",
    "request_body_class",
    "response_body_class",
    "route_data_features",
]
