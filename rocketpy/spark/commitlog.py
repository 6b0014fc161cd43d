"""CommitLog files as rows: one per message record, plus one per damaged stretch.

The walk is :func:`rocketpy.codecs.store_records.iter_commitlog` (the broker's recovery
walk). Where that walk stops on damage or on a zero-filled gap, forensic reading goes
on: it searches forward for the next record that is consistent with its own position
(its stored physical offset equals where it sits) and reports the skipped bytes as a
``corrupt`` row, so one bad record does not hide everything after it.
"""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..codecs.errors import CodecError
from ..codecs.message import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, MessageExt, body_crc, decode_message
from ..codecs.store_records import BlankRecord, iter_commitlog
from ._columns import BatchBuilder, ms_to_us
from ._files import mapped

__all__ = [
    "COMMITLOG_COLUMNS",
    "CommitLogOptions",
    "CorruptRegion",
    "commitlog_batches",
    "walk_commitlog",
]

COMMITLOG_COLUMNS: list[tuple[str, str]] = [
    ("file", "string"),
    ("record_type", "string"),  # "message" or "corrupt" (bytes that are no record)
    ("commit_log_offset", "long"),  # where the record sits (file start + position)
    ("store_size", "int"),  # for a corrupt row: how many bytes were skipped
    ("topic", "string"),
    ("queue_id", "int"),
    ("queue_offset", "long"),
    ("msg_id", "string"),  # the offset msg id (store host + offset)
    ("uniq_key", "string"),  # the client-made id (UNIQ_KEY)
    ("tags", "string"),
    ("keys", "strings"),
    ("properties", "map"),
    ("body_crc", "int"),
    ("crc_ok", "bool"),  # null when CRC checking is off
    ("flag", "int"),
    ("physical_offset", "long"),  # the offset field as stored; differs from commit_log_offset if damaged
    ("sys_flag", "int"),
    ("transaction_type", "int"),  # 0 not, 4 prepared, 8 commit, 12 rollback
    ("compressed", "bool"),
    ("born_timestamp", "long"),
    ("born_time", "timestamp"),
    ("born_host", "string"),
    ("store_timestamp", "long"),
    ("store_time", "timestamp"),
    ("store_host", "string"),
    ("reconsume_times", "int"),
    ("prepared_transaction_offset", "long"),
    ("body_size", "int"),
    ("body", "binary"),
    ("error", "string"),
]

# Bytes each kind of read touched in this process (the benchmark's count of what a plan reads).
READ_STATS: Counter[str] = Counter()

_MSG_MAGIC = struct.pack(">i", MESSAGE_MAGIC_CODE)
_BLANK_MAGIC = struct.pack(">i", BLANK_MAGIC_CODE)
_INT32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class CorruptRegion:
    """Bytes between two good records (or up to the last written byte) that hold no valid record."""

    offset: int  # absolute CommitLog offset
    length: int
    reason: str


def _option(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name.lower())
    return default if raw is None else raw.strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True, slots=True)
class CommitLogOptions:
    """Reader options (``.option(name, value)``, names case-insensitive)."""

    check_crc: bool = True  # checkCrc: compute each body's CRC against the stored one
    decompress: bool = False  # decompress: give the inflated body instead of the stored bytes
    include_body: bool = True  # includeBody: false leaves body null (faster scans)
    resync: bool = True  # resync: go on past damage to the next consistent record

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> CommitLogOptions:
        lowered = {k.lower(): v for k, v in options.items()}
        return cls(
            check_crc=_option(lowered, "checkCrc", True),
            decompress=_option(lowered, "decompress", False),
            include_body=_option(lowered, "includeBody", True),
            resync=_option(lowered, "resync", True),
        )


def _record_at(buf: Any, pos: int, base: int) -> bool:
    """Whether a message record that knows its own position starts at ``pos``."""
    try:
        msg = decode_message(buf, pos, decompress=False)
    except CodecError:
        return False
    return msg.commit_log_offset == base + pos


def _next_good(buf: Any, start: int, base: int) -> int | None:
    """The first position >= ``start`` holding a self-consistent record or the file's closing blank."""
    n = len(buf)
    found: int | None = None
    search = start + 4
    while True:
        i = buf.find(_MSG_MAGIC, search)
        if i < 0:
            break
        if _record_at(buf, i - 4, base):
            found = i - 4
            break
        search = i + 1
    search = start + 4
    while True:
        i = buf.find(_BLANK_MAGIC, search, found + 4 if found is not None else n)
        if i < 0:
            break
        (size,) = _INT32.unpack_from(buf, i - 4)
        if size == n - (i - 4):  # a blank always runs to the end of the file
            return i - 4
        search = i + 1
    return found


