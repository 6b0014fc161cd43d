"""mqadmin's cluster and broker subcommands: clusterList, brokerStatus, wipeWritePerm, addWritePerm, the broker chores
(cleanExpiredCQ, deleteExpiredCommitLog, cleanUnusedTopic), sendMsgStatus, clusterRT.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from typing import Any

import trio

from ..client.admin import Admin
from ..client.errors import MQClientError
from ..client.java_text import java_str
from ..clock import now_ms
from ..codecs.codes import RequestCode
from .core import Out, broker_or_cluster_opts, command, namesrv_list, need_target, parse_bool, send_result_str


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


@command("clusterList", "List all of clusters", _cluster_list_opts)
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
    now = now_ms()
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


@command("brokerStatus", "Fetch broker runtime status data", broker_or_cluster_opts)
async def broker_status(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    need_target(args)
    result = {}
    for addr in await admin.master_addrs(args.cluster, args.broker_addr):
        table = await admin.broker_runtime_info(addr)
        for k in sorted(table):
            out.line(f"{addr:<24} {k:<32}: {table[k]}" if args.cluster else f"{k:<32}: {table[k]}")
        result[addr] = table
    out.result(result)
    return 0


def _broker_name_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerName", dest="broker_name", required=True, help="broker name")


async def _write_perm(admin: Admin, args: argparse.Namespace, out: Out, wipe: bool) -> int:
    result = {}
    for addr in namesrv_list(args):
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


def _send_status_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--brokerName", dest="broker", required=True, help="broker name (its own topic is used)")
    p.add_argument("-s", "--messageSize", dest="size", type=int, default=128, help="message size")
    p.add_argument("-c", "--count", type=int, default=50, help="how many messages")


def _jodie(size: int) -> bytes:
    return b"hello jodie" * ((size + 10) // 11)  # SendMsgStatusCommand's body


@command("sendMsgStatus", "send msg to broker.", _send_status_opts)
async def send_msg_status(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    from ..client.message import make_message
    from ..client.producer import Producer

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


def _cluster_rt_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-a", "--amount", type=int, default=100, help="messages per broker and round")
    p.add_argument("-s", "--size", type=int, default=128, help="message size in bytes")
    p.add_argument("-c", "--cluster", help="only this cluster (default: every cluster)")
    p.add_argument("-p", "--printLog", dest="tlog", type=parse_bool, default=False,
                   help="print time|room|cluster|broker|rt lines (true|false)")
    p.add_argument("-m", "--machineRoom", dest="room", default="noname", help="machine room name for -p")
    p.add_argument("-i", "--interval", type=float, default=10, help="seconds between rounds")
    p.add_argument("--rounds", type=int, default=0, help="stop after this many rounds (0: until Ctrl-C)")


@command("clusterRT", "List All clusters Message Send RT", _cluster_rt_opts)
async def cluster_rt(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    from ..client.message import make_message
    from ..client.producer import Producer

    info = await admin.cluster_info()
    table = info.cluster_addr_table or {}
    clusters = [args.cluster.strip()] if args.cluster else list(table)
    if not args.tlog:
        out.line(f"{'#Cluster Name':<24}  {'#Broker Name':<24}  {'#RT':<4}  {'#successCount':<8}  {'#failCount':<8}")
    rows: list[dict[str, Any]] = []
    rounds = 0
    async with Producer(str(now_ms()), client=admin.client) as producer:
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
