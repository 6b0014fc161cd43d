"""Which header class travels with which request code, in each direction.

Both tables are keyed by the *request* code (a response carries a response code,
so look it up by the code of the request it answers). The entries follow what the
4.9.8 servers and clients decode and create for each code: the broker processors,
the name server's DefaultRequestProcessor, the client's MQClientAPIImpl and its
ClientRemotingProcessor (for broker-to-client requests). A response header is
listed only where Java builds the response from a typed header class.
"""

from __future__ import annotations

from ..codes import RequestCode
from . import acl, admin, consumer, filtersrv, namesrv, pull, query, send, stats, transaction
from .acl import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from .admin import (
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetAllTopicConfigResponseHeader,
    GetBrokerConfigResponseHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    QueryCorrectionOffsetHeader,
    ResetOffsetRequestHeader,
)
from .base import CommandHeader
from .consumer import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumerListByGroupResponseHeader,
    NotifyConsumerIdsChangedRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UnregisterClientRequestHeader,
    UnregisterClientResponseHeader,
    UpdateConsumerOffsetRequestHeader,
    UpdateConsumerOffsetResponseHeader,
)
from .filtersrv import RegisterMessageFilterClassRequestHeader
from .namesrv import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from .pull import PullMessageRequestHeader, PullMessageResponseHeader
from .query import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    QueryConsumeQueueRequestHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    ViewMessageRequestHeader,
)
from .send import (
    ReplyMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from .stats import (
    GetAllProducerInfoRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from .transaction import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
    ResumeCheckHalfMessageRequestHeader,
)

__all__ = ["HEADER_TYPES", "REQUEST_HEADERS", "RESPONSE_HEADERS", "V2_SEND_CODES", "header_class"]

RC = RequestCode

REQUEST_HEADERS: dict[int, type[CommandHeader]] = {
    # messages
    RC.SEND_MESSAGE: SendMessageRequestHeader,
    RC.SEND_MESSAGE_V2: SendMessageRequestHeaderV2,
    RC.SEND_BATCH_MESSAGE: SendMessageRequestHeaderV2,
    RC.SEND_REPLY_MESSAGE: SendMessageRequestHeader,
    RC.SEND_REPLY_MESSAGE_V2: SendMessageRequestHeaderV2,
    RC.PUSH_REPLY_MESSAGE_TO_CLIENT: ReplyMessageRequestHeader,
    RC.PULL_MESSAGE: PullMessageRequestHeader,
    RC.CONSUMER_SEND_MSG_BACK: ConsumerSendMsgBackRequestHeader,
    # transactions
    RC.END_TRANSACTION: EndTransactionRequestHeader,
    RC.CHECK_TRANSACTION_STATE: CheckTransactionStateRequestHeader,
    RC.RESUME_CHECK_HALF_MESSAGE: ResumeCheckHalfMessageRequestHeader,
    # look-ups
    RC.QUERY_MESSAGE: QueryMessageRequestHeader,
    RC.VIEW_MESSAGE_BY_ID: ViewMessageRequestHeader,
    RC.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetRequestHeader,
    RC.GET_MAX_OFFSET: GetMaxOffsetRequestHeader,
    RC.GET_MIN_OFFSET: GetMinOffsetRequestHeader,
    RC.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeRequestHeader,
    RC.QUERY_CONSUME_QUEUE: QueryConsumeQueueRequestHeader,
    # consumer bookkeeping
    RC.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetRequestHeader,
    RC.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetRequestHeader,
    RC.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupRequestHeader,
    RC.NOTIFY_CONSUMER_IDS_CHANGED: NotifyConsumerIdsChangedRequestHeader,
    RC.UNREGISTER_CLIENT: UnregisterClientRequestHeader,
    # administration (broker)
    RC.UPDATE_AND_CREATE_TOPIC: CreateTopicRequestHeader,
    RC.DELETE_TOPIC_IN_BROKER: DeleteTopicRequestHeader,
    RC.DELETE_SUBSCRIPTIONGROUP: DeleteSubscriptionGroupRequestHeader,
    RC.INVOKE_BROKER_TO_RESET_OFFSET: ResetOffsetRequestHeader,
    RC.RESET_CONSUMER_CLIENT_OFFSET: ResetOffsetRequestHeader,
    RC.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: GetConsumerStatusRequestHeader,
    RC.GET_CONSUMER_STATUS_FROM_CLIENT: GetConsumerStatusRequestHeader,
    RC.GET_CONSUMER_RUNNING_INFO: GetConsumerRunningInfoRequestHeader,
    RC.CONSUME_MESSAGE_DIRECTLY: ConsumeMessageDirectlyResultRequestHeader,
    RC.CLONE_GROUP_OFFSET: CloneGroupOffsetRequestHeader,
    RC.QUERY_CORRECTION_OFFSET: QueryCorrectionOffsetHeader,
    # statistics
    RC.GET_TOPIC_STATS_INFO: GetTopicStatsInfoRequestHeader,
    RC.GET_CONSUME_STATS: GetConsumeStatsRequestHeader,
    RC.GET_BROKER_CONSUME_STATS: GetConsumeStatsInBrokerHeader,
    RC.GET_CONSUMER_CONNECTION_LIST: GetConsumerConnectionListRequestHeader,
    RC.GET_PRODUCER_CONNECTION_LIST: GetProducerConnectionListRequestHeader,
    RC.GET_ALL_PRODUCER_INFO: GetAllProducerInfoRequestHeader,
    RC.QUERY_TOPIC_CONSUME_BY_WHO: QueryTopicConsumeByWhoRequestHeader,
    RC.QUERY_CONSUME_TIME_SPAN: QueryConsumeTimeSpanRequestHeader,
    RC.VIEW_BROKER_STATS_DATA: ViewBrokerStatsDataRequestHeader,
    # ACL
    RC.UPDATE_AND_CREATE_ACL_CONFIG: CreateAccessConfigRequestHeader,
    RC.DELETE_ACL_CONFIG: DeleteAccessConfigRequestHeader,
    RC.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: UpdateGlobalWhiteAddrsConfigRequestHeader,
    # name server
    RC.REGISTER_BROKER: RegisterBrokerRequestHeader,
    RC.UNREGISTER_BROKER: UnRegisterBrokerRequestHeader,
    RC.QUERY_DATA_VERSION: QueryDataVersionRequestHeader,
    RC.GET_ROUTEINFO_BY_TOPIC: GetRouteInfoRequestHeader,
    RC.PUT_KV_CONFIG: PutKVConfigRequestHeader,
    RC.GET_KV_CONFIG: GetKVConfigRequestHeader,
    RC.DELETE_KV_CONFIG: DeleteKVConfigRequestHeader,
    RC.GET_KVLIST_BY_NAMESPACE: GetKVListByNamespaceRequestHeader,
    RC.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerRequestHeader,
    RC.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerRequestHeader,
    RC.DELETE_TOPIC_IN_NAMESRV: DeleteTopicFromNamesrvRequestHeader,
    RC.GET_TOPICS_BY_CLUSTER: GetTopicsByClusterRequestHeader,
    # filter server (only the client side is left in 4.9.8)
    RC.REGISTER_MESSAGE_FILTER_CLASS: RegisterMessageFilterClassRequestHeader,
}

RESPONSE_HEADERS: dict[int, type[CommandHeader]] = {
    RC.SEND_MESSAGE: SendMessageResponseHeader,
    RC.SEND_MESSAGE_V2: SendMessageResponseHeader,
    RC.SEND_BATCH_MESSAGE: SendMessageResponseHeader,
    RC.SEND_REPLY_MESSAGE: SendMessageResponseHeader,
    RC.SEND_REPLY_MESSAGE_V2: SendMessageResponseHeader,
    RC.PULL_MESSAGE: PullMessageResponseHeader,
    RC.QUERY_MESSAGE: QueryMessageResponseHeader,
    RC.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetResponseHeader,
    RC.GET_MAX_OFFSET: GetMaxOffsetResponseHeader,
    RC.GET_MIN_OFFSET: GetMinOffsetResponseHeader,
    RC.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeResponseHeader,
    RC.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetResponseHeader,
    RC.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetResponseHeader,
    RC.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupResponseHeader,
    RC.UNREGISTER_CLIENT: UnregisterClientResponseHeader,
    RC.GET_ALL_TOPIC_CONFIG: GetAllTopicConfigResponseHeader,
    RC.GET_BROKER_CONFIG: GetBrokerConfigResponseHeader,
    RC.GET_BROKER_CLUSTER_ACL_INFO: GetBrokerAclConfigResponseHeader,
    RC.REGISTER_BROKER: RegisterBrokerResponseHeader,
    RC.QUERY_DATA_VERSION: QueryDataVersionResponseHeader,
    RC.GET_KV_CONFIG: GetKVConfigResponseHeader,
    RC.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerResponseHeader,
    RC.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerResponseHeader,
}


def _module_headers() -> tuple[type[CommandHeader], ...]:
    found: list[type[CommandHeader]] = []
    for module in (namesrv, send, pull, consumer, query, transaction, admin, stats, acl, filtersrv):
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, CommandHeader) and value.__module__ == module.__name__:
                found.append(value)
    return tuple(found)


#: Every header class of 4.9.8, mapped to a code or not (see the module docs of each group).
HEADER_TYPES: tuple[type[CommandHeader], ...] = _module_headers()

#: the request codes whose header is SendMessageRequestHeaderV2 (single-letter field names)
V2_SEND_CODES: frozenset[int] = frozenset(
    int(code) for code, cls in REQUEST_HEADERS.items() if cls is SendMessageRequestHeaderV2
)


def header_class(code: int, is_response: bool) -> type[CommandHeader] | None:
    """The header class of a request code, for its request or its response; None when it has none."""
    return (RESPONSE_HEADERS if is_response else REQUEST_HEADERS).get(code)
