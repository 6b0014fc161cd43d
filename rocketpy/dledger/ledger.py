"""The ledger a DLedger member replicates (DLedgerStore's contract), and an in-memory one.

The in-memory ledger places entries as the file store does (``pos`` = the sum of the sizes before),
so what it holds is what a data file would hold; the file-backed ledger of the broker's DLedger
CommitLog keeps the same contract.
"""

from __future__ import annotations

from typing import Protocol

from ..codecs.dledger import ENTRY_HEADER_SIZE, DLedgerEntry, DLedgerResponseCode

__all__ = ["Ledger", "LedgerError", "MemoryLedger"]


class LedgerError(Exception):
    """DLedgerException: an append or truncate refused, with the code Java answers."""

    def __init__(self, code: DLedgerResponseCode, detail: str = "") -> None:
        super().__init__(f"{code.name}{': ' + detail if detail else ''}")
        self.code = code


class Ledger(Protocol):
    begin_index: int
    end_index: int
    end_term: int
    committed_index: int

    def get(self, index: int) -> DLedgerEntry | None: ...

    def append_as_leader(self, body: bytes, term: int) -> DLedgerEntry: ...

    def append_as_follower(self, entry: DLedgerEntry) -> DLedgerEntry: ...

    def truncate(self, entry: DLedgerEntry) -> int: ...

    def update_committed_index(self, term: int, index: int) -> None: ...


class MemoryLedger:
    """Entries in a list; ``pos`` as the file store lays them out (no blank padding: one endless file)."""

    def __init__(self) -> None:
        self.entries: list[DLedgerEntry] = []
        self.begin_index = -1
        self.end_index = -1
        self.end_term = -1
        self.committed_index = -1

    @property
    def _first(self) -> int:
        return self.begin_index if self.begin_index >= 0 else 0

    def _next_pos(self) -> int:
        if not self.entries:
            return 0
        last = self.entries[-1]
        return last.pos + last.entry_size

    def get(self, index: int) -> DLedgerEntry | None:
        if 0 <= index <= self.end_index and 0 <= index - self._first < len(self.entries):
            return self.entries[index - self._first]
        return None

    def append_as_leader(self, body: bytes, term: int) -> DLedgerEntry:
        entry = DLedgerEntry(index=self.end_index + 1, term=term, pos=self._next_pos(), body=body)
        self._put(entry)
        return entry

    def append_as_follower(self, entry: DLedgerEntry) -> DLedgerEntry:
        if entry.index != self.end_index + 1:
            raise LedgerError(DLedgerResponseCode.INCONSISTENT_INDEX, f"{entry.index} after {self.end_index}")
        if entry.pos != self._next_pos():
            raise LedgerError(DLedgerResponseCode.DISK_ERROR, f"pos {entry.pos} != {self._next_pos()}")
        self._put(entry)
        return entry

    def truncate(self, entry: DLedgerEntry) -> int:
        """Make ``entry`` the last one: keep the local copy when it is the same entry, else cut before
        it and write the leader's (DLedgerMmapFileStore.truncate)."""
        same = entry.same(self.get(entry.index))
        keep = entry.index - self._first + (1 if same else 0)
        del self.entries[max(0, keep):]
        if not same:
            if entry.pos != self._next_pos():
                raise LedgerError(DLedgerResponseCode.DISK_ERROR, f"pos {entry.pos} != {self._next_pos()}")
            self.entries.append(entry)
        self.end_index, self.end_term = entry.index, entry.term
        self.begin_index = self.entries[0].index
        return entry.index

    def _put(self, entry: DLedgerEntry) -> None:
        self.entries.append(entry)
        self.end_index, self.end_term = entry.index, entry.term
        if self.begin_index == -1:
            self.begin_index = entry.index

    def update_committed_index(self, term: int, index: int) -> None:
        if index == -1 or self.end_index == -1 or index <= self.committed_index or index < self.begin_index:
            return
        self.committed_index = min(index, self.end_index)

    def body_offsets(self) -> list[int]:
        """Where each entry's body sits: what a message record's physical offset becomes."""
        return [e.pos + ENTRY_HEADER_SIZE for e in self.entries]
