"""The Spark data sources on the golden captures and store dump, in local mode.

One local[2] session for the module. Skipped, with the reason, where pyspark or Java
is missing (pip install -e '.[spark]'; a JRE 17).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install -e '.[spark]')")
if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
    pytest.skip("no Java runtime: Spark needs java on PATH or JAVA_HOME", allow_module_level=True)

from rocketpy.codecs.store_records import index_key, index_key_hash  # noqa: E402
from rocketpy.spark._columns import batches_to_rows  # noqa: E402
from rocketpy.spark.commitlog import CorruptRegion, commitlog_batches, walk_commitlog  # noqa: E402

GOLDEN = Path(__file__).resolve().parent.parent / "protocol" / "golden"
CAPTURES = GOLDEN / "captures"
STORE = GOLDEN / "store-dump"
CRASHED = GOLDEN / "store-dump-crashed"  # vendored from ../shared/store-dump-crashed
STORE_MANIFEST = json.loads((STORE / "manifest.json").read_text())


# -- CommitLog ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def records(spark):
    rows = spark.read.format("rocketmq-commitlog").load(str(STORE)).collect()
    return [r.asDict() for r in rows]


def test_commitlog_counts_match_manifest(records):
    store = STORE_MANIFEST["store"]
    assert len(records) == store["records"]
    assert {r["record_type"] for r in records} == {"message"}
    assert Counter(r["topic"] for r in records) == store["recordsPerTopic"]
    assert sum(1 for r in records if r["crc_ok"] is not True) == store["recordsWithBadBodyCrc"] == 0
    assert max(r["commit_log_offset"] + r["store_size"] for r in records) == store["commitlogMaxOffset"]
    # Records tile the file: each starts where the previous ended.
    offsets = sorted((r["commit_log_offset"], r["store_size"]) for r in records)
    assert offsets[0][0] == 0
    assert all(a + n == b for (a, n), (b, _) in zip(offsets, offsets[1:]))
    assert all(r["physical_offset"] == r["commit_log_offset"] for r in records)


def test_commitlog_messages_are_where_the_manifest_says(records):
    by_offset = {r["commit_log_offset"]: r for r in records}
    checked = 0
    for messages in STORE_MANIFEST["messagesByTopic"].values():
        for m in messages:
            for stored in m["storedRecords"]:
                r = by_offset[stored["physicalOffset"]]
                assert r["topic"] == stored["topic"]
                assert r["queue_id"] == stored["queueId"]
                assert r["queue_offset"] == stored["queueOffset"]
                assert r["msg_id"] == stored["offsetMsgId"]
                assert r["reconsume_times"] == stored["reconsumeTimes"]
                assert r["uniq_key"] == m["msgId"]
                assert (r["properties"] or {}).get("REAL_TOPIC") == stored["realTopic"]
                checked += 1
            if m.get("mustBePresent"):
                assert m["storedRecords"], m["msgId"]
            if m.get("tags") and m["storedRecords"]:
                first = by_offset[m["storedRecords"][0]["physicalOffset"]]
                assert first["tags"] == m["tags"]
                assert first["keys"] == (m["keys"].split() if m.get("keys") else [])
                for k, v in m["userProperties"].items():
                    assert first["properties"][k] == v
    assert checked >= STORE_MANIFEST["messagesThatMustBePresent"]


def test_commitlog_bodies_and_decompression(spark, records):
    manifest = {m["msgId"]: m for ms in STORE_MANIFEST["messagesByTopic"].values() for m in ms if m["msgId"]}
    plain = [r for r in records if r["uniq_key"] in manifest and not r["compressed"]]
    for r in plain:
        m = manifest[r["uniq_key"]]
        if m["bodyEncoding"] == "utf8" and r["topic"] == r["properties"].get("REAL_TOPIC", r["topic"]):
            assert r["body"].decode() == m["body"]
    compressed = [r for r in records if r["compressed"]]
    assert compressed, "the golden store holds the 9 KB compressed body"
    inflated = (
        spark.read.format("rocketmq-commitlog")
        .option("decompress", "true")
        .load(str(STORE))
        .filter("compressed")
        .select("uniq_key", "body", "error")
        .collect()
    )
    for row in inflated:
        assert row["error"] is None
        assert row["body"].decode() == manifest[row["uniq_key"]]["body"]


def test_commitlog_single_process_matches_spark(records):
    path = STORE / "commitlog" / "00000000000000000000"
    local = list(batches_to_rows(commitlog_batches(str(path), 0)))
    assert [r["msg_id"] for r in local] == [r["msg_id"] for r in sorted(records, key=lambda r: r["commit_log_offset"])]


# -- walking damaged CommitLogs (pure Python, no Spark) ------------------------------


def _golden_commitlog() -> bytes:
    return (STORE / "commitlog" / "00000000000000000000").read_bytes()


def test_walk_resyncs_after_bad_magic_and_zeroed_record():
    data = bytearray(_golden_commitlog())
    good = [x for x in walk_commitlog(bytes(data), 0) if not isinstance(x, CorruptRegion)]
    (a, ma), (c, mc) = good[5], good[40]
    data[a + 4] ^= 0xFF  # the magic code of record 5
    data[c : c + mc.store_size] = bytes(mc.store_size)  # record 40 zeroed
    out = list(walk_commitlog(bytes(data), 0))
    regions = [x for x in out if isinstance(x, CorruptRegion)]
    assert [(r.offset, r.length) for r in regions] == [(a, ma.store_size), (c, mc.store_size)]
    assert "magic" in regions[0].reason and "zero" in regions[1].reason
    assert len(out) - len(regions) == len(good) - 2


def test_walk_reports_a_torn_last_record():
    data = bytearray(_golden_commitlog())
    good = [x for x in walk_commitlog(bytes(data), 0) if not isinstance(x, CorruptRegion)]
    z, mz = good[-1]
    data[z + 60 : z + mz.store_size] = bytes(mz.store_size - 60)
    out = list(walk_commitlog(bytes(data), 0))
    assert isinstance(out[-1], CorruptRegion) and out[-1].offset == z
    assert len(out) == len(good)


def test_walk_without_resync_stops_at_damage():
    data = bytearray(_golden_commitlog())
    good = [x for x in walk_commitlog(bytes(data), 0) if not isinstance(x, CorruptRegion)]
    a, _ = good[3]
    data[a + 4 : a + 8] = struct.pack(">i", 12345)
    out = list(walk_commitlog(bytes(data), 0, resync=False))
    assert len(out) == 4 and isinstance(out[-1], CorruptRegion)


# -- splits below one file (pure Python, then one Spark read) --------------------------

# From 4 KiB up: every power of two to past the file's size, and sizes that cut records
# and units at odd places.
SPLIT_SIZES = [4096 << k for k in range(11)] + [4097, 5000, 6144, 10_007, 65_537, 1_000_003]


def _split_rows(read, size: int, file_size: int) -> list[dict]:
    rows: list[dict] = []
    for start in range(0, file_size, size):
        end = start + size if start + size < file_size else None
        rows.extend(batches_to_rows(read(start, end)))
    return rows


def _good_records(data: bytes) -> list:
    return [x for x in walk_commitlog(data, 0) if not isinstance(x, CorruptRegion)]


def _damaged_commitlog(tmp_path: Path) -> Path:
    """The golden CommitLog with a bad magic, a torn size, a zeroed run, a flipped properties byte."""
    data = bytearray(_golden_commitlog())
    good = _good_records(bytes(data))
    data[good[5][0] + 4] ^= 0xFF
    data[good[20][0] : good[20][0] + 4] = struct.pack(">i", 7)
    zero_from, zero_to = good[40][0] + 100, good[44][0] + 10
    data[zero_from:zero_to] = bytes(zero_to - zero_from)
    data[good[70][0] + good[70][1].store_size - 30] ^= 0x55  # CRC or properties damage
    data[good[-1][0] + 60 :] = bytes(len(data) - good[-1][0] - 60)  # a torn last record
    path = tmp_path / "00000000000000000000"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("damaged", [False, True], ids=["golden", "damaged"])
def test_commitlog_splits_of_every_size_give_the_rows_of_one_task(tmp_path, damaged):
    path = _damaged_commitlog(tmp_path) if damaged else STORE / "commitlog" / "00000000000000000000"
    whole = list(batches_to_rows(commitlog_batches(str(path), 0)))
    good = [at for at, _ in _good_records(_golden_commitlog())]
    messages = [r for r in whole if r["record_type"] == "message"]
    assert all(r["crc_ok"] is True and r["error"] is None for r in messages)
    if damaged:
        # records 5 (magic), 20 (size), 40 to 44 (one zeroed run) and the torn last one are lost, each run of
        # damage in one corrupt row where it starts; the others read as in the golden file
        lost = {5, 20, 40, 41, 42, 43, 44, len(good) - 1}
        corrupt = [r for r in whole if r["record_type"] == "corrupt"]
        assert [r["commit_log_offset"] for r in corrupt] == [good[i] for i in (5, 20, 40, len(good) - 1)]
        assert all(r["error"] for r in corrupt)
        assert [r["commit_log_offset"] for r in messages] == [at for i, at in enumerate(good) if i not in lost]
        # record 70's flipped byte is in its properties, which no CRC covers (4.9.8): only the key changed
        (changed,) = [r for r in messages if r["commit_log_offset"] == good[70]]
        assert ("CLUST\x10R", "DefaultCluster") in changed["properties"]
    else:
        assert [r["commit_log_offset"] for r in whole] == good
    size = path.stat().st_size
    for split in SPLIT_SIZES:

        def read(start, end):
            return commitlog_batches(str(path), 0, start=start, end=end)

        assert _split_rows(read, split, size) == whole, split


@pytest.mark.parametrize("damaged", [False, True], ids=["golden", "damaged"])
def test_records_named_by_position_are_the_walks_rows(tmp_path, damaged):
    from rocketpy.spark.commitlog import commitlog_records_batches, commitlog_rows_batches

    path = _damaged_commitlog(tmp_path) if damaged else STORE / "commitlog" / "00000000000000000000"
    walked = [
        r
        for r in batches_to_rows(commitlog_rows_batches(str(path), 0))
        if r["record_type"] == "message" and r["physical_offset"] == r["commit_log_offset"]
    ]
    starts = [r["commit_log_offset"] for r in walked]
    # every record, and stale references: mid-record, past the end, negative
    named = starts + [s + 3 for s in starts[::7]] + [-5, path.stat().st_size + 10]
    got = list(batches_to_rows(commitlog_records_batches(str(path), 0, named)))
    assert got == walked
    few = starts[::5]
    assert list(batches_to_rows(commitlog_records_batches(str(path), 0, few, max_rows=3))) == [
        r for r in walked if r["commit_log_offset"] in set(few)
    ]


def test_sparse_commitlog_splits_give_the_rows_of_the_written_file(tmp_path):
    # A broker preallocates each CommitLog file: past what was written the file is a hole,
    # which the walk (shared with ``rocketpy store check``) bounds itself by, split or not.
    dense = _damaged_commitlog(tmp_path)
    data = dense.read_bytes()
    sparse = tmp_path / "sparse" / dense.name
    sparse.parent.mkdir()
    sparse.write_bytes(data.rstrip(b"\x00"))
    with sparse.open("r+b") as f:
        f.truncate(len(data) + (1 << 20))
    whole = [dict(r, file=None) for r in batches_to_rows(commitlog_batches(str(dense), 0))]
    assert [dict(r, file=None) for r in batches_to_rows(commitlog_batches(str(sparse), 0))] == whole
    for split in (4096, 10_007, 1 << 20):

        def read(start, end):
            return commitlog_batches(str(sparse), 0, start=start, end=end)

        rows = _split_rows(read, split, sparse.stat().st_size)
        assert [dict(r, file=None) for r in rows] == whole, split


def test_crashed_store_splits_give_the_rows_of_one_task():
    crashed = CRASHED / "commitlog"
    if not crashed.is_dir():
        pytest.skip(f"no vendored {crashed} in this checkout")
    for path in sorted(crashed.iterdir()):
        whole = list(batches_to_rows(commitlog_batches(str(path), int(path.name))))
        for split in (4096, 10_007, 65_536):

            def read(start, end, path=path):
                return commitlog_batches(str(path), int(path.name), start=start, end=end)

            assert _split_rows(read, split, path.stat().st_size) == whole


def test_consumequeue_and_index_splits_give_the_rows_of_one_task():
    from rocketpy.spark._files import consumequeue_files, index_files
    from rocketpy.spark.consumequeue import consumequeue_batches
    from rocketpy.spark.index import index_batches

    for path, topic, qid, offset in consumequeue_files([str(STORE)]):
        whole = list(batches_to_rows(consumequeue_batches(path, topic, qid, offset)))
        for split in (4097, 10_007):  # both cut units in the middle

            def read(start, end, path=path, topic=topic, qid=qid, offset=offset):
                return consumequeue_batches(path, topic, qid, offset, start=start, end=end)

            assert _split_rows(read, split, os.path.getsize(path)) == whole
    for path in index_files([str(STORE)]):
        whole = list(batches_to_rows(index_batches(path, {})))
        assert whole
        for split in (4096, 4097, 10_007, 40_000):

            def read(start, end, path=path):
                return index_batches(path, {}, start=start, end=end)

            assert _split_rows(read, split, os.path.getsize(path)) == whole


def test_columnar_consumequeue_and_index_agree_with_the_codecs():
    """The numpy decoders give what the construct-backed codecs parse, unit by unit."""
    from rocketpy.codecs.store_records import IndexFileView, parse_consumequeue_entry
    from rocketpy.spark._files import consumequeue_files, index_files
    from rocketpy.spark.consumequeue import consumequeue_batches
    from rocketpy.spark.index import index_batches, index_geometry

    for path, topic, qid, offset in consumequeue_files([str(STORE)]):
        data = Path(path).read_bytes()
        for r in batches_to_rows(consumequeue_batches(path, topic, qid, offset)):
            e = parse_consumequeue_entry(data, (r["queue_offset"] - offset // 20) * 20)
            assert (r["commit_log_offset"], r["size"], r["tags_code"]) == (e.commit_log_offset, e.size, e.tags_code)
            assert (r["valid"], r["pre_blank"]) == (e.is_valid, e.is_pre_blank)
    for path in index_files([str(STORE)]):
        data = Path(path).read_bytes()
        view = IndexFileView(data, *index_geometry(len(data), {}))
        for r in batches_to_rows(index_batches(path, {})):
            e = view.entry(r["entry"])
            assert (r["key_hash"], r["phy_offset"], r["time_diff"], r["prev_index"]) == (
                e.key_hash,
                e.phy_offset,
                e.time_diff,
                e.prev_index,
            )
            assert r["slot_head"] == (view.slot(r["slot"]) == r["entry"])
            assert r["timestamp"] == view.header.begin_timestamp + e.time_diff * 1000
        del view


def test_spark_reads_splits_as_the_whole_file(spark, records, tmp_path):
    # The golden file cut to its written 36 KB plus zeros to 64 KiB: 4 tasks, not 256.
    (tmp_path / "commitlog").mkdir()
    (tmp_path / "commitlog" / "00000000000000000000").write_bytes(_golden_commitlog()[: 64 << 10])
    df = spark.read.format("rocketmq-commitlog").option("splitSize", "16k").load(str(tmp_path))
    assert df.rdd.getNumPartitions() == 4
    rows = sorted((r.asDict() for r in df.drop("file").collect()), key=lambda r: r["commit_log_offset"])
    expected = sorted(
        ({k: v for k, v in r.items() if k != "file"} for r in records), key=lambda r: r["commit_log_offset"]
    )
    assert rows == expected
    cq = (
        spark.read.format("rocketmq-consumequeue")
        .option("splitSize", "100")
        .load(str(STORE / "consumequeue" / "Batch_T_golden"))
    )
    assert cq.rdd.getNumPartitions() > 1
    assert sorted(r.queue_offset for r in cq.collect()) == list(range(10))


def test_a_requested_schema_builds_only_its_columns(spark, records):
    df = (
        spark.read.format("rocketmq-commitlog")
        .schema("topic string, commit_log_offset long, tags string")
        .load(str(STORE))
    )
    got = sorted(tuple(r) for r in df.collect())
    assert got == sorted((r["topic"], r["commit_log_offset"], r["tags"]) for r in records)
    pushed = df.where(df.topic == "Batch_T_golden").collect()
    assert len(pushed) == 10 and all(len(r) == 3 for r in pushed)


def test_split_size_option_is_checked(spark):
    df = spark.read.format("rocketmq-commitlog").option("splitSize", "lots").load(str(STORE))
    with pytest.raises(Exception, match="splitSize"):
        df.count()


# -- filters pushed down -----------------------------------------------------------------


def _pushed_rows(path, filters, options=None):
    """Rows the CommitLog source yields for ``filters`` (planned and read as Spark would, in process)."""
    from rocketpy.spark.commitlog import READ_STATS
    from rocketpy.spark.sources import _CommitLogReader

    reader = _CommitLogReader({"path": str(path), **(options or {})})
    back = list(reader.pushFilters(filters))
    assert back == filters  # all go back to Spark, which checks them again
    READ_STATS.clear()
    rows = [row for p in reader.partitions() for row in batches_to_rows(reader.read(p))]
    return sorted(rows, key=lambda r: r["commit_log_offset"]), READ_STATS["bytes"]


def _filter_cases(rows):
    from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan, LessThanOrEqual

    msg = next(r for r in rows if r["record_type"] == "message" and r["topic"] == "Batch_T_golden")
    keyed = next(r for r in rows if r["record_type"] == "message" and r["keys"] and r["uniq_key"])
    t0 = msg["store_timestamp"]
    return [
        ([EqualTo(("topic",), "ProducerSync_T_golden")], lambda r: r["topic"] == "ProducerSync_T_golden"),
        # Admin_T_golden was deleted: no queues left, found by scanning
        (
            [In(("topic",), ("Admin_T_golden", "Batch_T_golden"))],
            lambda r: r["topic"] in ("Admin_T_golden", "Batch_T_golden"),
        ),
        (
            [EqualTo(("topic",), "Batch_T_golden"), In(("queue_id",), (1, 2))],
            lambda r: r["topic"] == "Batch_T_golden" and r["queue_id"] in (1, 2),
        ),
        (
            [GreaterThan(("commit_log_offset",), 20_000), LessThanOrEqual(("commit_log_offset",), 30_000)],
            lambda r: 20_000 < r["commit_log_offset"] <= 30_000,
        ),
        (
            [GreaterThanOrEqual(("store_timestamp",), t0), LessThan(("store_timestamp",), t0 + 5_000)],
            lambda r: r["store_timestamp"] is not None and t0 <= r["store_timestamp"] < t0 + 5_000,
        ),
        ([EqualTo(("msg_id",), msg["msg_id"])], lambda r: r["msg_id"] == msg["msg_id"]),
        ([EqualTo(("msg_id",), "not-an-id")], lambda r: False),
        ([EqualTo(("tags",), "TagA")], lambda r: r["tags"] == "TagA"),
        # keys and UNIQ_KEY with a topic: looked up in the IndexFile
        (
            [EqualTo(("topic",), keyed["topic"]), EqualTo(("uniq_key",), keyed["uniq_key"])],
            lambda r: r["topic"] == keyed["topic"] and r["uniq_key"] == keyed["uniq_key"],
        ),
        (
            [EqualTo(("topic",), "Ordered_T_golden"), EqualTo(("keys",), ["order-1-golden"])],
            lambda r: r["topic"] == "Ordered_T_golden" and r["keys"] == ["order-1-golden"],
        ),
        (
            [In(("topic",), ("Ordered_T_golden", "Admin_T_golden")), EqualTo(("keys",), ["nope"])],
            lambda r: False,
        ),
        ([EqualTo(("uniq_key",), keyed["uniq_key"])], lambda r: r["uniq_key"] == keyed["uniq_key"]),
    ]


@pytest.mark.parametrize("store", [STORE, CRASHED], ids=["golden", "crashed"])
def test_pushed_filters_give_the_rows_of_filtering_after(store):
    if not store.is_dir():
        pytest.skip(f"no vendored {store} in this checkout")
    everything, whole_bytes = _pushed_rows(store, [])
    for filters, keep in _filter_cases(everything):
        expected = [r for r in everything if r["record_type"] == "message" and keep(r)]
        got, read = _pushed_rows(store, filters)
        assert got == expected, filters
        assert read <= whole_bytes
        if "topic" in str(filters):
            slow, _ = _pushed_rows(store, filters, {"useConsumeQueue": "false"})
            assert slow == expected


def test_key_and_message_id_filters_read_only_the_records_they_name(tmp_path):
    from pyspark.sql.datasource import EqualTo

    from rocketpy.codecs.store_records import IndexFileView, index_key
    from rocketpy.spark.index import index_geometry, index_lookup
    from rocketpy.spark.synth import synthesise_store

    synthesise_store(tmp_path, 1 << 20, 1 << 20, 400, index=True)
    everything, whole = _pushed_rows(tmp_path, [])
    target = everything[1234]
    for filters in (
        [EqualTo(("topic",), target["topic"]), EqualTo(("keys",), target["keys"])],
        [EqualTo(("topic",), target["topic"]), EqualTo(("uniq_key",), target["uniq_key"])],
        [EqualTo(("msg_id",), target["msg_id"])],
    ):
        got, read = _pushed_rows(tmp_path, filters)
        assert got == [target], filters
        # the record; for the index also its header, a slot, a short chain and the scan from
        # the last indexed record (for records stored but not yet indexed) to the written end
        assert read <= target["store_size"] + 40 + 4 + 20 * 16 + 4096, (filters, read)
        assert read < whole / 300
    # the lookup walks the chains as IndexFileView does over the whole mapping
    (path,) = (tmp_path / "index").iterdir()
    data = path.read_bytes()
    view = IndexFileView(data, *index_geometry(len(data), {}))
    for r in everything[::97]:
        key = index_key(r["topic"], r["keys"][0])
        assert index_lookup(str(path), {}, [key])[0] == sorted(set(view.lookup(key)))
    del view


def test_a_one_percent_topic_filter_reads_under_five_percent(tmp_path):
    from pyspark.sql.datasource import EqualTo

    from rocketpy.spark.synth import RARE_TOPIC, synthesise_store

    records, written, rare = synthesise_store(tmp_path, 2 << 20, 1 << 20, 400)
    assert 0.005 < rare / written < 0.02
    got, read = _pushed_rows(tmp_path, [EqualTo(("topic",), RARE_TOPIC)])
    assert len(got) == -(-records // 100) and {r["topic"] for r in got} == {RARE_TOPIC}
    assert read <= 0.05 * written, (read, written)
    # A crash before dispatch caught up: every queue lacks the units of the records stored
    # after ``cut``; the scan past the dispatch point finds them.
    cut = got[-2]["commit_log_offset"]
    for cq in (tmp_path / "consumequeue").glob("*/*/*"):
        units = cq.read_bytes()
        kept = [units[i : i + 20] for i in range(0, len(units), 20) if struct.unpack_from(">q", units, i)[0] < cut]
        cq.write_bytes(b"".join(kept))
    assert [r["commit_log_offset"] for r in _pushed_rows(tmp_path, [EqualTo(("topic",), RARE_TOPIC)])[0]] == [
        r["commit_log_offset"] for r in got
    ]


def test_spark_where_clauses_reach_the_source(spark, records):
    from pyspark.sql import functions as F

    df = spark.read.format("rocketmq-commitlog").load(str(STORE))
    got = df.where((F.col("topic") == "ProducerSync_T_golden") & (F.col("queue_id") == 1)).drop("body").collect()
    expected = [r for r in records if r["topic"] == "ProducerSync_T_golden" and r["queue_id"] == 1]
    assert sorted(r.commit_log_offset for r in got) == sorted(r["commit_log_offset"] for r in expected)
    assert expected
    keyed = df.where((F.col("topic") == "Ordered_T_golden") & (F.col("keys") == F.array(F.lit("order-1-golden"))))
    expected = [r for r in records if r["topic"] == "Ordered_T_golden" and r["keys"] == ["order-1-golden"]]
    assert sorted(r.commit_log_offset for r in keyed.select("commit_log_offset").collect()) == sorted(
        r["commit_log_offset"] for r in expected
    )
    assert len(expected) == 5


# -- paths as URIs (pyarrow.fs) ------------------------------------------------------------


def _source_rows(reader_cls, path, **options):
    reader = reader_cls({"path": path, **options})
    rows = [row for p in reader.partitions() for row in batches_to_rows(reader.read(p))]
    return [{k: v for k, v in r.items() if k != "file"} for r in rows]


@pytest.mark.parametrize("remote", [False, True], ids=["mapped", "read-whole"])
def test_file_uris_read_through_pyarrow_fs_as_paths_do(monkeypatch, remote):
    from pyspark.sql.datasource import EqualTo

    from rocketpy.spark import _files
    from rocketpy.spark.sources import _CommitLogReader, _ConsumeQueueReader, _IndexReader, _PcapReader

    if remote:
        # As a task on HDFS or S3 reads: the whole file through the pyarrow filesystem.
        monkeypatch.setattr(_files, "_local_fs", lambda fs: False)
    uri = "file://" + str(STORE.resolve())
    for cls in (_CommitLogReader, _ConsumeQueueReader, _IndexReader):
        expected = _source_rows(cls, str(STORE))
        assert expected and _source_rows(cls, uri, splitsize="16k") == expected
    pushed = _CommitLogReader({"path": uri})
    list(pushed.pushFilters([EqualTo(("topic",), "Batch_T_golden")]))
    assert sum(b.num_rows for p in pushed.partitions() for b in pushed.read(p)) == 10
    capture = CAPTURES / "03-Batch.pcap"
    assert _source_rows(_PcapReader, "file://" + str(capture.resolve())) == _source_rows(_PcapReader, str(capture))
    with pytest.raises(FileNotFoundError):
        _files.expand([uri + "/no-such-dir"])


# -- ConsumeQueue ----------------------------------------------------------------------


def test_consumequeue_matches_manifest(spark):
    df = spark.read.format("rocketmq-consumequeue").load(str(STORE))
    cq_files = [f for f in STORE_MANIFEST["files"] if f["path"].startswith("consumequeue/")]
    assert df.rdd.getNumPartitions() == len(cq_files)  # one split per file
    rows = [r.asDict() for r in df.collect()]
    assert all(r["valid"] and not r["pre_blank"] for r in rows)
    per_queue = Counter(f"{r['topic']}/{r['queue_id']}" for r in rows)
    expected = STORE_MANIFEST["store"]["consumeQueues"]
    assert per_queue == {q: v["entries"] for q, v in expected.items() if v["entries"]}
    for q, v in expected.items():
        offsets = sorted(r["queue_offset"] for r in rows if f"{r['topic']}/{r['queue_id']}" == q)
        if offsets:
            assert offsets == list(range(v["firstQueueOffset"], v["firstQueueOffset"] + v["entries"]))


def test_consumequeue_topics_option_prunes_files(spark):
    df = spark.read.format("rocketmq-consumequeue").option("topics", "Batch_T_golden").load(str(STORE))
    assert df.rdd.getNumPartitions() == 1
    assert df.count() == 10


def test_consumequeue_topic_and_queue_filters_prune_files():
    from pyspark.sql.datasource import EqualTo, In

    from rocketpy.spark.sources import _ConsumeQueueReader

    reader = _ConsumeQueueReader({"path": str(STORE)})
    filters = [In(("topic",), ("Batch_T_golden", "Ordered_T_golden")), EqualTo(("queue_id",), 3)]
    assert list(reader.pushFilters(filters)) == filters
    parts = reader.partitions()
    assert {(p.topic, p.queue_id) for p in parts} == {("Batch_T_golden", 3), ("Ordered_T_golden", 3)}
    rows = [r for p in parts for r in batches_to_rows(reader.read(p))]
    assert len([r for r in rows if r["topic"] == "Batch_T_golden"]) == 10


# -- IndexFile -------------------------------------------------------------------------


def test_index_matches_manifest_and_finds_keys(spark, records):
    info = STORE_MANIFEST["store"]["indexFiles"][0]
    rows = [r.asDict() for r in spark.read.format("rocketmq-index").load(str(STORE)).collect()]
    assert len(rows) == info["indexCount"] - 1
    r0 = rows[0]
    assert (r0["begin_timestamp"], r0["end_timestamp"]) == (info["beginTimestamp"], info["endTimestamp"])
    assert (r0["begin_phy_offset"], r0["end_phy_offset"]) == (info["beginPhyOffset"], info["endPhyOffset"])
    assert r0["hash_slot_count"] == info["hashSlotCount"]
    assert sum(1 for r in rows if r["slot_head"]) == info["hashSlotCount"]
    # Every indexed UNIQ_KEY of a record has an entry pointing at that record.
    by_hash: dict[int, set[int]] = {}
    for r in rows:
        by_hash.setdefault(r["key_hash"], set()).add(r["phy_offset"])
    for rec in records:
        if rec["uniq_key"] and rec["commit_log_offset"] <= info["endPhyOffset"]:
            h = index_key_hash(index_key(rec["topic"], rec["uniq_key"]))
            assert rec["commit_log_offset"] in by_hash.get(h, set()), rec["msg_id"]


# -- Captures ---------------------------------------------------------------------------


def _code_key(code: int, name: str) -> str:
    return f"{code} {name}"


@pytest.fixture(scope="module")
def frames(spark):
    df = spark.read.format("rocketmq-pcap").load(str(CAPTURES))
    return [r.asDict() for r in df.drop("ext_fields", "msg_properties").collect()]


def test_pcap_one_split_per_capture(spark):
    df = spark.read.format("rocketmq-pcap").load(str(CAPTURES))
    assert df.rdd.getNumPartitions() == len(list(CAPTURES.glob("*.pcap")))


@pytest.mark.parametrize("manifest_path", sorted(CAPTURES.glob("*.json")), ids=lambda p: p.stem)
def test_pcap_traffic_matches_manifest(frames, manifest_path):
    traffic = json.loads(manifest_path.read_text())["traffic"]
    mine = [f for f in frames if os.path.basename(f["file"]) == traffic["pcap"]]
    reqs = [f for f in mine if f["kind"] == "request"]
    resps = [f for f in mine if f["kind"] == "response"]
    assert not [f for f in mine if f["kind"] == "error"]
    assert len(mine) == traffic["frames"]
    assert len(reqs) == traffic["requestFrames"] and len(resps) == traffic["responseFrames"]
    assert Counter(_code_key(f["code"], f["code_name"]) for f in reqs) == traffic["requests"]
    assert Counter(_code_key(f["code"], f["code_name"]) for f in reqs if f["oneway"]) == traffic["onewayRequests"]
    assert (
        Counter(_code_key(f["code"], f["code_name"]) for f in reqs if f["from_server"])
        == traffic["serverToClientRequests"]
    )
    by_request: dict[str, Counter] = {}
    for f in resps:
        if f["paired"]:
            key = _code_key(f["request_code"], f["request_code_name"])
            by_request.setdefault(key, Counter())[_code_key(f["code"], f["code_name"])] += 1
    assert by_request == {k: Counter(v) for k, v in traffic["responsesByRequest"].items()}
    assert sum(1 for f in resps if not f["paired"]) == traffic["unpairedResponses"]
    unanswered = Counter(_code_key(f["code"], f["code_name"]) for f in reqs if not f["oneway"] and not f["paired"])
    assert unanswered == traffic["requestsWithoutResponse"]
    assert Counter(f["serialize_type"] for f in mine) == traffic["serializeTypes"]
    sends = [f for f in reqs if f["code"] in (10, 310, 320, 324, 325)]
    assert Counter(f["topic"] for f in sends) == traffic["sendRequestsByTopic"]
    assert Counter(f["topic"] for f in reqs if f["code"] == 11) == traffic["pullRequestsByTopic"]
    # Both rows of a pair carry the response's capture time minus the request's, in milliseconds.
    waiting: dict[tuple, dict] = {}
    for f in sorted(mine, key=lambda f: f["frame_index"]):
        if f["kind"] == "request" and f["paired"]:
            waiting[(f["src"], f["dst"], f["opaque"])] = f
        elif f["kind"] == "response" and f["paired"]:
            request = waiting.pop((f["dst"], f["src"], f["opaque"]))
            assert request["latency_ms"] == f["latency_ms"] == pytest.approx((f["ts"] - request["ts"]) * 1000)
    assert waiting == {}


def test_pcap_exploded_messages_match_produced_and_received(spark):
    df = spark.read.format("rocketmq-pcap").option("explodeMessages", "true").load(str(CAPTURES))
    rows = [
        r.asDict()
        for r in df.filter("msg_index is not null")
        .select(
            "file",
            "kind",
            "code",
            "request_code",
            "msg_topic",
            "msg_uniq_key",
            "msg_tags",
            "msg_keys",
            "msg_queue_offset",
            "msg_body_size",
        )
        .collect()
    ]
    for manifest_path in sorted(CAPTURES.glob("*.json")):
        manifest = json.loads(manifest_path.read_text())
        pcap = manifest["traffic"]["pcap"]
        mine = [r for r in rows if os.path.basename(r["file"]) == pcap]
        sent = {r["msg_uniq_key"]: r for r in mine if r["kind"] == "request" and r["code"] in (10, 310, 320, 324, 325)}
        for p in manifest.get("produced", []):
            if not p.get("uniqKey"):
                continue
            r = sent[p["uniqKey"]]
            assert r["msg_topic"] == p["topic"]
            assert r["msg_tags"] == p.get("tags")
            assert r["msg_keys"] == (p["keys"].split() if p.get("keys") else [])
        delivered = {r["msg_uniq_key"] for r in mine if r["kind"] == "response" and r["request_code"] == 11}
        for rcv in manifest.get("received", []):
            assert rcv["msgId"] in delivered, (pcap, rcv["msgId"])


def test_pcap_batch_is_exploded_entry_by_entry(spark):
    df = (
        spark.read.format("rocketmq-pcap")
        .option("explodeMessages", "true")
        .load(str(CAPTURES / "03-Batch.pcap"))
        .filter("kind = 'request' and code = 320")
    )
    rows = df.select("msg_index", "msg_topic", "msg_uniq_key").collect()
    produced = json.loads((CAPTURES / "03-Batch.json").read_text())["produced"]
    assert sorted(r["msg_index"] for r in rows) == list(range(len(produced)))
    assert {r["msg_uniq_key"] for r in rows} == {p["uniqKey"] for p in produced}


def test_pcap_pairing_gives_up_after_the_timeout():
    from rocketpy.spark.pcap import PcapOptions, pcap_batches

    path = str(CAPTURES / "01-ProducerSync.pcap")
    patient = list(batches_to_rows(pcap_batches(path)))
    hasty = list(batches_to_rows(pcap_batches(path, PcapOptions(pair_timeout=0.005))))
    assert len(hasty) == len(patient)  # nothing is lost, only left unpaired
    slow = {r["frame_index"] for r in patient if r["paired"] and r["latency_ms"] > 5.0 + 1e-6}
    assert slow
    for r in hasty:
        if r["frame_index"] in slow:
            assert not r["paired"]
        elif r["paired"]:
            assert r["latency_ms"] <= 5.0 + 1e-6
    assert [r["frame_index"] for r in sorted(hasty, key=lambda r: r["frame_index"])] == sorted(
        r["frame_index"] for r in patient
    )


def _write_pcap(path: Path, payloads: list[bytes]) -> None:
    """A classic pcap of client -> 10911 TCP segments carrying ``payloads`` back to back."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1)]
    seq = 1000
    for i, data in enumerate(payloads):
        tcp = struct.pack(">HHIIBBHHH", 40000, 10911, seq, 0, 5 << 4, 0x18, 65535, 0, 0)
        ip = struct.pack(
            ">BBHHHBBH4s4s",
            0x45,
            0,
            20 + len(tcp) + len(data),
            0,
            0,
            64,
            6,
            0,
            bytes([10, 0, 0, 1]),
            bytes([10, 0, 0, 2]),
        )
        frame = b"\x00" * 12 + b"\x08\x00" + ip + tcp + data
        out.append(struct.pack("<IIII", 1_700_000_000 + i, 0, len(frame), len(frame)) + frame)
        seq += len(data)
    path.write_bytes(b"".join(out))


