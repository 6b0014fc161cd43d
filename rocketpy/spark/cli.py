"""``rocketpy lake export|info|sql``: a store or captures as a Parquet lake, and SQL over it.

Imports nothing of pyspark until a command runs, so ``rocketpy --help`` works without it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Any

__all__ = ["add_parsers", "main"]


def add_parsers(subparsers: argparse._SubParsersAction) -> None:
    lake = subparsers.add_parser(
        "lake", help="decode a store or captures once into a Parquet lake (Spark tasks), then query it with SQL"
    )
    sub = lake.add_subparsers(dest="lake_command", required=True)

    p = sub.add_parser("export", help="export a store directory and/or captures into a lake (incremental)")
    p.add_argument("sources", nargs="+", help="a broker store directory, capture files or directories of them")
    p.add_argument("--lake", required=True, help="the lake: a directory or a URI pyarrow.fs opens (s3://, hdfs://)")
    p.add_argument("--master", help="Spark master (default local[*]; what spark-submit was given)")
    p.add_argument(
        "--in-process", action="store_true", help="no Spark: decode in this process, one split after another"
    )
    p.add_argument("--split-size", default="512m", help="bytes of CommitLog per task (default 512m; 64k, 1g, ...)")
    body = p.add_mutually_exclusive_group()
    body.add_argument("--no-bodies", action="store_true", help="leave message bodies out of the messages table")
    body.add_argument("--header-only", action="store_true", help="messages: only the record header columns")
    p.add_argument("--compression", default="zstd", help="Parquet compression: zstd (default), snappy, none, ...")
    p.add_argument("--partition-by", choices=["topic", "date"], help="one directory per topic or per day")
    p.add_argument("--full", action="store_true", help="read everything again (default: only what is new)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("info", help="what a lake holds: tables, rows, parts, sources")
    p.add_argument("--lake", required=True)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("sql", help="run a Spark SQL query over a lake's tables (messages, consume_queues, ...)")
    p.add_argument("query", help='e.g. "SELECT topic, count(*) FROM messages GROUP BY topic"')
    p.add_argument("--lake", required=True)
    p.add_argument("--master", help="Spark master (default local[*])")
    p.add_argument("--limit", type=int, default=1000, help="rows printed at most (default 1000)")
    p.add_argument("--json", action="store_true", help="one JSON object per row")
    p.set_defaults(func=_cmd_sql)


def _fail(message: str) -> int:
    print(f"rocketpy lake: {message}", file=sys.stderr)
    return 1


def _split_sources(sources: list[str]) -> tuple[str | None, list[str]]:
    from ._files import _isdir, _isfile

    for s in sources:
        if not any(c in s for c in "*?[") and not (_isdir(s) or _isfile(s)):
            raise ValueError(f"no such file or directory: {s}")
    stores = [s for s in sources if _isdir(os.path.join(s, "commitlog") if "://" not in s else s + "/commitlog")]
    if len(stores) > 1:
        raise ValueError("one store per lake (give each store its own --lake)")
    return (stores[0] if stores else None), [s for s in sources if s not in stores]


def _session(app: str, master: str | None) -> Any:
    from .jobs._common import LOCAL_CONF
    from .session import get_session

    return get_session(app, master, dict(LOCAL_CONF))


def _cmd_export(args: argparse.Namespace) -> int:
    from ._files import split_size
    from .lake import ExportOptions, export_pcaps, export_store, spark_runner
    from .lake.export import terminal_progress

    try:
        store, captures = _split_sources(args.sources)
        opts = ExportOptions(
            split_size=split_size({"splitsize": args.split_size}),
            columns="header" if args.header_only else "no-bodies" if args.no_bodies else "all",
            compression=args.compression,
            partition_by=args.partition_by,
            full=args.full,
        )
    except ValueError as exc:
        return _fail(str(exc))
    spark = None if args.in_process else _session("rocketpy-lake-export", args.master)
    runner = None if spark is None else spark_runner(spark)
    results = []
    try:
        if store:
            results.append(export_store(store, args.lake, runner, opts, terminal_progress("store")))
        if captures:
            results.append(export_pcaps(captures, args.lake, runner, opts, terminal_progress("captures")))
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    except Exception as exc:  # a Spark job that failed (Py4JJavaError): its first line, not the JVM's trace
        if type(exc).__module__.split(".")[0] not in ("py4j", "pyspark"):
            raise
        return _fail(f"export failed, nothing committed: {str(exc).strip().splitlines()[0]}")
    finally:
        if spark is not None:
            spark.stop()
    if args.json:
        print(json.dumps([r.as_dict() for r in results]))
        return 0
    for r in results:
        rows = ", ".join(f"{t} {n}" for t, n in r.rows.items()) or "nothing new"
        print(
            f"{r.mode} export into {r.lake}: {r.tasks} tasks, {r.files_read} files, "
            f"{r.bytes_read / (1 << 20):.1f} MiB read, {r.seconds:.1f} s; rows: {rows}"
        )
    return 0


def _open(root: str) -> Any:
    """The lake at ``root``, or None after one line saying why not."""
    from .lake import Lake, LakeError

    try:
        return Lake(root)
    except LakeError as exc:
        _fail(str(exc))
        return None


def _cmd_info(args: argparse.Namespace) -> int:
    lake = _open(args.lake)
    if lake is None:
        return 1
    tables = {
        t: {
            "rows": lake.rows(t),
            "parts": len(lake.parts(t)),
            "bytes": sum(p["bytes"] for p in lake.parts(t)),
        }
        for t in lake.tables()
    }
    if args.json:
        print(json.dumps({"lake": args.lake, "tables": tables, "inputs": lake.manifest.get("inputs", {})}))
        return 0
    for k, v in lake.manifest.get("inputs", {}).items():
        print(f"{k}: {v}")
    print(f"{'table':16} {'rows':>12} {'parts':>6} {'MiB':>10}")
    for t, v in tables.items():
        print(f"{t:16} {v['rows']:>12} {v['parts']:>6} {v['bytes'] / (1 << 20):>10.1f}")
    return 0


def _cmd_sql(args: argparse.Namespace) -> int:
    lake = _open(args.lake)
    if lake is None:
        return 1
    spark = _session("rocketpy-lake-sql", args.master)
    # pyspark logs a failed query's Java trace as JSON on stderr; the one line below says it
    logging.getLogger("SQLQueryContextLogger").disabled = True
    try:
        lake.register(spark)
        try:
            df = spark.sql(args.query)
        except Exception as exc:  # Spark's AnalysisException/ParseException: one line, not a trace
            return _fail(str(exc).splitlines()[0])
        rows = [r.asDict(recursive=True) for r in df.limit(args.limit).collect()]
        columns = df.columns
    finally:
        spark.stop()
    if args.json:
        for row in rows:
            print(json.dumps(row, default=str))
        return 0
    from .jobs._common import print_table

    print_table(args.query, rows, columns, limit=args.limit)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``rocketpy lake ...`` on its own: the entry point of ``spark-submit spark/jobs/lake.py``."""
    parser = argparse.ArgumentParser(prog="lake.py", description="rocketpy lake export|info|sql under spark-submit")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parsers(sub)
    args = parser.parse_args(["lake", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args) or 0)
