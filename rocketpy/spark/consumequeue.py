"""ConsumeQueue files as rows: one per 20-byte unit up to the queue's last written unit.

The broker's own walk (:func:`rocketpy.codecs.store_records.iter_consumequeue`) stops at
the first unit that is not ``offset >= 0 and size > 0``. A forensic reader must see past
such a hole, since a zeroed unit in the middle of a queue is exactly the damage an audit
looks for: every unit is decoded with :func:`parse_consumequeue_entry` and only the
all-zero tail (units never written) is left out; ``valid`` carries the broker's test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from ..codecs.store_records import CQ_STORE_UNIT_SIZE, parse_consumequeue_entry
from ._columns import BatchBuilder
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


def consumequeue_batches(
    path: str, topic: str, queue_id: int, file_offset: int, max_rows: int = 8192
) -> Iterator[pa.RecordBatch]:
    """Batches of the units of one queue file; ``file_offset`` is its name (byte offset in the queue)."""
    builder = BatchBuilder(CONSUMEQUEUE_COLUMNS, max_rows=max_rows)
    first_unit = file_offset // CQ_STORE_UNIT_SIZE
    with mapped(path) as buf:
        end = _written_end(buf)
        for pos in range(0, end, CQ_STORE_UNIT_SIZE):
            e = parse_consumequeue_entry(buf, pos)
            batch = builder.add(
                (
                    path,
                    topic,
                    queue_id,
                    first_unit + pos // CQ_STORE_UNIT_SIZE,
                    e.commit_log_offset,
                    e.size,
                    e.tags_code,
                    e.is_valid,
                    e.is_pre_blank,
                )
            )
            if batch is not None:
                yield batch
    last = builder.flush()
    if last is not None:
        yield last
