"""The Spark forensics benchmark: exporting a store into a Parquet lake, and querying it.

Generates a store of ``--size`` MiB (``rocketpy.spark.synth``: CommitLog files of
``--file-size`` MiB laid out as the broker lays them out, their ConsumeQueues and an
IndexFile; 1% of the records in the topic ``Rare_T``), then measures (issue #23):

* ``export_all``: the store into a lake, every column (bodies included), in one Python
  process (``rocketpy lake export --in-process``: the very tasks, one after another) and with
  Spark ``--master`` (local[2]: the tasks decode and write Parquet themselves);
* ``export_header``: the same with the record header columns only (``--header-only``);
* ``query_count_by_topic``, ``query_topic_time`` (one of the four busy topics, a quarter of the
  records, in a window of 10% of the store's time), ``query_rare_topic_time`` (the same for
  ``Rare_T``: a targeted read, the ConsumeQueues name its records), ``query_key_lookup`` (a
  topic and one key), ``query_id_lookup`` (a topic and one UNIQ_KEY: the lake's Bloom filters
  skip row groups): through the ``rocketmq-commitlog`` data
  source (a reader schema of the columns asked for; pushed filters read the topic's
  ConsumeQueues or the IndexFile) and on the lake (Spark's Parquet reader).

Each figure is the best of ``--repeat`` runs (the count is printed): other processes on a
small machine only ever add time. Beside the wall time, the export's CPU time: of this
process for the one-process export, of the whole process tree (driver, JVM, Python workers)
for Spark. The load average is printed with the figures. With ``--json`` the last line is one
JSON object (``export_all``, ``export_header``: one_process_s, spark_s, speedup, CPU;
``query_*``: source_s, lake_s, speedup).

    python tools/bench/bench_spark.py                              # 2 GiB, as the issue asks
    python tools/bench/bench_spark.py --size 256 --file-size 64 --repeat 1   # a quick run
    python tools/bench/bench_spark.py --source-reads ...           # the data sources' own reads

``--source-reads`` measures what the sources alone do (below): one process against Spark
reading through the data source, and Spark's own share of that (the floor).

Store-reading throughput of the Spark sources: one Python process against Spark, and the
bytes pushed filters read.

Generates a store of ``--size`` MiB (``rocketpy.spark.synth``: CommitLog files of
``--file-size`` MiB laid out as the broker lays them out, their ConsumeQueues and an
IndexFile; 1% of the records in the topic ``Rare_T``), then times three reads:

* ``consumequeue``: every ConsumeQueue unit;
* ``commitlog-meta``: the CommitLog's record header columns only (a reader schema without
  the body and the property columns: offsets, sizes, topic, queue, flags, times, hosts, msg
  id, CRC check of the body), so bodies and properties are never sliced out;
* ``commitlog-body``: every column, bodies and properties included, CRC checked;

each in two ways:

* ``1 process``: the very partitions and read code Spark's tasks run, one after another;
* ``spark``: ``spark.read.format(...)`` with ``--master`` (local[2]), counting rows and
  summing a column so every row is decoded; files are cut in 128 MiB splits;

then Spark's own share (``floor``): a source that hands Spark ready-made Arrow batches of
the same schema, as many rows in as many partitions, with no decoding at all, through the
same query; so the best local[2] could do over one process is about
``1 process / (1 process / cores + floor)``, printed as ``ceiling``;

and counts the bytes the CommitLog source reads for ``topic = 'Rare_T'`` (its ConsumeQueues,
the records they name, and the scan past the dispatch point) and for one record's key
(``topic = ... AND keys = array(...)``: the IndexFile's slot and chain, the record, and the
scan past the last indexed record). Spark's start-up is left out (a warm-up query per kind
runs first). The files are in the page cache, so the figures are CPU-bound decoding, not
disk. Each figure is the best of ``--repeat`` runs; a one-process read shorter than a second is
repeated until its runs add up to one (up to 50; the count is printed).

    python tools/bench/bench_spark.py                 # 2 GiB, as the issue asks
    python tools/bench/bench_spark.py --size 256 --file-size 64 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MiB = 1 << 20


def _best(fn, repeat: int, min_total: float = 0.0) -> tuple[float, int, int]:
    """The fastest of ``repeat`` runs: other processes on a small machine only ever add time.
    With ``min_total``, a read that short goes on being repeated (up to 50 runs) until the runs
    add up to that many seconds: one timer tick or a cold cache is not its speed.
    Returns (seconds, rows, runs)."""
    best: tuple[float, int] | None = None
    total, runs = 0.0, 0
    while runs < repeat or (total < min_total and runs < 50):
        secs, rows = fn()
        total, runs = total + secs, runs + 1
        if best is None or secs < best[0]:
            best = (secs, rows)
    assert best is not None
    return (*best, runs)


# The header columns: what a forensic query over offsets, topics, queues and times reads.
_NOT_META = ("body", "properties", "keys", "tags", "uniq_key")


def meta_columns() -> list[tuple[str, str]]:
    from rocketpy.spark.commitlog import COMMITLOG_COLUMNS

    return [c for c in COMMITLOG_COLUMNS if c[0] not in _NOT_META]


def _reader(store: Path, kind: str) -> Any:
    from rocketpy.spark.sources import _CommitLogReader, _ConsumeQueueReader

    options = {"path": str(store)}
    if kind == "consumequeue":
        return _ConsumeQueueReader(options)
    return _CommitLogReader(options, meta_columns() if kind == "commitlog-meta" else None)


def time_python(store: Path, kind: str) -> tuple[float, int]:
    """One process running what the Spark tasks run, over every split in turn."""
    reader = _reader(store, kind)
    t = time.perf_counter()
    rows = sum(batch.num_rows for p in reader.partitions() for batch in reader.read(p))
    return time.perf_counter() - t, rows


def _ready_made_source() -> Any:
    """A Spark data source whose tasks only hand over batches made beforehand (Spark's share)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class Share(InputPartition):
        def __init__(self, rows: int) -> None:
            super().__init__(rows)
            self.rows = rows

    class ReadyMade(DataSource):
        # Defined in a function, so cloudpickle ships it by value: the workers need no module of it.
        batches: dict[str, tuple[Any, int, int]] = {}  # kind -> (batch, rows, partitions), set on the driver

        @classmethod
        def name(cls) -> str:
            return "rocketpy-bench-ready-made"

        def reader(self, schema: Any) -> DataSourceReader:
            return Reader(*self.batches[self.options["kind"]])

    class Reader(DataSourceReader):
        # The batch travels once, in the pickled reader (not in every partition: the driver
        # holds those all at once).
        def __init__(self, batch: Any, rows: int, parts: int) -> None:
            self.batch, self.rows, self.parts = batch, rows, parts

        def partitions(self) -> list[InputPartition]:
            return [Share(self.rows // self.parts + (i < self.rows % self.parts)) for i in range(self.parts)]

        def read(self, partition: Any) -> Any:
            left = partition.rows
            while left > 0:
                batch = self.batch if left >= self.batch.num_rows else self.batch.slice(0, left)
                left -= batch.num_rows
                yield batch

    return ReadyMade


def filter_bytes(store: Path, filters: list[Any]) -> tuple[int, int, float]:
    """(rows, bytes read, seconds) of the CommitLog source with pushed ``filters``."""
    from rocketpy.spark.commitlog import READ_STATS
    from rocketpy.spark.sources import _CommitLogReader

    reader = _CommitLogReader({"path": str(store)})
    list(reader.pushFilters(filters))
    READ_STATS.clear()
    t = time.perf_counter()
    rows = sum(batch.num_rows for p in reader.partitions() for batch in reader.read(p))
    return rows, READ_STATS["bytes"], time.perf_counter() - t


def time_spark(
    store: Path, warmup: Path, master: str, repeat: int, rows_of: dict[str, int]
) -> dict[str, tuple[float, int, int, float]]:
    from pyspark.sql import functions as F

    from rocketpy.spark.session import get_session

    spark = get_session(
        "rocketpy-bench",
        master,
        {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "4"},
    )
    spark.sparkContext.setLogLevel("ERROR")

    from rocketpy.spark._columns import ddl

    ready_made = _ready_made_source()

    def frame(kind: str, path: Path) -> Any:
        fmt = "rocketmq-consumequeue" if kind == "consumequeue" else "rocketmq-commitlog"
        reader = spark.read.format(fmt)
        if kind == "commitlog-meta":
            reader = reader.schema(ddl(meta_columns()))
        return reader.load(str(path))

    def count(kind: str, path: Path, floor: bool = False) -> int:
        df = frame(kind, path)
        if floor:
            df = spark.read.format(ready_made.name()).schema(df.schema).option("kind", kind).load()
        # Sum a column so every row is really decoded (a bare count could be answered cheaper).
        col = {"consumequeue": "size", "commitlog-meta": "store_size"}.get(kind, "body_size")
        return df.agg(F.count(F.lit(1)).alias("n"), F.sum(col).alias("b")).first()["n"]

    def timed(kind: str, floor: bool = False) -> Any:
        def once() -> tuple[float, int]:
            t = time.perf_counter()
            rows = count(kind, store, floor)
            return time.perf_counter() - t, rows

        return once

    out = {}
    for kind in KINDS:
        # Warm-up on a small store: starts the Python workers and imports rocketpy in them.
        count(kind, warmup)
        secs, rows, _ = _best(timed(kind), repeat)
        parts = frame(kind, store).rdd.getNumPartitions()
        # The floor: the first batch of the real read, handed over again and again.
        reader = _reader(store, kind)
        sample = next(iter(reader.read(reader.partitions()[0])))
        ready_made.batches = {kind: (sample, rows_of[kind], parts)}
        spark.dataSource.register(ready_made)  # pickled as it is now, with this kind's batch
        count(kind, warmup, floor=True)
        floor_secs, floor_rows, _ = _best(timed(kind, floor=True), repeat)
        assert floor_rows == rows, (floor_rows, rows)
        out[kind] = (secs, rows, parts, floor_secs)
    spark.stop()
    return out


KINDS = ("consumequeue", "commitlog-meta", "commitlog-body")


def _stores(args: argparse.Namespace) -> tuple[Path, Path, float]:
    """(the generated store, a 1 MiB warm-up store, seconds it took): ``--keep`` reuses a kept store."""
    from rocketpy.spark.synth import synthesise_store

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    store, warmup = Path(args.dir) / "store", Path(args.dir) / "warmup"
    shutil.rmtree(warmup, ignore_errors=True)
    synthesise_store(warmup, MiB, MiB, args.body_size)
    t = time.perf_counter()
    if not (args.keep and (store / "commitlog").is_dir()):
        shutil.rmtree(store, ignore_errors=True)
        synthesise_store(store, args.size * MiB, args.file_size * MiB, args.body_size, index=True)
    return store, warmup, time.perf_counter() - t


def source_reads_main(argv: list[str] | None = None) -> int:
    """The data sources' reads (``--source-reads``): one process against Spark, and Spark's floor."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source-reads", action="store_true")
    parser.add_argument("--size", type=int, default=2048, help="MiB of records to synthesise (default 2048)")
    parser.add_argument("--file-size", type=int, default=1024, help="MiB per CommitLog file (default 1024)")
    parser.add_argument("--body-size", type=int, default=1024, help="bytes per message body (default 1024)")
    parser.add_argument("--dir", default="/tmp/rocketpy-bench-store", help="where the store goes")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measurement; the best counts (2)")
    parser.add_argument("--keep", action="store_true", help="keep the synthesised store (and reuse a kept one)")
    parser.add_argument("--no-spark", action="store_true", help="only the single-process figures")
    args = parser.parse_args(argv)

    from rocketpy.spark.synth import RARE_TOPIC

    store, warmup, made_in = _stores(args)
    cl_bytes = sum(p.stat().st_size for p in (store / "commitlog").iterdir())
    cq_bytes = sum(p.stat().st_size for p in (store / "consumequeue").glob("*/*/*"))
    print(
        f"store: {cl_bytes / MiB:.0f} MiB of CommitLog in {args.file_size} MiB files, {cq_bytes / MiB:.1f} MiB of "
        f"ConsumeQueue ({args.body_size}-byte bodies), ready in {made_in:.1f} s under {store}"
    )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"best of {args.repeat} runs each (more for a read under 1 s in one process) on {os.cpu_count()} cores "
        f"(load average {load}); "
        "the machine's other load only ever adds time"
    )
    sizes = {"consumequeue": cq_bytes, "commitlog-meta": cl_bytes, "commitlog-body": cl_bytes}
    try:
        single: dict[str, float] = {}
        rows_of: dict[str, int] = {}
        for kind in KINDS:
            secs, records, runs = _best(lambda kind=kind: time_python(store, kind), args.repeat, min_total=1.0)
            single[kind], rows_of[kind] = secs, records
            print(
                f"{kind:15} 1 process : {secs:7.2f} s {sizes[kind] / MiB / secs:8.1f} MiB/s  "
                f"{records / secs:10.0f} rows/s  (best of {runs} runs)"
            )
        from pyspark.sql.datasource import EqualTo

        rows, read, secs = filter_bytes(store, [EqualTo(("topic",), RARE_TOPIC)])
        print(
            f"topic filter ({RARE_TOPIC}, 1% of records): {rows} rows, read {read / MiB:.2f} MiB "
            f"= {100 * read / cl_bytes:.2f}% of the CommitLog, {secs:.2f} s"
        )
        n = 12_345  # synth names record n's key order-n and puts it in Bench_T{n % 4}
        key_filter = [EqualTo(("topic",), f"Bench_T{n % 4}"), EqualTo(("keys",), [f"order-{n}"])]
        rows, read, secs = filter_bytes(store, key_filter)
        print(
            f"key filter (topic = Bench_T{n % 4} AND keys = array('order-{n}')): {rows} rows, read {read} bytes "
            f"= {100 * read / cl_bytes:.5f}% of the CommitLog, {secs:.3f} s"
        )
        if not args.no_spark:
            cores = os.cpu_count() or 1
            for kind, (secs, rows, parts, floor) in time_spark(
                store, warmup, args.master, args.repeat, rows_of
            ).items():
                print(
                    f"{kind:15} spark {args.master} ({parts} partitions): {secs:7.2f} s "
                    f"{sizes[kind] / MiB / secs:8.1f} MiB/s  {rows / secs:10.0f} rows/s  "
                    f"x{single[kind] / secs:.2f} of 1 process on {cores} cores"
                )
                ceiling = single[kind] / (single[kind] / cores + floor)
                print(
                    f"{kind:15} spark floor, ready-made batches of the same rows: {floor:7.2f} s "
                    f"{rows / floor:10.0f} rows/s; ceiling x{ceiling:.2f} of 1 process"
                )
    finally:
        if not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)
    return 0


# -- the lake ------------------------------------------------------------------------------------


def _tree_times(root: int) -> dict[int, float]:
    """CPU seconds (user + system) of a process and each of its descendants, by pid."""
    tick = os.sysconf("SC_CLK_TCK")
    parent: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        parent[pid] = int(fields[1])
        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
    out = {}
    for pid, secs in cpu.items():
        p = pid
        while p and p != root:
            p = parent.get(p, 0)
        if p == root:
            out[pid] = secs
    return out


class TreeCpu:
    """CPU seconds a process tree (this driver, the JVM, Spark's Python workers) spends in the
    ``with`` block. The tree is sampled every 100 ms (the sampling's own CPU left out), so a
    worker that ends inside the block counts up to its last sample (a reaped child is not added
    to its parent's figures until the parent waits for it, which may be later)."""

    def __enter__(self) -> TreeCpu:
        import threading

        self.first = _tree_times(os.getpid())
        self.last = dict(self.first)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def _sample(self) -> None:
        while not self.stop.wait(0.1):
            self.last.update(_tree_times(os.getpid()))
        self.own = time.thread_time()  # the sampling's own CPU: not the measured work's

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        self.last.update(_tree_times(os.getpid()))
        self.seconds = sum(v - self.first.get(pid, 0.0) for pid, v in self.last.items()) - self.own


def _export_once(
    store: Path, lake: Path, runner: Any, columns: str, args: argparse.Namespace, split_size: int | None = None
) -> tuple[float, float, int, Any]:
    """(seconds, CPU seconds of the process tree, rows, the export's result) of one full export
    into a fresh lake."""
    from rocketpy.spark.lake import ExportOptions, export_store

    shutil.rmtree(lake, ignore_errors=True)
    opts = ExportOptions(
        split_size=split_size or args.split_size << 20,
        columns=columns,
        compression=args.compression,
        partition_by=args.partition_by,
    )
    with TreeCpu() as cpu:
        t = time.perf_counter()
        result = export_store(str(store), str(lake), runner, opts)
        secs = time.perf_counter() - t
    return secs, cpu.seconds, result.rows["messages"], result


def _timeline(result: Any, slots: int) -> str:
    """Where a Spark export's time went: the driver's phases, how busy the task slots were while
    the tasks ran (the driver's own tasks counted apart), the slowest task, and the tasks' CPU."""
    tasks = result.task_times
    if not tasks:
        return ""
    driver = os.getpid()
    on_spark = [t for t in tasks if t["pid"] != driver]
    on_driver = [t for t in tasks if t["pid"] == driver]
    span = result.phases["tasks"]
    busy = sum(t["end"] - t["start"] for t in on_spark)
    first = min((t["start"] for t in tasks), default=0.0)
    slowest = max(on_spark, key=lambda t: t["end"] - t["start"], default=None)
    out = (
        f"plan {result.phases['plan']:.2f} s, tasks {span:.2f} s, commit {result.phases['commit']:.2f} s; "
        f"{len(on_spark)} Spark tasks kept {slots} slots {100 * busy / (slots * span):.0f}% busy"
    )
    if on_spark:
        lag = min(t["start"] for t in on_spark) - first
        out += f" (first started {lag:.2f} s after the first task)"
    if slowest is not None:
        out += f", slowest {slowest['end'] - slowest['start']:.2f} s ({slowest['kind']})"
    if on_driver:
        out += f"; the driver ran {len(on_driver)} ({', '.join(sorted({t['kind'] for t in on_driver}))})"
    return out + f"; task CPU {sum(t['cpu'] for t in tasks):.2f} s"


def lake_queries(spark: Any, store: Path, lake_dir: Path, records: int, repeat: int) -> dict[str, dict[str, Any]]:
    """The three queries through the data source and on the lake, each answer checked equal."""
    from pyspark.sql import functions as F

    from rocketpy.spark._columns import ddl
    from rocketpy.spark.lake import Lake
    from rocketpy.spark.synth import RARE_TOPIC

    lake = Lake(str(lake_dir))
    t0 = 1_700_000_000_001 + int(records * 0.45)
    t1 = 1_700_000_000_001 + int(records * 0.55)
    n = min(12_345, records - 1)  # synth names record n's key order-n and puts it in Bench_T{n % 4}
    key_topic = RARE_TOPIC if n % 100 == 0 else f"Bench_T{n % 4}"

    picked = lake.read_table("messages", columns=["uniq_key", "topic"]).slice(n, 1).to_pylist()[0]

    def source(columns: list[tuple[str, str]]) -> Any:
        return spark.read.format("rocketmq-commitlog").schema(ddl(columns)).load(str(store))

    def count_by_topic(df: Any) -> Any:
        return sorted(tuple(r) for r in df.groupBy("topic").count().collect())

    def topic_time(df: Any, topic: str = TYPICAL_TOPIC) -> Any:
        cond = (F.col("topic") == topic) & F.col("store_timestamp").between(t0, t1)
        return df.filter(cond).agg(F.count(F.lit(1)), F.sum("store_size")).first()[:]

    def rare_topic_time(df: Any) -> Any:
        return topic_time(df, RARE_TOPIC)

    def key_lookup(df: Any) -> Any:
        cond = (F.col("topic") == key_topic) & (F.col("keys") == F.array(F.lit(f"order-{n}")))
        return sorted(r["commit_log_offset"] for r in df.filter(cond).select("commit_log_offset").collect())

    def id_lookup(df: Any) -> Any:
        cond = (F.col("topic") == picked["topic"]) & (F.col("uniq_key") == picked["uniq_key"])
        return sorted(r["commit_log_offset"] for r in df.filter(cond).select("commit_log_offset").collect())

    cases = {
        "query_count_by_topic": (count_by_topic, [("topic", "string")]),
        "query_topic_time": (
            topic_time,
            [("topic", "string"), ("store_timestamp", "long"), ("store_size", "int")],
        ),
        "query_rare_topic_time": (
            rare_topic_time,
            [("topic", "string"), ("store_timestamp", "long"), ("store_size", "int")],
        ),
        "query_key_lookup": (key_lookup, [("topic", "string"), ("keys", "strings"), ("commit_log_offset", "long")]),
        "query_id_lookup": (
            id_lookup,
            [("topic", "string"), ("uniq_key", "string"), ("commit_log_offset", "long")],
        ),
    }
    out: dict[str, dict[str, Any]] = {}
    for name, (query, columns) in cases.items():

        def on_source(c: list[tuple[str, str]] = columns) -> Any:
            return source(c)

        def on_lake() -> Any:  # made once per session (as a user registers a lake's tables, then asks)
            return lake.dataframe(spark, "messages")

        sides: dict[str, Callable[[], Any]] = {"source": on_source, "lake": on_lake}
        runs: dict[str, list[tuple[float, float, Any]]] = {"source": [], "lake": []}
        for frame in sides.values():
            query(frame())  # warm-up: plans, workers, the page cache, the JIT
        for _ in range(repeat):  # alternating, so the machine's other load falls on both sides alike
            for side, frame in sides.items():
                with TreeCpu() as cpu:
                    t = time.perf_counter()
                    answer = query(frame())
                    secs = time.perf_counter() - t
                runs[side].append((secs, cpu.seconds, answer))
        answers = {side: min(r, key=lambda x: x[0]) for side, r in runs.items()}
        assert all(a == answers["source"][2] for r in runs.values() for _, _, a in r), (name, answers)
        src, lk = answers["source"][0], answers["lake"][0]
        out[name] = {
            "source_s": round(src, 3),
            "lake_s": round(lk, 3),
            "speedup": round(src / lk, 2),
            "source_cpu_s": round(answers["source"][1], 3),
            "lake_cpu_s": round(answers["lake"][1], 3),
            "runs": repeat,
            "rows": len(answers["lake"][2]) if isinstance(answers["lake"][2], list) else 1,
        }
        if name in LOOKUPS:
            out[name]["goal"] = LOOKUPS[name]
    return out


#: the topic of query_topic_time: one of the four that share 99% of the records (the issue's query:
#: its data source read took 1.79 s over 1 GiB), not Rare_T, whose 1% the ConsumeQueues hand the data
#: source directly (measured as query_rare_topic_time, a targeted read)
TYPICAL_TOPIC = "Bench_T1"

# Targeted lookups stay with the data sources (issue #23): the IndexFile and the ConsumeQueues
# lead them to the few records asked for (kilobytes read), where the lake reads the columns of
# every row group its Bloom filters and statistics do not rule out. They are measured, not goals.
LOOKUPS = {
    "query_rare_topic_time": "none: 1% of the records, which the topic's ConsumeQueues name (a targeted read)",
    "query_key_lookup": "none: a key lookup reads kilobytes through the IndexFile; the data source is the tool",
    "query_id_lookup": "none: an id lookup is a targeted read; the data source is the tool",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=2048, help="MiB of records to synthesise (default 2048)")
    parser.add_argument("--file-size", type=int, default=1024, help="MiB per CommitLog file (default 1024)")
    parser.add_argument("--body-size", type=int, default=1024, help="bytes per message body (default 1024)")
    parser.add_argument("--split-size", type=int, default=512, help="MiB of CommitLog per export task (default 512)")
    parser.add_argument("--compression", default="zstd", help="Parquet compression (default zstd)")
    parser.add_argument("--partition-by", choices=["topic", "date"], help="export partitioned (measure its cost)")
    parser.add_argument("--dir", default="/tmp/rocketpy-bench-lake", help="where the store and lakes go")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measurement; the best counts (2)")
    parser.add_argument("--keep", action="store_true", help="keep the synthesised store (and reuse a kept one)")
    parser.add_argument("--no-queries", action="store_true", help="only the exports")
    parser.add_argument(
        "--query-repeat", type=int, default=5, help="runs of each query on each side, alternating; the best counts (5)"
    )
    parser.add_argument("--json", action="store_true", help="end with one line of JSON")
    parser.add_argument("--source-reads", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    from rocketpy.spark.lake import spark_runner
    from rocketpy.spark.session import get_session

    root = Path(args.dir)
    store, warmup, made_in = _stores(args)
    cl_bytes = sum(p.stat().st_size for p in (store / "commitlog").iterdir())
    print(
        f"store: {cl_bytes / MiB:.0f} MiB of CommitLog in {args.file_size} MiB files ({args.body_size}-byte bodies), "
        f"ready in {made_in:.1f} s under {store}; export tasks of {args.split_size} MiB, "
        f"{args.compression}{', by ' + args.partition_by if args.partition_by else ''}"
    )
    load_before = os.getloadavg()
    result: dict[str, Any] = {"store_mib": round(cl_bytes / MiB), "cores": os.cpu_count(), "master": args.master}
    spark = get_session(
        "rocketpy-bench-lake",
        args.master,
        {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "4"},
        log_level="ERROR",
    )
    try:
        runner = spark_runner(spark)
        slots = spark.sparkContext.defaultParallelism
        # Starts the Python workers (every slot's: a split of 256 KiB gives several tasks) and
        # imports the tasks' modules in them. Spark stops a worker idle for a minute, so the
        # one-process and Spark runs alternate (this also shares the machine's load out fairly).
        _export_once(warmup, root / "lake-warmup", runner, "all", args, split_size=256 << 10)
        records = 0
        for name, columns in (("export_all", "all"), ("export_header", "header")):
            lake = root / ("lake" if columns == "all" else "lake-header")
            one_runs, spark_runs = [], []
            for _ in range(args.repeat):
                one_runs.append(_export_once(store, root / "lake-1", None, columns, args))
                spark_runs.append(_export_once(store, lake, runner, columns, args))
            one_s, one_cpu, rows, one_result = min(one_runs, key=lambda r: r[0])
            sp_s, sp_cpu, sp_rows, sp_result = min(spark_runs, key=lambda r: r[0])
            assert rows == sp_rows, (rows, sp_rows)
            records = rows
            result[name] = {
                "one_process_s": round(one_s, 3),
                "spark_s": round(sp_s, 3),
                "speedup": round(one_s / sp_s, 2),
                "one_process_cpu_s": round(one_cpu, 3),
                "spark_cpu_s": round(sp_cpu, 3),
                "cpu_ratio": round(sp_cpu / one_cpu, 2),
                "runs": args.repeat,
                "lake_mib": round(sum(p.stat().st_size for p in lake.rglob("*.parquet")) / MiB, 1),
                "one_process_task_cpu_s": round(sum(t["cpu"] for t in one_result.task_times), 3),
                "spark_task_cpu_s": round(sum(t["cpu"] for t in sp_result.task_times), 3),
            }
            r = result[name]
            print(
                f"{name:14} 1 process {one_s:7.2f} s ({cl_bytes / MiB / one_s:6.0f} MiB/s, CPU {one_cpu:6.2f} s)  "
                f"spark {args.master} {sp_s:7.2f} s ({cl_bytes / MiB / sp_s:6.0f} MiB/s, CPU {sp_cpu:6.2f} s)  "
                f"x{r['speedup']:.2f}, CPU x{r['cpu_ratio']:.2f}; {rows} rows, lake {r['lake_mib']} MiB "
                f"(best of {r['runs']}, runs alternating)"
            )
            print(f"{'':14} spark: {_timeline(sp_result, slots)}")
            print(
                f"{'':14} all Spark runs: "
                + ", ".join(f"{s:.2f} s" for s, *_ in spark_runs)
                + "; all one-process runs: "
                + ", ".join(f"{s:.2f} s" for s, *_ in one_runs)
            )
        if not args.no_queries:
            for name, q in lake_queries(spark, store, root / "lake", records, args.query_repeat).items():
                result[name] = q
                print(
                    f"{name:22} data source {q['source_s']:7.3f} s (CPU {q['source_cpu_s']:6.2f} s)  "
                    f"lake {q['lake_s']:7.3f} s (CPU {q['lake_cpu_s']:6.2f} s)  "
                    f"x{q['speedup']:.2f} (best of {q['runs']}, alternating; {q['rows']} result rows equal)"
                    + (f"; goal {q['goal']}" if "goal" in q else "")
                )
            # Spark's own share of a query, measured after the queries in the same warm session: a
            # two-stage job over no data (plan, schedule, shuffle; in a young session the JIT
            # compiling Spark's own code as well). No lake query can take less.
            floor = []
            for _ in range(args.query_repeat + 1):
                t = time.perf_counter()
                spark.range(1).groupBy().count().collect()
                floor.append(time.perf_counter() - t)
            result["spark_query_floor_s"] = round(min(floor[1:]), 3)
            print(f"spark query floor (a two-stage job over no data): {result['spark_query_floor_s']:.3f} s")
    finally:
        spark.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    result["loadavg"] = [round(x, 2) for x in (*load_before, *os.getloadavg())]
    print(
        f"on {os.cpu_count()} cores; load average {', '.join(f'{x:.1f}' for x in load_before)} before, "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} after"
    )
    if args.json:
        print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(source_reads_main() if "--source-reads" in sys.argv else main())
