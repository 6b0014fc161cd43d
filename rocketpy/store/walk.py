"""Forensic walk of one CommitLog file: every record, and each damaged stretch once.

The walk is :func:`rocketpy.codecs.store_records.iter_commitlog` (the broker's recovery
walk). Where that walk stops on damage or on a zero-filled gap, forensic reading goes
on: it searches forward for the next record that is consistent with its own position
(its stored physical offset equals where it sits) and reports the skipped bytes as one
:class:`CorruptRegion`, so one bad record does not hide everything after it. Used by
``rocketpy store check``/``dump`` and the Spark CommitLog source.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from ..codecs.errors import CodecError
from ..codecs.message import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, MessageExt, body_crc, decode_message
from ..codecs.store_records import BlankRecord, iter_commitlog

__all__ = ["CorruptRegion", "last_written", "split_start", "walk_commitlog", "written_end"]

_MSG_MAGIC = struct.pack(">i", MESSAGE_MAGIC_CODE)
_BLANK_MAGIC = struct.pack(">i", BLANK_MAGIC_CODE)
_INT32 = struct.Struct(">i")


@dataclass(frozen=True, slots=True)
class CorruptRegion:
    """Bytes between two good records (or up to the last written byte) that hold no valid record."""

    offset: int  # absolute CommitLog offset
    length: int
    reason: str


def _record_at(buf: Any, pos: int, base: int) -> bool:
    """Whether a message record that knows its own position starts at ``pos``."""
    try:
        msg = decode_message(buf, pos, decompress=False)
    except CodecError:
        return False
    return msg.commit_log_offset == base + pos


def written_end(path: str) -> int:
    """One past the last byte of the file that is not a hole (the file size where holes are unknown).

    A CommitLog file is created at its full size (1 GiB) and filled from the front: past the
    written end there is nothing to scan, and reading the holes would still cost the full size.
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if not hasattr(os, "SEEK_DATA"):
            return size
        end = pos = 0
        while pos < size:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole is left
                return end
            pos = os.lseek(fd, data, os.SEEK_HOLE)
            end = pos
        return end
    finally:
        os.close(fd)


def _next_good(buf: Any, start: int, base: int, n: int) -> int | None:
    """The first position > ``start`` (and before ``n``) holding a self-consistent record or the file's
    closing blank."""
    found: int | None = None
    # past the magic at start + 4: the record at ``start`` is the one that failed (a CRC
    # mismatch decodes fine without the check, and must not be found again)
    search = start + 5
    while True:
        i = buf.find(_MSG_MAGIC, search, n)
        if i < 0:
            break
        if _record_at(buf, i - 4, base):
            found = i - 4
            break
        search = i + 1
    search = start + 5
    while True:
        i = buf.find(_BLANK_MAGIC, search, found + 4 if found is not None else n)
        if i < 0:
            break
        (size,) = _INT32.unpack_from(buf, i - 4)
        if size == len(buf) - (i - 4):  # a blank always runs to the end of the file
            return i - 4
        search = i + 1
    return found


def last_written(buf: Any, start: int, end: int | None = None) -> int:
    """One past the last non-zero byte at or after ``start`` and before ``end`` (scanned backwards in chunks)."""
    end = len(buf) if end is None else min(end, len(buf))
    chunk = 1 << 20
    while end > start:
        lo = max(start, end - chunk)
        piece = buf[lo:end].rstrip(b"\x00")
        if piece:
            return lo + len(piece)
        end = lo
    return start


def sync_quality(buf: Any, pos: int, base: int) -> bool:
    """Whether a split may start at ``pos``: a record that knows its own position and whose
    body CRC agrees (stricter than resync's test, so a split never starts on a look-alike)."""
    try:
        msg = decode_message(buf, pos, decompress=False)
    except CodecError:
        return False
    return msg.commit_log_offset == base + pos and (not msg.body or body_crc(msg.body) == msg.body_crc)