def test_pcap_header_numbers_are_read_as_java_does(tmp_path):
    """queueId and friends parse like Integer.parseInt: out of range is null, not an Arrow overflow."""
    from rocketpy.codecs import RemotingCommand
    from rocketpy.codecs.headers import SendMessageRequestHeaderV2
    from rocketpy.spark.pcap import PcapOptions, pcap_batches

    header = SendMessageRequestHeaderV2(
        producer_group="P",
        topic="T",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=1,
        sys_flag=0,
        born_timestamp=1,
        flag=0,
        properties="TAGS\x01a",
    )
    ok = RemotingCommand.request(310, header, b"body", opaque=1)
    bad = RemotingCommand.request(310, header, b"body", opaque=2)
    assert bad.ext_fields is not None
    bad.ext_fields["e"] = "99999999999"  # no Java int: the broker would refuse the header
    _write_pcap(tmp_path / "c.pcap", [ok.encode(), bad.encode()])
    rows = list(batches_to_rows(pcap_batches(str(tmp_path / "c.pcap"), PcapOptions(explode_messages=True))))
    assert [r["queue_id"] for r in rows] == [1, None]
    assert rows[0]["msg_tags"] == "a" and rows[0]["msg_body_size"] == 4 and rows[0]["error"] is None
    assert rows[1]["msg_index"] is None and "not decodable" in rows[1]["error"]


