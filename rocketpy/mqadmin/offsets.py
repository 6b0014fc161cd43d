"""mqadmin's consumer offset subcommands: resetOffsetByTime, skipAccumulatedMessage, cloneGroupOffset."""

from __future__ import annotations

import argparse

from ..client.admin import Admin
from ..client.errors import MQBrokerError
from ..client.java_text import java_bool, java_hash_order
from ..codecs.codes import ResponseCode
from .core import TIME_FORMATS, Out, command, front_string, mq_json, parse_bool, parse_time, topic_opt


def _clone_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-s", "--srcGroup", dest="src", required=True, help="copy from this group")
    p.add_argument("-d", "--destGroup", dest="dest", required=True, help="copy to this group")
    topic_opt(p)
    p.add_argument("-o", "--offline", type=parse_bool, default=False, help="the source group is offline (true|false)")


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


def _reset_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--group", required=True, help="consumer group name")
    topic_opt(p)
    p.add_argument("-s", "--timestamp", required=True, help=f"reset to this time ({TIME_FORMATS})")
    p.add_argument("-f", "--force", type=parse_bool, default=True, help="also move offsets forward (true|false)")
    p.add_argument("-c", "--cplus", dest="cpp", action="store_true",
                   help="reset c++ client offset: the clients are sent the C++ client's offset body")


@command("resetOffsetByTime", "Reset consumer offset by timestamp(without client restart).", _reset_opts)
async def reset_offset_by_time(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    when = parse_time(args.timestamp, now=-1)  # 'now' is -1: the broker takes each queue's max offset
    try:
        table = await admin.reset_offset_by_time(args.group, args.topic, when, args.force, args.cpp, offline=False)
    except MQBrokerError as exc:
        if exc.response_code != ResponseCode.CONSUMER_NOT_ONLINE:
            raise
        return await _reset_offline(admin, args, when, out)  # nobody online: ResetOffsetByTimeOldCommand
    out.line(f"rollback consumer offset by specified group[{args.group}], topic[{args.topic}], "
             f"force[{java_bool(args.force)}], timestamp(string)[{args.timestamp.strip()}], timestamp(long)[{when}]")
    out.line(f"{'#brokerName':<40}  {'#queueId':<40}  {'#offset':<40}")
    for mq in java_hash_order(list(table)):
        out.line(f"{front_string(mq.broker_name, 32):<40}  {mq.queue_id:<40}  {table[mq]:<40}")
    out.result([{**mq_json(mq), "offset": table[mq]} for mq in sorted(table)])
    return 0


async def _reset_offline(admin: Admin, args: argparse.Namespace, when: int, out: Out) -> int:
    rows = await admin.reset_offset_old(args.group, args.topic, when, args.force)
    out.line(f"rollback consumer offset by specified consumerGroup[{args.group}], topic[{args.topic}], "
             f"force[{java_bool(args.force)}], timestamp(string)[{args.timestamp.strip()}], timestamp(long)[{when}]")
    out.line("  ".join(f"{h:<20}" for h in ("#brokerName", "#queueId", "#brokerOffset", "#consumerOffset",
                                              "#timestampOffset", "#rollbackOffset")))
    for r in rows:
        out.line("  ".join(f"{v:<20}" for v in (front_string(r.mq.broker_name, 32), r.mq.queue_id, r.broker_offset,
                                                r.consumer_offset, r.timestamp_offset, r.rollback_offset)))
    out.result([{**mq_json(r.mq), "brokerOffset": r.broker_offset, "consumerOffset": r.consumer_offset,
                 "timestampOffset": r.timestamp_offset, "rollbackOffset": r.rollback_offset} for r in rows])
    return 0


def _skip_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--group", required=True, help="consumer group name")
    topic_opt(p)
    p.add_argument("-f", "--force", type=parse_bool, default=True, help="also move offsets forward (true|false)")


@command("skipAccumulatedMessage", "Skip all messages that are accumulated (not consumed) currently", _skip_opts)
async def skip_accumulated_message(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    table = await admin.reset_offset_by_time(args.group.strip(), args.topic.strip(), -1, args.force)
    out.line(f"{'#brokerName':<40}  {'#queueId':<40}  {'#offset':<40}")
    for q in java_hash_order(list(table)):
        out.line(f"{front_string(q.broker_name, 32):<40}  {q.queue_id:<40}  {table[q]:<40}")
    out.result([{**mq_json(q), "offset": table[q]} for q in sorted(table)])
    return 0
