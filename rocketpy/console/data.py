"""What the console pages show, gathered with the admin protocol (no HTML here).

Every call goes through :class:`rocketpy.client.admin.Admin` or the same requests mqadmin
sends, so the console works against Java servers as well as ours.
"""

from __future__ import annotations

import dataclasses
import json
import string
from typing import Any

import trio

from ..client.admin import Admin
from ..client.api import check
from ..client.errors import MQClientError
from ..codecs import RemotingCommand, RequestCode, ResponseCode
from ..codecs.bodies import (
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumeStats,
    GroupList,
    MessageQueue,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
)
from ..codecs.codes import MixAll
from ..codecs.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetBrokerAclConfigResponseHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)
from ..codecs.message import MessageExt
from ..codecs.trace import TraceRecord, decode_trace_data, timeline
from ..remoting import RemotingError

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
MAX_BROWSE = 200


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
            row.disk = rt.get("commitLogDirCapacity") or rt.get("commitLogDiskRatio", "")

        async with trio.open_nursery() as nursery:
            for row in rows:
                nursery.start_soon(fill, row)
        return rows

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

    async def topic_detail(self, topic: str) -> dict[str, Any]:
        route = await self.admin.topic_route(topic)
        stats = await self.admin.topic_stats(topic)
        queues = sorted(stats.offset_table.items(), key=lambda kv: (kv[0].broker_name or "", kv[0].queue_id))
        groups: list[str] = []
        for _, addr in await self.admin._topic_masters(topic):
            try:
                resp = await self._invoke(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
                                          QueryTopicConsumeByWhoRequestHeader(topic=topic))
                groups += GroupList.decode(resp.body or b"{}").group_list
            except ADMIN_ERRORS:
                pass
        return {"route": route, "queues": queues, "groups": sorted(set(groups)),
                "total": sum(o.max_offset - o.min_offset for _, o in queues)}

    async def create_topic(self, topic: str, read: int, write: int, perm: int, order: bool) -> None:
        config = TopicConfig(topic_name=topic, read_queue_nums=read, write_queue_nums=write, perm=perm, order=order)
        addrs = await self.master_addrs()
        if not addrs:
            raise MQClientError("no master broker in the cluster")
        for addr in addrs:
            await self.admin.create_topic(addr, config)

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

    async def groups(self, show_system: bool = False, limit: int = 16) -> list[GroupRow]:
        """Every group with its lag and online clients. For a page of many groups the requests go to the
        masters directly (what examineConsumeStats would find through each retry topic's route, without a
        NameServer round trip per group)."""
        rows = [GroupRow(g) for g in await self.group_names(show_system)]
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
                        online = max(online, len(ConsumerConnection.decode(resp.body or b"{}").connection_set or []))
                    except ADMIN_ERRORS:
                        pass  # CONSUMER_NOT_ONLINE
                row.lag = None if error and not lag else lag
                row.consume_tps, row.online, row.error = tps, online, error

        async with trio.open_nursery() as nursery:
            for row in rows:
                nursery.start_soon(fill, row)
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
        return out

    async def create_group(self, group: str) -> None:
        for addr in await self.master_addrs():
            await self.admin.update_sub_group(addr, SubscriptionGroupConfig(group_name=group))

    async def delete_group(self, group: str) -> None:
        for addr in await self.master_addrs():
            await self.admin.delete_sub_group(addr, group)

    async def reset_offset(self, group: str, topic: str, timestamp: int) -> dict[MessageQueue, int]:
        return await self.admin.reset_offset_by_time(group, topic, timestamp)

    # -- messages ------------------------------------------------------------------------------------
    async def by_key(self, topic: str, key: str) -> list[MessageExt]:
        return await self.admin.query_messages(topic, key, 64)

    async def by_id(self, topic: str, msg_id: str) -> MessageExt:
        return await self.admin.view_message(msg_id, topic or None)

    async def by_time(self, topic: str, begin: int, end: int) -> list[MessageExt]:
        """Every message stored between ``begin`` and ``end`` (ms), at most MAX_BROWSE, newest first."""
        api = self.admin.client.api
        found: list[MessageExt] = []
        for mq, (lo, hi) in (await self.admin.queue_bounds(topic)).items():
            addr = self.admin.client.find_broker(mq.broker_name or "", 0)
            if addr is None:
                continue
            start = max(lo, await api.search_offset(addr, mq, begin))
            offset = start
            while offset < hi and len(found) < MAX_BROWSE * 4:
                msgs, nxt = await self.admin.pull(mq, offset, 32)
                if not msgs or nxt <= offset:
                    break
                found += [m for m in msgs if begin <= m.store_timestamp <= end]
                if msgs[-1].store_timestamp > end:
                    break
                offset = nxt
        found.sort(key=lambda m: m.store_timestamp, reverse=True)
        return found[:MAX_BROWSE]

    async def consumed_by(self, msg: MessageExt) -> list[tuple[str, str]]:
        """(group, CONSUMED / NOT_CONSUMED / error) for each group that consumes the topic."""
        groups: list[str] = []
        for _, addr in await self.admin._topic_masters(msg.topic):
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
        for m in await self.admin.query_messages(trace_topic, msg_id, 64):
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


__all__ = ["ADMIN_ERRORS", "BrokerRow", "ConsoleData", "GroupRow", "ResponseCode", "body_views", "is_system_topic"]
