"""CommitLog files as rows: one per message record, plus one per damaged stretch.

The rows come from :func:`rocketpy.store.walk.walk_commitlog`, the forensic walk that
``rocketpy store check``/``dump`` use too: it goes on past damage or a zero-filled gap
to the next self-consistent record and reports the skipped bytes as a ``corrupt`` row,
so one bad record does not hide everything after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..codecs.dledger import ENTRY_HEADER_SIZE
from ..codecs.errors import CodecError
from ..codecs.message import MessageExt, body_crc, decode_message
from ..store.walk import CorruptRegion, walk_commitlog, written_end
from ..store.walk import sync_quality as split_quality
from ._columns import BatchBuilder, ms_to_us
from ._files import READ_STATS, file_size, fill, is_remote, mapped, ranged, window
from ._records import columnar_walk, decode_at, record_columns
from .dledger import (
    LEDGER_COLUMNS,
    entry_columns,
    entry_of_record,
    entry_record,
    is_ledger_file,
    ledger_entries,
    ledger_index_positions,
)

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
    *LEDGER_COLUMNS,  # a DLedger entry's index and term (DLedger mode; null for a plain CommitLog)
    ("error", "string"),
]


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


def _message_row(
    path: str, at: int, msg: MessageExt, opts: CommitLogOptions, entry: tuple[int, int] | None = None
) -> tuple[list[Any], int]:
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
        *(entry if entry is not None else (None, None)),
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
    wanted = sorted(set(positions))
    if not is_remote(path) and wanted:
        # Plainly sound records are decoded in columns, in chunks; any doubt, and the codec decides.
        with mapped(path) as buf:
            u8 = np.frombuffer(buf, dtype=np.uint8) if len(buf) else np.zeros(0, np.uint8)
            try:
                decoded = [
                    decode_at(u8, np.array(wanted[i : i + max_rows], dtype=np.int64), base)
                    for i in range(0, len(wanted), max_rows)
                ]
                if all(d is not None for d in decoded):
                    ledger = is_ledger_file(path)
                    for d in decoded:
                        assert d is not None
                        if len(d.pos):
                            READ_STATS["bytes"] += int(d.size.sum())
                            yield _columns(
                                buf,
                                u8,
                                d,
                                path,
                                base,
                                COMMITLOG_COLUMNS,
                                opts,
                                _entry_given(buf, base, d.pos.tolist()) if ledger else None,
                            )
                    return
            finally:
                del u8
                decoded = []
    builder = BatchBuilder(COMMITLOG_COLUMNS, max_rows=max_rows)
    for pos, msg, entry in _named_records(path, base, wanted):
        row, payload = _message_row(path, base + pos, msg, opts, entry)
        batch = builder.add(row, payload)
        if batch is not None:
            yield batch
    last = builder.flush()
    if last is not None:
        yield last


def _columns(
    buf: Any,
    u8: np.ndarray,
    d: Any,
    path: str,
    base: int,
    cols: Sequence[tuple[str, str]],
    opts: CommitLogOptions,
    given: Mapping[str, pa.Array] | None = None,
) -> pa.RecordBatch:
    """:func:`record_columns` under the reader's options."""
    return record_columns(
        buf,
        u8,
        d,
        path,
        base,
        cols,
        check_crc=opts.check_crc,
        decompress=opts.decompress,
        include_body=opts.include_body,
        given=given,
    )


def _entry_given(buf: Any, base: int, positions: Sequence[int]) -> dict[str, pa.Array]:
    index, term = entry_columns(buf, base, positions)
    return {"dledger_index": index, "dledger_term": term}


