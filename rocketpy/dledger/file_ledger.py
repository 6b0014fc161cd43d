"""A member's ledger on disk, laid out as DLedgerMmapFileStore lays it (``<storePath>/dledger-<selfId>/``).

``data/``: entries back to back in files of ``mappedFileSizeCommitLog`` bytes; an entry that does not
fit (with room for an 8-byte blank after it) starts the next file, the rest of the current one padded
with a blank (magic -1 and the blank's size). ``index/``: one 32-byte unit an entry in files of
``32 * 5 * 1024 * 1024`` bytes (DLedgerConfig.mappedFileSizeForEntryIndex, which RocketMQ 4.9.8 does not
set). ``checkpoint`` (committedIndex, endIndex) and ``currterm`` (voteLeader, currTerm) are written as
IOUtils.string2File writes them: the previous content to ``.bak``, the new through ``.tmp``.

Recovery is DLedgerMmapFileStore.recover: start at the third file from the end whose first entry agrees
with the index, walk forward checking each entry (position, sizes, consecutive indexes, terms never
decreasing), rewrite index units that disagree, and cut both files after the last good entry: an
unfinished tail left by kill -9 goes, a written entry never does.

Files are mapped through :class:`rocketpy.store.mapped_file.MappedFileQueue`, the store's own.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ..codecs.dledger import (
    BLANK_MAGIC,
    CURRENT_MAGIC,
    DLEDGER_BLANK_HEAD,
    ENTRY_HEADER_SIZE,
    INDEX_UNIT_SIZE,
    MIN_BLANK_LEN,
    DLedgerEntry,
    DLedgerResponseCode,
    IndexUnit,
)
from ..codecs.errors import CodecError
from ..store.dledger_ledger import CHECKPOINT_FILE, TERM_FILE, LedgerState, ledger_state
from ..store.mapped_file import MappedFile, MappedFileQueue
from .ledger import LedgerError

__all__ = ["INDEX_FILE_SIZE", "FileLedger", "write_properties_file"]

log = logging.getLogger("rocketpy.dledger")

#: DLedgerConfig.mappedFileSizeForEntryIndex; Java refuses index files of another length
INDEX_FILE_SIZE = INDEX_UNIT_SIZE * 5 * 1024 * 1024
DATA_CHUNK = 4 << 20
INDEX_CHUNK = 1 << 20


def write_properties_file(path: Path, pairs: list[tuple[str, str]]) -> None:
    """IOUtils.string2File: ``key=value`` lines (in Java's Hashtable order, given by the caller) to
    ``.tmp``, the previous content to ``.bak``, then the rename; fsynced so a crash leaves one whole."""
    text = "".join(f"{k}={v}\n" for k, v in pairs)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    if path.exists():
        bak = path.with_name(path.name + ".bak")
        with open(bak, "w", encoding="utf-8") as f:
            f.write(path.read_text(encoding="utf-8"))
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)


class FileLedger:
    """The on-disk ledger; the :class:`rocketpy.dledger.ledger.Ledger` contract."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        data_file_size: int,
        index_file_size: int = INDEX_FILE_SIZE,
        *,
        data_path: str | os.PathLike[str] | None = None,
    ):
        """``data_path``: where ``data/`` is when not under ``path`` (DLedgerConfig.dataStorePath, which the
        broker sets from storePathDLedgerCommitLog)."""
        if data_file_size < ENTRY_HEADER_SIZE + MIN_BLANK_LEN:
            raise ValueError(f"data file size {data_file_size} cannot hold an entry")
        self.path = Path(path)
        data_dir = Path(data_path) if data_path is not None else self.path / "data"
        # blocks allocated a chunk ahead of the writes, as the CommitLog's (a full disk is an error, not SIGBUS)
        self.data = MappedFileQueue(str(data_dir), data_file_size, allocation_chunk=DATA_CHUNK)
        self.index = MappedFileQueue(str(self.path / "index"), index_file_size, allocation_chunk=INDEX_CHUNK)
        self.begin_index = -1
        self.end_index = -1
        self.end_term = -1
        self.committed_index = -1
        #: where the committed entries end in the data files (DLedgerMmapFileStore.committedPos)
        self.committed_pos = 0

    # -- loading -----------------------------------------------------------------------------------
    def load(self) -> None:
        """Map the files and recover; then the committed index from ``checkpoint``."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.data.load()
        self.index.load()
        self._recover()
        self.update_committed_index(-1, _state(self.path).committed_index)

    def _unit(self, index: int) -> IndexUnit | None:
        mf = self.index.find_by_offset(index * INDEX_UNIT_SIZE)
        if mf is None:
            return None
        at = index * INDEX_UNIT_SIZE - mf.file_from_offset
        if at < 0 or mf.file_size - at < INDEX_UNIT_SIZE:
            return None
        return IndexUnit.decode(mf.mm, at)

    def _entry_at(self, mf: MappedFile, rel: int) -> DLedgerEntry | None:
        """The entry at ``rel`` in ``mf`` if one is written there and sits where it says."""
        if mf.file_size - rel < ENTRY_HEADER_SIZE:
            return None
        try:
            entry = DLedgerEntry.decode(mf.mm, rel)
        except CodecError:
            return None
        if entry.magic != CURRENT_MAGIC or entry.pos != mf.file_from_offset + rel:
            return None
        return entry

    def _recover(self) -> None:
        files = self.data.files
        if not files:
            self.index.truncate_dirty_files(0, zero_tail=True)
            return
        start = max(0, len(files) - 3)
        for i in range(start, -1, -1):
            first = self._entry_at(files[i], 0)
            unit = self._unit(first.index) if first is not None else None
            if first is not None and unit is not None and (unit.pos, unit.size, unit.term) == (
                first.pos, first.entry_size, first.term
            ):
                start = i
                break
        last_index, last_term = -1, -1
        process = files[start].file_from_offset
        index_ok = True
        i, rel = start, 0
        while i < len(files):
            mf = files[i]
            if mf.file_size - rel >= 4 and int.from_bytes(mf.mm[rel : rel + 4], "big", signed=True) == BLANK_MAGIC:
                i, rel = i + 1, 0
                process = mf.file_from_offset + mf.file_size
                continue
            entry = self._entry_at(mf, rel)
            if entry is None or (last_index != -1 and entry.index != last_index + 1) or entry.term < last_term:
                break
            if index_ok:
                unit = self._unit(entry.index)
                if unit is None or (unit.magic, unit.pos, unit.size, unit.index, unit.term) != (
                    entry.magic, entry.pos, entry.entry_size, entry.index, entry.term
                ):
                    log.warning("%s: index unit %d disagrees with the data: rebuilding it on", self.path, entry.index)
                    self.index.truncate_dirty_files(entry.index * INDEX_UNIT_SIZE, zero_tail=True)
                    index_ok = False
            if not index_ok:
                self._write_unit(entry)
            last_index, last_term = entry.index, entry.term
            rel += entry.entry_size
            process = mf.file_from_offset + rel
        dropped = self.data.truncate_dirty_files(process, zero_tail=True)
        self.data.flushed_where = process  # what recovery read is on disk (the store's CommitLog recovery's rule)
        if dropped:
            log.warning("%s: an unfinished entry after offset %d was cut (%d bytes)", self.path, process, dropped)
        self.index.truncate_dirty_files((last_index + 1) * INDEX_UNIT_SIZE, zero_tail=True)
        self.end_index, self.end_term = last_index, last_term
        self.revise_begin()

    def revise_begin(self) -> None:
        """The first index from the first data file (after recovery, a truncation or a deletion)."""
        first = self.data.first_file()
        entry = self._entry_at(first, 0) if first is not None and first.wrote_position else None
        self.begin_index = entry.index if entry is not None else (self.end_index if self.end_index >= 0 else -1)

    def start_at(self, offset: int) -> None:
        """Make the first data file at ``offset`` (an empty ledger taking over a plain CommitLog that ends
        there: MmapFileList.getLastMappedFile(dividedCommitlogOffset)); the first entry is written there."""
        if self.data.files:
            raise LedgerError(DLedgerResponseCode.DISK_ERROR, f"{self.path}: the ledger already has data files")
        self.data.get_last_mapped_file(offset)
        self.data.flushed_where = offset

    # -- reading -----------------------------------------------------------------------------------
    def get(self, index: int) -> DLedgerEntry | None:
        if index < 0 or index > self.end_index or index < self.begin_index:
            return None
        unit = self._unit(index)
        if unit is None or unit.magic == 0:
            return None
        mf = self.data.find_by_offset(unit.pos)
        if mf is None:
            return None
        return self._entry_at(mf, unit.pos - mf.file_from_offset)

    @property
    def max_wrote_position(self) -> int:
        return self.data.max_offset

    # -- writing -----------------------------------------------------------------------------------
    def _pre_append(self, size: int) -> MappedFile:
        """The file the next entry of ``size`` bytes goes in (MmapFileList.preAppend with a blank)."""
        mf = self.data.get_last_mapped_file(0)
        if mf is None:
            raise LedgerError(DLedgerResponseCode.DISK_ERROR, "no data file")
        if size + MIN_BLANK_LEN > mf.file_size:
            raise LedgerError(DLedgerResponseCode.DISK_ERROR, f"an entry of {size} bytes exceeds a data file")
        if size + MIN_BLANK_LEN > mf.file_size - mf.wrote_position:
            rest = mf.file_size - mf.wrote_position
            mf.append(DLEDGER_BLANK_HEAD.build({"size": rest}) + bytes(rest - MIN_BLANK_LEN))
            mf = self.data.get_last_mapped_file(0)
            if mf is None:
                raise LedgerError(DLedgerResponseCode.DISK_ERROR, "no data file")
        return mf

    def _write(self, entry: DLedgerEntry) -> DLedgerEntry:
        try:
            return self._write_entry(entry)
        except OSError as exc:  # the blocks could not be allocated: Java's appends answer DISK_FULL
            raise LedgerError(DLedgerResponseCode.DISK_FULL, f"entry {entry.index}: {exc}") from None

    def _write_entry(self, entry: DLedgerEntry) -> DLedgerEntry:
        raw = entry.encode()
        mf = self._pre_append(len(raw))
        pos = mf.file_from_offset + mf.wrote_position
        if pos != entry.pos:
            raise LedgerError(DLedgerResponseCode.DISK_ERROR, f"entry {entry.index} at {pos}, not {entry.pos}")
        if not mf.append(raw):
            raise LedgerError(DLedgerResponseCode.DISK_ERROR, f"entry {entry.index} does not fit")
        self._write_unit(entry)
        self.end_index, self.end_term = entry.index, entry.term
        if self.begin_index == -1:
            self.begin_index = entry.index
        return entry

    def _write_unit(self, entry: DLedgerEntry) -> None:
        offset = entry.index * INDEX_UNIT_SIZE
        mf = self.index.get_last_mapped_file(offset)
        if mf is None or mf.file_from_offset + mf.wrote_position != offset or not mf.append(
            IndexUnit(entry.magic, entry.pos, entry.entry_size, entry.index, entry.term).encode()
        ):
            raise LedgerError(DLedgerResponseCode.DISK_ERROR, f"index unit {entry.index} not at {offset}")

    def append_as_leader(self, body: bytes, term: int) -> DLedgerEntry:
        size = ENTRY_HEADER_SIZE + len(body)
        mf = self._pre_append(size)
        pos = mf.file_from_offset + mf.wrote_position
        return self._write(DLedgerEntry(index=self.end_index + 1, term=term, pos=pos, body=body))

    def next_pos(self, size: int) -> int:
        """Where an entry of ``size`` bytes appended now starts (after any blank it forces)."""
        mf = self.data.last_file()
        if mf is None:
            return 0
        if size + MIN_BLANK_LEN > mf.file_size - mf.wrote_position:
            return mf.file_from_offset + mf.file_size
        return mf.file_from_offset + mf.wrote_position

    def append_as_follower(self, entry: DLedgerEntry) -> DLedgerEntry:
        if entry.index != self.end_index + 1:
            raise LedgerError(DLedgerResponseCode.INCONSISTENT_INDEX, f"{entry.index} after {self.end_index}")
        return self._write(entry)

    def truncate(self, entry: DLedgerEntry) -> int:
        same = entry.same(self.get(entry.index))
        cut = entry.pos + entry.entry_size if same else entry.pos
        self.data.truncate_dirty_files(cut, zero_tail=True)
        self.index.truncate_dirty_files(entry.index * INDEX_UNIT_SIZE, zero_tail=True)
        self.end_index = entry.index - 1
        if same:
            self._write_unit(entry)
            self.end_index, self.end_term = entry.index, entry.term
        else:
            self._write(entry)
        self.revise_begin()
        return entry.index

    def update_committed_index(self, term: int, index: int) -> None:
        if index == -1 or self.end_index == -1 or index <= self.committed_index or index < self.begin_index:
            return
        index = min(index, self.end_index)
        unit = self._unit(index)
        if unit is None:
            raise LedgerError(DLedgerResponseCode.DISK_ERROR, f"no index unit for committed entry {index}")
        self.committed_index = index
        self.committed_pos = unit.pos + unit.size

    # -- durability --------------------------------------------------------------------------------
    def flush(self) -> None:
        """Everything written to disk (across files: each flush call covers one)."""
        for files in (self.data, self.index):
            files.flush_until(files.max_offset)

    def persist_checkpoint(self) -> None:
        """``checkpoint`` as Java writes it (Hashtable order: committedIndex, then endIndex)."""
        write_properties_file(
            self.path / CHECKPOINT_FILE,
            [("committedIndex", str(self.committed_index)), ("endIndex", str(self.end_index))],
        )

    def close(self) -> None:
        self.data.close()
        self.index.close()


def persist_term(ledger_dir: str | os.PathLike[str], term: int, vote_for: str | None) -> None:
    """``currterm`` as MemberState.persistTerm writes it (Hashtable order: voteLeader, then currTerm)."""
    write_properties_file(Path(ledger_dir) / TERM_FILE, [("voteLeader", vote_for or ""), ("currTerm", str(term))])


def load_term(ledger_dir: str | os.PathLike[str]) -> tuple[int, str | None]:
    """MemberState.loadTerm: (currTerm, voteLeader); (0, None) without the file."""
    state = _state(ledger_dir)
    return state.current_term, state.vote_leader


def _state(ledger_dir: str | os.PathLike[str]) -> LedgerState:
    try:
        return ledger_state(ledger_dir)
    except CodecError as exc:
        raise LedgerError(DLedgerResponseCode.DISK_ERROR, f"{ledger_dir}: {exc}") from None
