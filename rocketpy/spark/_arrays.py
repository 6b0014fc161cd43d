"""Fixed-layout store bytes decoded in bulk with numpy into Arrow arrays.

ConsumeQueue units and IndexFile entries are fixed-size big-endian structs: one
``np.frombuffer`` over the mapped bytes reads a whole range of them, and Arrow takes
the resulting arrays without a Python loop per entry.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyarrow as pa

from ..accel import compiled
from ._columns import _MAX_US, _MIN_US

# Bounds on millis whose microseconds fit a timestamp column (see _columns.ms_to_us).
_MIN_MS = _MIN_US // 1000
_MAX_MS = _MAX_US // 1000


@functools.lru_cache(maxsize=8)
def constant_strings(value: str, n: int) -> pa.Array:
    """``n`` copies of one string (a file path, a topic): the bytes repeated and evenly spaced
    offsets, built straight into Arrow's buffers. Arrays are immutable, so the batches of one
    file share one (the last few are kept)."""
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


def binary_ranges_pure(buf: Any, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """The byte ranges ``[start, start + length)`` of ``buf`` as one binary array, a slice a row."""
    return pa.array([bytes(buf[s : s + n]) for s, n in zip(start.tolist(), length.tolist())], pa.binary())


_c_gather = compiled("gather_ranges")


def binary_ranges(buf: Any, start: np.ndarray, length: np.ndarray) -> pa.Array:
    """What :func:`binary_ranges_pure` gives; with the compiled build, each range is copied once
    straight into the array's data buffer."""
    if _c_gather is None or not len(buf):
        return binary_ranges_pure(buf, start, length)
    n = len(start)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    total = int(offsets[-1])
    if total >= 1 << 31:  # past what 32-bit offsets reach
        return binary_ranges_pure(buf, start, length)
    data = np.empty(total, dtype=np.uint8)
    _c_gather(buf, np.ascontiguousarray(start, np.int64), np.ascontiguousarray(length, np.int64), data)
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)])