def test_commitlog_clock_fields_out_of_timestamp_range_read_as_null_times(tmp_path):
    """A damaged record's timestamps can say anything: the long columns keep it, the time columns go null."""
    from rocketpy.codecs.message import MessageExt, encode_message

    records = b""
    for born, stored in ((1 << 62, -(1 << 62)), (1_700_000_000_000, 1_700_000_000_001)):
        msg = MessageExt(
            topic="T", body=b"x", born_timestamp=born, store_timestamp=stored, commit_log_offset=len(records)
        )
        records += encode_message(msg)
    (tmp_path / "00000000000000000000").write_bytes(records)
    rows = list(batches_to_rows(commitlog_batches(str(tmp_path / "00000000000000000000"), 0)))
    assert [(r["born_timestamp"], r["born_time"]) for r in rows][0] == (1 << 62, None)
    assert rows[0]["store_time"] is None
    assert rows[1]["born_time"].timestamp() == 1_700_000_000.0


# -- paths --------------------------------------------------------------------------------


def test_several_paths_and_globs(spark):
    df = spark.read.format("rocketmq-pcap").load([str(CAPTURES / "01-ProducerSync.pcap"), str(CAPTURES / "03-*.pcap")])
    assert df.rdd.getNumPartitions() == 2
    assert df.count() == 99 + 61


