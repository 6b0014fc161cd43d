"""A nursery hosted by a task of its own, for objects with ``start()``/``shutdown()``.

A nursery entered in ``start()`` and left in ``shutdown()`` belongs to whatever cancel scope
was current at ``start()``: start inside ``trio.move_on_after(...)`` and shut down outside
it, and trio (or anyio under asyncio) finds its cancel-scope stack corrupted. A :class:`TaskHost`
opens the nursery in a task of its own instead (trio's system task, a free-standing asyncio
task), so ``start()`` and ``shutdown()`` may run in any scope; it lives until
:meth:`TaskHost.aclose` (or the end of the run). Under trio the nursery is trio's own; under
asyncio an anyio task group, which has the same ``start_soon``, ``start`` and ``cancel_scope``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import trio

from .loop import is_trio, spawn_detached

log = logging.getLogger("rocketpy.client")


def failure_text(exc: BaseException) -> str:
    """What went wrong, as text to keep: a nursery's group says which of its tasks failed and why."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(failure_text(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@trio.lowlevel.enable_ki_protection
async def _ki_protected(fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
    await fn(*args)


@trio.lowlevel.enable_ki_protection
async def _ki_protected_start(fn: Callable[..., Awaitable[Any]], *args: Any,
                              task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
    await fn(*args, task_status=task_status)


class KIProtectedNursery:
    """A host's trio nursery whose tasks run protected from KeyboardInterrupt.

    Trio raises a Ctrl-C's KeyboardInterrupt in whatever unprotected code is running, a hosted task's too; from
    there it went up the host's nursery and out of its system task, and trio ended the run with TrioInternalError
    (a listener that held the CPU made it so at every Ctrl-C). Protected, the hosted tasks leave it to the main
    task, at its next ``await``: the caller's ``async with`` then shuts the client down."""

    __slots__ = ("_nursery",)

    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    @property
    def cancel_scope(self) -> trio.CancelScope:
        return self._nursery.cancel_scope

    def __getattr__(self, name: str) -> Any:  # child_tasks, parent_task: the nursery's own
        return getattr(self._nursery, name)

    def start_soon(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: object = None) -> None:
        self._nursery.start_soon(_ki_protected, fn, *args, name=name if name is not None else fn)

    async def start(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: object = None) -> Any:
        return await self._nursery.start(_ki_protected_start, fn, *args, name=name if name is not None else fn)


class TaskHost:
    """Owns one nursery in a system task; background tasks of a client object run there."""

    def __init__(self, name: str) -> None:
        self.name = name
        #: a trio Nursery, or an anyio TaskGroup under asyncio
        self.nursery: Any = None
        #: what ended the hosted tasks, when one of them failed, as text (the exception would keep the
        #: frames of the failed tasks for as long as the host object lives)
        self.error: str | None = None
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._spawned = False

    async def open(self) -> Any:
        """Start the host task and return its nursery."""
        self._spawned = True
        spawn_detached(self._run, self.name)
        await self._ready.wait()
        if self.nursery is None:
            raise RuntimeError(f"{self.name} did not start: {self.error}")
        return self.nursery

    async def _run(self) -> None:
        try:
            async with trio.open_nursery() if is_trio() else anyio.create_task_group() as nursery:
                self.nursery = KIProtectedNursery(nursery) if isinstance(nursery, trio.Nursery) else nursery
                self._ready.set()
                await self._stop.wait()
                nursery.cancel_scope.cancel()
        except Exception as exc:  # an error escaping a system task would end the whole trio run
            self.error = failure_text(exc)
            log.exception("%s failed", self.name)
        finally:
            self._ready.set()
            self._done.set()

    @property
    def running(self) -> bool:
        return self._ready.is_set() and not self._done.is_set()

    async def aclose(self) -> None:
        """Cancel the hosted tasks and wait until they are gone (shielded: shutdown must finish)."""
        self._stop.set()
        if not self._spawned:
            return
        if self.nursery is not None:
            self.nursery.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await self._done.wait()


__all__ = ["KIProtectedNursery", "TaskHost", "failure_text"]
