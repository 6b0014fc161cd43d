"""``/metrics``: rocketmq-exporter's metric names and labels, so its Grafana dashboards work.

Like the exporter, the rates are the minute TPS of the brokers' stats items
(VIEW_BROKER_STATS_DATA: BROKER_PUT_NUMS, BROKER_GET_NUMS, TOPIC_PUT_NUMS, GROUP_GET_NUMS),
the lag is the consumer progress of each clustering group, and the runtime gauges
come from GET_BROKER_RUNTIME_INFO. Gathered on a scrape (async; reused for a few seconds by
the next scrapes), then written by prometheus-client from a one-off registry.
"""

from __future__ import annotations

import math
from typing import Any

import trio
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

from ..codecs import RequestCode
from ..codecs.bodies import BrokerStatsData, TopicStatsTable
from ..codecs.headers import GetTopicStatsInfoRequestHeader, ViewBrokerStatsDataRequestHeader
from .data import ADMIN_ERRORS, ConsoleData, first_tps

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PARALLEL = 16  # requests in flight while gathering
RUNTIME_LABELS = ["cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version"]
#: runtime info key -> (exporter metric, which of the three rates or None for a number)
RUNTIME_GAUGES = {
    "rocketmq_brokeruntime_msg_put_total_today_now": ("msgPutTotalTodayNow", None),
    "rocketmq_brokeruntime_msg_gettotal_today_now": ("msgGetTotalTodayNow", None),
    "rocketmq_brokeruntime_msg_puttotal_todaymorning": ("msgPutTotalTodayMorning", None),
    "rocketmq_brokeruntime_msg_gettotal_todaymorning": ("msgGetTotalTodayMorning", None),
    "rocketmq_brokeruntime_msg_puttotal_yesterdaymorning": ("msgPutTotalYesterdayMorning", None),
    "rocketmq_brokeruntime_msg_gettotal_yesterdaymorning": ("msgGetTotalYesterdayMorning", None),
    "rocketmq_brokeruntime_put_message_size_total": ("putMessageSizeTotal", None),
    "rocketmq_brokeruntime_putmessage_times_total": ("putMessageTimesTotal", None),
    "rocketmq_brokeruntime_commitlog_maxoffset": ("commitLogMaxOffset", None),
    "rocketmq_brokeruntime_commitlog_minoffset": ("commitLogMinOffset", None),
    "rocketmq_brokeruntime_put_tps10": ("putTps", 0),
    "rocketmq_brokeruntime_put_tps60": ("putTps", 1),
    "rocketmq_brokeruntime_put_tps600": ("putTps", 2),
    "rocketmq_brokeruntime_getfound_tps10": ("getFoundTps", 0),
    "rocketmq_brokeruntime_getmiss_tps10": ("getMissTps", 0),
    "rocketmq_brokeruntime_gettotal_tps10": ("getTotalTps", 0),
    "rocketmq_brokeruntime_gettransfered_tps10": ("getTransferedTps", 0),
    "rocketmq_brokeruntime_gettransfered_tps60": ("getTransferedTps", 1),
    "rocketmq_brokeruntime_gettransfered_tps600": ("getTransferedTps", 2),
}


def _number(text: str | None, which: int | None) -> float:
    if which is not None:
        parts = (text or "").split(" ")
        return first_tps(parts[which]) if which < len(parts) else 0.0
    try:
        return float(text or 0)
    except ValueError:
        return 0.0


class _Once:
    def __init__(self, families: list[GaugeMetricFamily]) -> None:
        self.families = families

    def collect(self) -> Any:
        return iter(self.families)


async def _minute_tps(data: ConsoleData, addr: str, name: str, key: str) -> float | None:
    try:
        resp = await data._invoke(addr, RequestCode.VIEW_BROKER_STATS_DATA,
                                  ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key))
    except ADMIN_ERRORS:
        return None  # not counted yet (Java answers an error too)
    minute = BrokerStatsData.decode(resp.body or b"{}").stats_minute
    if minute is None:
        return 0.0
    tps = minute.tps
    return round(tps, 2) if tps == tps else 0.0  # the exporter's getFixedDouble: two decimals


class MetricsCache:
    """One gathering at a time, reused for ``max_age`` seconds: scrapers (often several Prometheus
    replicas) must not multiply the load on the brokers."""

    def __init__(self, max_age: float = 10.0) -> None:
        self.max_age = max_age
        self.lock = trio.Lock()
        self.text = b""
        self.at = -math.inf

    async def get(self, data: ConsoleData) -> bytes:
        async with self.lock:
            if trio.current_time() - self.at >= self.max_age:
                self.text = await render(data)
                self.at = trio.current_time()
            return self.text