def test_empty_store_reads_as_no_rows(spark, tmp_path):
    (tmp_path / "commitlog").mkdir()
    assert spark.read.format("rocketmq-commitlog").load(str(tmp_path)).count() == 0


def test_missing_path_is_an_error(spark, tmp_path):
    with pytest.raises(Exception, match="nope"):
        spark.read.format("rocketmq-commitlog").load(str(tmp_path / "nope")).count()


# -- ranged reads on a filesystem that is not local ------------------------------------------


def test_remote_splits_read_only_their_range(counting_fs, monkeypatch, tmp_path):
    from rocketpy.spark import commitlog
    from rocketpy.spark.sources import _CommitLogReader
    from rocketpy.spark.synth import synthesise_store

    synthesise_store(tmp_path, 4 << 20, 4 << 20, 400)
    local = _source_rows(_CommitLogReader, str(tmp_path), splitsize="512k")
    monkeypatch.setattr(commitlog, "REMOTE_TAIL", 64 << 10)
    reader = _CommitLogReader({"path": "count://" + str(tmp_path), "splitsize": "512k"})
    parts = reader.partitions()
    rows = []
    for p in parts:
        before = counting_fs.read
        rows += [{k: v for k, v in r.items() if k != "file"} for r in batches_to_rows(reader.read(p))]
        assert counting_fs.read - before <= (512 << 10) + (64 << 10) + 8, p
    assert rows == local
    assert counting_fs.read <= (4 << 20) + len(parts) * ((64 << 10) + 8)


