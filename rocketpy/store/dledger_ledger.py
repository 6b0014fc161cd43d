"""Reading a DLedger member's ledger (``<storePath>/dledger-<selfId>/``) as DLedgerMmapFileStore lays it out.

Read-only: what the store tools and the replay tests need to list a Java broker's (or our) DLedger
store entry by entry: the data files, the index units, and the two properties files
(``checkpoint``: ``committedIndex``/``endIndex``; ``currterm``: ``currTerm``/``voteLeader``).
The layouts are :mod:`rocketpy.codecs.dledger`'s.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..codecs.dledger import (
    INDEX_UNIT_SIZE,
    DLedgerEntry,
    IndexUnit,
    iter_data_entries,
    iter_index_units,
)
from ..codecs.errors import CodecError
from ..javacompat import properties

__all__ = ["DLedgerLedger", "LedgerState", "find_ledger_dirs", "ledger_state"]

DATA_DIR = "data"
INDEX_DIR = "index"
CHECKPOINT_FILE = "checkpoint"
TERM_FILE = "currterm"


@dataclass(frozen=True, slots=True)
class LedgerState:
    """What the two properties files say (-1 / 0 / None where a file or key is missing)."""

    committed_index: int
    end_index: int
    current_term: int
    vote_leader: str | None


def _int(props: dict[str, str], key: str, default: int) -> int:
    raw = props.get(key, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise CodecError(f"{key}={raw!r} is not a number") from None


def _props(path: Path) -> dict[str, str]:
    return properties.load_file(path) if path.is_file() else {}


def ledger_state(ledger_dir: str | os.PathLike[str]) -> LedgerState:
    """What ``checkpoint`` and ``currterm`` of a member's ledger directory say (MemberState.loadTerm and
    DLedgerMmapFileStore's checkpoint read); CodecError where a number is not one."""
    path = Path(ledger_dir)
    cp = _props(path / CHECKPOINT_FILE)
    term = _props(path / TERM_FILE)
    return LedgerState(
        committed_index=_int(cp, "committedIndex", -1),
        end_index=_int(cp, "endIndex", -1),
        current_term=_int(term, "currTerm", 0),
        vote_leader=term.get("voteLeader") or None,
    )


def _files(directory: Path) -> list[tuple[int, Path]]:
    """The directory's files named by their 20-digit start offset, in offset order."""
    if not directory.is_dir():
        return []
    out = []
    for p in directory.iterdir():
        if p.is_file() and len(p.name) == 20 and p.name.isdigit():
            out.append((int(p.name), p))
    return sorted(out)


def _read(path: Path) -> bytes | mmap.mmap:
    size = path.stat().st_size
    if size == 0:
        return b""
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


class DLedgerLedger:
    """One member's ledger directory (``dledger-<selfId>``)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if not (self.path / DATA_DIR).is_dir():
            raise FileNotFoundError(f"{self.path} is not a DLedger ledger: no {DATA_DIR}/ directory")

    @property
    def self_id(self) -> str:
        name = self.path.name
        return name[len("dledger-") :] if name.startswith("dledger-") else name

    def state(self) -> LedgerState:
        return ledger_state(self.path)

    def entries(self) -> Iterator[DLedgerEntry]:
        """Every entry of the data files in ledger order; CodecError where a file is damaged
        (an entry that does not decode, or one whose ``pos`` is not where it sits)."""
        for start, p in _files(self.path / DATA_DIR):
            data = _read(p)
            try:
                yield from iter_data_entries(data, start)
            finally:
                if isinstance(data, mmap.mmap):
                    data.close()

    def index_units(self) -> Iterator[IndexUnit]:
        """Every written index unit, in entry order (unit ``i`` describes entry ``i``)."""
        for start, p in _files(self.path / INDEX_DIR):
            if start % INDEX_UNIT_SIZE:
                raise CodecError(f"index file {p.name} does not start on a unit")
            data = _read(p)
            try:
                yield from iter_index_units(data)
            finally:
                if isinstance(data, mmap.mmap):
                    data.close()

    def check(self) -> list[str]:
        """Disagreements between the data files, the index and the checkpoint (empty: consistent)."""
        problems: list[str] = []
        units = {u.index: u for u in self.index_units()}
        last = -1
        try:
            for e in self.entries():
                if e.index != last + 1:
                    problems.append(f"entry {e.index} at {e.pos} follows entry {last}")
                last = e.index
                u = units.get(e.index)
                if u is None:
                    problems.append(f"entry {e.index} has no index unit")
                elif (u.pos, u.size, u.term, u.magic) != (e.pos, e.entry_size, e.term, e.magic):
                    problems.append(f"index unit {e.index} says pos {u.pos} size {u.size} term {u.term}")
        except CodecError as exc:
            problems.append(f"data: {exc}")
        state = self.state()
        if state.end_index > last:
            problems.append(f"checkpoint endIndex {state.end_index} is past the last entry {last}")
        if state.committed_index > state.end_index:
            problems.append(f"committedIndex {state.committed_index} is past endIndex {state.end_index}")
        return problems


def find_ledger_dirs(store: str | os.PathLike[str]) -> list[Path]:
    """The ``dledger-*`` ledgers under a broker's store directory (one per member, normally)."""
    root = Path(store)
    return sorted(p for p in root.glob("dledger-*") if (p / DATA_DIR).is_dir())
