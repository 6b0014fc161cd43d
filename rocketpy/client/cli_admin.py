"""``rocketpy admin SUBCOMMAND``: mqadmin's commands, names and options, with rich tables."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import trio
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..codecs.bodies import MessageQueue, SubscriptionGroupConfig, TopicConfig
from ..codecs.codes import PermName
from ..codecs.message import MessageExt
from .admin import Admin
from .cli_tls import add_tls_options, tls_options
from .config import default_namesrv
from .errors import MQClientError


class _Out:
    # a fresh Console per use: it picks up the current stdout and terminal width (tests swap them)
    def print(self, *args: Any, **kwargs: Any) -> None:
        # piped output keeps whole rows (rich would squeeze tables to 80 columns)
        width = None if sys.stdout.isatty() else 250
        Console(soft_wrap=False, width=width).print(*args, **kwargs)


console = _Out()
Command = Callable[[Admin, argparse.Namespace], Awaitable[int | None]]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Command]] = {}


def command(name: str, help_text: str, options: Callable[[argparse.ArgumentParser], None]) -> Callable[[Command],
                                                                                                      Command]:
    def deco(fn: Command) -> Command:
        COMMANDS[name] = (help_text, options, fn)
        return fn

    return deco


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    admin = sub.add_parser("admin", help="mqadmin-style administration (updateTopic, topicList, clusterList, ...)")
    cmds = admin.add_subparsers(dest="admin_command", required=True, metavar="SUBCOMMAND")
    for name, (help_text, options, fn) in COMMANDS.items():
        p = cmds.add_parser(name, help=help_text)
        p.add_argument("-n", "--namesrvAddr", dest="namesrv", default=None,
                       help=f"name server address list (default: $ROCKETMQ_NAMESRV or {default_namesrv()})")
        add_tls_options(p)
        options(p)
        p.set_defaults(func=_runner(fn))


def _runner(fn: Command) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        async def main() -> int:
            admin = Admin(args.namesrv or default_namesrv())
            for key, value in tls_options(args).items():
                setattr(admin.client.config, key, value)
            async with admin:
                return (await fn(admin, args)) or 0

        try:
            return trio.run(main)
        except MQClientError as exc:
            console.print(f"[red]{type(exc).__name__}: {exc}[/red]")
            return 1

    return run


def _table(*columns: str, title: str | None = None) -> Table:
    t = Table(title=title, show_edge=False, header_style="bold")
    for c in columns:
        t.add_column(c)
    return t


def _broker_or_cluster(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerAddr", dest="broker_addr")
    p.add_argument("-c", "--clusterName", dest="cluster")


def _ts(ms: int) -> str:
    if ms <= 0:
        return "N/A"
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def parse_time(text: str) -> int:
    """mqadmin timestamps: millis, 'now', or yyyy-MM-dd#HH:mm:ss:SSS."""
    if text == "now":
        return time.time_ns() // 1_000_000
    if text.lstrip("-").isdigit():
        return int(text)
    return int(datetime.strptime(text, "%Y-%m-%d#%H:%M:%S:%f").timestamp() * 1000)


# -- topics --------------------------------------------------------------------------------------------------
def _update_topic_opts(p: argparse.ArgumentParser) -> None:
    _broker_or_cluster(p)
    p.add_argument("-t", "--topic", required=True)
    p.add_argument("-r", "--readQueueNums", dest="read", type=int, default=8)
    p.add_argument("-w", "--writeQueueNums", dest="write", type=int, default=8)
    p.add_argument("-p", "--perm", type=int, default=6)
    p.add_argument("-o", "--order", type=lambda s: s.lower() == "true", default=False)


@command("updateTopic", "Update or create topic", _update_topic_opts)
async def update_topic(admin: Admin, args: argparse.Namespace) -> int:
    if not args.broker_addr and not args.cluster:
        raise MQClientError("updateTopic needs -b brokerAddr or -c clusterName")
    config = TopicConfig(topic_name=args.topic, read_queue_nums=args.read, write_queue_nums=args.write,
                         perm=args.perm, order=args.order)
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        await admin.create_topic(addr, config)
        console.print(f"create topic to {addr} success.")
    console.print(json.loads(config.encode()))
    return 0


