"""CommitLog parsing throughput: the rocketmq-commitlog Spark source against one Python process.

Synthesises a CommitLog of ``--size`` MiB (records made by
``rocketpy.codecs.message.encode_message``, laid out in ``--file-size`` MiB files the
way the broker lays them out: records back to back, a blank record, zeros), then times

* ``python``: one process running the very code a Spark task runs
  (``commitlog_batches``: walk, decode, CRC check, Arrow rows) over the files in turn;
* ``python-decode``: the bare walk and decode, no rows (the floor of the codec);
* ``spark``: ``spark.read.format("rocketmq-commitlog")`` with ``--master`` (local[2]),
  one partition per file, counting rows and summing body sizes so every record is parsed.

Spark's start-up is left out (a warm-up query runs first). The files are in the page
cache for every run, so the figures are CPU-bound parsing, not disk.

    python tools/bench/bench_spark.py --size 512
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from rocketpy.codecs.message import MessageExt, UniqIdGenerator, body_crc, encode_message
from rocketpy.codecs.store_records import build_blank_record

MiB = 1 << 20


def synthesise(directory: Path, total: int, file_size: int, body_size: int) -> tuple[int, int]:
    """Fill ``ceil(total / file_size)`` CommitLog files with records; returns (records, record bytes).

    Every file is filled up as the broker fills it (records until the next one does not
    fit, then a blank), so ``--size 256`` gives four equal 64 MiB files.
    """
    directory.mkdir(parents=True, exist_ok=True)
    ids = UniqIdGenerator(ip="10.0.0.1", pid=4242, class_loader_hash=7)
    # Varied but cheap bodies: a slice of a random pool, so CRCs differ record to record.
    pool = os.urandom(body_size * 2)
    records = written = 0
    queue_offsets = [0] * 8
    for n in range(max(1, -(-total // file_size))):
        base = n * file_size
        pos = 0
        with open(directory / f"{base:020d}", "wb") as f:
            while True:
                queue_id = records % 8
                start = records % body_size
                body = pool[start : start + body_size]
                msg = MessageExt(
                    topic=f"Bench_T{records % 4}",
                    body=body,
                    properties={
                        "UNIQ_KEY": ids.next_id(),
                        "KEYS": f"order-{records}",
                        "TAGS": "TagA" if records % 2 else "TagB",
                    },
                    queue_id=queue_id,
                    queue_offset=queue_offsets[queue_id],
                    born_timestamp=1_700_000_000_000 + records,
                    store_timestamp=1_700_000_000_001 + records,
                    born_host="10.0.0.1:50000",
                    store_host="10.0.0.2:10911",
                    commit_log_offset=base + pos,
                    body_crc=body_crc(body),
                )
                raw = encode_message(msg)
                if pos + len(raw) + 8 > file_size:
                    break  # does not fit with room for the blank: close the file like the broker
                f.write(raw)
                pos += len(raw)
                written += len(raw)
                records += 1
                queue_offsets[queue_id] += 1
            f.write(build_blank_record(file_size - pos))
            f.truncate(file_size)  # the rest reads as zeros, as in a preallocated file
    return records, written


def _best(fn, repeat: int) -> tuple[float, int]:
    """The fastest of ``repeat`` runs: other processes on a small machine only ever add time."""
    best: tuple[float, int] | None = None
    for _ in range(repeat):
        secs, rows = fn()
        if best is None or secs < best[0]:
            best = (secs, rows)
    assert best is not None
    return best


def time_python(files: list[tuple[str, int]]) -> tuple[float, int]:
    from rocketpy.spark.commitlog import commitlog_batches

    t = time.perf_counter()
    rows = 0
    for path, base in files:
        for batch in commitlog_batches(path, base):
            rows += batch.num_rows
    return time.perf_counter() - t, rows


def time_decode(files: list[tuple[str, int]]) -> tuple[float, int]:
    from rocketpy.spark._files import mapped
    from rocketpy.spark.commitlog import walk_commitlog

    t = time.perf_counter()
    rows = 0
    for path, base in files:
        with mapped(path) as buf:
            for _ in walk_commitlog(buf, base):
                rows += 1
    return time.perf_counter() - t, rows


def time_spark(directory: Path, warmup: Path, master: str, include_body: bool, repeat: int) -> tuple[float, int, int]:
    from pyspark.sql import functions as F

    from rocketpy.spark.session import get_session

    spark = get_session(
        "rocketpy-bench",
        master,
        {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "4"},
    )
    spark.sparkContext.setLogLevel("ERROR")

    def count(path: Path) -> Any:
        df = spark.read.format("rocketmq-commitlog").option("includeBody", str(include_body).lower()).load(str(path))
        return df, df.agg(F.count(F.lit(1)).alias("n"), F.sum("body_size").alias("b")).first()

    # Warm-up on a small store: starts the Python workers and imports rocketpy in them,
    # which the first query over the data source would otherwise pay for.
    for _ in range(2):
        count(warmup)

    def once() -> tuple[float, int]:
        t = time.perf_counter()
        _, row = count(directory)
        return time.perf_counter() - t, row["n"]

    secs, rows = _best(once, repeat)
    parts = count(directory)[0].rdd.getNumPartitions()
    spark.stop()
    return secs, rows, parts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=256, help="MiB of records to synthesise (default 256)")
    parser.add_argument("--file-size", type=int, default=64, help="MiB per CommitLog file (default 64)")
    parser.add_argument("--body-size", type=int, default=1024, help="bytes per message body (default 1024)")
    parser.add_argument("--dir", default="/tmp/rocketpy-bench-commitlog", help="where the files go")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    parser.add_argument("--no-body", action="store_true", help="read with includeBody=false in Spark")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measurement; the best counts (2)")
    parser.add_argument("--keep", action="store_true", help="keep the synthesised files")
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    directory = Path(args.dir) / "commitlog"
    if directory.exists():
        shutil.rmtree(directory)
    warmup = Path(args.dir) / "warmup"
    shutil.rmtree(warmup, ignore_errors=True)
    synthesise(warmup / "commitlog", MiB, MiB, args.body_size)
    t = time.perf_counter()
    records, written = synthesise(directory, args.size * MiB, args.file_size * MiB, args.body_size)
    files = sorted((str(p), int(p.name)) for p in directory.iterdir())
    print(
        f"synthesised {records} records, {written / MiB:.1f} MiB in {len(files)} files of {args.file_size} MiB "
        f"({args.body_size}-byte bodies) in {time.perf_counter() - t:.1f} s under {directory}"
    )
    mb = written / MiB
    try:
        secs, rows = _best(lambda: time_python(files), args.repeat)
        assert rows == records, (rows, records)
        print(
            f"python (1 process, rows as Spark gets them): {secs:7.2f} s  {mb / secs:8.1f} MiB/s  "
            f"{rows / secs:10.0f} records/s"
        )
        secs_d, rows = _best(lambda: time_decode(files), args.repeat)
        assert rows == records, (rows, records)
        print(
            f"python (1 process, walk + decode only)     : {secs_d:7.2f} s  {mb / secs_d:8.1f} MiB/s  "
            f"{rows / secs_d:10.0f} records/s"
        )
        secs_s, rows, parts = time_spark(directory.parent, warmup, args.master, not args.no_body, args.repeat)
        assert rows == records, (rows, records)
        print(
            f"spark {args.master} ({parts} partitions)            : {secs_s:7.2f} s  {mb / secs_s:8.1f} MiB/s  "
            f"{rows / secs_s:10.0f} records/s"
        )
        print(f"speed-up of spark over the single process: {secs / secs_s:.2f}x on {os.cpu_count()} cores")
    finally:
        if not args.keep:
            shutil.rmtree(args.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
