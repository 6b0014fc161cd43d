"""Connections recognised by content on any port: RocketMQ remoting and HA streams, not other traffic."""

from __future__ import annotations

import json
import random
from pathlib import Path

import dpkt
import pytest
from golden import CAPTURES, manifest
from test_sniffer_golden import load, tcp_of, write

from rocketpy.codecs.ha import build_offset_report, build_transfer_header
from rocketpy.sniffer.cli import main as sniff_main
from rocketpy.sniffer.hastream import HaUnit
from rocketpy.sniffer.pcap import read_events, read_packets
from rocketpy.sniffer.reassembly import CapturedFrame, StreamNote, Tracker
from rocketpy.spark.pcap import PcapOptions, pcap_batches

HA_PCAP = CAPTURES / "15-ha-master-slave.pcap"
#: the capture's ports moved to ones no default names (a deployment on other ports)
MOVED = {9876: 29876, 10911: 20911, 10909: 20909, 10912: 20912, 11911: 21911}

Packets = list[tuple[float, bytes]]


def sniff(path: Path, ports: list[int] | None = None) -> list:
    tracker = Tracker(ports)
    out: list = []
    with open(path, "rb") as f:
        for pkt in read_packets(f):
            out += tracker.packet(pkt)
    return out + tracker.finish()


def moved(packets: Packets, mapping: dict[int, int]) -> Packets:
    out = []
    for ts, buf in packets:
        found = tcp_of(buf)
        if found is not None:
            eth, tcp = found
            tcp.sport, tcp.dport = mapping.get(tcp.sport, tcp.sport), mapping.get(tcp.dport, tcp.dport)
            tcp.sum = 0
            eth.data.data = tcp
            buf = bytes(eth)
        out.append((ts, buf))
    return out


def segment(
    ts: float, src: tuple[str, int], dst: tuple[str, int], seq: int, ack: int, flags: int, data: bytes = b""
) -> tuple[float, bytes]:
    tcp = dpkt.tcp.TCP(sport=src[1], dport=dst[1], seq=seq % (1 << 32), ack=ack % (1 << 32), flags=flags, data=data)
    ip = dpkt.ip.IP(
        src=bytes(map(int, src[0].split("."))), dst=bytes(map(int, dst[0].split("."))), p=dpkt.ip.IP_PROTO_TCP, data=tcp
    )
    ip.len = len(bytes(ip))
    eth = dpkt.ethernet.Ethernet(src=b"\x00" * 6, dst=b"\x00" * 6, type=dpkt.ethernet.ETH_TYPE_IP, data=ip)
    return ts, bytes(eth)


def conversation(
    t0: float,
    client: tuple[str, int],
    server: tuple[str, int],
    writes: list[tuple[bool, bytes]],
    handshake: bool = True,
) -> Packets:
    """A TCP connection: handshake (or joined mid-stream), ``(from_client, bytes)`` writes, FIN both ways."""
    S, A, F, P = dpkt.tcp.TH_SYN, dpkt.tcp.TH_ACK, dpkt.tcp.TH_FIN, dpkt.tcp.TH_PUSH
    cseq, sseq = 1000, 5000
    out: Packets = []
    ts = t0
    if handshake:
        out.append(segment(ts, client, server, cseq, 0, S))
        out.append(segment(ts, server, client, sseq, cseq + 1, S | A))
        cseq, sseq = cseq + 1, sseq + 1
    for from_client, data in writes:
        ts += 0.001
        if from_client:
            out.append(segment(ts, client, server, cseq, sseq, P | A, data))
            cseq += len(data)
        else:
            out.append(segment(ts, server, client, sseq, cseq, P | A, data))
            sseq += len(data)
    out.append(segment(ts + 0.001, client, server, cseq, sseq, F | A))
    out.append(segment(ts + 0.002, server, client, sseq, cseq + 1, F | A))
    return out


