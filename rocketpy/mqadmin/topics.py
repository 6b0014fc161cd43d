"""mqadmin's topic subcommands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus, topicClusterList,
updateTopicPerm, statsAll.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..client.admin import Admin
from ..client.errors import MQClientError
from ..client.java_text import java_bool, java_hash_order, java_name
from ..codecs.bodies import TopicConfig
from ..codecs.codes import MixAll, PermName
from ..javacompat.lang import java_string_hash
from .core import (
    Out,
    broker_or_cluster_opts,
    command,
    front_string,
    mq_json,
    namesrv_list,
    need_target,
    parse_bool,
    time_ms_str,
    topic_config_json,
    topic_opt,
)


def topic_config_str(c: TopicConfig) -> str:
    """TopicConfig.toString."""
    return (f"TopicConfig [topicName={c.topic_name}, readQueueNums={c.read_queue_nums}, "
            f"writeQueueNums={c.write_queue_nums}, perm={PermName.perm_to_string(c.perm)}, "
            f"topicFilterType={java_name(c.topic_filter_type)}, topicSysFlag={c.topic_sys_flag}, "
            f"order={java_bool(c.order)}]")


def _update_topic_opts(p: argparse.ArgumentParser) -> None:
    broker_or_cluster_opts(p)
    p.add_argument("-t", "--topic", required=True, help="topic name")
    p.add_argument("-r", "--readQueueNums", dest="read", type=int, default=8, help="read queue count")
    p.add_argument("-w", "--writeQueueNums", dest="write", type=int, default=8, help="write queue count")
    p.add_argument("-p", "--perm", type=int, default=6, help="permission: 2 W, 4 R, 6 RW")
    p.add_argument("-o", "--order", type=lambda s: s.strip().lower() == "true", default=False,
                   help="ordered topic (true|false)")
    p.add_argument("-u", "--unit", type=parse_bool, default=False, help="is unit topic (true|false)")
    p.add_argument("-s", "--hasUnitSub", dest="unit_sub", type=parse_bool, default=False,
                   help="has unit sub (true|false)")


@command("updateTopic", "Update or create topic", _update_topic_opts)
async def update_topic(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    need_target(args)
    sys_flag = (1 if args.unit else 0) | (2 if args.unit_sub else 0)  # TopicSysFlag: FLAG_UNIT, FLAG_UNIT_SUB
    config = TopicConfig(topic_name=args.topic, read_queue_nums=args.read, write_queue_nums=args.write,
                         perm=args.perm, order=args.order, topic_sys_flag=sys_flag)
    done = []
    order_conf = None
    if args.broker_addr:
        addr = args.broker_addr.strip()
        await admin.create_topic(addr, config)
        if args.order:
            order_conf = await _order_conf_of_broker(admin, args, addr)
            out.raw(f"set broker orderConf. isOrder=true, orderConf=[{order_conf}]")
        out.line(f"create topic to {addr} success.")
        done.append(addr)
    else:
        for addr in await admin.master_addrs(args.cluster, None):
            await admin.create_topic(addr, config)
            out.line(f"create topic to {addr} success.")
            done.append(addr)
        if args.order:
            order_conf = await _order_conf_of_cluster(admin, args)
            out.raw(f"set cluster orderConf. isOrder=true, orderConf=[{order_conf}]")
    out.raw(topic_config_str(config))
    out.result({"brokers": done, "topicConfig": topic_config_json(config), "orderConf": order_conf})
    return 0


async def _order_conf_of_cluster(admin: Admin, args: argparse.Namespace) -> str:
    """createOrUpdateOrderConf(topic, "b1:W;b2:W", isCluster=true): every broker of the cluster, on every
    name server (the brokers in the order Java's HashSet of their names gives)."""
    from .config import ORDER_TOPIC_CONFIG  # here: importing config first would list its commands first
    info = await admin.cluster_info()
    names = java_hash_order(list((info.cluster_addr_table or {}).get(args.cluster.strip()) or []),
                            java_string_hash)
    conf = ";".join(f"{name}:{args.write}" for name in names)
    for ns in namesrv_list(args):
        await admin.put_kv_config(ORDER_TOPIC_CONFIG, args.topic, conf, ns)
    return conf


async def _order_conf_of_broker(admin: Admin, args: argparse.Namespace, addr: str) -> str:
    """createOrUpdateOrderConf(topic, "broker:W", isCluster=false): merged into the topic's order conf, the
    entry of this broker replaced; returns this broker's entry, as mqadmin prints it."""
    from .config import ORDER_TOPIC_CONFIG
    info = await admin.cluster_info()
    name = next((n for n, bd in (info.broker_addr_table or {}).items()
                 if addr in (bd.broker_addrs or {}).values()), None)
    if name is None:
        raise MQClientError(f"broker {addr} is not in the cluster the name server knows")
    entry = f"{name}:{args.write}"
    entries: dict[str, str] = {}
    try:
        old = await admin.get_kv_config(ORDER_TOPIC_CONFIG, args.topic)
    except MQClientError:
        old = None
    for item in (old or "").split(";"):
        if item.strip():
            entries[item.split(":")[0]] = item
    entries[name] = entry
    merged = ";".join(entries[k] for k in java_hash_order(list(entries), java_string_hash))  # HashMap.values()
    for ns in namesrv_list(args):
        await admin.put_kv_config(ORDER_TOPIC_CONFIG, args.topic, merged, ns)
    return entry


def _delete_topic_opts(p: argparse.ArgumentParser) -> None:
    topic_opt(p)
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
            out.line(f"{front_string(cluster, 20):<20}  {front_string(topic, 64):<64}  {front_string(group, 64):<64}")
            rows.append({"cluster": cluster, "topic": topic, "consumerGroup": group})
    out.result(rows)
    return 0


def _topic_route_opts(p: argparse.ArgumentParser) -> None:
    topic_opt(p)
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


@command("topicStatus", "Examine topic Status info", topic_opt)
async def topic_status(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    stats = await admin.topic_stats(args.topic)
    out.line(f"{'#Broker Name':<32}  {'#QID':<4}  {'#Min Offset':<20}  {'#Max Offset':<20}    #Last Updated")
    rows = []
    for mq in sorted(stats.offset_table):
        o = stats.offset_table[mq]
        when = time_ms_str(o.last_update_timestamp) if o.last_update_timestamp > 0 else ""
        out.line(f"{front_string(mq.broker_name, 32):<32}  {mq.queue_id:<4}  {o.min_offset:<20}  {o.max_offset:<20}    "
                 f"{when}")
        rows.append({**mq_json(mq), "minOffset": o.min_offset, "maxOffset": o.max_offset,
                     "lastUpdateTimestamp": o.last_update_timestamp})
    out.result(rows)
    return 0


@command("topicClusterList", "get cluster info for topic", topic_opt)
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
    broker_or_cluster_opts(p)
    topic_opt(p)
    p.add_argument("-p", "--perm", type=int, required=True, help="permission: 2 W, 4 R, 6 RW")


@command("updateTopicPerm", "Update topic perm", _update_perm_opts)
async def update_topic_perm(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    need_target(args)
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
    out.result({"changed": changed, "topicConfig": topic_config_json(config)})
    return 0


def _stats_all_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-a", "--activeTopic", dest="active", action="store_true", help="print active topics only")
    p.add_argument("-t", "--topic", help="print this topic only")


def sum_24h(bsd: Any) -> int:
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
            in_today += sum_24h(bsd)
        except MQClientError:
            pass
    rows: list[dict[str, Any]] = []
    if not groups:
        if not active or in_today > 0:
            out.line(f"{front_string(topic, 64):<64}  {'':<64} {0:>12} {in_tps:>11.2f} {'':>11} {in_today:>14} "
                     f"{'NO_CONSUMER':>14}")
            rows.append({"topic": topic, "group": None, "accumulation": 0, "inTps": in_tps, "inMsg24Hour": in_today})
        return rows
    for group in groups:
        out_tps, out_today = 0.0, 0
        for addr in masters:
            try:
                bsd = await admin.broker_stats_data(addr, "GROUP_GET_NUMS", f"{topic}@{group}")
                out_tps += bsd.stats_minute.tps if bsd.stats_minute else 0.0
                out_today += sum_24h(bsd)
            except MQClientError:
                pass
        try:
            accumulate = max((await admin.consume_stats(group, topic)).total_diff(), 0)
        except MQClientError:
            accumulate = 0
        if not active or in_today > 0 or out_today > 0:
            out.line(f"{front_string(topic, 64):<64}  {front_string(group, 64):<64} {accumulate:>12} {in_tps:>11.2f} "
                     f"{out_tps:>11.2f} {in_today:>14} {out_today:>14}")
            rows.append({"topic": topic, "group": group, "accumulation": accumulate, "inTps": in_tps,
                         "outTps": out_tps, "inMsg24Hour": in_today, "outMsg24Hour": out_today})
    return rows