async def render(data: ConsoleData) -> bytes:
    broker_tps = GaugeMetricFamily("rocketmq_broker_tps", "BrokerPutNums", labels=["cluster", "brokerIP", "broker"])
    broker_qps = GaugeMetricFamily("rocketmq_broker_qps", "BrokerGetNums", labels=["cluster", "brokerIP", "broker"])
    producer_tps = GaugeMetricFamily("rocketmq_producer_tps", "TopicPutNums", labels=["cluster", "broker", "topic"])
    producer_offset = GaugeMetricFamily("rocketmq_producer_offset", "TopicOffset",
                                        labels=["cluster", "broker", "topic"])
    producer_size = GaugeMetricFamily("rocketmq_producer_message_size", "TopicPutMessageSize",
                                      labels=["cluster", "broker", "topic"])
    consumer_size = GaugeMetricFamily("rocketmq_consumer_message_size", "GroupGetMessageSize",
                                      labels=["cluster", "broker", "topic", "group"])
    consumer_tps = GaugeMetricFamily("rocketmq_consumer_tps", "GroupGetNums",
                                     labels=["cluster", "broker", "topic", "group"])
    consumer_offset = GaugeMetricFamily("rocketmq_consumer_offset", "GroupBrokerTotalOffset",
                                        labels=["cluster", "broker", "topic", "group"])
    group_diff = GaugeMetricFamily("rocketmq_group_diff", "GroupDiff",
                                   labels=["group", "topic", "countOfOnlineConsumers", "msgModel"])
    group_count = GaugeMetricFamily("rocketmq_group_count", "GroupCount", labels=["caddr", "localaddr", "group"])
    runtime = {name: GaugeMetricFamily(name, name, labels=RUNTIME_LABELS) for name in RUNTIME_GAUGES}

    masters = [b for b in await data.brokers() if b.broker_id == 0]
    for b in masters:
        for name, family in (("BROKER_PUT_NUMS", broker_tps), ("BROKER_GET_NUMS", broker_qps)):
            tps = await _minute_tps(data, b.addr, name, b.cluster)
            if tps is not None:
                family.add_metric([b.cluster, b.addr, b.name], tps)
        try:
            rt = await data.admin.broker_runtime_info(b.addr)
        except ADMIN_ERRORS:
            continue
        labels = [b.cluster, b.addr, b.addr, "", rt.get("bootTimestamp", ""), rt.get("brokerVersionDesc", "")]
        for name, (key, which) in RUNTIME_GAUGES.items():
            runtime[name].add_metric(labels, _number(rt.get(key), which))

    by_name = {b.name: b for b in masters}
    sem = trio.Semaphore(PARALLEL)
    topic_rows: dict[str, list[tuple[list[str], float, float | None, float | None]]] = {}
    group_rows: dict[str, tuple[Any, int, str, str]] = {}

    async def one_topic(topic: str) -> None:
        async with sem:
            # each master directly (the exporter's examineTopicStats without a route lookup per topic)
            per_broker: dict[str, int] = {}
            for b in masters:
                try:
                    resp = await data._invoke(b.addr, RequestCode.GET_TOPIC_STATS_INFO,
                                              GetTopicStatsInfoRequestHeader(topic=topic))
                except ADMIN_ERRORS:
                    continue  # not on this broker
                table = TopicStatsTable.decode(resp.body or b"{}").offset_table
                per_broker[b.name] = sum(o.max_offset for o in table.values())
            rows = []
            for name, total in sorted(per_broker.items()):
                row = by_name.get(name)
                if row is not None:
                    tps = await _minute_tps(data, row.addr, "TOPIC_PUT_NUMS", topic)
                    size = await _minute_tps(data, row.addr, "TOPIC_PUT_SIZE", topic)
                    rows.append(([row.cluster, name, topic], float(total), tps, size))
            topic_rows[topic] = rows

    async def one_group(group: str) -> None:
        async with sem:
            try:
                stats = await data.consume_stats(group)
            except ADMIN_ERRORS:
                return
            online, model, caddrs = 0, "CLUSTERING", ""
            try:
                conn = await data.admin.consumer_connection(group)
                online = len(conn.connection_set or [])
                model = getattr(conn.message_model, "name", None) or str(conn.message_model or "CLUSTERING")
                caddrs = ",".join(sorted(c.client_addr or "" for c in conn.connection_set or []))
            except ADMIN_ERRORS:
                pass
            group_rows[group] = (stats, online, model, caddrs)

    async with trio.open_nursery() as nursery:
        for topic in await data.topics():
            nursery.start_soon(one_topic, topic)
        for group in await data.group_names():
            nursery.start_soon(one_group, group)

    for topic in sorted(topic_rows):
        for labels, total, tps, size in topic_rows[topic]:
            producer_offset.add_metric(labels, total)
            if tps is not None:
                producer_tps.add_metric(labels, tps)
            if size is not None:
                producer_size.add_metric(labels, size)

    for group in sorted(group_rows):
        stats, online, model, caddrs = group_rows[group]
        group_count.add_metric([caddrs, "", group], float(online))
        lag: dict[str, int] = {}
        offsets: dict[tuple[str, str], int] = {}
        for mq, w in stats.offset_table.items():
            topic = mq.topic or ""
            lag[topic] = lag.get(topic, 0) + max(0, w.broker_offset - w.consumer_offset)
            where = (mq.broker_name or "", topic)
            offsets[where] = offsets.get(where, 0) + w.broker_offset
        for topic, diff in sorted(lag.items()):
            if model == "CLUSTERING":
                group_diff.add_metric([group, topic, str(online), model], float(diff))
        for (name, topic), total in sorted(offsets.items()):
            row = by_name.get(name)
            if row is None:
                continue
            consumer_offset.add_metric([row.cluster, name, topic, group], float(total))
            tps = await _minute_tps(data, row.addr, "GROUP_GET_NUMS", f"{topic}@{group}")
            if tps is not None:
                consumer_tps.add_metric([row.cluster, name, topic, group], tps)
            size = await _minute_tps(data, row.addr, "GROUP_GET_SIZE", f"{topic}@{group}")
            if size is not None:
                consumer_size.add_metric([row.cluster, name, topic, group], size)

    registry = CollectorRegistry(auto_describe=False)
    families = [broker_tps, broker_qps, producer_tps, producer_offset, producer_size, consumer_tps, consumer_offset,
                consumer_size, group_diff, group_count, *runtime.values()]
    registry.register(_Once(families))  # type: ignore[arg-type]
    return generate_latest(registry)
