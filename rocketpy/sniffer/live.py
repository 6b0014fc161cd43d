"""Live capture on an interface with a raw AF_PACKET socket (Linux; needs CAP_NET_RAW).

No libpcap binding: the standard library's AF_PACKET socket gives whole link-layer
frames, and the address that comes with each frame says its hardware type and
direction, so ``-i any`` works without binding to one interface.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

from .packet import LINKTYPE_ETHERNET, LINKTYPE_RAW, Packet, parse_tcp

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
ARPHRD_ETHER = 1
ARPHRD_LOOPBACK = 772
ARPHRD_NONE = 0xFFFE  # tun devices: bare IP
ARPHRD_RAWIP = 519
_RECV_SIZE = 262144  # GSO/GRO hands over segments far above the MTU


class CaptureError(RuntimeError):
    """Live capture is impossible here (privilege, platform, interface)."""


def open_socket(interface: str) -> socket.socket:
    if not hasattr(socket, "AF_PACKET"):
        raise CaptureError(
            "live capture needs Linux AF_PACKET sockets; elsewhere pipe a capture in: "
            "tcpdump -i IFACE -w - 'tcp port 9876 or tcp port 10911' | rocketpy sniff -r -"
        )
    if interface != "any":
        try:
            socket.if_nametoindex(interface)  # a wrong name is said as such, with or without the privilege
        except OSError:
            known = ", ".join(name for _index, name in socket.if_nameindex())
            raise CaptureError(f"cannot capture on {interface!r}: no such interface (here: {known}, any)") from None
    try:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    except PermissionError:
        raise CaptureError(
            f"live capture on {interface} needs root or CAP_NET_RAW "
            "(sudo setcap cap_net_raw+ep on the python binary), "
            "or run `rocketpy proxy --listen HOST:PORT --upstream HOST:PORT`, which needs no privilege"
        ) from None
    try:
        if interface != "any":
            sock.bind((interface, 0))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    except OSError as exc:
        sock.close()
        raise CaptureError(f"cannot capture on {interface!r}: {exc.strerror or exc}") from None
    return sock


def _linktype(hatype: int) -> int | None:
    if hatype in (ARPHRD_ETHER, ARPHRD_LOOPBACK):
        return LINKTYPE_ETHERNET
    if hatype in (ARPHRD_NONE, ARPHRD_RAWIP):
        return LINKTYPE_RAW
    return None


Record = tuple[float, int, bytes]


class LiveRecords:
    """Link-layer frames seen on an interface until ``stop`` is set, as (time, link type, bytes): what a
    pcap record holds, so ``sniff -i IFACE -w FILE`` writes them as they came.

    The socket is opened here (CaptureError before the caller makes anything of its own) and closed by
    :meth:`close` (or leaving ``with``). Iterating yields None every ``poll`` seconds of silence, so the
    caller can check its own limits; ``ready`` is set once the socket is capturing.
    """

    def __init__(self, interface: str, stop: threading.Event | None = None,
                 ready: threading.Event | None = None, poll: float = 0.2) -> None:
        self._sock = open_socket(interface)
        self._sock.settimeout(poll)
        self._stop, self._ready = stop, ready

    def __enter__(self) -> LiveRecords:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def __iter__(self) -> Iterator[Record | None]:
        if self._ready is not None:
            self._ready.set()
        while self._stop is None or not self._stop.is_set():
            try:
                buf, addr = self._sock.recvfrom(_RECV_SIZE)
            except TimeoutError:
                yield None
                continue
            _ifname, _proto, pkttype, hatype = addr[:4]
            # loopback hands every packet over twice, outgoing then incoming: keep one
            if hatype == ARPHRD_LOOPBACK and pkttype == PACKET_OUTGOING:
                continue
            linktype = _linktype(hatype)
            if linktype is not None:
                yield time.time(), linktype, buf


def capture(
    interface: str,
    stop: threading.Event | None = None,
    ready: threading.Event | None = None,
    poll: float = 0.2,
) -> Iterator[Packet | None]:
    """TCP segments seen on ``interface`` until ``stop`` is set (None every ``poll`` seconds of silence)."""
    number = 0
    with LiveRecords(interface, stop, ready, poll) as source:
        for record in source:
            if record is None:
                yield None
                continue
            number += 1
            pkt = parse_tcp(*record, number)
            if pkt is not None:
                yield pkt
