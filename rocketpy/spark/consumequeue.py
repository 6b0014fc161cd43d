"""ConsumeQueue files as rows: one per 20-byte unit up to the queue's last written unit.

The broker's own walk (:func:`rocketpy.codecs.store_records.iter_consumequeue`) stops at
the first unit that is not ``offset >= 0 and size > 0``. A forensic reader must see past
such a hole, since a zeroed unit in the middle of a queue is exactly the damage an audit
looks for: every unit is decoded and only the all-zero tail (units never written) is left
out; ``valid`` carries the broker's test.

Units are decoded in bulk with numpy (the layout is ``CONSUME_QUEUE_ENTRY``; a test holds
the two to the same answers). A file can be read in splits of whole units.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from ..codecs.store_records import CQ_STORE_UNIT_SIZE
from ._arrays import constant_strings
from ._columns import arrow_schema
from ._files import mapped

__all__ = ["CONSUMEQUEUE_COLUMNS", "consumequeue_batches"]

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


def _written_end(buf: Any) -> int:
    """Bytes up to the end of the last unit that is not all zeros (scanned backwards in chunks)."""
    end = len(buf) - len(buf) % CQ_STORE_UNIT_SIZE
    chunk = CQ_STORE_UNIT_SIZE * 52_428  # ~1 MiB, a whole number of units
    while end > 0:
        lo = max(0, end - chunk)
        piece = buf[lo:end].rstrip(b"\x00")
        if piece:
            last = lo + len(piece)
            return -(-last // CQ_STORE_UNIT_SIZE) * CQ_STORE_UNIT_SIZE
        end = lo
    return 0


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
) -> Iterator[pa.RecordBatch]:
    """Batches of the units of one queue file; ``file_offset`` is its name (byte offset in the queue).

    ``start``/``end`` (byte positions in the file, rounded up to whole units) read one split.
    """
    first_unit = file_offset // CQ_STORE_UNIT_SIZE
    with mapped(path) as buf:
        written = _written_end(buf)
        lo = -(-start // CQ_STORE_UNIT_SIZE) * CQ_STORE_UNIT_SIZE
        hi = written if end is None else min(written, -(-end // CQ_STORE_UNIT_SIZE) * CQ_STORE_UNIT_SIZE)
        step = max_rows * CQ_STORE_UNIT_SIZE
        for at in range(lo, hi, step):
            yield unit_batch(buf, at, min(hi, at + step), path, topic, queue_id, first_unit)
