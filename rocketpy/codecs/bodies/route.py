"""Name-server views: topic routes, the cluster map, topic lists and key/value tables."""

from __future__ import annotations

from .base import INT, LONG, STR, JsonBody, bfield, list_of, map_of, obj, set_of

MASTER_ID = 0  # MixAll.MASTER_ID: broker id of a master in BrokerData.brokerAddrs


class QueueData(JsonBody):
    """One broker's queues of a topic (route/QueueData)."""

    java_class = "org.apache.rocketmq.common.protocol.route.QueueData"

    broker_name: str | None = bfield(STR)
    read_queue_nums: int = bfield(INT, default=0)
    write_queue_nums: int = bfield(INT, default=0)
    perm: int = bfield(INT, default=0, doc="PermName bits")
    topic_sys_flag: int = bfield(INT, default=0, doc="TopicSysFlag bits")


class BrokerData(JsonBody):
    """A broker group: its cluster, name and the address of each member by broker id."""

    java_class = "org.apache.rocketmq.common.protocol.route.BrokerData"

    cluster: str | None = bfield(STR)
    broker_name: str | None = bfield(STR)
    broker_addrs: dict[int, str] | None = bfield(map_of(LONG, STR), doc="broker id -> host:port")

    def master_addr(self) -> str | None:
        """The master's address, if the group has a master."""
        return (self.broker_addrs or {}).get(MASTER_ID)


class TopicRouteData(JsonBody):
    """GET_ROUTEINFO_BY_TOPIC response: where a topic's queues live.

    The 4.9.8 name server encodes it with BrowserCompatible and MapSortField for clients
    that announce V4_9_4 or later (see ``registry.route_data_features``)."""

    java_class = "org.apache.rocketmq.common.protocol.route.TopicRouteData"

    order_topic_conf: str | None = bfield(STR, doc="orderly topic config from the KV store, 'broker:queues;...'")
    queue_datas: list[QueueData] | None = bfield(list_of(obj(QueueData)))
    broker_datas: list[BrokerData] | None = bfield(list_of(obj(BrokerData)))
    filter_server_table: dict[str, list[str]] | None = bfield(
        map_of(STR, list_of(STR)), doc="broker address -> filter server addresses"
    )


class ClusterInfo(JsonBody):
    """GET_BROKER_CLUSTER_INFO response."""

    java_class = "org.apache.rocketmq.common.protocol.body.ClusterInfo"

    broker_addr_table: dict[str, BrokerData] | None = bfield(map_of(STR, obj(BrokerData)))
    cluster_addr_table: dict[str, list[str]] | None = bfield(
        map_of(STR, set_of(STR)), doc="cluster name -> broker names"
    )

    def broker_addrs_of(self, cluster: str) -> list[str]:
        """Every broker address of a cluster (ClusterInfo.retrieveAllAddrByCluster)."""
        out: list[str] = []
        for name in (self.cluster_addr_table or {}).get(cluster) or []:
            data = (self.broker_addr_table or {}).get(name)
            if data is not None and data.broker_addrs:
                out.extend(data.broker_addrs.values())
        return out


class TopicList(JsonBody):
    """A set of topic names (topic list requests to the name server and broker)."""

    java_class = "org.apache.rocketmq.common.protocol.body.TopicList"

    topic_list: list[str] = bfield(set_of(STR), default=[])
    broker_addr: str | None = bfield(STR)


class KVTable(JsonBody):
    """A string map: broker runtime info, a KV namespace, the register-broker reply."""

    java_class = "org.apache.rocketmq.common.protocol.body.KVTable"

    table: dict[str, str] = bfield(map_of(STR, STR), default={})


__all__ = ["MASTER_ID", "BrokerData", "ClusterInfo", "KVTable", "QueueData", "TopicList", "TopicRouteData"]
