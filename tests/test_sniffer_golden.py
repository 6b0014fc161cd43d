"""The sniffer over the golden captures: every frame found, paired, decoded, as the manifests say,
and the same commands again from damaged copies (mid-stream start, reordering, duplicates, gaps)."""

from __future__ import annotations

import io
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import dpkt
import pytest
from golden import PCAPS, manifest

from rocketpy.codecs import RequestCode
from rocketpy.codecs.codes import request_code_name
from rocketpy.sniffer.describe import endpoint, topic_of
from rocketpy.sniffer.pairing import Pairer
from rocketpy.sniffer.pcap import read_packets
from rocketpy.sniffer.reassembly import CapturedFrame, StreamNote, Tracker

ids = [p.stem for p in PCAPS]

Packets = list[tuple[float, bytes]]


# -- capture plumbing ---------------------------------------------------------------


def sniff(path: Path | io.BytesIO) -> tuple[list[CapturedFrame], list[StreamNote], Pairer]:
    tracker, pairer = Tracker(), Pairer()
    events = []
    with (open(path, "rb") if isinstance(path, Path) else path) as f:
        for pkt in read_packets(f):
            events += tracker.packet(pkt)
    events += tracker.finish()
    frames = [e for e in events if isinstance(e, CapturedFrame)]
    for fr in frames:
        pairer.add(fr)
    return frames, [e for e in events if isinstance(e, StreamNote)], pairer


def load(pcap: Path) -> tuple[int, Packets]:
    with open(pcap, "rb") as f:
        reader = dpkt.pcap.Reader(f)
        return reader.datalink(), [(ts, bytes(buf)) for ts, buf in reader]


def write(path: Path, linktype: int, packets: Packets) -> Path:
    with open(path, "wb") as f:
        writer = dpkt.pcap.Writer(f, linktype=linktype)
        for ts, buf in packets:
            writer.writepkt(buf, ts)
    return path


def tcp_of(buf: bytes) -> tuple[dpkt.ethernet.Ethernet, dpkt.tcp.TCP] | None:
    eth = dpkt.ethernet.Ethernet(buf)
    ip = eth.data
    if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.tcp.TCP):
        return eth, ip.data
    return None


def direction(buf: bytes) -> tuple | None:
    found = tcp_of(buf)
    if found is None:
        return None
    eth, tcp = found
    return (eth.data.src, tcp.sport, eth.data.dst, tcp.dport)


def rebuild(buf: bytes, seq: int, data: bytes) -> bytes:
    """The same packet carrying ``data`` at ``seq`` (lengths and checksums redone)."""
    eth, tcp = tcp_of(buf)  # type: ignore[misc]
    ip = eth.data
    tcp.seq = seq % (1 << 32)
    tcp.data = data
    tcp.sum = 0
    ip.data = tcp
    ip.len = ip.__hdr_len__ + len(ip.opts) + len(bytes(tcp))
    ip.sum = 0
    eth.data = ip
    return bytes(eth)


def by_direction(frames: list[CapturedFrame]) -> dict[tuple, list]:
    out: dict[tuple, list] = {}
    for fr in frames:
        out.setdefault((fr.src, fr.dst), []).append(fr.command)
    return out


def runs(packets: Packets) -> list[list[int]]:
    """Indexes of data packets sent one way between two packets of the other way (ACKs included).

    Reordering inside such a run is what a network can do; moving a segment after
    the peer's acknowledgement of it, or after the response it caused, is not.
    The first run of a direction whose SYN is not in the capture is left out: where
    such a stream starts is only known from the first segment seen.
    """
    out: list[list[int]] = []
    last: dict[tuple, tuple] = {}  # connection → (direction, run index)
    synced: set[tuple] = set()
    frozen: set[int] = set()
    for i, (_ts, buf) in enumerate(packets):
        d = direction(buf)
        if d is None:
            continue
        tcp = tcp_of(buf)[1]  # type: ignore[index]
        if tcp.flags & dpkt.tcp.TH_SYN:
            synced.add(d)
        conn = tuple(sorted([d[:2], d[2:]]))
        prev = last.get(conn)
        if prev is None or prev[0] != d:
            out.append([])
            prev = last[conn] = (d, len(out) - 1)
        if tcp.data:
            if d not in synced:
                frozen.add(prev[1])
                synced.add(d)  # only its first run with data
            out[prev[1]].append(i)
    return [r for k, r in enumerate(out) if r and k not in frozen]


def mutate(packets: Packets, fn: Callable[[list[int], Packets, random.Random], list[tuple[float, bytes]]],
           seed: int = 7) -> Packets:
    """Apply ``fn`` to each run; its result takes the run's place (extra packets after its last slot)."""
    rng = random.Random(seed)
    out: list[tuple[float, bytes] | None] = list(packets)
    extra: dict[int, Packets] = {}
    for run in runs(packets):
        new = fn(run, packets, rng)
        for k, (_ts, buf) in enumerate(new):
            slot = run[min(k, len(run) - 1)]
            item = (packets[slot][0], buf)
            if k < len(run):
                out[slot] = item
            else:
                extra.setdefault(run[-1], []).append(item)
    result: Packets = []
    for i, item in enumerate(out):
        if item is not None:
            result.append(item)
        result += extra.get(i, [])
    return result


