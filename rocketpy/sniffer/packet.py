"""Link layer → IP → TCP, just enough to get at segments (shared by pcap files and live capture).

Hand-rolled with ``struct`` rather than dpkt: the sniffer parses millions of packets
per capture and only ever needs addresses, ports, sequence numbers, flags and the
payload, so skipping dpkt's object model makes file reading several times faster.
"""

from __future__ import annotations

import dataclasses
import socket
import struct

# libpcap link-layer header types (https://www.tcpdump.org/linktypes.html)
LINKTYPE_NULL = 0
LINKTYPE_ETHERNET = 1
LINKTYPE_RAW = 101
LINKTYPE_LOOP = 108
LINKTYPE_LINUX_SLL = 113
LINKTYPE_IPV4 = 228
LINKTYPE_IPV6 = 229
LINKTYPE_LINUX_SLL2 = 276
_RAW_TYPES = frozenset({LINKTYPE_RAW, 12, 14, LINKTYPE_IPV4, LINKTYPE_IPV6})

TH_FIN = 0x01
TH_SYN = 0x02
TH_RST = 0x04
TH_ACK = 0x10

_ETHERTYPE_IPV4 = 0x0800
_ETHERTYPE_IPV6 = 0x86DD
_ETHERTYPE_VLAN = frozenset({0x8100, 0x88A8, 0x9100})
_IPV6_EXT_HEADERS = frozenset({0, 43, 60})  # hop-by-hop, routing, destination options

_TCP = struct.Struct(">HHIIBB")
_U16 = struct.Struct(">H")

Endpoint = tuple[str, int]


@dataclasses.dataclass(slots=True)
class Packet:
    """One TCP segment as captured."""

    ts: float
    src: Endpoint
    dst: Endpoint
    seq: int
    flags: int
    payload: bytes
    #: 1-based position in the capture (what tshark calls the frame number)
    number: int = 0
    #: acknowledgement number (meaningful when the ACK flag is set)
    ack_no: int = 0

    @property
    def syn(self) -> bool:
        return bool(self.flags & TH_SYN)

    @property
    def ack(self) -> bool:
        return bool(self.flags & TH_ACK)

    @property
    def fin_or_rst(self) -> bool:
        return bool(self.flags & (TH_FIN | TH_RST))


def _ipv4_addr(raw: bytes) -> str:
    return f"{raw[0]}.{raw[1]}.{raw[2]}.{raw[3]}"


def network_offset(linktype: int, buf: bytes) -> tuple[int, int] | None:
    """(offset of the IP header, ethertype) for a link-layer frame, or None when not IP."""
    if linktype == LINKTYPE_ETHERNET:
        off, etype = 14, _U16.unpack_from(buf, 12)[0] if len(buf) >= 14 else 0
        while etype in _ETHERTYPE_VLAN and len(buf) >= off + 4:
            etype = _U16.unpack_from(buf, off + 2)[0]
            off += 4
    elif linktype == LINKTYPE_LINUX_SLL:
        off, etype = 16, _U16.unpack_from(buf, 14)[0] if len(buf) >= 16 else 0
    elif linktype == LINKTYPE_LINUX_SLL2:
        off, etype = 20, _U16.unpack_from(buf, 0)[0] if len(buf) >= 20 else 0
    elif linktype in (LINKTYPE_NULL, LINKTYPE_LOOP):
        if len(buf) < 4:
            return None
        # the address family is in host order of the capturing machine: accept either
        family = int.from_bytes(buf[:4], "little") if buf[0] else int.from_bytes(buf[:4], "big")
        off = 4
        etype = _ETHERTYPE_IPV4 if family == 2 else _ETHERTYPE_IPV6 if family in (10, 24, 28, 30) else 0
    elif linktype in _RAW_TYPES:
        if not buf:
            return None
        off, version = 0, buf[0] >> 4
        etype = _ETHERTYPE_IPV4 if version == 4 else _ETHERTYPE_IPV6 if version == 6 else 0
    else:
        return None
    if etype not in (_ETHERTYPE_IPV4, _ETHERTYPE_IPV6):
        return None
    return off, etype


def parse_tcp(ts: float, linktype: int, buf: bytes, number: int = 0) -> Packet | None:
    """The TCP segment inside one captured frame, or None (not TCP, a fragment, truncated)."""
    found = network_offset(linktype, buf)
    if found is None:
        return None
    off, etype = found
    try:
        if etype == _ETHERTYPE_IPV4:
            if buf[off] >> 4 != 4:
                return None
            ihl = (buf[off] & 0x0F) * 4
            total = _U16.unpack_from(buf, off + 2)[0]
            frag = _U16.unpack_from(buf, off + 6)[0]
            if buf[off + 9] != 6 or frag & 0x3FFF:  # not TCP, or a fragment
                return None
            src = _ipv4_addr(buf[off + 12 : off + 16])
            dst = _ipv4_addr(buf[off + 16 : off + 20])
            # total length trims the Ethernet padding; 0 means TSO (trust the capture)
            end = off + total if total else len(buf)
            off += ihl
        else:
            if buf[off] >> 4 != 6 or len(buf) < off + 40:  # inet_ntop wants whole addresses
                return None
            plen = _U16.unpack_from(buf, off + 4)[0]
            nxt = buf[off + 6]
            src = socket.inet_ntop(socket.AF_INET6, buf[off + 8 : off + 24])
            dst = socket.inet_ntop(socket.AF_INET6, buf[off + 24 : off + 40])
            end = off + 40 + plen if plen else len(buf)
            off += 40
            while nxt in _IPV6_EXT_HEADERS:
                nxt, hlen = buf[off], (buf[off + 1] + 1) * 8
                off += hlen
            if nxt != 6:
                return None
        sport, dport, seq, ack, doff, flags = _TCP.unpack_from(buf, off)
    except (IndexError, struct.error):
        return None
    payload = bytes(buf[off + (doff >> 4) * 4 : end])
    return Packet(ts, (src, sport), (dst, dport), seq, flags, payload, number, ack)
