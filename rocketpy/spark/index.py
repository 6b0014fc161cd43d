"""IndexFiles as rows: one per written entry, with the file's header repeated on each.

The file does not record its own geometry: the number of hash slots and entries comes
from the broker config (maxHashSlotNum, maxIndexNum). Without options the reader
assumes the broker's shape (entries = 4 x slots, which both Java's defaults and the
usual tuned configs keep) and derives it from the file size.

A local file is mapped. On another filesystem a split reads the 40-byte header, its own
entries and, for ``slot_head``, only the hash slots those entries fall in (nearby slots
are read in one request): never the whole file.
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from ..codecs.store_records import (
    INDEX_ENTRY_SIZE,
    INDEX_ENTRY_UNIT,
    INDEX_HASH_SLOT_SIZE,
    INDEX_HEADER_SIZE,
    INDEX_HEADER_UNIT,
    INVALID_INDEX,
    IndexFileView,
    IndexHeader,
    index_key_hash,
)
from ._arrays import constant_strings, ms_to_timestamps
from ._columns import arrow_schema
from ._files import coalesced_ranges, file_size, fill_from, is_remote, mapped, ranged, zeroed

__all__ = ["INDEX_COLUMNS", "index_batches", "index_geometry", "index_lookup"]

INDEX_COLUMNS: list[tuple[str, str]] = [
    ("file", "string"),
    ("begin_timestamp", "long"),
    ("end_timestamp", "long"),
    ("begin_phy_offset", "long"),
    ("end_phy_offset", "long"),
    ("hash_slot_count", "int"),
    ("index_count", "int"),
    ("entry", "int"),  # entry number (1-based: the file never writes entry 0)
    ("key_hash", "int"),
    ("phy_offset", "long"),  # CommitLog offset of the indexed message
    ("time_diff", "int"),  # seconds after begin_timestamp
    ("timestamp", "long"),  # begin_timestamp + time_diff * 1000
    ("time", "timestamp"),
    ("prev_index", "int"),  # the previous entry in the same slot's chain, 0 = none
    ("slot", "int"),  # key_hash % slot count
    ("slot_head", "bool"),  # whether the slot points at this entry (newest in its chain)
]

_JAVA_DEFAULT = (5_000_000, 20_000_000)


def index_geometry(size: int, options: Mapping[str, str]) -> tuple[int, int]:
    """(hash slots, entries) of an IndexFile of ``size`` bytes, from options or the file size."""
    lowered = {k.lower(): v for k, v in options.items()}
    slots = lowered.get("hashslotnum") or lowered.get("maxhashslotnum")
    entries = lowered.get("indexnum") or lowered.get("maxindexnum")
    if slots and entries:
        return int(slots), int(entries)
    if slots or entries:
        # one given: the other follows from the size
        rest = size - INDEX_HEADER_SIZE
        if slots:
            return int(slots), (rest - int(slots) * INDEX_HASH_SLOT_SIZE) // INDEX_ENTRY_SIZE
        return (rest - int(entries) * INDEX_ENTRY_SIZE) // INDEX_HASH_SLOT_SIZE, int(entries)  # type: ignore[arg-type]
    d_slots, d_entries = _JAVA_DEFAULT
    if size == INDEX_HEADER_SIZE + d_slots * INDEX_HASH_SLOT_SIZE + d_entries * INDEX_ENTRY_SIZE:
        return _JAVA_DEFAULT
    per_slot = INDEX_HASH_SLOT_SIZE + 4 * INDEX_ENTRY_SIZE
    if (size - INDEX_HEADER_SIZE) % per_slot == 0 and size > INDEX_HEADER_SIZE:
        slots_n = (size - INDEX_HEADER_SIZE) // per_slot
        return slots_n, 4 * slots_n
    raise ValueError(
        f"cannot tell the slot and entry counts of a {size}-byte IndexFile: "
        "set the options maxHashSlotNum and maxIndexNum as in the broker config"
    )


_ENTRY = np.dtype([("key_hash", ">i4"), ("phy_offset", ">i8"), ("time_diff", ">i4"), ("prev_index", ">i4")])
assert _ENTRY.itemsize == INDEX_ENTRY_SIZE
_SCHEMA = arrow_schema(INDEX_COLUMNS)


def _entry_batch(buf: Any, path: str, header: IndexHeader, slots: int, lo: int, hi: int) -> pa.RecordBatch:
    """Entries ``[lo, hi)`` decoded in bulk."""
    n = hi - lo
    entries_at = INDEX_HEADER_SIZE + slots * INDEX_HASH_SLOT_SIZE
    e = np.frombuffer(buf, dtype=_ENTRY, count=n, offset=entries_at + lo * INDEX_ENTRY_SIZE)
    key_hash = e["key_hash"].astype(np.int32)
    phy_offset = e["phy_offset"].astype(np.int64)
    time_diff = e["time_diff"].astype(np.int32)
    prev_index = e["prev_index"].astype(np.int32)
    del e
    number = np.arange(lo, hi, dtype=np.int32)
    slot = np.mod(key_hash.astype(np.int64), slots).astype(np.int32)  # Python's %, as the row reader had
    table = np.frombuffer(buf, dtype=">i4", count=slots, offset=INDEX_HEADER_SIZE)
    slot_head = table[slot] == number
    del table
    with np.errstate(over="ignore"):  # Java's long arithmetic wraps; so does int64
        ts = np.int64(header.begin_timestamp) + time_diff.astype(np.int64) * 1000
    head = [
        header.begin_timestamp,
        header.end_timestamp,
        header.begin_phy_offset,
        header.end_phy_offset,
        header.hash_slot_count,
        header.index_count,
    ]
    arrays = [constant_strings(path, n)]
    arrays += [pa.array(np.full(n, v, dtype=np.int64 if i < 4 else np.int32)) for i, v in enumerate(head)]
    arrays += [
        pa.array(number),
        pa.array(key_hash),
        pa.array(phy_offset),
        pa.array(time_diff),
        pa.array(ts),
        ms_to_timestamps(ts),
        pa.array(prev_index),
        pa.array(slot),
        pa.array(slot_head),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=_SCHEMA)


def _entry_range(count: int, entries_at: int, start: int, end: int | None) -> tuple[int, int]:
    """The entry numbers ``[lo, hi)`` that begin in the bytes ``[start, end)`` (entry 0 is never written)."""
    lo = max(1, -(-(start - entries_at) // INDEX_ENTRY_SIZE))
    hi = count if end is None else min(count, -(-(end - entries_at) // INDEX_ENTRY_SIZE))
    return lo, hi


def index_batches(
    path: str, options: Mapping[str, str], max_rows: int = 1 << 16, start: int = 0, end: int | None = None
) -> Iterator[pa.RecordBatch]:
    """Batches of the entries of one IndexFile; with ``start``/``end`` (byte positions in the
    file) only the entries that begin in that split."""
    size = file_size(path)
    slots, entries = index_geometry(size, options)
    entries_at = INDEX_HEADER_SIZE + slots * INDEX_HASH_SLOT_SIZE
    opened = _split_window(path, size, slots, entries, start, end) if is_remote(path) else mapped(path)
    with opened as buf:
        view = IndexFileView(buf, slots, entries)  # checks the size against the geometry
        header = view.header
        count = min(view.index_count, entries)
        del view  # holds the mapping; let it go before the file closes
        lo, hi = _entry_range(count, entries_at, start, end)
        for at in range(lo, hi, max_rows):
            yield _entry_batch(buf, path, header, slots, at, min(hi, at + max_rows))


# Slots closer than this are read in one request: a request to object storage costs about
# what reading tens of kilobytes does.
SLOT_GAP = 64 << 10


@contextlib.contextmanager
def _split_window(
    path: str, size: int, slots: int, entries: int, start: int, end: int | None
) -> Iterator[mmap.mmap | bytes]:
    """A file-sized buffer (an anonymous mapping: only the pages written take memory) holding
    what :func:`_entry_batch` reads for the split's entries, at their own positions: the
    header, the entries, and the hash slots those entries fall in. Zeros elsewhere."""
    need = INDEX_HEADER_SIZE + slots * INDEX_HASH_SLOT_SIZE + entries * INDEX_ENTRY_SIZE
    if size < INDEX_HEADER_SIZE or size < need:
        # too short for its geometry: the header (if any) is enough for the view to say so
        with ranged(path) as read_at:
            yield read_at(0, min(size, INDEX_HEADER_SIZE)) + bytes(size - min(size, INDEX_HEADER_SIZE))
        return
    entries_at = INDEX_HEADER_SIZE + slots * INDEX_HASH_SLOT_SIZE
    with zeroed(size) as buf:
        assert isinstance(buf, mmap.mmap)  # size is past the header: not the empty file's b""
        with ranged(path) as read_at:
            buf[:INDEX_HEADER_SIZE] = read_at(0, INDEX_HEADER_SIZE)
            header = IndexHeader(*INDEX_HEADER_UNIT.unpack_from(buf, 0))
            lo, hi = _entry_range(min(max(header.index_count, 1), entries), entries_at, start, end)
            if lo < hi:
                first, last = entries_at + lo * INDEX_ENTRY_SIZE, entries_at + hi * INDEX_ENTRY_SIZE
                fill_from(read_at, buf, first, last)
                used = np.zeros(slots, dtype=bool)
                for at in range(lo, hi, 1 << 20):  # bounded temporaries for a large split
                    n = min(hi, at + (1 << 20)) - at
                    e = np.frombuffer(buf, dtype=_ENTRY, count=n, offset=entries_at + at * INDEX_ENTRY_SIZE)
                    used[np.mod(e["key_hash"].astype(np.int64), slots)] = True
                    del e
                slot_at = INDEX_HEADER_SIZE + np.flatnonzero(used) * INDEX_HASH_SLOT_SIZE
                for a, b in coalesced_ranges(slot_at, INDEX_HASH_SLOT_SIZE, SLOT_GAP):
                    fill_from(read_at, buf, a, b)
        yield buf


def index_lookup(path: str, options: Mapping[str, str], keys: list[str]) -> tuple[list[int], int]:
    """(CommitLog offsets indexed under any of ``keys`` (``topic#key`` strings), the header's
    end_phy_offset: where the last indexed record starts) of one IndexFile.

    Reads the header, one hash slot per key and the entries of its chain, nothing else
    (ranged reads, so a file on object storage is not fetched whole). Follows
    IndexFile.selectPhyOffset as :meth:`IndexFileView.lookup` does over a whole mapping, with
    no time bounds: an entry's time is in whole seconds, the caller filters on the records'.
    Hashes collide, so the caller checks the records' keys.
    """
    slots, entries = index_geometry(file_size(path), options)
    entries_at = INDEX_HEADER_SIZE + slots * INDEX_HASH_SLOT_SIZE
    found: list[int] = []
    with ranged(path) as read_at:
        header = IndexHeader(*INDEX_HEADER_UNIT.unpack(read_at(0, INDEX_HEADER_SIZE)))
        count = max(header.index_count, 1)
        for key in keys:
            key_hash = index_key_hash(key)
            slot_at = INDEX_HEADER_SIZE + (key_hash % slots) * INDEX_HASH_SLOT_SIZE
            current = int.from_bytes(read_at(slot_at, INDEX_HASH_SLOT_SIZE), "big", signed=True)
            if current <= INVALID_INDEX or current > count or count <= 1:
                continue
            for _ in range(count):  # a chain visits each entry once; a cycle in a damaged file ends here
                if current >= entries:
                    break
                hash_read, phy_offset, time_diff, prev = INDEX_ENTRY_UNIT.unpack(
                    read_at(entries_at + current * INDEX_ENTRY_SIZE, INDEX_ENTRY_SIZE)
                )
                if time_diff < 0:
                    break
                time_read = header.begin_timestamp + time_diff * 1000
                if hash_read == key_hash and time_read >= 0:
                    found.append(phy_offset)
                if prev <= INVALID_INDEX or prev > count or prev == current or time_read < 0:
                    break
                current = prev
    return sorted(set(found)), header.end_phy_offset
