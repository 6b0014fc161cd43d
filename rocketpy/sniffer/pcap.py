"""Read RemotingCommands out of pcap/pcapng captures, from files or pipes.

The readers parse the file formats themselves, reading forward only, so
``tcpdump -w - | rocketpy sniff -r -`` works for pcapng too (dpkt's
UniversalReader seeks back to try the second format, which a pipe cannot do).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import BinaryIO

from .packet import LINKTYPE_ETHERNET, LINKTYPE_RAW, Packet, network_offset, parse_tcp
from .pairing import Pairer
from .reassembly import DEFAULT_PORTS, CapturedFrame, Endpoint, HaUnit, StreamNote, Tracker

__all__ = [
    "DEFAULT_PORTS",
    "CapturedFrame",
    "Endpoint",
    "CaptureFormatError",
    "HaUnit",
    "PacketReader",
    "PcapWriter",
    "pair_responses",
    "read_events",
    "read_frames",
    "read_packets",
    "read_pcap",
]

_CHUNK = 1 << 20

_PCAP_MAGIC = {
    b"\xd4\xc3\xb2\xa1": ("<", 1e-6),
    b"\xa1\xb2\xc3\xd4": (">", 1e-6),
    b"\x4d\x3c\xb2\xa1": ("<", 1e-9),
    b"\xa1\xb2\x3c\x4d": (">", 1e-9),
}
_PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
#: the smallest length of the blocks read here: type, length, fixed fields, trailing length
_PCAPNG_MIN_BLOCK = {1: 20, 2: 32, 3: 16, 6: 32}


class CaptureFormatError(ValueError):
    """The input is neither pcap nor pcapng, or is cut short in a header."""


class PacketReader:
    """Forward-only pcap/pcapng reader: iterate ``(ts, linktype, frame bytes)``.

    ``bytes_read`` counts consumed input, for a progress bar.
    """

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        # read1 returns what a pipe has now instead of blocking until the chunk is full,
        # so `tcpdump -w - | rocketpy sniff -r -` prints as packets come
        self._read = getattr(stream, "read1", stream.read)
        self._buf = b""
        self._pos = 0
        self.bytes_read = 0
        self.eof = False
        #: bytes of a record cut short at the end (a capture tcpdump did not finish writing); 0 if whole
        self.truncated = 0

    # -- buffering: read big chunks, slice records out of memory -----------------
    def _need(self, n: int) -> bool:
        """Make ``n`` bytes available at the cursor; False at end of input."""
        while len(self._buf) - self._pos < n:
            chunk = self._read(max(_CHUNK, n))
            if not chunk:
                self.eof = True
                return False
            self._buf = self._buf[self._pos :] + chunk
            self._pos = 0
        return True

    def _take(self, n: int) -> bytes:
        data = self._buf[self._pos : self._pos + n]
        self._pos += n
        self.bytes_read += n
        return data

    def __iter__(self) -> Iterator[tuple[float, int, bytes]]:
        if not self._need(4):
            return
        magic = self._buf[self._pos : self._pos + 4]
        if magic in _PCAP_MAGIC:
            yield from self._pcap()
        elif magic == _PCAPNG_SHB:
            yield from self._pcapng()
        else:
            raise CaptureFormatError(f"not a pcap or pcapng capture (magic {magic.hex()})")

    def _pcap(self) -> Iterator[tuple[float, int, bytes]]:
        if not self._need(24):
            raise CaptureFormatError("pcap file header is cut short")
        head = self._take(24)
        endian, scale = _PCAP_MAGIC[head[:4]]
        linktype = struct.unpack_from(endian + "I", head, 20)[0] & 0x0FFFFFFF
        rec = struct.Struct(endian + "IIII")
        while self._need(16):
            sec, frac, caplen, _origlen = rec.unpack(self._take(16))
            if not self._need(caplen):
                self.truncated = 16 + len(self._buf) - self._pos
                return  # a capture cut off mid-record (tcpdump killed): keep what we have
            yield sec + frac * scale, linktype, self._take(caplen)
        self.truncated = len(self._buf) - self._pos  # a record header cut short

    def _pcapng(self) -> Iterator[tuple[float, int, bytes]]:
        endian = "<"
        # per section: interface id → (linktype, seconds per timestamp unit)
        interfaces: list[tuple[int, float]] = []
        while self._need(12):
            head = self._buf[self._pos : self._pos + 12]
            if head[:4] == _PCAPNG_SHB:
                endian = "<" if head[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
                interfaces = []
            btype, blen = struct.unpack_from(endian + "II", head)
            if blen < 12 or blen % 4:
                raise CaptureFormatError(f"pcapng block of length {blen}")
            if not self._need(blen):
                self.truncated = len(self._buf) - self._pos
                return
            block = self._take(blen)
            if blen < _PCAPNG_MIN_BLOCK.get(btype, 12):
                raise CaptureFormatError(f"pcapng block of type {btype} cut short ({blen} bytes)")
            if btype == 1:  # interface description
                linktype = struct.unpack_from(endian + "H", block, 8)[0]
                interfaces.append((linktype, _if_tsresol(block[16 : blen - 4], endian)))
            elif btype in (6, 2):  # enhanced packet, obsolete packet
                if btype == 6:
                    ifid, hi, lo, caplen = struct.unpack_from(endian + "IIII", block, 8)
                else:
                    ifid, _drops, hi, lo, caplen = struct.unpack_from(endian + "HHIII", block, 8)
                if ifid >= len(interfaces):
                    continue
                linktype, unit = interfaces[ifid]
                yield ((hi << 32) | lo) * unit, linktype, block[28 : 28 + caplen]
            elif btype == 3 and interfaces:  # simple packet: no timestamp
                origlen = struct.unpack_from(endian + "I", block, 8)[0]
                yield 0.0, interfaces[0][0], block[12 : 12 + min(origlen, blen - 16)]
        self.truncated = len(self._buf) - self._pos  # a block header cut short


class PcapWriter:
    """Classic pcap out (``sniff -w``), microsecond times, in the link type of the first record.

    A classic file has one link type; a later record of another (``-i any`` sees Ethernet and bare-IP
    devices, a pcapng may mix interfaces) is rewritten to it: its IP packet, behind an Ethernet header
    of zero addresses when the file is Ethernet. One that is not IP is left out.
    ``flush`` writes each record through (a live capture stopped by a signal keeps what it wrote)."""

    def __init__(self, path: str, *, flush: bool = False) -> None:
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._flush = flush
        self.linktype: int | None = None

    def write(self, ts: float, linktype: int, data: bytes) -> None:
        if self.linktype is None:
            self.linktype = linktype
            self._file.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
        elif linktype != self.linktype:
            converted = _relink(linktype, data, self.linktype)
            if converted is None:
                return
            data = converted
        sec = int(ts)
        usec = min(int(round((ts - sec) * 1e6)), 999_999)  # 0.9999996 is not 1000000 microseconds
        self._file.write(struct.pack("<IIII", sec, usec, len(data), len(data)) + data)
        if self._flush:
            self._file.flush()

    def close(self) -> None:
        self._file.close()


def _relink(linktype: int, data: bytes, target: int) -> bytes | None:
    """``data`` of ``linktype`` as a frame of ``target`` (Ethernet or bare IP), or None."""
    found = network_offset(linktype, data)
    if found is None or target not in (LINKTYPE_ETHERNET, LINKTYPE_RAW):
        return None
    off, ethertype = found
    if target == LINKTYPE_RAW:
        return data[off:]
    return bytes(12) + struct.pack(">H", ethertype) + data[off:]


def _if_tsresol(options: bytes, endian: str) -> float:
    """Seconds per timestamp unit from an interface's if_tsresol option (default microseconds)."""
    pos = 0
    while pos + 4 <= len(options):
        code, length = struct.unpack_from(endian + "HH", options, pos)
        if code == 0:
            break
        if code == 9 and length >= 1:
            v = options[pos + 4]
            return 2.0 ** -(v & 0x7F) if v & 0x80 else 10.0**-v
        pos += 4 + (length + 3) // 4 * 4
    return 1e-6


