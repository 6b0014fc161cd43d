"""The master/slave HA connection as sniffer events: offset reports, transfers and their pairing.

An HA connection carries no RemotingCommand (see :mod:`rocketpy.codecs.ha`): the slave reports its
CommitLog max offset, the master sends CommitLog bytes from an offset. :class:`HaDecoder` turns
one direction's bytes into :class:`HaUnit` events (a transfer lists the whole CommitLog records it
carries, a record cut between transfers is counted in the transfer that completes it), and
:class:`HaPairer` says what each unit is: the slave's initial report, an acknowledgement of
transfers, a keep-alive repeating the last offset; a data transfer or a heartbeat.
"""

from __future__ import annotations

import dataclasses
import struct

from ..codecs.errors import CodecError
from ..codecs.ha import HaOffsetReader, HaTransferReader
from ..codecs.message import MESSAGE_MAGIC_CODE, MESSAGE_RECORD, MessageExt, decode_message
from ..codecs.units import struct_unit
from .packet import Endpoint

__all__ = ["HaDecoder", "HaPairer", "HaUnit"]

#: a record's total size and magic code; its head up to the physical offset field (the last one)
_SIZE_MAGIC = struct_unit(MESSAGE_RECORD, 2)
_PHYSICAL = struct_unit(MESSAGE_RECORD, 7)
#: a record start is checked against its physical offset field, which ends 36 bytes in
_JUDGE_MIN = _PHYSICAL.size
#: bytes of a record cut between transfers kept waiting for the rest
_MAX_CARRY = 8 << 20


@dataclasses.dataclass(eq=False)
class HaUnit:
    """One unit of an HA connection: a slave's offset report or a master's transfer."""

    ts: float
    src: Endpoint
    dst: Endpoint
    kind: str  # "report" (slave -> master) or "transfer" (master -> slave)
    offset: int  # the reported max offset, or the CommitLog offset the transfer's bytes start at
    data: bytes = b""  # a transfer's CommitLog bytes
    number: int = 0
    #: whole CommitLog records finished by this transfer (a record cut between transfers counts in the one
    #: that ends it; None: joined mid-record and no record starts in these bytes)
    records: list[MessageExt] | None = None
    #: set by :class:`HaPairer`: "initial", "ack" or "keepalive" for a report; "data" or "heartbeat"
    role: str = ""
    #: a report: the last transfer it acknowledges; a transfer: the report acknowledging it
    peer: HaUnit | None = dataclasses.field(default=None, repr=False)
    #: report time minus the acknowledged transfer's time (seconds), on both
    latency: float | None = None

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def end(self) -> int:
        return self.offset + len(self.data)

    @property
    def from_master(self) -> bool:
        return self.kind == "transfer"

    @property
    def conn(self) -> tuple[Endpoint, Endpoint]:
        """(slave, master) endpoints."""
        return (self.dst, self.src) if self.from_master else (self.src, self.dst)


class HaDecoder:
    """One direction of an HA connection: bytes in, units out (CodecError on bytes no peer sends)."""

    __slots__ = ("_carry", "_carry_aligned", "_carry_at", "_reader", "kind")

    def __init__(self, from_master: bool) -> None:
        self.kind = "transfer" if from_master else "report"
        self._reader: HaOffsetReader | HaTransferReader = HaTransferReader() if from_master else HaOffsetReader()
        self._carry = b""
        self._carry_at = -1  # CommitLog offset the carried bytes end at
        self._carry_aligned = False  # whether they start at a record

    @property
    def buffered(self) -> int:
        return self._reader.buffered

    def feed(self, ts: float, src: Endpoint, dst: Endpoint, data: bytes, number: int = 0) -> list[HaUnit]:
        reader = self._reader
        if isinstance(reader, HaOffsetReader):
            return [HaUnit(ts, src, dst, "report", o, number=number) for o in reader.feed(data)]
        out = []
        for t in reader.feed(data):
            unit = HaUnit(ts, src, dst, "transfer", t.phy_offset, t.data, number)
            if t.data:
                unit.records = self._records(t.phy_offset, t.data)
            out.append(unit)
        return out

    def _records(self, offset: int, data: bytes) -> list[MessageExt] | None:
        aligned = False
        if self._carry and self._carry_at == offset:
            data, offset, aligned = self._carry + data, offset - len(self._carry), self._carry_aligned
        self._carry = b""
        start = 0 if aligned else _record_start(data, offset)
        if start is None:  # joined mid-record: a record may start in the last bytes, judged with the next ones
            tail = data[-(_JUDGE_MIN - 1) :]
            self._carry, self._carry_at, self._carry_aligned = tail, offset + len(data), False
            return None
        records: list[MessageExt] = []
        pos = start
        while len(data) - pos >= 8:
            size, magic = _SIZE_MAGIC.unpack_from(data, pos)
            if magic != MESSAGE_MAGIC_CODE or size < 8:
                return records  # a file's blank filler or its zeroed tail: nothing more to list
            if size > len(data) - pos:
                break
            try:
                records.append(decode_message(data, pos, decompress=False))
            except CodecError:
                return records
            pos += size
        if pos < len(data) and len(data) - pos <= _MAX_CARRY:
            self._carry, self._carry_at, self._carry_aligned = data[pos:], offset + len(data), True
        return records


def _record_start(data: bytes, offset: int) -> int | None:
    """Where the first record starts in CommitLog bytes from ``offset`` (0 unless they begin mid-record):
    a record says where it sits (its physical offset field), so a start is found without guessing."""
    if len(data) >= _JUDGE_MIN and _SIZE_MAGIC.unpack_from(data, 0)[1] == MESSAGE_MAGIC_CODE:
        if _PHYSICAL.unpack_from(data)[-1] == offset:
            return 0
    marker = struct.pack(">i", MESSAGE_MAGIC_CODE)
    pos = data.find(marker, 4)
    while pos != -1:
        start = pos - 4
        if len(data) - start >= _JUDGE_MIN and _PHYSICAL.unpack_from(data, start)[-1] == offset + start:
            return start
        pos = data.find(marker, pos + 1)
    return None


class HaPairer:
    """Say what each unit is, and pair a slave's acknowledgement with the transfers it covers."""

    def __init__(self) -> None:
        #: per (slave, master): last reported offset, data transfers not yet acknowledged
        self._last: dict[tuple[Endpoint, Endpoint], int] = {}
        self._waiting: dict[tuple[Endpoint, Endpoint], list[HaUnit]] = {}

    def add(self, unit: HaUnit) -> None:
        conn = unit.conn
        waiting = self._waiting.setdefault(conn, [])
        if unit.kind == "transfer":
            unit.role = "data" if unit.data else "heartbeat"
            if unit.data:
                waiting.append(unit)
            return
        last = self._last.get(conn)
        self._last[conn] = unit.offset
        covered = [t for t in waiting if t.end <= unit.offset]
        if covered:
            waiting[:] = [t for t in waiting if t.end > unit.offset]
            unit.role = "ack"
            unit.peer = covered[-1]
            unit.latency = unit.ts - covered[-1].ts
            for t in covered:
                t.peer, t.latency = unit, unit.ts - t.ts
        elif last is None:
            unit.role = "initial"
        elif unit.offset == last:
            unit.role = "keepalive"
        else:
            unit.role = "ack"  # the slave moved on without a transfer seen (joined mid-stream, a gap)

    def forget(self, conn: tuple[Endpoint, Endpoint]) -> None:
        self._last.pop(conn, None)
        self._waiting.pop(conn, None)
