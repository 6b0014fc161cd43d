"""The event loop under the client: trio or asyncio, found where the client starts.

The client's upper layers (the instance, producers, their background tasks) are written once, against
anyio's locks, events, sleeps and cancel scopes, which are trio's own under trio and work alike under asyncio.
What anyio does not give is here: which loop runs, a task that lives beyond its caller's scope (trio's system
task; a free-standing asyncio task), the loop's clock as a plain function (read on every send, so without
anyio's per-call look-up of the backend), and the connection driver of that loop.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import sniffio
import trio

__all__ = ["ParkingLot", "clock", "is_trio", "spawn_detached"]

#: free-standing asyncio tasks, kept until they end (the loop holds only weak references to its tasks)
_DETACHED: set[asyncio.Task[Any]] = set()


def is_trio() -> bool:
    """Whether the running loop is trio's (else asyncio's, uvloop's included)."""
    return sniffio.current_async_library() == "trio"


def clock() -> Callable[[], float]:
    """The running loop's clock, as a function to call (trio's follows a MockClock in tests)."""
    if is_trio():
        return trio.lowlevel.current_clock().current_time
    return asyncio.get_running_loop().time


def spawn_detached(fn: Callable[[], Awaitable[Any]], name: str) -> None:
    """Run ``fn()`` in a task that belongs to no caller's scope: trio's system task, or a free-standing asyncio
    task. ``fn`` must catch its own errors (under trio one escaping would end the whole run)."""
    if is_trio():
        trio.lowlevel.spawn_system_task(fn, name=name)
        return
    task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(fn(), name=name)  # type: ignore[arg-type]
    _DETACHED.add(task)
    task.add_done_callback(_DETACHED.discard)


class ParkingLot:
    """Tasks parked until woken, ``count`` at a time or all (trio.lowlevel.ParkingLot's park/unpark/unpark_all and
    truth value), on either loop: under trio it is trio's own ParkingLot, made when first used, elsewhere a queue
    of anyio Events. May be made outside any loop."""

    __slots__ = ("_lot", "_waiters")

    def __init__(self) -> None:
        self._lot: trio.lowlevel.ParkingLot | None = None
        self._waiters: collections.deque[anyio.Event] = collections.deque()

    def __bool__(self) -> bool:
        return bool(self._lot) or bool(self._waiters)

    async def park(self) -> None:
        if is_trio():
            lot = self._lot
            if lot is None:
                lot = self._lot = trio.lowlevel.ParkingLot()
            await lot.park()
            return
        event = anyio.Event()
        self._waiters.append(event)
        try:
            await event.wait()
        finally:
            if not event.is_set():  # cancelled while parked: no longer in line
                with contextlib.suppress(ValueError):
                    self._waiters.remove(event)

    def unpark(self, count: int = 1) -> None:
        if self._lot is not None:
            self._lot.unpark(count=count)
        waiters = self._waiters
        for _ in range(min(count, len(waiters))):
            waiters.popleft().set()

    def unpark_all(self) -> None:
        self.unpark(count=len(self._waiters) + (len(self._lot) if self._lot is not None else 0))
