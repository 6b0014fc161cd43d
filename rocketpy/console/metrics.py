"""``/metrics``: every metric of rocketmq-exporter, with its names, labels and help texts, so that its Grafana
dashboards and alert rules work unchanged.

:data:`METRICS` is the exporter's catalogue (RMQMetricsCollector, in its order). The figures come from the broker
answers its MetricsCollectTask reads (:mod:`.metrics_gather` says which and how each is computed): the brokers'
stats items (VIEW_BROKER_STATS_DATA), topic stats, consume stats, consumer connections and running info, producer
tables and GET_BROKER_RUNTIME_INFO, parsed here as the exporter's BrokerRuntimeStats parses it. They are gathered
on a scrape (async), reused by the next scrapes for ``max_age`` seconds, and written by prometheus-client.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

BROKER_LABELS = ("cluster", "brokerIP", "broker")
TOPIC_LABELS = ("cluster", "broker", "topic")
GROUP_LABELS = ("cluster", "broker", "topic", "group")
DIFF_LABELS = ("group", "topic", "countOfOnlineConsumers", "msgModel")
CLIENT_LABELS = ("clientAddr", "clientId", "group", "topic")
RUNTIME_LABELS = ("cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version")

#: the putMessageDistributeTime ranges: metric suffix, the exporter's help suffix, the range's name in the text
PMDT = (
    ("0ms", "0ms", "<=0ms"), ("0to10ms", "0to10ms", "0~10ms"), ("10to50ms", "10to50ms", "10~50ms"),
    ("50to100ms", "50to100ms", "50~100ms"), ("100to200ms", "100to200ms", "100~200ms"),
    ("200to500ms", "200to500ms", "200~500ms"), ("500to1s", "500to1s", "500ms~1s"), ("1to2s", "1to2s", "1~2s"),
    ("2to3s", "2to3s", "2~3s"), ("3to4s", "3to4s", "3~4s"), ("4to5s", "4to5s", "4~5s"),
    ("5to10s", "5to10s", "5~10s"), ("10stomore", "10toMore", "10s~"),
)

#: the runtime gauges after the pmdt ones: metric, help, the runtime key (and which of its three rates)
RUNTIME_GAUGES: tuple[tuple[str, str, str, int | None], ...] = (
    ("rocketmq_brokeruntime_msg_put_total_today_now", "brokerRuntimeMsgPutTotalTodayNow", "msgPutTotalTodayNow", None),
    ("rocketmq_brokeruntime_msg_gettotal_today_now", "brokerRuntimeMsgGetTotalTodayNow", "msgGetTotalTodayNow", None),
    ("rocketmq_brokeruntime_dispatch_behind_bytes", "brokerRuntimeDispatchBehindBytes", "dispatchBehindBytes", None),
    ("rocketmq_brokeruntime_put_message_size_total", "brokerRuntimePutMessageSizeTotal", "putMessageSizeTotal", None),
    ("rocketmq_brokeruntime_put_message_average_size", "brokerRuntimePutMessageAverageSize",
     "putMessageAverageSize", None),
    ("rocketmq_brokeruntime_query_threadpool_queue_capacity", "brokerRuntimeQueryThreadPoolQueueCapacity",
     "queryThreadPoolQueueCapacity", None),
    ("rocketmq_brokeruntime_remain_transientstore_buffer_numbs", "brokerRuntimeRemainTransientStoreBufferNumbs",
     "remainTransientStoreBufferNumbs", None),
    ("rocketmq_brokeruntime_earliest_message_timestamp", "brokerRuntimeEarliestMessageTimeStamp",
     "earliestMessageTimeStamp", None),
    ("rocketmq_brokeruntime_putmessage_entire_time_max", "brokerRuntimePutMessageEntireTimeMax",
     "putMessageEntireTimeMax", None),
    ("rocketmq_brokeruntime_start_accept_sendrequest_time", "brokerRuntimeStartAcceptSendRequestTimeStamp",
     "startAcceptSendRequestTimeStamp", None),
    ("rocketmq_brokeruntime_send_threadpool_queue_size", "brokerRuntimeSendThreadPoolQueueSize",
     "sendThreadPoolQueueSize", None),
    ("rocketmq_brokeruntime_putmessage_times_total", "brokerRuntimePutMessageTimesTotal", "putMessageTimesTotal", None),
    ("rocketmq_brokeruntime_getmessage_entire_time_max", "brokerRuntimeGetMessageEntireTimeMax",
     "getMessageEntireTimeMax", None),
    ("rocketmq_brokeruntime_pagecache_lock_time_mills", "brokerRuntimePageCacheLockTimeMills",
     "pageCacheLockTimeMills", None),
    ("rocketmq_brokeruntime_commitlog_disk_ratio", "brokerRuntimeCommitLogDiskRatio", "commitLogDiskRatio", None),
    ("rocketmq_brokeruntime_consumequeue_disk_ratio", "brokerRuntimeConsumeQueueDiskRatio",
     "consumeQueueDiskRatio", None),
    ("rocketmq_brokeruntime_getfound_tps600", "brokerRuntimeGetFoundTps600", "getFoundTps", 2),
    ("rocketmq_brokeruntime_getfound_tps60", "brokerRuntimeGetFoundTps60", "getFoundTps", 1),
    ("rocketmq_brokeruntime_getfound_tps10", "brokerRuntimeGetFoundTps10", "getFoundTps", 0),
    ("rocketmq_brokeruntime_gettotal_tps600", "brokerRuntimeGetTotalTps600", "getTotalTps", 2),
    ("rocketmq_brokeruntime_gettotal_tps60", "brokerRuntimeGetTotalTps60", "getTotalTps", 1),
    ("rocketmq_brokeruntime_gettotal_tps10", "brokerRuntimeGetTotalTps10", "getTotalTps", 0),
    ("rocketmq_brokeruntime_gettransfered_tps600", "brokerRuntimeGetTransferedTps600", "getTransferedTps", 2),
    ("rocketmq_brokeruntime_gettransfered_tps60", "brokerRuntimeGetTransferedTps60", "getTransferedTps", 1),
    ("rocketmq_brokeruntime_gettransfered_tps10", "brokerRuntimeGetTransferedTps10", "getTransferedTps", 0),
    ("rocketmq_brokeruntime_getmiss_tps600", "brokerRuntimeGetMissTps600", "getMissTps", 2),
    ("rocketmq_brokeruntime_getmiss_tps60", "brokerRuntimeGetMissTps60", "getMissTps", 1),
    ("rocketmq_brokeruntime_getmiss_tps10", "brokerRuntimeGetMissTps10", "getMissTps", 0),
    ("rocketmq_brokeruntime_put_tps600", "brokerRuntimePutTps600", "putTps", 2),
    ("rocketmq_brokeruntime_put_tps60", "brokerRuntimePutTps60", "putTps", 1),
    ("rocketmq_brokeruntime_put_tps10", "brokerRuntimePutTps10", "putTps", 0),
    ("rocketmq_brokeruntime_dispatch_maxbuffer", "brokerRuntimeDispatchMaxBuffer", "dispatchMaxBuffer", None),
    ("rocketmq_brokeruntime_pull_threadpoolqueue_capacity", "brokerRuntimePullThreadPoolQueueCapacity",
     "pullThreadPoolQueueCapacity", None),
    ("rocketmq_brokeruntime_send_threadpoolqueue_capacity", "brokerRuntimeSendThreadPoolQueueCapacity",
     "sendThreadPoolQueueCapacity", None),
    ("rocketmq_brokeruntime_pull_threadpoolqueue_size", "brokerRuntimePullThreadPoolQueueSizeF",
     "pullThreadPoolQueueSize", None),
    ("rocketmq_brokeruntime_query_threadpoolqueue_size", "brokerRuntimeQueryThreadPoolQueueSize",
     "queryThreadPoolQueueSize", None),
    ("rocketmq_brokeruntime_pull_threadpoolqueue_headwait_timemills",
     "brokerRuntimePullThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills", None),
    ("rocketmq_brokeruntime_query_threadpoolqueue_headwait_timemills",
     "brokerRuntimeQueryThreadPoolQueueHeadWaitTimeMills", "queryThreadPoolQueueHeadWaitTimeMills", None),
    ("rocketmq_brokeruntime_send_threadpoolqueue_headwait_timemills",
     "brokerRuntimeSendThreadPoolQueueHeadWaitTimeMills", "sendThreadPoolQueueHeadWaitTimeMills", None),
    ("rocketmq_brokeruntime_msg_gettotal_yesterdaymorning", "brokerRuntimeMsgGetTotalYesterdayMorning",
     "msgGetTotalYesterdayMorning", None),
    ("rocketmq_brokeruntime_msg_puttotal_yesterdaymorning", "brokerRuntimeMsgPutTotalYesterdayMorning",
     "msgPutTotalYesterdayMorning", None),
    ("rocketmq_brokeruntime_msg_gettotal_todaymorning", "brokerRuntimeMsgGetTotalTodayMorning",
     "msgGetTotalTodayMorning", None),
    ("rocketmq_brokeruntime_msg_puttotal_todaymorning", "brokerRuntimeMsgPutTotalTodayMorning",
     "msgPutTotalTodayMorning", None),
    ("rocketmq_brokeruntime_commitlogdir_capacity_free", "brokerRuntimeCommitLogDirCapacityFree",
     "commitLogDirCapacity", 1),
    ("rocketmq_brokeruntime_commitlogdir_capacity_total", "brokerRuntimeCommitLogDirCapacityTotal",
     "commitLogDirCapacity", 0),
    ("rocketmq_brokeruntime_commitlog_maxoffset", "brokerRuntimeCommitLogMaxOffset", "commitLogMaxOffset", None),
    ("rocketmq_brokeruntime_commitlog_minoffset", "brokerRuntimeCommitLogMinOffset", "commitLogMinOffset", None),
    ("rocketmq_brokeruntime_remain_howmanydata_toflush", "brokerRuntimeRemainHowManyDataToFlush",
     "remainHowManyDataToFlush", None),
    ("rocketmq_brokeruntime_put_latency_99", "brokerRuntimePutLatency99", "putLatency99", None),
    ("rocketmq_brokeruntime_put_latency_999", "brokerRuntimePutLatency999", "putLatency999", None),
)

#: every exporter metric in the order its collector writes them: name -> (help, label names)
METRICS: dict[str, tuple[str, tuple[str, ...]]] = {
    "rocketmq_group_diff": ("GroupDiff", DIFF_LABELS),
    "rocketmq_group_retrydiff": ("GroupRetryDiff", DIFF_LABELS),
    "rocketmq_group_dlqdiff": ("GroupDLQDiff", DIFF_LABELS),
    "rocketmq_group_count": ("GroupCount", ("caddr", "localaddr", "group")),
    "rocketmq_producer_count": ("producer instance counter", ("cluster", "broker", "group")),
    "rocketmq_producer_offset": ("TopicOffset", TOPIC_LABELS),
    "rocketmq_topic_retry_offset": ("TopicRetryOffset", TOPIC_LABELS),
    "rocketmq_topic_dlq_offset": ("TopicRetryOffset", ("cluster", "broker", "group")),  # sic: the exporter's help
    "rocketmq_producer_tps": ("TopicPutNums", TOPIC_LABELS),
    "rocketmq_producer_message_size": ("TopicPutMessageSize", TOPIC_LABELS),
    "rocketmq_consumer_tps": ("GroupGetNums", GROUP_LABELS),
    "rocketmq_group_consume_tps": ("GroupConsumeTPS", GROUP_LABELS),
    "rocketmq_consumer_offset": ("GroupBrokerTotalOffset", GROUP_LABELS),
    "rocketmq_group_consume_total_offset": ("GroupConsumeTotalOffset", GROUP_LABELS),
    "rocketmq_consumer_message_size": ("GroupGetMessageSize", GROUP_LABELS),
    "rocketmq_send_back_nums": ("SendBackNums", GROUP_LABELS),
    "rocketmq_group_get_latency_by_storetime": ("GroupGetLatencyByStoreTime", GROUP_LABELS),
    "rocketmq_client_consume_fail_msg_count": ("consumerClientFailedMsgCounts", CLIENT_LABELS),
    "rocketmq_client_consume_fail_msg_tps": ("consumerClientFailedTPS", CLIENT_LABELS),
    "rocketmq_client_consume_ok_msg_tps": ("consumerClientOKTPS", CLIENT_LABELS),
    "rocketmq_client_consume_rt": ("consumerClientRT", CLIENT_LABELS),
    "rocketmq_client_consumer_pull_rt": ("consumerClientPullRT", CLIENT_LABELS),
    "rocketmq_client_consumer_pull_tps": ("consumerClientPullTPS", CLIENT_LABELS),
    "rocketmq_broker_tps": ("BrokerPutNums", BROKER_LABELS),
    "rocketmq_broker_qps": ("BrokerGetNums", BROKER_LABELS),
    **{f"rocketmq_brokeruntime_pmdt_{suffix}": (f"PutMessageDistributeTimeMap{help_}", RUNTIME_LABELS)
       for suffix, help_, _ in PMDT},
    **{name: (help_, RUNTIME_LABELS) for name, help_, _, _ in RUNTIME_GAUGES},
}


class Samples:
    """What one gathering found: metric name -> [(label values, value)], in the order added."""

    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[tuple[str, ...], float]]] = {name: [] for name in METRICS}

    def add(self, name: str, labels: Iterable[str], value: float) -> None:
        self.rows[name].append((tuple(labels), float(value)))

    def names_with_samples(self) -> set[str]:
        return {name for name, rows in self.rows.items() if rows}


# -- GET_BROKER_RUNTIME_INFO as the exporter's BrokerRuntimeStats reads it ------------------------------------
def _rates(text: str) -> list[float]:
    """A putTps-style value: Java's split(" ") drops the trailing empty windows, which read as 0."""
    parts = text.split(" ")
    while parts and not parts[-1]:
        parts.pop()
    return [float(p) for p in parts[:3]]


