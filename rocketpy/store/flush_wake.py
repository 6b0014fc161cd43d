"""How the group commit's flush thread is woken, and the msync it starts before it needs the GIL.

The trio thread posts a target offset after each append that a producer waits on, with the CommitLog
range still to sync when it lies in one mapped file. The flush thread's :meth:`PyFlushWake.wait`
returns what was posted since its last call, merged (the highest target, one range covering all the
posted ranges of the same file), after msyncing that range. The compiled ``_speedups.FlushWake`` does
the waiting and the msync with the GIL released throughout: a woken Python thread otherwise waits for
the event loop to finish its turn before it can start the disk. This class is its reference (and the
pure build's form), held to the same results by ``tests/test_flush_wake.py``.

Gathering: each post counts the requests it asks for (``count``), and ``wait(until=N, linger=S)``,
once something is posted, keeps waiting up to ``S`` seconds (from the call) for ``N`` requests in all
before it syncs. The group commit asks for the requests it has just answered back: producers waiting
on their answers send their next request at once, and an msync costs about the same for one request
as for many, so one round for all of them beats two rounds of half (see GroupCommitService._loop).

Nothing here decides what is on disk: the caller notes the range as flushed only when ``wait`` reports
no error and the file is still open (MappedFile.note_synced), and flushes the rest itself.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from ..accel import compiled
from .msync import msync_address

__all__ = ["PyFlushWake", "new_flush_wake"]

#: what wait() returns: (target, owner, start, stop, stamp, error), or None when nothing was posted
Posted = tuple[int, Any, int, int, int, int]


class PyFlushWake:
    """The reference form of ``_speedups.FlushWake`` (see the module docstring)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._posted = False
        self._stopped = False
        self._owner: Any = None
        self._range = (0, 0, 0, 0)  # address, start, stop, stamp
        self._target = 0
        self._count = 0  # requests posted since the last wait took what was posted
        #: seconds the last msync done by wait() took (0.0 when it did none)
        self.sync_seconds = 0.0

    def post(
        self,
        target: int,
        owner: Any = None,
        address: int = 0,
        start: int = 0,
        stop: int = 0,
        stamp: int = 0,
        count: int = 1,
    ) -> None:
        """Wake the waiter for ``target`` (``count`` requests wait for it); with ``owner`` (a file mapped
        at ``address``), msync its ``[start, stop)`` first (``start`` page-aligned)."""
        if owner is None or address == 0 or stop <= start:
            owner = None
        with self._cond:
            self._count += count
            if not self._posted:
                self._owner, self._range, self._target = owner, (address, start, stop, stamp), target
                self._posted = True
            else:
                self._target = max(self._target, target)
                at, lo, hi, ts = self._range
                if owner is not None and owner is self._owner and address == at:
                    self._range = (at, min(lo, start), max(hi, stop), max(ts, stamp))
                else:  # another file, or nothing to sync early: the waiter's flush does it all
                    self._owner = None
            self._cond.notify()

    def stop_waiting(self) -> None:
        """Wake the waiter for good: wait() returns what is posted, then None at once."""
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def pending(self) -> int:
        """The requests posted since the last wait took what was posted."""
        with self._cond:
            return self._count

    def wait(self, timeout: float = -1.0, until: int = 0, linger: float = 0.0) -> Posted | None:
        """Until something is posted (or stop_waiting, or ``timeout`` seconds when >= 0): None when
        nothing was, else ``(target, owner, start, stop, stamp, error)``: owner None when no range was
        synced; error msync's errno (0: ``[start, stop)`` of owner is on disk). Once something is
        posted, while fewer than ``until`` requests are, it waits on until ``linger`` seconds after
        the call (never once stopped)."""
        began = time.monotonic()
        with self._cond:
            self._cond.wait_for(lambda: self._posted or self._stopped, None if timeout < 0 else timeout)
            if not self._posted:
                return None
            if self._count < until and linger > 0:
                self._cond.wait_for(
                    lambda: self._count >= until or self._stopped, max(0.0, began + linger - time.monotonic())
                )
            owner, (address, start, stop, stamp), target = self._owner, self._range, self._target
            self._owner, self._posted, self._count = None, False, 0
        self.sync_seconds = 0.0
        if owner is None:
            return (target, None, 0, 0, 0, 0)
        synced = time.monotonic()
        error = msync_address(address + start, stop - start)
        self.sync_seconds = time.monotonic() - synced
        return (target, owner, start, stop, stamp, error)


def new_flush_wake() -> Any:
    """The compiled FlushWake when built, else PyFlushWake."""
    fast = compiled("FlushWake")
    return fast() if fast is not None else PyFlushWake()