# -- the captures as they are ------------------------------------------------------------


@pytest.mark.parametrize("pcap", PCAPS, ids=ids)
def test_every_frame_found_paired_and_decoded(pcap: Path) -> None:
    traffic = manifest(pcap)["traffic"]
    frames, notes, pairer = sniff(pcap)
    packet_ts = [ts for ts, _ in load(pcap)[1]]  # by capture frame number - 1
    assert notes == []
    assert len(frames) == traffic["frames"]
    assert all(fr.command is not None and fr.error is None for fr in frames)
    responses = [fr for fr in frames if fr.command.is_response]
    assert sum(fr.request is None for fr in responses) == traffic["unpairedResponses"]
    for fr in responses:
        if fr.request is not None:
            assert fr.command.request_code == fr.request.command.code
            assert fr.command.opaque == fr.request.command.opaque
            assert (fr.src, fr.dst) == (fr.request.dst, fr.request.src)
            # the time between the packets that completed the request and its response, as dpkt reads them
            assert fr.request.number < fr.number
            assert fr.latency == packet_ts[fr.number - 1] - packet_ts[fr.request.number - 1]
    # requests without response: non-oneway requests still pending at the end
    unanswered = Counter(f"{fr.command.code} {request_code_name(fr.command.code)}" for fr in pairer.outstanding())
    assert dict(unanswered) == traffic["requestsWithoutResponse"]
    assert len(frames) - sum(fr.request is not None for fr in responses) * 2 - traffic["unpairedResponses"] == sum(
        traffic["requestsWithoutResponse"].values()
    ) + sum(traffic["onewayRequests"].values())


@pytest.mark.parametrize("pcap", PCAPS, ids=ids)
def test_connections_and_directions_match_manifest(pcap: Path) -> None:
    traffic = manifest(pcap)["traffic"]
    frames, _notes, _pairer = sniff(pcap)
    seen: Counter[tuple[str, str, str]] = Counter()
    for fr in frames:
        client, server = fr.conn
        seen[(endpoint(client), endpoint(server), "toClient" if fr.from_server else "toServer")] += 1
    expected: Counter[tuple[str, str, str]] = Counter()
    for c in traffic["connections"]:
        for way in ("toServer", "toClient"):
            if c[f"frames{way[0].upper()}{way[1:]}"]:
                expected[(c["client"], c["server"], way)] = c[f"frames{way[0].upper()}{way[1:]}"]
    assert seen == expected


@pytest.mark.parametrize("pcap", PCAPS, ids=ids)
def test_topics_match_manifest(pcap: Path) -> None:
    traffic = manifest(pcap)["traffic"]
    frames, _notes, _pairer = sniff(pcap)
    send_codes = {RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE,
                  RequestCode.SEND_REPLY_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2}
    sends = Counter(topic_of(fr) for fr in frames if not fr.command.is_response and fr.command.code in send_codes)
    pulls = Counter(topic_of(fr) for fr in frames
                    if not fr.command.is_response and fr.command.code == RequestCode.PULL_MESSAGE)
    assert dict(sends) == traffic["sendRequestsByTopic"]
    assert dict(pulls) == traffic["pullRequestsByTopic"]