def _named_records(
    path: str, base: int, positions: list[int]
) -> Iterator[tuple[int, MessageExt, tuple[int, int] | None]]:
    """(position, record, its DLedger entry's index and term) for each position holding a record
    that knows its own place."""
    ledger = is_ledger_file(path)
    if is_remote(path):
        # Only the records themselves: a size, then the record (ranged reads, counted by them).
        size = file_size(path)
        with ranged(path) as read_at:
            for pos in positions:
                if not 0 <= pos <= size - 8:
                    continue
                length = int.from_bytes(read_at(pos, 4), "big", signed=True)
                if not 0 < length <= size - pos:
                    continue
                try:
                    msg = decode_message(read_at(pos, length), 0, decompress=False)
                except CodecError:
                    continue
                if msg.commit_log_offset == base + pos:
                    entry = None
                    if ledger and pos >= ENTRY_HEADER_SIZE:
                        head = read_at(pos - ENTRY_HEADER_SIZE, ENTRY_HEADER_SIZE)
                        entry = entry_of_record(head, 0, base + pos - ENTRY_HEADER_SIZE)
                    yield pos, msg, entry
        return
    with mapped(path) as buf:
        for pos in positions:
            if not 0 <= pos < len(buf):
                continue
            try:
                msg = decode_message(buf, pos, decompress=False)
            except CodecError:
                continue
            if msg.commit_log_offset != base + pos:
                continue
            READ_STATS["bytes"] += msg.store_size
            at = pos - ENTRY_HEADER_SIZE
            yield pos, msg, entry_of_record(buf, at, base + at) if ledger else None


