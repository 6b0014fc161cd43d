"""The Parquet lake: its rows are the data sources' rows, and its commit protocol holds.

Most tests export in this process (the very task code Spark's executors run, without a
JVM); the few that need Spark share one session of the module (``local[2,2]``: a failed task
is tried again, as on a cluster).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install -e '.[spark]')")

import pyarrow.fs as pafs  # noqa: E402

from rocketpy.spark.lake import (  # noqa: E402
    ExportOptions,
    Lake,
    LakeDir,
    LakeError,
    export_pcaps,
    export_store,
    spark_runner,
)
from rocketpy.spark.lake.export import PCAP_OPTIONS  # noqa: E402
from rocketpy.spark.synth import synthesise_store  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "protocol" / "golden"
STORE = GOLDEN / "store-dump"
CRASHED = GOLDEN / "store-dump-crashed"
CAPTURES = GOLDEN / "captures"
SORT = {
    "messages": ("file", "commit_log_offset", "record_type"),
    "consume_queues": ("file", "queue_offset"),
    "index_entries": ("file", "entry"),
    "frames": ("file", "frame_index", "msg_index"),
    "ha": ("file", "frame_index", "msg_index"),
    "damage": ("file", "commit_log_offset", "kind"),
}


def _sorted(table: str, rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: tuple((r[k] is None, r[k] if r[k] is not None else 0) for k in SORT[table]))


def _source_rows(kind: str, options: dict[str, str]) -> list[dict]:
    from rocketpy.spark import sources

    reader = {
        "messages": sources._CommitLogReader,
        "consume_queues": sources._ConsumeQueueReader,
        "index_entries": sources._IndexReader,
        "frames": sources._PcapReader,
    }[kind](options)
    return [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]


def _lake_rows(lake: Lake, table: str) -> list[dict]:
    return _sorted(table, lake.read_table(table).to_pylist())


def _assert_store_lake(store: Path, lake: Lake) -> None:
    opts = {"path": str(store)}
    for table in ("messages", "consume_queues", "index_entries"):
        expected = _sorted(table, _source_rows(table, opts))
        assert _lake_rows(lake, table) == expected, table
        assert lake.rows(table) == len(expected)
    messages = _source_rows("messages", opts)
    bad = [m for m in messages if m["record_type"] == "corrupt" or m["crc_ok"] is False]
    damage = _lake_rows(lake, "damage")
    assert [(d["commit_log_offset"], d["kind"]) for d in damage] == sorted(
        (m["commit_log_offset"], "corrupt_region" if m["record_type"] == "corrupt" else "crc_failure") for m in bad
    )


def _damaged_copy(tmp_path: Path) -> Path:
    """The golden store with a flipped body byte (a CRC failure) and a smashed record header."""
    store = tmp_path / "damaged"
    shutil.copytree(STORE, store)
    messages = [m for m in _source_rows("messages", {"path": str(STORE)}) if m["record_type"] == "message"]
    log = store / "commitlog" / "00000000000000000000"
    data = bytearray(log.read_bytes())
    from rocketpy.spark._records import record_layouts

    flip = next(m for m in messages[10:] if m["body_size"] and not m["sys_flag"] & 0x30)  # IPv4 hosts
    data[flip["commit_log_offset"] + record_layouts()[0].head] ^= 0xFF  # the body's first byte
    smash = messages[40]["commit_log_offset"]
    data[smash : smash + 8] = b"\xde\xad\xbe\xef" * 2
    log.write_bytes(bytes(data))
    return store


@pytest.mark.parametrize("split", ["4k", "10007", "64k", "512m"])
def test_store_lake_rows_are_the_sources_rows(tmp_path, split):
    from rocketpy.spark._files import split_size

    for store in (STORE, CRASHED, _damaged_copy(tmp_path)):
        where = tmp_path / f"lake-{store.name}"
        result = export_store(
            str(store), str(where), options=ExportOptions(split_size=split_size({"splitsize": split}))
        )
        assert result.mode == "full"
        _assert_store_lake(store, Lake(str(where)))


def test_damaged_copy_lands_in_the_damage_table(tmp_path):
    store = _damaged_copy(tmp_path)
    export_store(str(store), str(tmp_path / "lake"))
    kinds = {d["kind"] for d in Lake(str(tmp_path / "lake")).read_table("damage").to_pylist()}
    assert kinds == {"corrupt_region", "crc_failure"}


def test_capture_lake_rows_are_the_sources_rows(tmp_path):
    result = export_pcaps([str(CAPTURES)], str(tmp_path / "lake"))
    lake = Lake(str(tmp_path / "lake"))
    rows = _source_rows("frames", {"path": str(CAPTURES), **PCAP_OPTIONS})
    frames = [r for r in rows if not (r["kind"] or "").startswith("ha_")]
    ha = [r for r in rows if (r["kind"] or "").startswith("ha_")]
    assert ha, "the golden captures hold an HA stream"
    assert _lake_rows(lake, "frames") == _sorted("frames", frames)
    assert _lake_rows(lake, "ha") == _sorted("ha", ha)
    assert result.rows == {"frames": len(frames), "ha": len(ha)}
    # the default (not exploded, no HA) source rows are the lake's first row of each command
    plain = _source_rows("frames", {"path": str(CAPTURES)})
    assert len(plain) == sum(1 for r in frames if (r["msg_index"] or 0) == 0)


def test_header_only_and_no_bodies_keep_their_columns(tmp_path):
    export_store(str(STORE), str(tmp_path / "h"), options=ExportOptions(columns="header"))
    export_store(str(STORE), str(tmp_path / "n"), options=ExportOptions(columns="no-bodies"))
    header, nobody = Lake(str(tmp_path / "h")), Lake(str(tmp_path / "n"))
    names = [n for n, _ in header.columns("messages")]
    assert "body" not in names and "properties" not in names and "topic" in names
    assert header.read_table("messages").column_names == names
    assert "body" not in [n for n, _ in nobody.columns("messages")]
    full = _sorted("messages", _source_rows("messages", {"path": str(STORE)}))
    got = _lake_rows(nobody, "messages")
    assert got == [{k: v for k, v in r.items() if k != "body"} for r in full]


def test_row_groups_carry_the_statistics_and_bloom_filters_queries_prune_by(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from rocketpy.spark.lake import tasks

    monkeypatch.setattr(tasks, "ROW_GROUP_ROWS", 500)  # a row group per batch the walk hands over
    store = tmp_path / "store"
    _synth(store, files=1, file_size=8 << 20)  # batches of 16384 records: a few of them
    export_store(str(store), str(tmp_path / "lake"))
    lake = Lake(str(tmp_path / "lake"))
    for path in lake.files("messages"):
        meta = pq.ParquetFile(path).metadata
        assert meta.num_row_groups > 1
        group = meta.row_group(0)
        columns = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
        for name in ("commit_log_offset", "store_timestamp", "topic", "queue_id", "msg_id", "keys.list.element"):
            assert columns[name].is_stats_set and columns[name].statistics.has_min_max, name
        assert not columns["body"].is_stats_set and not columns["properties.key_value.value"].is_stats_set
        assert all(columns[n].bloom_filter_offset for n in ("uniq_key", "msg_id"))
        # row groups in offset order, disjoint: a range of offsets (or times) prunes all but a few
        spans = [meta.row_group(i).column(2).statistics for i in range(meta.num_row_groups)]
        assert meta.row_group(0).column(2).path_in_schema == "commit_log_offset"
        assert all(a.max < b.min for a, b in zip(spans, spans[1:]))


@pytest.mark.parametrize("by", ["topic", "date"])
def test_partitioned_lake_has_the_same_rows_one_directory_per_value(tmp_path, by):
    export_store(str(STORE), str(tmp_path / "lake"), options=ExportOptions(partition_by=by))
    lake = Lake(str(tmp_path / "lake"))
    _assert_store_lake(STORE, lake)
    import pyarrow.parquet as pq

    for part in lake.parts("messages"):
        (value,) = part["partition"].values()
        assert part["path"].startswith(f"messages/{by}=")
        rows = pq.read_table(tmp_path / "lake" / part["path"]).to_pylist()
        if by == "topic":
            assert {r["topic"] for r in rows} == {value}
        else:  # a corrupt row has no time: Hive's default partition
            days = {None if r["store_time"] is None else r["store_time"].date().isoformat() for r in rows}
            assert days == {value}


# -- the commit protocol ----------------------------------------------------------------------


def _synth(store: Path, files: int = 3, file_size: int = 256 << 10) -> None:
    synthesise_store(store, files * file_size - 4096, file_size, 200, rare_every=7, index=True)


def test_a_killed_export_leaves_nothing_visible_and_a_rerun_no_duplicates(tmp_path):
    store, lake = tmp_path / "store", tmp_path / "lake"
    _synth(store, files=4)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "rocketpy.cli", "lake", "export", str(store), "--lake", str(lake)]
    proc = subprocess.Popen([*cmd, "--in-process", "--split-size", "4k"], env=env, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not list((lake / "messages").glob("part-*")) and time.monotonic() < deadline:
            assert proc.poll() is None, "the export ended before it could be killed"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # mid-export: parts written, no manifest yet
    finally:
        proc.wait(timeout=30)
    left = list((lake / "messages").glob("part-*"))
    assert left
    with pytest.raises(LakeError, match="no lake"):
        Lake(str(lake))  # nothing committed: nothing readable
    result = export_store(str(store), str(lake), options=ExportOptions(split_size=64 << 10))
    assert result.mode == "full"
    got = Lake(str(lake))
    _assert_store_lake(store, got)
    offsets = [m["commit_log_offset"] for m in got.read_table("messages").to_pylist()]
    assert len(offsets) == len(set(offsets))
    listed = {p["path"] for p in got.parts("messages")}
    on_disk = {f"messages/{p.name}" for p in (lake / "messages").glob("part-*")}
    assert on_disk == listed, "the killed attempt's parts were deleted"


def _earlier(store: Path, earlier: Path, cut: int) -> None:
    """``store`` as it was when only its first ``cut`` CommitLog bytes were written: later files
    absent, the rest zeros, queue units past the cut zeroed, no IndexFile yet."""
    import struct

    (earlier / "commitlog").mkdir(parents=True)
    for f in sorted((store / "commitlog").iterdir()):
        base = int(f.name)
        if base >= cut:
            continue
        data = bytearray(f.read_bytes())
        keep = min(len(data), cut - base)
        data[keep:] = bytes(len(data) - keep)
        (earlier / "commitlog" / f.name).write_bytes(bytes(data))
    for q in (store / "consumequeue").glob("*/*/*"):
        data = bytearray(q.read_bytes())
        for at in range(0, len(data) - 19, 20):
            (offset,) = struct.unpack_from(">q", data, at)
            if offset >= cut:
                data[at:] = bytes(len(data) - at)
                break
        target = earlier / q.relative_to(store)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(bytes(data))


def test_incremental_export_after_appends_equals_a_full_export(tmp_path):
    grown = tmp_path / "grown"
    _synth(grown)
    messages = [m for m in _source_rows("messages", {"path": str(grown)}) if m["record_type"] == "message"]
    cut = messages[len(messages) // 2]["commit_log_offset"]  # a record boundary in the second file
    live = tmp_path / "live"
    _earlier(grown, live, cut)
    lake, full = tmp_path / "lake", tmp_path / "full"
    opts = ExportOptions(split_size=100_000)
    first = export_store(str(live), str(lake), options=opts)
    assert first.mode == "full"
    # the broker writes on: the live store becomes the grown one (same paths, new bytes, new files)
    for f in grown.rglob("*"):
        mirror = live / f.relative_to(grown)
        if f.is_file() and not (mirror.exists() and mirror.read_bytes() == f.read_bytes()):
            mirror.parent.mkdir(parents=True, exist_ok=True)
            mirror.write_bytes(f.read_bytes())
    second = export_store(str(live), str(lake), options=opts)
    assert second.mode == "incremental"
    export_store(str(live), str(full), options=opts)
    inc, ref = Lake(str(lake)), Lake(str(full))
    for table in ("messages", "consume_queues", "index_entries", "damage"):
        assert _lake_rows(inc, table) == _lake_rows(ref, table), table
    _assert_store_lake(live, inc)
    # only what is new was decoded: the first file not at all, the second from the cut on
    file_size = 256 << 10
    assert second.rows["messages"] == sum(1 for m in messages if m["commit_log_offset"] >= cut)
    cl_read = second.bytes_read - sum(q.stat().st_size for q in live.glob("consumequeue/*/*/*"))
    cl_read -= sum(i.stat().st_size for i in live.glob("index/*"))
    assert cl_read <= 3 * file_size - cut
    # a third export of an unchanged store reads nothing
    third = export_store(str(live), str(lake), options=opts)
    assert (third.tasks, third.bytes_read) == (0, 0)
    assert _lake_rows(Lake(str(lake)), "messages") == _lake_rows(ref, "messages")


def test_an_export_with_other_columns_starts_over(tmp_path):
    export_store(str(STORE), str(tmp_path / "lake"), options=ExportOptions(columns="header"))
    again = export_store(str(STORE), str(tmp_path / "lake"))
    assert again.mode == "full" and again.rows["messages"] == len(_source_rows("messages", {"path": str(STORE)}))
    assert "body" in [n for n, _ in Lake(str(tmp_path / "lake")).columns("messages")]


def test_store_and_captures_share_a_lake(tmp_path):
    export_store(str(STORE), str(tmp_path / "lake"))
    export_pcaps([str(CAPTURES)], str(tmp_path / "lake"))
    lake = Lake(str(tmp_path / "lake"))
    assert lake.tables() == ["messages", "damage", "consume_queues", "index_entries", "frames", "ha"]
    again = export_store(str(STORE), str(tmp_path / "lake"))
    assert again.tasks == 0
    assert Lake(str(tmp_path / "lake")).rows("frames") == lake.rows("frames")


# -- other filesystems -------------------------------------------------------------------------


def test_export_from_and_to_other_filesystems_reads_only_the_splits(counting_fs, tmp_path):
    from rocketpy.spark._files import file_size
    from rocketpy.spark.commitlog import REMOTE_TAIL

    store = tmp_path / "store"
    _synth(store, files=3, file_size=1 << 20)
    local = tmp_path / "local"
    split = 64 << 10
    export_store(str(store), str(local), options=ExportOptions(split_size=split))
    memory = pafs._MockFileSystem()
    before = counting_fs.read
    result = export_store("count://" + str(store), LakeDir("lake", memory), options=ExportOptions(split_size=split))
    read = counting_fs.read - before
    remote = Lake(LakeDir("lake", memory))
    for table in ("messages", "consume_queues", "index_entries"):
        got = [dict(r, file=r["file"].removeprefix("count://")) for r in remote.read_table(table).to_pylist()]
        assert _sorted(table, got) == _lake_rows(Lake(str(local)), table), table
    # every CommitLog split reads its range and at most a tail to finish its last record
    bound = 0
    for f in (store / "commitlog").iterdir():
        size = file_size(str(f))
        bound += sum(min(size, s + split + REMOTE_TAIL) - s + 8 for s in range(0, size, split))
    bound += sum(q.stat().st_size for q in store.glob("consumequeue/*/*/*")) + 2 * (1 << 20)
    assert read <= bound
    assert result.bytes_read > 0
    assert not list(tmp_path.glob("lake*")), "the in-memory lake wrote nothing locally"


# -- through Spark --------------------------------------------------------------------------


def test_spark_export_and_sql_over_the_lake(spark, tmp_path):
    result = export_store(str(STORE), str(tmp_path / "lake"), runner=spark_runner(spark))
    export_pcaps([str(CAPTURES)], str(tmp_path / "lake"), runner=spark_runner(spark))
    lake = Lake(str(tmp_path / "lake"))
    assert result.tasks == 3  # one CommitLog split, the ConsumeQueues batched, the IndexFile
    got = sorted(map(tuple, lake.dataframe(spark, "messages").collect()))
    source = spark.read.format("rocketmq-commitlog").load(str(STORE))
    assert got == sorted(map(tuple, source.collect()))
    lake.register(spark)
    by_topic = {
        r["topic"]: r["n"] for r in spark.sql("SELECT topic, count(*) n FROM messages GROUP BY topic").collect()
    }
    manifest = json.loads((STORE / "manifest.json").read_text())
    assert by_topic == manifest["store"]["recordsPerTopic"]
    pulls = spark.sql("SELECT count(*) n FROM frames WHERE code_name = 'PULL_MESSAGE'").first()["n"]
    assert pulls > 0


def test_spark_export_shares_small_tasks_with_the_driver(spark, tmp_path):
    store = tmp_path / "store"
    _synth(store, files=2)
    # several CommitLog splits for the slots, the ConsumeQueues and the IndexFile on the driver
    opts = ExportOptions(split_size=128 << 10)
    result = export_store(str(store), str(tmp_path / "lake"), runner=spark_runner(spark), options=opts)
    _assert_store_lake(store, Lake(str(tmp_path / "lake")))
    by_pid: dict[str, set[str]] = {}
    for t in result.task_times:
        by_pid.setdefault("driver" if t["pid"] == os.getpid() else "executor", set()).add(t["kind"])
    assert by_pid == {"driver": {"consumequeue", "index"}, "executor": {"commitlog"}}
    assert sorted(t["seq"] for t in result.task_times) == list(range(result.tasks))  # each ran once

    plain = export_store(
        str(store), str(tmp_path / "lake2"), runner=spark_runner(spark, driver_share=False), options=opts
    )
    assert {t["pid"] for t in plain.task_times}.isdisjoint({os.getpid()})
    assert Lake(str(tmp_path / "lake2")).rows("messages") == Lake(str(tmp_path / "lake")).rows("messages")


def _dies_once(task, target):
    """run_task, but the first attempt of task 0 writes its parts and dies before reporting them."""
    from pyspark import TaskContext

    from rocketpy.spark.lake.tasks import run_task

    result = run_task(task, target)
    if task.seq == 0 and TaskContext.get().attemptNumber() == 0:
        os._exit(1)
    return result


def test_a_task_killed_after_writing_is_retried_without_duplicates(spark, tmp_path):
    import functools

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the executors cannot import tests/

    def flaky_runner(tasks, target, progress=None):
        rdd = spark.sparkContext.parallelize(tasks, len(tasks))
        return rdd.map(functools.partial(_dies_once, target=target)).collect()

    store = tmp_path / "store"
    _synth(store, files=2)
    lake = tmp_path / "lake"
    export_store(str(store), str(lake), runner=flaky_runner, options=ExportOptions(split_size=128 << 10))
    got = Lake(str(lake))
    _assert_store_lake(store, got)
    parts = {p["path"] for p in got.parts("messages")}
    assert {f"messages/{p.name}" for p in (lake / "messages").glob("part-*")} == parts
    first = [p for p in parts if p.startswith("messages/part-00000-")]
    assert len(first) == 1, "one attempt of task 0 is in the manifest"


def test_cli_export_info_and_errors(tmp_path, capsys):
    from rocketpy.cli import main

    lake = str(tmp_path / "lake")
    assert main(["lake", "export", str(STORE), str(CAPTURES), "--lake", lake, "--in-process", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert [r["mode"] for r in results] == ["full", "full"]
    assert main(["lake", "info", "--lake", lake, "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["tables"]["messages"]["rows"] == len(_source_rows("messages", {"path": str(STORE)}))
    assert info["inputs"] == {"store": str(STORE), "captures": [str(CAPTURES)]}
    assert main(["lake", "export", str(tmp_path / "missing"), "--lake", lake, "--in-process"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file or directory" in err
    assert main(["lake", "info", "--lake", str(tmp_path / "none")]) == 1
    assert "no lake at" in capsys.readouterr().err
