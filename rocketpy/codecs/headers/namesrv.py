"""Headers of the name server's commands: broker registration, routes, KV config, permissions."""

from __future__ import annotations

from .base import CommandHeader, jfield


class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER request: which broker is registering; the body carries its topic configs."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.RegisterBrokerRequestHeader"

    broker_name: str | None = jfield("String", required=True)
    broker_addr: str | None = jfield("String", required=True)
    cluster_name: str | None = jfield("String", required=True)
    ha_server_addr: str | None = jfield("String", required=True)
    broker_id: int | None = jfield("Long", required=True)
    compressed: bool = jfield("boolean")
    body_crc32: int | None = jfield("Integer", default=0)


class RegisterBrokerResponseHeader(CommandHeader):
    """REGISTER_BROKER response: the master's HA and broker addresses for a slave."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.RegisterBrokerResponseHeader"

    ha_server_addr: str | None = jfield("String")
    master_addr: str | None = jfield("String")


class UnRegisterBrokerRequestHeader(CommandHeader):
    """UNREGISTER_BROKER request: the broker leaving the cluster."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.UnRegisterBrokerRequestHeader"

    broker_name: str | None = jfield("String", required=True)
    broker_addr: str | None = jfield("String", required=True)
    cluster_name: str | None = jfield("String", required=True)
    broker_id: int | None = jfield("Long", required=True)


class QueryDataVersionRequestHeader(CommandHeader):
    """QUERY_DATA_VERSION request: a broker asking whether its registration is stale."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.QueryDataVersionRequestHeader"

    broker_name: str | None = jfield("String", required=True)
    broker_addr: str | None = jfield("String", required=True)
    cluster_name: str | None = jfield("String", required=True)
    broker_id: int | None = jfield("Long", required=True)


class QueryDataVersionResponseHeader(CommandHeader):
    """QUERY_DATA_VERSION response: whether the name server's data version differs."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.QueryDataVersionResponseHeader"

    changed: bool | None = jfield("Boolean", required=True)


class GetRouteInfoRequestHeader(CommandHeader):
    """GET_ROUTEINFO_BY_TOPIC request: the topic whose route is wanted."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.GetRouteInfoRequestHeader"

    topic: str | None = jfield("String", required=True)
    accept_standard_json_only: bool | None = jfield("Boolean")


class PutKVConfigRequestHeader(CommandHeader):
    """PUT_KV_CONFIG request: store one value under namespace/key."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.PutKVConfigRequestHeader"

    namespace: str | None = jfield("String", required=True)
    key: str | None = jfield("String", required=True)
    value: str | None = jfield("String", required=True)


class GetKVConfigRequestHeader(CommandHeader):
    """GET_KV_CONFIG request: look up one namespace/key."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.GetKVConfigRequestHeader"

    namespace: str | None = jfield("String", required=True)
    key: str | None = jfield("String", required=True)


class GetKVConfigResponseHeader(CommandHeader):
    """GET_KV_CONFIG response: the stored value, if any."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.GetKVConfigResponseHeader"

    value: str | None = jfield("String")


class DeleteKVConfigRequestHeader(CommandHeader):
    """DELETE_KV_CONFIG request: remove one namespace/key."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.DeleteKVConfigRequestHeader"

    namespace: str | None = jfield("String", required=True)
    key: str | None = jfield("String", required=True)


class GetKVListByNamespaceRequestHeader(CommandHeader):
    """GET_KVLIST_BY_NAMESPACE request: the namespace to list."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.GetKVListByNamespaceRequestHeader"

    namespace: str | None = jfield("String", required=True)


class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER request: the broker to make read-only."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.WipeWritePermOfBrokerRequestHeader"

    broker_name: str | None = jfield("String", required=True)


class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER response: how many topics were changed."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.WipeWritePermOfBrokerResponseHeader"

    wipe_topic_count: int | None = jfield("Integer", required=True)


class AddWritePermOfBrokerRequestHeader(CommandHeader):
    """ADD_WRITE_PERM_OF_BROKER request: the broker to make writable again."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.AddWritePermOfBrokerRequestHeader"

    broker_name: str | None = jfield("String", required=True)


class AddWritePermOfBrokerResponseHeader(CommandHeader):
    """ADD_WRITE_PERM_OF_BROKER response: how many topics were changed."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.AddWritePermOfBrokerResponseHeader"

    add_topic_count: int | None = jfield("Integer", required=True)


class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_NAMESRV request: the topic (optionally limited to one cluster)."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.DeleteTopicFromNamesrvRequestHeader"

    topic: str | None = jfield("String", required=True)
    cluster_name: str | None = jfield("String")


class GetTopicsByClusterRequestHeader(CommandHeader):
    """GET_TOPICS_BY_CLUSTER request: the cluster whose topics are listed."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetTopicsByClusterRequestHeader"

    cluster: str | None = jfield("String", required=True)


class RegisterOrderTopicRequestHeader(CommandHeader):
    """Order-topic registration; declared in 4.9.8 but sent by nothing."""

    java_class = "org.apache.rocketmq.common.protocol.header.namesrv.RegisterOrderTopicRequestHeader"

    topic: str | None = jfield("String", required=True)
    order_topic_string: str | None = jfield("String", required=True)
