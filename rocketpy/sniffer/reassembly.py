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
from ..codecs.ha import looks_like_ha
from .framing import StreamDecoder, quick_frame_start, remoting_verdict
from .hastream import HaDecoder, HaUnit
from .packet import TH_RST, Endpoint, Packet

__all__ = [
    "DEFAULT_PORTS",
    "CapturedFrame",
    "Event",
    "Gap",
    "HaUnit",
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
            return (
                f"skipped {self.size} bytes: {self.detail}"
                if self.detail
                else (f"skipped {self.size} bytes to the next frame start")
            )
        return self.detail


Event = CapturedFrame | StreamNote | HaUnit


def decode_frame(
    ts: float, src: Endpoint, dst: Endpoint, raw: bytes, from_server: bool, number: int = 0
) -> CapturedFrame:
    try:
        cmd: RemotingCommand | None = RemotingCommand.decode(raw)
        err = None
    except CodecError as exc:
        cmd, err = None, str(exc)
    return CapturedFrame(ts, src, dst, raw, cmd, err, from_server, number)


#: what a connection turned out to carry
_PENDING, _REMOTING, _HA, _OTHER = 0, 1, 2, 3
#: first bytes of each direction kept to judge a connection by; and how much a connection may hold
#: back (in bytes, in segments) while its kind is undecided before giving up on it
_PROBE_MAX = 160 * 1024
_HOLD_MAX_BYTES = 256 * 1024
_HOLD_MAX_SEGMENTS = 512


class _Conn:
    """Both directions of one connection, and what it was found to carry."""

    __slots__ = ("dirs", "held", "held_bytes", "kind", "listed", "master")

    def __init__(self, listed: bool) -> None:
        self.kind = _PENDING
        self.listed = listed  # on a port given (or a default one): RocketMQ unless shown otherwise
        self.dirs: list[_Direction] = []
        #: while undecided: (direction, packet, contiguous bytes or None for "bytes were lost here")
        self.held: list[tuple[_Direction, Packet, bytes | None]] = []
        self.held_bytes = 0
        self.master: Endpoint | None = None  # an HA connection's master side


class _Direction:
    __slots__ = ("conn", "cuts", "decoder", "dst", "from_server", "ha", "probe", "probe_synced", "src", "tcp")

    def __init__(
        self, synced: bool, from_server: bool, max_pending: int, conn: _Conn, src: Endpoint, dst: Endpoint
    ) -> None:
        self.tcp = HalfStream(max_pending)
        self.decoder = StreamDecoder(synced)
        self.from_server = from_server
        self.conn = conn
        self.src = src
        self.dst = dst
        self.probe = bytearray()
        self.probe_synced = synced
        #: where segments began in ``probe`` (judged when the stream was joined mid-way)
        self.cuts: list[int] = []
        self.ha: HaDecoder | None = None
        conn.dirs.append(self)


class Tracker:
    """Both directions of every connection: packets in, frames, HA units and notes out.

    A connection is recognised by what it carries, on any port: RemotingCommand frames (a
    plausible length, serialize type and header), or a master/slave HA stream (transfers that
    chain, non-decreasing offset reports). ``ports`` narrows that to connections with one of
    these ports at either end; without it every TCP connection is looked at. A connection on a
    given port (or, without ``ports``, on a default one) that is not recognisably HA is decoded
    as remoting whatever it holds, with resynchronisation and notes; on any other port traffic
    that is neither is left alone.
    """

    def __init__(self, ports: Iterable[int] | None = None, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self.ports: frozenset[int] | None = frozenset(ports) if ports is not None else None
        self.listed = self.ports if self.ports is not None else DEFAULT_PORTS
        self.max_pending = max_pending
        self._dirs: dict[tuple[Endpoint, Endpoint], _Direction] = {}
        #: client side of connections whose SYN was seen
        self._clients: dict[tuple[Endpoint, Endpoint], Endpoint] = {}
        self.last_ts = 0.0

    def wants(self, pkt: Packet) -> bool:
        return self.ports is None or pkt.src[1] in self.ports or pkt.dst[1] in self.ports

    def _from_server(self, src: Endpoint, dst: Endpoint) -> bool:
        client = self._clients.get((src, dst) if src < dst else (dst, src))
        if client is not None:
            return client == dst
        if dst[1] in self.listed:
            return False
        if src[1] in self.listed:
            return True
        return src[1] < dst[1]  # no handshake seen: the server is the end not on an ephemeral port

    def _direction(self, key: tuple[Endpoint, Endpoint], synced: bool, opening: bool) -> _Direction:
        src, dst = key
        rev = None if opening else self._dirs.get((dst, src))
        if rev is not None:
            conn = rev.conn
        else:
            conn = _Conn(src[1] in self.listed or dst[1] in self.listed)
        d = self._dirs[key] = _Direction(synced, self._from_server(src, dst), self.max_pending, conn, src, dst)
        if conn.kind == _HA:
            d.ha = HaDecoder(from_master=src == conn.master)
        return d

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
                d = self._direction(key, True, not pkt.ack)
                d.tcp.syn(pkt.seq)
            if not pkt.payload:
                return []
        elif d is not None and d.conn.kind == _OTHER:
            if pkt.fin_or_rst:
                self._forget(key)
            return []
        events: list[Event] = []
        if pkt.ack:
            self._check_acked(pkt, events)
        if not pkt.payload:
            if pkt.fin_or_rst and d is not None:
                events += self._close(key, d, pkt, seq)
            return events
        if d is None:  # first sight of this direction is mid-stream: resync before trusting bytes
            d = self._direction(key, False, False)
        data = d.tcp.add(seq, pkt.payload)
        if data:
            self._feed(d, pkt, data, events)
        if d.tcp.overflowing:
            self._skip_gaps(d, pkt, events)
        if pkt.fin_or_rst:
            events += self._close(key, d, pkt, seq + len(pkt.payload))
        return events

    # -- by kind of connection -------------------------------------------------------------
    def _feed(self, d: _Direction, pkt: Packet, data: bytes, events: list[Event]) -> None:
        kind = d.conn.kind
        if kind == _REMOTING:
            self._decode(d, pkt, data, events)
        elif kind == _HA:
            self._ha(d, pkt, data, events)
        elif kind == _PENDING:
            conn = d.conn
            if conn.listed and d.probe_synced and not conn.held and quick_frame_start(data):
                conn.kind = _REMOTING  # the common case, decided without holding anything back
                for other in conn.dirs:
                    other.probe = bytearray()
                self._decode(d, pkt, data, events)
                return
            conn.held.append((d, pkt, data))
            conn.held_bytes += len(data)
            if len(d.probe) < _PROBE_MAX:
                d.cuts.append(len(d.probe))
                d.probe += data[: _PROBE_MAX - len(d.probe)]
            self._judge(conn, False, events)

    def _lose(self, d: _Direction, pkt: Packet, events: list[Event]) -> None:
        """Bytes of ``d`` went missing: what follows is not in step."""
        kind = d.conn.kind
        if kind == _REMOTING:
            d.decoder.lose_sync()
        elif kind == _PENDING:
            d.conn.held.append((d, pkt, None))
            d.probe.clear()
            d.cuts.clear()
            d.probe_synced = False
        elif kind == _HA and d.ha is not None:
            _stop_ha(d, pkt, 0, "HA stream out of step after a gap: the rest of it is not decoded", events)

    def _judge(self, conn: _Conn, final: bool, events: list[Event]) -> None:
        """Decide what ``conn`` carries if its first bytes tell (or must: ``final``, too much held)."""
        if not final and (conn.held_bytes > _HOLD_MAX_BYTES or len(conn.held) > _HOLD_MAX_SEGMENTS):
            final = True
        kind = _classify(conn, final)
        if kind is None:
            return
        if kind == _OTHER and conn.listed:
            kind = _REMOTING  # a port said to be RocketMQ: decode it anyway, and say what is wrong
        conn.kind = kind
        held, conn.held, conn.held_bytes = conn.held, [], 0
        for d in conn.dirs:
            d.probe = bytearray()
            d.cuts = []
            if kind == _HA:
                d.ha = HaDecoder(from_master=d.src == conn.master)
        if kind == _OTHER:
            return
        for d, pkt, data in held:
            if data is None:
                self._lose(d, pkt, events)
            else:
                self._feed(d, pkt, data, events)

    def _ha(self, d: _Direction, pkt: Packet, data: bytes, events: list[Event]) -> None:
        if d.ha is None:
            return
        try:
            events += d.ha.feed(pkt.ts, pkt.src, pkt.dst, data, pkt.number)
        except CodecError as exc:
            _stop_ha(d, pkt, len(data), f"HA stream: {exc}; the rest of it is not decoded", events)

    def _check_acked(self, pkt: Packet, events: list[Event]) -> None:
        """The peer acknowledging bytes we never saw means the capture missed them (not the network):
        report the gap now instead of waiting for a retransmission that will never come."""
        rev = self._dirs.get((pkt.dst, pkt.src))
        if rev is None or rev.tcp.next_seq is None or _seq_diff(pkt.ack_no, rev.tcp.next_seq) <= 0:
            return
        if rev.conn.kind == _OTHER:
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
        fake = Packet(pkt.ts, pkt.dst, pkt.src, 0, 0, b"", pkt.number)
        self._lose(rev, fake, events)
        data = rev.tcp.resume()
        if data:
            self._feed(rev, fake, data, events)

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
            self._lose(d, pkt, events)
            data = d.tcp.resume()
            if data:
                self._feed(d, pkt, data, events)

    def _forget(self, key: tuple[Endpoint, Endpoint]) -> None:
        self._dirs.pop(key, None)
        src, dst = key
        if (dst, src) not in self._dirs:  # both ways closed: forget who the client was
            self._clients.pop((src, dst) if src < dst else (dst, src), None)

    def _close(self, key: tuple[Endpoint, Endpoint], d: _Direction, pkt: Packet, end_seq: int) -> list[Event]:
        # FIN may overtake the last data segments when reordered: keep the state while
        # bytes before the FIN are still missing (finish() reports them)
        if d.tcp.pending:
            return []
        missing = d.tcp.next_seq is not None and _seq_diff(end_seq, d.tcp.next_seq) > 0
        if missing and not pkt.flags & TH_RST:  # a reset's sequence number says nothing about data
            return []
        events: list[Event] = []
        if d.conn.kind == _PENDING:
            self._judge(d.conn, True, events)
        self._leftover(d, pkt.ts, pkt.src, pkt.dst, pkt.number, "connection closed", events)
        self._forget(key)
        return events

    @staticmethod
    def _leftover(
        d: _Direction, ts: float, src: Endpoint, dst: Endpoint, number: int, why: str, events: list[Event]
    ) -> None:
        kind = d.conn.kind
        if kind == _HA:
            n = d.ha.buffered if d.ha is not None else 0
            if n:
                events.append(StreamNote(ts, src, dst, "error", n, f"{why} inside an HA unit ({n} bytes)", number))
            return
        if kind != _REMOTING:
            return
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
            events.append(
                StreamNote(
                    ts, src, dst, "resync", n + d.decoder.searching, f"{why} before a frame start was found", number
                )
            )

    def finish(self, ts: float | None = None) -> list[Event]:
        """End of capture: give up on every hole and report what stayed incomplete."""
        events: list[Event] = []
        ts = self.last_ts if ts is None else ts
        for (src, dst), d in list(self._dirs.items()):
            last = Packet(ts, src, dst, 0, 0, b"")
            self._skip_gaps(d, last, events)
        for d in list(self._dirs.values()):
            if d.conn.kind == _PENDING:
                self._judge(d.conn, True, events)
        for (src, dst), d in list(self._dirs.items()):
            self._leftover(d, ts, src, dst, 0, "capture ended", events)
        self._dirs.clear()
        return events


def _classify(conn: _Conn, final: bool) -> int | None:
    """What the first bytes of a connection's directions say it is; None while they cannot tell."""
    dirs = [d for d in conn.dirs if d.probe]
    undecided = False
    for d in dirs:
        verdict = remoting_verdict(d.probe, d.probe_synced, final, strict=not conn.listed)
        if verdict:
            return _REMOTING
        undecided = undecided or verdict is None
    a = dirs[0] if dirs else None
    b = next((d for d in conn.dirs if d is not a), None)
    if a is not None:
        pa, pb = a.probe, b.probe if b is not None else bytearray()
        ca = None if a.probe_synced else a.cuts
        cb = None if b is None or b.probe_synced else b.cuts
        for to_master, to_slave, master, cm, cs in ((pa, pb, a.dst, ca, cb), (pb, pa, a.src, cb, ca)):
            verdict = looks_like_ha(to_master, to_slave, final, cm, cs)
            if verdict:
                conn.master = master
                return _HA
            undecided = undecided or verdict is None
    if undecided and not final:
        return None
    return _OTHER


def _stop_ha(d: _Direction, pkt: Packet, size: int, text: str, events: list[Event]) -> None:
    """Stop decoding one direction of an HA stream, and say so once."""
    d.ha = None
    events.append(StreamNote(pkt.ts, pkt.src, pkt.dst, "error", size, text, pkt.number))
