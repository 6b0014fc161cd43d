"""Consumer lag from a broker's store: the offsets groups committed against the ConsumeQueues.

For every (group, topic, queue) in ``config/consumerOffset.json`` (its ``.bak`` when the
file is unreadable) the queue's offsets come from its ConsumeQueue files, read with the
``rocketmq-consumequeue`` source:

* ``min_offset``: the first unit still on disk (older ones were deleted with their files);
* ``max_offset``: one past the last written unit, the broker's maxOffset;
* ``lag``: ``max_offset - consumer_offset`` (what the group has still to read, 0 at least);
* ``expired``: ``min_offset - consumer_offset`` when the group is behind what is left
  (those messages are gone), else 0.

A group's offsets for a topic with no queue files left show ``max_offset`` null.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from ...codecs import fastjson
from ...codecs.errors import CodecError
from ._common import add_common_args, lake_for, print_table, session, table, write_json, write_parquet

LAG_COLUMNS = ["group", "topic", "queue_id", "consumer_offset", "min_offset", "max_offset", "lag", "expired"]


@dataclass
class LagResult:
    rows: list[dict[str, Any]]
    summary: dict[str, Any]


def committed_offsets(store: str) -> list[tuple[str, str, int, int]]:
    """(group, topic, queue id, offset) from the store's consumerOffset.json (or its backup)."""
    errors = []
    for name in ("consumerOffset.json", "consumerOffset.json.bak"):
        path = os.path.join(store, "config", name)
        try:
            with open(path, "rb") as f:
                doc = fastjson.loads(f.read())
        except FileNotFoundError:
            continue
        except (OSError, CodecError, ValueError) as exc:
            errors.append(f"{path}: {exc}")
            continue
        table = doc.get("offsetTable") if isinstance(doc, dict) else None
        if not isinstance(table, dict):
            errors.append(f"{path}: no offsetTable")
            continue
        out: list[tuple[str, str, int, int]] = []
        for key, queues in table.items():
            topic, sep, group = str(key).rpartition("@")  # "topic@group"; a topic cannot hold '@'
            if not sep or not isinstance(queues, dict):
                continue
            out.extend((group, topic, int(qid), int(offset)) for qid, offset in queues.items())
        return sorted(out)
    if errors:
        raise ValueError("; ".join(errors))
    return []


def run(spark: Any, store: str, out: str | None = None, lake: str | None = None) -> LagResult:
    """Lag of every committed offset of ``store``, its ConsumeQueues read from ``lake`` (exported
    into it first: only what is new), or from a temporary lake."""
    store = os.path.abspath(store)
    committed = committed_offsets(store)
    with lake_for(spark, lake, store=store) as lk:
        return _lag(spark, store, committed, table(spark, lk, "consume_queues"), out)


def _lag(spark: Any, store: str, committed: list[tuple[str, str, int, int]], units: Any, out: str | None) -> LagResult:
    from pyspark.sql import functions as F

    offsets = spark.createDataFrame(committed, "`group` string, topic string, queue_id int, consumer_offset bigint")
    queues = (
        units.where(F.col("valid") & ~F.col("pre_blank"))
        .groupBy("topic", "queue_id")
        .agg(F.min("queue_offset").alias("min_offset"), (F.max("queue_offset") + 1).alias("max_offset"))
    )
    lag = (
        offsets.join(queues, ["topic", "queue_id"], "left")
        .withColumn("lag", F.greatest(F.col("max_offset") - F.col("consumer_offset"), F.lit(0)))
        .withColumn("expired", F.greatest(F.col("min_offset") - F.col("consumer_offset"), F.lit(0)))
        .select(*LAG_COLUMNS)
        .orderBy("group", "topic", "queue_id")
    )
    rows = [r.asDict() for r in lag.collect()]
    outputs = {}
    if out:
        outputs["lag"] = write_parquet(lag, out, "lag")
    summary = {
        "store": store,
        "groups": len({r["group"] for r in rows}),
        "queues": len(rows),
        "totalLag": sum(r["lag"] or 0 for r in rows),
        "lagByGroup": _by_group(rows),
        "outputs": outputs,
    }
    if out:
        outputs["summary"] = write_json(summary, out, "summary.json")
    return LagResult(rows, summary)


def _by_group(rows: list[dict[str, Any]]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for r in rows:
        totals[r["group"]] = totals.get(r["group"], 0) + (r["lag"] or 0)
    return dict(sorted(totals.items()))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="consumer_lag.py",
        description="Consumer lag of every group in a RocketMQ 4.x broker store: committed offsets "
        "(config/consumerOffset.json) against the ConsumeQueues. Run with spark-submit, or plain python.",
    )
    parser.add_argument("store", help="the broker's store directory (holding config/ and consumequeue/)")
    parser.add_argument("--out", help="directory for lag/ (Parquet) and summary.json")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON lines instead of a table")
    add_common_args(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not os.path.isdir(args.store):
        print(f"not a directory: {args.store}", file=sys.stderr)
        return 1
    try:
        committed_offsets(args.store)  # a clear line for an unreadable offsets file, before Spark starts
    except ValueError as exc:
        print(f"cannot read the consumer offsets: {exc}", file=sys.stderr)
        return 1
    spark = session("rocketmq-consumer-lag", args)
    result = run(spark, args.store, args.out, args.lake)
    if args.json:
        for row in result.rows:
            print(json.dumps(row, sort_keys=True))
        return 0
    s = result.summary
    print(f"Consumer lag in {s['store']}: {s['groups']} group(s), {s['queues']} queue(s), total lag {s['totalLag']}")
    print_table("lag", result.rows, LAG_COLUMNS, limit=1000)
    return 0
