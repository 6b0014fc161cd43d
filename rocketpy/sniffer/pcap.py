"""Read RemotingCommands out of pcap/pcapng captures (dpkt does the packet parsing)."""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import dpkt

from ..codecs.command import RemotingCommand
from ..codecs.errors import CodecError
from ..codecs.frame import FrameSplitter
from .reassembly import HalfStream

DEFAULT_PORTS = frozenset({9876, 10911, 10909, 10912})

Endpoint = tuple[str, int]


@dataclasses.dataclass
class CapturedFrame:
    """One whole RemotingCommand frame seen on the wire."""

    ts: float
    src: Endpoint
    dst: Endpoint
    raw: bytes
    command: RemotingCommand | None
    error: str | None = None

    @property
    def conn(self) -> tuple[Endpoint, Endpoint]:
        """The connection, client side first (the side whose port is not a server port)."""
        return (self.src, self.dst) if not self.from_server else (self.dst, self.src)

    from_server: bool = False


def _addr(raw: bytes) -> str:
    return socket.inet_ntop(socket.AF_INET6 if len(raw) == 16 else socket.AF_INET, raw)


def _tcp_packets(stream: BinaryIO) -> Iterator[tuple[float, str, str, dpkt.tcp.TCP]]:
    reader = dpkt.pcap.UniversalReader(stream)
    datalink = reader.datalink()
    for ts, buf in reader:
        try:
            if datalink == dpkt.pcap.DLT_EN10MB:
                ip = dpkt.ethernet.Ethernet(buf).data
            elif datalink == dpkt.pcap.DLT_LINUX_SLL:
                ip = dpkt.sll.SLL(buf).data
            elif datalink in (dpkt.pcap.DLT_RAW, 101, 228, 229):
                ip = dpkt.ip.IP(buf) if buf[0] >> 4 == 4 else dpkt.ip6.IP6(buf)
            elif datalink == dpkt.pcap.DLT_NULL or datalink == dpkt.pcap.DLT_LOOP:
                ip = dpkt.loopback.Loopback(buf).data
            else:
                continue
        except (dpkt.UnpackError, IndexError):
            continue
        if not isinstance(ip, (dpkt.ip.IP, dpkt.ip6.IP6)) or not isinstance(ip.data, dpkt.tcp.TCP):
            continue
        yield float(ts), _addr(ip.src), _addr(ip.dst), ip.data


class _Direction:
    def __init__(self) -> None:
        self.tcp = HalfStream()
        self.frames = FrameSplitter()
        self.broken = False


def read_frames(stream: BinaryIO, ports: Iterable[int] = DEFAULT_PORTS) -> Iterator[CapturedFrame]:
    """Every whole frame in capture order of completion, per connection and direction."""
    ports = frozenset(ports)
    dirs: dict[tuple[Endpoint, Endpoint], _Direction] = {}
    for ts, src_ip, dst_ip, tcp in _tcp_packets(stream):
        if tcp.sport not in ports and tcp.dport not in ports:
            continue
        key = ((src_ip, tcp.sport), (dst_ip, tcp.dport))
        d = dirs.get(key)
        if d is None or (tcp.flags & dpkt.tcp.TH_SYN and d.tcp.next_seq is not None and not tcp.data):
            d = dirs[key] = _Direction()
        if tcp.flags & dpkt.tcp.TH_SYN:
            d.tcp.syn(tcp.seq)
            continue
        data = d.tcp.add(tcp.seq, bytes(tcp.data))
        if not data or d.broken:
            continue
        d.frames.feed(data)
        try:
            for raw in d.frames:
                yield _frame(ts, key, raw, tcp.sport in ports)
        except CodecError as exc:
            d.broken = True
            yield CapturedFrame(ts, key[0], key[1], b"", None, f"stream lost: {exc}", tcp.sport in ports)


def _frame(ts: float, key: tuple[Endpoint, Endpoint], raw: bytes, from_server: bool) -> CapturedFrame:
    try:
        cmd: RemotingCommand | None = RemotingCommand.decode(raw)
        err = None
    except CodecError as exc:
        cmd, err = None, str(exc)
    return CapturedFrame(ts, key[0], key[1], raw, cmd, err, from_server)


def read_pcap(path: str, ports: Iterable[int] = DEFAULT_PORTS) -> list[CapturedFrame]:
    with open(path, "rb") as f:
        return list(read_frames(f, ports))


def pair_responses(frames: Iterable[CapturedFrame]) -> list[tuple[CapturedFrame, CapturedFrame | None]]:
    """(request, response) pairs by connection and opaque; sets ``request_code`` on responses."""
    pending: dict[tuple[object, int], CapturedFrame] = {}
    pairs: list[tuple[CapturedFrame, CapturedFrame | None]] = []
    index: dict[int, int] = {}
    for fr in frames:
        cmd = fr.command
        if cmd is None:
            continue
        # a request travels src→dst; its response dst→src
        if not cmd.is_response:
            index[id(fr)] = len(pairs)
            pairs.append((fr, None))
            if not cmd.is_oneway:
                pending[((fr.src, fr.dst), cmd.opaque)] = fr
        else:
            req = pending.pop(((fr.dst, fr.src), cmd.opaque), None)
            if req is None:
                pairs.append((fr, None))
                continue
            cmd.request_code = req.command.code if req.command else None
            pairs[index[id(req)]] = (req, fr)
    return pairs
