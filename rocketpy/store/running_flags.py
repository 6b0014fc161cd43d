"""RunningFlags: why a store refuses writes (Java's RunningFlags, the same bits).

``writeable`` is False while any of NOT_WRITEABLE, WRITE_LOGICS_QUEUE_ERROR,
WRITE_INDEX_FILE_ERROR or DISK_FULL is set; ConsumeQueues ignore DISK_FULL
(``cq_writeable``), so records already in the CommitLog still get dispatched.
Unlike Java, the two error bits are cleared again once the store has re-dispatched
what it could not write (see MessageStore.check_disk).
"""

from __future__ import annotations

__all__ = ["RunningFlags"]

NOT_READABLE_BIT = 1
NOT_WRITEABLE_BIT = 1 << 1
WRITE_LOGICS_QUEUE_ERROR_BIT = 1 << 2
WRITE_INDEX_FILE_ERROR_BIT = 1 << 3
DISK_FULL_BIT = 1 << 4

_WRITE_BLOCKERS = NOT_WRITEABLE_BIT | WRITE_LOGICS_QUEUE_ERROR_BIT | WRITE_INDEX_FILE_ERROR_BIT | DISK_FULL_BIT
_CQ_BLOCKERS = NOT_WRITEABLE_BIT | WRITE_LOGICS_QUEUE_ERROR_BIT | WRITE_INDEX_FILE_ERROR_BIT


class RunningFlags:
    """The flag bits; each ``set_*`` answers whether the bit changed (so the caller logs once)."""

    def __init__(self) -> None:
        self.bits = 0

    @property
    def writeable(self) -> bool:
        return self.bits & _WRITE_BLOCKERS == 0

    @property
    def cq_writeable(self) -> bool:
        return self.bits & _CQ_BLOCKERS == 0

    @property
    def disk_full(self) -> bool:
        return bool(self.bits & DISK_FULL_BIT)

    @property
    def dispatch_error(self) -> bool:
        """A ConsumeQueue or the index could not be written."""
        return bool(self.bits & (WRITE_LOGICS_QUEUE_ERROR_BIT | WRITE_INDEX_FILE_ERROR_BIT))

    def _set(self, bit: int, on: bool) -> bool:
        before = self.bits
        self.bits = before | bit if on else before & ~bit
        return self.bits != before

    def set_disk_full(self, on: bool) -> bool:
        """getAndMakeDiskFull / getAndMakeDiskOK."""
        return self._set(DISK_FULL_BIT, on)

    def set_logics_queue_error(self, on: bool) -> bool:
        return self._set(WRITE_LOGICS_QUEUE_ERROR_BIT, on)

    def set_index_file_error(self, on: bool) -> bool:
        return self._set(WRITE_INDEX_FILE_ERROR_BIT, on)

    def __repr__(self) -> str:
        return f"RunningFlags(bits={self.bits:#x})"
