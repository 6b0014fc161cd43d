"""``rocketpy admin SUBCOMMAND``: mqadmin's commands, names, options and output layout (``--json`` for scripts)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import trio

from ..codecs.bodies import MessageQueue, SubscriptionGroupConfig, TopicConfig
from ..codecs.codes import MixAll, PermName, RequestCode, version_desc
from ..codecs.javalang import java_string_hash
from ..codecs.message import MessageExt
from .admin import Admin
from .cli import DefaultsHelp, message_json
from .cli_acl import acl_credentials, add_acl_options
from .cli_tls import add_tls_options, tls_options
from .config import default_namesrv
from .errors import BadArgument, MQClientError
from .java_text import (
    decode_trace,
    fastjson_pretty,
    java_bool,
    java_hash_order,
    java_name,
    java_properties_order,
    java_props,
    java_str,
    message_ext_str,
    mq_str,
    process_queue_str,
)

Command = Callable[[Admin, argparse.Namespace, "Out"], Awaitable[int | None]]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Command]] = {}


class Out:
    """mqadmin's plain-text layout (printf columns, no markup, no box characters), or with ``--json``
    nothing but the command's result as one JSON document at the end."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.data: Any = None

    def line(self, text: str = "") -> None:
        if not self.as_json:
            sys.stdout.write(text + "\n")

    def raw(self, text: str) -> None:
        """Text without a final newline, where mqadmin prints none."""
        if not self.as_json:
            sys.stdout.write(text)

    def result(self, data: Any) -> None:
        self.data = data


def command(name: str, help_text: str, options: Callable[[argparse.ArgumentParser], None]) -> Callable[[Command],
                                                                                                      Command]:
    def deco(fn: Command) -> Command:
        COMMANDS[name] = (help_text, options, fn)
        return fn

    return deco


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    admin = sub.add_parser("admin", help="mqadmin's commands (updateTopic, topicList, clusterList, ...)")
    cmds = admin.add_subparsers(dest="admin_command", required=True, metavar="SUBCOMMAND")
    for name, (help_text, options, fn) in COMMANDS.items():
        p = cmds.add_parser(name, help=help_text, description=help_text,
                            formatter_class=DefaultsHelp)
        p.add_argument("-n", "--namesrvAddr", "--namesrv", dest="namesrv", default=None,
                       help=f"name server address list, ';' separated (default: $ROCKETMQ_NAMESRV or "
                            f"{default_namesrv()})")
        p.add_argument("--json", action="store_true", help="print the result as JSON (for scripts)")
        add_tls_options(p)
        add_acl_options(p)
        options(p)
        p.set_defaults(func=_runner(name, fn))


def _runner(name: str, fn: Command) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from .cli import run_quietly

        out = Out(args.json)
        try:
            credentials = acl_credentials(args)
        except BadArgument as exc:
            from .cli import fail

            return fail(f"admin {name}", str(exc), 2)

        async def main() -> int:
            admin = Admin(args.namesrv or default_namesrv())
            for key, value in {**tls_options(args), **credentials}.items():
                setattr(admin.client.config, key, value)
            async with admin:
                return (await fn(admin, args, out)) or 0

        status = run_quietly(f"admin {name}", main)
        if status == 0 and args.json:
            sys.stdout.write(json.dumps(out.data, ensure_ascii=False, indent=1) + "\n")
        sys.stdout.flush()
        return status

    return run


def _front(text: str | None, size: int) -> str:
    """UtilAll.frontStringAtLeast: at most ``size`` characters."""
    text = "null" if text is None else text
    return text[:size]