def other_traffic(rng: random.Random, t0: float) -> Packets:
    """HTTP, TLS-looking and random binary connections on ports nobody said are RocketMQ."""
    http = conversation(
        t0,
        ("10.0.0.1", 40001),
        ("10.0.0.2", 8080),
        [
            (True, b"GET /index.html HTTP/1.1\r\nHost: example\r\nAccept: */*\r\n\r\n"),
            (False, b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nhello world\n"),
        ],
    )
    tls = conversation(
        t0,
        ("10.0.0.1", 40002),
        ("10.0.0.3", 443),
        [
            (True, bytes.fromhex("160301") + rng.randbytes(300)),
            (False, bytes.fromhex("160303") + rng.randbytes(900)),
        ],
    )
    flows = [http, tls]
    for i in range(40):
        writes = [(rng.random() < 0.5, rng.randbytes(rng.randint(1, 1500))) for _ in range(rng.randint(1, 6))]
        port = rng.randint(1024, 30000)
        flows.append(
            conversation(t0 + i * 0.01, ("10.0.1.1", 50000 + i), ("10.0.1.2", port), writes, handshake=i % 2 == 0)
        )
    # bytes that start like an HA stream (zeros) but go on like nothing RocketMQ writes
    flows.append(
        conversation(
            t0,
            ("10.0.2.1", 45000),
            ("10.0.2.2", 7000),
            [
                (True, bytes(8)),
                (False, bytes(12) + rng.randbytes(40)),
                (True, rng.randbytes(64)),
            ],
        )
    )
    return [p for flow in flows for p in flow]


def test_other_traffic_gives_no_events(tmp_path: Path) -> None:
    rng = random.Random(12)
    packets = other_traffic(rng, 1_800_000_000.0)
    events = sniff(write(tmp_path / "other.pcap", 1, packets))
    assert events == []


@pytest.mark.parametrize("seed", range(20))
def test_random_connections_are_never_taken_for_rocketmq(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    packets = []
    for i in range(30):
        writes = [(rng.random() < 0.5, rng.randbytes(rng.choice([8, 12, 20, 64, 700, 1460]))) for _ in range(8)]
        packets += conversation(
            1.0 + i, ("10.9.0.1", 40000 + i), ("10.9.0.2", 2000 + i), writes, handshake=rng.random() < 0.5
        )
    assert sniff(write(tmp_path / "random.pcap", 1, packets)) == []


def test_a_listed_port_is_decoded_whatever_it_carries(tmp_path: Path) -> None:
    """--port 8080 says it is RocketMQ: the HTTP bytes are read as frames that do not decode (as before)."""
    rng = random.Random(3)
    path = write(tmp_path / "other.pcap", 1, other_traffic(rng, 1.0))
    events = sniff(path, [8080])
    assert events and all(isinstance(e, (StreamNote, CapturedFrame)) for e in events)
    assert all((e.src[1] == 8080 or e.dst[1] == 8080) for e in events)


@pytest.mark.parametrize("handshakes", [True, False], ids=["from-syn", "mid-stream"])
def test_ha_stream_recognised_on_any_port(handshakes: bool, tmp_path: Path) -> None:
    writes = [(True, build_offset_report(0)), (False, build_transfer_header(4096, 0))]
    offset = 4096
    for size in (100, 250, 30):
        writes += [(False, build_transfer_header(offset, size)), (False, bytes(size))]
        offset += size
        writes.append((True, build_offset_report(offset)))
    path = write(
        tmp_path / "ha.pcap",
        1,
        conversation(1.0, ("10.0.0.5", 41000), ("10.0.0.6", 33333), writes, handshake=handshakes),
    )
    events = sniff(path)
    assert all(isinstance(e, HaUnit) for e in events)
    if handshakes:
        assert [(e.kind, e.offset, e.size) for e in events] == [
            ("report", 0, 0),
            ("transfer", 4096, 0),
            ("transfer", 4096, 100),
            ("report", 4196, 0),
            ("transfer", 4196, 250),
            ("report", 4446, 0),
            ("transfer", 4446, 30),
            ("report", 4476, 0),
        ]
    else:  # joined mid-stream: recognised once the segments show the units
        assert [e.kind for e in events].count("transfer") >= 3


def test_master_slave_capture_on_other_ports(tmp_path: Path) -> None:
    """Moved to ports no default names and mixed with other traffic: the same frames and HA units."""
    linktype, packets = load(HA_PCAP)
    noise = other_traffic(random.Random(5), packets[0][0])
    mixed = sorted(moved(packets, MOVED) + noise, key=lambda p: p[0])
    path = write(tmp_path / "moved.pcap", linktype, mixed)
    got = [e for e in sniff(path) if not isinstance(e, StreamNote)]
    want = [e for e in sniff(HA_PCAP) if not isinstance(e, StreamNote)]
    assert len(got) == len(want) == 335 + 50
    key = lambda e: (e.number and 0, e.raw if isinstance(e, CapturedFrame) else (e.kind, e.offset, e.data))  # noqa: E731
    assert sorted(map(key, got), key=repr) == sorted(map(key, want), key=repr)
    frames = [e for e in got if isinstance(e, CapturedFrame)]
    assert {f.conn[1][1] for f in frames} == {29876, 20911, 20909, 21911}
    assert {e.conn[1][1] for e in got if isinstance(e, HaUnit)} == {20912}
    # the Spark source reads them too
    with open(path, "rb") as f:
        assert sum(isinstance(e, CapturedFrame) for e in read_events(f)) == 335
    import pyarrow as pa

    table = pa.Table.from_batches(list(pcap_batches(str(path), PcapOptions(ha_stream=True))))
    kinds = table.column("kind").to_pylist()
    assert kinds.count("request") + kinds.count("response") == 335
    assert kinds.count("ha_report") == kinds.count("ha_transfer") == 25
    narrowed = pa.Table.from_batches(list(pcap_batches(str(path), PcapOptions(ports=frozenset({21911})))))
    assert set(narrowed.column("server").to_pylist()) == {"127.0.0.1:21911"}


def test_sniff_port_option_is_repeatable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert (
        sniff_main(["sniff", "-r", str(HA_PCAP), "--json", "--no-progress", "--port", "9876", "--port", "10912"]) == 0
    )
    objs = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert sum("ha" in o for o in objs) == 50
    frames = [o for o in objs if "ha" not in o]
    assert frames and all("9876" in (o["src"] + o["dst"]) for o in frames)
    assert len(frames) == sum(
        n for code, n in manifest(HA_PCAP)["traffic"]["requests"].items() if code.split()[0] in ("103", "104", "105")
    ) + sum(
        n
        for code, answers in manifest(HA_PCAP)["traffic"]["responsesByRequest"].items()
        if code.split()[0] in ("103", "104", "105")
        for n in answers.values()
    )