def _topic_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("-t", "--topic", required=True)


def _delete_topic_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-c", "--clusterName", dest="cluster", required=True)


@command("deleteTopic", "Delete topic from broker and NameServer.", _delete_topic_opts)
async def delete_topic(admin: Admin, args: argparse.Namespace) -> int:
    await admin.delete_topic(args.topic, args.cluster)
    console.print(f"delete topic [{args.topic}] from cluster [{args.cluster}] success.")
    return 0


def _topic_list_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-c", "--clusterModel", dest="cluster_model", action="store_true")


@command("topicList", "Fetch all topic list from name server", _topic_list_opts)
async def topic_list(admin: Admin, args: argparse.Namespace) -> int:
    for topic in await admin.topic_list():
        print(topic)
    return 0


def _topic_route_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-l", "--list", dest="as_list", action="store_true")


@command("topicRoute", "Examine topic route info", _topic_route_opts)
async def topic_route(admin: Admin, args: argparse.Namespace) -> int:
    route = await admin.topic_route(args.topic)
    if not args.as_list:
        print(route.encode(pretty=True).decode())
        return 0
    t = _table("#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
    qds = {q.broker_name: q for q in route.queue_datas or []}
    for bd in route.broker_datas or []:
        q = qds.get(bd.broker_name)
        t.add_row(bd.cluster, bd.broker_name, str(bd.broker_addrs), str(q.read_queue_nums if q else 0),
                  str(q.write_queue_nums if q else 0), PermName.perm_to_string(q.perm) if q else "")
    console.print(t)
    return 0


@command("topicStatus", "Examine topic Status info", _topic_opt)
async def topic_status(admin: Admin, args: argparse.Namespace) -> int:
    stats = await admin.topic_stats(args.topic)
    t = _table("#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated")
    for mq in sorted(stats.offset_table):
        o = stats.offset_table[mq]
        t.add_row(mq.broker_name, str(mq.queue_id), str(o.min_offset), str(o.max_offset),
                  _ts(o.last_update_timestamp))
    console.print(t)
    return 0


# -- cluster and brokers --------------------------------------------------------------------------------------
def _cluster_list_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-m", "--moreStats", dest="more", action="store_true")
    p.add_argument("-c", "--clusterName", dest="cluster")


def _java_str(value: str | None) -> str:
    return "null" if value is None else value  # String.format("%s", null)


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


@command("clusterList", "List cluster infos", _cluster_list_opts)
async def cluster_list(admin: Admin, args: argparse.Namespace) -> int:
    info = await admin.cluster_info()
    rows = cluster_rows(info, args.cluster)
    if args.more:
        t = _table("#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest", "#InTotalToday", "#OutTotalToday")
        for cluster, name, _bid, addr in rows:
            totals = [0, 0, 0, 0]
            try:
                rt = await admin.broker_runtime_info(addr)
                put = [
                    _java_long(rt.get(k))
                    for k in ("msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning", "msgPutTotalTodayNow")
                ]
                get = [
                    _java_long(rt.get(k))
                    for k in ("msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning", "msgGetTotalTodayNow")
                ]
                totals = [put[1] - put[0], get[1] - get[0], put[2] - put[1], get[2] - get[1]]
            except Exception:  # noqa: BLE001 - mqadmin prints zeros for a broker it cannot read
                pass
            t.add_row(*(Text(c) for c in (cluster, name, *map(str, totals))))
        console.print(t)
        return 0
    t = _table(
        "#Cluster Name",
        "#Broker Name",
        "#BID",
        "#Addr",
        "#Version",
        "#InTPS(LOAD)",
        "#OutTPS(LOAD)",
        "#PCWait(ms)",
        "#Hour",
        "#SPACE",
    )
    now = time.time_ns() // 1_000_000
    for cluster, name, bid, addr in rows:
        tps_in = tps_out = hour = space = 0.0
        version = send_q = pull_q = send_wait = pull_wait = pc_wait = ""
        try:
            rt = await admin.broker_runtime_info(addr)
            send_q, pull_q = _java_str(rt.get("sendThreadPoolQueueSize")), _java_str(rt.get("pullThreadPoolQueueSize"))
            send_wait = _java_str(rt.get("sendThreadPoolQueueHeadWaitTimeMills"))
            pull_wait = _java_str(rt.get("pullThreadPoolQueueHeadWaitTimeMills"))
            pc_wait = _java_str(rt.get("pageCacheLockTimeMills"))
            version = _java_str(rt.get("brokerVersionDesc"))
            earliest, ratio = rt.get("earliestMessageTimeStamp"), rt.get("commitLogDiskRatio")
            if earliest:
                hour = (now - int(earliest)) / 1000.0 / 60.0 / 60.0
            if ratio:
                space = float(ratio)
            tps_in = float((rt.get("putTps") or "0").split(" ")[0])
            tps_out = float((rt.get("getTransferedTps") or "0").split(" ")[0])
        except Exception:  # noqa: BLE001 - mqadmin prints the row with what it has
            pass
        cells = (
            cluster,
            name,
            str(bid),
            addr,
            version,
            f"{tps_in:.2f}({send_q},{send_wait}ms)",
            f"{tps_out:.2f}({pull_q},{pull_wait}ms)",
            pc_wait,
            f"{hour:.2f}",
            f"{space:.4f}",
        )
        t.add_row(*(Text(c) for c in cells))  # data, not markup (an IPv6 address reads as a tag)
    console.print(t)
    return 0


@command("brokerStatus", "Fetch broker runtime status data", _broker_or_cluster)
async def broker_status(admin: Admin, args: argparse.Namespace) -> int:
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        table = await admin.broker_runtime_info(addr)
        t = _table("key", "value", title=addr if args.cluster else None)
        for k in sorted(table):
            t.add_row(k, table[k])
        console.print(t)
    return 0


@command("getBrokerConfig", "Get broker config by cluster or special broker!", _broker_or_cluster)
async def get_broker_config(admin: Admin, args: argparse.Namespace) -> int:
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        t = _table("key", "value", title=f"============{addr}============")
        for k, v in (await admin.broker_config(addr)).items():
            t.add_row(k, v)
        console.print(t)
    return 0


# -- groups -----------------------------------------------------------------------------------------------------
def _bool(text: str) -> bool:
    return text.lower() == "true"


def _update_group_opts(p: argparse.ArgumentParser) -> None:
    _broker_or_cluster(p)
    p.add_argument("-g", "--groupName", dest="group", required=True)
    p.add_argument("-s", "--consumeEnable", dest="consume_enable", type=_bool, default=True)
    p.add_argument("-m", "--consumeFromMinEnable", dest="from_min", type=_bool, default=False)
    p.add_argument("-d", "--consumeBroadcastEnable", dest="broadcast", type=_bool, default=False)
    p.add_argument("-q", "--retryQueueNums", dest="retry_queues", type=int, default=1)
    p.add_argument("-r", "--retryMaxTimes", dest="retry_max", type=int, default=16)
    p.add_argument("-i", "--brokerId", dest="broker_id", type=int, default=0)
    p.add_argument("-w", "--whichBrokerWhenConsumeSlowly", dest="slow_broker", type=int, default=1)
    p.add_argument("-a", "--notifyConsumerIdsChanged", dest="notify", type=_bool, default=True)


@command("updateSubGroup", "Update or create subscription group", _update_group_opts)
async def update_sub_group(admin: Admin, args: argparse.Namespace) -> int:
    if not args.broker_addr and not args.cluster:
        raise MQClientError("updateSubGroup needs -b brokerAddr or -c clusterName")
    config = SubscriptionGroupConfig(
        group_name=args.group, consume_enable=args.consume_enable, consume_from_min_enable=args.from_min,
        consume_broadcast_enable=args.broadcast, retry_queue_nums=args.retry_queues, retry_max_times=args.retry_max,
        broker_id=args.broker_id, which_broker_when_consume_slowly=args.slow_broker,
        notify_consumer_ids_changed_enable=args.notify)
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        await admin.update_sub_group(addr, config)
        console.print(f"create subscription group to {addr} success.")
    console.print(json.loads(config.encode()))
    return 0


def _delete_group_opts(p: argparse.ArgumentParser) -> None:
    _broker_or_cluster(p)
    p.add_argument("-g", "--groupName", dest="group", required=True)
    p.add_argument("-r", "--removeOffset", dest="remove_offset", type=_bool, default=False)


@command("deleteSubGroup", "Delete subscription group from broker.", _delete_group_opts)
async def delete_sub_group(admin: Admin, args: argparse.Namespace) -> int:
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        await admin.delete_sub_group(addr, args.group, args.remove_offset)
        console.print(f"delete subscription group [{args.group}] from broker [{addr}] success.")
    return 0


def _progress_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--groupName", dest="group", required=True)
    p.add_argument("-t", "--topicName", dest="topic")


@command("consumerProgress", "Query consumers's progress, speed", _progress_opts)
async def consumer_progress(admin: Admin, args: argparse.Namespace) -> int:
    stats = await admin.consume_stats(args.group, args.topic)
    t = _table("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")
    total = 0
    for mq in sorted(stats.offset_table):
        w = stats.offset_table[mq]
        diff = w.broker_offset - w.consumer_offset
        total += diff
        t.add_row(mq.topic, mq.broker_name, str(mq.queue_id), str(w.broker_offset), str(w.consumer_offset),
                  str(diff), _ts(w.last_timestamp))
    console.print(t)
    console.print(f"Consume TPS: {stats.consume_tps:.2f}")
    console.print(f"Diff Total: {total}")
    return 0


def _group_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--consumerGroup", dest="group", required=True)


@command("consumerConnection", "Query consumer's socket connection, client version and subscription", _group_opt)
async def consumer_connection(admin: Admin, args: argparse.Namespace) -> int:
    cc = await admin.consumer_connection(args.group)
    t = _table("#", "#ClientId", "#ClientAddr", "#Language", "#Version")
    for i, c in enumerate(cc.connection_set, 1):
        t.add_row(str(i), c.client_id, c.client_addr, str(c.language), str(c.version))
    console.print(t)
    s = _table("#Topic", "#SubExpression")
    for topic, sd in cc.subscription_table.items():
        s.add_row(topic, sd.sub_string)
    console.print(s)
    console.print(f"ConsumeType: {cc.consume_type}\nMessageModel: {cc.message_model}\n"
                  f"ConsumeFromWhere: {cc.consume_from_where}")
    return 0


def _producer_conn_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--producerGroup", dest="group", required=True)
    _topic_opt(p)


@command("producerConnection", "Query producer's socket connection and client version", _producer_conn_opts)
async def producer_connection(admin: Admin, args: argparse.Namespace) -> int:
    pc = await admin.producer_connection(args.group, args.topic)
    t = _table("#", "#ClientId", "#ClientAddr", "#Language", "#Version")
    for i, c in enumerate(pc.connection_set, 1):
        t.add_row(str(i), c.client_id, c.client_addr, str(c.language), str(c.version))
    console.print(t)
    return 0


# -- messages -------------------------------------------------------------------------------------------------------
def print_message(msg: MessageExt, header: str = "OffsetID") -> None:
    body = msg.decompressed_body()
    rows = [
        (header, msg.msg_id), ("Topic", msg.topic), ("Tags", f"[{msg.tags or ''}]"),
        ("Keys", f"[{msg.keys_string or ''}]"),
        ("Queue ID", str(msg.queue_id)), ("Queue Offset", str(msg.queue_offset)),
        ("CommitLog Offset", str(msg.commit_log_offset)), ("Reconsume Times", str(msg.reconsume_times)),
        ("Born Timestamp", _ts(msg.born_timestamp)), ("Store Timestamp", _ts(msg.store_timestamp)),
        ("Born Host", msg.born_host), ("Store Host", msg.store_host), ("System Flag", str(msg.sys_flag)),
        ("Properties", "{" + ", ".join(f"{k}={v}" for k, v in msg.properties.items()) + "}"),
        ("Message Body", body.decode("utf-8", "replace")),
    ]
    for k, v in rows:
        print(f"{k + ':':<21}{v}")


def _query_id_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--msgId", dest="msg_id", required=True)
    p.add_argument("-t", "--topic", help="needed to look up a client (UNIQ_KEY) id")


@command("queryMsgById", "Query Message by Id", _query_id_opts)
async def query_msg_by_id(admin: Admin, args: argparse.Namespace) -> int:
    print_message(await admin.view_message(args.msg_id, args.topic))
    return 0


def _query_key_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-k", "--msgKey", dest="key", required=True)
    p.add_argument("-b", "--beginTimestamp", dest="begin", default="0")
    p.add_argument("-e", "--endTimestamp", dest="end", default=str(2**63 - 1))
    p.add_argument("-c", "--maxNum", dest="max_num", type=int, default=64)


@command("queryMsgByKey", "Query Message by Key", _query_key_opts)
async def query_msg_by_key(admin: Admin, args: argparse.Namespace) -> int:
    msgs = await admin.query_messages(args.topic, args.key, args.max_num, parse_time(args.begin),
                                      parse_time(args.end))
    t = _table("#Message ID", "#QID", "#Offset")
    for m in msgs:
        t.add_row(m.client_msg_id, str(m.queue_id), str(m.queue_offset))
    console.print(t)
    return 0


def _query_offset_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-b", "--brokerName", dest="broker", required=True)
    p.add_argument("-i", "--queueId", dest="queue_id", type=int, required=True)
    p.add_argument("-o", "--offset", type=int, required=True)


@command("queryMsgByOffset", "Query Message by offset", _query_offset_opts)
async def query_msg_by_offset(admin: Admin, args: argparse.Namespace) -> int:
    mq = MessageQueue(topic=args.topic, broker_name=args.broker, queue_id=args.queue_id)
    msgs, _ = await admin.pull(mq, args.offset, 1)
    if not msgs:
        console.print("no message at that offset")
        return 1
    print_message(msgs[0])
    return 0


def _print_msg_opts(p: argparse.ArgumentParser) -> None:
    _topic_opt(p)
    p.add_argument("-c", "--charsetName", dest="charset", default="UTF-8")
    p.add_argument("-s", "--subExpression", dest="sub", default="*")
    p.add_argument("-b", "--beginTimestamp", dest="begin")
    p.add_argument("-e", "--endTimestamp", dest="end")
    p.add_argument("-d", "--printBody", dest="print_body", type=_bool, default=True)


@command("printMsg", "Print Message Detail", _print_msg_opts)
async def print_msg(admin: Admin, args: argparse.Namespace) -> int:
    tags = None if args.sub.strip() == "*" else {t.strip() for t in args.sub.split("||")}
    begin = parse_time(args.begin) if args.begin else None
    end = parse_time(args.end) if args.end else None
    for mq, (lo, hi) in sorted((await admin.queue_bounds(args.topic)).items()):
        print(f"minOffset={lo}, maxOffset={hi}, {mq}")
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
                body = m.decompressed_body().decode(args.charset, "replace") if args.print_body else ""
                print(f"MSGID: {m.client_msg_id} {m} BODY: {body}")
    return 0


def _reset_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--group", required=True)
    _topic_opt(p)
    p.add_argument("-s", "--timestamp", required=True, help="millis, 'now' or yyyy-MM-dd#HH:mm:ss:SSS")
    p.add_argument("-f", "--force", type=_bool, default=True)


@command("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).", _reset_opts)
async def reset_offset_by_time(admin: Admin, args: argparse.Namespace) -> int:
    table = await admin.reset_offset_by_time(args.group, args.topic, parse_time(args.timestamp), args.force)
    console.print(f"rollback consumer offset by specified group[{args.group}], topic[{args.topic}], "
                  f"force[{str(args.force).lower()}], timestamp(string)[{args.timestamp}]")
    t = _table("#brokerName", "#queueId", "#offset")
    for mq in sorted(table):
        t.add_row(mq.broker_name, str(mq.queue_id), str(table[mq]))
    console.print(t)
    return 0

