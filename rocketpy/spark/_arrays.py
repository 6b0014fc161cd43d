"""Fixed-layout store bytes decoded in bulk with numpy into Arrow arrays.

ConsumeQueue units and IndexFile entries are fixed-size big-endian structs: one
``np.frombuffer`` over the mapped bytes reads a whole range of them, and Arrow takes
the resulting arrays without a Python loop per entry.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ._columns import _MAX_US, _MIN_US

# Bounds on millis whose microseconds fit a timestamp column (see _columns.ms_to_us).
_MIN_MS = _MIN_US // 1000
_MAX_MS = _MAX_US // 1000


def constant_strings(value: str, n: int) -> pa.Array:
    """``n`` copies of one string (a file path, a topic): the bytes repeated and evenly spaced
    offsets, built straight into Arrow's buffers."""
    raw = value.encode("utf-8")
    if len(raw) * n >= 1 << 31:  # past what 32-bit offsets reach: let Arrow decide
        return pa.array([value] * n, pa.string())
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(raw))
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])


def ms_to_timestamps(ms: np.ndarray) -> pa.Array:
    """Epoch millis as a UTC microsecond timestamp column; null where out of the years 1 to 9999."""
    ok = (ms >= _MIN_MS) & (ms <= _MAX_MS)
    us = np.where(ok, ms, 0).astype(np.int64) * 1000
    return pa.array(us, type=pa.timestamp("us", tz="UTC"), mask=~ok)


def native(values: Any, dtype: str) -> np.ndarray:
    """A big-endian field view as a native-order array of ``dtype`` (a copy, so the mapping is free)."""
    return np.ascontiguousarray(values, dtype=dtype)
