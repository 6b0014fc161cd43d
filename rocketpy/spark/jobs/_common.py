"""What the job command lines share: master selection, session set-up, output."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

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


def session(app_name: str, args: argparse.Namespace) -> SparkSession:
    from pyspark import SparkConf

    from ..session import get_session

    submitted = SparkConf()
    conf = {k: v for k, v in LOCAL_CONF.items() if not submitted.contains(k)}
    spark = get_session(app_name, args.master, conf)
    spark.sparkContext.setLogLevel(args.log_level)
    return spark


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
