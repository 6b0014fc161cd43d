"""The broker's store files, record by record: CommitLog, ConsumeQueue, IndexFile, checkpoint.

Layouts are declared with ``construct`` (the message record itself lives in
:mod:`rocketpy.codecs.message`); the dataclasses are typed views. Walkers take any
buffer (bytes, mmap, memoryview) covering one mapped file and never copy it whole.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, NoReturn

from construct import Const, Int32sb, Int64sb, Padding, Struct

from ..javacompat.lang import java_string_hash
from .errors import CONSTRUCT_ERRORS as _CONSTRUCT_ERRORS
from .errors import CodecError
from .message_types import MessageExt
from .record import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, MESSAGE_RECORD, decode_message
from .units import struct_unit

#: what the store's readers accept: file bytes, or the store's own memory maps
StoreBuffer = bytes | bytearray | memoryview | mmap.mmap

__all__ = [
    "BLANK_RECORD",
    "CHECKPOINT",
    "CHECKPOINT_FILE_SIZE",
    "CONSUME_QUEUE_ENTRY",
    "CQ_STORE_UNIT_SIZE",
    "INDEX_ENTRY",
    "INDEX_ENTRY_SIZE",
    "INDEX_HASH_SLOT_SIZE",
    "INDEX_HASH_SLOT_UNIT",
    "INDEX_HEADER",
    "INDEX_HEADER_SIZE",
    "MESSAGE_RECORD",
    "BlankRecord",
    "CommitLogCorruption",
    "CommitLogWalk",
    "ConsumeQueueEntry",
    "IndexEntry",
    "IndexFileView",
    "IndexHeader",
    "StoreCheckpoint",
    "build_blank_record",
    "build_checkpoint",
    "build_consumequeue_entry",
    "build_index_header",
    "index_key",
    "index_key_hash",
    "iter_commitlog",
    "iter_consumequeue",
    "parse_checkpoint",
    "parse_consumequeue_entry",
]

_INT_MAX = 0x7FFFFFFF

# ---------------------------------------------------------------------------
# CommitLog
# ---------------------------------------------------------------------------

BLANK_RECORD = Struct(
    "total_size" / Int32sb,  # the bytes left in the file from here, the blank included
    "magic_code" / Const(BLANK_MAGIC_CODE, Int32sb),
)
"""The end-of-file filler: only these 8 bytes are written, the rest of the file is left as is."""
#: total size and magic code: the head of a message record as of a blank
_SIZE_MAGIC = struct_unit(BLANK_RECORD)

END_FILE_MIN_BLANK_LENGTH = 8


@dataclass(frozen=True, slots=True)
class BlankRecord:
    """The blank that ends a CommitLog file when the next message did not fit."""

    offset: int  # absolute CommitLog offset of the blank
    size: int  # declared size: up to the end of the file


class CommitLogCorruption(CodecError):
    """A CommitLog file holds bytes that are not a valid record at ``offset`` (absolute)."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"CommitLog corrupt at offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason


EndReason = Literal["zero", "blank", "end-of-buffer", "corrupt"]


class CommitLogWalk(Iterator["MessageExt | BlankRecord"]):
    """Walks the records of one CommitLog file, as broker recovery does.

    Yields each :class:`MessageExt` and, if present, the final :class:`BlankRecord`.
    The walk ends cleanly at a zero size-and-magic (the unwritten, zero-filled tail),
    after a blank, or at the end of the buffer. Anything else is corruption: with
    ``strict`` it raises :class:`CommitLogCorruption`; without, the walk just stops
    and records the error. Afterwards ``end_offset`` is the absolute offset just past
    the last good record: where Java's recovery would truncate.
    """

    def __init__(
        self,
        buf: StoreBuffer,
        file_start_offset: int = 0,
        *,
        check_crc: bool = False,
        decompress: bool = False,
        strict: bool = True,
    ) -> None:
        self._buf = buf
        self._base = file_start_offset
        self._pos = 0
        self._check_crc = check_crc
        self._decompress = decompress
        self._strict = strict
        self.end_offset = file_start_offset
        self.end_reason: EndReason | None = None
        self.error: CommitLogCorruption | None = None
        self.blank: BlankRecord | None = None
        self.records = 0

    def __iter__(self) -> CommitLogWalk:
        return self

    def _finish(self, reason: EndReason) -> NoReturn:
        self.end_reason = reason
        raise StopIteration

    def _corrupt(self, reason: str) -> NoReturn:
        err = CommitLogCorruption(self._base + self._pos, reason)
        self.error = err
        self.end_reason = "corrupt"
        if self._strict:
            raise err
        raise StopIteration

    def __next__(self) -> MessageExt | BlankRecord:
        if self.end_reason is not None:
            raise StopIteration
        buf, pos = self._buf, self._pos
        remaining = len(buf) - pos
        if remaining == 0:
            self._finish("end-of-buffer")
        if remaining < 8:
            # Java would read past the end and fail: a tail this short only matters if it holds data.
            if any(buf[pos:]):
                self._corrupt(f"{remaining} stray bytes at the end of the file")
            self._finish("end-of-buffer")
        size, magic = _SIZE_MAGIC.unpack_from(buf, pos)
        if magic == BLANK_MAGIC_CODE:
            if size < END_FILE_MIN_BLANK_LENGTH or size > remaining:
                self._corrupt(f"blank record declares size {size} with {remaining} bytes left")
            blank = BlankRecord(self._base + pos, size)
            self.blank = blank
            self.end_reason = "blank"
            return blank
        if magic != MESSAGE_MAGIC_CODE:
            if size == 0 and magic == 0:
                self._finish("zero")
            self._corrupt(f"bad magic code 0x{magic & 0xFFFFFFFF:08X}")
        try:
            msg = decode_message(buf, pos, check_crc=self._check_crc, decompress=self._decompress)
        except CodecError as exc:
            self._corrupt(str(exc))
        self._pos = pos + msg.store_size
        self.end_offset = self._base + self._pos
        self.records += 1
        return msg


