"""Replica audit: a master's CommitLog against its slave's, record by record.

HA replication copies the master's CommitLog bytes to the same offsets on the slave, so
the two logs must agree wherever both have data. Findings, one row each:

* ``missing_on_slave``: a master record the slave lacks; ``detail`` says whether it lies
  past the slave's end (not replicated yet) or inside what the slave holds (lost);
* ``extra_on_slave``: a slave record where the master has none (a slave that was once
  ahead, or a master that lost data);
* ``differs``: both hold a record at the offset but they disagree (size, topic, queue,
  queue offset, ids, times, body CRC, or one of them fails its CRC check);
* ``corrupt_region``: damage in either log (``detail`` names the side).

Bodies are not read (the CRC stands for them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Any

from ._common import add_common_args, lake_for, print_table, session, table, write_json, write_parquet

FINDING_COLUMNS = ["kind", "commit_log_offset", "topic", "queue_id", "queue_offset", "size", "detail"]
_COMPARED = [
    "store_size",
    "topic",
    "queue_id",
    "queue_offset",
    "msg_id",
    "uniq_key",
    "body_crc",
    "crc_ok",
    "store_timestamp",
    "born_timestamp",
    "sys_flag",
]


@dataclass
class ReplicaResult:
    findings: list[dict[str, Any]]
    summary: dict[str, Any]


def run(
    spark: Any, master: str, slave: str, out: str | None = None, max_findings: int = 10_000, lake: str | None = None
) -> ReplicaResult:
    """Compare the two stores' CommitLogs, each exported first into a lake of its own:
    ``lake``/master and ``lake``/slave (only what is new), or temporary ones."""
    master, slave = os.path.abspath(master), os.path.abspath(slave)
    lakes = (None, None) if lake is None else (os.path.join(lake, "master"), os.path.join(lake, "slave"))
    with lake_for(spark, lakes[0], store=master) as ml, lake_for(spark, lakes[1], store=slave) as sl:
        m = table(spark, ml, "messages").drop("body", "file").cache()
        s = table(spark, sl, "messages").drop("body", "file").cache()
        return _compare(spark, master, slave, m, s, out, max_findings)


def _compare(spark: Any, master: str, slave: str, m: Any, s: Any, out: str | None, max_findings: int) -> ReplicaResult:
    from pyspark.sql import functions as F

    ends = {}
    for side, df in (("master", m), ("slave", s)):
        row = df.agg(
            F.count(F.when(F.col("record_type") == "message", 1)).alias("records"),
            F.count(F.when(F.col("record_type") == "corrupt", 1)).alias("corrupt"),
            F.max(F.col("commit_log_offset") + F.col("store_size")).alias("end"),
        ).first()
        ends[side] = {"records": row["records"], "corruptRegions": row["corrupt"], "end": row["end"] or 0}
    slave_end = ends["slave"]["end"]

    mm = m.where(F.col("record_type") == "message").select(
        "commit_log_offset", *[F.col(c).alias(f"m_{c}") for c in _COMPARED]
    )
    ss = s.where(F.col("record_type") == "message").select(
        "commit_log_offset", *[F.col(c).alias(f"s_{c}") for c in _COMPARED]
    )
    joined = mm.join(ss, "commit_log_offset", "full_outer")
    diff_cols = F.concat_ws(",", *[F.when(~F.col(f"m_{c}").eqNullSafe(F.col(f"s_{c}")), F.lit(c)) for c in _COMPARED])

    def finding(df: Any, kind: str, side: str, detail: Any) -> Any:
        """A finding row per record of ``df``, its identity read from the ``side`` ("m" or "s") columns."""
        return df.select(
            F.lit(kind).alias("kind"),
            "commit_log_offset",
            F.col(f"{side}_topic").alias("topic"),
            F.col(f"{side}_queue_id").alias("queue_id"),
            F.col(f"{side}_queue_offset").alias("queue_offset"),
            F.col(f"{side}_store_size").alias("size"),
            detail.alias("detail"),
        )

    missing = finding(
        joined.where(F.col("s_store_size").isNull()),
        "missing_on_slave",
        "m",
        F.when(
            F.col("commit_log_offset") >= F.lit(slave_end), F.lit("past the slave's end: not replicated yet")
        ).otherwise(F.lit("inside the slave's log: lost or overwritten")),
    )
    extra = finding(
        joined.where(F.col("m_store_size").isNull()), "extra_on_slave", "s", F.lit("the master has no record here")
    )
    differs = finding(
        joined.where(F.col("m_store_size").isNotNull() & F.col("s_store_size").isNotNull())
        .withColumn("fields", diff_cols)
        .where(F.col("fields") != ""),
        "differs",
        "m",
        F.concat(F.lit("fields differ: "), F.col("fields")),
    )
    corrupt = [
        df.where(F.col("record_type") == "corrupt").select(
            F.lit("corrupt_region").alias("kind"),
            "commit_log_offset",
            F.lit(None).cast("string").alias("topic"),
            F.lit(None).cast("int").alias("queue_id"),
            F.lit(None).cast("long").alias("queue_offset"),
            F.col("store_size").alias("size"),
            F.concat(F.lit(f"{side}: "), F.col("error")).alias("detail"),
        )
        for side, df in (("master", m), ("slave", s))
    ]
    findings = missing.unionByName(extra).unionByName(differs)
    for c in corrupt:
        findings = findings.unionByName(c)
    findings = findings.orderBy("commit_log_offset", "kind")
    by_kind = {r["kind"]: r["n"] for r in findings.groupBy("kind").agg(F.count(F.lit(1)).alias("n")).collect()}
    rows = [r.asDict() for r in findings.limit(max_findings).collect()]
    outputs = {}
    if out:
        outputs["findings"] = write_parquet(findings, out, "findings")
    summary = {
        "master": {"store": master, **ends["master"]},
        "slave": {"store": slave, **ends["slave"]},
        "findings": sum(by_kind.values()),
        "findingsByKind": dict(sorted(by_kind.items())),
        "outputs": outputs,
    }
    if out:
        outputs["summary"] = write_json(summary, out, "summary.json")
    m.unpersist()
    s.unpersist()
    return ReplicaResult(rows, summary)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="replica_audit.py",
        description="Compare a RocketMQ 4.x master's CommitLog with its slave's: records the slave lacks, "
        "records only the slave has, records that differ. Run with spark-submit, or plain python.",
    )
    parser.add_argument("master", help="the master's store directory")
    parser.add_argument("slave", help="the slave's store directory")
    parser.add_argument("--out", help="directory for findings/ (Parquet) and summary.json")
    parser.add_argument("--max-findings", type=int, default=10_000, help="findings to bring back and print")
    parser.add_argument("--fail-on-findings", action="store_true", help="exit with status 2 when there is any finding")
    add_common_args(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for path in (args.master, args.slave):
        if not os.path.isdir(path):
            print(f"not a directory: {path}", file=sys.stderr)
            return 1
    spark = session("rocketmq-replica-audit", args)
    result = run(spark, args.master, args.slave, args.out, args.max_findings, args.lake)
    s = result.summary
    print(f"Replica audit: master {s['master']['store']} against slave {s['slave']['store']}")
    for side in ("master", "slave"):
        v = s[side]
        print(f"  {side}: {v['records']} records ending at offset {v['end']}; {v['corruptRegions']} corrupt region(s)")
    print(f"  findings: {s['findings']} {json.dumps(s['findingsByKind'], sort_keys=True)}")
    print_table("findings", result.findings, FINDING_COLUMNS)
    return 2 if args.fail_on_findings and s["findings"] else 0
