"""What the console pages show, gathered with the admin protocol (no HTML here).

Every call goes through :class:`rocketpy.client.admin.Admin` or the same requests mqadmin
sends, so the console works against Java servers as well as ours.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import string
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import trio

from ..client import Producer, make_message
from ..client.admin import Admin
from ..client.api import check
from ..client.errors import MQClientError
from ..codecs import RemotingCommand, RequestCode, ResponseCode
from ..codecs.bodies import (
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    GroupList,
    MessageQueue,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicStatsTable,
)
from ..codecs.codes import MessageConst, MixAll, version_desc
from ..codecs.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetBrokerAclConfigResponseHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)
from ..codecs.message import MessageExt
from ..codecs.trace import TraceRecord, decode_trace_data, timeline
from ..namesrv.kv_config import NAMESPACE_ORDER_TOPIC_CONFIG
from ..remoting import RemotingError
from .csvsafe import SafeWriter

#: what a broker error looks like to the pages (shown as a message, never a trace)
ADMIN_ERRORS = (MQClientError, RemotingError, trio.TooSlowError, OSError, ValueError)

SYSTEM_TOPICS = {
    MixAll.AUTO_CREATE_TOPIC_KEY_TOPIC, MixAll.BENCHMARK_TOPIC, "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT",
    MixAll.RMQ_SYS_SCHEDULE_TOPIC, MixAll.RMQ_SYS_TRANS_HALF_TOPIC, MixAll.RMQ_SYS_TRANS_OP_HALF_TOPIC,
    MixAll.RMQ_SYS_TRACE_TOPIC, "TRANS_CHECK_MAX_TIME_TOPIC", "SCHEDULE_TOPIC_XXXX",
}
SYSTEM_GROUPS = {
    MixAll.TOOLS_CONSUMER_GROUP, MixAll.FILTERSRV_CONSUMER_GROUP, MixAll.SELF_TEST_CONSUMER_GROUP,
    MixAll.ONS_HTTP_PROXY_GROUP, MixAll.CID_ONSAPI_PERMISSION_GROUP, MixAll.CID_ONSAPI_OWNER_GROUP,
    MixAll.CID_ONSAPI_PULL_GROUP,
}
#: messages one search by time lists at most (newest first, without their bodies): past it the list is cut
MAX_BROWSE = 2000
#: dead letters one DLQ search lists at most (with their bodies, for the CSV export)
MAX_DLQ = 200
#: messages a query by key returns at most (QUERY_MESSAGE's maxNum, as mqadmin queryMsgByKey asks)
KEY_QUERY_MAX = 64
#: messages shown on one page of a list
PAGE_SIZE = 50
#: messages read from a queue at once while browsing
_BROWSE_BATCH = 32


@dataclasses.dataclass
class Browsed:
    """The messages stored in a time range, newest first. ``cut``: the range held more than ``cap``; then the list
    is every message stored after ``since`` (ms) up to the range's end, and the older ones are not in it."""

    messages: list[MessageExt]
    cap: int
    cut: bool = False
    since: int = 0


#: read(broker address, queue, offset): up to a batch of messages from ``offset``, and the offset after them
Reader = Callable[[str, MessageQueue, int], Awaitable[tuple[list[MessageExt], int]]]


@dataclasses.dataclass
class _Cursor:
    """A queue read backwards while browsing: offsets below ``top`` are unread, none stored later than ``frontier``."""

    addr: str
    mq: MessageQueue
    low: int
    top: int
    frontier: float = float("inf")
    done: bool = False


def is_system_topic(topic: str) -> bool:
    return (topic in SYSTEM_TOPICS or topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX)
            or topic.startswith(MixAll.DLQ_GROUP_TOPIC_PREFIX) or topic.startswith("rmq_sys_"))


def is_system_group(group: str) -> bool:
    return group in SYSTEM_GROUPS or group.startswith(MixAll.CID_RMQ_SYS_PREFIX)


def first_tps(text: str | None) -> float:
    """The 10-second rate of a ``putTps``-style runtime value ("" while not sampled yet)."""
    try:
        return float((text or "").split(" ")[0] or 0)
    except ValueError:
        return 0.0


@dataclasses.dataclass
class BrokerRow:
    cluster: str
    name: str
    broker_id: int
    addr: str
    version: str = ""
    put_tps: float = 0.0
    get_tps: float = 0.0
    put_today: int = 0
    get_today: int = 0
    put_yesterday: int = 0
    get_yesterday: int = 0
    disk: str = ""
    error: str = ""

    @property
    def role(self) -> str:
        return "MASTER" if self.broker_id == 0 else f"SLAVE{self.broker_id}"


@dataclasses.dataclass
class GroupRow:
    group: str
    lag: int | None = None
    consume_tps: float = 0.0
    online: int = 0
    error: str = ""
    consume_type: str = ""  # CONSUME_PASSIVELY (push) / CONSUME_ACTIVELY (pull), "" while offline
    message_model: str = ""
    version: str = ""  # the lowest client version, as V4_9_8


