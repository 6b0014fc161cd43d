"""The HA stream between a master and its slave (HAService/HAConnection, 4.9.8): not remoting frames.

Plain TCP on the master's ``haListenPort``. Each direction is a bare sequence of fixed units:

* slave -> master: offset reports, one big-endian int64 each (the slave's max CommitLog offset);
* master -> slave: transfers, an int64 physical offset, an int32 size, then that many CommitLog
  bytes; a transfer of size 0 is the master's heartbeat.

The layouts are the construct definitions below; the readers are sans-IO (feed bytes, get units)
with struct fast paths checked against them in the tests.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import construct as cs

from .errors import CodecError
from .units import struct_unit

__all__ = [
    "HA_OFFSET_REPORT",
    "HA_REPORT_SIZE",
    "HA_TRANSFER",
    "HA_TRANSFER_HEADER",
    "HA_TRANSFER_HEADER_SIZE",
    "HaOffsetReader",
    "HaTransfer",
    "HaTransferReader",
    "build_offset_report",
    "build_transfer_header",
    "iter_transfers",
    "looks_like_ha",
    "reports_verdict",
    "transfers_verdict",
]

HA_OFFSET_REPORT = cs.Struct("max_offset" / cs.Int64sb)
HA_TRANSFER_HEADER = cs.Struct("phy_offset" / cs.Int64sb, "body_size" / cs.Int32sb)
HA_TRANSFER = cs.Struct(
    "phy_offset" / cs.Int64sb,
    "body_size" / cs.Int32sb,
    "data" / cs.Bytes(cs.this.body_size),
)

_REPORT = struct_unit(HA_OFFSET_REPORT)
_HEADER = struct_unit(HA_TRANSFER_HEADER)
HA_REPORT_SIZE = _REPORT.size
HA_TRANSFER_HEADER_SIZE = _HEADER.size
assert HA_REPORT_SIZE == HA_OFFSET_REPORT.sizeof() and HA_TRANSFER_HEADER_SIZE == HA_TRANSFER_HEADER.sizeof()

#: a transfer larger than this is not a CommitLog batch (Java sends at most haTransferBatchSize, 32 KiB,
#: or one mapped file's remainder); a reader refuses it before buffering
DEFAULT_MAX_TRANSFER = 64 * 1024 * 1024


def build_offset_report(max_offset: int) -> bytes:
    return _REPORT.pack(max_offset)


def build_transfer_header(phy_offset: int, size: int) -> bytes:
    return _HEADER.pack(phy_offset, size)


@dataclass(frozen=True, slots=True)
class HaTransfer:
    """One master -> slave unit: CommitLog bytes starting at ``phy_offset`` (none: a heartbeat)."""

    phy_offset: int
    data: bytes

    @property
    def is_heartbeat(self) -> bool:
        return not self.data


class HaOffsetReader:
    """The master's side: offset reports in any chunking."""

    __slots__ = ("_buf",)

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes | bytearray | memoryview) -> list[int]:
        """Every complete report ``data`` finishes, oldest first."""
        buf = self._buf
        buf += data
        n = len(buf) - len(buf) % HA_REPORT_SIZE
        if not n:
            return []
        reports = [r for (r,) in _REPORT.iter_unpack(memoryview(buf)[:n])]
        del buf[:n]
        return reports

    @property
    def buffered(self) -> int:
        return len(self._buf)


class HaTransferReader:
    """The slave's side: transfers in any chunking; CodecError on a negative or absurd size."""

    __slots__ = ("_buf", "max_transfer")

    def __init__(self, max_transfer: int = DEFAULT_MAX_TRANSFER) -> None:
        self._buf = bytearray()
        self.max_transfer = max_transfer

    def feed(self, data: bytes | bytearray | memoryview) -> list[HaTransfer]:
        buf = self._buf
        buf += data
        out: list[HaTransfer] = []
        pos = 0
        while len(buf) - pos >= HA_TRANSFER_HEADER_SIZE:
            offset, size = _HEADER.unpack_from(buf, pos)
            if size < 0 or size > self.max_transfer:
                raise CodecError(f"HA transfer at offset {offset} has an impossible size {size}")
            if offset < 0:
                raise CodecError(f"HA transfer has a negative offset {offset}")
            end = pos + HA_TRANSFER_HEADER_SIZE + size
            if len(buf) < end:
                break
            out.append(HaTransfer(offset, bytes(buf[pos + HA_TRANSFER_HEADER_SIZE : end])))
            pos = end
        if pos:
            del buf[:pos]
        return out

    @property
    def buffered(self) -> int:
        return len(self._buf)


