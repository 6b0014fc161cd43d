"""Message trace: follow a message id or key through captures and a store.

A message is known by several names: the client-made id (UNIQ_KEY, what producers
log as msgId), the offset msg id the broker answers a send with (store host +
CommitLog offset), and its keys. Any of them is a starting point. The trace first
widens the given names to every UNIQ_KEY they reach (a retried copy keeps the UNIQ_KEY
and names the first copy in ORIGIN_MESSAGE_ID), then lists every event, by time (a store
record, stamped in milliseconds, after the capture event of its millisecond that made the
broker write it: see :func:`in_causal_order`):

* ``sent``: a SEND request carrying it (client, producer group, topic, queue), with
  ``send_result`` for the broker's answer (status, offset msg id, queue offset);
* ``stored``, ``scheduled`` (SCHEDULE_TOPIC_XXXX, waiting for a delay level),
  ``half`` (a transaction's prepared copy), ``retry`` (a %RETRY% topic), ``dlq``
  (a %DLQ% topic): CommitLog records of it;
* ``pulled``: a PULL response delivering it (consumer client and group);
* ``sent_back``: CONSUMER_SEND_MSG_BACK for it (the consumer asked for redelivery);
* ``end_transaction``, ``check_transaction``, ``queried``, ``consume_directly``,
  ``reply_pushed``: the other commands that name or carry it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from ...codecs.codes import MessageConst, RequestCode
from ._common import add_common_args, lake_for, print_table, session, table, write_json, write_parquet

EVENT_COLUMNS = [
    "time",
    "event",
    "source",
    "who",
    "group",
    "topic",
    "queue_id",
    "queue_offset",
    "commit_log_offset",
    "msg_id",
    "uniq_key",
    "detail",
]

_SEND_CODES = (
    int(RequestCode.SEND_MESSAGE),
    int(RequestCode.SEND_MESSAGE_V2),
    int(RequestCode.SEND_BATCH_MESSAGE),
    int(RequestCode.SEND_REPLY_MESSAGE),
    int(RequestCode.SEND_REPLY_MESSAGE_V2),
)

# What a command carrying the message means for it, by code (requests unless noted).
_CARRIER_EVENTS = {
    int(RequestCode.CHECK_TRANSACTION_STATE): "check_transaction",
    int(RequestCode.CONSUME_MESSAGE_DIRECTLY): "consume_directly",
    int(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT): "reply_pushed",
}
_RESPONSE_EVENTS = {
    int(RequestCode.PULL_MESSAGE): "pulled",
    int(RequestCode.QUERY_MESSAGE): "queried",
    int(RequestCode.VIEW_MESSAGE_BY_ID): "queried",
}
_COMMIT_OR_ROLLBACK = {"8": "commit", "12": "rollback", "0": "unknown"}


@dataclass
class TraceResult:
    """The names the trace followed and its events, oldest first."""

    ids: list[str]
    keys: list[str]
    uniq_keys: list[str]
    events: list[dict[str, Any]] = field(default_factory=list)

    def of(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == event]


def _store_stage(topic: str | None) -> str:
    topic = topic or ""
    if topic.startswith("%RETRY%"):
        return "retry"
    if topic.startswith("%DLQ%"):
        return "dlq"
    if topic == "SCHEDULE_TOPIC_XXXX":
        return "scheduled"
    if topic == "RMQ_SYS_TRANS_HALF_TOPIC":
        return "half"
    return "stored"


#: the capture events that make the broker write a store record of each stage (a send, a send-back for a
#: retry, a commit); what the schedule's timer writes later has no cause in the capture
_STORE_CAUSES = {
    "stored": ("sent", "end_transaction"),
    "half": ("sent",),
    "scheduled": ("sent", "sent_back"),
    "retry": ("sent_back",),
    "dlq": ("sent_back",),
}


def _millisecond(t: Any) -> Any:
    return t.replace(microsecond=t.microsecond - t.microsecond % 1000)


def in_causal_order(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events by time, a store record among the capture events of its millisecond where it belongs.

    The broker stamps a record in milliseconds, the capture its packets in microseconds: a message sent at
    .123456 and stored in the same millisecond has a store time of .123000, before its own send. So a record
    goes right after the first capture event of its millisecond that made the broker write it (its send, the
    consumer's send-back, the commit), and before the others of that millisecond (the send's answer, a pull)
    when none did. Events of one time keep the order they were found in (records by CommitLog offset)."""
    causes: dict[tuple[Any, str], Any] = {}
    for e in events:
        t = e["time"]
        if t is not None and e["event"] not in _STORE_CAUSES:
            at = (_millisecond(t), e["event"])
            causes[at] = min(t, causes.get(at, t))

    def key(item: tuple[int, dict[str, Any]]) -> tuple[Any, ...]:
        found, e = item
        t = e["time"]
        if t is None:
            return (1, 0, 0, found)
        kinds = _STORE_CAUSES.get(e["event"])
        if kinds is None:
            return (0, t, 0, found)
        ms = _millisecond(t)
        made_by = [causes[(ms, k)] for k in kinds if (ms, k) in causes]
        return (0, min(made_by), 1, found) if made_by else (0, ms, -1, found)

    return [e for _, e in sorted(enumerate(events), key=key)]


