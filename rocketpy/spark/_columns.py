"""Column lists declared once, turned into both a Spark DDL schema and an Arrow schema.

Readers hand Spark Arrow record batches rather than tuples: the Python data source
API converts tuples row by row on the executor, which costs more than decoding the
records themselves. Both schemas come from one list so they cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

# kind -> (Spark DDL type, Arrow type)
_KINDS: dict[str, tuple[str, pa.DataType]] = {
    "string": ("string", pa.string()),
    "int": ("int", pa.int32()),
    "long": ("bigint", pa.int64()),
    "double": ("double", pa.float64()),
    "bool": ("boolean", pa.bool_()),
    "binary": ("binary", pa.binary()),
    # Spark's Arrow reader expects microseconds in UTC for TimestampType.
    "timestamp": ("timestamp", pa.timestamp("us", tz="UTC")),
    "strings": ("array<string>", pa.list_(pa.string())),
    "map": ("map<string,string>", pa.map_(pa.string(), pa.string())),
}

Columns = Sequence[tuple[str, str]]


def ddl(columns: Columns) -> str:
    """The Spark DDL schema string of ``columns``."""
    return ", ".join(f"`{name}` {_KINDS[kind][0]}" for name, kind in columns)


def arrow_schema(columns: Columns) -> pa.Schema:
    """The Arrow schema of ``columns``."""
    return pa.schema([(name, _KINDS[kind][1]) for name, kind in columns])


# What a timestamp column can hold: years 1 to 9999, Spark's range and Python's datetime's
# (a damaged record's clock field can say anything; the raw long column keeps it).
_MIN_US = -62_135_596_800_000_000
_MAX_US = 253_402_300_800_000_000 - 1


def ms_to_us(ms: int | None) -> int | None:
    """Epoch millis (RocketMQ's clock unit) as the microseconds a timestamp column holds;
    None for a time outside the years 1 to 9999."""
    if ms is None:
        return None
    us = ms * 1000
    return us if _MIN_US <= us <= _MAX_US else None


def seconds_to_us(seconds: float) -> int | None:
    """Epoch seconds (a capture's clock) as timestamp-column microseconds, like :func:`ms_to_us`."""
    us = round(seconds * 1_000_000)
    return us if _MIN_US <= us <= _MAX_US else None


class BatchBuilder:
    """Collects rows column-wise and cuts them into Arrow record batches.

    A batch is cut after ``max_rows`` rows or once ``max_bytes`` of payload (bodies)
    is held, so a partition of 4 MiB message bodies does not build a multi-GiB batch.
    """

    def __init__(self, columns: Columns, max_rows: int = 4096, max_bytes: int = 32 << 20) -> None:
        self.names = [name for name, _ in columns]
        self.schema = arrow_schema(columns)
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        # Rows are kept whole and transposed once per batch (zip(*rows)): cheaper than
        # appending each value to its column list, which costs a Python loop per row.
        self._rows: list[Sequence[Any]] = []
        self._bytes = 0

    def add(self, row: Sequence[Any], payload_bytes: int = 0) -> pa.RecordBatch | None:
        """Append one row (values in column order); returns a batch when one is full."""
        self._rows.append(row)
        self._bytes += payload_bytes
        if len(self._rows) >= self.max_rows or self._bytes >= self.max_bytes:
            return self.flush()
        return None

    def add_dict(self, values: dict[str, Any], payload_bytes: int = 0) -> pa.RecordBatch | None:
        """Append one row given by name; missing columns are null."""
        return self.add([values.get(name) for name in self.names], payload_bytes)

    def flush(self) -> pa.RecordBatch | None:
        """The rows held so far as one batch (None when there are none)."""
        if not self._rows:
            return None
        columns = zip(*self._rows, strict=True)
        arrays = [pa.array(col, type=field.type) for col, field in zip(columns, self.schema)]
        batch = pa.RecordBatch.from_arrays(arrays, schema=self.schema)
        self._rows = []
        self._bytes = 0
        return batch


def batches_to_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[dict[str, Any]]:
    """Rows as dicts, for single-process use (tests, the benchmark's baseline, small tools)."""
    for batch in batches:
        yield from batch.to_pylist()
