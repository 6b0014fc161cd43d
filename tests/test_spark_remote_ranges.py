"""ConsumeQueue and IndexFile splits on a filesystem that is not local read only their ranges.

Through a counting ``pyarrow.fs`` filesystem (``counting_fs`` in conftest): every split gives
the rows the mapped local file gives, and reads its own bytes plus a small constant, never
the whole file. No Spark session: the readers' partitions and reads are called directly.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install -e '.[spark]')")

from rocketpy.spark._columns import batches_to_rows  # noqa: E402
from rocketpy.spark._files import byte_splits, consumequeue_files, index_files  # noqa: E402
from rocketpy.spark.consumequeue import consumequeue_batches  # noqa: E402
from rocketpy.spark.index import index_batches  # noqa: E402

STORE = Path(__file__).resolve().parent.parent / "protocol" / "golden" / "store-dump"
UNIT = 20
SPLITS = (20, 4096, 4097, 10_007, 65_536)


def _unit(n: int) -> bytes:
    return struct.pack(">qiq", 1000 + 97 * n, 90 + n % 7, n * 31)


def _holed_queue(tmp_path: Path) -> Path:
    """A preallocated queue file: 1000 units with zeroed holes (one ends a 4096-byte split,
    one spans a 10_007-byte split's end), then a zero tail and a torn, non-zero last unit."""
    units = bytearray(b"".join(_unit(n) for n in range(1000)))
    for first, last in ((3, 4), (203, 205), (490, 520), (999, 1000)):
        units[first * UNIT : last * UNIT] = bytes((last - first) * UNIT)
    units += _unit(1000)  # written after the hole at 999
    units += bytes(60_000 - len(units)) + b"\x01\x02\x03"  # a partial unit is never a row
    qdir = tmp_path / "store" / "consumequeue" / "Holed_T" / "2"
    qdir.mkdir(parents=True)
    path = qdir / f"{20_000 * 20:020d}"
    path.write_bytes(bytes(units))
    return path


def _plain(rows: list[dict]) -> list[dict]:
    return [dict(r, file=None) for r in rows]


def _queues(tmp_path: Path) -> list[tuple[str, str, int, int]]:
    _holed_queue(tmp_path)
    return consumequeue_files([str(STORE), str(tmp_path / "store")])


def test_consumequeue_splits_give_the_local_rows_and_read_their_units(counting_fs, tmp_path):
    for path, topic, qid, offset in _queues(tmp_path):
        local = _plain(list(batches_to_rows(consumequeue_batches(path, topic, qid, offset))))
        assert local
        size = Path(path).stat().st_size
        for split in SPLITS if "Holed_T" in path else SPLITS[1:]:  # unit by unit: the holed file only
            rows: list[dict] = []
            for start, end in byte_splits(size, split):
                before = counting_fs.read
                got = list(batches_to_rows(consumequeue_batches("count://" + path, topic, qid, offset, 7, start, end)))
                read = counting_fs.read - before
                span = (size if end is None else end) - start
                if (
                    end is None
                    or got
                    and got[-1]["queue_offset"] * UNIT + UNIT >= end + offset
                    and any(got[-1][k] for k in ("commit_log_offset", "size", "tags_code"))
                ):
                    # its last unit is written, or it ends the file: nothing past it is needed
                    assert read <= span + UNIT, (path, split, start)
                else:  # zeros at its end: rows only if something is written later
                    assert read <= size - start, (path, split, start)
                rows += got
            assert _plain(rows) == local, (path, split)


def test_consumequeue_source_splits_read_only_their_units(counting_fs, tmp_path):
    from rocketpy.spark.sources import _ConsumeQueueReader

    queues = _queues(tmp_path)
    paths = [str(STORE), str(tmp_path / "store")]
    local = _ConsumeQueueReader({"paths": ",".join(paths)})
    expected = _plain([r for p in local.partitions() for r in batches_to_rows(local.read(p))])
    for split in SPLITS:
        reader = _ConsumeQueueReader({"paths": ",".join("count://" + p for p in paths), "splitsize": str(split)})
        counting_fs.read = 0
        parts = reader.partitions()
        listing = counting_fs.read
        # the driver reads each split file's tail back to its last written unit, once
        tails = sum(Path(p).stat().st_size - _written(p) for p, *_ in queues if Path(p).stat().st_size > split)
        assert listing <= tails + len(queues) * (64 << 10), split
        rows = []
        for p in parts:
            before = counting_fs.read
            rows += batches_to_rows(reader.read(p))
            span = (Path(p.path[len("count://") :]).stat().st_size if p.end is None else p.end) - p.start
            assert counting_fs.read - before <= span + UNIT, (p, split)
        assert _plain(rows) == expected, split


def _written(path: str | bytes) -> int:
    """The written end the plain way: past the last byte set among the whole units."""
    data = path if isinstance(path, bytes) else Path(path).read_bytes()
    data = data[: len(data) - len(data) % UNIT].rstrip(b"\x00")
    return -(-len(data) // UNIT) * UNIT


def test_queue_filter_finds_the_same_records_in_a_remote_store(counting_fs, tmp_path):
    from pyspark.sql.datasource import EqualTo

    from rocketpy.spark.sources import QueuePartition, _CommitLogReader

    expected = []
    for uri in (str(STORE), "count://" + str(STORE)):
        reader = _CommitLogReader({"path": uri})
        list(reader.pushFilters([EqualTo(("topic",), "Batch_T_golden")]))
        parts = [p for p in reader.partitions() if isinstance(p, QueuePartition)]
        assert parts
        expected.append(sorted(r["commit_log_offset"] for p in parts for r in batches_to_rows(reader.read(p))))
    assert expected[0] == expected[1] and len(expected[0]) == 10


def _synth_index(tmp_path: Path) -> str:
    from rocketpy.spark.synth import synthesise_store

    synthesise_store(tmp_path, 1 << 20, 1 << 20, 400, index=True)
    return index_files([str(tmp_path)])[0]


@pytest.mark.parametrize("gap", [0, None], ids=["slot-by-slot", "coalesced"])
def test_index_splits_give_the_local_rows_and_read_their_entries(counting_fs, monkeypatch, tmp_path, gap):
    from rocketpy.spark import index
    from rocketpy.spark.index import index_geometry

    if gap is not None:
        monkeypatch.setattr(index, "SLOT_GAP", gap)
    for path in [*index_files([str(STORE)]), _synth_index(tmp_path)]:
        local = _plain(list(batches_to_rows(index_batches(path, {}))))
        size = Path(path).stat().st_size
        slots, _ = index_geometry(size, {})
        assert local and sum(r["slot_head"] for r in local) > 1
        for split in (*SPLITS, 40_000):
            rows: list[dict] = []
            for start, end in byte_splits(size, split):
                before = counting_fs.read
                got = list(batches_to_rows(index_batches("count://" + path, {}, 100, start, end)))
                read = counting_fs.read - before
                span = (size if end is None else end) - start
                # the header, its entries, and the slots they fall in (at most the slot table)
                assert read <= 40 + span + UNIT + slots * 4, (path, split, start)
                if gap == 0:
                    assert read <= 40 + len(got) * (UNIT + 4), (path, split, start)
                rows += got
            assert _plain(rows) == local, (path, split)


def test_index_source_splits_read_only_their_entries(counting_fs, tmp_path):
    from rocketpy.spark.sources import _IndexReader

    path = _synth_index(tmp_path)
    expected = _plain(
        [
            r
            for p in _IndexReader({"path": path}).partitions()
            for r in batches_to_rows(_IndexReader({"path": path}).read(p))
        ]
    )
    reader = _IndexReader({"path": "count://" + path, "splitsize": "16k"})
    rows = []
    for p in reader.partitions():
        before = counting_fs.read
        rows += batches_to_rows(reader.read(p))
        assert counting_fs.read - before <= 40 + (16 << 10) + UNIT + (Path(path).stat().st_size // 84) * 4, p
    assert _plain(rows) == expected


@given(st.lists(st.integers(0, 500), unique=True), st.sampled_from([1, 4, 20]), st.integers(0, 50))
def test_coalesced_ranges_cover_each_item_once(positions, width, gap):
    import numpy as np

    from rocketpy.spark._files import coalesced_ranges

    starts = np.array(sorted(p * width for p in positions), dtype=np.int64)
    ranges = coalesced_ranges(starts, width, gap)
    assert all(a < b for a, b in ranges)
    assert all(b1 + gap < a2 for (_, b1), (a2, _) in zip(ranges, ranges[1:]))  # gaps left are wider than gap
    covered = {p for a, b in ranges for p in range(a, b, width)}
    assert {int(s) for s in starts} <= covered
    assert all(any(s == a for s in starts) and any(s + width == b for s in starts) for a, b in ranges)


def test_written_end_of_a_full_remote_queue_file_is_its_last_unit(counting_fs, tmp_path):
    from rocketpy.spark.consumequeue import remote_written_end

    path = tmp_path / f"{0:020d}"
    path.write_bytes(b"".join(_unit(n) for n in range(5000)))
    assert remote_written_end("count://" + str(path)) == 5000 * UNIT
    assert counting_fs.read == UNIT
    holed = _holed_queue(tmp_path)
    assert remote_written_end("count://" + str(holed)) == _written(str(holed)) == 1001 * UNIT


@given(st.lists(st.tuples(st.booleans(), st.integers(1, 200)), max_size=40), st.binary(max_size=19))
def test_written_end_is_the_end_of_the_last_unit_with_a_byte_set(runs, torn):
    from rocketpy.spark.consumequeue import _written_end

    data = b"".join((_unit(n) if set_ else bytes(UNIT)) * n for set_, n in runs) + torn
    assert _written_end(data) == _written(data)