def _last_written(buf: Any, start: int) -> int:
    """One past the last non-zero byte at or after ``start`` (scanned backwards in chunks)."""
    end = len(buf)
    chunk = 1 << 20
    while end > start:
        lo = max(start, end - chunk)
        piece = buf[lo:end].rstrip(b"\x00")
        if piece:
            return lo + len(piece)
        end = lo
    return start


def _sync_quality(buf: Any, pos: int, base: int) -> bool:
    """Whether a split may start at ``pos``: a record that knows its own position and whose
    body CRC agrees (stricter than resync's test, so a split never starts on a look-alike)."""
    try:
        msg = decode_message(buf, pos, decompress=False)
    except CodecError:
        return False
    return msg.commit_log_offset == base + pos and (not msg.body or body_crc(msg.body) == msg.body_crc)


def split_start(buf: Any, base: int, start: int, end: int) -> int | None:
    """Where the split ``[start, end)`` of a file begins reading: the first record at or after
    ``start`` (and before ``end``) that passes :func:`_sync_quality`, or the file's closing
    blank; None when the split holds no such place (the split before it reads through)."""
    if start == 0:
        return 0
    n = len(buf)
    # A record starting just before ``end`` has its magic (bytes 4 to 8) just after it.
    limit = min(n, end + 8)
    found: int | None = None
    search = start + 4
    while (i := buf.find(_MSG_MAGIC, search, limit)) >= 0:
        if i - 4 < end and _sync_quality(buf, i - 4, base):
            found, limit = i - 4, i  # a blank can only come first if it is before this
            break
        search = i + 1
    search = start + 4
    while (i := buf.find(_BLANK_MAGIC, search, limit)) >= 0:
        (size,) = _INT32.unpack_from(buf, i - 4)
        if i - 4 < end and size == n - (i - 4):  # a blank always runs to the end of the file
            return i - 4
        search = i + 1
    return found


def walk_commitlog(
    buf: Any, base: int, *, resync: bool = True, start: int = 0, end: int | None = None, exact_start: bool = False
) -> Iterator[tuple[int, MessageExt] | CorruptRegion]:
    """(absolute offset, record) for each record of one CommitLog file, damage as regions.

    The blank that closes a file is skipped. The offset is where the record was found,
    which in a damaged file need not equal the physical offset stored inside it.

    ``buf`` must support ``find`` and slicing (an ``mmap`` or ``bytes``). Record CRCs
    are not checked here: a CRC failure is a property of a record, not a break in the walk.

    With ``start``/``end`` (file positions) only the split ``[start, end)`` is read: the
    walk begins at :func:`split_start` and goes past ``end`` up to the first record where
    the next split begins, so the splits of a file together give exactly its rows.
    ``exact_start`` says ``start`` is a record boundary already (no search).
    """
    n = len(buf)
    if exact_start:
        pos = start  # a known record boundary (the start of the file, a dispatch point)
    elif start or end is not None:
        first = split_start(buf, base, start, n if end is None else end)
        if first is None:
            return
        pos = first
    else:
        pos = 0
    if end is None or end >= n:
        end = None
    while pos < n:
        view = memoryview(buf)[pos:]
        walk = iter_commitlog(view, base + pos, check_crc=False, decompress=False, strict=False)
        try:
            for item in walk:
                if not isinstance(item, BlankRecord):
                    # end_offset has just moved past this record
                    at = walk.end_offset - item.store_size
                    if end is not None and at - base >= end and _sync_quality(buf, at - base, base):
                        return  # the next split begins here
                    yield at, item
            stop = walk.end_offset - base
            reason = walk.end_reason
            error = walk.error
        finally:
            del walk  # it holds the view; drop it so the mapping can be closed later
            view.release()
        if reason in ("blank", "end-of-buffer"):
            return
        # "zero" (an unwritten stretch) or "corrupt": is there a good record further on?
        nxt = _next_good(buf, stop, base) if resync else None
        # The codec counts from the start of the view it was given: say where in the file.
        error_text = (
            error.reason.replace(f"offset {stop - pos}", f"offset {base + stop}", 1) if error is not None else None
        )
        if nxt is None:
            if reason == "corrupt":
                last = _last_written(buf, stop)
                yield CorruptRegion(base + stop, max(last - stop, 1), error_text or "corrupt")
            return
        why = (
            error_text
            if reason == "corrupt" and error_text is not None
            else f"zero-filled gap before the record at {base + nxt}"
        )
        yield CorruptRegion(base + stop, nxt - stop, why)
        pos = nxt


