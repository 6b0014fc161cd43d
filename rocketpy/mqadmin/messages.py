"""mqadmin's message subcommands: queryMsgById, queryMsgByUniqueKey, queryMsgByKey, queryMsgByOffset, sendMessage,
printMsg, printMsgByQueue, consumeMessage, checkMsgSendRT, queryMsgTraceById, queryCq.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from ..cli import command_label
from ..client.admin import Admin
from ..client.cli import message_json
from ..client.errors import BadArgument, MQClientError
from ..client.java_text import (
    decode_trace,
    java_bool,
    java_hash_order,
    java_name,
    java_props,
    java_str,
    message_ext_str,
    mq_str,
)
from ..clock import now_ms
from ..codecs.bodies import MessageQueue
from ..codecs.message import MessageExt
from ..javacompat.lang import java_string_hash
from .core import (
    TIME_FORMATS,
    Out,
    command,
    parse_bool,
    parse_time,
    send_result_str,
    time_ms_str,
    time_str,
    topic_opt,
)

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
        ("Born Timestamp:", time_ms_str(msg.born_timestamp)), ("Store Timestamp:", time_ms_str(msg.store_timestamp)),
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
        print(f"{command_label('admin')}: cannot tell which groups consumed it: {exc}", file=sys.stderr)
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
    from ..client.errors import MQBrokerError

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
    from ..client.cli import fail

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

    from ..client.cli import fail
    from ..client.producer import Producer
    from ..codecs.message import Message

    client = admin.client
    if unit_name:
        from ..client.instance import ClientInstance

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
    topic_opt(p)
    p.add_argument("-k", "--msgKey", dest="key", required=True, help="message key")
    p.add_argument("-b", "--beginTimestamp", dest="begin", default="0", help=f"from ({TIME_FORMATS})")
    p.add_argument("-e", "--endTimestamp", dest="end", default=str(2**63 - 1), help=f"to ({TIME_FORMATS})")
    p.add_argument("-c", "--maxNum", dest="max_num", type=int, default=64, help="at most this many messages")


@command("queryMsgByKey", "Query Message by Key", _query_key_opts)
async def query_msg_by_key(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    begin, end = parse_time(args.begin), parse_time(args.end)
    msgs = await admin.query_messages(args.topic, args.key, args.max_num, begin, end)
    if not msgs:  # MQAdminImpl.queryMessage's failure, as mqadmin reports it
        raise MQClientError("CODE: 208 DESC: query message by key finished, but no message.", 208)
    out.line(f"{'#Message ID':<50} {'#QID':>4} {'#Offset':>40}")
    for m in msgs:
        out.line(f"{java_str(m.client_msg_id):<50} {m.queue_id:>4} {m.queue_offset:>40}")
    out.result([{"msgId": m.client_msg_id, "queueId": m.queue_id, "queueOffset": m.queue_offset} for m in msgs])
    return 0


def _query_offset_opts(p: argparse.ArgumentParser) -> None:
    topic_opt(p)
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
    topic_opt(p)
    p.add_argument("-p", "--body", required=True, help="UTF-8 string format of the message body")
    p.add_argument("-k", "--key", help="message keys")
    p.add_argument("-c", "--tags", help="message tags")
    p.add_argument("-b", "--broker", help="send to this broker (name)")
    p.add_argument("-i", "--qid", type=int, help="send to this queue (needs -b)")
    p.add_argument("-m", "--msgTraceEnable", dest="trace", default="false",
                   help="Message Trace Enable: 'true' also writes the Pub trace record to RMQ_SYS_TRACE_TOPIC")


@command("sendMessage", "Send a message", _send_opts)
async def send_message(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    from ..client.message import make_message
    from ..client.producer import Producer

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


def _tag_set(sub: str) -> set[str] | None:
    """The tags of a subscription expression (TagA || TagB), None for every tag (*)."""
    return None if sub.strip() == "*" else {t.strip() for t in sub.split("||")}


async def _queue_messages(
    admin: Admin, mq: MessageQueue, lo: int, hi: int, tags: set[str] | None
) -> AsyncIterator[MessageExt]:
    """The messages of ``mq`` from offset ``lo`` up to ``hi`` with a tag in ``tags`` (any when None), 32 a pull."""
    offset = lo
    while offset < hi:
        msgs, nxt = await admin.pull(mq, offset, 32)
        if nxt <= offset:
            return
        offset = nxt
        for m in msgs:
            if tags is None or m.tags in tags:
                yield m


def _charset_tags_time_opts(p: argparse.ArgumentParser) -> None:
    """-c -s -b -e of printMsg and printMsgByQueue."""
    p.add_argument("-c", "--charsetName", dest="charset", default="UTF-8", help="body charset")
    p.add_argument("-s", "--subExpression", dest="sub", default="*", help="tag expression (TagA || TagB)")
    p.add_argument("-b", "--beginTimestamp", dest="begin", help=f"from ({TIME_FORMATS})")
    p.add_argument("-e", "--endTimestamp", dest="end", help=f"to ({TIME_FORMATS})")


def _print_msg_opts(p: argparse.ArgumentParser) -> None:
    topic_opt(p)
    _charset_tags_time_opts(p)
    p.add_argument("-d", "--printBody", dest="print_body", type=parse_bool, default=True,
                   help="print bodies (true|false)")


@command("printMsg", "Print Message Detail", _print_msg_opts)
async def print_msg(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    tags = _tag_set(args.sub)
    begin = parse_time(args.begin) if args.begin else None
    end = parse_time(args.end) if args.end else None
    rows = []
    for mq, (lo, hi) in sorted((await admin.queue_bounds(args.topic)).items()):
        out.line(f"minOffset={lo}, maxOffset={hi}, MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, "
                 f"queueId={mq.queue_id}]")
        async for m in _queue_messages(admin, mq, lo, hi, tags):
            if (begin is not None and m.store_timestamp < begin) or (end is not None and m.store_timestamp > end):
                continue
            body = m.decompressed_body().decode(args.charset, "replace") if args.print_body else "NOT PRINT BODY"
            out.line(f"MSGID: {m.client_msg_id} {message_ext_str(m, mq.broker_name)} BODY: {body}")
            rows.append({**message_json(m), **({} if args.print_body else {"body": None})})
        out.line("-" * 56)
    out.result(rows)
    return 0


def _print_by_queue_opts(p: argparse.ArgumentParser) -> None:
    topic_opt(p)
    p.add_argument("-a", "--brokerName", dest="broker", required=True, help="broker name")
    p.add_argument("-i", "--queueId", dest="queue_id", type=int, required=True, help="queue id")
    _charset_tags_time_opts(p)
    p.add_argument("-p", "--printMsg", dest="print_msg", type=parse_bool, default=False,
                   help="print each message (true|false)")
    p.add_argument("-d", "--printBody", dest="print_body", type=parse_bool, default=False,
                   help="print bodies (true|false)")
    p.add_argument("-f", "--calculate", type=parse_bool, default=False, help="count messages by tag (true|false)")


@command("printMsgByQueue", "Print Message Detail", _print_by_queue_opts)
async def print_msg_by_queue(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    topic = args.topic.strip()
    mq = MessageQueue(topic=topic, broker_name=args.broker.strip(), queue_id=args.queue_id)
    bounds = await admin.queue_bounds(topic)
    if all(q.broker_name != mq.broker_name for q in bounds):  # as MQAdminImpl.minOffset finds no address
        raise MQClientError(f"The broker[{mq.broker_name}] not exist")
    lo, hi = bounds.get(mq, (0, 0))
    if args.begin:
        lo = await admin.search_offset(mq, parse_time(args.begin))
    if args.end:
        hi = await admin.search_offset(mq, parse_time(args.end))
    counts: dict[str, int] = {}
    rows = []
    async for m in _queue_messages(admin, mq, lo, hi, _tag_set(args.sub)):
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


def _query_cq_opts(p: argparse.ArgumentParser) -> None:
    topic_opt(p)
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


def _check_rt_opts(p: argparse.ArgumentParser) -> None:
    topic_opt(p)
    p.add_argument("-a", "--amount", type=int, default=100, help="message amount")
    p.add_argument("-s", "--size", type=int, default=128, help="message size in bytes")


@command("checkMsgSendRT", "check message send response time", _check_rt_opts)
async def check_msg_send_rt(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    from ..client.message import make_message
    from ..client.producer import Producer

    fmt = "{:<32}  {:<4}  {:<20}    {}"
    out.line(fmt.format("#Broker Name", "#QID", "#Send Result", "#RT"))
    picked: list[MessageQueue] = []

    def by_index(mqs: Any, msg: Any, i: Any) -> MessageQueue:
        picked.append(mqs[i % len(mqs)])
        return picked[-1]

    total, rows = 0, []
    msg = make_message(args.topic.strip(), b"a" * args.size)
    async with Producer(str(now_ms()), client=admin.client) as producer:
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
    topic_opt(p)
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
    now = now_ms()
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


def _trace_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("-i", "--msgId", dest="msg_id", required=True, help="message id (UNIQ_KEY)")
    p.add_argument("-t", "--traceTopic", dest="trace_topic", default="RMQ_SYS_TRACE_TOPIC", help="trace topic")


@command("queryMsgTraceById", "query a message trace", _trace_opts)
async def query_msg_trace_by_id(admin: Admin, args: argparse.Namespace, out: Out) -> int:
    msg_id, topic = args.msg_id.strip(), args.trace_topic.strip()
    traces = await admin.query_messages(topic, msg_id, 64, 0, now_ms())
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
            out.line(fmt.format("Pub", java_str(v["group"]), v["clientHost"], time_str(v["timestamp"]),
                                f"{v['costTime']}ms", "success" if v["success"] else "failed"))
            out.line()
        else:
            subs.setdefault(java_str(v["group"]), []).append(v)
    for group in java_hash_order(list(subs), java_string_hash):
        out.line(fmt.format("#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status"))
        for v in subs[group]:
            out.line(fmt.format("Sub", group, v["clientHost"], time_str(v["timestamp"]), f"{v['costTime']}ms",
                                "success" if v["success"] else "failed"))
        out.line()
    out.result(views)
    return 0
