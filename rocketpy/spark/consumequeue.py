"""ConsumeQueue files as rows: one per 20-byte unit up to the queue's last written unit.

The broker's own walk (:func:`rocketpy.codecs.store_records.iter_consumequeue`) stops at
the first unit that is not ``offset >= 0 and size > 0``. A forensic reader must see past
such a hole, since a zeroed unit in the middle of a queue is exactly the damage an audit
looks for: every unit is decoded and only the all-zero tail (units never written) is left
out; ``valid`` carries the broker's test.

Units are decoded in bulk with numpy (the layout is ``CONSUME_QUEUE_ENTRY``; a test holds
the two to the same answers). A file can be read in splits of whole units.

A local file is mapped. On another filesystem (a store copied to object storage) a split
reads only its own units through ranged reads; where its rows depend on what follows it
(it ends in zeros: a hole, or the never-written tail) it reads on until a written byte or
the file's end, unless the driver already found the file's written end and passed it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ..codecs.store_records import CQ_STORE_UNIT_SIZE
from ._arrays import constant_strings
from ._columns import arrow_schema
from ._files import file_size, is_remote, mapped, ranged

__all__ = ["CONSUMEQUEUE_COLUMNS", "consumequeue_batches", "remote_written_end", "units_up"]

CONSUMEQUEUE_COLUMNS: list[tuple[str, str]] = [
    ("file", "string"),
    ("topic", "string"),
    ("queue_id", "int"),
    ("queue_offset", "long"),  # the logical offset consumers use: unit number in the queue
    ("commit_log_offset", "long"),
    ("size", "int"),
    ("tags_code", "long"),
    ("valid", "bool"),  # ConsumeQueue's test: commit_log_offset >= 0 and size > 0
    ("pre_blank", "bool"),  # (0, Integer.MAX_VALUE, 0) filler before a queue's first real offset
]
_SCHEMA = arrow_schema(CONSUMEQUEUE_COLUMNS)
_UNIT = np.dtype([("offset", ">i8"), ("size", ">i4"), ("tags", ">i8")])
assert _UNIT.itemsize == CQ_STORE_UNIT_SIZE
_INT_MAX = 0x7FFFFFFF


def units_up(n: int) -> int:
    """``n`` rounded up to a whole number of units."""
    return -(-n // CQ_STORE_UNIT_SIZE) * CQ_STORE_UNIT_SIZE


def _last_written(read: Callable[[int, int], Any], floor: int, top: int) -> int:
    """The end (rounded up to a unit) of the last byte that is not zero in ``[floor, top)``,
    or ``floor`` when they are all zero. Looks at the last unit first (a full file ends
    there), then scans backwards in chunks that double: a long zero run takes few requests."""
    chunk = CQ_STORE_UNIT_SIZE
    end = top
    while end > floor:
        lo = max(floor, end - chunk)
        piece = bytes(read(lo, end - lo)).rstrip(b"\x00")
        if piece:
            return units_up(lo + len(piece))
        end = lo
        chunk = min(max(64 << 10, chunk * 2), 8 << 20)
    return floor


def _written_after(read: Callable[[int, int], Any], floor: int, top: int) -> bool:
    """Whether a byte in ``[floor, top)`` is not zero; scans forwards in chunks that double,
    so a short hole costs a short read."""
    chunk = 4 << 10
    while floor < top:
        n = min(chunk, top - floor)
        if bytes(read(floor, n)).strip(b"\x00"):
            return True
        floor += n
        chunk = min(chunk * 2, 8 << 20)
    return False


def _written_end(buf: Any) -> int:
    """Bytes up to the end of the last unit that is not all zeros."""
    return _last_written(lambda at, n: buf[at : at + n], 0, len(buf) - len(buf) % CQ_STORE_UNIT_SIZE)


def remote_written_end(path: str) -> int:
    """:func:`_written_end` of a file on another filesystem, reading backwards from its end
    only as far as the zeros go (20 bytes for a full file)."""
    size = file_size(path)
    with ranged(path) as read_at:
        return _last_written(read_at, 0, size - size % CQ_STORE_UNIT_SIZE)


def unit_batch(buf: Any, lo: int, hi: int, path: str, topic: str, queue_id: int, first_unit: int) -> pa.RecordBatch:
    """The units in bytes ``[lo, hi)`` of a queue file (both multiples of 20) as one batch."""
    n = (hi - lo) // CQ_STORE_UNIT_SIZE
    units = np.frombuffer(buf, dtype=_UNIT, count=n, offset=lo)
    offset = units["offset"].astype(np.int64)
    size = units["size"].astype(np.int32)
    tags = units["tags"].astype(np.int64)
    del units  # a view of the mapping: let it go before the file closes
    queue_offset = np.arange(
        first_unit + lo // CQ_STORE_UNIT_SIZE, first_unit + hi // CQ_STORE_UNIT_SIZE, dtype=np.int64
    )
    arrays = [
        constant_strings(path, n),
        constant_strings(topic, n),
        pa.array(np.full(n, queue_id, dtype=np.int32)),
        pa.array(queue_offset),
        pa.array(offset),
        pa.array(size),
        pa.array(tags),
        pa.array((offset >= 0) & (size > 0)),
        pa.array((offset == 0) & (size == _INT_MAX) & (tags == 0)),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=_SCHEMA)


def consumequeue_batches(
    path: str,
    topic: str,
    queue_id: int,
    file_offset: int,
    max_rows: int = 1 << 16,
    start: int = 0,
    end: int | None = None,
    written: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Batches of the units of one queue file; ``file_offset`` is its name (byte offset in the queue).

    ``start``/``end`` (byte positions in the file, rounded up to whole units) read one split.
    ``written`` is the file's written end when the caller knows it (:func:`remote_written_end`):
    a split on another filesystem then reads nothing outside its own units.
    """
    first_unit = file_offset // CQ_STORE_UNIT_SIZE
    step = max_rows * CQ_STORE_UNIT_SIZE
    lo = units_up(start)
    if is_remote(path):
        data, hi = _remote_split(path, lo, end, written)
        for at in range(lo, hi, step):
            # ``data`` holds the units from ``lo``: shift the positions, keep the unit numbers
            yield unit_batch(
                data, at - lo, min(hi, at + step) - lo, path, topic, queue_id, first_unit + lo // CQ_STORE_UNIT_SIZE
            )
        return
    with mapped(path) as buf:
        written = _written_end(buf)
        hi = written if end is None else min(written, units_up(end))
        for at in range(lo, hi, step):
            yield unit_batch(buf, at, min(hi, at + step), path, topic, queue_id, first_unit)


def _remote_split(path: str, lo: int, end: int | None, written: int | None) -> tuple[bytes, int]:
    """(the bytes of units ``[lo, hi)``, ``hi``): a split's rows of a file read by ranges, the
    same units the mapped read gives."""
    size = file_size(path)
    whole = size - size % CQ_STORE_UNIT_SIZE
    hi = whole if end is None else min(whole, units_up(end))
    if written is not None:
        hi = min(hi, written)
    if lo >= hi:
        return b"", lo
    with ranged(path) as read_at:
        data = read_at(lo, hi - lo)
        if written is not None:
            return data, hi
        inside = units_up(lo + len(data.rstrip(b"\x00")))
        # Zero units at the split's end are rows only if something is written after them.
        if inside < hi and not _written_after(read_at, hi, whole):
            hi = max(lo, inside)
    return data, hi
