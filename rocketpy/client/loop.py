"""The event loop under the client: trio or asyncio, found where the client starts.

The client's upper layers (the instance, producers, their background tasks) are written once, against
anyio's locks, events, sleeps and cancel scopes, which are trio's own under trio and work alike under asyncio.
What anyio does not give is here: which loop runs, a task that lives beyond its caller's scope (trio's system
task; a free-standing asyncio task), the loop's clock as a plain function (read on every send, so without
anyio's per-call look-up of the backend), and the connection driver of that loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import sniffio
import trio

__all__ = ["clock", "is_trio", "spawn_detached"]

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