def read_packets(stream: BinaryIO, reader: PacketReader | None = None) -> Iterator[Packet]:
    """Every TCP segment of a capture, numbered like tshark numbers frames."""
    reader = reader or PacketReader(stream)
    for number, (ts, linktype, buf) in enumerate(reader, 1):
        pkt = parse_tcp(ts, linktype, buf, number)
        if pkt is not None:
            yield pkt


def read_events(stream: BinaryIO, ports: Iterable[int] | None = None) -> Iterator[CapturedFrame | HaUnit]:
    """Every whole frame and HA unit of a capture, in the order their last byte was captured.

    Connections are recognised by content on any port (``ports`` narrows it, see :class:`Tracker`).
    Stream notes (gaps, resynchronisations) are dropped; use :class:`Tracker` for those.
    """
    tracker = Tracker(ports)
    for pkt in read_packets(stream):
        for event in tracker.packet(pkt):
            if not isinstance(event, StreamNote):
                yield event
    for event in tracker.finish():
        if not isinstance(event, StreamNote):
            yield event


def read_frames(stream: BinaryIO, ports: Iterable[int] | None = None) -> Iterator[CapturedFrame]:
    """Every whole RemotingCommand frame of a capture (:func:`read_events` without the HA units)."""
    for event in read_events(stream, ports):
        if isinstance(event, CapturedFrame):
            yield event


def read_pcap(path: str, ports: Iterable[int] | None = None) -> list[CapturedFrame]:
    with open(path, "rb") as f:
        return list(read_frames(f, ports))


def pair_responses(frames: Iterable[CapturedFrame]) -> list[tuple[CapturedFrame, CapturedFrame | None]]:
    """(request, response) pairs by connection and opaque; sets ``request_code`` on responses.

    Requests come in capture order with their response or None (oneway, unanswered);
    a response with no request comes as ``(response, None)`` where it was seen.
    """
    pairer = Pairer()
    pairs: list[tuple[CapturedFrame, CapturedFrame | None]] = []
    index: dict[int, int] = {}
    for fr in frames:
        cmd = fr.command
        if cmd is None:
            continue
        pairer.add(fr)
        if not cmd.is_response:
            index[id(fr)] = len(pairs)
            pairs.append((fr, None))
        elif fr.request is None:
            pairs.append((fr, None))
        else:
            pairs[index[id(fr.request)]] = (fr.request, fr)
    return pairs