@pytest.mark.parametrize("damaged", [False, True], ids=["golden", "damaged"])
def test_remote_splits_give_the_rows_of_one_local_task(counting_fs, monkeypatch, tmp_path, damaged):
    from rocketpy.spark import commitlog

    path = _damaged_commitlog(tmp_path) if damaged else STORE / "commitlog" / "00000000000000000000"
    whole = list(batches_to_rows(commitlog_batches(str(path), 0)))
    # a tail shorter than the golden 9 KB record: some splits must read on to finish theirs
    monkeypatch.setattr(commitlog, "REMOTE_TAIL", 2048)
    size = path.stat().st_size
    for split in (4096, 10_007):

        def read(start, end):
            return commitlog_batches("count://" + str(path), 0, start=start, end=end)

        rows = _split_rows(read, split, size)
        assert [dict(r, file=None) for r in rows] == [dict(r, file=None) for r in whole], split


def test_remote_key_filter_reads_records_not_files(counting_fs, tmp_path):
    from pyspark.sql.datasource import EqualTo

    from rocketpy.spark.sources import _CommitLogReader
    from rocketpy.spark.synth import synthesise_store

    synthesise_store(tmp_path, 1 << 20, 1 << 20, 400, index=True)
    target = _source_rows(_CommitLogReader, str(tmp_path))[777]
    reader = _CommitLogReader({"path": "count://" + str(tmp_path)})
    list(reader.pushFilters([EqualTo(("topic",), target["topic"]), EqualTo(("uniq_key",), target["uniq_key"])]))
    counting_fs.read = 0
    got = [r for p in reader.partitions() for r in batches_to_rows(reader.read(p))]
    assert [r["commit_log_offset"] for r in got] == [target["commit_log_offset"]]
    assert counting_fs.read < 64 << 10  # of a 1 MiB CommitLog and a 400 KB IndexFile