def machine_bytes(text: str) -> float:
    """Utils.machineReadableByteCount: "1.5 GiB" -> bytes ("B" as is, K/M/G/T/P/E powers of 1024)."""
    number, _, unit = text.strip().partition(" ")
    value = float(number)
    if not unit or unit == "B":
        return value
    exp = "KMGTPE".find(unit[0])
    if exp < 0:
        raise ValueError(f"unknown byte unit {unit!r}")
    return value * 1024.0 ** (exp + 1)


def _capacity(text: str) -> list[float]:
    """commitLogDirCapacity, "Total : 252.0 GiB, Free : 79.3 GiB.": [total, free] in bytes."""
    arr = text.split(" ")
    return [machine_bytes(f"{arr[2]} {arr[3][:-1]}"), machine_bytes(f"{arr[6]} {arr[7][:-1]}")]


def _distribution(text: str) -> dict[str, float]:
    """putMessageDistributeTime, "[<=0ms]:18 [0~10ms]:11 ...", or "null" before the broker's first minute."""
    if text.lower() == "null":
        return {}
    out = {}
    for part in text.split(" "):
        name, sep, count = part.partition(":")
        if sep:
            out[name.replace("[", "").replace("]", "")] = float(int(count))
    return out


def runtime_values(table: dict[str, str]) -> dict[str, float]:
    """Every runtime gauge the table has a readable value for (a key missing or unreadable leaves its gauge out
    of this broker's samples; the exporter drops the broker's whole table then)."""
    out: dict[str, float] = {}
    parsed: dict[str, Any] = {}

    def value(key: str, which: int | None) -> float | None:
        text = table.get(key)
        if text is None:
            if key in ("putLatency99", "putLatency999"):
                return -1.0  # the exporter's default for brokers before 4.9.2
            return None
        if key not in parsed:
            parser: Callable[[str], Any]
            if key == "commitLogDirCapacity":
                parser = _capacity
            elif which is not None:
                parser = _rates
            elif key == "remainHowManyDataToFlush":
                parser = machine_bytes  # "3.1 KiB": bytes (the exporter keeps only the number before the unit)
            else:
                parser = float
            try:
                parsed[key] = parser(text)
            except (ValueError, IndexError):
                parsed[key] = None
        got = parsed[key]
        if got is None:
            return None
        if which is None:
            return float(got)
        return got[which] if which < len(got) else 0.0

    for name, _help, key, which in RUNTIME_GAUGES:
        v = value(key, which)
        if v is not None:
            out[name] = v
    dist = _distribution(table.get("putMessageDistributeTime", "null"))
    if dist:
        for suffix, _help, range_name in PMDT:
            if range_name in dist:
                out[f"rocketmq_brokeruntime_pmdt_{suffix}"] = dist[range_name]
    return out


def runtime_labels(cluster: str, addr: str, table: dict[str, str]) -> tuple[str, ...]:
    """cluster, brokerIP (the master's address), brokerHost (always "", as the exporter's), des (the version's
    name), boottime, broker_version (its number)."""
    return (cluster, addr, "", table.get("brokerVersionDesc", ""), table.get("bootTimestamp", "0"),
            table.get("brokerVersion", "0"))


# -- the text --------------------------------------------------------------------------------------------------
class _Once:
    def __init__(self, families: list[GaugeMetricFamily]) -> None:
        self.families = families

    def collect(self) -> Any:
        return iter(self.families)


def exposition(samples: Samples) -> bytes:
    families = []
    for name, (help_, labels) in METRICS.items():
        family = GaugeMetricFamily(name, help_, labels=list(labels))
        for label_values, value in samples.rows[name]:
            family.add_metric(list(label_values), value)
        families.append(family)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Once(families))
    return generate_latest(registry)
