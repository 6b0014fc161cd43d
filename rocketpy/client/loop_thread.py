"""An asyncio loop on a thread of its own, for the blocking API: calls from other threads with one hop each.

A blocking ``producer.send(msg)`` hands the coroutine to the loop thread and waits on a
``concurrent.futures.Future``. The hand-over is batched: calls queue in a deque, and only the call that finds
the deque empty wakes the loop (``call_soon_threadsafe``: a write to its self-pipe), which then starts every
queued call in one pass. So 32 threads sending wake the loop about once per round of answers, not once a call.
The native asyncio client runs there (remoting.aio), with no trio loop in between.
"""

from __future__ import annotations

import _thread
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


class _Waiter:
    """A one-shot hand-back for :meth:`LoopThread.run`: a lock the caller blocks on and the loop releases.

    Cheaper than a ``concurrent.futures.Future`` (a condition, a fresh lock per wait, callbacks), which
    ``submit`` keeps for callers that want a future."""

    __slots__ = ("lock", "value", "error")

    def __init__(self) -> None:
        self.lock = _thread.allocate_lock()
        self.lock.acquire()
        self.value: Any = None
        self.error: BaseException | None = None

    def set_running_or_notify_cancel(self) -> bool:
        return True

    def set_result(self, value: Any) -> None:
        self.value = value
        self.lock.release()

    def set_exception(self, error: BaseException | None) -> None:
        self.error = error
        self.lock.release()


class LoopThread:
    """An asyncio loop on a daemon thread that runs coroutines for other threads."""

    _shared: LoopThread | None = None
    _shared_lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._inbox: collections.deque[tuple[Callable[[], Coroutine[Any, Any, Any]],
                                             concurrent.futures.Future[Any] | _Waiter]] = collections.deque()
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
        self._hand_over(fn, future)
        return future

    def run(self, fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run ``fn()`` on the loop and wait for its result (blocking the calling thread)."""
        waiter = _Waiter()
        self._hand_over(fn, waiter)
        waiter.lock.acquire()
        if waiter.error is not None:
            raise waiter.error
        return waiter.value  # type: ignore[no-any-return]

    def _hand_over(self, fn: Callable[[], Coroutine[Any, Any, Any]],
                   sink: concurrent.futures.Future[Any] | _Waiter) -> None:
        with self._lock:
            self._inbox.append((fn, sink))
            wake, self._woken = not self._woken, True
        if wake:
            self.loop.call_soon_threadsafe(self._start_all)

    def _start_all(self) -> None:
        with self._lock:
            calls = list(self._inbox)
            self._inbox.clear()
            self._woken = False
        for fn, future in calls:
            if not future.set_running_or_notify_cancel():
                continue
            try:
                coro = fn()
            except BaseException as exc:  # a call that fails before it starts must not strand the calls after it
                future.set_exception(exc)
                continue
            task = self.loop.create_task(coro)
            self._tasks.add(task)
            task.add_done_callback(functools.partial(self._settle, future))

    def _settle(self, future: concurrent.futures.Future[Any] | _Waiter, task: asyncio.Task[Any]) -> None:
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