def commitlog_batches(
    path: str,
    base: int,
    options: CommitLogOptions | None = None,
    max_rows: int = 16384,
    start: int = 0,
    end: int | None = None,
    exact_start: bool = False,
    columns: Sequence[tuple[str, str]] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the rows of one CommitLog file starting at CommitLog offset ``base``
    (only of the split ``[start, end)`` of it when given: see :func:`walk_commitlog`).

    Runs of good records are decoded in columns (:mod:`._records`); ``columns`` (a subset of
    :data:`COMMITLOG_COLUMNS`, in any order) says which to build: bodies and properties cost
    only when asked for. What the forensic walk has to judge comes as rows built from it.

    A file on a filesystem that is not local is not mapped: only the split's byte range and a
    tail to finish its last record are read (see :func:`_remote_batches`).
    """
    opts = options or CommitLogOptions()
    cols = list(columns or COMMITLOG_COLUMNS)
    if is_ledger_file(path):
        yield from ledger_batches(path, base, opts, cols, max_rows, start, end, exact_start)
        return
    if is_remote(path):
        yield from _remote_batches(path, base, opts, cols, max_rows, start, end, exact_start)
        return
    with mapped(path) as buf:
        # a local CommitLog file is sparse past what was written: never search its holes
        data_end = None if "://" in path else written_end(path)
        stop = len(buf) if data_end is None else min(data_end, len(buf))
        READ_STATS["bytes"] += max(0, (stop if end is None else min(end, stop)) - start)
        yield from _walk_batches(buf, path, base, opts, cols, max_rows, start, end, exact_start, data_end, [])


# Read past a remote split's end: enough for the record that crosses it and the next one,
# whose start ends the split (records are at most maxMessageSize, 4 MiB by default, plus headers).
REMOTE_TAIL = 9 << 20


def _remote_batches(
    path: str,
    base: int,
    opts: CommitLogOptions,
    cols: list[tuple[str, str]],
    max_rows: int,
    start: int,
    end: int | None,
    exact_start: bool,
) -> Iterator[pa.RecordBatch]:
    """The split of a file on a remote filesystem, from ranged reads of its bytes.

    The bytes read are placed at their own positions in a file-sized anonymous mapping (pages
    never written cost nothing and read as zeros), so the walk runs unchanged. If the walk did
    not end at the record that begins the next split inside what was read (damage, or a record
    bigger than the tail), the rest of the file is read and the split walked again: rows are
    only handed on once they are known to be the whole-file walk's.
    """
    size = file_size(path)
    lo = start if exact_start else max(0, start - 8)  # the split search looks 4 bytes past start
    hi = size if end is None else min(size, end + REMOTE_TAIL)
    with window(path, size, lo, hi) as buf:
        ends: list[int] = []
        batches = list(_walk_batches(buf, path, base, opts, cols, max_rows, start, end, exact_start, None, ends))
        if hi < size and ends and not _ends_at_split(buf, base, ends[-1], end, hi):
            fill(path, buf, hi, size)
            batches = list(_walk_batches(buf, path, base, opts, cols, max_rows, start, end, exact_start, None, []))
    yield from batches


def _ends_at_split(buf: Any, base: int, last_end: int, end: int | None, hi: int) -> bool:
    """Whether the rows stopped where the next split begins: a record at or past ``end``
    that passes the split test and lies wholly in the bytes read (``[.., hi)``)."""
    pos = last_end - base
    if end is None or pos < end or pos + 8 > hi:
        return False
    size = int.from_bytes(buf[pos : pos + 4], "big", signed=True)
    return 0 < size <= hi - pos and split_quality(buf, pos, base)


def _walk_batches(
    buf: Any,
    path: str,
    base: int,
    opts: CommitLogOptions,
    cols: list[tuple[str, str]],
    max_rows: int,
    start: int,
    end: int | None,
    exact_start: bool,
    data_end: int | None,
    ends: list[int],
) -> Iterator[pa.RecordBatch]:
    """The batches of one walk over ``buf``; ``ends`` gets the CommitLog offset past each row run."""
    names = [name for name, _ in cols]
    builder = BatchBuilder(COMMITLOG_COLUMNS, max_rows=max_rows)

    def walked() -> pa.RecordBatch | None:
        batch = builder.flush()
        return None if batch is None else batch.select(names)

    walk = columnar_walk(
        buf,
        base,
        resync=opts.resync,
        data_end=data_end,
        start=start,
        end=end,
        exact_start=exact_start,
        max_rows=max_rows,
    )
    try:
        for kind, item in walk:
            if kind == "columns":
                pending = walked()
                if pending is not None:
                    yield pending
                ends.append(base + int(item.pos[-1]) + int(item.size[-1]))
                u8 = np.frombuffer(buf, dtype=np.uint8)
                try:
                    yield _columns(buf, u8, item, path, base, cols, opts)
                finally:
                    del u8, item
                continue
            if isinstance(item, CorruptRegion):
                ends.append(item.offset + item.length)
                batch = builder.add(_corrupt_row(path, item))
            elif isinstance(item[1], MessageExt):
                ends.append(item[0] + item[1].store_size)
                row, payload = _message_row(path, item[0], item[1], opts)
                batch = builder.add(row, payload)
            else:
                continue  # a closing blank (not asked for: never here)
            if batch is not None:
                yield batch.select(names)
    finally:
        walk.close()
    last = walked()
    if last is not None:
        yield last


def commitlog_rows_batches(
    path: str,
    base: int,
    options: CommitLogOptions | None = None,
    max_rows: int = 4096,
    start: int = 0,
    end: int | None = None,
    exact_start: bool = False,
) -> Iterator[pa.RecordBatch]:
    """The rows :func:`commitlog_batches` gives, decoded record by record with the construct
    codec (:func:`walk_commitlog` and ``MessageExt``): the reference the columns are tested against."""
    opts = options or CommitLogOptions()
    if is_ledger_file(path):
        yield from ledger_batches(path, base, opts, COMMITLOG_COLUMNS, max_rows, start, end, exact_start, False)
        return
    builder = BatchBuilder(COMMITLOG_COLUMNS, max_rows=max_rows)
    with mapped(path) as buf:
        READ_STATS["bytes"] += (len(buf) if end is None else min(end, len(buf))) - start
        # a local CommitLog file is sparse past what was written: never search its holes
        data_end = None if "://" in path else written_end(path)
        walk = walk_commitlog(
            buf, base, resync=opts.resync, data_end=data_end, start=start, end=end, exact_start=exact_start
        )
        for item in walk:
            if isinstance(item, CorruptRegion):
                batch = builder.add(_corrupt_row(path, item))
            elif isinstance(item[1], MessageExt):
                row, payload = _message_row(path, item[0], item[1], opts)
                batch = builder.add(row, payload)
            else:
                continue  # a closing blank (not asked for: never here)
            if batch is not None:
                yield batch
    last = builder.flush()
    if last is not None:
        yield last


def ledger_batches(
    path: str,
    base: int,
    opts: CommitLogOptions,
    cols: Sequence[tuple[str, str]],
    max_rows: int,
    start: int = 0,
    end: int | None = None,
    exact_start: bool = False,
    columnar: bool = True,
) -> Iterator[pa.RecordBatch]:
    """The rows of a DLedger data file's split (see :mod:`.dledger`): the message record of each
    entry at ``commit_log_offset = pos + 48`` with the entry's index and term, and a ``corrupt`` row
    for damage (bytes holding no entry, or an entry whose body is no message record).

    Runs of entries are decoded in columns as CommitLog records are; ``columnar=False`` decodes each
    with the construct codec (the reference the columns are tested against)."""
    names = [name for name, _ in cols]
    builder = BatchBuilder(COMMITLOG_COLUMNS, max_rows=max_rows)
    indexed = None if exact_start else ledger_index_positions(path)
    with mapped(path) as buf:
        stop = len(buf) if end is None else min(end, len(buf))
        u8 = np.frombuffer(buf, dtype=np.uint8) if len(buf) else np.zeros(0, np.uint8)
        pending: list[tuple[int, int, int, int]] = []

        def rows_of(entries: list[tuple[int, int, int, int]]) -> Iterator[pa.RecordBatch]:
            for at, index, term, size in entries:
                try:
                    msg = entry_record(buf, at, size)
                    if msg.commit_log_offset != base + at + ENTRY_HEADER_SIZE:
                        raise CodecError(f"its record says it is at {msg.commit_log_offset}")
                except CodecError as exc:
                    region = CorruptRegion(base + at, size, f"DLedger entry {index} holds no message record: {exc}")
                    batch = builder.add(_corrupt_row(path, region))
                else:
                    row, payload = _message_row(path, base + at + ENTRY_HEADER_SIZE, msg, opts, (index, term))
                    batch = builder.add(row, payload)
                if batch is not None:
                    yield batch.select(names)

        def settle() -> Iterator[pa.RecordBatch]:
            if not pending:
                return
            entries = list(pending)
            pending.clear()
            positions = np.array([at + ENTRY_HEADER_SIZE for at, _, _, _ in entries], dtype=np.int64)
            d = decode_at(u8, positions, base) if columnar else None
            if d is None or len(d.pos) != len(entries):
                yield from rows_of(entries)  # some need the codec to judge them
                return
            last = builder.flush()
            if last is not None:
                yield last.select(names)
            READ_STATS["bytes"] += int(d.size.sum()) + ENTRY_HEADER_SIZE * len(entries)
            given = {
                "dledger_index": pa.array([e[1] for e in entries], pa.int64()),
                "dledger_term": pa.array([e[2] for e in entries], pa.int64()),
            }
            yield _columns(buf, u8, d, path, base, cols, opts, given)

        try:
            for item in ledger_entries(buf, base, start, stop, exact_start, indexed):
                if isinstance(item, CorruptRegion):
                    yield from settle()
                    batch = builder.add(_corrupt_row(path, item))
                    if batch is not None:
                        yield batch.select(names)
                    continue
                pending.append(item)
                if len(pending) >= max_rows:
                    yield from settle()
            yield from settle()
        finally:
            u8 = np.zeros(0, np.uint8)  # the mapping closes only once no view of it is left
            pending.clear()
    last = builder.flush()
    if last is not None:
        yield last.select(names)
