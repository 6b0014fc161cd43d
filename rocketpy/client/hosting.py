"""A nursery hosted by its own trio system task, for objects with ``start()``/``shutdown()``.

A nursery entered in ``start()`` and left in ``shutdown()`` belongs to whatever cancel scope
was current at ``start()``: start inside ``trio.move_on_after(...)`` and shut down outside
it, and trio finds its cancel-scope stack corrupted. A :class:`TaskHost` opens the nursery in
a system task instead, so ``start()`` and ``shutdown()`` may run in any scope; it lives until
:meth:`TaskHost.aclose` (or the end of the trio run).
"""

from __future__ import annotations

import logging

import trio

log = logging.getLogger("rocketpy.client")


def failure_text(exc: BaseException) -> str:
    """What went wrong, as text to keep: a nursery's group says which of its tasks failed and why."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(failure_text(e) for e in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class TaskHost:
    """Owns one nursery in a system task; background tasks of a client object run there."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.nursery: trio.Nursery | None = None
        #: what ended the hosted tasks, when one of them failed, as text (the exception would keep the
        #: frames of the failed tasks for as long as the host object lives)
        self.error: str | None = None
        self._ready = trio.Event()
        self._stop = trio.Event()
        self._done = trio.Event()
        self._spawned = False

    async def open(self) -> trio.Nursery:
        """Start the host task and return its nursery."""
        self._spawned = True
        trio.lowlevel.spawn_system_task(self._run, name=self.name)
        await self._ready.wait()
        if self.nursery is None:
            raise RuntimeError(f"{self.name} did not start: {self.error}")
        return self.nursery

    async def _run(self) -> None:
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
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
        with trio.CancelScope(shield=True):
            await self._done.wait()


__all__ = ["TaskHost", "failure_text"]
