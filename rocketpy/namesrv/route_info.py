"""The NameServer's routing state (RouteInfoManager) as plain data: no sockets, no trio.

Tables and their Java counterparts (all HashMaps, so answers list them in Java's order):

* ``topic_queue_table``  topic -> broker name -> QueueInfo
* ``broker_addr_table``  broker name -> BrokerGroup (cluster, name, broker id -> address)
* ``cluster_addr_table`` cluster -> broker names
* ``broker_live_table``  broker address -> BrokerLive (last seen, data version, channel, HA address)
* ``filter_server_table`` broker address -> filter server addresses

A "channel" is whatever object identifies the connection a broker registered over
(the server passes its Connection); the state only compares it by identity.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from ..clock import now_ms as _now_ms
from ..codecs.codes import PermName, RequestCode, TopicSysFlag
from ..javacompat.hashmap import JavaHashMap, JavaHashSet, hash_set_order

log = logging.getLogger("rocketpy.namesrv")

MASTER_ID = 0
#: RouteInfoManager.BROKER_CHANNEL_EXPIRED_TIME
BROKER_CHANNEL_EXPIRED_TIME_MS = 120_000


class TopicConfigLike(Protocol):
    topic_name: str | None
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int


@dataclasses.dataclass(slots=True)
class QueueInfo:
    """QueueData: one broker's share of a topic."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int


@dataclasses.dataclass(slots=True, eq=False)
class BrokerGroup:
    """BrokerData: the members of one broker name, by broker id."""

    cluster: str
    broker_name: str
    broker_addrs: JavaHashMap[int, str] = dataclasses.field(default_factory=JavaHashMap)


@dataclasses.dataclass(slots=True, eq=False)
class BrokerLive:
    """BrokerLiveInfo."""

    last_update_timestamp: int
    data_version: Any
    channel: Any
    ha_server_addr: str | None


@dataclasses.dataclass(slots=True)
class RegisterResult:
    """RegisterBrokerResult minus the KV table: what a slave learns about its master."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclasses.dataclass(slots=True)
class RouteView:
    """TopicRouteData as plain data, lists and maps already in Java's order."""

    queue_datas: list[QueueInfo]
    broker_datas: list[tuple[str, str, dict[int, str]]]  # (cluster, broker name, id -> address)
    filter_server_table: dict[str, list[str]]


def version_key(version: Any) -> tuple[int | None, int | None] | None:
    """DataVersion equality is (timestamp, counter); a null counter equals only a null one, as in
    Java's DataVersion.equals (a body may carry ``"counter":null``)."""
    if version is None:
        return None
    ts, counter = version.timestamp, version.counter
    return (None if ts is None else int(ts), None if counter is None else int(counter))


