"""A DLedger member's data files (DLedger mode, ``enableDLegerCommitLog=true``) as CommitLog rows.

In DLedger mode the broker's CommitLog is the ledger ``<store>/dledger-<selfId>/data/``: entries of a
48-byte header (:data:`rocketpy.codecs.dledger.DLEDGER_ENTRY_HEADER`) and one message record each,
whose physical offset is the entry's ``pos + 48``, the offset ConsumeQueue and IndexFile units hold.
So the rows are the CommitLog source's, at ``commit_log_offset = pos + 48``, plus the entry's
``dledger_index`` and ``dledger_term``.

A split ``[start, end)`` of a data file holds the entries that begin in it. Where the first one
begins comes from the ledger's index (unit ``i`` names entry ``i``'s ``pos``), checked against the
entry header there (magic 1 and a ``pos`` naming its own place); without an index, the entries are
followed from the file's start. Damage (an entry that does not decode, or whose body is no message
record) is one ``corrupt`` row up to the next entry that names its own place.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..codecs.dledger import (
    BLANK_MAGIC,
    CURRENT_MAGIC,
    DLEDGER_ENTRY_HEADER,
    DLEDGER_INDEX_UNIT,
    ENTRY_HEADER_SIZE,
    MIN_BLANK_LEN,
)
from ..codecs.errors import CodecError
from ..codecs.layouts import field_offsets
from ..codecs.message import decode_message
from ..store.dledger_ledger import DATA_DIR, INDEX_DIR
from ..store.walk import CorruptRegion

__all__ = [
    "LEDGER_COLUMNS",
    "entry_columns",
    "entry_of_record",
    "is_ledger_file",
    "ledger_data_dirs",
    "ledger_entries",
    "ledger_index_positions",
    "ledger_written_end",
]

#: the columns a DLedger entry adds to the CommitLog rows (null for a plain CommitLog)
LEDGER_COLUMNS: list[tuple[str, str]] = [("dledger_index", "long"), ("dledger_term", "long")]

LEDGER_PREFIX = "dledger-"
_HEAD = field_offsets(DLEDGER_ENTRY_HEADER)
_WIDTH = {sc.name: sc.sizeof() for sc in DLEDGER_ENTRY_HEADER.subcons}
_UNIT = field_offsets(DLEDGER_INDEX_UNIT)
assert _HEAD["<end>"] == ENTRY_HEADER_SIZE


def _field(buf: Any, at: int, name: str) -> int:
    """Field ``name`` of the entry header at ``at`` (big-endian, signed, as the construct declares it)."""
    o = at + _HEAD[name]
    return int.from_bytes(buf[o : o + _WIDTH[name]], "big", signed=True)


def is_ledger_file(path: str) -> bool:
    """Whether ``path`` names a data file of a DLedger ledger (``.../dledger-<id>/data/<offset>``)."""
    data = os.path.dirname(path.rstrip("/"))
    return os.path.basename(data) == DATA_DIR and os.path.basename(os.path.dirname(data)).startswith(LEDGER_PREFIX)


def ledger_data_dirs(path: str, listdir: Any, isdir: Any) -> list[str]:
    """The ledger data directories ``path`` stands for: a store in DLedger mode (its ``dledger-*``
    ledgers, as :func:`rocketpy.store.dledger_ledger.find_ledger_dirs` finds them), a ledger, or a
    ledger's ``data`` directory; [] for anything else. ``listdir``/``isdir`` work on paths and URIs."""
    path = path.rstrip("/") or path
    name = os.path.basename(path)
    if name == DATA_DIR and os.path.basename(os.path.dirname(path)).startswith(LEDGER_PREFIX):
        return [path]
    if name.startswith(LEDGER_PREFIX) and isdir(os.path.join(path, DATA_DIR)):
        return [os.path.join(path, DATA_DIR)]
    if not isdir(path):
        return []
    return [
        os.path.join(path, n, DATA_DIR)
        for n in sorted(listdir(path))
        if n.startswith(LEDGER_PREFIX) and isdir(os.path.join(path, n, DATA_DIR))
    ]