#: the group list's sorts: name -> (key, biggest first)
GROUP_SORTS: dict[str, tuple[Callable[[GroupRow], Any], bool]] = {
    "group": (lambda r: r.group, False), "online": (lambda r: r.online, True),
    "tps": (lambda r: r.consume_tps, True), "lag": (lambda r: -1 if r.lag is None else r.lag, True),
}
#: the topic list's kinds (rocketmq-dashboard's filters), in the order shown
TOPIC_KINDS = ("NORMAL", "ORDER", "RETRY", "DLQ", "SYSTEM")
TOPICS_PER_PAGE = 100
#: SubscriptionGroupConfig's fields as the group page edits them: (field, Java's name, "bool" or "int")
GROUP_CONFIG_FIELDS = (
    ("consume_enable", "consumeEnable", "bool"), ("consume_from_min_enable", "consumeFromMinEnable", "bool"),
    ("consume_broadcast_enable", "consumeBroadcastEnable", "bool"), ("retry_queue_nums", "retryQueueNums", "int"),
    ("retry_max_times", "retryMaxTimes", "int"), ("broker_id", "brokerId", "int"),
    ("which_broker_when_consume_slowly", "whichBrokerWhenConsumeSlowly", "int"),
    ("notify_consumer_ids_changed_enable", "notifyConsumerIdsChangedEnable", "bool"),
)


@dataclasses.dataclass
class TopicRow:
    topic: str
    kind: str
    read_queues: int = 0
    write_queues: int = 0
    perm: int = 0
    messages: int | None = None  # stored messages (max - min offset) over every queue; None if not asked


def topic_kind(topic: str, config: TopicConfig | None, system: set[str], order_conf: bool = False) -> str:
    """The dashboard's kind of a topic; ORDER when its config says so (ours) or the NameServers hold an order
    conf for it (what mqadmin updateTopic -o true writes; Java's brokers do not keep the flag)."""
    if topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX):
        return "RETRY"
    if topic.startswith(MixAll.DLQ_GROUP_TOPIC_PREFIX):
        return "DLQ"
    if is_system_topic(topic) or topic in system:
        return "SYSTEM"
    if order_conf or (config is not None and config.order):
        return "ORDER"
    return "NORMAL"


def client_version(version: int) -> str:
    """A client's version ordinal as Java's MQVersion.getVersionDesc names it (409 -> V4_9_8)."""
    try:
        return version_desc(version)
    except ValueError:
        return str(version)


def body_views(body: bytes) -> dict[str, str]:
    """The body as text, pretty JSON and hex, whichever apply."""
    views: dict[str, str] = {}
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None:
        views["text"] = text
        try:
            views["json"] = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            pass
    views["hex"] = " ".join(f"{b:02x}" for b in body[:4096])
    return views


def printable(text: str) -> bool:
    return all(c in string.printable for c in text)