def iter_commitlog(
    buf: StoreBuffer,
    file_start_offset: int = 0,
    *,
    check_crc: bool = False,
    decompress: bool = False,
    strict: bool = True,
) -> CommitLogWalk:
    """Iterate the records of one CommitLog file; see :class:`CommitLogWalk` for the end rules."""
    return CommitLogWalk(buf, file_start_offset, check_crc=check_crc, decompress=decompress, strict=strict)


def build_blank_record(size: int) -> bytes:
    """The 8 bytes Java writes to close a file with ``size`` bytes left."""
    return BLANK_RECORD.build({"total_size": size})


# ---------------------------------------------------------------------------
# ConsumeQueue
# ---------------------------------------------------------------------------

CQ_STORE_UNIT_SIZE = 20

CONSUME_QUEUE_ENTRY = Struct(
    "commit_log_offset" / Int64sb,
    "size" / Int32sb,
    "tags_code" / Int64sb,
)
"""One ConsumeQueue unit: where the message sits in the CommitLog, its size, its tags hash."""

# Walking a queue file is one tight loop over fixed 20-byte units; struct does it
# without per-entry construct overhead. The construct Struct stays the definition.
CONSUME_QUEUE_UNIT = struct_unit(CONSUME_QUEUE_ENTRY)
assert CONSUME_QUEUE_UNIT.size == CONSUME_QUEUE_ENTRY.sizeof() == CQ_STORE_UNIT_SIZE


@dataclass(frozen=True, slots=True)
class ConsumeQueueEntry:
    """A ConsumeQueue unit."""

    commit_log_offset: int
    size: int
    tags_code: int

    @property
    def is_valid(self) -> bool:
        """Java's test for a written unit: ``offset >= 0 && size > 0``."""
        return self.commit_log_offset >= 0 and self.size > 0

    @property
    def is_pre_blank(self) -> bool:
        """A filler unit (0, Integer.MAX_VALUE, 0) written before a queue's first real offset."""
        return self.commit_log_offset == 0 and self.size == _INT_MAX and self.tags_code == 0


def parse_consumequeue_entry(buf: StoreBuffer, offset: int = 0) -> ConsumeQueueEntry:
    """The unit at byte ``offset``."""
    if offset < 0 or offset + CQ_STORE_UNIT_SIZE > len(buf):
        raise CodecError(f"no ConsumeQueue unit at offset {offset}")
    return ConsumeQueueEntry(*CONSUME_QUEUE_UNIT.unpack_from(buf, offset))


def build_consumequeue_entry(commit_log_offset: int, size: int, tags_code: int) -> bytes:
    """The 20 bytes of one unit (CONSUME_QUEUE_UNIT is the fast form of CONSUME_QUEUE_ENTRY)."""
    try:
        return CONSUME_QUEUE_UNIT.pack(commit_log_offset, size, tags_code)
    except struct.error as exc:
        raise CodecError(f"cannot encode ConsumeQueue unit: {exc}") from None


def iter_consumequeue(buf: StoreBuffer) -> Iterator[ConsumeQueueEntry]:
    """The units of one ConsumeQueue file, up to the first unwritten one.

    Like ConsumeQueue.recover, a unit ends the walk unless ``offset >= 0 and
    size > 0``; pre-blank fillers pass that test and are yielded (see
    :attr:`ConsumeQueueEntry.is_pre_blank`). A partial unit at the end is ignored.
    """
    end = len(buf) - len(buf) % CQ_STORE_UNIT_SIZE
    for offset, size, tags_code in CONSUME_QUEUE_UNIT.iter_unpack(memoryview(buf)[:end]):
        if offset < 0 or size <= 0:
            return
        yield ConsumeQueueEntry(offset, size, tags_code)


