"""Wall-clock time as RocketMQ stores it: milliseconds since the epoch (System.currentTimeMillis)."""

from __future__ import annotations

import time


def now_ms() -> int:
    """Milliseconds since the epoch, exact (integer nanoseconds divided, no float rounding)."""
    return time.time_ns() // 1_000_000


__all__ = ["now_ms"]
