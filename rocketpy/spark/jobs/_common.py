"""What the job command lines share: master selection, session set-up, output."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..lake import Lake

# Quiet, small-footprint defaults for a forensic run on one machine; spark-submit's
# --conf still overrides any of them.
LOCAL_CONF = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
}


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--master",
        help="Spark master; default: what spark-submit was given, else local[*]",
    )
    parser.add_argument("--log-level", default="WARN", help="Spark log level (default WARN)")
    parser.add_argument(
        "--lake",
        help="a lake directory (rocketpy lake export): the job exports what it is given into it first "
        "(only what is new), then reads it; default: a temporary lake, removed after the run",
    )


def session(app_name: str, args: argparse.Namespace) -> SparkSession:
    from pyspark import SparkConf

    from ..session import get_session

    submitted = SparkConf()
    conf = {k: v for k, v in LOCAL_CONF.items() if not submitted.contains(k)}
    return get_session(app_name, args.master, conf, log_level=args.log_level)


@contextlib.contextmanager
def lake_for(
    spark: SparkSession, lake: str | None, store: str | None = None, captures: list[str] | None = None
) -> Iterator[Lake]:
    """The lake a job reads: ``store`` and ``captures`` exported into ``lake`` first (by Spark
    tasks; only what is new when the lake holds them already), or into a temporary lake.

    A lake made here holds no message bodies (no job reads them); an existing lake keeps
    the layout it was exported with.
    """
    from ..lake import ExportOptions, Lake, LakeDir, export_pcaps, export_store, spark_runner
    from ..lake.export import terminal_progress

    made = None
    if lake is None:
        made = lake = tempfile.mkdtemp(prefix="rocketpy-lake-")
    try:
        where = LakeDir(lake)
        layout = (where.read_manifest() or {}).get("layout") or {}
        opts = ExportOptions(
            columns=layout.get("columns", "no-bodies"),
            compression=layout.get("compression", "zstd"),
            partition_by=layout.get("partition_by"),
        )
        runner = spark_runner(spark)
        if store:
            export_store(store, where, runner, opts, terminal_progress("export store"))
        if captures:
            export_pcaps(captures, where, runner, opts, terminal_progress("export captures"))
        yield Lake(where)
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)


def table(spark: SparkSession, lake: Lake, name: str) -> DataFrame:
    """A lake table as a DataFrame; an empty one when the lake does not hold it."""
    from .._columns import ddl
    from ..lake.tables import TABLES

    if name in lake.tables():
        return lake.dataframe(spark, name)
    return spark.createDataFrame([], ddl(TABLES[name].columns))


def write_parquet(df: DataFrame, out: str | None, name: str) -> str | None:
    """Write ``df`` as ``out/name`` (overwriting); nothing when no output dir was given."""
    if not out:
        return None
    path = os.path.join(out, name)
    df.write.mode("overwrite").parquet(path)
    return path


def write_json(data: Any, out: str | None, name: str) -> str | None:
    if not out:
        return None
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True, default=str)
        f.write("\n")
    return path


def print_table(title: str, rows: Iterable[dict[str, Any]], columns: list[str], limit: int = 50) -> None:
    """A plain aligned table on stdout (no Spark show(): it truncates and needs a DataFrame)."""
    rows = list(rows)
    print(f"\n== {title} ({len(rows)})")
    if not rows:
        return
    shown = rows[:limit]
    cells = [[_cell(r.get(c)) for c in columns] for r in shown]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))
    if len(rows) > limit:
        print(f"... {len(rows) - limit} more")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    text = str(value).replace("\n", " ")
    return text if len(text) <= 80 else text[:77] + "..."