def _matches(spark_f: Any, uniq_col: Any, id_col: Any, keys_col: Any, names: list[str], keys: list[str]) -> Any:
    F = spark_f
    cond = F.lit(False)
    if names:
        cond = cond | uniq_col.isin(*names) | id_col.isin(*names)
    if keys:
        cond = cond | F.coalesce(F.arrays_overlap(keys_col, F.array(*[F.lit(k) for k in keys])), F.lit(False))
    return cond


def run(
    spark: Any,
    ids: list[str],
    keys: list[str] | None = None,
    captures: list[str] | None = None,
    store: str | None = None,
    out: str | None = None,
    lake: str | None = None,
) -> TraceResult:
    """Trace ``ids`` (UNIQ_KEYs or offset msg ids) and ``keys`` through ``captures`` and ``store``.

    Both are exported into ``lake`` first (only what is new), or into a temporary lake; with
    ``lake`` alone, what the lake holds is traced.
    """
    keys = list(keys or [])
    names = sorted({i.strip().upper() for i in ids if i.strip()})
    if not names and not keys:
        raise ValueError("nothing to trace: give a message id or a key")
    with lake_for(
        spark,
        lake,
        store=os.path.abspath(store) if store else None,
        captures=[os.path.abspath(p) for p in captures or []],
    ) as lk:
        from pyspark.sql import functions as F

        recs = None
        if "messages" in lk.tables():
            recs = table(spark, lk, "messages").filter(F.col("record_type") == "message").drop("body").cache()
        frames = table(spark, lk, "frames").cache() if "frames" in lk.tables() else None
        try:
            return _trace(spark, names, keys, recs, frames, out)
        finally:
            for df in (recs, frames):
                if df is not None:
                    df.unpersist()