def split_start(buf: Any, base: int, start: int, end: int, data_end: int | None = None) -> int | None:
    """Where the split ``[start, end)`` of a file begins reading: the first record at or after
    ``start`` (and before ``end``) that passes :func:`sync_quality`, or the file's closing
    blank; None when the split holds no such place (the split before it reads through).
    ``data_end`` bounds the searches (see :func:`written_end`)."""
    if start == 0:
        return 0
    n = len(buf) if data_end is None else min(data_end, len(buf))
    # A record starting just before ``end`` has its magic (bytes 4 to 8) just after it.
    limit = min(n, end + 8)
    found: int | None = None
    search = start + 4
    while (i := buf.find(_MSG_MAGIC, search, limit)) >= 0:
        if i - 4 < end and sync_quality(buf, i - 4, base):
            found, limit = i - 4, i  # a blank can only come first if it is before this
            break
        search = i + 1
    search = start + 4
    while (i := buf.find(_BLANK_MAGIC, search, limit)) >= 0:
        (size,) = _INT32.unpack_from(buf, i - 4)
        if i - 4 < end and size == len(buf) - (i - 4):  # a blank always runs to the end of the file
            return i - 4
        search = i + 1
    return found


def walk_bounds(
    buf: Any, base: int, start: int, end: int | None, data_end: int | None, exact_start: bool
) -> tuple[int, int | None, int] | None:
    """Where a walk of ``buf`` (or of its split ``[start, end)``) begins, the split end it goes past (None:
    to the end) and where the data ends: (first record, end, data end); None when the split holds no record
    start. ``exact_start`` says ``start`` is a record boundary already (the start of the file, a dispatch
    point), so nothing is searched."""
    n = len(buf) if data_end is None else min(data_end, len(buf))
    if exact_start:
        pos = start
    elif start or end is not None:
        first = split_start(buf, base, start, n if end is None else end, data_end)
        if first is None:
            return None
        pos = first
    else:
        pos = 0
    if end is not None and end >= n:
        end = None
    return pos, end, n


def walk_commitlog(
    buf: Any,
    base: int,
    *,
    resync: bool = True,
    check_crc: bool = False,
    blanks: bool = False,
    data_end: int | None = None,
    start: int = 0,
    end: int | None = None,
    exact_start: bool = False,
) -> Generator[tuple[int, MessageExt | BlankRecord] | CorruptRegion, None, None]:
    """(absolute offset, record) for each record of one CommitLog file, damage as regions.

    The blank that closes a file is yielded only with ``blanks``. The offset is where the
    record was found, which in a damaged file need not equal the physical offset stored
    inside it. With ``check_crc`` a record whose body CRC is wrong is a damaged region of
    its own (the broker's recovery stops there too). Corrupt-region reasons give offsets
    in the CommitLog, not in the piece of the file the codec was handed.

    ``buf`` must support ``find`` and slicing (an ``mmap`` or ``bytes``). ``data_end`` (see
    :func:`written_end`) bounds the walk and its searches: nothing after it was ever written.

    With ``start``/``end`` (file positions) only the split ``[start, end)`` is read: the
    walk begins at :func:`split_start` and goes past ``end`` up to the first record where
    the next split begins, so the splits of a file together give exactly its rows.
    ``exact_start`` says ``start`` is a record boundary already (no search).
    """
    bounds = walk_bounds(buf, base, start, end, data_end, exact_start)
    if bounds is None:
        return
    pos, end, n = bounds
    while pos < n:
        view = memoryview(buf)[pos:]
        walk = iter_commitlog(view, base + pos, check_crc=check_crc, decompress=False, strict=False)
        try:
            for item in walk:
                if not isinstance(item, BlankRecord):
                    # end_offset has just moved past this record
                    at = walk.end_offset - item.store_size
                    if end is not None and at - base >= end and sync_quality(buf, at - base, base):
                        return  # the next split begins here
                    yield at, item
                elif blanks:
                    if end is not None and item.offset - base >= end:
                        return  # the split holding the closing blank gives it
                    yield item.offset, item
            stop = walk.end_offset - base
            reason = walk.end_reason
            error = walk.error
        finally:
            del walk  # it holds the view; drop it so the mapping can be closed later
            view.release()
        if reason in ("blank", "end-of-buffer"):
            return
        # "zero" (an unwritten stretch) or "corrupt": is there a good record further on?
        nxt = _next_good(buf, stop, base, n) if resync else None
        # The codec counts from the start of the view it was given: say where in the CommitLog.
        error_text = (
            error.reason.replace(f"offset {stop - pos}", f"offset {base + stop}", 1) if error is not None else None
        )
        if nxt is None:
            if reason == "corrupt":
                last = last_written(buf, stop, n)
                yield CorruptRegion(base + stop, max(last - stop, 1), error_text or "corrupt")
            return
        why = (
            error_text
            if reason == "corrupt" and error_text is not None
            else f"zero-filled gap before the record at {base + nxt}"
        )
        yield CorruptRegion(base + stop, nxt - stop, why)
        pos = nxt