_UNIT_DTYPE = np.dtype(
    [(n, ">i4" if DLEDGER_INDEX_UNIT.subcons[i].sizeof() == 4 else ">i8") for i, n in enumerate(_UNIT) if n != "<end>"]
)
assert _UNIT_DTYPE.itemsize == DLEDGER_INDEX_UNIT.sizeof()


def ledger_index_positions(data_file: str) -> np.ndarray | None:
    """The sorted ledger positions of every entry the ledger's index names (the units up to the
    first unwritten one); None when the ledger has no index files (a copy of ``data/`` only)."""
    index_dir = os.path.join(os.path.dirname(os.path.dirname(data_file)), INDEX_DIR)
    if "://" in data_file or not os.path.isdir(index_dir):
        return None
    names = sorted(n for n in os.listdir(index_dir) if len(n) == 20 and n.isdigit())
    if not names:
        return None
    parts = []
    for n in names:
        with open(os.path.join(index_dir, n), "rb") as f:
            raw = f.read()
        units = np.frombuffer(raw[: len(raw) - len(raw) % _UNIT_DTYPE.itemsize], dtype=_UNIT_DTYPE)
        unwritten = np.flatnonzero(units["magic"] == 0)
        if len(unwritten):
            parts.append(units["pos"][: unwritten[0]].astype(np.int64))
            break
        parts.append(units["pos"].astype(np.int64))
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)


def ledger_written_end(path: str, base: int, size: int) -> int | None:
    """Where the entries the ledger's index names end in the data file at ``base`` (``size`` bytes):
    past it there is nothing the index knows of (what was appended since is read by the open last
    split); None without an index."""
    indexed = ledger_index_positions(path)
    if indexed is None:
        return None
    inside = indexed[(indexed >= base) & (indexed < base + size)]
    if not len(inside):
        return 0
    last = int(inside[-1]) - base
    with open(path, "rb") as f:
        f.seek(last)
        head = f.read(ENTRY_HEADER_SIZE)
    return last + max(_field(head, 0, "size"), ENTRY_HEADER_SIZE) if len(head) == ENTRY_HEADER_SIZE else last


def _names_itself(buf: Any, at: int, base: int, limit: int) -> bool:
    """Whether a well-formed entry starts at ``at`` (a file at ledger offset ``base``): magic 1, sizes
    that agree and fit, and a ``pos`` naming this very place."""
    if at < 0 or at + ENTRY_HEADER_SIZE > limit:
        return False
    if _field(buf, at, "magic") != CURRENT_MAGIC:
        return False
    size, body = _field(buf, at, "size"), _field(buf, at, "body_size")
    if body < 0 or size != ENTRY_HEADER_SIZE + body or at + size > limit:
        return False
    return _field(buf, at, "pos") == base + at


def _next_entry(buf: Any, after: int, base: int, limit: int, indexed: np.ndarray | None) -> int | None:
    """The first place past ``after`` where an entry naming its own place begins (from the index
    when there is one, else by searching for the magic)."""
    if indexed is not None:
        i = int(np.searchsorted(indexed, base + after, side="right"))
        for p in indexed[i:].tolist():
            if p - base >= limit:
                return None
            if _names_itself(buf, p - base, base, limit):
                return p - base
        return None
    magic = CURRENT_MAGIC.to_bytes(4, "big")
    at = after + 1
    while True:
        at = buf.find(magic, at, limit)
        if at < 0:
            return None
        if _names_itself(buf, at, base, limit):
            return at
        at += 1


