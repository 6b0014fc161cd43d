"""What ``/metrics`` asks the cluster on a scrape, from the broker answers rocketmq-exporter's MetricsCollectTask
reads, and how each metric is computed from them (its meaning in the exporter; "minute sum" and "minute TPS" are
VIEW_BROKER_STATS_DATA's statsMinute, rounded to two decimals as the exporter's getFixedDouble where it rounds):

=============================================  =========================================================================
rocketmq_broker_tps / _qps                     BROKER_PUT_NUMS minute sum / BROKER_GET_NUMS minute TPS, key the cluster
rocketmq_brokeruntime_*                        GET_BROKER_RUNTIME_INFO of each master (see metrics.runtime_values)
rocketmq_producer_count                        GET_ALL_PRODUCER_INFO: the producers of each group on each master
rocketmq_producer_offset / _topic_retry_offset GET_TOPIC_STATS_INFO: the sum of the queues' max offsets per broker,
/ _topic_dlq_offset                            of normal, %RETRY% and %DLQ% topics (the DLQ's labelled by its group)
rocketmq_producer_tps / _message_size          TOPIC_PUT_NUMS / TOPIC_PUT_SIZE minute sum, normal topics
rocketmq_group_diff / _retrydiff               consume stats: sum of broker offset - consumer offset, CLUSTERING groups,
                                               on normal / %RETRY% topics; msgModel is the model's ordinal (1)
rocketmq_group_dlqdiff                         the group's %DLQ% topic: max offsets - its offsets there (the exporter
                                               declares it and leaves it empty; this is what its name says)
rocketmq_group_count                           GET_CONSUMER_CONNECTION_LIST: online clients, their addresses and ids
rocketmq_consumer_offset                       consume stats: the sum of the group's consumer offsets per broker (what
/ _group_consume_total_offset                  the exporter puts under consumer_offset; the second, declared and left
                                               empty there, is "consumer offset for consumer-topic": the same sum)
rocketmq_group_consume_tps                     consume stats: consumeTps per broker (declared and left empty there)
rocketmq_group_get_latency_by_storetime        per broker, the longest now - store time of the first message not yet
                                               consumed of a queue (one pulled at the consumer offset), CLUSTERING
rocketmq_consumer_tps / _message_size          GROUP_GET_NUMS / GROUP_GET_SIZE minute TPS, key topic@group
rocketmq_send_back_nums                        SNDBCK_PUT_NUMS minute sum, key topic@group
rocketmq_client_*                              GET_CONSUMER_RUNNING_INFO of each online client: its statusTable
=============================================  =========================================================================

Where the exporter makes a request per topic to the NameServer (a route), this asks each master directly: its
topic configs, its consume stats of every group (GET_BROKER_CONSUME_STATS) and its subscription groups, then
the per-topic and per-group requests to the masters that hold them, at most PARALLEL at once. A topic whose
queues are all empty on a broker has no stats items there (it was never written), so it is not asked for them.
A request that fails leaves its metrics out, as the exporter's do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import trio

from ..clock import now_ms
from ..codecs import RemotingCommand, RequestCode
from ..codecs.bodies import (
    BrokerStatsData,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatsList,
    KVTable,
    MessageQueue,
    ProducerTableInfo,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
    TopicStatsTable,
)
from ..codecs.codes import MessageModel, MixAll, PullStatus, PullSysFlag
from ..codecs.headers import (
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PullMessageRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from ..codecs.message import decode_messages
from .data import ADMIN_ERRORS, ConsoleData
from .metrics import Samples, runtime_labels, runtime_values

T = TypeVar("T")

PARALLEL = 16  # requests in flight while gathering
CLIENT_TIMEOUT = 3.0  # a consumer's running info goes through the broker to the client: a slow client is left out
RETRY = MixAll.RETRY_GROUP_TOPIC_PREFIX
DLQ = MixAll.DLQ_GROUP_TOPIC_PREFIX
#: MessageModel.ordinal() in Java (BROADCASTING, CLUSTERING): the exporter's msgModel label
MODEL_ORDINAL = {MessageModel.BROADCASTING: "0", MessageModel.CLUSTERING: "1"}


def fixed(value: float) -> float:
    """Utils.getFixedDouble: two decimals ("#.##", half even); NaN (a window with no span) reads 0."""
    return round(value, 2) if value == value else 0.0


@dataclasses.dataclass
class Master:
    cluster: str
    name: str
    addr: str
    topics: set[str] = dataclasses.field(default_factory=set)
    #: topic -> {queue id: max offset}
    offsets: dict[str, dict[int, int]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Group:
    name: str
    online: int = 0
    model: MessageModel = MessageModel.CLUSTERING
    connection: ConsumerConnection | None = None
    asked_at: str = ""  # the master its connection came from
    #: topic -> [(master, its consume stats of the group on the topic)]
    stats: dict[str, list[tuple[Master, ConsumeStats]]] = dataclasses.field(default_factory=dict)

    @property
    def clustering(self) -> bool:
        return self.model == MessageModel.CLUSTERING


class Gathering:
    def __init__(self, data: ConsoleData) -> None:
        self.data = data
        self.samples = Samples()
        self.sem = trio.Semaphore(PARALLEL)
        self.masters: list[Master] = []
        self.by_name: dict[str, Master] = {}
        self.topics: set[str] = set()
        self.groups: dict[str, Group] = {}

    async def ask(self, addr: str, code: int, header: Any = None,
                  timeout: float | None = None) -> RemotingCommand | None:
        async with self.sem:
            try:
                req = RemotingCommand.request(code, header)
                api = self.data.admin.client.api
                resp = await api.invoke(addr, req, timeout or self.data.admin.timeout)
            except ADMIN_ERRORS:
                return None
        return resp if resp.code == 0 else None

    async def body(self, cls: type[T], addr: str, code: int, header: Any = None,
                   timeout: float | None = None) -> T | None:
        """The answer's body decoded; None for an error answer, no answer or a body that does not decode."""
        resp = await self.ask(addr, code, header, timeout)
        if resp is None:
            return None
        try:
            return cls.decode(resp.body or b"{}")  # type: ignore[attr-defined]
        except ValueError:
            return None

    async def minute(self, addr: str, name: str, key: str) -> tuple[float, float] | None:
        """(sum, TPS) of the item's last minute; None when the broker has no such item (Java answers an error)."""
        data = await self.body(BrokerStatsData, addr, RequestCode.VIEW_BROKER_STATS_DATA,
                               ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key))
        if data is None:
            return None
        minute = data.stats_minute
        return (0.0, 0.0) if minute is None else (float(minute.sum), minute.tps)

    @staticmethod
    async def each(fn: Callable[..., Awaitable[None]], items: Any) -> None:
        async with trio.open_nursery() as nursery:
            for item in items:
                nursery.start_soon(fn, *(item if isinstance(item, tuple) else (item,)))

    # -- the steps -----------------------------------------------------------------------------------
    async def run(self) -> Samples:
        info = await self.data.admin.cluster_info()
        for cluster, names in sorted((info.cluster_addr_table or {}).items()):
            for name in sorted(names):
                bd = (info.broker_addr_table or {}).get(name)
                addr = bd.master_addr() if bd is not None else None
                if addr:
                    self.masters.append(Master(cluster, name, addr))
        self.by_name = {m.name: m for m in self.masters}
        self.topics = set(await self.data.admin.topic_list())
        await self.each(self.broker, self.masters)
        await self.each(self.topic_offsets, [(m, t) for m in self.masters for t in sorted(m.topics & self.topics)])
        await self.each(self.connection, sorted(self.groups))
        await self.each(self.unsubmitted, sorted(self.groups))
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.each, self.group_topic, [(g, t) for g in sorted(self.groups)
                                                             for t in sorted(self.groups[g].stats)])
            nursery.start_soon(self.each, self.client, [(g, c.client_id, c.client_addr or "")
                                                        for g in sorted(self.groups)
                                                        for c in self.clients(g)])
            nursery.start_soon(self.each, self.group_views, sorted(self.view_pairs()))
        for group in sorted(self.groups):
            self.dlq_diff(self.groups[group])
            self.count(self.groups[group])
        return self.samples

    async def broker(self, m: Master) -> None:
        """The master's own figures, and what it knows of topics and groups."""
        s = self.samples

        async def runtime() -> None:
            kv = await self.body(KVTable, m.addr, RequestCode.GET_BROKER_RUNTIME_INFO)
            if kv is None:
                return
            table = kv.table
            labels = runtime_labels(m.cluster, m.addr, table)
            for name, value in runtime_values(table).items():
                s.add(name, labels, value)

        async def nums() -> None:
            put = await self.minute(m.addr, "BROKER_PUT_NUMS", m.cluster)
            if put is not None:
                s.add("rocketmq_broker_tps", (m.cluster, m.addr, m.name), fixed(put[0]))
            get = await self.minute(m.addr, "BROKER_GET_NUMS", m.cluster)
            if get is not None:
                s.add("rocketmq_broker_qps", (m.cluster, m.addr, m.name), fixed(get[1]))

        async def producers() -> None:
            table = await self.body(ProducerTableInfo, m.addr, RequestCode.GET_ALL_PRODUCER_INFO)
            if table is None:
                return
            for group, clients in sorted((table.data or {}).items()):
                s.add("rocketmq_producer_count", (m.cluster, m.name, group), -1 if clients is None else len(clients))

        async def topic_configs() -> None:
            wrapper = await self.body(TopicConfigSerializeWrapper, m.addr, RequestCode.GET_ALL_TOPIC_CONFIG)
            if wrapper is not None:
                m.topics = set(wrapper.topic_config_table)

        async def consume_stats() -> None:
            every = await self.body(ConsumeStatsList, m.addr, RequestCode.GET_BROKER_CONSUME_STATS,
                                    GetConsumeStatsInBrokerHeader(is_order=False))
            if every is None:
                return
            for entry in every.consume_stats_list:
                for group, per_topic in entry.items():
                    g = self.group(group)
                    for stats in per_topic:
                        topic = next((mq.topic for mq in stats.offset_table), None)
                        if topic:
                            g.stats.setdefault(topic, []).append((m, stats))

        async def sub_groups() -> None:
            wrapper = await self.body(SubscriptionGroupWrapper, m.addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
            if wrapper is not None:
                for group in wrapper.subscription_group_table:
                    self.group(group)

        async with trio.open_nursery() as nursery:
            for step in (runtime, nums, producers, topic_configs, consume_stats, sub_groups):
                nursery.start_soon(step)

    def group(self, name: str) -> Group:
        g = self.groups.get(name)
        if g is None:
            g = self.groups[name] = Group(name)
        return g

    async def topic_offsets(self, m: Master, topic: str) -> None:
        stats = await self.body(TopicStatsTable, m.addr, RequestCode.GET_TOPIC_STATS_INFO,
                                GetTopicStatsInfoRequestHeader(topic=topic))
        if stats is None:
            return
        table = stats.offset_table
        queues = {mq.queue_id: o.max_offset for mq, o in table.items() if mq.broker_name == m.name}
        m.offsets[topic] = queues
        total = float(sum(queues.values()))
        s = self.samples
        if topic.startswith(RETRY):
            s.add("rocketmq_topic_retry_offset", (m.cluster, m.name, topic), total)
            return
        if topic.startswith(DLQ):
            s.add("rocketmq_topic_dlq_offset", (m.cluster, m.name, topic[len(DLQ):]), total)
            return
        s.add("rocketmq_producer_offset", (m.cluster, m.name, topic), total)
        if total <= 0:
            return  # never written here: no stats items (Java answers an error)
        put = await self.minute(m.addr, "TOPIC_PUT_NUMS", topic)
        if put is not None:
            s.add("rocketmq_producer_tps", (m.cluster, m.name, topic), fixed(put[0]))
        size = await self.minute(m.addr, "TOPIC_PUT_SIZE", topic)
        if size is not None:
            s.add("rocketmq_producer_message_size", (m.cluster, m.name, topic), fixed(size[0]))

    async def connection(self, name: str) -> None:
        """The group's online clients (examineConsumerConnectionInfo), from a master of its retry topic."""
        g = self.groups[name]
        candidates = [m for m in self.masters if RETRY + name in m.topics] or [m for _, st in g.stats.items()
                                                                              for m, _ in st] or self.masters[:1]
        for m in candidates[:1]:
            conn = await self.body(ConsumerConnection, m.addr, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                   GetConsumerConnectionListRequestHeader(consumer_group=name))
            if conn is None:
                return  # CONSUMER_NOT_ONLINE: none online
            g.connection, g.asked_at, g.online = conn, m.addr, len(conn.connection_set or [])
            if conn.message_model is not None:
                g.model = conn.message_model

    async def unsubmitted(self, name: str) -> None:
        """An online group's subscribed topics it has no offsets on yet: their consume stats (all not consumed)."""
        g = self.groups[name]
        if g.connection is None:
            return
        for topic in sorted(set(g.connection.subscription_table) - set(g.stats)):
            if topic not in self.topics or topic.startswith(DLQ):
                continue
            for m in self.masters:
                if topic not in m.topics:
                    continue
                stats = await self.body(ConsumeStats, m.addr, RequestCode.GET_CONSUME_STATS,
                                        GetConsumeStatsRequestHeader(consumer_group=name, topic=topic))
                if stats is not None:
                    if stats.offset_table:
                        g.stats.setdefault(topic, []).append((m, stats))

    def clients(self, name: str) -> list[Any]:
        g = self.groups[name]
        return sorted((c for c in (g.connection.connection_set or []) if c.client_id),
                      key=lambda c: c.client_id) if g.connection is not None else []

    async def group_topic(self, name: str, topic: str) -> None:
        """The consume stats metrics of one group on one topic (the exporter's collectConsumerOffset)."""
        g = self.groups[name]
        s = self.samples
        if topic.startswith(DLQ):
            return  # the exporter skips DLQ topics here (see dlq_diff)
        per_broker = g.stats[topic]
        wrappers = [(mq, w) for _, st in per_broker for mq, w in st.offset_table.items()]
        if not wrappers:
            return
        if g.clustering:
            diff = float(sum(w.broker_offset - w.consumer_offset for _, w in wrappers))
            name_ = "rocketmq_group_retrydiff" if topic.startswith(RETRY) else "rocketmq_group_diff"
            s.add(name_, (name, topic, str(g.online), MODEL_ORDINAL[g.model]), diff)
        consumed: dict[str, int] = {}
        for mq, w in wrappers:
            consumed[mq.broker_name or ""] = consumed.get(mq.broker_name or "", 0) + w.consumer_offset
        for broker_name, total in sorted(consumed.items()):
            cluster = self.by_name[broker_name].cluster if broker_name in self.by_name else ""
            s.add("rocketmq_consumer_offset", (cluster, broker_name, topic, name), float(total))
            s.add("rocketmq_group_consume_total_offset", (cluster, broker_name, topic, name), float(total))
        for m, st in per_broker:
            s.add("rocketmq_group_consume_tps", (m.cluster, m.name, topic, name), fixed(st.consume_tps))
        if g.clustering:
            await self.latency(g, topic, wrappers)

    async def latency(self, g: Group, topic: str, wrappers: list[tuple[MessageQueue, Any]]) -> None:
        """Per broker, the longest wait of a queue's first message not consumed yet (0 when all are)."""
        lag: dict[str, int] = {}

        async def one(mq: MessageQueue, w: Any) -> None:
            broker_name = mq.broker_name or ""
            wait = 0
            if w.broker_offset > w.consumer_offset and broker_name in self.by_name:
                wait = await self.store_wait(self.by_name[broker_name].addr, mq, w.consumer_offset)
            lag[broker_name] = max(lag.get(broker_name, 0), wait)

        await self.each(one, wrappers)
        for broker_name, wait in sorted(lag.items()):
            cluster = self.by_name[broker_name].cluster if broker_name in self.by_name else ""
            self.samples.add("rocketmq_group_get_latency_by_storetime", (cluster, broker_name, topic, g.name),
                             float(wait))

    async def store_wait(self, addr: str, mq: MessageQueue, offset: int) -> int:
        """now - store time of the message at ``offset`` (queryMsgByOffset: a pull of one); a queue whose offset
        is behind what is kept reads its oldest message."""
        for _ in range(2):
            h = PullMessageRequestHeader(
                consumer_group=MixAll.TOOLS_CONSUMER_GROUP, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset,
                max_msg_nums=1, sys_flag=PullSysFlag.build_sys_flag(False, False, True, False), commit_offset=0,
                suspend_timeout_millis=0, subscription="*", sub_version=0, expression_type="TAG")
            async with self.sem:
                try:
                    result, body = await self.data.admin.client.api.pull(addr, h, self.data.admin.timeout)
                except ADMIN_ERRORS:
                    return 0
            if result.pull_status == PullStatus.FOUND:
                msgs = decode_messages(body)
                return max(0, now_ms() - msgs[0].store_timestamp) if msgs else 0
            if result.pull_status != PullStatus.OFFSET_ILLEGAL or offset == result.min_offset:
                return 0
            offset = result.min_offset
        return 0

    def view_pairs(self) -> set[tuple[str, str]]:
        """(group, topic) for the per-group stats items: every group's normal topics (the exporter's
        queryTopicConsumeByWho per topic), and the schedule topic's own consumer."""
        pairs = {(g, t) for g, group in self.groups.items() for t in group.stats
                 if not t.startswith(RETRY) and not t.startswith(DLQ)}
        if MixAll.RMQ_SYS_SCHEDULE_TOPIC in self.topics:
            pairs.add((MixAll.SCHEDULE_CONSUMER_GROUP, MixAll.RMQ_SYS_SCHEDULE_TOPIC))
        return pairs

    async def group_views(self, group: str, topic: str) -> None:
        s = self.samples
        key = f"{topic}@{group}"
        for m in self.masters:
            if topic not in m.topics:
                continue
            labels = (m.cluster, m.name, topic, group)
            nums = await self.minute(m.addr, "GROUP_GET_NUMS", key)
            if nums is not None:
                s.add("rocketmq_consumer_tps", labels, fixed(nums[1]))
            size = await self.minute(m.addr, "GROUP_GET_SIZE", key)
            if size is not None:
                s.add("rocketmq_consumer_message_size", labels, fixed(size[1]))
            back = await self.minute(m.addr, "SNDBCK_PUT_NUMS", key)
            if back is not None:
                s.add("rocketmq_send_back_nums", labels, back[0])

    def count(self, g: Group) -> None:
        """rocketmq_group_count of a group the exporter meets (a consumer of some topic): its online clients, their
        addresses and ids joined with commas ("" offline)."""
        if not g.stats and not g.online:
            return
        clients = self.clients(g.name)
        self.samples.add("rocketmq_group_count", (",".join(c.client_addr or "" for c in clients),
                                                  ",".join(c.client_id for c in clients), g.name), float(g.online))

    def dlq_diff(self, g: Group) -> None:
        """What the group's dead letter queue holds that the group did not consume (CLUSTERING, as group_diff)."""
        topic = DLQ + g.name
        if topic not in self.topics or not g.clustering:
            return
        consumed = {(mq.broker_name, mq.queue_id): w.consumer_offset for _, st in g.stats.get(topic, [])
                    for mq, w in st.offset_table.items()}
        held = [(m.name, q, hi) for m in self.masters for q, hi in m.offsets.get(topic, {}).items()]
        if held:
            diff = sum(max(0, hi - consumed.get((name, q), 0)) for name, q, hi in held)
            self.samples.add("rocketmq_group_dlqdiff", (g.name, topic, str(g.online), MODEL_ORDINAL[g.model]),
                             float(diff))

    async def client(self, group: str, client_id: str, client_addr: str) -> None:
        """The client's statusTable (ClientMetricTaskRunnable), through the broker its connection came from."""
        addr = self.groups[group].asked_at
        info = await self.body(ConsumerRunningInfo, addr, RequestCode.GET_CONSUMER_RUNNING_INFO,
                               GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id=client_id,
                                                                   jstack_enable=False), timeout=CLIENT_TIMEOUT)
        if info is None:
            return
        s = self.samples
        for topic, st in sorted(info.status_table.items()):
            labels = (client_addr, client_id, group, topic)
            s.add("rocketmq_client_consume_fail_msg_count", labels, st.consume_failed_msgs)
            s.add("rocketmq_client_consume_fail_msg_tps", labels, st.consume_failed_tps)
            s.add("rocketmq_client_consume_ok_msg_tps", labels, st.consume_ok_tps)
            s.add("rocketmq_client_consume_rt", labels, st.consume_rt)
            s.add("rocketmq_client_consumer_pull_rt", labels, st.pull_rt)
            s.add("rocketmq_client_consumer_pull_tps", labels, st.pull_tps)


async def gather(data: ConsoleData) -> Samples:
    return await Gathering(data).run()