def _trace(spark: Any, names: list[str], keys: list[str], recs: Any, frames: Any, out: str | None) -> TraceResult:
    from pyspark.sql import functions as F

    # 1. Widen the names: every UNIQ_KEY reached by an id, an offset id, a key, or an origin id.
    uniq: set[str] = set(names)
    if recs is not None:
        origin = recs["properties"].getItem(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID)
        cond = _matches(F, recs["uniq_key"], recs["msg_id"], recs["keys"], names, keys)
        if names:
            cond = cond | origin.isin(*names)
        uniq.update(r[0] for r in recs.filter(cond).select("uniq_key").distinct().collect() if r[0])
    if frames is not None:
        carried = frames.filter(F.col("msg_index").isNotNull())
        cond = _matches(F, carried["msg_uniq_key"], carried["msg_id"], carried["msg_keys"], names, keys)
        uniq.update(r[0] for r in carried.filter(cond).select("msg_uniq_key").distinct().collect() if r[0])
        if names:
            # A send's answer names the stored copy by offset id: map it back to the sent UNIQ_KEY.
            resp = frames.filter((F.col("kind") == "response") & F.col("request_code").isin(*_SEND_CODES)).select(
                "file", "client", "opaque", F.explode(F.split(F.col("ext_fields")["msgId"], ",")).alias("oid")
            )
            hit = resp.filter(F.col("oid").isin(*names))
            sent = carried.filter((F.col("kind") == "request") & F.col("code").isin(*_SEND_CODES))
            uniq.update(
                r[0]
                for r in sent.join(hit, ["file", "client", "opaque"]).select("msg_uniq_key").distinct().collect()
                if r[0]
            )
    uniq_keys = sorted(uniq)

    events: list[dict[str, Any]] = []
    # 2. The store: every record with one of the UNIQ_KEYs (or one of the offset ids).
    if recs is not None:
        cond = recs["uniq_key"].isin(*uniq_keys) | recs["msg_id"].isin(*uniq_keys)
        for r in recs.filter(cond).orderBy("store_timestamp", "commit_log_offset").collect():
            props = r["properties"] or {}
            stage = _store_stage(r["topic"])
            notes: list[str] = []
            if props.get(MessageConst.PROPERTY_REAL_TOPIC):
                notes.append(f"real topic {props[MessageConst.PROPERTY_REAL_TOPIC]}")
            if props.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL):
                notes.append(f"delay level {props[MessageConst.PROPERTY_DELAY_TIME_LEVEL]}")
            if r["reconsume_times"]:
                notes.append(f"reconsume times {r['reconsume_times']}")
            if props.get(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID):
                notes.append(f"origin {props[MessageConst.PROPERTY_ORIGIN_MESSAGE_ID]}")
            if r["crc_ok"] is False:
                notes.append("BODY CRC FAILS")
            events.append(
                {
                    "time": r["store_time"],
                    "event": stage,
                    "source": r["file"],
                    "who": r["born_host"],
                    "group": props.get("PGROUP"),
                    "topic": r["topic"],
                    "queue_id": r["queue_id"],
                    "queue_offset": r["queue_offset"],
                    "commit_log_offset": r["commit_log_offset"],
                    "msg_id": r["msg_id"],
                    "uniq_key": r["uniq_key"],
                    "detail": "; ".join(notes) or None,
                }
            )
    # 3. The captures.
    if frames is not None:
        carried = frames.filter(F.col("msg_index").isNotNull() & F.col("msg_uniq_key").isin(*uniq_keys))
        answers = frames.filter(F.col("kind") == "response").select(
            "file",
            "client",
            "opaque",
            F.col("ext_fields").alias("r_ext"),
            F.col("time").alias("r_time"),
            F.col("code_name").alias("r_status"),
        )
        sends = carried.filter((F.col("kind") == "request") & F.col("code").isin(*_SEND_CODES))
        for r in sends.join(answers, ["file", "client", "opaque"], "left").orderBy("ts").collect():
            base = {
                "source": r["file"],
                "who": r["client"],
                "group": r["group"],
                "topic": r["msg_topic"],
                "queue_id": r["msg_queue_id"],
                "uniq_key": r["msg_uniq_key"],
            }
            events.append({**base, "time": r["time"], "event": "sent", "detail": r["code_name"]})
            if r["r_time"] is not None:
                ext = r["r_ext"] or {}
                ids_answered = (ext.get("msgId") or "").split(",")
                offset_id = ids_answered[r["msg_index"]] if r["msg_index"] < len(ids_answered) else None
                events.append(
                    {
                        **base,
                        "time": r["r_time"],
                        "event": "send_result",
                        "queue_id": int(ext["queueId"]) if ext.get("queueId") else r["msg_queue_id"],
                        "queue_offset": int(ext["queueOffset"]) + r["msg_index"] if ext.get("queueOffset") else None,
                        "msg_id": offset_id or None,
                        "detail": r["r_status"],
                    }
                )
        delivered = carried.filter(
            ((F.col("kind") == "response") & F.col("request_code").isin(*_RESPONSE_EVENTS))
            | ((F.col("kind") == "request") & F.col("code").isin(*_CARRIER_EVENTS))
        )
        for r in delivered.orderBy("ts").collect():
            event = _RESPONSE_EVENTS[r["request_code"]] if r["kind"] == "response" else _CARRIER_EVENTS[r["code"]]
            events.append(
                {
                    "time": r["time"],
                    "event": event,
                    "source": r["file"],
                    "who": r["client"],
                    "group": r["group"],
                    "topic": r["msg_topic"],
                    "queue_id": r["msg_queue_id"],
                    "queue_offset": r["msg_queue_offset"],
                    "commit_log_offset": r["msg_commit_log_offset"],
                    "msg_id": r["msg_id"],
                    "uniq_key": r["msg_uniq_key"],
                    "detail": f"reconsume times {r['msg_reconsume_times']}" if r["msg_reconsume_times"] else None,
                }
            )
        # Commands that name the message in their header instead of carrying it.
        offsets = {e["commit_log_offset"] for e in events if e.get("commit_log_offset") is not None}
        ext = F.col("ext_fields")
        named = frames.filter(
            (F.col("kind") == "request")
            & (
                (
                    (F.col("code") == int(RequestCode.CONSUMER_SEND_MSG_BACK))
                    & (ext["originMsgId"].isin(*uniq_keys) | ext["offset"].isin(*[str(o) for o in offsets] or ["-1"]))
                )
                | ((F.col("code") == int(RequestCode.END_TRANSACTION)) & ext["msgId"].isin(*uniq_keys))
            )
        ).select("file", "client", "opaque", "time", "code", "group", "ext_fields", "response_code_name")
        for r in named.orderBy("ts").collect():
            e = r["ext_fields"] or {}
            if r["code"] == int(RequestCode.CONSUMER_SEND_MSG_BACK):
                event = "sent_back"
                detail = (
                    f"delay level {e.get('delayLevel')}, max reconsume {e.get('maxReconsumeTimes')}, "
                    f"answer {r['response_code_name']}"
                )
                topic = e.get("originTopic")
                offset = int(e["offset"]) if e.get("offset", "").lstrip("-").isdigit() else None
                uniq_key = e.get("originMsgId")
            else:
                event = "end_transaction"
                state = _COMMIT_OR_ROLLBACK.get(e.get("commitOrRollback", ""), e.get("commitOrRollback"))
                detail = f"{state}{' (from a broker check)' if e.get('fromTransactionCheck') == 'true' else ''}"
                topic = None
                offset = int(e["commitLogOffset"]) if e.get("commitLogOffset", "").isdigit() else None
                uniq_key = e.get("msgId")
            events.append(
                {
                    "time": r["time"],
                    "event": event,
                    "source": r["file"],
                    "who": r["client"],
                    "group": r["group"],
                    "topic": topic,
                    "queue_id": None,
                    "queue_offset": None,
                    "commit_log_offset": offset,
                    "msg_id": None,
                    "uniq_key": uniq_key,
                    "detail": detail,
                }
            )
    for e in events:
        for c in EVENT_COLUMNS:
            e.setdefault(c, None)
    events = in_causal_order(events)
    result = TraceResult(ids=names, keys=keys, uniq_keys=uniq_keys, events=events)
    if out:
        from pyspark.sql.types import (
            IntegerType,
            LongType,
            StringType,
            StructField,
            StructType,
            TimestampType,
        )

        types = {
            "time": TimestampType(),
            "queue_id": IntegerType(),
            "queue_offset": LongType(),
            "commit_log_offset": LongType(),
        }
        schema = StructType([StructField(c, types.get(c, StringType())) for c in EVENT_COLUMNS])
        df = spark.createDataFrame([tuple(e[c] for c in EVENT_COLUMNS) for e in events], schema)
        write_parquet(df, out, "events")
        write_json({"ids": names, "keys": keys, "uniqKeys": uniq_keys, "events": events}, out, "trace.json")
    if recs is not None:
        recs.unpersist()
    if frames is not None:
        frames.unpersist()
    return result


