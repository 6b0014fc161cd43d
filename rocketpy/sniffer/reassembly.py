"""From TCP segments to whole RemotingCommand frames, per connection and direction.

Sans-IO, three layers:

* :class:`HalfStream` puts one direction's segments back in order: out-of-order
  segments wait, retransmissions and overlaps are trimmed, a hole that never
  fills is eventually skipped and reported as a gap.
* :class:`~.framing.StreamDecoder` cuts the byte stream into frames, and
  resynchronises a stream joined mid-way or broken by a gap.
* :class:`Tracker` keeps both per connection and turns captured packets into
  :class:`CapturedFrame` and :class:`StreamNote` events.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ..codecs.command import RemotingCommand
from ..codecs.errors import CodecError
from .framing import StreamDecoder
from .packet import TH_RST, Endpoint, Packet

__all__ = [
    "DEFAULT_PORTS",
    "CapturedFrame",
    "Event",
    "Gap",
    "HalfStream",
    "StreamDecoder",
    "StreamNote",
    "Tracker",
    "decode_frame",
]

DEFAULT_PORTS = frozenset({9876, 10911, 10909, 10912})

_SEQ_MOD = 1 << 32

#: bytes an out-of-order direction may hold while waiting for a missing segment
DEFAULT_MAX_PENDING = 8 << 20


def _seq_diff(a: int, b: int) -> int:
    """a - b in 32-bit sequence space, as a signed distance."""
    d = (a - b) % _SEQ_MOD
    return d - _SEQ_MOD if d >= 1 << 31 else d


@dataclasses.dataclass
class Gap:
    """Bytes that were never captured: ``size`` bytes before sequence ``seq``."""

    seq: int
    size: int


class HalfStream:
    """One direction of a TCP connection."""

    def __init__(self, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self.next_seq: int | None = None
        self.pending: dict[int, bytes] = {}
        self.pending_bytes = 0
        self.max_pending = max_pending
        self.gaps: list[Gap] = []

    def syn(self, seq: int) -> None:
        self.next_seq = (seq + 1) % _SEQ_MOD
        self.pending.clear()
        self.pending_bytes = 0

    def add(self, seq: int, payload: bytes) -> bytes:
        """Add a segment; return the bytes that became contiguous (possibly empty)."""
        if not payload:
            return b""
        if self.next_seq is None:  # capture started mid-stream: take the first byte seen as the start
            self.next_seq = seq
        d = _seq_diff(seq, self.next_seq)
        if d + len(payload) <= 0:
            return b""  # pure retransmission
        if d > 0:
            old = self.pending.get(seq)
            if old is None or len(old) < len(payload):
                self.pending[seq] = payload
                self.pending_bytes += len(payload) - (len(old) if old else 0)
            return b""
        if d < 0:  # partial retransmission: keep only the new tail
            payload = payload[-d:]
        self.next_seq = (self.next_seq + len(payload)) % _SEQ_MOD
        if not self.pending:
            return payload
        out = [payload]
        self._drain(out)
        return b"".join(out)

    @property
    def overflowing(self) -> bool:
        """True when so much waits behind a hole that the hole should be given up on."""
        return self.pending_bytes > self.max_pending

    def _drain(self, out: list[bytes]) -> None:
        assert self.next_seq is not None
        while self.pending:
            data = self.pending.pop(self.next_seq, None)
            if data is None:
                # no segment starts exactly here: look for one that overlaps the cursor
                for seq in list(self.pending):
                    d = _seq_diff(seq, self.next_seq)
                    if d <= 0:
                        stale = self.pending.pop(seq)
                        self.pending_bytes -= len(stale)
                        if d + len(stale) > 0 and (data is None or len(stale) + d > len(data)):
                            data = stale[-d:]
                if data is None:
                    return
            else:
                self.pending_bytes -= len(data)
            out.append(data)
            self.next_seq = (self.next_seq + len(data)) % _SEQ_MOD

    def skip_gap(self) -> int:
        """Give up waiting for missing bytes: jump to the earliest pending segment.

        Returns how many bytes were skipped (0 when nothing is pending).
        """
        if not self.pending or self.next_seq is None:
            return 0
        cursor = self.next_seq
        nearest = min(self.pending, key=lambda s: _seq_diff(s, cursor))
        size = _seq_diff(nearest, cursor)
        self.gaps.append(Gap(nearest, size))
        self.next_seq = nearest
        return size

    def skip_to(self, seq: int) -> int:
        """The peer acknowledged up to ``seq``: whatever before it is missing was never captured.

        Returns how many bytes were skipped.
        """
        if self.next_seq is None:
            return 0
        size = _seq_diff(seq, self.next_seq)
        if size <= 0:
            return 0
        self.gaps.append(Gap(seq, size))
        self.next_seq = seq
        return size

    def resume(self) -> bytes:
        """After :meth:`skip_gap`: the bytes now contiguous."""
        out: list[bytes] = []
        self._drain(out)
        return b"".join(out)

    def flush(self) -> tuple[bytes, int]:
        """Contiguous data recoverable past gaps, and the number of bytes lost."""
        lost = 0
        out: list[bytes] = []
        while self.pending:
            lost += self.skip_gap()
            self._drain(out)
        return b"".join(out), lost


@dataclasses.dataclass(eq=False)
class CapturedFrame:
    """One whole RemotingCommand frame seen on the wire."""

    ts: float
    src: Endpoint
    dst: Endpoint
    raw: bytes
    command: RemotingCommand | None
    error: str | None = None
    from_server: bool = False
    #: capture frame number of the packet that completed this frame (0 when not from a capture)
    number: int = 0
    #: set by pairing: the request a response answers, and the time between them (seconds)
    request: CapturedFrame | None = dataclasses.field(default=None, repr=False)
    latency: float | None = None

    @property
    def conn(self) -> tuple[Endpoint, Endpoint]:
        """The connection, client side first."""
        return (self.dst, self.src) if self.from_server else (self.src, self.dst)


@dataclasses.dataclass
class StreamNote:
    """Something about a stream that is not a frame: a gap, a resync, a lost stream."""

    ts: float
    src: Endpoint
    dst: Endpoint
    kind: str  # "gap" | "resync" | "error"
    size: int = 0
    detail: str = ""
    number: int = 0

    def describe(self) -> str:
        if self.kind == "gap":
            return f"{self.size} bytes not captured"
        if self.kind == "resync":
            return f"skipped {self.size} bytes: {self.detail}" if self.detail else (
                f"skipped {self.size} bytes to the next frame start")
        return self.detail


Event = CapturedFrame | StreamNote


def decode_frame(
    ts: float, src: Endpoint, dst: Endpoint, raw: bytes, from_server: bool, number: int = 0
) -> CapturedFrame:
    try:
        cmd: RemotingCommand | None = RemotingCommand.decode(raw)
        err = None
    except CodecError as exc:
        cmd, err = None, str(exc)
    return CapturedFrame(ts, src, dst, raw, cmd, err, from_server, number)


class _Direction:
    __slots__ = ("tcp", "decoder", "from_server")

    def __init__(self, synced: bool, from_server: bool, max_pending: int) -> None:
        self.tcp = HalfStream(max_pending)
        self.decoder = StreamDecoder(synced)
        self.from_server = from_server


class Tracker:
    """Both directions of every connection: packets in, frames and notes out."""

    def __init__(self, ports: Iterable[int] = DEFAULT_PORTS, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self.ports = frozenset(ports)
        self.max_pending = max_pending
        self._dirs: dict[tuple[Endpoint, Endpoint], _Direction] = {}
        #: client side of connections whose SYN was seen
        self._clients: dict[tuple[Endpoint, Endpoint], Endpoint] = {}
        self.last_ts = 0.0

    def wants(self, pkt: Packet) -> bool:
        return pkt.src[1] in self.ports or pkt.dst[1] in self.ports

    def _from_server(self, src: Endpoint, dst: Endpoint) -> bool:
        client = self._clients.get((src, dst) if src < dst else (dst, src))
        if client is not None:
            return client == dst
        if dst[1] in self.ports:
            return False
        return src[1] in self.ports

    def packet(self, pkt: Packet) -> list[Event]:
        if not self.wants(pkt):
            return []
        self.last_ts = pkt.ts
        key = (pkt.src, pkt.dst)
        d = self._dirs.get(key)
        seq = pkt.seq
        if pkt.syn:
            seq += 1  # data on a SYN (TCP Fast Open) starts after the SYN's own sequence number
            if not pkt.ack:  # the client opens: remember who is who
                conn = (pkt.src, pkt.dst) if pkt.src < pkt.dst else (pkt.dst, pkt.src)
                self._clients[conn] = pkt.src
            if d is None or d.tcp.next_seq != (pkt.seq + 1) % _SEQ_MOD:
                # a new connection (or the 4-tuple reused): start afresh, in step
                d = self._dirs[key] = _Direction(True, self._from_server(pkt.src, pkt.dst), self.max_pending)
                d.tcp.syn(pkt.seq)
            if not pkt.payload:
                return []
        events: list[Event] = []
        if pkt.ack:
            self._check_acked(pkt, events)
        if not pkt.payload:
            if pkt.fin_or_rst and d is not None:
                events += self._close(key, d, pkt, seq)
            return events
        if d is None:  # first sight of this direction is mid-stream: resync before trusting bytes
            d = self._dirs[key] = _Direction(False, self._from_server(pkt.src, pkt.dst), self.max_pending)
        data = d.tcp.add(seq, pkt.payload)
        if data:
            self._decode(d, pkt, data, events)
        if d.tcp.overflowing:
            self._skip_gaps(d, pkt, events)
        if pkt.fin_or_rst:
            events += self._close(key, d, pkt, seq + len(pkt.payload))
        return events

    def _check_acked(self, pkt: Packet, events: list[Event]) -> None:
        """The peer acknowledging bytes we never saw means the capture missed them (not the network):
        report the gap now instead of waiting for a retransmission that will never come."""
        rev = self._dirs.get((pkt.dst, pkt.src))
        if rev is None or rev.tcp.next_seq is None or _seq_diff(pkt.ack_no, rev.tcp.next_seq) <= 0:
            return
        gap_end = pkt.ack_no
        if rev.tcp.pending:
            # jump to the first waiting segment if the acknowledged range reaches it
            cursor = rev.tcp.next_seq
            nearest = min(rev.tcp.pending, key=lambda s: _seq_diff(s, cursor))
            if _seq_diff(nearest, gap_end) <= 0:
                gap_end = nearest
        size = rev.tcp.skip_to(gap_end)
        events.append(StreamNote(pkt.ts, pkt.dst, pkt.src, "gap", size, number=pkt.number))
        rev.decoder.lose_sync()
        data = rev.tcp.resume()
        if data:
            self._decode(rev, Packet(pkt.ts, pkt.dst, pkt.src, 0, 0, b"", pkt.number), data, events)

    def _decode(self, d: _Direction, pkt: Packet, data: bytes, events: list[Event]) -> None:
        frames, skipped = d.decoder.feed(data)
        if skipped:
            events.append(StreamNote(pkt.ts, pkt.src, pkt.dst, "resync", skipped, number=pkt.number))
        for raw in frames:
            events.append(decode_frame(pkt.ts, pkt.src, pkt.dst, raw, d.from_server, pkt.number))

    def _skip_gaps(self, d: _Direction, pkt: Packet, events: list[Event]) -> None:
        while d.tcp.pending:
            size = d.tcp.skip_gap()
            events.append(StreamNote(pkt.ts, pkt.src, pkt.dst, "gap", size, number=pkt.number))
            d.decoder.lose_sync()
            self._decode(d, pkt, d.tcp.resume(), events)

    def _close(self, key: tuple[Endpoint, Endpoint], d: _Direction, pkt: Packet, end_seq: int) -> list[Event]:
        # FIN may overtake the last data segments when reordered: keep the state while
        # bytes before the FIN are still missing (finish() reports them)
        if d.tcp.pending:
            return []
        missing = d.tcp.next_seq is not None and _seq_diff(end_seq, d.tcp.next_seq) > 0
        if missing and not pkt.flags & TH_RST:  # a reset's sequence number says nothing about data
            return []
        events: list[Event] = []
        self._leftover(d, pkt.ts, pkt.src, pkt.dst, pkt.number, "connection closed", events)
        del self._dirs[key]
        if (pkt.dst, pkt.src) not in self._dirs:  # both ways closed: forget who the client was
            self._clients.pop((pkt.src, pkt.dst) if pkt.src < pkt.dst else (pkt.dst, pkt.src), None)
        return events

    @staticmethod
    def _leftover(d: _Direction, ts: float, src: Endpoint, dst: Endpoint, number: int, why: str,
                  events: list[Event]) -> None:
        if not d.decoder.synced and d.decoder.buffered:
            # the stream is over: frame starts that were waiting to be told apart can be now
            frames, skipped = d.decoder.feed(b"", final=True)
            if skipped:
                events.append(StreamNote(ts, src, dst, "resync", skipped, number=number))
            events += [decode_frame(ts, src, dst, raw, d.from_server, number) for raw in frames]
        n = d.decoder.buffered
        if d.decoder.synced:
            if n:
                events.append(StreamNote(ts, src, dst, "error", n, f"{why} inside a frame ({n} bytes)", number))
        elif n + d.decoder.searching:
            # still looking for a frame start: these bytes were never part of a frame we saw
            events.append(StreamNote(ts, src, dst, "resync", n + d.decoder.searching,
                                     f"{why} before a frame start was found", number))

    def finish(self, ts: float | None = None) -> list[Event]:
        """End of capture: give up on every hole and report what stayed incomplete."""
        events: list[Event] = []
        ts = self.last_ts if ts is None else ts
        for (src, dst), d in list(self._dirs.items()):
            last = Packet(ts, src, dst, 0, 0, b"")
            self._skip_gaps(d, last, events)
            self._leftover(d, ts, src, dst, 0, "capture ended", events)
        self._dirs.clear()
        return events