# -- DLedger mode ------------------------------------------------------------------------
# (the in-process rows, splits, damage and lake are tested in test_spark_dledger.py)


def test_spark_reads_a_dledger_store_as_a_commitlog(spark):
    """A Java DLedger broker's store: Spark's rows are the reader's, whatever the split, and the
    entry's term is a column SQL can filter on (30 entries of term 1, 20 of term 2 after the failover)."""
    from rocketpy.spark.sources import _CommitLogReader

    store = GOLDEN / "store-dump-dledger" / "n0"
    reader = _CommitLogReader({"path": str(store)})
    expected = sorted(
        (r["commit_log_offset"], r["dledger_index"], r["dledger_term"], r["msg_id"])
        for p in reader.partitions()
        for b in reader.read(p)
        for r in b.to_pylist()
    )
    df = spark.read.format("rocketmq-commitlog").option("splitSize", "4096").load(str(store))
    got = sorted(tuple(r) for r in df.select("commit_log_offset", "dledger_index", "dledger_term", "msg_id").collect())
    assert got == expected and len(got) == 50
    df.createOrReplaceTempView("dl")
    by_term = spark.sql("SELECT dledger_term, count(*) AS n FROM dl WHERE topic = 'DlTopic' GROUP BY dledger_term")
    assert {r["dledger_term"]: r["n"] for r in by_term.collect()} == {1: 30, 2: 20}