# ---------------------------------------------------------------------------
# IndexFile
# ---------------------------------------------------------------------------

INDEX_HEADER_SIZE = 40
INDEX_HASH_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20
INVALID_INDEX = 0

INDEX_HEADER = Struct(
    "begin_timestamp" / Int64sb,
    "end_timestamp" / Int64sb,
    "begin_phy_offset" / Int64sb,
    "end_phy_offset" / Int64sb,
    "hash_slot_count" / Int32sb,
    "index_count" / Int32sb,
)
"""The 40-byte IndexFile header."""

INDEX_ENTRY = Struct(
    "key_hash" / Int32sb,
    "phy_offset" / Int64sb,
    "time_diff" / Int32sb,  # seconds since the header's begin_timestamp
    "prev_index" / Int32sb,  # the previous entry in the same slot's chain, 0 = none
)
"""One 20-byte IndexFile entry."""

INDEX_HEADER_UNIT = struct_unit(INDEX_HEADER)
#: one hash slot: the number of the newest entry whose key hashes there (0: none)
INDEX_HASH_SLOT_UNIT = struct.Struct(">i")
assert INDEX_HASH_SLOT_UNIT.size == INDEX_HASH_SLOT_SIZE
INDEX_ENTRY_UNIT = struct_unit(INDEX_ENTRY)
_INT32 = struct.Struct(">i")
assert INDEX_HEADER_UNIT.size == INDEX_HEADER.sizeof() == INDEX_HEADER_SIZE
assert INDEX_ENTRY_UNIT.size == INDEX_ENTRY.sizeof() == INDEX_ENTRY_SIZE


@dataclass(frozen=True, slots=True)
class IndexHeader:
    """IndexFile header fields."""

    begin_timestamp: int
    end_timestamp: int
    begin_phy_offset: int
    end_phy_offset: int
    hash_slot_count: int
    index_count: int


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """An IndexFile entry."""

    key_hash: int
    phy_offset: int
    time_diff: int
    prev_index: int


def build_index_header(header: IndexHeader) -> bytes:
    """The 40 header bytes."""
    try:
        return INDEX_HEADER.build(
            {
                "begin_timestamp": header.begin_timestamp,
                "end_timestamp": header.end_timestamp,
                "begin_phy_offset": header.begin_phy_offset,
                "end_phy_offset": header.end_phy_offset,
                "hash_slot_count": header.hash_slot_count,
                "index_count": header.index_count,
            }
        )
    except _CONSTRUCT_ERRORS as exc:
        raise CodecError(f"cannot encode IndexFile header: {exc}") from None


def index_key(topic: str, key: str) -> str:
    """The string IndexService indexes: ``topic#key`` (keys and UNIQ_KEY alike)."""
    return f"{topic}#{key}"


def index_key_hash(key: str) -> int:
    """IndexFile.indexKeyHashMethod: abs(String.hashCode), with abs(MIN_VALUE) mapped to 0."""
    h = abs(java_string_hash(key))
    # Java's Math.abs(Integer.MIN_VALUE) stays negative; the file then uses 0.
    return 0 if h > _INT_MAX else h