def test_pcapng_from_a_pipe_gives_the_same_frames() -> None:
    """pcapng, read forward only (no seek), as from ``tcpdump -w - | rocketpy sniff -r -``."""
    pcap = PCAPS[2]
    linktype, packets = load(pcap)
    buf = io.BytesIO()
    writer = dpkt.pcapng.Writer(buf, linktype=linktype)
    for ts, data in packets:
        writer.writepkt(data, ts)

    class Pipe(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self.data = memoryview(data)

        def readable(self) -> bool:
            return True

        def readinto(self, b: bytearray) -> int:  # small reads, like a pipe
            n = min(len(b), 1000, len(self.data))
            b[:n] = self.data[:n]
            self.data = self.data[n:]
            return n

    got, notes, _ = sniff(io.BufferedReader(Pipe(buf.getvalue())))  # type: ignore[arg-type]
    want, _, _ = sniff(pcap)
    assert notes == []
    assert [f.raw for f in got] == [f.raw for f in want]
    assert [f.number for f in got] == [f.number for f in want]
    assert abs(got[0].ts - want[0].ts) < 1e-5


# -- damaged copies --------------------------------------------------------------------------


def _is_suffix(part: list, whole: list) -> bool:
    return not part or (len(part) <= len(whole) and whole[len(whole) - len(part):] == part)


@pytest.mark.parametrize("pcap", PCAPS, ids=ids)
@pytest.mark.parametrize("cut", [0.25, 0.5])
@pytest.mark.parametrize("chop", [0, 3, 9])
def test_mid_stream_capture_resynchronises(pcap: Path, cut: float, chop: int, tmp_path: Path) -> None:
    """Drop the first packets (and the first ``chop`` bytes of each direction's first segment left):
    every direction recovers at the next frame start and then sees exactly the original commands."""
    linktype, packets = load(pcap)
    n = int(len(packets) * cut)
    kept = packets[n:]
    chopped = set()
    out: Packets = []
    for ts, buf in kept:
        d = direction(buf)
        found = tcp_of(buf)
        if chop and d is not None and found is not None and found[1].data and d not in chopped:
            chopped.add(d)
            tcp = found[1]
            buf = rebuild(buf, tcp.seq + chop, bytes(tcp.data)[chop:])
        out.append((ts, buf))
    frames, notes, _ = sniff(write(tmp_path / "mid.pcap", linktype, out))
    original, _, _ = sniff(pcap)
    want = by_direction(original)
    got = by_direction(frames)
    assert all(fr.command is not None for fr in frames)
    after = {d: [f.command for f in original if (f.src, f.dst) == d and f.number > n] for d in want}
    for d, cmds in got.items():
        assert _is_suffix(cmds, want[d]), d
        # at most the one frame cut in two by the start of the capture is lost
        assert len(after[d]) - len(cmds) <= 1, d
    # skipped bytes are reported: resyncs, and gaps where a chopped segment followed a captured SYN
    assert {n.kind for n in notes} <= {"resync", "gap"}


@pytest.mark.parametrize("pcap", PCAPS, ids=ids)
def test_shuffled_and_duplicated_segments_give_the_same_commands(pcap: Path, tmp_path: Path) -> None:
    linktype, packets = load(pcap)

    def shuffle_split_duplicate(run: list[int], pk: Packets, rng: random.Random) -> Packets:
        pieces: Packets = []
        for i in run:
            ts, buf = pk[i]
            tcp = tcp_of(buf)[1]  # type: ignore[index]
            data = bytes(tcp.data)
            # split into up to three segments, so frames straddle packets
            cuts = sorted(rng.sample(range(1, len(data)), min(2, len(data) - 1))) if len(data) > 2 else []
            start = 0
            for end in [*cuts, len(data)]:
                pieces.append((ts, rebuild(buf, tcp.seq + start, data[start:end])))
                start = end
        rng.shuffle(pieces)
        # retransmissions: duplicates of some pieces, one overlapping two pieces' worth
        for _ in range(max(1, len(pieces) // 3)):
            pieces.insert(rng.randrange(len(pieces) + 1), rng.choice(pieces))
        return pieces

    damaged = write(tmp_path / "shuffled.pcap", linktype, mutate(packets, shuffle_split_duplicate))
    frames, notes, pairer = sniff(damaged)
    original, _, want_pairer = sniff(pcap)
    assert notes == []
    assert by_direction(frames) == by_direction(original)
    assert sum(f.request is not None for f in frames) == sum(f.request is not None for f in original)
    assert len(pairer.outstanding()) == len(want_pairer.outstanding())


@pytest.mark.parametrize("pcap", PCAPS[2:5], ids=ids[2:5])
def test_overlapping_retransmissions(pcap: Path, tmp_path: Path) -> None:
    """A retransmission that covers an already received segment plus new bytes is trimmed, not doubled."""
    linktype, packets = load(pcap)

    def overlap(run: list[int], pk: Packets, rng: random.Random) -> Packets:
        out: Packets = []
        for i in run:
            ts, buf = pk[i]
            tcp = tcp_of(buf)[1]  # type: ignore[index]
            data = bytes(tcp.data)
            half = len(data) // 2
            out.append((ts, rebuild(buf, tcp.seq, data[:half])))
            out.append((ts, rebuild(buf, tcp.seq, data)))  # resent whole, overlapping the first half
        return out

    frames, notes, _ = sniff(write(tmp_path / "overlap.pcap", linktype, mutate(packets, overlap)))
    original, _, _ = sniff(pcap)
    assert notes == []
    assert by_direction(frames) == by_direction(original)


@pytest.mark.parametrize("pcap", [p for p in PCAPS if manifest(p)["traffic"]["frames"] > 50],
                         ids=[p.stem for p in PCAPS if manifest(p)["traffic"]["frames"] > 50])
def test_lost_segment_is_a_reported_gap_not_the_end(pcap: Path, tmp_path: Path) -> None:
    linktype, packets = load(pcap)
    original, _, _ = sniff(pcap)
    # drop the data packet that completes a frame in the middle of the biggest direction
    biggest = Counter((f.src, f.dst) for f in original).most_common(1)[0][0]
    ours = [f for f in original if (f.src, f.dst) == biggest]
    victim = ours[len(ours) // 2]
    damaged = [p for i, p in enumerate(packets, 1) if i != victim.number]
    frames, notes, _ = sniff(write(tmp_path / "gap.pcap", linktype, damaged))
    gaps = [n for n in notes if n.kind == "gap"]
    assert len(gaps) == 1 and gaps[0].size > 0
    assert (gaps[0].src, gaps[0].dst) == biggest
    got = by_direction(frames)[biggest]
    lost = [f.command for f in original if f.number == victim.number and (f.src, f.dst) == biggest]
    assert got == [f.command for f in ours if f.command not in lost]