class ConsoleData:
    """One admin client shared by every request of the console."""

    def __init__(self, admin: Admin) -> None:
        self.admin = admin
        self._producer: Producer | None = None
        self._producer_lock = trio.Lock()

    @property
    def namesrv(self) -> str:
        return ";".join(self.admin.client.config.namesrv_list)

    async def send(self, topic: str, body: bytes, tags: str = "", keys: str = "") -> Any:
        """Send with the console's producer (SELF_TEST_P_GROUP, as the dashboard), started on first use."""
        async with self._producer_lock:
            if self._producer is None:
                producer = Producer(MixAll.SELF_TEST_PRODUCER_GROUP, client=self.admin.client)
                await producer.start()
                self._producer = producer
        return await self._producer.send(make_message(topic, body, tags=tags or None, keys=keys or None))

    async def aclose(self) -> None:
        if self._producer is not None:
            with trio.CancelScope(shield=True):
                await self._producer.shutdown()
            self._producer = None

    async def health(self) -> dict[str, Any]:
        """What /healthz reports: the NameServer answers GET_BROKER_CLUSTER_INFO (and how many brokers it lists)."""
        info = await self.admin.cluster_info()
        brokers = sum(len(bd.broker_addrs or {}) for bd in (info.broker_addr_table or {}).values())
        return {"namesrv": self.namesrv, "brokers": brokers}

    async def _invoke(self, addr: str, code: int, header: Any = None, body: bytes | None = None,
                      ok: tuple[int, ...] = ()) -> RemotingCommand:
        req = RemotingCommand.request(code, header, body)
        return check(await self.admin.client.api.invoke(addr, req, self.admin.timeout), addr, *ok)

    # -- cluster -------------------------------------------------------------------------------------
    async def brokers(self) -> list[BrokerRow]:
        info = await self.admin.cluster_info()
        rows: list[BrokerRow] = []
        for cluster, names in sorted((info.cluster_addr_table or {}).items()):
            for name in sorted(names):
                bd = (info.broker_addr_table or {}).get(name)
                for bid, addr in sorted(((bd.broker_addrs or {}) if bd else {}).items()):
                    rows.append(BrokerRow(cluster, name, int(bid), addr))

        async def fill(row: BrokerRow) -> None:
            try:
                rt = await self.admin.broker_runtime_info(row.addr)
            except ADMIN_ERRORS as exc:
                row.error = str(exc)
                return
            row.version = rt.get("brokerVersionDesc", "")
            row.put_tps = first_tps(rt.get("putTps"))
            row.get_tps = first_tps(rt.get("getTransferedTps"))
            row.put_today = int(rt.get("msgPutTotalTodayNow") or 0) - int(rt.get("msgPutTotalTodayMorning") or 0)
            row.get_today = int(rt.get("msgGetTotalTodayNow") or 0) - int(rt.get("msgGetTotalTodayMorning") or 0)
            # as the dashboard: the day between yesterday's and today's morning marks
            row.put_yesterday = (int(rt.get("msgPutTotalTodayMorning") or 0)
                                 - int(rt.get("msgPutTotalYesterdayMorning") or 0))
            row.get_yesterday = (int(rt.get("msgGetTotalTodayMorning") or 0)
                                 - int(rt.get("msgGetTotalYesterdayMorning") or 0))
            row.disk = rt.get("commitLogDirCapacity") or rt.get("commitLogDiskRatio", "")

        async with trio.open_nursery() as nursery:
            for row in rows:
                nursery.start_soon(fill, row)
        return rows

    async def broker_addr(self, name: str, broker_id: int) -> str:
        """The address of broker ``name``/``broker_id`` as the NameServer lists it (pages never take an address
        from the URL: the console connects only to brokers of its cluster)."""
        info = await self.admin.cluster_info()
        bd = (info.broker_addr_table or {}).get(name)
        addr = (bd.broker_addrs or {}).get(broker_id) if bd is not None else None
        if not addr:
            raise MQClientError(f"no broker {name} with id {broker_id} in the cluster")
        return addr

    async def broker_view(self, name: str, broker_id: int) -> dict[str, Any]:
        """Every key of GET_BROKER_RUNTIME_INFO and of GET_BROKER_CONFIG, sorted; an error per half."""
        addr = await self.broker_addr(name, broker_id)
        out: dict[str, Any] = {"name": name, "id": broker_id, "addr": addr, "runtime": [], "config": [],
                               "runtime_error": "", "config_error": ""}
        try:
            out["runtime"] = sorted((await self.admin.broker_runtime_info(addr)).items())
        except ADMIN_ERRORS as exc:
            out["runtime_error"] = str(exc)
        try:
            out["config"] = sorted((await self.admin.broker_config(addr)).items())
        except ADMIN_ERRORS as exc:
            out["config_error"] = str(exc)
        return out

    async def master_addrs(self) -> list[str]:
        try:
            return await self.admin.master_addrs()
        except MQClientError:
            return []

    # -- topics --------------------------------------------------------------------------------------
    async def topics(self, text: str = "", show_system: bool = False) -> list[str]:
        names = await self.admin.topic_list()
        hidden: set[str] = set()
        if not show_system:
            # the topics a broker makes for its cluster and its own name (getSystemTopicList)
            info = await self.admin.cluster_info()
            for cluster in info.cluster_addr_table or {}:
                hidden |= {cluster, f"{cluster}_REPLY_TOPIC"}
            hidden |= set(info.broker_addr_table or {})
        return sorted(t for t in names if (show_system or not (is_system_topic(t) or t in hidden))
                      and text.lower() in t.lower())

    async def topic_table(self, text: str = "", kinds: tuple[str, ...] = ("NORMAL", "ORDER"),
                          page: int = 1) -> dict[str, Any]:
        """The topic list as the dashboard filters it: each topic's kind (a count per kind over the whole
        list), its queues and perm from the masters' topic configs (one request per master), and the stored
        message count of the topics on the page shown (one GET_TOPIC_STATS_INFO per topic and master)."""
        names = await self.admin.topic_list()
        info = await self.admin.cluster_info()
        system: set[str] = set(info.broker_addr_table or {})
        for cluster in info.cluster_addr_table or {}:
            system |= {cluster, f"{cluster}_REPLY_TOPIC"}
        masters = await self.master_addrs()
        configs: dict[str, TopicConfig] = {}

        async def configs_of(addr: str) -> None:
            try:
                resp = await self._invoke(addr, RequestCode.GET_ALL_TOPIC_CONFIG)
            except ADMIN_ERRORS:
                return
            for name, config in TopicConfigSerializeWrapper.decode(resp.body or b"{}").topic_config_table.items():
                configs.setdefault(name, config)

        ordered: set[str] = set()

        async def order_confs() -> None:  # mqadmin updateTopic -o true keeps the order in the NameServers' KV
            try:
                ordered.update(await self.admin.kv_list(NAMESPACE_ORDER_TOPIC_CONFIG))
            except ADMIN_ERRORS:
                pass

        async with trio.open_nursery() as nursery:
            for addr in masters:
                nursery.start_soon(configs_of, addr)
            nursery.start_soon(order_confs)
        rows = [TopicRow(t, topic_kind(t, configs.get(t), system, t in ordered)) for t in sorted(names)]
        counts = {kind: sum(1 for r in rows if r.kind == kind) for kind in TOPIC_KINDS}
        shown = [r for r in rows if r.kind in kinds and text.lower() in r.topic.lower()]
        matched = len(shown)
        pages = max(1, -(-matched // TOPICS_PER_PAGE))
        page = min(max(1, page), pages)
        shown = shown[(page - 1) * TOPICS_PER_PAGE:page * TOPICS_PER_PAGE]
        sem = trio.Semaphore(16)

        async def fill(row: TopicRow) -> None:
            config = configs.get(row.topic)
            if config is not None:
                row.read_queues, row.write_queues, row.perm = (config.read_queue_nums, config.write_queue_nums,
                                                               config.perm)
            total = None
            async with sem:
                for addr in masters:
                    try:
                        resp = await self._invoke(addr, RequestCode.GET_TOPIC_STATS_INFO,
                                                  GetTopicStatsInfoRequestHeader(topic=row.topic))
                    except ADMIN_ERRORS:
                        continue  # not on this broker
                    table = TopicStatsTable.decode(resp.body or b"{}").offset_table
                    total = (total or 0) + sum(o.max_offset - o.min_offset for o in table.values())
            row.messages = total

        async with trio.open_nursery() as nursery:
            for row in shown:
                nursery.start_soon(fill, row)
        return {"rows": shown, "counts": counts, "page": page, "pages": pages, "matched": matched}

    async def topic_detail(self, topic: str) -> dict[str, Any]:
        route = await self.admin.topic_route(topic)
        stats = await self.admin.topic_stats(topic)
        queues = sorted(stats.offset_table.items(), key=lambda kv: (kv[0].broker_name or "", kv[0].queue_id))
        groups: list[str] = []
        masters = [bd.master_addr() or "" for bd in route.broker_datas or [] if bd.master_addr()]
        for addr in masters:
            try:
                resp = await self._invoke(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
                                          QueryTopicConsumeByWhoRequestHeader(topic=topic))
                groups += GroupList.decode(resp.body or b"{}").group_list
            except ADMIN_ERRORS:
                pass
        lags: dict[str, int | None] = {}
        sem = trio.Semaphore(16)

        async def lag_of(group: str) -> None:  # the dashboard's "consumer manage" of a topic
            # GET_CONSUME_STATS for the topic on its own masters: one request per group and master, no route
            # lookup of the group's retry topic per group
            lag = 0
            async with sem:
                for addr in masters:
                    try:
                        resp = await self._invoke(addr, RequestCode.GET_CONSUME_STATS,
                                                  GetConsumeStatsRequestHeader(consumer_group=group, topic=topic))
                    except ADMIN_ERRORS:
                        lags[group] = None
                        return
                    lag += sum(max(0, w.broker_offset - w.consumer_offset)
                               for w in ConsumeStats.decode(resp.body or b"{}").offset_table.values())
            lags[group] = lag

        async with trio.open_nursery() as nursery:
            for group in set(groups):
                nursery.start_soon(lag_of, group)
        try:
            order = bool(await self.admin.get_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, topic))
        except ADMIN_ERRORS:  # QUERY_NOT_FOUND: no order conf
            order = False
        return {"route": route, "queues": queues, "groups": sorted(set(groups)), "lags": lags, "order": order,
                "total": sum(o.max_offset - o.min_offset for _, o in queues)}

    async def create_topic(self, topic: str, read: int, write: int, perm: int, order: bool) -> None:
        config = TopicConfig(topic_name=topic, read_queue_nums=read, write_queue_nums=write, perm=perm, order=order)
        addrs = await self.master_addrs()
        if not addrs:
            raise MQClientError("no master broker in the cluster")
        for addr in addrs:
            await self.admin.create_topic(addr, config)
        if order:  # as mqadmin updateTopic -c -o true: "brokerName:writeQueueNums" of each master, in the KV
            info = await self.admin.cluster_info()
            names = sorted(name for name, bd in (info.broker_addr_table or {}).items() if bd.master_addr() in addrs)
            await self.admin.put_kv_config(NAMESPACE_ORDER_TOPIC_CONFIG, topic,
                                           ";".join(f"{name}:{write}" for name in names))

    async def delete_topic(self, topic: str) -> None:
        await self.admin.delete_topic(topic)

    # -- groups --------------------------------------------------------------------------------------
    async def consume_stats(self, group: str, topic: str | None = None) -> ConsumeStats:
        """examineConsumeStats, and when the group has no retry topic yet (no consumer ever came),
        the same request to every master."""
        try:
            return await self.admin.consume_stats(group, topic)
        except MQClientError as exc:
            if exc.response_code != ResponseCode.TOPIC_NOT_EXIST:
                raise
        merged = ConsumeStats()
        for addr in await self.master_addrs():
            resp = await self._invoke(addr, RequestCode.GET_CONSUME_STATS,
                                      GetConsumeStatsRequestHeader(consumer_group=group, topic=topic))
            stats = ConsumeStats.decode(resp.body or b"{}")
            merged.offset_table.update(stats.offset_table)
            merged.consume_tps += stats.consume_tps
        return merged

    async def group_names(self, show_system: bool = False) -> list[str]:
        names: set[str] = set()
        for addr in await self.master_addrs():
            resp = await self._invoke(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
            names |= set(SubscriptionGroupWrapper.decode(resp.body or b"{}").subscription_group_table)
        return sorted(g for g in names if show_system or not is_system_group(g))

    async def groups(self, show_system: bool = False, limit: int = 16, text: str = "",
                     sort: str = "group") -> list[GroupRow]:
        """Every group with its lag and online clients. For a page of many groups the requests go to the
        masters directly (what examineConsumeStats would find through each retry topic's route, without a
        NameServer round trip per group)."""
        rows = [GroupRow(g) for g in await self.group_names(show_system) if text.lower() in g.lower()]
        masters = await self.master_addrs()
        sem = trio.Semaphore(limit)

        async def fill(row: GroupRow) -> None:
            async with sem:
                lag, tps, online, error = 0, 0.0, 0, ""
                for addr in masters:
                    try:
                        resp = await self._invoke(addr, RequestCode.GET_CONSUME_STATS,
                                                  GetConsumeStatsRequestHeader(consumer_group=row.group))
                        stats = ConsumeStats.decode(resp.body or b"{}")
                        lag += sum(max(0, w.broker_offset - w.consumer_offset) for w in stats.offset_table.values())
                        tps += stats.consume_tps
                    except ADMIN_ERRORS as exc:
                        error = str(exc)
                    try:
                        resp = await self._invoke(addr, RequestCode.GET_CONSUMER_CONNECTION_LIST,
                                                  GetConsumerConnectionListRequestHeader(consumer_group=row.group))
                    except ADMIN_ERRORS:
                        continue  # CONSUMER_NOT_ONLINE
                    conn = ConsumerConnection.decode(resp.body or b"{}")
                    clients = conn.connection_set or []
                    online = max(online, len(clients))
                    if clients:  # as the dashboard: the type, model and lowest version of the group's clients
                        row.consume_type = getattr(conn.consume_type, "name", "") or ""
                        row.message_model = getattr(conn.message_model, "name", "") or ""
                        row.version = client_version(min(c.version for c in clients))
                row.lag = None if error and not lag else lag
                row.consume_tps, row.online, row.error = tps, online, error

        async with trio.open_nursery() as nursery:
            for row in rows:
                nursery.start_soon(fill, row)
        if sort in GROUP_SORTS:  # the dashboard's column sorts: the biggest first, names in order
            key, reverse = GROUP_SORTS[sort]
            rows.sort(key=key, reverse=reverse)
        return rows

    async def group_detail(self, group: str) -> dict[str, Any]:
        out: dict[str, Any] = {"group": group, "queues": [], "topics": [], "lag": 0, "tps": 0.0, "connection": None,
                               "error": ""}
        try:
            stats = await self.consume_stats(group)
            out["queues"] = sorted(stats.offset_table.items(),
                                   key=lambda kv: (kv[0].topic or "", kv[0].broker_name or "", kv[0].queue_id))
            out["lag"] = sum(max(0, w.broker_offset - w.consumer_offset) for _, w in out["queues"])
            # the group's topics, its own retry topic last (the reset form's default is the first)
            out["topics"] = sorted({mq.topic or "" for mq, _ in out["queues"]},
                                   key=lambda t: (t.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX), t))
            out["tps"] = stats.consume_tps
        except ADMIN_ERRORS as exc:
            out["error"] = str(exc)
        try:
            out["connection"] = await self.admin.consumer_connection(group)
        except ADMIN_ERRORS as exc:
            out["offline"] = str(exc)
        out["allocation"] = await self.allocation(group, out["connection"])
        out["configs"], out["config_error"], out["brokers"] = await self.group_configs(group)
        return out

    async def allocation(self, group: str, connection: ConsumerConnection | None) -> dict[MessageQueue, str]:
        """Which client holds each queue: every online client's GET_CONSUMER_RUNNING_INFO mqTable (as the
        dashboard's consumer detail). A client that does not answer leaves its queues unassigned."""
        table: dict[MessageQueue, str] = {}
        clients = [c.client_id for c in (connection.connection_set or []) if c.client_id] if connection else []

        async def ask(client_id: str) -> None:
            try:
                info = await self.admin.consumer_running_info(group, client_id)
            except ADMIN_ERRORS:
                return
            for mq in info.mq_table:
                table[mq] = client_id

        async with trio.open_nursery() as nursery:
            for client_id in clients:
                nursery.start_soon(ask, client_id)
        return table

    async def client_info(self, group: str, client_id: str) -> ConsumerRunningInfo:
        """A consumer's running info (the dashboard's client view): properties, subscriptions, each queue's
        process queue and each topic's pull and consume rates."""
        return await self.admin.consumer_running_info(group, client_id)

    async def group_configs(self, group: str) -> tuple[dict[str, SubscriptionGroupConfig], str, list[str]]:
        """The group's subscription config on each master (broker name -> config), an error if one failed, and
        every master's name."""
        info = await self.admin.cluster_info()
        out: dict[str, SubscriptionGroupConfig] = {}
        error = ""
        names = []
        for name, bd in sorted((info.broker_addr_table or {}).items()):
            addr = bd.master_addr()
            if not addr:
                continue
            names.append(name)
            try:
                config = await self.admin.sub_group_config(addr, group)
            except ADMIN_ERRORS as exc:
                error = f"{name}: {exc}"
                continue
            if config is not None:
                out[name] = config
        return out, error, names

    async def update_group_config(self, config: SubscriptionGroupConfig, broker_names: list[str]) -> list[str]:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP on the masters of ``broker_names`` (every master when empty)."""
        info = await self.admin.cluster_info()
        done = []
        for name, bd in sorted((info.broker_addr_table or {}).items()):
            addr = bd.master_addr()
            if addr and (not broker_names or name in broker_names):
                await self.admin.update_sub_group(addr, config)
                done.append(name)
        if not done:
            raise MQClientError(f"no master broker named {', '.join(broker_names) or '(any)'}")
        return done

    async def create_group(self, group: str) -> None:
        for addr in await self.master_addrs():
            await self.admin.update_sub_group(addr, SubscriptionGroupConfig(group_name=group))

    async def delete_group(self, group: str) -> list[str]:
        """The group's config on every master, then its retry and DLQ topics from the brokers and the NameServers,
        as mqadmin's ``deleteSubGroup -c`` does; the topics that could not be deleted (errors) are returned."""
        for addr in await self.master_addrs():
            await self.admin.delete_sub_group(addr, group)
        left = []
        for topic in (MixAll.get_retry_topic(group), MixAll.get_dlq_topic(group)):
            try:
                await self.admin.delete_topic(topic)
            except ADMIN_ERRORS as exc:
                left.append(f"{topic}: {exc}")
        return left

    async def reset_offset(self, group: str, topic: str, timestamp: int) -> dict[MessageQueue, int]:
        """Reset by time; ``timestamp`` -1 moves every queue to its max offset (the dashboard's "skip
        accumulated messages": the brokers read -1 as the queue's end)."""
        return await self.admin.reset_offset_by_time(group, topic, timestamp)

    # -- messages ------------------------------------------------------------------------------------
    async def by_key(self, topic: str, key: str) -> list[MessageExt]:
        return await self.admin.query_messages(topic, key, KEY_QUERY_MAX)

    async def by_id(self, topic: str, msg_id: str) -> MessageExt:
        return await self.admin.view_message(msg_id, topic or None)

    async def by_time(self, topic: str, begin: int, end: int) -> Browsed:
        """The messages stored between ``begin`` and ``end`` (ms), newest first, at most MAX_BROWSE (pulled; their
        bodies left out: the list shows none, and a message's page reads it again)."""

        async def pull(addr: str, mq: MessageQueue, offset: int) -> tuple[list[MessageExt], int]:
            msgs, nxt = await self.admin.pull(mq, offset, _BROWSE_BATCH)
            for m in msgs:
                m.body = b""
            return msgs, nxt

        return await self._browse(topic, begin, end, pull, MAX_BROWSE)

    async def _browse(self, topic: str, begin: int, end: int, read: Reader, cap: int) -> Browsed:
        """Every queue read backwards from the last message stored by ``end``, the one whose unread messages may be
        the newest first (a merge by store time: a queue's store times only grow), until each reached ``begin``
        or ``cap`` messages were found. Cut there, the list is exactly the messages stored after the newest
        time a queue was left at, so it says what it holds.

        The queues' masters come from the topic's route, asked here: the admin client's route table is
        empty on a fresh console (it fills only once something, e.g. a send, looked the topic up)."""
        api = self.admin.client.api
        masters = dict(await self.admin.topic_masters(topic))
        cursors: list[_Cursor] = []
        for mq, (lo, hi) in (await self.admin.queue_bounds(topic)).items():
            addr = masters.get(mq.broker_name or "")
            if addr is None or hi <= lo:
                continue
            near = min(max(await api.search_offset(addr, mq, end), lo), hi)
            cursors.append(_Cursor(addr, mq, lo, await _first_after(read, addr, mq, near, hi, end)))
        found: list[MessageExt] = []
        while live := [c for c in cursors if not c.done]:
            c = max(live, key=lambda c: c.frontier)
            # at the cap, stop where the list holds something: past it when more than ``cap`` share a millisecond
            if len(found) >= cap and any(m.store_timestamp > c.frontier for m in found):
                break
            start = max(c.low, c.top - _BROWSE_BATCH)
            msgs = await _read_range(read, c.addr, c.mq, start, c.top)
            c.top = start
            if msgs:
                c.frontier = min(c.frontier, min(m.store_timestamp for m in msgs))
                found += [m for m in msgs if begin <= m.store_timestamp <= end]
            c.done = c.top <= c.low or c.frontier < begin
        left = [c.frontier for c in cursors if not c.done]
        browsed = Browsed(found, cap)
        if left:
            # every message stored after the newest frontier was read; below it some queues were not
            browsed.cut, browsed.since = True, int(max(left))
            found = [m for m in found if m.store_timestamp > browsed.since]
        found.sort(key=lambda m: (m.store_timestamp, m.queue_id, m.queue_offset), reverse=True)
        browsed.messages = found
        return browsed

    async def dlq_messages(self, group: str, begin: int, end: int) -> Browsed:
        """The group's dead letters (%DLQ%group) stored in the range, at most MAX_DLQ; none when the group never
        had one.

        A DLQ topic is write-only (brokers create it with PERM_WRITE), so a pull is refused; its consume queue
        is read with QUERY_CONSUME_QUEUE and each message by its commit log offset (VIEW_MESSAGE_BY_ID)."""

        async def read(addr: str, mq: MessageQueue, offset: int) -> tuple[list[MessageExt], int]:
            body = await self.admin.query_consume_queue(addr, mq.topic or "", mq.queue_id, offset, 32)
            entries = body.queue_data or []
            return [await self.admin.view_message_at(addr, e.physic_offset) for e in entries], offset + len(entries)

        try:
            return await self._browse(MixAll.get_dlq_topic(group), begin, end, read, MAX_DLQ)
        except MQClientError as exc:
            if exc.response_code == ResponseCode.TOPIC_NOT_EXIST:
                return Browsed([], MAX_DLQ)
            raise

    async def resend_dlq(self, group: str, msg_ids: list[str], client_id: str = "") -> list[tuple[str, str]]:
        """Have a client of ``group`` consume each dead letter again (CONSUME_MESSAGE_DIRECTLY, as the dashboard's
        resend): ``client_id``, or the first online client. (id, result) per message."""
        if not client_id:
            try:
                conn = await self.admin.consumer_connection(group)
            except MQClientError as exc:
                if exc.response_code not in (ResponseCode.CONSUMER_NOT_ONLINE, ResponseCode.TOPIC_NOT_EXIST):
                    raise
                conn = ConsumerConnection()
            online = sorted(c.client_id for c in conn.connection_set or [] if c.client_id)
            if not online:
                raise MQClientError(f"no consumer of {group} is online to take the messages")
            client_id = online[0]
        out = []
        for msg_id in msg_ids:
            try:
                msg = await self.by_id(MixAll.get_dlq_topic(group), msg_id)
                result = await self.consume_directly(group, client_id, msg)
                status = result.consume_result.name if result.consume_result is not None else "?"
                out.append((msg_id, f"{status} {result.remark or ''}".strip()))
            except ADMIN_ERRORS as exc:
                out.append((msg_id, f"failed: {exc}"))
        return out

    async def consumed_by(self, msg: MessageExt) -> list[tuple[str, str]]:
        """(group, CONSUMED / NOT_CONSUMED / error) for each group that consumes the topic."""
        groups: list[str] = []
        for _, addr in await self.admin.topic_masters(msg.topic):
            try:
                resp = await self._invoke(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
                                          QueryTopicConsumeByWhoRequestHeader(topic=msg.topic))
                groups += GroupList.decode(resp.body or b"{}").group_list
            except ADMIN_ERRORS:
                pass
        out = []
        for g in sorted(set(groups)):
            try:
                stats = await self.consume_stats(g, msg.topic)
            except ADMIN_ERRORS as exc:
                out.append((g, str(exc)))
                continue
            w = next((w for mq, w in stats.offset_table.items()
                      if mq.queue_id == msg.queue_id and mq.topic == msg.topic), None)
            out.append((g, "CONSUMED" if w is not None and w.consumer_offset > msg.queue_offset else "NOT_CONSUMED"))
        return out

    async def consume_directly(self, group: str, client_id: str, msg: MessageExt,
                               broker_name: str = "") -> ConsumeMessageDirectlyResult:
        """CONSUME_MESSAGE_DIRECTLY through the broker that stores the message."""
        h = ConsumeMessageDirectlyResultRequestHeader(consumer_group=group, client_id=client_id,
                                                      msg_id=msg.offset_msg_id, broker_name=broker_name or None)
        resp = await self._invoke(msg.store_host, RequestCode.CONSUME_MESSAGE_DIRECTLY, h)
        return ConsumeMessageDirectlyResult.decode(resp.body or b"{}")

    async def trace(self, msg_id: str, trace_topic: str = MixAll.RMQ_SYS_TRACE_TOPIC) -> list[TraceRecord]:
        records: list[TraceRecord] = []
        try:
            found = await self.admin.query_messages(trace_topic, msg_id, 64)
        except MQClientError as exc:
            if exc.response_code != ResponseCode.TOPIC_NOT_EXIST:
                raise
            return []  # no trace topic (a Java broker without traceTopicEnable): nothing traced yet
        for m in found:
            records += decode_trace_data(m.body.decode("utf-8", "replace"))
        return timeline(records, msg_id)

    # -- producers and ACL ---------------------------------------------------------------------------
    async def producers(self, group: str, topic: str) -> Any:
        return await self.admin.producer_connection(group, topic)

    async def acl(self) -> list[dict[str, str]]:
        rows = []
        for row in await self.brokers():
            if row.broker_id != 0:
                continue
            try:
                resp = await self._invoke(row.addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
                h = GetBrokerAclConfigResponseHeader.from_ext_fields(resp.ext_fields or {})
                rows.append({"broker": row.name, "addr": row.addr, "version": h.version or "",
                             "files": h.all_acl_file_version or "", "error": ""})
            except ADMIN_ERRORS as exc:
                rows.append({"broker": row.name, "addr": row.addr, "version": "", "files": "", "error": str(exc)})
        return rows


async def _read_range(read: Reader, addr: str, mq: MessageQueue, start: int, stop: int) -> list[MessageExt]:
    """The messages at offsets ``start`` up to ``stop`` (excluded)."""
    out: list[MessageExt] = []
    offset = start
    while offset < stop:
        msgs, nxt = await read(addr, mq, offset)
        if not msgs or nxt <= offset:
            break
        out += [m for m in msgs if m.queue_offset < stop]
        offset = nxt
    return out


async def _first_after(read: Reader, addr: str, mq: MessageQueue, near: int, hi: int, end: int) -> int:
    """The offset of the queue's first message stored after ``end`` (``hi`` when none is), read forward from
    ``near``, the offset SEARCH_OFFSET_BY_TIMESTAMP gave: the nearest in time, which messages stored in the same
    millisecond may follow."""
    offset = near
    while offset < hi:
        msgs, nxt = await read(addr, mq, offset)
        if not msgs or nxt <= offset:
            return hi
        later = next((m for m in msgs if m.store_timestamp > end), None)
        if later is not None:
            return later.queue_offset
        offset = nxt
    return hi


def export_csv(msgs: list[MessageExt]) -> str:
    """Messages as CSV (the dashboard exports DLQ messages as a spreadsheet): one row each, the body as UTF-8
    text or, when it is not text, ``base64:`` and its Base64."""
    out = io.StringIO()
    w = SafeWriter(out)  # bodies and keys are anyone's text: no formula runs when it is opened
    w.writerow(["msgId", "offsetMsgId", "topic", "originTopic", "originMsgId", "tags", "keys", "queueId",
                "queueOffset", "reconsumeTimes", "bornTimestamp", "storeTimestamp", "bornHost", "storeHost",
                "properties", "body"])
    for m in msgs:
        try:
            body = m.body.decode("utf-8")
        except UnicodeDecodeError:
            body = "base64:" + base64.b64encode(m.body).decode()
        w.writerow([m.uniq_key or m.msg_id, m.offset_msg_id, m.topic,
                    m.properties.get(MessageConst.PROPERTY_RETRY_TOPIC, ""),
                    m.properties.get(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID, ""), m.tags or "", m.keys_string or "",
                    m.queue_id, m.queue_offset, m.reconsume_times, m.born_timestamp, m.store_timestamp, m.born_host,
                    m.store_host, json.dumps(m.properties, sort_keys=True), body])
    return out.getvalue()


class Clusters:
    """The console's data for each NameServer list it may show (``-n`` given more than once): an admin client
    each, opened on first use and closed together. The first is the default (and /metrics' and /healthz')."""

    def __init__(self, namesrvs: list[str]) -> None:
        if not namesrvs:
            raise ValueError("no NameServer address")
        self.namesrvs = list(dict.fromkeys(namesrvs))
        self._open: dict[str, ConsoleData] = {}
        self._lock = trio.Lock()
        self._stack = AsyncExitStack()

    @classmethod
    def of(cls, data: ConsoleData, others: list[str] | None = None) -> Clusters:
        """A cluster whose data is already open (tests, embedding), and ``others`` to open on first use."""
        clusters = cls([data.namesrv, *(others or [])])
        clusters._open[data.namesrv] = data
        return clusters

    @property
    def default(self) -> str:
        return self.namesrvs[0]

    async def get(self, namesrv: str | None = None) -> ConsoleData:
        addr = namesrv if namesrv in self.namesrvs else self.default
        async with self._lock:
            data = self._open.get(addr)
            if data is None:
                admin = await self._stack.enter_async_context(Admin(addr))
                data = ConsoleData(admin)
                self._stack.push_async_callback(data.aclose)
                self._open[addr] = data
            return data

    async def aclose(self) -> None:
        with trio.CancelScope(shield=True):
            await self._stack.aclose()


__all__ = ["ADMIN_ERRORS", "BrokerRow", "Clusters", "ConsoleData", "GroupRow", "ResponseCode", "TopicRow", "body_views",
           "export_csv", "is_system_topic"]
