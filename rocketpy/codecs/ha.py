"""The HA stream between a master and its slave (HAService/HAConnection, 4.9.8): not remoting frames.

Plain TCP on the master's ``haListenPort``. Each direction is a bare sequence of fixed units:

* slave -> master: offset reports, one big-endian int64 each (the slave's max CommitLog offset);
* master -> slave: transfers, an int64 physical offset, an int32 size, then that many CommitLog
  bytes; a transfer of size 0 is the master's heartbeat.

The layouts are the construct definitions below; the readers are sans-IO (feed bytes, get units)
with struct fast paths checked against them in the tests.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import construct as cs

from .errors import CodecError

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
]

HA_OFFSET_REPORT = cs.Struct("max_offset" / cs.Int64sb)
HA_TRANSFER_HEADER = cs.Struct("phy_offset" / cs.Int64sb, "body_size" / cs.Int32sb)
HA_TRANSFER = cs.Struct(
    "phy_offset" / cs.Int64sb,
    "body_size" / cs.Int32sb,
    "data" / cs.Bytes(cs.this.body_size),
)

_REPORT = struct.Struct(">q")
_HEADER = struct.Struct(">qi")
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
