"""IndexFiles as rows: one per written entry, with the file's header repeated on each.

The file does not record its own geometry: the number of hash slots and entries comes
from the broker config (maxHashSlotNum, maxIndexNum). Without options the reader
assumes the broker's shape (entries = 4 x slots, which both Java's defaults and the
usual tuned configs keep) and derives it from the file size.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

import pyarrow as pa

from ..codecs.javalang import to_int64
from ..codecs.store_records import INDEX_ENTRY_SIZE, INDEX_HASH_SLOT_SIZE, INDEX_HEADER_SIZE, IndexFileView
from ._columns import BatchBuilder, ms_to_us
from ._files import mapped

__all__ = ["INDEX_COLUMNS", "index_batches", "index_geometry"]

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


def index_batches(path: str, options: Mapping[str, str], max_rows: int = 8192) -> Iterator[pa.RecordBatch]:
    """Batches of the entries of one IndexFile."""
    builder = BatchBuilder(INDEX_COLUMNS, max_rows=max_rows)
    slots, entries = index_geometry(os.path.getsize(path), options)
    with mapped(path) as buf:
        view = IndexFileView(buf, slots, entries)
        h = view.header
        for number, e in view.entries():
            ts = to_int64(h.begin_timestamp + e.time_diff * 1000)  # Java's long arithmetic
            slot = e.key_hash % slots
            batch = builder.add(
                (
                    path,
                    h.begin_timestamp,
                    h.end_timestamp,
                    h.begin_phy_offset,
                    h.end_phy_offset,
                    h.hash_slot_count,
                    h.index_count,
                    number,
                    e.key_hash,
                    e.phy_offset,
                    e.time_diff,
                    ts,
                    ms_to_us(ts),
                    e.prev_index,
                    slot,
                    view.slot(slot) == number,
                )
            )
            if batch is not None:
                yield batch
        del view  # holds the mapping; let it go before the file closes
    last = builder.flush()
    if last is not None:
        yield last
