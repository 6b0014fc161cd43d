"""Traffic report from captures: who sent and pulled how much, how fast the servers answered.

Tables (each written as Parquet under ``--out`` and printed):

* ``topics``: per topic, messages and bytes sent (SEND, batch entries counted one by
  one) and delivered by PULL, send and pull requests, and rates over the topic's active span;
* ``clients``: per client endpoint (and the groups it named), requests, bytes each
  way, messages sent and pulled;
* ``latency``: per request code, percentiles of the request-to-response time;
* ``errors``: non-success response codes per time bucket, request code and code.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, field
from typing import Any

from ...codecs.codes import RequestCode
from ._common import add_common_args, lake_for, print_table, session, table, write_json, write_parquet

_SEND_CODES = (
    int(RequestCode.SEND_MESSAGE),
    int(RequestCode.SEND_MESSAGE_V2),
    int(RequestCode.SEND_BATCH_MESSAGE),
    int(RequestCode.SEND_REPLY_MESSAGE),
    int(RequestCode.SEND_REPLY_MESSAGE_V2),
)
_PULL = int(RequestCode.PULL_MESSAGE)


@dataclass
class TrafficResult:
    summary: dict[str, Any]
    topics: list[dict[str, Any]] = field(default_factory=list)
    clients: list[dict[str, Any]] = field(default_factory=list)
    latency: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)


def run(
    spark: Any, captures: list[str], out: str | None = None, bucket_seconds: int = 60, lake: str | None = None
) -> TrafficResult:
    """Report on the captures ``captures`` (files or directories), exported into ``lake`` first
    (only what is new) or into a temporary lake; with ``lake`` alone, on the captures it holds."""
    with lake_for(spark, lake, captures=[os.path.abspath(p) for p in captures]) as lk:
        rows = table(spark, lk, "frames").cache()
        try:
            return _report(spark, rows, out, bucket_seconds)
        finally:
            rows.unpersist()


def _report(spark: Any, rows: Any, out: str | None, bucket_seconds: int) -> TrafficResult:
    from pyspark.sql import functions as F

    # One row per command (exploding repeats a command per message it carries).
    commands = rows.filter(F.coalesce(F.col("msg_index"), F.lit(0)) == 0)
    messages = rows.filter(F.col("msg_index").isNotNull())

    sent = messages.filter((F.col("kind") == "request") & F.col("code").isin(*_SEND_CODES))
    pulled = messages.filter((F.col("kind") == "response") & (F.col("request_code") == _PULL))
    sent_t = sent.groupBy(F.col("msg_topic").alias("topic")).agg(
        F.count(F.lit(1)).alias("messages_sent"),
        F.sum("msg_body_size").alias("bytes_sent"),
        F.min("ts").alias("first_send"),
        F.max("ts").alias("last_send"),
        F.countDistinct("client").alias("producers"),
    )
    pulled_t = pulled.groupBy(F.col("msg_topic").alias("topic")).agg(
        F.count(F.lit(1)).alias("messages_pulled"),
        F.sum("msg_body_size").alias("bytes_pulled"),
        F.countDistinct("client").alias("consumers"),
    )
    req = commands.filter(F.col("kind") == "request")
    req_t = (
        req.filter(F.col("topic").isNotNull())
        .groupBy("topic")
        .agg(
            F.sum(F.col("code").isin(*_SEND_CODES).cast("int")).alias("send_requests"),
            F.sum((F.col("code") == _PULL).cast("int")).alias("pull_requests"),
            F.count(F.lit(1)).alias("requests"),
        )
    )
    span = F.greatest(F.col("last_send") - F.col("first_send"), F.lit(1.0))
    topics_df = (
        req_t.join(sent_t, "topic", "full")
        .join(pulled_t, "topic", "full")
        .na.fill(
            0,
            [
                "messages_sent",
                "bytes_sent",
                "messages_pulled",
                "bytes_pulled",
                "send_requests",
                "pull_requests",
                "requests",
                "producers",
                "consumers",
            ],
        )
        .withColumn("send_msgs_per_s", F.when(F.col("messages_sent") > 0, F.col("messages_sent") / span))
        .withColumn("send_bytes_per_s", F.when(F.col("messages_sent") > 0, F.col("bytes_sent") / span))
        .drop("first_send", "last_send")
        .orderBy(F.desc("messages_sent"), "topic")
    )

    to_server = ~F.col("from_server")
    clients_df = (
        commands.groupBy("client")
        .agg(
            F.sum(((F.col("kind") == "request") & to_server).cast("int")).alias("requests"),
            F.sum(F.when(to_server, F.col("frame_size")).otherwise(0)).alias("bytes_to_server"),
            F.sum(F.when(~to_server, F.col("frame_size")).otherwise(0)).alias("bytes_from_server"),
            F.array_sort(F.collect_set("group")).alias("groups"),
            F.first("server").alias("server"),
            (F.max("ts") - F.min("ts")).alias("active_seconds"),
        )
        .join(sent.groupBy("client").agg(F.count(F.lit(1)).alias("messages_sent")), "client", "left")
        .join(pulled.groupBy("client").agg(F.count(F.lit(1)).alias("messages_pulled")), "client", "left")
        .na.fill(0, ["messages_sent", "messages_pulled"])
        .orderBy(F.desc("requests"), "client")
    )

    timed = commands.filter((F.col("kind") == "request") & F.col("paired"))
    latency_df = (
        timed.groupBy("request_code", "request_code_name")
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.percentile_approx("latency_ms", 0.5, 10_000).alias("p50_ms"),
            F.percentile_approx("latency_ms", 0.9, 10_000).alias("p90_ms"),
            F.percentile_approx("latency_ms", 0.99, 10_000).alias("p99_ms"),
            F.max("latency_ms").alias("max_ms"),
            F.avg("latency_ms").alias("mean_ms"),
        )
        .orderBy("request_code")
    )

    bucket = F.window("time", f"{int(bucket_seconds)} seconds")
    errors_df = (
        commands.filter((F.col("kind") == "response") & (F.col("code") != 0))
        .groupBy(
            bucket.alias("bucket"),
            "request_code_name",
            F.col("code").alias("response_code"),
            "response_code_name",
        )
        .agg(F.count(F.lit(1)).alias("count"))
        .select(
            F.col("bucket.start").alias("bucket_start"),
            "request_code_name",
            "response_code",
            "response_code_name",
            "count",
        )
        .orderBy("bucket_start", "request_code_name", "response_code")
    )

    totals = commands.agg(
        F.count(F.lit(1)).alias("frames"),
        F.sum((F.col("kind") == "request").cast("int")).alias("requests"),
        F.sum((F.col("kind") == "response").cast("int")).alias("responses"),
        F.sum((F.col("kind") == "error").cast("int")).alias("undecodable"),
        F.sum(((F.col("kind") == "response") & ~F.col("paired")).cast("int")).alias("unpaired_responses"),
        F.sum(((F.col("kind") == "request") & ~F.col("oneway") & ~F.col("paired")).cast("int")).alias(
            "unanswered_requests"
        ),
        F.countDistinct("file").alias("captures"),
        F.countDistinct("client", "server").alias("connections"),
        F.min("time").alias("first"),
        F.max("time").alias("last"),
    ).first()
    result = TrafficResult(
        summary={k: totals[k] for k in totals.asDict()},
        topics=[r.asDict() for r in topics_df.collect()],
        clients=[r.asDict() for r in clients_df.collect()],
        latency=[r.asDict() for r in latency_df.collect()],
        errors=[r.asDict() for r in errors_df.collect()],
    )
    if out:
        result.summary["outputs"] = {
            name: write_parquet(df, out, name)
            for name, df in (
                ("topics", topics_df),
                ("clients", clients_df),
                ("latency", latency_df),
                ("errors", errors_df),
            )
        }
        write_json(result.summary, out, "summary.json")
    rows.unpersist()
    return result


def report(result: TrafficResult) -> None:
    s = result.summary
    print(
        f"Traffic of {s['captures']} capture(s), {s['first']} .. {s['last']}: {s['frames']} frames, "
        f"{s['requests']} requests, {s['responses']} responses, {s['undecodable']} undecodable, "
        f"{s['connections']} connections; {s['unanswered_requests']} requests unanswered, "
        f"{s['unpaired_responses']} responses without a request"
    )
    print_table(
        "topics",
        result.topics,
        [
            "topic",
            "messages_sent",
            "bytes_sent",
            "send_msgs_per_s",
            "messages_pulled",
            "bytes_pulled",
            "send_requests",
            "pull_requests",
            "producers",
            "consumers",
        ],
        limit=1000,
    )
    print_table(
        "clients",
        result.clients,
        [
            "client",
            "server",
            "groups",
            "requests",
            "bytes_to_server",
            "bytes_from_server",
            "messages_sent",
            "messages_pulled",
        ],
        limit=1000,
    )
    print_table(
        "latency by request code (ms)",
        result.latency,
        ["request_code", "request_code_name", "count", "p50_ms", "p90_ms", "p99_ms", "max_ms"],
        limit=1000,
    )
    print_table(
        "non-success responses over time",
        result.errors,
        ["bucket_start", "request_code_name", "response_code", "response_code_name", "count"],
        limit=1000,
    )
    if s.get("outputs"):
        print(f"\nwritten: {json.dumps(s['outputs'])}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="traffic_report.py",
        description="Traffic report from RocketMQ captures: per topic and client throughput, latency "
        "percentiles per request code, error codes over time.",
    )
    parser.add_argument("captures", nargs="*", help="pcap/pcapng files or directories of them (or a --lake of them)")
    parser.add_argument("--out", help="directory for topics/, clients/, latency/, errors/ (Parquet) and summary.json")
    parser.add_argument("--bucket-seconds", type=int, default=60, help="time bucket of the error table (default 60)")
    add_common_args(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.captures and not args.lake:
        parser.error("give captures, or a --lake holding them")
    spark = session("rocketmq-traffic-report", args)
    report(run(spark, args.captures, args.out, args.bucket_seconds, args.lake))
    return 0
