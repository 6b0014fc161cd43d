"""Store audit: the ConsumeQueues checked against the CommitLog of a broker's store.

Finds, each as a row of one ``findings`` table (kind, topic, queue, offsets, detail):

* ``crc_failure``: a record whose body does not match its stored CRC;
* ``corrupt_region``: bytes where records should be that hold none (torn writes,
  zeroed or overwritten stretches); reading resumes at the next consistent record;
* ``misplaced_record``: a record whose own physical-offset field disagrees with where it sits;
* ``dangling_entry``: a queue unit pointing where no record starts, or at a record of
  another size, topic, queue or queue offset;
* ``queue_hole``: an unwritten (zero) unit in a queue, followed by written ones;
* ``orphan_record``: a record no queue unit points to, with the likely reason;
* ``queue_offset_gap``: queue offsets missing between a queue's units (a lost file);
* ``message_offset_gap`` / ``duplicate_queue_offset``: the records of one queue do not
  number 0, 1, 2, ... (messages lost from the CommitLog, or written twice);
* ``commitlog_file_gap``: CommitLog files that do not follow each other.

Per-topic counts go to a ``topics`` table; both are written as Parquet, with a
``summary.json``, and printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from ...codecs.codes import MessageConst, MessageSysFlag
from ...codecs.errors import CodecError
from ...codecs.store_records import parse_checkpoint
from .._files import commitlog_files
from ._common import add_common_args, lake_for, print_table, session, table, write_json, write_parquet

FINDING_COLUMNS = ["kind", "topic", "queue_id", "queue_offset", "commit_log_offset", "size", "file", "detail"]

# Records the broker never puts in a ConsumeQueue: CommitLogDispatcherBuildConsumeQueue
# skips prepared and rollback transaction records.
_NOT_DISPATCHED = (int(MessageSysFlag.TRANSACTION_PREPARED_TYPE), int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE))


@dataclass
class AuditResult:
    """What the audit found; ``findings`` and ``topics`` are lists of plain dicts."""

    summary: dict[str, Any]
    findings: list[dict[str, Any]] = field(default_factory=list)
    topics: list[dict[str, Any]] = field(default_factory=list)

    def kinds(self) -> dict[str, int]:
        """Findings per kind (all of them, also those beyond ``max_findings``)."""
        return dict(self.summary.get("findingsByKind", {}))


def _known_topics(store: str) -> set[str] | None:
    """Topics in config/topics.json, or None when it is absent or unreadable."""
    path = os.path.join(store, "config", "topics.json")
    try:
        with open(path, encoding="utf-8") as f:
            return set(json.load(f).get("topicConfigTable", {}))
    except (OSError, ValueError, AttributeError):
        return None


def _checkpoint(store: str) -> dict[str, int] | None:
    try:
        with open(os.path.join(store, "checkpoint"), "rb") as f:
            cp = parse_checkpoint(f.read(24))
    except (OSError, CodecError):
        return None
    return {
        "physicMsgTimestamp": cp.physic_msg_timestamp,
        "logicsMsgTimestamp": cp.logics_msg_timestamp,
        "indexMsgTimestamp": cp.index_msg_timestamp,
    }


def _file_gaps(store: str) -> list[dict[str, Any]]:
    """CommitLog files must follow each other: each starts where the previous one ends."""
    out: list[dict[str, Any]] = []
    try:
        files = commitlog_files([store])
    except FileNotFoundError:
        return out
    for (prev, prev_base), (path, base) in zip(files, files[1:]):
        expected = prev_base + os.path.getsize(prev)
        if base != expected:
            out.append(
                {
                    "kind": "commitlog_file_gap",
                    "commit_log_offset": expected,
                    "size": base - expected,
                    "file": path,
                    "detail": f"CommitLog offsets {expected}..{base - 1} have no file (the previous file ends at "
                    f"{expected}, this one starts at {base})",
                }
            )
    return out


def run(
    spark: Any,
    store: str,
    out: str | None = None,
    write_records: bool = False,
    max_findings: int = 10_000,
    lake: str | None = None,
) -> AuditResult:
    """Audit the store directory ``store``; write Parquet under ``out`` when given.

    The store is exported into ``lake`` first (only what is new), or into a temporary lake,
    and the audit reads the lake. At most ``max_findings`` findings come back to the driver
    (a wrecked store can have millions); the Parquet output and the counts per kind have them all.
    """
    store = os.path.abspath(store)
    with lake_for(spark, lake, store=store) as lk:
        recs = table(spark, lk, "messages").drop("body").cache()
        cq = table(spark, lk, "consume_queues").cache()
        try:
            return _audit(spark, store, recs, cq, out, write_records, max_findings)
        finally:
            recs.unpersist()
            cq.unpersist()


def _audit(
    spark: Any, store: str, recs: Any, cq: Any, out: str | None, write_records: bool, max_findings: int
) -> AuditResult:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    msgs = recs.filter(F.col("record_type") == "message")
    entries = cq.filter(F.col("valid") & ~F.col("pre_blank"))

    def finding(df: Any, kind: str, **cols: Any) -> Any:
        base = {
            "topic": F.col("topic"),
            "queue_id": F.col("queue_id"),
            "queue_offset": F.col("queue_offset"),
            "commit_log_offset": F.col("commit_log_offset"),
            "size": F.lit(None),
            "file": F.col("file"),
        }
        base.update(cols)
        types = {
            "topic": "string",
            "queue_id": "int",
            "queue_offset": "bigint",
            "commit_log_offset": "bigint",
            "size": "int",
            "file": "string",
            "detail": "string",
        }
        return df.select(
            F.lit(kind).alias("kind"),
            *[base[c].cast(types[c]).alias(c) for c in FINDING_COLUMNS[1:]],
        )

    log_end = msgs.agg(F.max(F.col("commit_log_offset") + F.col("store_size"))).first()[0] or 0

    crc = finding(
        msgs.filter(F.col("crc_ok") == F.lit(False)),
        "crc_failure",
        size=F.col("store_size"),
        detail=F.format_string("body CRC stored as %d does not match the %d-byte body", "body_crc", "body_size"),
    )
    corrupt = finding(
        recs.filter(F.col("record_type") == "corrupt"),
        "corrupt_region",
        size=F.col("store_size"),
        detail=F.format_string("%d bytes hold no valid record: %s", "store_size", "error"),
    )
    misplaced = finding(
        msgs.filter(F.col("physical_offset") != F.col("commit_log_offset")),
        "misplaced_record",
        size=F.col("store_size"),
        detail=F.format_string("the record says it is at offset %d", "physical_offset"),
    )

    r = msgs.select(
        F.col("commit_log_offset").alias("r_offset"),
        F.col("store_size").alias("r_size"),
        F.col("topic").alias("r_topic"),
        F.col("queue_id").alias("r_queue_id"),
        F.col("queue_offset").alias("r_queue_offset"),
        F.col("properties").getItem(MessageConst.PROPERTY_INNER_MULTI_DISPATCH).alias("r_multi"),
    )
    joined = entries.join(r, entries["commit_log_offset"] == r["r_offset"], "left")
    # A record multi-dispatched (LMQ) to this queue legitimately sits under another topic.
    multi = F.coalesce(F.array_contains(F.split(F.col("r_multi"), ","), F.col("topic")), F.lit(False))
    wrong_place = ~multi & (
        (F.col("r_topic") != F.col("topic"))
        | (F.col("r_queue_id") != F.col("queue_id"))
        | (F.col("r_queue_offset") != F.col("queue_offset"))
    )
    dangling = finding(
        joined.filter(F.col("r_offset").isNull() | (F.col("r_size") != F.col("size")) | wrong_place),
        "dangling_entry",
        size=F.col("size"),
        detail=F.when(
            F.col("r_offset").isNull() & (F.col("commit_log_offset") >= F.lit(log_end)),
            F.format_string("points past the end of the CommitLog (last record ends at %d)", F.lit(log_end)),
        )
        .when(F.col("r_offset").isNull(), F.lit("no record starts at this CommitLog offset"))
        .when(
            F.col("r_size") != F.col("size"),
            F.format_string("unit says %d bytes, the record there is %d", "size", "r_size"),
        )
        .otherwise(
            F.format_string("points at a record of %s queue %d offset %d", "r_topic", "r_queue_id", "r_queue_offset")
        ),
    )
    holes = finding(
        cq.filter(~F.col("valid")),
        "queue_hole",
        size=F.col("size"),
        detail=F.format_string(
            "unit not written (offset %d, size %d) while later units of the queue are",
            "commit_log_offset",
            "size",
        ),
    )

    qstats = entries.groupBy("topic", "queue_id").agg(
        F.min("queue_offset").alias("q_min"), F.max("queue_offset").alias("q_max")
    )
    dispatched = msgs.filter(~F.col("transaction_type").isin(*_NOT_DISPATCHED))
    pointed = entries.select(F.col("commit_log_offset").alias("p_offset")).distinct()
    orphans = dispatched.join(pointed, dispatched["commit_log_offset"] == pointed["p_offset"], "left_anti")
    orphans = orphans.join(qstats, ["topic", "queue_id"], "left")
    known = _known_topics(store)
    if known is None:
        unknown_topic = F.lit(False)
    elif known:
        unknown_topic = ~F.col("topic").isin(*sorted(known))
    else:
        unknown_topic = F.lit(True)
    orphan = finding(
        orphans,
        "orphan_record",
        size=F.col("store_size"),
        detail=F.when(
            F.col("q_min").isNull() & unknown_topic,
            F.lit("no consume queue for this topic/queue; the topic is not in config/topics.json (deleted?)"),
        )
        .when(F.col("q_min").isNull(), F.lit("no consume queue for this topic/queue"))
        .when(
            F.col("queue_offset") > F.col("q_max"),
            F.format_string("after the queue's last unit (offset %d): never dispatched", "q_max"),
        )
        .when(
            F.col("queue_offset") < F.col("q_min"),
            F.format_string("before the queue's first unit (offset %d): queue file removed", "q_min"),
        )
        .otherwise(F.lit("no unit of its queue points to it")),
    )

    by_queue = Window.partitionBy("topic", "queue_id").orderBy("queue_offset")
    cq_lag = cq.withColumn("prev", F.lag("queue_offset").over(by_queue))
    cq_gap = finding(
        cq_lag.filter(F.col("queue_offset") - F.col("prev") > 1),
        "queue_offset_gap",
        queue_offset=F.col("prev") + 1,
        size=F.col("queue_offset") - F.col("prev") - 1,
        detail=F.format_string(
            "queue offsets %d..%d have no unit (a ConsumeQueue file is missing)",
            F.col("prev") + 1,
            F.col("queue_offset") - 1,
        ),
    )
    rec_lag = dispatched.withColumn("prev", F.lag("queue_offset").over(by_queue))
    msg_gap = finding(
        rec_lag.filter(F.col("queue_offset") - F.col("prev") > 1),
        "message_offset_gap",
        queue_offset=F.col("prev") + 1,
        size=F.col("queue_offset") - F.col("prev") - 1,
        detail=F.format_string(
            "no record in the CommitLog for queue offsets %d..%d",
            F.col("prev") + 1,
            F.col("queue_offset") - 1,
        ),
    )
    dup = finding(
        rec_lag.filter(F.col("queue_offset") == F.col("prev")),
        "duplicate_queue_offset",
        size=F.col("store_size"),
        detail=F.lit("another record of this queue has the same queue offset"),
    )

    findings_df = crc
    for part in (corrupt, misplaced, dangling, holes, orphan, cq_gap, msg_gap, dup):
        findings_df = findings_df.unionByName(part)
    file_gaps = _file_gaps(store)
    if file_gaps:
        findings_df = findings_df.unionByName(
            spark.createDataFrame([{c: g.get(c) for c in FINDING_COLUMNS} for g in file_gaps], findings_df.schema)
        )
    findings_df = findings_df.orderBy("commit_log_offset", "kind", "topic", "queue_id", "queue_offset").cache()

    rec_stats = msgs.groupBy("topic").agg(
        F.count(F.lit(1)).alias("records"),
        F.sum("store_size").alias("bytes"),
        F.countDistinct("queue_id").alias("queues_with_records"),
        F.min("store_time").alias("first_store_time"),
        F.max("store_time").alias("last_store_time"),
    )
    cq_stats = entries.groupBy("topic").agg(
        F.count(F.lit(1)).alias("queue_units"), F.countDistinct("queue_id").alias("queues")
    )
    kinds = ["crc_failure", "dangling_entry", "orphan_record", "queue_hole", "message_offset_gap"]
    f_stats = findings_df.filter(F.col("topic").isNotNull()).groupBy("topic").pivot("kind", kinds).count()
    topics_df = (
        rec_stats.join(cq_stats, "topic", "full")
        .join(f_stats, "topic", "left")
        .na.fill(0, ["records", "bytes", "queue_units", "queues", "queues_with_records", *kinds])
        .orderBy("topic")
    )

    by_kind = {r["kind"]: r["count"] for r in findings_df.groupBy("kind").count().collect()}
    findings = [r.asDict() for r in findings_df.limit(max_findings).collect()]
    topics = [r.asDict() for r in topics_df.collect()]
    totals = recs.groupBy("record_type").agg(F.count(F.lit(1)).alias("n"), F.sum("store_size").alias("b")).collect()
    by_type = {row["record_type"]: (row["n"], row["b"]) for row in totals}
    result = AuditResult(
        summary={
            "store": store,
            "commitlogFiles": len(commitlog_files([store])) if os.path.isdir(os.path.join(store, "commitlog")) else 0,
            "records": by_type.get("message", (0, 0))[0],
            "recordBytes": by_type.get("message", (0, 0))[1] or 0,
            "commitlogEnd": log_end,
            "corruptRegions": by_type.get("corrupt", (0, 0))[0],
            "consumeQueueFiles": cq.select("file").distinct().count(),
            "queueUnits": entries.count(),
            "topics": len(topics),
            "checkpoint": _checkpoint(store),
            "findings": sum(by_kind.values()),
            "findingsByKind": dict(sorted(by_kind.items())),
        },
        findings=findings,
        topics=topics,
    )
    if out:
        result.summary["outputs"] = {
            "findings": write_parquet(findings_df, out, "findings"),
            "topics": write_parquet(topics_df, out, "topics"),
        }
        if write_records:
            result.summary["outputs"]["records"] = write_parquet(recs, out, "records")
        write_json(result.summary, out, "summary.json")
    findings_df.unpersist()
    recs.unpersist()
    cq.unpersist()
    return result


def report(result: AuditResult) -> None:
    s = result.summary
    print(f"Store audit of {s['store']}")
    print(
        f"  {s['records']} records ({s['recordBytes']} bytes) in {s['commitlogFiles']} CommitLog file(s), "
        f"ending at offset {s['commitlogEnd']}; {s['corruptRegions']} corrupt region(s)"
    )
    print(f"  {s['queueUnits']} queue units in {s['consumeQueueFiles']} ConsumeQueue file(s), {s['topics']} topics")
    if s.get("checkpoint"):
        print(f"  checkpoint: {s['checkpoint']}")
    print(f"  findings: {s['findings']} {json.dumps(s['findingsByKind'], sort_keys=True)}")
    print_table("findings", result.findings, FINDING_COLUMNS)
    print_table(
        "topics",
        result.topics,
        ["topic", "records", "bytes", "queue_units", "queues", "crc_failure", "dangling_entry", "orphan_record"],
        limit=1000,
    )
    if s.get("outputs"):
        print(f"\nwritten: {json.dumps(s['outputs'])}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="store_audit.py",
        description="Audit a RocketMQ 4.x broker store: ConsumeQueue units against CommitLog records "
        "(dangling units, records no queue points to, CRC failures, corrupt regions, offset gaps), "
        "per-topic counts. Run with spark-submit, or plain python for local[*].",
    )
    parser.add_argument("store", help="the broker's store directory (holding commitlog/ and consumequeue/)")
    parser.add_argument("--out", help="directory for findings/, topics/ (Parquet) and summary.json")
    parser.add_argument("--write-records", action="store_true", help="also write every record (no bodies) as records/")
    parser.add_argument(
        "--max-findings", type=int, default=10_000, help="findings to bring back and print (all go to --out)"
    )
    parser.add_argument("--fail-on-findings", action="store_true", help="exit with status 2 when there is any finding")
    add_common_args(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not os.path.isdir(args.store):
        print(f"not a directory: {args.store}", file=sys.stderr)
        return 1
    spark = session("rocketmq-store-audit", args)
    result = run(spark, args.store, args.out, args.write_records, args.max_findings, args.lake)
    report(result)
    return 2 if args.fail_on_findings and result.summary["findings"] else 0