def report(result: TraceResult) -> None:
    print(f"Trace of ids {result.ids or '-'} keys {result.keys or '-'}")
    print(f"  UNIQ_KEYs followed: {', '.join(result.uniq_keys) or '-'}")
    if not result.events:
        print("  nothing found")
        return
    print_table("events", result.events, EVENT_COLUMNS[:2] + EVENT_COLUMNS[3:], limit=10_000)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="message_trace.py",
        description="Follow a RocketMQ message by id (UNIQ_KEY or offset msg id) or key across captures and a "
        "broker store: sent (by whom, when), stored (offset), pulled (by which consumer), sent back "
        "for retry, in the DLQ.",
    )
    parser.add_argument("--id", action="append", default=[], help="a message id: UNIQ_KEY or offset msg id")
    parser.add_argument("--key", action="append", default=[], help="a message key (KEYS property)")
    parser.add_argument("--captures", nargs="+", default=[], help="pcap files or directories")
    parser.add_argument("--store", help="a broker store directory")
    parser.add_argument("--out", help="directory for events/ (Parquet) and trace.json")
    parser.add_argument("--json", action="store_true", help="print the events as JSON instead of a table")
    add_common_args(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.id and not args.key:
        parser.error("give --id or --key")
    if not args.captures and not args.store and not args.lake:
        parser.error("give --captures or --store (or both), or a --lake holding them")
    spark = session("rocketmq-message-trace", args)
    result = run(spark, args.id, args.key, args.captures, args.store, args.out, args.lake)
    if args.json:
        json.dump(
            {"ids": result.ids, "uniqKeys": result.uniq_keys, "events": result.events},
            sys.stdout,
            indent=2,
            default=str,
        )
        print()
    else:
        report(result)
    return 0 if result.events else 1
