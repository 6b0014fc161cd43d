"""Hosts as records hold them and Java prints them (``ip:port``), and the offset message ids made of them."""

from __future__ import annotations

import functools
import ipaddress
import re
import struct

from .errors import CodecError

_V4_MAPPED_PREFIX = b"\x00" * 10 + b"\xff\xff"
_PORT = re.compile(r"-?[0-9]{1,10}\Z")


def format_ip(ip: bytes) -> str:
    """An address as Java prints it (dotted IPv4; IPv6 as eight lower-case groups, no "::")."""
    if len(ip) == 4:
        return f"{ip[0]}.{ip[1]}.{ip[2]}.{ip[3]}"
    # InetAddress.getByAddress turns an IPv4-mapped IPv6 address into an Inet4Address.
    if ip[:12] == _V4_MAPPED_PREFIX:
        return format_ip(ip[12:])
    # Inet6Address.getHostAddress: eight groups in lowercase hex, no "::" compression.
    return ":".join(f"{g:x}" for g in struct.unpack(">8H", ip))


def format_host(ip: bytes, port: int) -> str:
    """``ip:port`` as Java's RemotingHelper prints an InetSocketAddress (no brackets for IPv6)."""
    return f"{format_ip(ip)}:{port}"


#: entries of the address caches: the broker's own, the NameServers' and the connected clients' recur,
#: while every short connection brings a new peer port; a big cache would keep thousands of those, and
#: their churn leaves long-lived objects scattered over the allocator's arenas (a miss costs ~2 µs)
HOST_CACHE_SIZE = 256


@functools.lru_cache(maxsize=HOST_CACHE_SIZE)
def parse_host(host: str) -> tuple[bytes, int]:
    """Split ``ip:port`` (IPv4, or IPv6 with or without brackets) into address bytes and port."""
    addr, sep, port_text = host.rpartition(":")
    if not sep or not _PORT.match(port_text):
        raise CodecError(f"not an ip:port address: {host!r}")
    if addr.startswith("[") and addr.endswith("]"):
        addr = addr[1:-1]
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        raise CodecError(f"not an IP address: {addr!r}") from None
    port = int(port_text)
    if not -(1 << 31) <= port < (1 << 31):
        raise CodecError(f"port out of range: {port}")
    return ip.packed, port


def host_bytes_for(host: str, v6: bool) -> tuple[bytes, int]:
    ip, port = parse_host(host)
    if v6 and len(ip) == 4:
        ip = _V4_MAPPED_PREFIX + ip
    elif not v6 and len(ip) == 16:
        if ip[:12] != _V4_MAPPED_PREFIX:
            raise CodecError(f"IPv6 address {host!r} but the sysFlag says IPv4")
        ip = ip[12:]
    return ip, port


# ---------------------------------------------------------------------------
# Offset message ids
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=HOST_CACHE_SIZE)
def host_bytes(host: str) -> tuple[bytes, int]:
    """``ip:port`` as a record holds it: address bytes and port, an IPv4-mapped IPv6 address as its 4
    bytes (Java holds it as an Inet4Address)."""
    ip, port = parse_host(host)
    if len(ip) == 16 and ip[:12] == _V4_MAPPED_PREFIX:
        ip = ip[12:]
    return ip, port


@functools.lru_cache(maxsize=64)
def offset_msg_id_prefix(ip: bytes, port: int) -> str:
    """The store host's part of its offset message ids: ip and port (int32), hex."""
    return (ip + struct.pack(">i", port)).hex().upper()


def offset_msg_id(ip: bytes, port: int, offset: int) -> str:
    """MessageDecoder.createMessageId: store host ip (4 or 16 bytes) + port (int) + CommitLog offset
    (long), in upper-case hex: 32 characters for an IPv4 host, 56 for IPv6."""
    if len(ip) == 16 and ip[:12] == _V4_MAPPED_PREFIX:
        ip = ip[12:]
    if 0 <= offset < 1 << 63 and -(1 << 31) <= port < 1 << 31:  # CommitLog offsets always are
        return f"{offset_msg_id_prefix(ip, port)}{offset:016X}"
    try:
        return (ip + struct.pack(">iq", port, offset)).hex().upper()
    except struct.error as exc:
        raise CodecError(f"cannot build a message id: {exc}") from None


def create_offset_msg_id(host: str, commit_log_offset: int) -> str:
    """:func:`offset_msg_id` of an ``ip:port`` store host."""
    ip, port = host_bytes(host)
    return offset_msg_id(ip, port, commit_log_offset)


def hex_bytes(text: str, what: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise CodecError(f"{what} is not hex: {text!r}") from None


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """MessageDecoder.decodeMessageId: ``(ip, port, commit_log_offset)`` from an offset msg id."""
    if len(msg_id) not in (32, 56):
        raise CodecError(f"offset msg id must be 32 or 56 hex characters, got {len(msg_id)}")
    raw = hex_bytes(msg_id, "offset msg id")
    ip_len = 4 if len(raw) == 16 else 16
    port, offset = struct.unpack_from(">iq", raw, ip_len)
    return format_ip(raw[:ip_len]), port, offset
