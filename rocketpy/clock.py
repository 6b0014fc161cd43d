"""Wall-clock time as RocketMQ stores it: milliseconds since the epoch (System.currentTimeMillis).

Every broker, NameServer and client timestamp reads :func:`now_ms`. Its source is the system
clock unless a caller installs another for the current context with :func:`use_clock` (a
``contextvars`` value: the tasks and worker threads started from that context inherit it,
other contexts keep the system clock). Tests use it to run servers on a virtual clock
(``rocketpy.testing.clock_following`` with ``trio.testing.MockClock``).
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def system_ms() -> int:
    """Milliseconds since the epoch, exact (integer nanoseconds divided, no float rounding)."""
    return time.time_ns() // 1_000_000


_SOURCE: contextvars.ContextVar[Callable[[], int]] = contextvars.ContextVar("rocketpy_clock", default=system_ms)


def now_ms() -> int:
    """Milliseconds since the epoch from the current context's clock (the system clock by default)."""
    return _SOURCE.get()()


def monotonic_ms() -> int:
    """Milliseconds of the monotonic clock: for intervals and expiries that must not jump with the
    wall clock (quarantines, lock leases); not a timestamp, and not moved by :func:`use_clock`."""
    return time.monotonic_ns() // 1_000_000


@contextmanager
def use_clock(source: Callable[[], int]) -> Iterator[None]:
    """Make :func:`now_ms` read ``source`` in this context (and what it starts) until the block ends."""
    token = _SOURCE.set(source)
    try:
        yield
    finally:
        _SOURCE.reset(token)


__all__ = ["monotonic_ms", "now_ms", "system_ms", "use_clock"]