class RouteInfoManager:
    """All routing state and its operations, with Java 4.9.8's semantics."""

    def __init__(self, clock: Callable[[], int] = _now_ms) -> None:
        self.clock = clock
        self.topic_queue_table: JavaHashMap[str, JavaHashMap[str, QueueInfo]] = JavaHashMap(1024)
        self.broker_addr_table: JavaHashMap[str, BrokerGroup] = JavaHashMap(128)
        self.cluster_addr_table: JavaHashMap[str, JavaHashSet[str]] = JavaHashMap(32)
        self.broker_live_table: JavaHashMap[str, BrokerLive] = JavaHashMap(256)
        self.filter_server_table: JavaHashMap[str, list[str]] = JavaHashMap(256)
        #: bumped on every change that can alter a route answer (for answer caches)
        self.version = 0

    # -- registration ---------------------------------------------------------------
    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str | None,
        topic_config_table: Mapping[str, TopicConfigLike] | None,
        data_version: Any,
        filter_server_list: Sequence[str] | None,
        channel: Any,
    ) -> RegisterResult:
        """Record a broker's heartbeat/registration; a master's topics enter the routes
        when its data version changed or it registers for the first time."""
        self.version += 1
        result = RegisterResult()
        names = self.cluster_addr_table.get(cluster_name)
        if names is None:
            names = self.cluster_addr_table[cluster_name] = JavaHashSet()
        names.add(broker_name)

        register_first = False
        group = self.broker_addr_table.get(broker_name)
        if group is None:
            register_first = True
            group = self.broker_addr_table[broker_name] = BrokerGroup(cluster_name, broker_name)
        addrs = group.broker_addrs
        # one address, one role: a slave promoted to master drops its old id
        for bid in [bid for bid, addr in addrs.items() if addr == broker_addr and bid != broker_id]:
            del addrs[bid]
        old_addr = addrs.get(broker_id)
        addrs[broker_id] = broker_addr
        if broker_id == MASTER_ID:
            log.info(
                "cluster [%s] brokerName [%s] master address change from %s to %s",
                group.cluster,
                broker_name,
                old_addr,
                broker_addr,
            )
        register_first = register_first or old_addr is None

        if topic_config_table is not None and broker_id == MASTER_ID:
            if register_first or self.is_broker_topic_config_changed(broker_addr, data_version):
                for config in topic_config_table.values():
                    self._create_and_update_queue_data(broker_name, config)

        previous = self.broker_live_table.get(broker_addr)
        self.broker_live_table[broker_addr] = BrokerLive(self.clock(), data_version, channel, ha_server_addr)
        if previous is None:
            log.info("new broker registered, %s HAServer: %s", broker_addr, ha_server_addr)

        if filter_server_list is not None:
            if not filter_server_list:
                self.filter_server_table.pop(broker_addr, None)
            else:
                self.filter_server_table[broker_addr] = list(filter_server_list)

        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            if master_addr is not None:
                master_live = self.broker_live_table.get(master_addr)
                if master_live is not None:
                    result.ha_server_addr = master_live.ha_server_addr
                    result.master_addr = master_addr
        return result

    def _create_and_update_queue_data(self, broker_name: str, config: TopicConfigLike) -> None:
        queue = QueueInfo(
            broker_name,
            config.read_queue_nums,
            config.write_queue_nums,
            config.perm,
            config.topic_sys_flag,
        )
        topic = config.topic_name
        queues = self.topic_queue_table.get(topic)  # type: ignore[arg-type]
        if queues is None:
            queues = JavaHashMap()
            queues[broker_name] = queue
            self.topic_queue_table[topic] = queues  # type: ignore[index]
            log.info("new topic registered, %s %s", topic, queue)
        else:
            old = queues.get(broker_name)
            if old == queue:
                # kept: a broker whose data version moved sends every topic again each 30 s, and a fresh
                # equal entry each time is a block allocated at a random time and kept (arenas stay resident)
                return
            queues[broker_name] = queue
            if old is not None:
                log.info("topic changed, %s OLD: %s NEW: %s", topic, old, queue)

    def is_broker_topic_config_changed(self, broker_addr: str, data_version: Any) -> bool:
        prev = self.query_broker_topic_config(broker_addr)
        return prev is None or data_version is None or version_key(prev) != version_key(data_version)

    def query_broker_topic_config(self, broker_addr: str) -> Any:
        live = self.broker_live_table.get(broker_addr)
        return None if live is None else live.data_version

    def update_broker_info_update_timestamp(self, broker_addr: str, timestamp: int | None = None) -> None:
        live = self.broker_live_table.get(broker_addr)
        if live is not None:
            live.last_update_timestamp = self.clock() if timestamp is None else timestamp

    def unregister_broker(self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        self.version += 1
        live = self.broker_live_table.pop(broker_addr, None)
        log.info("unregisterBroker, remove from brokerLiveTable %s, %s", "OK" if live else "Failed", broker_addr)
        self.filter_server_table.pop(broker_addr, None)
        remove_name = False
        group = self.broker_addr_table.get(broker_name)
        if group is not None:
            addr = group.broker_addrs.pop(broker_id, None)
            outcome = "OK" if addr else "Failed"
            log.info("unregisterBroker, remove addr from brokerAddrTable %s, %s", outcome, broker_addr)
            if not group.broker_addrs:
                del self.broker_addr_table[broker_name]
                remove_name = True
        if remove_name:
            names = self.cluster_addr_table.get(cluster_name)
            if names is not None:
                names.discard(broker_name)
                if not names:
                    del self.cluster_addr_table[cluster_name]
            self._remove_topics_of(broker_name)

    def _remove_topics_of(self, broker_name: str) -> None:
        empty = []
        for topic, queues in self.topic_queue_table.items():
            queues.pop(broker_name, None)
            if not queues:
                empty.append(topic)
        for topic in empty:
            del self.topic_queue_table[topic]

    # -- liveness ------------------------------------------------------------------
    def scan_not_active_broker(self, expired_ms: int = BROKER_CHANNEL_EXPIRED_TIME_MS) -> list[tuple[str, Any]]:
        """Drop brokers not seen for ``expired_ms``; returns (address, channel) of each, to close."""
        now = self.clock()
        gone = [
            (addr, live.channel)
            for addr, live in self.broker_live_table.items()
            if live.last_update_timestamp + expired_ms < now
        ]
        for addr, _ in gone:
            log.warning("The broker channel expired, %s %dms", addr, expired_ms)
            # by address: Java looks the channel up again, which picks another broker sharing it
            self._forget_broker(addr)
        return gone

    def on_channel_destroy(self, remote_addr: str | None, channel: Any) -> None:
        """A connection ended: forget the brokers registered through it (else the one at ``remote_addr``)."""
        found = []
        if channel is not None:
            found = [addr for addr, live in self.broker_live_table.items() if live.channel is channel]
        for addr in found:
            log.info("the broker's channel destroyed, %s, clean it's data structure at once", addr)
        if not found and remote_addr:
            found = [remote_addr]
        for addr in found:
            self._forget_broker(addr)

    def _forget_broker(self, broker_addr: str) -> None:
        """Remove one broker address; its name, cluster entries and topics go when it was the last member.

        Every name the address was registered under loses it, and a name goes from every cluster it was
        registered in, where Java's onChannelDestroy stops at the first of each: a connection that
        registered one address under several names or clusters left the others behind with no live
        entry, for good (a client registering random names grew the tables without bound)."""
        self.version += 1
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        for name in self.broker_addr_table.java_keys():
            group = self.broker_addr_table[name]
            bid = next((b for b in group.broker_addrs.java_keys() if group.broker_addrs[b] == broker_addr), None)
            if bid is None:
                continue
            del group.broker_addrs[bid]
            log.info("remove brokerAddr[%s, %s] from brokerAddrTable, because channel destroyed", bid, broker_addr)
            if not group.broker_addrs:
                del self.broker_addr_table[name]
                log.info("remove brokerName[%s] from brokerAddrTable, because channel destroyed", name)
                for cluster in self.cluster_addr_table.java_keys():  # every cluster it was registered in
                    names = self.cluster_addr_table[cluster]
                    if names.discard(name) and not names:
                        del self.cluster_addr_table[cluster]
                self._remove_topics_of(name)

    # -- permissions ------------------------------------------------------------------
    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, RequestCode.WIPE_WRITE_PERM_OF_BROKER)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        return self._operate_write_perm(broker_name, RequestCode.ADD_WRITE_PERM_OF_BROKER)

    def _operate_write_perm(self, broker_name: str, code: int) -> int:
        self.version += 1
        count = 0
        for queues in self.topic_queue_table.values():
            queue = queues.get(broker_name)
            if queue is None:
                continue
            if code == RequestCode.WIPE_WRITE_PERM_OF_BROKER:
                queue.perm &= ~PermName.PERM_WRITE
            else:
                queue.perm = PermName.PERM_READ | PermName.PERM_WRITE
            count += 1
        return count

    # -- topics --------------------------------------------------------------------------
    def delete_topic(self, topic: str | None, cluster_name: str | None = None) -> None:
        self.version += 1
        if cluster_name is None:
            self.topic_queue_table.pop(topic, None)  # type: ignore[arg-type]
            return
        names = self.cluster_addr_table.get(cluster_name)
        if not names:
            return
        queues = self.topic_queue_table.get(topic)  # type: ignore[arg-type]
        if queues is None:
            return
        for name in names.java_keys():
            if queues.pop(name, None) is not None:
                log.info("deleteTopic, remove one broker's topic %s %s", name, topic)
        if not queues:
            log.info("deleteTopic, remove the topic all queue %s %s", cluster_name, topic)
            del self.topic_queue_table[topic]  # type: ignore[arg-type]

    def pickup_topic_route_data(self, topic: str | None) -> RouteView | None:
        """The route of ``topic``, or None unless it has queues and at least one known broker."""
        queues = self.topic_queue_table.get(topic)  # type: ignore[arg-type]
        if queues is None:
            return None
        names = queues.java_keys()
        queue_datas = [queues[n] for n in names]
        broker_datas = []
        filter_servers: dict[str, list[str]] = {}
        for name in hash_set_order(names):
            group = self.broker_addr_table.get(name)
            if group is None:
                continue
            addrs = group.broker_addrs.java_view()
            broker_datas.append((group.cluster, group.broker_name, addrs))
            if self.filter_server_table:
                for addr in addrs.values():
                    servers = self.filter_server_table.get(addr)
                    if servers is not None:
                        filter_servers[addr] = servers
        if not broker_datas:
            return None
        filter_view = {k: filter_servers[k] for k in hash_set_order(filter_servers)}
        return RouteView(queue_datas, broker_datas, filter_view)

    def all_topics(self) -> list[str]:
        """GET_ALL_TOPIC_LIST_FROM_NAMESERVER: the keys, as the HashSet TopicList holds them."""
        return hash_set_order(self.topic_queue_table.java_keys())

    def cluster_view(self) -> tuple[dict[str, tuple[str, str, dict[int, str]]], dict[str, list[str]]]:
        """ClusterInfo: broker name -> (cluster, name, addresses) and cluster -> broker names."""
        brokers = {}
        for name in self.broker_addr_table.java_keys():
            group = self.broker_addr_table[name]
            brokers[name] = (group.cluster, group.broker_name, group.broker_addrs.java_view())
        clusters = {c: self.cluster_addr_table[c].java_keys() for c in self.cluster_addr_table.java_keys()}
        return brokers, clusters

    def system_topic_list(self) -> tuple[list[str], str | None]:
        """GET_SYSTEM_TOPIC_LIST_FROM_NS: cluster and broker names, plus one broker address."""
        names: list[str] = []
        for cluster in self.cluster_addr_table.java_keys():
            names.append(cluster)
            names.extend(self.cluster_addr_table[cluster].java_keys())
        broker_addr = None
        for name in self.broker_addr_table.java_keys():
            addrs = self.broker_addr_table[name].broker_addrs
            if addrs:
                broker_addr = addrs[addrs.java_keys()[0]]
                break
        return hash_set_order(names), broker_addr

    def topics_by_cluster(self, cluster: str | None) -> list[str]:
        names = self.cluster_addr_table.get(cluster)  # type: ignore[arg-type]
        if names is None:
            return []  # Java fails inside its try block and answers an empty list
        topics: list[str] = []
        ordered_topics = self.topic_queue_table.java_keys()
        for name in names.java_keys():
            topics.extend(t for t in ordered_topics if name in self.topic_queue_table[t])
        return hash_set_order(topics)

    def _topics_where(self, pick: Callable[[QueueInfo], bool]) -> list[str]:
        topics = []
        for topic in self.topic_queue_table.java_keys():
            queues = self.topic_queue_table[topic]
            first = queues.java_values()[:1]
            if first and pick(first[0]):
                topics.append(topic)
        return hash_set_order(topics)

    def unit_topics(self) -> list[str]:
        return self._topics_where(lambda q: _has(q.topic_sys_flag, TopicSysFlag.FLAG_UNIT))

    def has_unit_sub_topics(self) -> list[str]:
        return self._topics_where(lambda q: _has(q.topic_sys_flag, TopicSysFlag.FLAG_UNIT_SUB))

    def has_unit_sub_ununit_topics(self) -> list[str]:
        return self._topics_where(
            lambda q: (
                not _has(q.topic_sys_flag, TopicSysFlag.FLAG_UNIT)
                and _has(q.topic_sys_flag, TopicSysFlag.FLAG_UNIT_SUB)
            )
        )

    def broker_addresses(self) -> Iterable[str]:
        return list(self.broker_live_table)


def _has(flag: int, bit: int) -> bool:
    return (flag & bit) == bit