def _message_row(path: str, at: int, msg: MessageExt, opts: CommitLogOptions) -> tuple[list[Any], int]:
    error: str | None = None
    crc_ok: bool | None = None
    if opts.check_crc:
        # As CommitLog.checkMessageAndReturnSize: only a non-empty body is checked.
        crc_ok = not msg.body or body_crc(msg.body) == msg.body_crc
    body: bytes | None = msg.body
    if opts.decompress and msg.is_compressed and msg.body:
        try:
            body = msg.decompressed_body()
        except CodecError as exc:
            error = str(exc)
    try:
        msg_id: str | None = msg.msg_id
    except CodecError as exc:
        msg_id, error = None, error or str(exc)
    size = len(body) if body is not None else 0
    row = [
        path,
        "message",
        at,
        msg.store_size,
        msg.topic,
        msg.queue_id,
        msg.queue_offset,
        msg_id,
        msg.uniq_key,
        msg.tags,
        msg.keys,
        msg.properties,
        msg.body_crc,
        crc_ok,
        msg.flag,
        msg.commit_log_offset,
        msg.sys_flag,
        msg.transaction_type,
        msg.is_compressed,
        msg.born_timestamp,
        ms_to_us(msg.born_timestamp),
        msg.born_host,
        msg.store_timestamp,
        ms_to_us(msg.store_timestamp),
        msg.store_host,
        msg.reconsume_times,
        msg.prepared_transaction_offset,
        size,
        body if opts.include_body else None,
        error,
    ]
    return row, size if opts.include_body else 0


def _corrupt_row(path: str, region: CorruptRegion) -> list[Any]:
    row: list[Any] = [None] * len(COMMITLOG_COLUMNS)
    row[0], row[1], row[2], row[3] = path, "corrupt", region.offset, region.length
    row[-1] = region.reason
    return row


def commitlog_records_batches(
    path: str, base: int, positions: Iterable[int], options: CommitLogOptions | None = None, max_rows: int = 4096
) -> Iterator[pa.RecordBatch]:
    """Rows of the records at the given file ``positions`` only (found through a ConsumeQueue,
    an IndexFile or a message id). A position holding no record that knows its own place is
    skipped: the reference that led here is stale or damaged, not the CommitLog."""
    opts = options or CommitLogOptions()
    builder = BatchBuilder(COMMITLOG_COLUMNS, max_rows=max_rows)
    with mapped(path) as buf:
        for pos in sorted(set(positions)):
            if not 0 <= pos < len(buf):
                continue
            try:
                msg = decode_message(buf, pos, decompress=False)
            except CodecError:
                continue
            if msg.commit_log_offset != base + pos:
                continue
            READ_STATS["bytes"] += msg.store_size
            row, payload = _message_row(path, base + pos, msg, opts)
            batch = builder.add(row, payload)
            if batch is not None:
                yield batch
    last = builder.flush()
    if last is not None:
        yield last


def commitlog_batches(
    path: str,
    base: int,
    options: CommitLogOptions | None = None,
    max_rows: int = 4096,
    start: int = 0,
    end: int | None = None,
    exact_start: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the rows of one CommitLog file starting at CommitLog offset ``base``
    (only of the split ``[start, end)`` of it when given: see :func:`walk_commitlog`)."""
    opts = options or CommitLogOptions()
    builder = BatchBuilder(COMMITLOG_COLUMNS, max_rows=max_rows)
    with mapped(path) as buf:
        READ_STATS["bytes"] += (len(buf) if end is None else min(end, len(buf))) - start
        walk = walk_commitlog(buf, base, resync=opts.resync, start=start, end=end, exact_start=exact_start)
        for item in walk:
            if isinstance(item, CorruptRegion):
                batch = builder.add(_corrupt_row(path, item))
            else:
                row, payload = _message_row(path, item[0], item[1], opts)
                batch = builder.add(row, payload)
            if batch is not None:
                yield batch
    last = builder.flush()
    if last is not None:
        yield last