def _broker_or_cluster(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", help="broker address host:port")
    p.add_argument("-c", "--clusterName", dest="cluster", help="every master of this cluster")


def _need_target(args: argparse.Namespace) -> None:
    if not args.broker_addr and not args.cluster:
        raise BadArgument("give -b brokerAddr or -c clusterName")


def _ts(ms: int) -> str:
    """UtilAll.YYYY_MM_DD_HH_MM_SS (consumerProgress #LastTime), N/A when unknown."""
    if ms <= 0:
        return "N/A"
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def _ts_ms(ms: int) -> str:
    """UtilAll.timeMillisToHumanString2: yyyy-MM-dd HH:mm:ss,SSS."""
    dt = datetime.fromtimestamp(ms / 1000)
    return dt.strftime("%Y-%m-%d %H:%M:%S") + f",{ms % 1000:03d}"


TIME_FORMATS = "milliseconds, 'now' or yyyy-MM-dd#HH:mm:ss:SSS"


def parse_time(text: str, now: int | None = None) -> int:
    """mqadmin timestamps: millis, 'now' (``now`` if given, else the current time), or yyyy-MM-dd#HH:mm:ss:SSS."""
    text = text.strip()
    if text == "now":
        return time.time_ns() // 1_000_000 if now is None else now
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f").timestamp() * 1000)
    except ValueError:
        raise BadArgument(f"bad time {text!r}: use {TIME_FORMATS}") from None


def _message_queue(mq: MessageQueue) -> dict[str, Any]:
    return {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id}


# -- topics --------------------------------------------------------------------------------------------------
def topic_config_str(c: TopicConfig) -> str:
    """TopicConfig.toString."""
    return (f"TopicConfig [topicName={c.topic_name}, readQueueNums={c.read_queue_nums}, "
            f"writeQueueNums={c.write_queue_nums}, perm={PermName.perm_to_string(c.perm)}, "
            f"topicFilterType={java_name(c.topic_filter_type)}, topicSysFlag={c.topic_sys_flag}, "
            f"order={java_bool(c.order)}]")


def _topic_config_json(c: TopicConfig) -> dict[str, Any]:
    return {"topicName": c.topic_name, "readQueueNums": c.read_queue_nums, "writeQueueNums": c.write_queue_nums,
            "perm": c.perm, "topicFilterType": java_name(c.topic_filter_type), "topicSysFlag": c.topic_sys_flag,
            "order": c.order}


def _update_topic_opts(p: argparse.ArgumentParser) -> None:
    _broker_or_cluster(p)
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p.add_argument("-r", "--readQueueNums", dest="read", type=int, default=8, help="read queue count")
    p.add_argument("-w", "--writeQueueNums", dest="write", type=int, default=8, help="write queue count")
    p.add_argument("-p", "--perm", type=int, default=6, help="permission: 2 W, 4 R, 6 RW")
    p.add_argument("-o", "--order", type=lambda s: s.strip().lower() == "true", default=False,
                   help="ordered topic (true|false)")
    p.add_argument("-u", "--unit", type=_bool, default=False, help="is unit topic (true|false)")
    p.add_argument("-s", "--hasUnitSub", dest="unit_sub", type=_bool, default=False,
                   help="has unit sub (true|false)")


@command("updateTopic", "Update or create topic", _update_topic_opts)
async def update_topic(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    _need_target(args)
    sys_flag = (1 if args.unit else 0) | (2 if args.unit_sub else 0)  # TopicSysFlag: FLAG_UNIT, FLAG_UNIT_SUB
    config = TopicConfig(topic_name=args.topic, read_queue_nums=args.read, write_queue_nums=args.write,
                         perm=args.perm, order=args.order, topic_sys_flag=sys_flag)
    done = []
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        await admin.create_topic(addr, config)
        out.line(f"create topic to {addr} success.")
        done.append(addr)
    out.raw(topic_config_str(config))
    out.result({"brokers": done, "topicConfig": _topic_config_json(config)})
    return 0


def _topic_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True, help="topic name")


def _delete_topic_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-c", "--clusterName", dest="cluster", required=True, help="delete from this cluster")


@command("deleteTopic", "Delete topic from broker and NameServer.", _delete_topic_opts)
async def delete_topic(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    await admin.delete_topic(args.topic, args.cluster)
    out.line(f"delete topic [{args.topic}] from cluster [{args.cluster}] success.")
    out.line(f"delete topic [{args.topic}] from NameServer success.")
    out.result({"topic": args.topic, "cluster": args.cluster, "deleted": True})
    return 0


def _topic_list_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--clusterModel", dest="cluster_model", action="store_true",
                   help="list with cluster and consumer groups")


@command("topicList", "Fetch all topic list from name server", _topic_list_opts)
async def topic_list(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    topics = await admin.topic_list()
    if not args.cluster_model:
        for topic in topics:
            out.line(topic)
        out.result(topics)
        return 0
    info = await admin.cluster_info()
    out.line(f"{'#Cluster Name':<20}  {'#Topic':<48}  {'#Consumer Group':<48}")
    rows = []
    for topic in topics:
        if topic.startswith((MixAll.RETRY_GROUP_TOPIC_PREFIX, MixAll.DLQ_GROUP_TOPIC_PREFIX)):
            continue
        cluster, groups = "", [""]
        try:
            route = await admin.topic_route(topic)
            names = {bd.broker_name for bd in route.broker_datas or []}
            cluster = next((c for c, bs in (info.cluster_addr_table or {}).items() if names & set(bs)), "")
            addr = next((a for bd in route.broker_datas or [] for k, a in (bd.broker_addrs or {}).items()
                         if int(k) == 0), None)
            if addr:
                groups = sorted(await admin.topic_consumed_by(addr, topic)) or [""]
        except MQClientError:
            pass  # as mqadmin: a topic it cannot look into is listed with blanks
        for group in groups:
            out.line(f"{_front(cluster, 20):<20}  {_front(topic, 64):<64}  {_front(group, 64):<64}")
            rows.append({"cluster": cluster, "topic": topic, "consumerGroup": group})
    out.result(rows)
    return 0


def _topic_route_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-l", "--list", dest="as_list", action="store_true", help="a table instead of JSON")


def _route_json(route: Any) -> dict[str, Any]:
    """Strict JSON (fastjson writes the brokerAddrs keys unquoted)."""
    return {
        "orderTopicConf": route.order_topic_conf,
        "queueDatas": [{"brokerName": q.broker_name, "readQueueNums": q.read_queue_nums,
                        "writeQueueNums": q.write_queue_nums, "perm": q.perm, "topicSysFlag": q.topic_sys_flag}
                       for q in route.queue_datas or []],
        "brokerDatas": [{"cluster": b.cluster, "brokerName": b.broker_name,
                         "brokerAddrs": {str(k): v for k, v in (b.broker_addrs or {}).items()}}
                        for b in route.broker_datas or []],
    }


@command("topicRoute", "Examine topic route info", _topic_route_opts)
async def topic_route(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    route = await admin.topic_route(args.topic)
    out.result(_route_json(route))
    if not args.as_list:
        out.line(route.encode(pretty=True).decode())
        return 0
    fmt = "{:<45} {:<32} {:<50} {:<10} {:<11} {:<5}"
    out.line(fmt.format("#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm"))
    qds = {q.broker_name: q for q in route.queue_datas or []}
    total_r = total_w = 0
    for bd in sorted(route.broker_datas or [], key=lambda b: b.broker_name or ""):
        q = qds.get(bd.broker_name)
        r, w, perm = (q.read_queue_nums, q.write_queue_nums, q.perm) if q else (0, 0, 0)
        total_r, total_w = total_r + r, total_w + w
        addrs = "{" + ", ".join(f"{k}={v}" for k, v in sorted((bd.broker_addrs or {}).items(),
                                                               key=lambda kv: int(kv[0]))) + "}"
        out.line(fmt.format(bd.cluster, bd.broker_name, addrs, r, w, perm))
    out.line("-" * 158)
    out.line(fmt.format("Total:", len(qds), "", total_r, total_w, ""))
    return 0


@command("topicStatus", "Examine topic Status info", _topic_opt)
async def topic_status(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    stats = await admin.topic_stats(args.topic)
    out.line(f"{'#Broker Name':<32}  {'#QID':<4}  {'#Min Offset':<20}  {'#Max Offset':<20}    #Last Updated")
    rows = []
    for mq in sorted(stats.offset_table):
        o = stats.offset_table[mq]
        when = _ts_ms(o.last_update_timestamp) if o.last_update_timestamp > 0 else ""
        out.line(f"{_front(mq.broker_name, 32):<32}  {mq.queue_id:<4}  {o.min_offset:<20}  {o.max_offset:<20}    "
                 f"{when}")
        rows.append({**_message_queue(mq), "minOffset": o.min_offset, "maxOffset": o.max_offset,
                     "lastUpdateTimestamp": o.last_update_timestamp})
    out.result(rows)
    return 0


@command("topicClusterList", "get cluster info for topic", _topic_opt)
async def topic_cluster_list(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    route = await admin.topic_route(args.topic)
    names = {bd.broker_name for bd in route.broker_datas or []}
    info = await admin.cluster_info()
    clusters = [c for c, brokers in (info.cluster_addr_table or {}).items() if names & set(brokers)]
    for c in clusters:
        out.line(c)
    out.result(clusters)
    return 0


def _update_perm_opts(p: argparse.ArgumentParser) -> None:
    _broker_or_cluster(p)
    _topic_opt(p)
    p.add_argument("-p", "--perm", type=int, required=True, help="permission: 2 W, 4 R, 6 RW")


@command("updateTopicPerm", "Update topic perm", _update_perm_opts)
async def update_topic_perm(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    _need_target(args)
    route = await admin.topic_route(args.topic)
    qds = {q.broker_name: q for q in route.queue_datas or []}
    if not qds:
        raise MQClientError(f"topic {args.topic} has no queues in the NameServer")
    first = (route.queue_datas or [])[0]
    config = TopicConfig(topic_name=args.topic, read_queue_nums=first.read_queue_nums,
                         write_queue_nums=first.write_queue_nums, perm=args.perm,
                         topic_sys_flag=first.topic_sys_flag or 0)
    changed = []
    if args.broker_addr:
        name = next((bd.broker_name for bd in route.broker_datas or []
                     for k, a in (bd.broker_addrs or {}).items() if a == args.broker_addr and int(k) == 0), None)
        if name is None:
            raise MQClientError(f"updateTopicPerm: {args.broker_addr} is no master broker of topic {args.topic}")
        old = qds[name].perm if name in qds else 0
        if old == args.perm:
            out.line("new perm equals to the old one!")
            out.result({"changed": []})
            return 0
        await admin.create_topic(args.broker_addr, config)
        out.line(f"update topic perm from {old} to {args.perm} in {args.broker_addr} success.")
        out.line(f"{topic_config_str(config)}.")
        changed.append({"broker": args.broker_addr, "oldPerm": old, "perm": args.perm})
    else:
        for addr in await admin.master_addrs(args.cluster, None):
            await admin.create_topic(addr, config)
            out.line(f"update topic perm from {first.perm} to {args.perm} in {addr} success.")
            changed.append({"broker": addr, "oldPerm": first.perm, "perm": args.perm})
    out.result({"changed": changed, "topicConfig": _topic_config_json(config)})
    return 0


# -- cluster and brokers --------------------------------------------------------------------------------------
def _cluster_list_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-m", "--moreStats", dest="more", action="store_true", help="message totals yesterday/today")
    p.add_argument("-c", "--clusterName", dest="cluster", help="only this cluster")
    p.add_argument("-i", "--interval", type=float, help="print again every this many seconds, until Ctrl-C")


def _java_long(text: str | None) -> int:
    if text is None:
        raise ValueError("absent")
    return int(text)


def cluster_rows(info: Any, cluster: str | None = None) -> list[tuple[str, str, int, str]]:
    """(cluster, broker name, broker id, address) in mqadmin's order: broker names sorted, then each
    name's addresses by broker id (0 is the master, the others its slaves: the only role clusterList shows)."""
    rows = []
    for name_of_cluster in sorted(info.cluster_addr_table or {}):
        if cluster and name_of_cluster != cluster:
            continue
        for name in sorted((info.cluster_addr_table or {})[name_of_cluster]):
            bd = (info.broker_addr_table or {}).get(name)
            for bid, addr in sorted(((int(k), v) for k, v in (bd.broker_addrs or {}).items()) if bd else []):
                rows.append((name_of_cluster, name, bid, addr))
    return rows


def _tps(text: str | None) -> float:
    return float((text or "0").split(" ")[0])


@command("clusterList", "List cluster infos", _cluster_list_opts)
async def cluster_list(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    while True:
        await _cluster_list_once(admin, args, out)
        if not args.interval:
            return 0
        sys.stdout.flush()
        await trio.sleep(args.interval)


async def _cluster_list_once(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    info = await admin.cluster_info()
    rows = cluster_rows(info, args.cluster)
    result = []
    if args.more:
        out.line(f"{'#Cluster Name':<16}  {'#Broker Name':<32} {'#InTotalYest':>14} {'#OutTotalYest':>14} "
                 f"{'#InTotalToday':>14} {'#OutTotalToday':>14}")
        for cluster, name, _bid, addr in rows:  # every broker, slaves too, as mqadmin
            totals = [0, 0, 0, 0]
            try:
                rt = await admin.broker_runtime_info(addr)
                put = [_java_long(rt.get(k)) for k in
                       ("msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning", "msgPutTotalTodayNow")]
                get = [_java_long(rt.get(k)) for k in
                       ("msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning", "msgGetTotalTodayNow")]
                totals = [put[1] - put[0], get[1] - get[0], put[2] - put[1], get[2] - get[1]]
            except (MQClientError, ValueError):
                pass  # mqadmin prints zeros for a broker it cannot read
            out.line(f"{cluster:<16}  {name:<32} {totals[0]:>14} {totals[1]:>14} {totals[2]:>14} {totals[3]:>14}")
            result.append({"cluster": cluster, "brokerName": name, "inTotalYest": totals[0],
                           "outTotalYest": totals[1], "inTotalToday": totals[2], "outTotalToday": totals[3]})
        out.result(result)
        return 0
    fmt = "{:<16}  {:<22}  {:<4}  {:<22} {:<16} {:>19} {:>19} {:>10} {:>5} {:>6}"
    out.line(fmt.format("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
                        "#OutTPS(LOAD)", "#PCWait(ms)", "#Hour", "#SPACE"))
    now = time.time_ns() // 1_000_000
    for cluster, name, bid, addr in rows:
        tps_in = tps_out = hour = space = 0.0
        version = send_q = pull_q = send_wait = pull_wait = pc_wait = ""
        try:
            rt = await admin.broker_runtime_info(addr)
            send_q, pull_q = java_str(rt.get("sendThreadPoolQueueSize")), java_str(rt.get("pullThreadPoolQueueSize"))
            send_wait = java_str(rt.get("sendThreadPoolQueueHeadWaitTimeMills"))
            pull_wait = java_str(rt.get("pullThreadPoolQueueHeadWaitTimeMills"))
            pc_wait = java_str(rt.get("pageCacheLockTimeMills"))
            version = java_str(rt.get("brokerVersionDesc"))
            earliest, ratio = rt.get("earliestMessageTimeStamp"), rt.get("commitLogDiskRatio")
            if earliest:
                hour = (now - int(earliest)) / 1000.0 / 60.0 / 60.0
            if ratio:
                space = float(ratio)
            tps_in, tps_out = _tps(rt.get("putTps")), _tps(rt.get("getTransferedTps"))
        except (MQClientError, ValueError):
            pass  # mqadmin prints the row with what it has
        out.line(fmt.format(cluster, name, bid, addr, version, f"{tps_in:9.2f}({send_q},{send_wait}ms)",
                            f"{tps_out:9.2f}({pull_q},{pull_wait}ms)", pc_wait, f"{hour:2.2f}", f"{space:.4f}"))
        result.append({"cluster": cluster, "brokerName": name, "brokerId": bid, "addr": addr, "version": version,
                       "inTps": tps_in, "outTps": tps_out, "pageCacheLockTimeMills": pc_wait, "hour": hour,
                       "space": space})
    out.result(result)
    return 0


@command("brokerStatus", "Fetch broker runtime status data", _broker_or_cluster)
async def broker_status(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    _need_target(args)
    result = {}
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        table = await admin.broker_runtime_info(addr)
        for k in sorted(table):
            out.line(f"{addr:<24} {k:<32}: {table[k]}" if args.cluster else f"{k:<32}: {table[k]}")
        result[addr] = table
    out.result(result)
    return 0


@command("getBrokerConfig", "Get broker config by cluster or special broker!", _broker_or_cluster)
async def get_broker_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    _need_target(args)
    result = {}
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        out.line(f"============{'Master: ' if args.cluster else ''}{addr}============")
        config = await admin.broker_config(addr)
        for k in java_properties_order(list(config)):
            out.line(f"{k:<50}=  {config[k]}")
        out.line()
        result[addr] = config
    out.result(result)
    return 0


def _kv_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-k", "--key", required=True, help="config key")
    p.add_argument("-v", "--value", required=True, help="config value")


def _update_broker_config_opts(p: argparse.ArgumentParser) -> None:
    _broker_or_cluster(p)
    _kv_opts(p)
    p.add_argument("--adminCredential", dest="credential", default=os.environ.get("ROCKETPY_ADMIN_CREDENTIAL"),
                   help="a rocketpy broker's adminCredential (default: $ROCKETPY_ADMIN_CREDENTIAL)")


@command("updateBrokerConfig", "Update broker's config", _update_broker_config_opts)
async def update_broker_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    _need_target(args)
    done = []
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        await admin.update_broker_config(addr, {args.key.strip(): args.value.strip()}, args.credential)
        out.line(f"update broker config success, {addr}")
        done.append(addr)
    out.result({"brokers": done, args.key.strip(): args.value.strip()})
    return 0


def _namesrvs(args: argparse.Namespace) -> list[str]:
    return [a.strip() for a in (args.namesrv or default_namesrv()).split(";") if a.strip()]


@command("getNamesrvConfig", "Get configs of name server.", lambda p: None)
async def get_namesrv_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    result = {}
    for addr in _namesrvs(args):
        config = await admin.namesrv_config(addr)
        out.line(f"============{addr}============")
        for k in java_properties_order(list(config)):
            out.line(f"{k:<50}=  {config[k]}")
        result[addr] = config
    out.result(result)
    return 0


@command("updateNamesrvConfig", "Update configs of name server.", _kv_opts)
async def update_namesrv_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    servers = _namesrvs(args)
    key, value = args.key.strip(), args.value.strip()
    for addr in servers:
        await admin.update_namesrv_config(addr, {key: value})
    out.line(f"update name server config success!{'[' + ', '.join(servers) + ']'}")
    out.line(f"{key} : {value}")
    out.result({"nameServers": servers, key: value})
    return 0


def _broker_name_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerName", dest="broker_name", required=True, help="broker name")


async def _write_perm(admin: Admin, args: argparse.Namespace, out: Out, wipe: bool) -> int:
    result = {}
    for addr in _namesrvs(args):
        count = await admin.write_perm_of_broker(addr, args.broker_name, wipe)
        out.line(f"{'wipe' if wipe else 'add'} write perm of broker[{args.broker_name}] in name server[{addr}] "
                 f"OK, {count}")
        result[addr] = count
    out.result(result)
    return 0


@command("wipeWritePerm", "Wipe write perm of broker in all name server you defined in the -n param",
         _broker_name_opt)
async def wipe_write_perm(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    return await _write_perm(admin, args, out, True)


@command("addWritePerm", "Add write perm of broker in all name server you defined in the -n param",
         _broker_name_opt)
async def add_write_perm(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    return await _write_perm(admin, args, out, False)


# -- groups -----------------------------------------------------------------------------------------------------
def _bool(text: str) -> bool:
    return text.strip().lower() == "true"


def _update_group_opts(p: argparse.ArgumentParser) -> None:
    _broker_or_cluster(p)
    p.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group name")
    p.add_argument("-s", "--consumeEnable", dest="consume_enable", type=_bool, default=True,
                   help="consume enabled (true|false)")
    p.add_argument("-m", "--consumeFromMinEnable", dest="from_min", type=_bool, default=False,
                   help="a new group starts from the minimum offset (true|false)")
    p.add_argument("-d", "--consumeBroadcastEnable", dest="broadcast", type=_bool, default=False,
                   help="broadcast consumption (true|false)")
    p.add_argument("-q", "--retryQueueNums", dest="retry_queues", type=int, default=1, help="retry queue count")
    p.add_argument("-r", "--retryMaxTimes", dest="retry_max", type=int, default=16, help="retries before the DLQ")
    p.add_argument("-i", "--brokerId", dest="broker_id", type=int, default=0, help="consume from this broker id")
    p.add_argument("-w", "--whichBrokerWhenConsumeSlowly", dest="slow_broker", type=int, default=1,
                   help="broker id when consuming slowly")
    p.add_argument("-a", "--notifyConsumerIdsChanged", dest="notify", type=_bool, default=True,
                   help="notify consumers when the group changes (true|false)")


def group_config_str(c: SubscriptionGroupConfig) -> str:
    """SubscriptionGroupConfig.toString."""
    return (f"SubscriptionGroupConfig [groupName={c.group_name}, consumeEnable={java_bool(c.consume_enable)}, "
            f"consumeFromMinEnable={java_bool(c.consume_from_min_enable)}, "
            f"consumeBroadcastEnable={java_bool(c.consume_broadcast_enable)}, retryQueueNums={c.retry_queue_nums}, "
            f"retryMaxTimes={c.retry_max_times}, brokerId={c.broker_id}, "
            f"whichBrokerWhenConsumeSlowly={c.which_broker_when_consume_slowly}, "
            f"notifyConsumerIdsChangedEnable={java_bool(c.notify_consumer_ids_changed_enable)}]")


@command("updateSubGroup", "Update or create subscription group", _update_group_opts)
async def update_sub_group(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    _need_target(args)
    config = SubscriptionGroupConfig(
        group_name=args.group, consume_enable=args.consume_enable, consume_from_min_enable=args.from_min,
        consume_broadcast_enable=args.broadcast, retry_queue_nums=args.retry_queues, retry_max_times=args.retry_max,
        broker_id=args.broker_id, which_broker_when_consume_slowly=args.slow_broker,
        notify_consumer_ids_changed_enable=args.notify)
    done = []
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        await admin.update_sub_group(addr, config)
        out.line(f"create subscription group to {addr} success.")
        done.append(addr)
    out.raw(group_config_str(config))
    out.result({"brokers": done, "subscriptionGroupConfig": json.loads(config.encode())})
    return 0


def _delete_group_opts(p: argparse.ArgumentParser) -> None:
    _broker_or_cluster(p)
    p.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group name")
    p.add_argument("-r", "--removeOffset", dest="remove_offset", type=_bool, default=False,
                   help="remove the group's offsets too (true|false)")


@command("deleteSubGroup", "Delete subscription group from broker.", _delete_group_opts)
async def delete_sub_group(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    _need_target(args)
    done = []
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        await admin.delete_sub_group(addr, args.group, args.remove_offset)
        where = f" in cluster [{args.cluster}]" if args.cluster else ""
        out.line(f"delete subscription group [{args.group}] from broker [{addr}]{where} success.")
        done.append(addr)
    out.result({"group": args.group, "brokers": done})
    return 0


def _progress_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--groupName", dest="group", help="consumer group (default: every group)")
    p.add_argument("-t", "--topicName", dest="topic", help="only this topic")
    p.add_argument("-s", "--showClientIP", dest="show_ip", type=_bool, default=False,
                   help="show the client IP of each queue (true|false)")


def _offset_rows(stats: Any) -> list[tuple[MessageQueue, Any]]:
    return [(mq, stats.offset_table[mq]) for mq in sorted(stats.offset_table)]


@command("consumerProgress", "Query consumers's progress, speed", _progress_opts)
async def consumer_progress(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    if not args.group:
        return await _all_groups_progress(admin, out)
    stats = await admin.consume_stats(args.group, args.topic)
    out.line(f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Broker Offset':<20}  {'#Consumer Offset':<20}  "
             f"{'#Diff':<20}  #LastTime")
    total, rows = 0, []
    for mq, w in _offset_rows(stats):
        diff = w.broker_offset - w.consumer_offset
        total += diff
        out.line(f"{_front(mq.topic, 64):<64}  {_front(mq.broker_name, 32):<32}  {mq.queue_id:<4}  "
                 f"{w.broker_offset:<20}  {w.consumer_offset:<20}  {diff:<20}  {_ts(w.last_timestamp)}")
        rows.append({**_message_queue(mq), "brokerOffset": w.broker_offset, "consumerOffset": w.consumer_offset,
                     "diff": diff, "lastTimestamp": w.last_timestamp})
    out.line()
    out.line(f"Consume TPS: {stats.consume_tps:.2f}")
    out.line(f"Diff Total: {total}")
    out.result({"queues": rows, "consumeTps": stats.consume_tps, "diffTotal": total})
    return 0


async def _all_groups_progress(admin: Admin, out: Out) -> int:
    out.line(f"{'#Group':<64}  {'#Count':<6}  {'#Version':<24} {'#Type':<5}  {'#Model':<14}  {'#TPS':<7}  #Diff Total")
    rows = []
    for topic in await admin.topic_list():
        if not topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX):
            continue
        group = topic[len(MixAll.RETRY_GROUP_TOPIC_PREFIX):]
        tps, diff, count, version, ctype, model = 0, 0, 0, "OFFLINE", "", ""
        try:
            stats = await admin.consume_stats(group)
            tps, diff = int(stats.consume_tps), stats.total_diff()
        except MQClientError:
            pass
        try:
            cc = await admin.consumer_connection(group)
            count = len(cc.connection_set)
            if count:
                version = version_desc(min(c.version for c in cc.connection_set))
            ctype = {"CONSUME_ACTIVELY": "PULL", "CONSUME_PASSIVELY": "PUSH"}.get(java_name(cc.consume_type), "")
            model = java_name(cc.message_model) if cc.message_model is not None else ""
        except MQClientError:
            pass
        out.line(f"{_front(group, 64):<64}  {count:<6}  {version:<24} {ctype:<5}  {model:<14}  {tps:<7}  {diff}")
        rows.append({"group": group, "count": count, "version": version, "type": ctype, "model": model,
                     "tps": tps, "diffTotal": diff})
    out.result(rows)
    return 0


def _group_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--consumerGroup", dest="group", required=True, help="consumer group name")
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", help="ask this broker (default: the group's)")


@command("consumerConnection", "Query consumer's socket connection, client version and subscription", _group_opt)
async def consumer_connection(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    cc = await admin.consumer_connection(args.group, args.broker_addr)
    out.line(f"{'#ClientId':<36} {'#ClientAddr':<22} {'#Language':<10} #Version")
    for c in cc.connection_set:
        out.line(f"{java_str(c.client_id):<36} {java_str(c.client_addr):<22} {java_name(c.language):<10} "
                 f"{version_desc(c.version)}")
    out.line()
    out.line("Below is subscription:")
    out.line(f"{'#Topic':<20} #SubExpression")
    for sd in cc.subscription_table.values():
        out.line(f"{java_str(sd.topic):<20} {java_str(sd.sub_string)}")
    out.line()
    out.line(f"ConsumeType: {java_name(cc.consume_type)}")
    out.line(f"MessageModel: {java_name(cc.message_model)}")
    out.line(f"ConsumeFromWhere: {java_name(cc.consume_from_where)}")
    out.result({
        "connections": [_connection_json(c) for c in cc.connection_set],
        "subscriptions": {t: sd.sub_string for t, sd in cc.subscription_table.items()},
        "consumeType": java_name(cc.consume_type), "messageModel": java_name(cc.message_model),
        "consumeFromWhere": java_name(cc.consume_from_where),
    })
    return 0


def _connection_json(c: Any) -> dict[str, Any]:
    return {"clientId": c.client_id, "clientAddr": c.client_addr, "language": java_name(c.language),
            "version": version_desc(c.version)}


def _producer_conn_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--producerGroup", dest="group", required=True, help="producer group name")
    _topic_opt(p)


@command("producerConnection", "Query producer's socket connection and client version", _producer_conn_opts)
async def producer_connection(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    pc = await admin.producer_connection(args.group, args.topic)
    for i, c in enumerate(pc.connection_set, 1):
        out.line(f"{i:04d}  {java_str(c.client_id):<32} {java_str(c.client_addr):<22} {java_name(c.language):<8} "
                 f"{version_desc(c.version)}")
    out.result([_connection_json(c) for c in pc.connection_set])
    return 0


def _broker_consume_stats_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", required=True, help="broker address host:port")
    p.add_argument("-o", "--order", type=_bool, default=False, help="ordered groups only (true|false)")
    p.add_argument("-l", "--level", type=int, default=0, help="only queues with at least this lag")
    p.add_argument("-t", "--timeoutMillis", dest="timeout_ms", type=int, default=50000,
                   help="request timeout in milliseconds")


@command("brokerConsumeStats", "Fetch broker consume stats data", _broker_consume_stats_opts)
async def broker_consume_stats(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    admin.timeout = args.timeout_ms / 1000
    stats_list = await admin.broker_consume_stats(args.broker_addr, args.order)
    out.line(f"{'#Topic':<64}  {'#Group':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Broker Offset':<20}  "
             f"{'#Consumer Offset':<20}  {'#Diff':<20}  #LastTime")
    rows = []
    for by_group in stats_list.consume_stats_list:
        for group, stats_of_topics in by_group.items():
            for stats in stats_of_topics:
                for mq, w in _offset_rows(stats):
                    diff = w.broker_offset - w.consumer_offset
                    if diff < args.level or w.last_timestamp <= 0:
                        continue
                    out.line(f"{_front(mq.topic, 64):<64}  {group:<64}  {_front(mq.broker_name, 32):<32}  "
                             f"{mq.queue_id:<4}  {w.broker_offset:<20}  {w.consumer_offset:<20}  {diff:<20}  "
                             f"{_ts(w.last_timestamp)}")
                    rows.append({**_message_queue(mq), "group": group, "brokerOffset": w.broker_offset,
                                 "consumerOffset": w.consumer_offset, "diff": diff,
                                 "lastTimestamp": w.last_timestamp})
    out.line()
    out.line(f"Diff Total: {stats_list.total_diff}")
    out.result({"queues": rows, "diffTotal": stats_list.total_diff})
    return 0


def _clone_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-s", "--srcGroup", dest="src", required=True, help="copy from this group")
    p.add_argument("-d", "--destGroup", dest="dest", required=True, help="copy to this group")
    _topic_opt(p)
    p.add_argument("-o", "--offline", type=_bool, default=False, help="the source group is offline (true|false)")


@command("cloneGroupOffset", "clone offset from other group.", _clone_opts)
async def clone_group_offset(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    route = await admin.topic_route(args.topic)
    done = []
    for bd in route.broker_datas or []:
        addr = next((a for k, a in (bd.broker_addrs or {}).items() if int(k) == 0), None)
        if addr:
            await admin.clone_group_offset(addr, args.src, args.dest, args.topic, args.offline)
            done.append(addr)
    out.raw(f"clone group offset success. srcGroup[{args.src}], destGroup=[{args.dest}], topic[{args.topic}]")
    out.result({"srcGroup": args.src, "destGroup": args.dest, "topic": args.topic, "brokers": done})
    return 0


# -- messages -------------------------------------------------------------------------------------------------------
#: where mqadmin writes a viewed message's body (MessageClientIDSetter: the UNIQ_KEY names the file)
BODY_DIR = "/tmp/rocketmq/msgbodys"


def print_message(out: Out, msg: MessageExt, offset_id: bool = True) -> dict[str, Any]:
    """The label block of queryMsgById/queryMsgByUniqueKey/queryMsgByOffset; the body goes to a file."""
    body = msg.decompressed_body()
    path = os.path.join(BODY_DIR, msg.uniq_key or msg.msg_id)
    try:
        os.makedirs(BODY_DIR, exist_ok=True)
        with open(path, "wb") as f:
            f.write(body)
    except OSError:
        path = "(not written)"
    rows: list[tuple[str, object]] = [("OffsetID:", msg.msg_id)] if offset_id else []
    rows += [
        ("Topic:", msg.topic), ("Tags:", f"[{java_str(msg.tags)}]"), ("Keys:", f"[{java_str(msg.keys_string)}]"),
        ("Queue ID:", msg.queue_id), ("Queue Offset:", msg.queue_offset),
        ("CommitLog Offset:", msg.commit_log_offset), ("Reconsume Times:", msg.reconsume_times),
        ("Born Timestamp:", _ts_ms(msg.born_timestamp)), ("Store Timestamp:", _ts_ms(msg.store_timestamp)),
        ("Born Host:", msg.born_host), ("Store Host:", msg.store_host), ("System Flag:", msg.sys_flag),
        ("Properties:", java_props(dict(msg.properties))), ("Message Body Path:", path),
    ]
    for label, value in rows:
        out.line(f"{label:<20} {value}")
    data = message_json(msg)
    data.update({"offsetMsgId": msg.msg_id, "commitLogOffset": msg.commit_log_offset,
                 "bornTimestamp": msg.born_timestamp, "storeTimestamp": msg.store_timestamp,
                 "bornHost": msg.born_host, "storeHost": msg.store_host, "sysFlag": msg.sys_flag,
                 "bodyPath": path})
    return data


async def show_message(admin: Admin, out: Out, msg: MessageExt, offset_id: bool = True) -> dict[str, Any]:
    """The label block, then what each consumer group did with the message (QueryMsgByIdSubCommand.printMsg)."""
    data = print_message(out, msg, offset_id)
    try:
        tracks = await message_tracks(admin, msg)
    except MQClientError as exc:  # the message is shown; only what consumers did with it is unknown
        print(f"rocketpy admin: cannot tell which groups consumed it: {exc}", file=sys.stderr)
        return data
    if not tracks:
        out.raw("\n\nWARN: No Consumer")
    else:
        out.raw("\n\n" + "".join(f"MessageTrack [consumerGroup={g}, trackType={t}, exceptionDesc={java_str(d)}]"
                                  for g, t, d in tracks))
    data["tracks"] = [{"consumerGroup": g, "trackType": t, "exceptionDesc": d} for g, t, d in tracks]
    return data


async def message_tracks(admin: Admin, msg: MessageExt) -> list[tuple[str, str, str | None]]:
    """DefaultMQAdminExtImpl.messageTrackDetail: (group, trackType, exceptionDesc) per group of the topic."""
    from .errors import MQBrokerError

    route = await admin.topic_route(msg.topic)
    master = next((a for bd in route.broker_datas or [] for k, a in (bd.broker_addrs or {}).items() if int(k) == 0),
                  None)
    groups = await admin.topic_consumed_by(master, msg.topic) if master else []
    tracks: list[tuple[str, str, str | None]] = []
    for group in groups:
        try:
            cc = await admin.consumer_connection(group)
        except MQBrokerError as exc:
            kind = "NOT_ONLINE" if exc.response_code == 206 else "UNKNOWN"
            tracks.append((group, kind, f"CODE:{exc.response_code} DESC:{exc.remark}"))
            continue
        except MQClientError as exc:
            tracks.append((group, "UNKNOWN", str(exc)))
            continue
        if java_name(cc.consume_type) == "CONSUME_ACTIVELY":
            tracks.append((group, "PULL", None))
            continue
        try:
            consumed = await _consumed(admin, msg, group)
        except MQClientError as exc:
            tracks.append((group, "UNKNOWN", str(exc)))
            continue
        kind = "NOT_CONSUME_YET"
        if consumed:
            kind = "CONSUMED"
            sd = cc.subscription_table.get(msg.topic)
            if sd is not None:
                tags = {t.strip() for t in (sd.sub_string or "*").split("||")}
                if not (msg.tags in tags or "*" in tags or not tags):
                    kind = "CONSUMED_BUT_FILTERED"
        tracks.append((group, kind, None))
    return tracks


async def _consumed(admin: Admin, msg: MessageExt, group: str) -> bool:
    """Has ``group`` committed past the message (on the broker that stored it)?"""
    stats = await admin.consume_stats(group)
    info = await admin.cluster_info()
    for q, w in stats.offset_table.items():
        if q.topic != msg.topic or q.queue_id != msg.queue_id:
            continue
        bd = (info.broker_addr_table or {}).get(q.broker_name or "")
        addrs = {int(k): a for k, a in ((bd.broker_addrs or {}) if bd else {}).items()}
        if addrs.get(0) == msg.store_host and w.consumer_offset > msg.queue_offset:
            return True
    return False


def _query_id_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--msgId", dest="msg_id", required=True, help="Message Id (offset ids, ',' separated)")
    p.add_argument("-t", "--topic", help="needed to look up a client (UNIQ_KEY) id")
    p.add_argument("-g", "--consumerGroup", dest="group", help="consumer group name (with -d: the client consumes "
                   "the message again)")
    p.add_argument("-d", "--clientId", dest="client_id", help="The consumer's client id (with -g)")
    p.add_argument("-s", "--sendMessage", dest="resend", default=None,
                   help="resend message: 'true' sends each message again to its topic (default: false)")
    p.add_argument("-u", "--unitName", dest="unit_name", default=None, help="unit name of the resending producer")


def consume_directly_str(r: Any) -> str:
    """ConsumeMessageDirectlyResult.toString."""
    return (f"ConsumeMessageDirectlyResult [order={java_bool(r.order)}, autoCommit={java_bool(r.auto_commit)}, "
            f"consumeResult={java_name(r.consume_result) if r.consume_result is not None else 'null'}, "
            f"remark={java_str(r.remark)}, spentTimeMills={r.spent_time_mills}]")


def _direct_json(r: Any) -> dict[str, Any]:
    return {"order": r.order, "autoCommit": r.auto_commit,
            "consumeResult": java_name(r.consume_result) if r.consume_result is not None else None,
            "remark": r.remark, "spentTimeMills": r.spent_time_mills}


async def _consume_directly(admin: Admin, out: Out, ids: list[str], group: str, client_id: str,
                            topic: str | None) -> int:
    """-g/-d: each message consumed once more by that client; a failure is one line on stderr (mqadmin prints
    its stack trace) and the others still go."""
    from .cli import fail

    status, results = 0, []
    for msg_id in ids:
        try:
            r = await admin.consume_message_directly(group, client_id, msg_id, topic)
        except MQClientError as exc:
            status = fail("admin queryMsgById", f"{msg_id}: {exc}")
            continue
        out.raw(consume_directly_str(r))
        results.append({"msgId": msg_id, **_direct_json(r)})
    out.result(results)
    return status


async def _resend(admin: Admin, out: Out, ids: list[str], unit_name: str | None) -> int:
    """-s true: each message sent again as it is (topic, body, properties) by producer group ReSendMsgById."""
    import dataclasses

    from ..codecs.message import Message
    from .cli import fail
    from .producer import Producer

    client = admin.client
    if unit_name:
        from .instance import ClientInstance

        client = ClientInstance(dataclasses.replace(admin.client.config, unit_name=unit_name))
        await client.start()
    status, results = 0, []
    try:
        async with Producer("ReSendMsgById", client=client) as producer:
            for msg_id in ids:
                try:
                    msg = await admin.view_message(msg_id)
                except MQClientError as exc:
                    status = fail("admin queryMsgById", f"{msg_id}: {exc}")
                    continue
                out.raw(f"prepare resend msg. originalMsgId={msg_id}")
                again = Message(topic=msg.topic, body=msg.decompressed_body(), flag=msg.flag,
                                properties=dict(msg.properties))
                try:
                    result = await producer.send(again)
                except MQClientError as exc:
                    status = fail("admin queryMsgById", f"{msg_id}: {exc}")
                    continue
                out.raw(send_result_str(result))
                results.append({"originalMsgId": msg_id, **result.to_dict()})
    finally:
        if client is not admin.client:
            await client.aclose()
    out.result(results)
    return status


@command("queryMsgById", "Query Message by Id", _query_id_opts)
async def query_msg_by_id(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    ids = [i.strip() for i in args.msg_id.strip().split(",") if i.strip()]
    if args.group and args.client_id:
        return await _consume_directly(admin, out, ids, args.group.strip(), args.client_id.strip(), args.topic)
    if args.resend is not None:
        if args.resend.strip().lower() == "true":  # Boolean.parseBoolean: anything else resends nothing
            return await _resend(admin, out, ids, args.unit_name.strip() if args.unit_name else None)
        out.result([])
        return 0
    shown = [await show_message(admin, out, await admin.view_message(i, args.topic)) for i in ids]
    out.result(shown[0] if len(shown) == 1 else shown)
    return 0


def _query_unique_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--msgId", dest="msg_id", required=True, help="client message id (UNIQ_KEY)")
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p.add_argument("-g", "--consumerGroup", dest="group", help="consumer group name (with -d: the client consumes "
                   "the message again)")
    p.add_argument("-d", "--clientId", dest="client_id", help="The consumer's client id (with -g)")
    p.add_argument("-a", "--showAll", dest="show_all", action="store_true",
                   help="Print all message, the limit is 32 (default: the first stored)")


@command("queryMsgByUniqueKey", "Query Message by Unique key", _query_unique_opts)
async def query_msg_by_unique_key(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    if args.group and args.client_id:
        r = await admin.consume_message_directly(args.group.strip(), args.client_id.strip(), args.msg_id.strip(),
                                                 args.topic.strip())
        out.raw(consume_directly_str(r))
        out.result(_direct_json(r))
        return 0
    if args.show_all:  # every message with this id (a resent one is stored again), oldest first
        found = await admin.query_messages(args.topic.strip(), args.msg_id.strip(), 32, 0, 2**63 - 1, unique=True)
        shown = [await show_message(admin, out, m, offset_id=False)
                 for m in sorted(found, key=lambda m: m.store_timestamp)]
        out.result(shown)
        return 0
    msg = await admin.view_message(args.msg_id.strip(), args.topic)
    out.result(await show_message(admin, out, msg, offset_id=False))
    return 0


def _query_key_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-k", "--msgKey", dest="key", required=True, help="message key")
    p.add_argument("-b", "--beginTimestamp", dest="begin", default="0", help=f"from ({TIME_FORMATS})")
    p.add_argument("-e", "--endTimestamp", dest="end", default=str(2**63 - 1), help=f"to ({TIME_FORMATS})")
    p.add_argument("-c", "--maxNum", dest="max_num", type=int, default=64, help="at most this many messages")


@command("queryMsgByKey", "Query Message by Key", _query_key_opts)
async def query_msg_by_key(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    begin, end = parse_time(args.begin), parse_time(args.end)
    msgs = await admin.query_messages(args.topic, args.key, args.max_num, begin, end)
    out.line(f"{'#Message ID':<50} {'#QID':>4} {'#Offset':>40}")
    for m in msgs:
        out.line(f"{java_str(m.client_msg_id):<50} {m.queue_id:>4} {m.queue_offset:>40}")
    out.result([{"msgId": m.client_msg_id, "queueId": m.queue_id, "queueOffset": m.queue_offset} for m in msgs])
    return 0


def _query_offset_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-b", "--brokerName", dest="broker", required=True, help="broker name")
    p.add_argument("-i", "--queueId", dest="queue_id", type=int, required=True, help="queue id")
    p.add_argument("-o", "--offset", type=int, required=True, help="queue offset")


@command("queryMsgByOffset", "Query Message by offset", _query_offset_opts)
async def query_msg_by_offset(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    mq = MessageQueue(topic=args.topic, broker_name=args.broker, queue_id=args.queue_id)
    msgs, _ = await admin.pull(mq, args.offset, 1)
    if not msgs:
        raise MQClientError(f"no message at offset {args.offset} of {args.topic}/{args.broker}/{args.queue_id}")
    out.result(await show_message(admin, out, msgs[0]))
    return 0


def _send_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-p", "--body", required=True, help="UTF-8 string format of the message body")
    p.add_argument("-k", "--key", help="message keys")
    p.add_argument("-c", "--tags", help="message tags")
    p.add_argument("-b", "--broker", help="send to this broker (name)")
    p.add_argument("-i", "--qid", type=int, help="send to this queue (needs -b)")
    p.add_argument("-m", "--msgTraceEnable", dest="trace", default="false",
                   help="Message Trace Enable: 'true' also writes the Pub trace record to RMQ_SYS_TRACE_TOPIC")


@command("sendMessage", "Send a message", _send_opts)
async def send_message(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    from .message import make_message
    from .producer import Producer

    if args.qid is not None and not args.broker:
        raise BadArgument("-i/--qid needs -b/--broker")
    msg = make_message(args.topic.strip(), args.body.strip().encode("utf-8"), tags=args.tags, keys=args.key)
    trace = args.trace.strip().lower() == "true"  # Boolean.parseBoolean
    async with Producer(f"PID_SMSC_{time.time_ns()}", client=admin.client, enable_msg_trace=trace) as producer:
        queue = None
        if args.broker:
            queue = MessageQueue(topic=args.topic.strip(), broker_name=args.broker.strip(), queue_id=args.qid or 0)
        if args.broker and args.qid is None:
            result = await producer.send(msg, selector=lambda mqs, m, a: next(
                (q for q in mqs if q.broker_name == a), mqs[0]), arg=args.broker.strip())
        else:
            result = await producer.send(msg, queue=queue)
    fmt = "{:<32}  {:<4}  {:<20}    {}"
    out.line(fmt.format("#Broker Name", "#QID", "#Send Result", "#MsgId"))
    mq = result.message_queue
    out.line(fmt.format(mq.broker_name, mq.queue_id, java_name(result.send_status), result.msg_id))
    out.result(result.to_dict())
    return 0


def _print_msg_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-c", "--charsetName", dest="charset", default="UTF-8", help="body charset")
    p.add_argument("-s", "--subExpression", dest="sub", default="*", help="tag expression (TagA || TagB)")
    p.add_argument("-b", "--beginTimestamp", dest="begin", help=f"from ({TIME_FORMATS})")
    p.add_argument("-e", "--endTimestamp", dest="end", help=f"to ({TIME_FORMATS})")
    p.add_argument("-d", "--printBody", dest="print_body", type=_bool, default=True, help="print bodies (true|false)")


@command("printMsg", "Print Message Detail", _print_msg_opts)
async def print_msg(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    tags = None if args.sub.strip() == "*" else {t.strip() for t in args.sub.split("||")}
    begin = parse_time(args.begin) if args.begin else None
    end = parse_time(args.end) if args.end else None
    rows = []
    for mq, (lo, hi) in sorted((await admin.queue_bounds(args.topic)).items()):
        out.line(f"minOffset={lo}, maxOffset={hi}, MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, "
                 f"queueId={mq.queue_id}]")
        offset = lo
        while offset < hi:
            msgs, nxt = await admin.pull(mq, offset, 32)
            if nxt <= offset:
                break
            offset = nxt
            for m in msgs:
                if tags is not None and m.tags not in tags:
                    continue
                if (begin is not None and m.store_timestamp < begin) or (end is not None and m.store_timestamp > end):
                    continue
                body = m.decompressed_body().decode(args.charset, "replace") if args.print_body else "NOT PRINT BODY"
                out.line(f"MSGID: {m.client_msg_id} {message_ext_str(m, mq.broker_name)} BODY: {body}")
                rows.append({**message_json(m), **({} if args.print_body else {"body": None})})
        out.line("-" * 56)
    out.result(rows)
    return 0


def _reset_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--group", required=True, help="consumer group name")
    _topic_opt(p)
    p.add_argument("-s", "--timestamp", required=True, help=f"reset to this time ({TIME_FORMATS})")
    p.add_argument("-f", "--force", type=_bool, default=True, help="also move offsets forward (true|false)")
    p.add_argument("-c", "--cplus", dest="cpp", action="store_true",
                   help="reset c++ client offset: the clients are sent the C++ client's offset body")


@command("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).", _reset_opts)
async def reset_offset_by_time(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    when = parse_time(args.timestamp, now=-1)  # 'now' is -1: the broker takes each queue's max offset
    table = await admin.reset_offset_by_time(args.group, args.topic, when, args.force, args.cpp)
    out.line(f"rollback consumer offset by specified group[{args.group}], topic[{args.topic}], "
             f"force[{java_bool(args.force)}], timestamp(string)[{args.timestamp.strip()}], timestamp(long)[{when}]")
    out.line(f"{'#brokerName':<40}  {'#queueId':<40}  {'#offset':<40}")
    for mq in java_hash_order(list(table)):
        out.line(f"{_front(mq.broker_name, 32):<40}  {mq.queue_id:<40}  {table[mq]:<40}")
    out.result([{**_message_queue(mq), "offset": table[mq]} for mq in sorted(table)])
    return 0


# -- stats, group configs, KV ---------------------------------------------------------------------------------
def _stats_all_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-a", "--activeTopic", dest="active", action="store_true", help="print active topics only")
    p.add_argument("-t", "--topic", help="print this topic only")


def _sum_24h(bsd: Any) -> int:
    """StatsAllSubCommand.compute24HourSum: the day's sum, else the hour's, else the minute's."""
    for item in (bsd.stats_day, bsd.stats_hour, bsd.stats_minute):
        if item is not None and item.sum:
            return int(item.sum)
    return 0


@command("statsAll", "Topic and Consumer tps stats", _stats_all_opts)
async def stats_all(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    out.line(f"{'#Topic':<64}  {'#Consumer Group':<64} {'#Accumulation':>12} {'#InTPS':>11} {'#OutTPS':>11} "
             f"{'#InMsg24Hour':>14} {'#OutMsg24Hour':>14}")
    rows = []
    for topic in await admin.topic_list():
        if topic.startswith((MixAll.RETRY_GROUP_TOPIC_PREFIX, MixAll.DLQ_GROUP_TOPIC_PREFIX)):
            continue
        if args.topic and topic != args.topic:
            continue
        try:
            rows += await _topic_stats_rows(admin, topic, args.active, out)
        except MQClientError:
            pass  # as mqadmin: a topic it cannot read is left out
    out.result(rows)
    return 0


async def _topic_stats_rows(admin: Admin, topic: str, active: bool, out: Out) -> list[dict[str, Any]]:
    route = await admin.topic_route(topic)
    masters = [a for bd in route.broker_datas or [] for k, a in (bd.broker_addrs or {}).items() if int(k) == 0]
    groups = sorted(await admin.topic_consumed_by(masters[0], topic)) if masters else []
    in_tps, in_today = 0.0, 0
    for addr in masters:
        try:
            bsd = await admin.broker_stats_data(addr, "TOPIC_PUT_NUMS", topic)
            in_tps += bsd.stats_minute.tps if bsd.stats_minute else 0.0
            in_today += _sum_24h(bsd)
        except MQClientError:
            pass
    rows: list[dict[str, Any]] = []
    if not groups:
        if not active or in_today > 0:
            out.line(f"{_front(topic, 64):<64}  {'':<64} {0:>12} {in_tps:>11.2f} {'':>11} {in_today:>14} "
                     f"{'NO_CONSUMER':>14}")
            rows.append({"topic": topic, "group": None, "accumulation": 0, "inTps": in_tps, "inMsg24Hour": in_today})
        return rows
    for group in groups:
        out_tps, out_today = 0.0, 0
        for addr in masters:
            try:
                bsd = await admin.broker_stats_data(addr, "GROUP_GET_NUMS", f"{topic}@{group}")
                out_tps += bsd.stats_minute.tps if bsd.stats_minute else 0.0
                out_today += _sum_24h(bsd)
            except MQClientError:
                pass
        try:
            accumulate = max((await admin.consume_stats(group, topic)).total_diff(), 0)
        except MQClientError:
            accumulate = 0
        if not active or in_today > 0 or out_today > 0:
            out.line(f"{_front(topic, 64):<64}  {_front(group, 64):<64} {accumulate:>12} {in_tps:>11.2f} "
                     f"{out_tps:>11.2f} {in_today:>14} {out_today:>14}")
            rows.append({"topic": topic, "group": group, "accumulation": accumulate, "inTps": in_tps,
                         "outTps": out_tps, "inMsg24Hour": in_today, "outMsg24Hour": out_today})
    return rows


def _group_name_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--groupName", dest="group", required=True, help="consumer group name")


_GROUP_FIELDS = (("groupName", "group_name"), ("consumeEnable", "consume_enable"),
                 ("consumeFromMinEnable", "consume_from_min_enable"),
                 ("consumeBroadcastEnable", "consume_broadcast_enable"), ("retryQueueNums", "retry_queue_nums"),
                 ("retryMaxTimes", "retry_max_times"), ("brokerId", "broker_id"),
                 ("whichBrokerWhenConsumeSlowly", "which_broker_when_consume_slowly"),
                 ("notifyConsumerIdsChangedEnable", "notify_consumer_ids_changed_enable"))


@command("getConsumerConfig", "get consumer config by subscription group name!", _group_name_opt)
async def get_consumer_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    info = await admin.cluster_info()
    result = []
    for name, bd in (info.broker_addr_table or {}).items():
        cluster = next((c for c, names in (info.cluster_addr_table or {}).items() if name in names), "")
        addrs = {int(k): a for k, a in (bd.broker_addrs or {}).items()}
        addr = addrs.get(0) or next(iter(addrs.values()), None)
        if addr is None:
            continue
        config = await admin.sub_group_config(addr, args.group)
        if config is None:
            continue
        out.line(f"============================={cluster}:{name}=============================")
        values = {java: getattr(config, attr) for java, attr in _GROUP_FIELDS}
        for java, value in values.items():
            shown = java_bool(value) if isinstance(value, bool) else ("" if value is None else value)
            out.line(f"{java:<40}=  {shown}")
        result.append({"cluster": cluster, "brokerName": name, "config": values})
    out.result(result)
    return 0


def _kv_namespace_opts(p: argparse.ArgumentParser, with_value: bool) -> None:
    p.add_argument("-s", "--namespace", required=True, help="the namespace")
    p.add_argument("-k", "--key", required=True, help="the key name")
    if with_value:
        p.add_argument("-v", "--value", required=True, help="the key value")


@command("updateKvConfig", "Create or update KV config.", lambda p: _kv_namespace_opts(p, True))
async def update_kv_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    await admin.put_kv_config(args.namespace.strip(), args.key.strip(), args.value.strip())
    out.line("create or update kv config to namespace success.")
    out.result({"namespace": args.namespace.strip(), args.key.strip(): args.value.strip()})
    return 0


@command("deleteKvConfig", "Delete KV config.", lambda p: _kv_namespace_opts(p, False))
async def delete_kv_config(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    await admin.delete_kv_config(args.namespace.strip(), args.key.strip())
    out.line("delete kv config from namespace success.")
    out.result({"namespace": args.namespace.strip(), "deleted": args.key.strip()})
    return 0


# -- consumer running info ------------------------------------------------------------------------------------


def running_info_str(info: Any) -> str:
    """ConsumerRunningInfo.formatString."""
    lines = ["#Consumer Properties#"]
    lines += [f"{k:<40}: {java_name(v) if not isinstance(v, (str, int, float)) else v}"
              for k, v in info.properties.items()]
    lines += ["", "", "#Consumer Subscription#"]
    subs = sorted(info.subscription_set, key=lambda sd: sd.topic or "")
    for i, sd in enumerate(subs, 1):
        lines.append(f"{i:03d} Topic: {java_str(sd.topic):<40} ClassFilter: {java_bool(sd.class_filter_mode):<8} "
                     f"SubExpression: {java_str(sd.sub_string)}")
    lines += ["", "", "#Consumer Offset#",
              f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Consumer Offset':<20}"]
    table = sorted(info.mq_table.items())
    lines += [f"{mq.topic:<32}  {mq.broker_name:<32}  {mq.queue_id:<4}  {pq.commit_offset:<20}" for mq, pq in table]
    lines += ["", "", "#Consumer MQ Detail#", f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  "
                                                 f"{'#ProcessQueueInfo':<20}"]
    lines += [f"{mq.topic:<64}  {mq.broker_name:<32}  {mq.queue_id:<4}  {process_queue_str(pq)}" for mq, pq in table]
    lines += ["", "", "#Consumer RT&TPS#", f"{'#Topic':<64}  {'#Pull RT':>14} {'#Pull TPS':>14} {'#Consume RT':>14} "
                                               f"{'#ConsumeOK TPS':>14} {'#ConsumeFailed TPS':>18} "
                                               f"{'#ConsumeFailedMsgsInHour':>25}"]
    for topic, st in sorted(info.status_table.items()):
        lines.append(f"{topic:<32}  {st.pull_rt:>14.2f} {st.pull_tps:>14.2f} {st.consume_rt:>14.2f} "
                     f"{st.consume_ok_tps:>14.2f} {st.consume_failed_tps:>18.2f} {st.consume_failed_msgs:>25}")
    text = "\n".join(lines) + "\n"
    if info.jstack:
        text += "\n\n#Consumer jstack#\n" + info.jstack
    return text


def _consumer_status_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--consumerGroup", dest="group", required=True, help="consumer group name")
    p.add_argument("-i", "--clientId", dest="client_id", help="only this client, its whole running info")
    p.add_argument("-s", "--jstack", action="store_true", help="ask for the client's thread stacks too")
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", help="list the clients this broker knows")


@command("consumerStatus", "Query consumer's internal data structure", _consumer_status_opts)
async def consumer_status(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    group = args.group.strip()
    if args.client_id:
        info = await admin.consumer_running_info(group, args.client_id.strip(), args.jstack)
        out.raw(running_info_str(info))
        out.result(_running_info_json(info))
        return 0
    cc = await admin.consumer_connection(group, args.broker_addr)
    now = time.time_ns() // 1_000_000
    infos: dict[str, Any] = {}
    out.line(f"{'#Index':<10} {'#ClientId':<40} {'#Version':<20} #ConsumerRunningInfoFile")
    index = 1
    for conn in cc.connection_set:
        try:
            info = await admin.consumer_running_info(group, conn.client_id or "", args.jstack)
        except MQClientError as exc:
            print(f"rocketpy admin consumerStatus: {conn.client_id}: {exc}", file=sys.stderr)
            continue
        infos[conn.client_id or ""] = info
        path = f"{now}/{conn.client_id}"  # as mqadmin: relative to the working directory
        await trio.to_thread.run_sync(_write_text, path, running_info_str(info))
        out.line(f"{index:<10} {java_str(conn.client_id):<40} {version_desc(conn.version):<20} {path}")
        index += 1
    result: dict[str, Any] = {"clients": {c: _running_info_json(i) for c, i in infos.items()}}
    if infos:
        subs = {frozenset((sd.topic, sd.sub_string) for sd in i.subscription_set) for i in infos.values()}
        result["sameSubscription"] = len(subs) == 1
        if len(subs) == 1:
            out.raw("\n\nSame subscription in the same group of consumer")
            out.raw("\n\nRebalance OK\n")
        else:
            out.raw("\n\nWARN: Different subscription in the same group of consumer!!!")
    out.result(result)
    return 0


def _write_text(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _running_info_json(info: Any) -> dict[str, Any]:
    return {
        "properties": {k: v if isinstance(v, (str, int, float, bool)) else java_name(v)
                       for k, v in info.properties.items()},
        "subscriptions": {sd.topic: sd.sub_string for sd in info.subscription_set},
        "queues": [{**_message_queue(mq), "commitOffset": pq.commit_offset, "cachedMsgCount": pq.cached_msg_count}
                   for mq, pq in sorted(info.mq_table.items())],
    }


def _print_by_queue_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-a", "--brokerName", dest="broker", required=True, help="broker name")
    p.add_argument("-i", "--queueId", dest="queue_id", type=int, required=True, help="queue id")
    p.add_argument("-c", "--charsetName", dest="charset", default="UTF-8", help="body charset")
    p.add_argument("-s", "--subExpression", dest="sub", default="*", help="tag expression (TagA || TagB)")
    p.add_argument("-b", "--beginTimestamp", dest="begin", help=f"from ({TIME_FORMATS})")
    p.add_argument("-e", "--endTimestamp", dest="end", help=f"to ({TIME_FORMATS})")
    p.add_argument("-p", "--printMsg", dest="print_msg", type=_bool, default=False,
                   help="print each message (true|false)")
    p.add_argument("-d", "--printBody", dest="print_body", type=_bool, default=False, help="print bodies (true|false)")
    p.add_argument("-f", "--calculate", type=_bool, default=False, help="count messages by tag (true|false)")


@command("printMsgByQueue", "Print Message Detail", _print_by_queue_opts)
async def print_msg_by_queue(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    topic = args.topic.strip()
    mq = MessageQueue(topic=topic, broker_name=args.broker.strip(), queue_id=args.queue_id)
    lo, hi = (await admin.queue_bounds(topic)).get(mq, (0, 0))
    if args.begin:
        lo = await admin.search_offset(mq, parse_time(args.begin))
    if args.end:
        hi = await admin.search_offset(mq, parse_time(args.end))
    tags = None if args.sub.strip() == "*" else {t.strip() for t in args.sub.split("||")}
    counts: dict[str, int] = {}
    rows = []
    offset = lo
    while offset < hi:
        msgs, nxt = await admin.pull(mq, offset, 32)
        if nxt <= offset:
            break
        offset = nxt
        for m in msgs:
            if tags is not None and m.tags not in tags:
                continue
            if args.calculate:
                counts[m.tags or ""] = counts.get(m.tags or "", 0) + 1
            if args.print_msg:
                body = m.decompressed_body().decode(args.charset, "replace") if args.print_body else "NOT PRINT BODY"
                out.line(f"MSGID: {m.client_msg_id} {message_ext_str(m, mq.broker_name)} BODY: {body}")
            rows.append(message_json(m))
    if args.calculate:
        # TagCountBean sorts by count, most first; equal counts keep the HashMap's order
        ordered = sorted(java_hash_order(list(counts), java_string_hash), key=lambda t: -counts[t])
        for tag in ordered:
            out.line(f"Tag: {tag:<30} Count: {counts[tag]}")
    out.result({"messages": rows, "tagCounts": counts} if args.calculate else rows)
    return 0


def _allocate_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-i", "--ipList", dest="ips", required=True, help="consumer ids, comma separated")


@command("allocateMQ", "Allocate MQ", _allocate_opts)
async def allocate_mq(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    from .allocate import AllocateAveragely

    topic = args.topic.strip()
    route = await admin.topic_route(topic)
    queues = [MessageQueue(topic=topic, broker_name=qd.broker_name, queue_id=i)
              for qd in route.queue_datas or [] if PermName.is_readable(qd.perm) for i in range(qd.read_queue_nums)]
    queues = java_hash_order(queues)  # mqadmin allocates from a HashSet, in its order
    ips = args.ips.strip().split(",")
    strategy = AllocateAveragely()
    result = {ip: strategy.allocate("aa", ip, queues, ips) for ip in ips}

    def mqs(ip: str) -> str:
        return ",".join(f'{{"brokerName":"{q.broker_name}","queueId":{q.queue_id},"topic":"{q.topic}"}}'
                        for q in result[ip])

    # fastjson's compact form of RebalanceResult (a HashMap of ip -> queues; fields sorted by name)
    out.line('{"result":{' + ",".join(f'"{ip}":[{mqs(ip)}]' for ip in java_hash_order(ips, java_string_hash)) + "}}")
    out.result({ip: [_message_queue(q) for q in qs] for ip, qs in result.items()})
    return 0


def _skip_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--group", required=True, help="consumer group name")
    _topic_opt(p)
    p.add_argument("-f", "--force", type=_bool, default=True, help="also move offsets forward (true|false)")


@command("skipAccumulatedMessage", "Skip all messages that are accumulated (not consumed) currently", _skip_opts)
async def skip_accumulated_message(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    table = await admin.reset_offset_by_time(args.group.strip(), args.topic.strip(), -1, args.force)
    out.line(f"{'#brokerName':<40}  {'#queueId':<40}  {'#offset':<40}")
    for q in java_hash_order(list(table)):
        out.line(f"{_front(q.broker_name, 32):<40}  {q.queue_id:<40}  {table[q]:<40}")
    out.result([{**_message_queue(q), "offset": table[q]} for q in sorted(table)])
    return 0


def _order_conf_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-m", "--method", required=True, choices=["get", "put", "delete"], help="what to do")
    p.add_argument("-v", "--orderConf", dest="order_conf", help="the order conf, e.g. broker-a:4;broker-b:4 (put)")


#: NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


@command("updateOrderConf", "Create or update or delete order conf", _order_conf_opts)
async def update_order_conf(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    topic = args.topic.strip()
    if args.method == "get":
        conf = await admin.get_kv_config(ORDER_TOPIC_CONFIG, topic)
        out.raw(f"get orderConf success. topic=[{topic}], orderConf=[{java_str(conf)}] ")
        out.result({"topic": topic, "orderConf": conf})
    elif args.method == "put":
        conf = (args.order_conf or "").strip()
        if not conf:
            raise BadArgument("please set orderConf with option -v.")
        for addr in _namesrvs(args):  # createOrUpdateOrderConf(..., isCluster=true): every name server
            await admin.put_kv_config(ORDER_TOPIC_CONFIG, topic, conf, addr)
        out.raw(f"update orderConf success. topic=[{topic}], orderConf=[{conf}]")
        out.result({"topic": topic, "orderConf": conf})
    else:
        await admin.delete_kv_config(ORDER_TOPIC_CONFIG, topic)
        out.raw(f"delete orderConf success. topic=[{topic}]")
        out.result({"topic": topic, "deleted": True})
    return 0


def _chore_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", help="broker address host:port")
    p.add_argument("-c", "--cluster", dest="cluster", help="every master of this cluster")


async def _chore(admin: Admin, args: argparse.Namespace, out: Out, code: int) -> int:
    if args.broker_addr:
        addrs = [args.broker_addr.strip()]
    else:
        info = await admin.cluster_info()
        names = (info.cluster_addr_table or {}).get(args.cluster.strip()) if args.cluster else None
        addrs = [a for name, bd in (info.broker_addr_table or {}).items() if names is None or name in names
                 for k, a in (bd.broker_addrs or {}).items() if int(k) == 0]
    ok = True
    for addr in addrs:
        ok = await admin.broker_chore(addr, code) and ok
    out.raw("success" if ok else "false")
    out.result({"success": ok, "brokers": addrs})
    return 0


@command("cleanExpiredCQ", "Clean expired ConsumeQueue on broker.", _chore_opts)
async def clean_expired_cq(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    return await _chore(admin, args, out, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)


@command("deleteExpiredCommitLog", "Delete expired CommitLog files", _chore_opts)
async def delete_expired_commit_log(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    return await _chore(admin, args, out, RequestCode.DELETE_EXPIRED_COMMITLOG)


@command("cleanUnusedTopic", "Clean unused topic on broker.", _chore_opts)
async def clean_unused_topic(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    return await _chore(admin, args, out, RequestCode.CLEAN_UNUSED_TOPIC)


def _producer_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--broker", dest="broker_addr", required=True, help="broker address host:port")


@command("producer", "Query producer's instances", _producer_opts)
async def producer(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    table = await admin.all_producer_info(args.broker_addr.strip())
    result: dict[str, list[dict[str, Any]]] = {}
    for group, infos in (table.data or {}).items():
        if not infos:
            out.line(f"producer group ({group}) instances are empty")
        for p in infos or []:
            out.line(f"producer group ({group}) instance : clientId={p.client_id},remoteIP={p.remote_ip}, "
                     f"language={java_name(p.language)}, version={p.version}, "
                     f"lastUpdateTimestamp={p.last_update_timestamp}")
        result[group] = [{"clientId": p.client_id, "remoteIP": p.remote_ip, "language": java_name(p.language),
                          "version": p.version, "lastUpdateTimestamp": p.last_update_timestamp} for p in infos or []]
    out.result(result)
    return 0


def _query_cq_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-q", "--queue", type=int, required=True, help="queue id")
    p.add_argument("-i", "--index", type=int, required=True, help="first queue index")
    p.add_argument("-c", "--count", type=int, default=10, help="how many entries")
    p.add_argument("-b", "--broker", help="broker address (default: the topic's first master)")
    p.add_argument("-g", "--consumer", help="consumer group (shows its subscription and filter)")


@command("queryCq", "Query cq command.", _query_cq_opts)
async def query_cq(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    topic = args.topic.strip()
    addr = (args.broker or "").strip()
    if not addr:
        route = await admin.topic_route(topic)
        addr = next((a for bd in (route.broker_datas or [])[:1] for k, a in (bd.broker_addrs or {}).items()
                     if int(k) == 0), "")
        if not addr:
            raise MQClientError("No topic route data!")
    body = await admin.query_consume_queue(addr, topic, args.queue, args.index, args.count, args.consumer)
    sep = "======================================"
    if body.subscription_data is not None:
        out.line("Subscription data: ")
        out.line(body.subscription_data.encode(pretty=True).decode())
        out.line(sep)
    if body.filter_data is not None:
        out.line("Filter data: ")
        out.line(body.filter_data)
        out.line(sep)
    out.line("Queue data: ")
    out.line(f"max: {body.max_queue_index}, min: {body.min_queue_index}")
    out.line(sep)
    for i, d in enumerate(body.queue_data or [], args.index):
        out.line(f"idx: {i}")
        out.line(f"ConsumeQueueData{{physicOffset={d.physic_offset}, physicSize={d.physic_size}, "
                 f"tagsCode={d.tags_code}, extendDataJson='{java_str(d.extend_data_json)}', "
                 f"bitMap='{java_str(d.bit_map)}', eval={java_bool(d.eval)}, msg='{java_str(d.msg)}'}}")
        out.line(sep)
    out.result({"max": body.max_queue_index, "min": body.min_queue_index,
                "entries": [{"index": i, "physicOffset": d.physic_offset, "physicSize": d.physic_size,
                             "tagsCode": d.tags_code} for i, d in enumerate(body.queue_data or [], args.index)]})
    return 0


def send_result_str(r: Any) -> str:
    """SendResult.toString."""
    return (f"SendResult [sendStatus={java_name(r.send_status)}, msgId={r.msg_id}, offsetMsgId={r.offset_msg_id}, "
            f"messageQueue={mq_str(r.message_queue)}, queueOffset={r.queue_offset}]")


def _send_status_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerName", dest="broker", required=True, help="broker name (its own topic is used)")
    p.add_argument("-s", "--messageSize", dest="size", type=int, default=128, help="message size")
    p.add_argument("-c", "--count", type=int, default=50, help="how many messages")


def _jodie(size: int) -> bytes:
    return b"hello jodie" * ((size + 10) // 11)  # SendMsgStatusCommand's body


@command("sendMsgStatus", "send msg to broker.", _send_status_opts)
async def send_msg_status(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    from .message import make_message
    from .producer import Producer

    topic = args.broker.strip()  # every broker serves a topic named after itself
    rows = []
    async with Producer(f"PID_SMSC_{time.time_ns()}", client=admin.client) as producer:
        await producer.send(make_message(topic, _jodie(16)))  # warm-up, not shown
        for _ in range(args.count):
            begin = time.monotonic()
            result = await producer.send(make_message(topic, _jodie(args.size)))
            rt = int((time.monotonic() - begin) * 1000)
            out.line(f"rt={rt}ms, SendResult={send_result_str(result)}")
            rows.append({"rtMs": rt, **result.to_dict()})
    out.result(rows)
    return 0


def _check_rt_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-a", "--amount", type=int, default=100, help="message amount")
    p.add_argument("-s", "--size", type=int, default=128, help="message size in bytes")


@command("checkMsgSendRT", "check message send response time", _check_rt_opts)
async def check_msg_send_rt(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    from .message import make_message
    from .producer import Producer

    fmt = "{:<32}  {:<4}  {:<20}    {}"
    out.line(fmt.format("#Broker Name", "#QID", "#Send Result", "#RT"))
    picked: list[MessageQueue] = []

    def by_index(mqs: Any, msg: Any, i: Any) -> MessageQueue:
        picked.append(mqs[i % len(mqs)])
        return picked[-1]

    total, rows = 0, []
    msg = make_message(args.topic.strip(), b"a" * args.size)
    async with Producer(str(time.time_ns() // 1_000_000), client=admin.client) as producer:
        for i in range(args.amount):
            begin = time.monotonic()
            try:
                await producer.send(msg, selector=by_index, arg=i)
                ok = True
            except MQClientError:
                ok = False
            rt = int((time.monotonic() - begin) * 1000)
            if i:
                total += rt  # the first send (route lookup, connect) is left out of the average
            q = picked[-1] if picked else None
            out.line(fmt.format(java_str(q.broker_name if q else None), q.queue_id if q else "null",
                                java_bool(ok), rt))
            rows.append({"brokerName": q.broker_name if q else None, "queueId": q.queue_id if q else None,
                         "ok": ok, "rtMs": rt})
    avg = total / (args.amount - 1) if args.amount > 1 else float("nan")
    out.line(f"Avg RT: {avg:.2f}")
    out.result({"sends": rows, "avgRtMs": avg})
    return 0


def _consume_message_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-b", "--brokerName", dest="broker", help="broker name")
    p.add_argument("-i", "--queueId", dest="queue_id", type=int, help="queue id (needs -b)")
    p.add_argument("-o", "--offset", type=int, help="queue offset (needs -i)")
    p.add_argument("-g", "--consumerGroup", dest="group", help="consumer group name (not used to commit)")
    p.add_argument("-s", "--beginTimestamp", dest="begin", help=f"from ({TIME_FORMATS})")
    p.add_argument("-e", "--endTimestamp", dest="end", help=f"to ({TIME_FORMATS})")
    p.add_argument("-c", "--MessageNumber", dest="count", type=int, default=128, help="how many messages")


@command("consumeMessage", "Consume message", _consume_message_opts)
async def consume_message(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    if args.count <= 0:
        raise BadArgument("Please input a positive messageNumber!")
    if args.queue_id is not None and not args.broker:
        raise BadArgument("Please set the brokerName before queueId!")
    if args.offset is not None and args.queue_id is None:
        raise BadArgument("Please set queueId before offset!")
    now = time.time_ns() // 1_000_000
    begin = parse_time(args.begin) if args.begin else 0
    end = parse_time(args.end) if args.end else 0
    if begin > now or end > now:
        raise BadArgument("Please set the beginTimestamp and endTimestamp before now!")
    if args.end and begin > end:
        raise BadArgument("Please make sure that the beginTimestamp is less than or equal to the endTimestamp")
    topic = args.topic.strip()
    bounds = await admin.queue_bounds(topic)
    rows: list[dict[str, Any]] = []

    async def window(q: MessageQueue) -> tuple[int, int]:
        lo, hi = bounds.get(q, (0, 0))
        if begin:
            lo = await admin.search_offset(q, begin)
        if end:
            hi = await admin.search_offset(q, end)
        return lo, hi

    if args.queue_id is not None:
        q = MessageQueue(topic=topic, broker_name=args.broker.strip(), queue_id=args.queue_id)
        lo, hi = await window(q)
        start = args.offset or 0
        if start > hi:
            out.line(f"{mq_str(q)} no matched msg, offset={start}")
        else:
            lo = max(lo, start)
            if hi - lo > args.count:
                out.line(f"The oldler {args.count} message will be provided")  # sic, as mqadmin
                hi = lo + args.count - 1
            rows += await _pull_range(admin, out, q, lo, hi)
    else:
        left = args.count
        for q in java_hash_order(list(bounds)):
            lo, hi = await window(q)
            if hi - lo > left:
                out.line(f"The older {left} message of the {q.queue_id} queue will be provided")
                hi = lo + left - 1
                left = 0
            else:
                left = left - (hi - lo) - 1
            rows += await _pull_range(admin, out, q, lo, hi)
            if left <= 0:
                break
    out.result(rows)
    return 0


async def _pull_range(admin: Admin, out: Out, q: MessageQueue, lo: int, hi: int) -> list[dict[str, Any]]:
    """ConsumeMessageCommand.pullMessageByQueue: offsets lo..hi, each batch printed with its bodies."""
    rows = []
    offset = lo
    while offset <= hi:
        msgs, nxt = await admin.pull(q, offset, max(hi - offset + 1, 1))
        if not msgs:
            out.line(f"{mq_str(q)} print msg finished. status=NO_NEW_MSG, offset={nxt}")
            break
        offset = nxt
        out.line("Consume ok")
        for m in msgs:
            out.line(f"MSGID: {m.client_msg_id} {message_ext_str(m, q.broker_name)} BODY: "
                     f"{m.decompressed_body().decode('utf-8', 'replace')}")
            rows.append(message_json(m))
    return rows


def _bean(fields: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(fields.items()))  # fastjson writes a bean's fields sorted by name


def _hash_map(table: dict[str, Any]) -> dict[str, Any]:
    return {k: table[k] for k in java_hash_order(list(table), java_string_hash)}


def _export_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--clusterName", dest="cluster", help="export every master of this cluster")
    p.add_argument("-b", "--brokerAddr", dest="broker_addr", help="export one broker")
    p.add_argument("-f", "--filePath", dest="path", default="/tmp/rocketmq/export", help="directory to write to")
    p.add_argument("-t", "--topic", action="store_true", help="only topic metadata")
    p.add_argument("-g", "--subscriptionGroup", dest="groups", action="store_true", help="only group metadata")
    p.add_argument("-s", "--specialTopic", dest="special", action="store_true", help="include %%RETRY%% and %%DLQ%%")


@command("exportMetadata", "export metadata", _export_opts)
async def export_metadata(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    if not args.cluster and not args.broker_addr:
        raise BadArgument("give -c clusterName or -b brokerAddr")
    addrs = await admin.master_addrs(args.cluster.strip() if args.cluster else None,
                                     args.broker_addr.strip() if args.broker_addr else None)
    topics: dict[str, dict[str, Any]] = {}
    groups: dict[str, dict[str, Any]] = {}
    for addr in addrs:  # queue counts of a topic on several brokers add up, as mqadmin's
        for name, c in (await admin.user_topic_configs(addr, args.special)).items():
            t = _topic_config_json(c)
            if name in topics:
                t["readQueueNums"] += topics[name]["readQueueNums"]
                t["writeQueueNums"] += topics[name]["writeQueueNums"]
            topics[name] = t
        for name, g in (await admin.user_sub_groups(addr)).items():
            fields = {java: getattr(g, attr) for java, attr in _GROUP_FIELDS}
            if name in groups:
                fields["retryQueueNums"] += groups[name]["retryQueueNums"]
            groups[name] = fields
    result: dict[str, Any] = {}
    if not args.groups:
        result["topicConfigTable"] = _hash_map({k: _bean(v) for k, v in topics.items()})
    if not args.topic:
        result["subscriptionGroupTable"] = _hash_map({k: _bean(v) for k, v in groups.items()})
    result["exportTime"] = time.time_ns() // 1_000_000
    name = "topic.json" if args.topic else "subscriptionGroup.json" if args.groups else "metadata.json"
    path = os.path.join(args.path, name)
    await trio.to_thread.run_sync(_write_text, path, fastjson_pretty(_hash_map(result)))
    out.line(f"export {path} success")
    out.result({"path": path, **result})
    return 0


#: ExportConfigsCommand.needBrokerProprties, in the order it puts them
_EXPORTED_BROKER_KEYS = ("brokerClusterName", "brokerId", "brokerName", "brokerRole", "fileReservedTime",
                         "filterServerNums", "flushDiskType", "maxMessageSize", "messageDelayLevel",
                         "msgTraceTopicName", "slaveReadEnable", "traceOn", "traceTopicEnable", "useTLS",
                         "autoCreateTopicEnable", "autoCreateSubscriptionGroup")


def _export_configs_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--clusterName", dest="cluster", required=True, help="the cluster to export")
    p.add_argument("-f", "--filePath", dest="path", default="/tmp/rocketmq/export", help="directory to write to")


@command("exportConfigs", "export configs", _export_configs_opts)
async def export_configs(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    cluster = args.cluster.strip()
    info = await admin.cluster_info()
    names = (info.cluster_addr_table or {}).get(cluster) or []
    masters = slaves = 0
    configs: dict[str, dict[str, str]] = {}
    for name in names:
        bd = (info.broker_addr_table or {}).get(name)
        addrs = {int(k): a for k, a in ((bd.broker_addrs or {}) if bd else {}).items()}
        if 0 not in addrs:
            continue
        masters += 1
        slaves += len(addrs) - 1
        config = await admin.broker_config(addrs[0])
        picked = [k for k in _EXPORTED_BROKER_KEYS if config.get(k) is not None]
        configs[config.get("brokerName", name)] = {k: config[k] for k in java_properties_order(picked)}
    scale = {"namesrvSize": len(_namesrvs(args)), "masterBrokerSize": masters, "slaveBrokerSize": slaves}
    result = _hash_map({"brokerConfigs": _hash_map(configs), "clusterScale": _hash_map(scale)})
    path = os.path.join(args.path, "configs.json")
    await trio.to_thread.run_sync(_write_text, path, fastjson_pretty(result))
    out.raw(f"export {path} success")
    out.result({"path": path, **result})
    return 0


def _trace_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--msgId", dest="msg_id", required=True, help="message id (UNIQ_KEY)")
    p.add_argument("-t", "--traceTopic", dest="trace_topic", default="RMQ_SYS_TRACE_TOPIC", help="trace topic")


@command("queryMsgTraceById", "query a message trace", _trace_opts)
async def query_msg_trace_by_id(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    msg_id, topic = args.msg_id.strip(), args.trace_topic.strip()
    traces = await admin.query_messages(topic, msg_id, 64, 0, time.time_ns() // 1_000_000)
    views = []
    for m in traces:
        host = m.born_host
        for v in decode_trace(m.body.decode("utf-8", "replace"), msg_id):
            views.append({**v, "clientHost": host})
    fmt = "{:<10} {:<20} {:<20} {:<20} {:<10} {:<10}"
    subs: dict[str, list[dict[str, Any]]] = {}
    for v in views:
        if v["type"] == "Pub":
            out.line(fmt.format("#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status"))
            out.line(fmt.format("Pub", java_str(v["group"]), v["clientHost"], _ts(v["timestamp"]),
                                f"{v['costTime']}ms", "success" if v["success"] else "failed"))
            out.line()
        else:
            subs.setdefault(java_str(v["group"]), []).append(v)
    for group in java_hash_order(list(subs), java_string_hash):
        out.line(fmt.format("#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status"))
        for v in subs[group]:
            out.line(fmt.format("Sub", group, v["clientHost"], _ts(v["timestamp"]), f"{v['costTime']}ms",
                                "success" if v["success"] else "failed"))
        out.line()
    out.result(views)
    return 0


def _cluster_rt_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-a", "--amount", type=int, default=100, help="messages per broker and round")
    p.add_argument("-s", "--size", type=int, default=128, help="message size in bytes")
    p.add_argument("-c", "--cluster", help="only this cluster (default: every cluster)")
    p.add_argument("-p", "--printLog", dest="tlog", type=_bool, default=False,
                   help="print time|room|cluster|broker|rt lines (true|false)")
    p.add_argument("-m", "--machineRoom", dest="room", default="noname", help="machine room name for -p")
    p.add_argument("-i", "--interval", type=float, default=10, help="seconds between rounds")
    p.add_argument("--rounds", type=int, default=0, help="stop after this many rounds (0: until Ctrl-C)")


@command("clusterRT", "List All clusters Message Send RT", _cluster_rt_opts)
async def cluster_rt(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    from .message import make_message
    from .producer import Producer

    info = await admin.cluster_info()
    table = info.cluster_addr_table or {}
    clusters = [args.cluster.strip()] if args.cluster else list(table)
    if not args.tlog:
        out.line(f"{'#Cluster Name':<24}  {'#Broker Name':<24}  {'#RT':<4}  {'#successCount':<8}  {'#failCount':<8}")
    rows: list[dict[str, Any]] = []
    rounds = 0
    async with Producer(str(time.time_ns() // 1_000_000), client=admin.client) as producer:
        while True:
            for cluster in clusters:
                if cluster not in table:
                    out.raw(f"cluster [{cluster}] not exist")
                    break
                for broker in table[cluster]:
                    msg = make_message(broker, b"a" * args.size)  # every broker serves a topic of its name
                    ok = failed = 0
                    elapsed = 0.0
                    for i in range(args.amount):
                        begin = time.monotonic()
                        try:
                            await producer.send(msg)
                            ok += 1
                        except MQClientError:
                            failed += 1
                        if i:
                            elapsed += (time.monotonic() - begin) * 1000
                    rt = elapsed / (args.amount - 1) if args.amount > 1 else float("nan")
                    if args.tlog:
                        now = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
                        out.line(f"{now}|{args.room}|{cluster}|{broker}|{round(rt)}")
                    else:
                        out.line(f"{cluster:<24}  {broker:<24}  {rt:<8.2f}  {ok:<16}  {failed:<16}")
                    sys.stdout.flush()
                    rows.append({"cluster": cluster, "brokerName": broker, "rtMs": rt, "successCount": ok,
                                 "failCount": failed})
            rounds += 1
            if args.rounds and rounds >= args.rounds:
                break
            await trio.sleep(args.interval)
    out.result(rows)
    return 0


# the ACL subcommands register themselves in COMMANDS
from . import cli_admin_acl, cli_admin_metrics  # noqa: E402,F401