def iter_transfers(data: bytes) -> Iterator[HaTransfer]:
    """Transfers of a whole master -> slave stream (the construct definition; trailing partial unit ignored)."""
    pos = 0
    while len(data) - pos >= HA_TRANSFER_HEADER_SIZE:
        try:
            unit = HA_TRANSFER.parse(data[pos:])
        except cs.ConstructError:
            return
        yield HaTransfer(unit.phy_offset, bytes(unit.data))
        pos += HA_TRANSFER_HEADER_SIZE + unit.body_size


# -- recognising an HA connection by its content ------------------------------------------------

#: a CommitLog offset at or past this (a pebibyte) is not one: random bytes and text read as huge numbers
MAX_PLAUSIBLE_OFFSET = 1 << 50
#: units looked at when judging a stream (the verdict never needs more)
_JUDGE_UNITS = 64
#: a master that starts from a slave reporting 0 begins at a mapped file's start: a multiple of this
_FILE_ALIGNMENT = 4096


def reports_verdict(data: bytes | bytearray | memoryview) -> bool | None:
    """Could ``data``, from its first byte, be a slave's offset reports? None: shorter than one report.

    Reports are non-negative, non-decreasing, and far below :data:`MAX_PLAUSIBLE_OFFSET`; a partial
    last report is not judged.
    """
    n = min(len(data) // HA_REPORT_SIZE, _JUDGE_UNITS)
    if not n:
        return None
    prev = 0
    for (value,) in _REPORT.iter_unpack(memoryview(data)[: n * HA_REPORT_SIZE]):
        if value < prev or value >= MAX_PLAUSIBLE_OFFSET:
            return False
        prev = value
    return True


def transfers_verdict(
    data: bytes | bytearray | memoryview, max_transfer: int = DEFAULT_MAX_TRANSFER
) -> tuple[bool | None, int | None]:
    """Could ``data``, from its first byte, be a master's transfers? ``(verdict, first offset)``.

    True once a second header follows the first at the first's end offset (transfers chain: each
    starts where the previous one's bytes end); False on a header no master writes (negative or
    absurd offset or size) or a broken chain; None while too little has been seen. The first
    offset is given once the first header is whole.
    """
    pos, units, first = 0, 0, None
    expected: int | None = None
    while len(data) - pos >= HA_TRANSFER_HEADER_SIZE and units < _JUDGE_UNITS:
        offset, size = _HEADER.unpack_from(data, pos)
        if not 0 <= offset < MAX_PLAUSIBLE_OFFSET or not 0 <= size <= max_transfer:
            return False, first
        if expected is not None and offset != expected:
            return False, first
        if first is None:
            first = offset
        units += 1
        if units >= 2:
            return True, first
        expected = offset + size
        pos += HA_TRANSFER_HEADER_SIZE + size
    return None, first


def _cuts_on_boundaries(data: bytes | bytearray | memoryview, cuts: Sequence[int]) -> bool:
    """Does every cut fall on a transfer's header or body start (as far as headers can be read)?"""
    bounds = {0}
    pos = 0
    while len(data) - pos >= HA_TRANSFER_HEADER_SIZE:
        _offset, size = _HEADER.unpack_from(data, pos)
        if size < 0:
            return False
        bounds.add(pos + HA_TRANSFER_HEADER_SIZE)
        pos += HA_TRANSFER_HEADER_SIZE + size
        bounds.add(pos)
    return all(c in bounds for c in cuts if c < pos)


def looks_like_ha(
    to_master: bytes | bytearray | memoryview,
    to_slave: bytes | bytearray | memoryview,
    final: bool = False,
    cuts_to_master: Sequence[int] | None = None,
    cuts_to_slave: Sequence[int] | None = None,
) -> bool | None:
    """Are these the first bytes of an HA connection's two directions? None: cannot tell yet.

    Either the master's side alone proves it (two chained transfers, and the slave's side is not
    contradicting), or both sides agree: the slave reported offsets and the master's first transfer
    starts where the slave asked (or, the slave having nothing, at a mapped file's start). With
    ``final`` (the connection is over) a slave side of reports and a silent master is enough.

    ``cuts_*``: where segments began in each side's bytes, for a capture that joined the connection
    mid-stream (its first byte is a guess at a unit start): every segment must then begin on a unit
    boundary, as peers that write each unit at once produce; bytes read out of step do not.
    """
    if cuts_to_master and any(c % HA_REPORT_SIZE for c in cuts_to_master if c < len(to_master)):
        return False
    if cuts_to_slave and not _cuts_on_boundaries(to_slave, cuts_to_slave):
        return False
    reports = reports_verdict(to_master) if to_master else None
    if reports is False:
        return False
    transfers, first = transfers_verdict(to_slave) if to_slave else (None, None)
    if transfers is False:
        return False
    if transfers:
        return True
    if reports and first is not None:
        asked = _REPORT.unpack_from(to_master)[0]
        return first == asked or (asked == 0 and first % _FILE_ALIGNMENT == 0)
    if final:
        return bool(reports) and not to_slave
    return None