class IndexFileView:
    """Read access to one IndexFile: header, hash slots, entries, and key lookup.

    Sizes come from the broker config (maxHashSlotNum, maxIndexNum); Java's
    defaults are 5,000,000 and 20,000,000.
    """

    def __init__(
        self, buf: StoreBuffer, hash_slot_num: int = 5_000_000, index_num: int = 20_000_000
    ) -> None:
        if hash_slot_num <= 0 or index_num <= 0:
            raise CodecError("hash_slot_num and index_num must be positive")
        need = INDEX_HEADER_SIZE + hash_slot_num * INDEX_HASH_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE
        if len(buf) < need:
            raise CodecError(
                f"IndexFile is {len(buf)} bytes; {hash_slot_num} slots and {index_num} entries need {need}"
            )
        self._buf = buf
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self._entries_at = INDEX_HEADER_SIZE + hash_slot_num * INDEX_HASH_SLOT_SIZE
        self.header = IndexHeader(*INDEX_HEADER_UNIT.unpack_from(buf, 0))

    @property
    def index_count(self) -> int:
        """The header's count as IndexHeader.load sees it: at least 1 (entry 0 is never used)."""
        return max(self.header.index_count, 1)

    def slot(self, slot_pos: int) -> int:
        """The entry number a hash slot points at (0 = empty)."""
        if not 0 <= slot_pos < self.hash_slot_num:
            raise CodecError(f"slot {slot_pos} out of range")
        return _INT32.unpack_from(self._buf, INDEX_HEADER_SIZE + slot_pos * INDEX_HASH_SLOT_SIZE)[0]

    def entry(self, number: int) -> IndexEntry:
        """Entry ``number`` (1-based in practice; the file never writes entry 0)."""
        if not 0 <= number < self.index_num:
            raise CodecError(f"index entry {number} out of range")
        return IndexEntry(*INDEX_ENTRY_UNIT.unpack_from(self._buf, self._entries_at + number * INDEX_ENTRY_SIZE))

    def entries(self) -> Iterator[tuple[int, IndexEntry]]:
        """All written entries, as (number, entry), in write order."""
        for number in range(1, min(self.index_count, self.index_num)):
            yield number, self.entry(number)

    def is_time_matched(self, begin: int, end: int) -> bool:
        """IndexFile.isTimeMatched: does [begin, end] overlap the file's time range?"""
        h = self.header
        return (
            (begin < h.begin_timestamp and end > h.end_timestamp)
            or h.begin_timestamp <= begin <= h.end_timestamp
            or h.begin_timestamp <= end <= h.end_timestamp
        )

    def lookup(self, key: str, begin: int = 0, end: int = (1 << 63) - 1, max_num: int | None = None) -> list[int]:
        """CommitLog offsets indexed under ``key`` (an :func:`index_key`), newest first.

        Follows IndexFile.selectPhyOffset: walk the slot's chain, keep entries whose
        hash matches and whose time lies in [begin, end], stop at an invalid or
        self-referencing link or once entries are older than ``begin``. Hashes can
        collide, so callers check the records' keys.
        """
        found: list[int] = []
        key_hash = index_key_hash(key)
        count = self.index_count
        slot_value = self.slot(key_hash % self.hash_slot_num)
        if slot_value <= INVALID_INDEX or slot_value > count or count <= 1:
            return found
        begin_ts = self.header.begin_timestamp
        current = slot_value
        # A chain in a sound file visits each entry at most once; bound the walk so a
        # corrupt file with a cycle cannot loop forever.
        for _ in range(count):
            if max_num is not None and len(found) >= max_num:
                break
            if current >= self.index_num:
                break
            hash_read, phy_offset, time_diff, prev = INDEX_ENTRY_UNIT.unpack_from(
                self._buf, self._entries_at + current * INDEX_ENTRY_SIZE
            )
            if time_diff < 0:
                break
            time_read = begin_ts + time_diff * 1000
            if hash_read == key_hash and begin <= time_read <= end:
                found.append(phy_offset)
            if prev <= INVALID_INDEX or prev > count or prev == current or time_read < begin:
                break
            current = prev
        return found


# ---------------------------------------------------------------------------
# Checkpoint
# ---------------------------------------------------------------------------

CHECKPOINT_FILE_SIZE = 4096  # one OS page, mapped whole

CHECKPOINT = Struct(
    "physic_msg_timestamp" / Int64sb,
    "logics_msg_timestamp" / Int64sb,
    "index_msg_timestamp" / Int64sb,
    Padding(CHECKPOINT_FILE_SIZE - 24),
)
"""The ``checkpoint`` file: three store timestamps, then zeros to a 4 KiB page."""
_CHECKPOINT_TIMES = struct_unit(CHECKPOINT, 3)


@dataclass(frozen=True, slots=True)
class StoreCheckpoint:
    """Store timestamps of the last flushed CommitLog, ConsumeQueue and IndexFile data."""

    physic_msg_timestamp: int
    logics_msg_timestamp: int
    index_msg_timestamp: int

    @property
    def min_timestamp(self) -> int:
        """StoreCheckpoint.getMinTimestamp: min(physic, logics) less 3 s, not below 0."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)

    @property
    def min_timestamp_index(self) -> int:
        """StoreCheckpoint.getMinTimestampIndex: also bounded by the index timestamp."""
        return min(self.min_timestamp, self.index_msg_timestamp)


def parse_checkpoint(buf: StoreBuffer) -> StoreCheckpoint:
    """Read a checkpoint file; only its first 24 bytes carry data."""
    if len(buf) < 24:
        raise CodecError(f"checkpoint file is {len(buf)} bytes; it needs at least 24")
    return StoreCheckpoint(*_CHECKPOINT_TIMES.unpack_from(buf, 0))


def build_checkpoint(checkpoint: StoreCheckpoint) -> bytes:
    """The whole 4 KiB checkpoint file."""
    try:
        return CHECKPOINT.build(
            {
                "physic_msg_timestamp": checkpoint.physic_msg_timestamp,
                "logics_msg_timestamp": checkpoint.logics_msg_timestamp,
                "index_msg_timestamp": checkpoint.index_msg_timestamp,
            }
        )
    except _CONSTRUCT_ERRORS as exc:
        raise CodecError(f"cannot encode checkpoint: {exc}") from None
