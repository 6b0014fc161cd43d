"""mqadmin's exportMetrics (metrics.json of a cluster) and startMonitoring (MonitorService's rounds)."""

from __future__ import annotations

import argparse
import os
from typing import Any

import trio

from ..client.admin import Admin
from ..client.errors import MQClientError
from ..client.java_text import JavaSet, fastjson_pretty, java_hash_order, java_name
from ..codecs.codes import CURRENT_VERSION, MixAll, version_desc
from ..javacompat.lang import java_string_hash
from .config import hash_map
from .core import Out, command, write_text
from .topics import sum_24h

#: TopicValidator's system topics whose put stats exportMetrics reads, and Stats.TOPIC_PUT_NUMS
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"


def _export_metrics_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--clusterName", dest="cluster", required=True, help="choose a cluster to export")
    p.add_argument("-f", "--filePath", dest="path", default="/tmp/rocketmq/export",
                   help="export metrics.json path")


def _first_number(text: str | None) -> float:
    """The first of the broker's space separated TPS figures (putTps, getTransferedTps)."""
    parts = (text or "").split(" ")
    try:
        return float(parts[0]) if parts and parts[0] else 0.0
    except ValueError:
        return 0.0


def _long(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


async def _put_stats(admin: Admin, addr: str, topic: str) -> Any:
    """viewBrokerStatsData, None when the broker has no such stats (mqadmin counts that as zero)."""
    try:
        return await admin.broker_stats_data(addr, TOPIC_PUT_NUMS, topic)
    except MQClientError:
        return None


async def _broker_metrics(admin: Admin, addr: str, total_tps: dict[str, float],
                          total_day: dict[str, int]) -> dict[str, Any]:
    kv = await admin.broker_runtime_info(addr)
    config = await admin.broker_config(addr)
    groups = await admin.user_sub_groups(addr)
    topics = await admin.user_topic_configs(addr, False)
    trans = await _put_stats(admin, addr, TRANS_HALF_TOPIC)
    schedule = await _put_stats(admin, addr, SCHEDULE_TOPIC)

    def tps(bsd: Any) -> float:
        return float(bsd.stats_minute.tps) if bsd is not None and bsd.stats_minute is not None else 0.0

    tps_map = {"normalInTps": _first_number(kv.get("putTps")),
               "normalOutTps": _first_number(kv.get("getTransferedTps")),
               "transInTps": tps(trans), "scheduleInTps": tps(schedule)}
    day_map = {
        "normalOneDayInNum": _long(kv.get("msgPutTotalTodayMorning")) - _long(kv.get("msgPutTotalYesterdayMorning")),
        "normalOneDayOutNum": _long(kv.get("msgGetTotalTodayMorning")) - _long(kv.get("msgGetTotalYesterdayMorning")),
        "transOneDayInNum": sum_24h(trans) if trans is not None else 0,
        "scheduleOneDayInNum": sum_24h(schedule) if schedule is not None else 0,
    }
    for ours, total in (("normalInTps", "totalNormalInTps"), ("normalOutTps", "totalNormalOutTps"),
                        ("transInTps", "totalTransInTps"), ("scheduleInTps", "totalScheduleInTps")):
        total_tps[total] += tps_map[ours]
    for key, value in day_map.items():
        total_day[key] += value

    clients: list[str] = []
    for group in groups:
        try:
            cc = await admin.consumer_connection(group)
        except MQClientError:
            continue  # a group without a consumer online (mqadmin skips it too)
        for conn in cc.connection_set:
            info = f"{java_name(conn.language)}%{version_desc(conn.version)}"
            if info not in clients:
                clients.append(info)
    # fastjson leaves out null map values: a broker without totalMemKBytes has no such key
    env = {k: v for k, v in (("cpuNum", config.get("clientCallbackExecutorThreads")),
                             ("totalMemKBytes", kv.get("totalMemKBytes"))) if v is not None}
    disk = {k: kv[k] for k in ("commitLogDiskRatio", "consumeQueueDiskRatio") if kv.get(k) is not None}
    quota: dict[str, Any] = {"diskRatio": hash_map(disk), "tps": hash_map(tps_map), "oneDayNum": hash_map(day_map),
                             "topicSize": len(topics), "groupSize": len(groups)}
    if kv.get("putMessageAverageSize") is not None:
        quota["messageAverageSize"] = kv["putMessageAverageSize"]
    version = {"rocketmqVersion": version_desc(CURRENT_VERSION),
               "clientInfo": JavaSet(java_hash_order(clients, java_string_hash))}
    return hash_map({"runtimeEnv": hash_map(env), "runtimeQuota": hash_map(quota),
                      "runtimeVersion": hash_map(version)})


@command("exportMetrics", "export metrics", _export_metrics_opts)
async def export_metrics(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    cluster = args.cluster.strip()
    info = await admin.cluster_info()
    names = (info.cluster_addr_table or {}).get(cluster)
    if names is None:
        raise MQClientError(f"no cluster named {cluster} in the name server")
    total_tps = {"totalNormalInTps": 0.0, "totalNormalOutTps": 0.0, "totalTransInTps": 0.0,
                 "totalScheduleInTps": 0.0}
    total_day = {"normalOneDayInNum": 0, "normalOneDayOutNum": 0, "transOneDayInNum": 0, "scheduleOneDayInNum": 0}
    report: dict[str, Any] = {}
    for name in names:
        bd = (info.broker_addr_table or {}).get(name)
        master = bd.master_addr() if bd is not None else None
        if master is None:
            continue
        report[name] = await _broker_metrics(admin, master, total_tps, total_day)
    result = hash_map({"evaluateReport": hash_map(report),
                        "totalData": hash_map({"totalTps": hash_map(total_tps),
                                                "totalOneDayNum": hash_map(total_day)})})
    path = os.path.join(args.path.strip(), "metrics.json")
    await trio.to_thread.run_sync(write_text, path, fastjson_pretty(result))
    out.raw(f"export {path} success")
    out.result({"path": path, **result})
    return 0


# -- startMonitoring ---------------------------------------------------------------------------------------

#: MonitorService: the first round 20 s after the start, then one every MonitorConfig.roundInterval
FIRST_ROUND_S = 20.0
ROUND_INTERVAL_S = 60.0
LOG_PREFIX = "[MONITOR] "


def _monitor_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--roundInterval", dest="round_interval", type=float, default=ROUND_INTERVAL_S,
                   help="seconds between two rounds (MonitorConfig.roundInterval)")


async def undone_msgs(admin: Admin, group: str) -> list[dict[str, Any]]:
    """MonitorService.reportUndoneMsgs: per topic of the group, messages not consumed yet (in all, the most of
    one queue) and how far behind the newest message the last consumed one was stored."""
    stats = await admin.consume_stats(group)
    await admin.consumer_connection(group)  # a group nobody consumes is not reported
    by_topic: dict[str, list[Any]] = {}
    for mq, ow in stats.offset_table.items():
        by_topic.setdefault(mq.topic or "", []).append((mq, ow))
    reports = []
    for topic, rows in by_topic.items():
        total = single = delay = 0
        for mq, ow in rows:
            diff = ow.broker_offset - ow.consumer_offset
            single = max(single, diff)
            total += max(diff, 0)
            if ow.last_timestamp > 0 and ow.broker_offset > 0:
                try:
                    msgs, _ = await admin.pull(mq, ow.broker_offset - 1, 1)
                except MQClientError:
                    continue
                if msgs:
                    delay = max(delay, msgs[0].store_timestamp - ow.last_timestamp)
        reports.append({"consumerGroup": group, "topic": topic, "undoneMsgsTotal": total,
                        "undoneMsgsSingleMQ": single, "undoneMsgsDelayTimeMills": delay})
    return reports


def undone_str(r: dict[str, Any]) -> str:
    return (f"UndoneMsgs [consumerGroup={r['consumerGroup']}, topic={r['topic']}, undoneMsgsTotal="
            f"{r['undoneMsgsTotal']}, undoneMsgsSingleMQ={r['undoneMsgsSingleMQ']}, "
            f"undoneMsgsDelayTimeMills={r['undoneMsgsDelayTimeMills']}]")


async def monitor_round(admin: Admin, out: Out) -> list[dict[str, Any]]:
    """One MonitorService.doMonitorWork: every group that has a %RETRY% topic."""
    out.line(LOG_PREFIX + "=========================================beginRound")
    reports = []
    for topic in await admin.topic_list():
        if not topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX):
            continue
        try:
            found = await undone_msgs(admin, topic[len(MixAll.RETRY_GROUP_TOPIC_PREFIX):])
        except MQClientError:
            continue  # mqadmin drops a group it cannot examine from the round
        for r in found:
            out.line(f"{LOG_PREFIX}reportUndoneMsgs: {undone_str(r)}")
        reports.extend(found)
    out.line(LOG_PREFIX + "=========================================endRound")
    return reports


@command("startMonitoring", "Start Monitoring", _monitor_opts)
async def start_monitoring(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    """Runs until interrupted, as mqadmin's. mqadmin writes the rounds to its client log; this prints them
    (``--json``: one JSON line per round)."""
    import json
    import sys

    await trio.sleep(FIRST_ROUND_S)
    while True:
        started = trio.current_time()
        reports = await monitor_round(admin, out)
        if out.as_json:
            sys.stdout.write(json.dumps({"round": reports}, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        await trio.sleep(max(0.0, args.round_interval - (trio.current_time() - started)))
