"""TCP reassembly and frame resynchronisation, sans-IO."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketpy.codecs import RemotingCommand, SerializeType
from rocketpy.sniffer.packet import TH_ACK, TH_FIN, TH_SYN, Packet
from rocketpy.sniffer.pairing import Pairer
from rocketpy.sniffer.reassembly import CapturedFrame, HalfStream, StreamDecoder, StreamNote, Tracker


def frames_of(n: int, seed: int = 1) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        stype = SerializeType.ROCKETMQ if i % 3 == 2 else SerializeType.JSON
        cmd = RemotingCommand(
            code=rng.choice([10, 11, 105, 310]),
            opaque=i,
            flag=rng.choice([0, 2]),
            ext_fields={"topic": f"T{i}", "queueId": str(i % 4)},
            body=bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300))) or None,
            serialize_type=stype,
        )
        out.append(cmd.encode())
    return out


def chunks(data: bytes, rng: random.Random, most: int = 200) -> list[tuple[int, bytes]]:
    """(offset, piece) segments of ``data``."""
    out, pos = [], 0
    while pos < len(data):
        n = rng.randint(1, most)
        out.append((pos, data[pos : pos + n]))
        pos += n
    return out


# -- HalfStream ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), isn=st.integers(0, (1 << 32) - 1), window=st.integers(1, 8))
def test_halfstream_reorders_and_drops_duplicates(seed: int, isn: int, window: int) -> None:
    rng = random.Random(seed)
    data = bytes(rng.randrange(256) for _ in range(3000))
    segs = chunks(data, rng)
    # local reordering, duplicates, and resends that overlap their neighbours
    shuffled = []
    for k in range(0, len(segs), window):
        part = segs[k : k + window]
        rng.shuffle(part)
        shuffled += part
    for _ in range(len(segs) // 4):
        off, piece = rng.choice(segs)
        shuffled.insert(rng.randrange(len(shuffled) + 1), (off, piece))
        shuffled.append((max(0, off - 5), data[max(0, off - 5) : off + len(piece) + 5]))
    hs = HalfStream()
    hs.syn((isn - 1) % (1 << 32))  # sequence numbers wrap around 2**32 in some examples
    out = b"".join(hs.add((isn + off) % (1 << 32), piece) for off, piece in shuffled)
    assert out == data
    assert not hs.pending and hs.pending_bytes == 0


def test_halfstream_gap_is_skipped_and_reported() -> None:
    hs = HalfStream()
    hs.syn(99)
    assert hs.add(100, b"abc") == b"abc"
    assert hs.add(110, b"xyz") == b""  # 103..109 never captured
    data, lost = hs.flush()
    assert (data, lost) == (b"xyz", 7)
    assert hs.gaps[0].size == 7


# -- StreamDecoder -----------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), junk=st.binary(max_size=400).map(lambda b: b.replace(b"\x00", b"!")))
def test_resync_after_junk_finds_every_frame(seed: int, junk: bytes) -> None:
    """A stream joined mid-frame: junk (no NUL bytes, so no plausible length) then whole frames."""
    rng = random.Random(seed)
    frames = frames_of(12, seed)
    stream = junk.replace(b"\x01", b"?") + b"".join(frames)
    dec = StreamDecoder(synced=False)
    got, skipped = [], 0
    for _off, piece in chunks(stream, rng, 90):
        f, s = dec.feed(piece)
        got += f
        skipped += s
    assert got == frames
    assert skipped == len(junk)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), cut=st.integers(1, 2000))
def test_resync_from_inside_a_frame(seed: int, cut: int) -> None:
    """Start anywhere inside a stream of real frames: every frame after the cut comes out."""
    rng = random.Random(seed)
    frames = frames_of(15, seed)
    stream = b"".join(frames)
    cut = cut % len(frames[0] + frames[1])
    starts = [sum(len(f) for f in frames[:i]) for i in range(len(frames))]
    dec = StreamDecoder(synced=False)
    got: list[bytes] = []
    for _off, piece in chunks(stream[cut:], rng, 120):
        got += dec.feed(piece)[0]
    whole_after_cut = [f for f, s in zip(frames, starts) if s >= cut]
    assert got[-len(whole_after_cut):] == whole_after_cut
    # a false start inside the cut frame's body is possible but must not swallow real frames
    assert len(got) <= len(whole_after_cut) + 1


def test_bad_length_in_step_stream_resyncs() -> None:
    frames = frames_of(3)
    dec = StreamDecoder()
    got, skipped = dec.feed(b"\xff\xff\xff\xff\x00\x00\x00\x00" + b"".join(frames))
    assert got == frames and skipped == 8


# -- Tracker -------------------------------------------------------------------------------

CLIENT, SERVER = ("10.0.0.1", 40000), ("10.0.0.2", 10911)


def _pkt(src, dst, seq, payload=b"", flags=TH_ACK, ack=0, ts=0.0) -> Packet:  # type: ignore[no-untyped-def]
    return Packet(ts, src, dst, seq, flags, payload, 0, ack)


def test_tracker_pairs_both_directions_and_knows_the_client_from_the_syn() -> None:
    req = RemotingCommand(code=105, opaque=7, ext_fields={"topic": "T"})
    resp = req.response(0, body=b"{}")
    t = Tracker(ports=[10911])
    ev = t.packet(_pkt(CLIENT, SERVER, 1000, flags=TH_SYN))
    ev += t.packet(_pkt(SERVER, CLIENT, 5000, flags=TH_SYN | TH_ACK, ack=1001))
    raw = req.encode()
    ev += t.packet(_pkt(CLIENT, SERVER, 1001 + 10, raw[10:], ts=1.0))  # out of order
    ev += t.packet(_pkt(CLIENT, SERVER, 1001, raw[:10], ts=1.1))
    ev += t.packet(_pkt(SERVER, CLIENT, 5001, resp.encode(), ack=1001 + len(raw), ts=1.5))
    ev += t.packet(_pkt(CLIENT, SERVER, 1001 + len(raw), flags=TH_FIN | TH_ACK))
    ev += t.finish()
    frames = [e for e in ev if isinstance(e, CapturedFrame)]
    assert [f.command for f in frames] == [req, resp]
    assert [f.from_server for f in frames] == [False, True]
    pairer = Pairer()
    for f in frames:
        pairer.add(f)
    assert frames[1].request is frames[0] and frames[1].latency == pytest.approx(0.4)
    assert frames[1].command.request_code == 105
    assert not [e for e in ev if isinstance(e, StreamNote)]


def test_ack_beyond_captured_bytes_reports_the_gap_at_once() -> None:
    """The peer acknowledged bytes the capture never saw: a gap now, not at the end of the capture."""
    a, b = frames_of(2)
    t = Tracker(ports=[10911])
    t.packet(_pkt(CLIENT, SERVER, 99, flags=TH_SYN))
    t.packet(_pkt(CLIENT, SERVER, 100, a[:20]))
    # a[20:] lost; the server acknowledges all of a, then b arrives
    ev = t.packet(_pkt(SERVER, CLIENT, 1, b"", ack=100 + len(a)))
    assert [(e.kind, e.size) for e in ev if isinstance(e, StreamNote)] == [("gap", len(a) - 20)]
    ev = t.packet(_pkt(CLIENT, SERVER, 100 + len(a), b))
    assert [e.raw for e in ev if isinstance(e, CapturedFrame)] == [b]


def _captured(ts: float, src: tuple[str, int], dst: tuple[str, int], cmd: RemotingCommand) -> CapturedFrame:
    return CapturedFrame(ts, src, dst, cmd.encode(), cmd, from_server=src == SERVER)


def test_pairer_hands_back_the_requests_it_gives_up() -> None:
    """What a streaming consumer (the Spark pcap source) needs: requests held, then released."""
    pairer = Pairer(timeout=5.0)
    first = _captured(0.0, CLIENT, SERVER, RemotingCommand(code=11, opaque=1))
    assert pairer.add(first) == [] and pairer.waiting(first)
    oneway = _captured(0.5, CLIENT, SERVER, RemotingCommand(code=10, opaque=2, flag=2))
    assert pairer.add(oneway) == [] and not pairer.waiting(oneway)
    reused = _captured(1.0, CLIENT, SERVER, RemotingCommand(code=11, opaque=1))
    assert pairer.add(reused) == [first]  # the opaque came round again: the old one had no answer
    answer = _captured(1.5, SERVER, CLIENT, RemotingCommand(code=0, opaque=1, flag=1))
    assert pairer.add(answer) == []
    assert answer.request is reused and answer.command.request_code == 11 and answer.latency == pytest.approx(0.5)
    old = _captured(2.0, CLIENT, SERVER, RemotingCommand(code=11, opaque=3))
    pairer.add(old)
    late = _captured(7.5, CLIENT, SERVER, RemotingCommand(code=11, opaque=4))
    assert pairer.add(late) == [old]  # 5.5 s of capture time without an answer
    assert pairer.drain() == [late] and pairer.outstanding() == []
    bounded = Pairer(max_pending=1)
    a = _captured(0.0, CLIENT, SERVER, RemotingCommand(code=11, opaque=5))
    bounded.add(a)
    assert bounded.add(_captured(0.1, CLIENT, SERVER, RemotingCommand(code=11, opaque=6))) == [a]
    assert bounded.forgotten == 1


def test_truncated_ipv6_header_is_no_segment() -> None:
    """Found by fuzzing: an IPv6 header cut inside its addresses raised ValueError from inet_ntop."""
    from rocketpy.sniffer.packet import LINKTYPE_IPV6, parse_tcp

    packet = bytes([0x60, 0, 0, 0, 0, 20, 6, 64]) + bytes(range(32)) + bytes(20)  # IPv6 + a bare TCP header
    for cut in range(1, 40 + 14):  # short of the TCP fields the sniffer reads
        assert parse_tcp(0.0, LINKTYPE_IPV6, packet[:cut]) is None
    whole = parse_tcp(0.0, LINKTYPE_IPV6, packet)
    assert whole is not None and whole.src[0] == "1:203:405:607:809:a0b:c0d:e0f"


def test_pcapng_block_too_short_for_its_type_is_a_format_error() -> None:
    """Found by fuzzing: an Enhanced Packet Block shorter than its fixed fields raised struct.error."""
    import io
    import struct

    from rocketpy.sniffer.pcap import CaptureFormatError, PacketReader

    shb = struct.pack("<II", 0x0A0D0D0A, 28) + b"\x4d\x3c\x2b\x1a" + struct.pack("<HHqI", 1, 0, -1, 28)
    idb = struct.pack("<IIHHII", 1, 20, 1, 0, 0, 20)
    for btype in (1, 2, 6):
        short = struct.pack("<III", btype, 16, 0) + struct.pack("<I", 16)
        with pytest.raises(CaptureFormatError, match="cut short"):
            list(PacketReader(io.BytesIO(shb + idb + short)))
