"""An asyncio loop on a thread of its own, for the blocking API: calls from other threads with one hop each.

A blocking ``producer.send(msg)`` hands the coroutine to the loop thread and waits on a
``concurrent.futures.Future``. The hand-over is batched: calls queue in a deque, and only the call that finds
the deque empty wakes the loop (``call_soon_threadsafe``: a write to its self-pipe), which then starts every
queued call in one pass. So 32 threads sending wake the loop about once per round of answers, not once a call.
The native asyncio client runs there (remoting.aio), with no trio loop in between.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """An asyncio loop on a daemon thread that runs coroutines for other threads."""

    _shared: LoopThread | None = None
    _shared_lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._inbox: collections.deque[tuple[Callable[[], Coroutine[Any, Any, Any]],
                                             concurrent.futures.Future[Any]]] = collections.deque()
        self._lock = threading.Lock()
        self._woken = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._thread = threading.Thread(target=self._main, name="rocketpy-asyncio", daemon=True)
        self._thread.start()

    @classmethod
    def shared(cls) -> LoopThread:
        """The process-wide loop thread, started on first use and stopped at exit."""
        with cls._shared_lock:
            if cls._shared is None or not cls._shared._thread.is_alive():
                cls._shared = cls()
                atexit.register(cls._shared.close)
            return cls._shared

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, fn: Callable[[], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        """Run ``fn()`` on the loop; its outcome arrives in the returned future."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            self._inbox.append((fn, future))
            wake, self._woken = not self._woken, True
        if wake:
            self.loop.call_soon_threadsafe(self._start_all)
        return future

    def run(self, fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """``submit(fn)`` and wait for its result (blocking the calling thread)."""
        return self.submit(fn).result()

    def _start_all(self) -> None:
        with self._lock:
            calls = list(self._inbox)
            self._inbox.clear()
            self._woken = False
        for fn, future in calls:
            if not future.set_running_or_notify_cancel():
                continue
            task = self.loop.create_task(fn())
            self._tasks.add(task)
            task.add_done_callback(functools.partial(self._settle, future))

    def _settle(self, future: concurrent.futures.Future[Any], task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():  # the future is running already: it cannot be cancelled, only failed
            future.set_exception(concurrent.futures.CancelledError())
        elif task.exception() is not None:
            future.set_exception(task.exception())
        else:
            future.set_result(task.result())

    def close(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(5)