def _first_entry(buf: Any, base: int, start: int, limit: int, indexed: np.ndarray | None) -> int | None:
    """Where the walk of the split at ``start`` begins: the first place at or past ``start`` that a
    walk from the file's start reaches (an entry naming its place, or damage right after one)."""
    if start == 0:
        return 0
    if indexed is not None:
        i = int(np.searchsorted(indexed, base + start, side="left"))
        for k in range(i, len(indexed)):
            at = int(indexed[k]) - base
            if at >= limit:
                return None
            if _names_itself(buf, at, base, limit):
                return at
            prev = int(indexed[k - 1]) - base if k > 0 else -1
            if prev >= 0 and _names_itself(buf, prev, base, limit) and prev + _field(buf, prev, "size") == at:
                return at  # damage the walk meets coming from the good entry before it
        return None
    at = 0  # no index: follow the entries from the file's start
    while at < start:
        if at + MIN_BLANK_LEN > limit or _field(buf, at, "magic") in (0, BLANK_MAGIC):
            return None  # the file's unwritten rest or its padding: nothing more in it
        if not _names_itself(buf, at, base, limit):
            nxt = _next_entry(buf, at, base, limit, None)
            if nxt is None:
                return None
            at = nxt
            continue
        at += _field(buf, at, "size")
    return at


def ledger_entries(
    buf: Any,
    base: int,
    start: int = 0,
    end: int | None = None,
    exact_start: bool = False,
    indexed: np.ndarray | None = None,
) -> Iterator[tuple[int, int, int, int] | CorruptRegion]:
    """``(position, index, term, size)`` of each entry beginning in ``[start, end)`` of one data
    file's bytes, in order, and a :class:`CorruptRegion` for bytes holding no entry before the
    file's padding or unwritten rest; ``exact_start``: ``start`` is known to begin an entry."""
    limit = len(buf)
    stop = limit if end is None else min(end, limit)
    at: int | None = start if exact_start else _first_entry(buf, base, start, limit, indexed)
    while at is not None and at < stop and at + MIN_BLANK_LEN <= limit:
        magic = _field(buf, at, "magic")
        if magic == 0 or magic == BLANK_MAGIC:  # unwritten, or the blank padding the file's end
            return
        if _names_itself(buf, at, base, limit):
            size = _field(buf, at, "size")
            yield at, _field(buf, at, "index"), _field(buf, at, "term"), size
            at += size
            continue
        nxt = _next_entry(buf, at, base, limit, indexed)
        length = (nxt if nxt is not None else _written(buf, at, limit)) - at
        yield CorruptRegion(base + at, length, f"no DLedger entry naming its place at {base + at}")
        at = nxt


def _written(buf: Any, at: int, limit: int) -> int:
    """One past the last non-zero byte from ``at`` on (where a damaged tail's unwritten rest begins)."""
    tail = bytes(buf[at:limit]).rstrip(b"\0")
    return at + max(len(tail), 1)


def entry_of_record(buf: Any, at: int, ledger_pos: int) -> tuple[int, int] | None:
    """(index, term) of the entry whose header is at ``at`` of ``buf`` if it is the header of an entry
    at ledger position ``ledger_pos`` (magic 1, that ``pos``, sizes agreeing); None if not."""
    if at < 0 or at + ENTRY_HEADER_SIZE > len(buf) or _field(buf, at, "magic") != CURRENT_MAGIC:
        return None
    if _field(buf, at, "pos") != ledger_pos:
        return None
    if _field(buf, at, "size") != ENTRY_HEADER_SIZE + _field(buf, at, "body_size"):
        return None
    return _field(buf, at, "index"), _field(buf, at, "term")


def entry_columns(buf: Any, base: int, record_positions: Sequence[int]) -> tuple[pa.Array, pa.Array]:
    """``dledger_index`` and ``dledger_term`` of the records at ``record_positions`` of a data file
    (each record inside the entry that begins 48 bytes before it; null where no entry does)."""
    index: list[int | None] = []
    term: list[int | None] = []
    for p in record_positions:
        at = p - ENTRY_HEADER_SIZE
        found = entry_of_record(buf, at, base + at)
        index.append(None if found is None else found[0])
        term.append(None if found is None else found[1])
    return pa.array(index, pa.int64()), pa.array(term, pa.int64())


def entry_record(buf: Any, at: int, size: int) -> Any:
    """The message record inside the entry at ``at`` (CodecError when it is none)."""
    body = bytes(buf[at + ENTRY_HEADER_SIZE : at + size])
    if not body:
        raise CodecError("empty entry")
    return decode_message(body, 0, decompress=False)
