"""Client-made unique message ids (UNIQ_KEY), as MessageClientIDSetter 4.9.8 makes and reads them."""

from __future__ import annotations

import ipaddress
import itertools
import os
import socket
import struct
from collections.abc import Callable
from datetime import datetime, tzinfo

from ..accel import compiled
from ..clock import now_ms as _now_ms
from .errors import CodecError
from .hosts import format_ip, hex_bytes

#: the compiled id text (rocketpy._speedups.uniq_id_text), None without the accelerated build
_uniq_id_text = compiled("uniq_id_text")


def _month_start_ms(now_ms: int, tz: tzinfo | None, months_back: int = 0) -> int:
    """Millis of 00:00 on the 1st of the month containing ``now_ms``, in ``tz`` (None: local time)."""
    dt = datetime.fromtimestamp(now_ms / 1000, tz)
    year, month = dt.year, dt.month - months_back
    while month < 1:
        month += 12
        year -= 1
    start = dt.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    return round(start.timestamp() * 1000)


def _next_month_start_ms(start_ms: int, tz: tzinfo | None) -> int:
    dt = datetime.fromtimestamp(start_ms / 1000, tz)
    year, month = (dt.year + 1, 1) if dt.month == 12 else (dt.year, dt.month + 1)
    return round(dt.replace(year=year, month=month).timestamp() * 1000)


def _default_ip() -> bytes:
    # UtilAll.getIP prefers a non-loopback address; failing that Java makes a fake
    # one from the clock (createFakeIP), and so do we. Connecting a UDP socket sends
    # nothing: it only asks the kernel which local address its default route uses.
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))
            ip = ipaddress.ip_address(probe.getsockname()[0])
            if not ip.is_loopback and not ip.is_unspecified:
                return ip.packed
    except OSError:
        pass
    try:
        for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
            ip = ipaddress.ip_address(info[4][0])
            if not ip.is_loopback:
                return ip.packed
    except OSError:
        pass
    return struct.pack(">q", _now_ms())[4:]


class UniqIdGenerator:
    """Makes UNIQ_KEY ids as MessageClientIDSetter 4.9.8 does.

    An id is ip (4 or 16 bytes) + pid (short) + class-loader hash (int), then the
    millis since the start of the current month (int) and a counter (short), all
    as uppercase hex: 32 characters for IPv4, 56 for IPv6. The month is taken in
    ``tz`` (None: the local time zone, like Java's Calendar.getInstance()).
    """

    def __init__(
        self,
        ip: bytes | str | None = None,
        pid: int | None = None,
        class_loader_hash: int | None = None,
        *,
        clock: Callable[[], int] = _now_ms,
        tz: tzinfo | None = None,
        counter: int = 0,
    ) -> None:
        if ip is None:
            ip_bytes = _default_ip()
        elif isinstance(ip, str):
            try:
                ip_bytes = ipaddress.ip_address(ip).packed
            except ValueError:
                raise CodecError(f"not an IP address: {ip!r}") from None
        else:
            ip_bytes = bytes(ip)
        if len(ip_bytes) not in (4, 16):
            raise CodecError(f"ip must be 4 or 16 bytes, got {len(ip_bytes)}")
        if pid is None:
            pid = os.getpid()
        if class_loader_hash is None:
            # Java uses the class loader's identity hash: arbitrary per process.
            class_loader_hash = int.from_bytes(os.urandom(4), "big") & 0x7FFFFFFF
        self.prefix = (ip_bytes + struct.pack(">HI", pid & 0xFFFF, class_loader_hash & 0xFFFFFFFF)).hex().upper()
        self._clock = clock
        self._tz = tz
        self._counter = itertools.count(counter)
        #: "<prefix>%08X%04X": an id is this filled with the month's millis and the count
        self._format = self.prefix + "%08X%04X"
        self._prefix_bytes = self.prefix.encode()
        #: (this month's start, the next month's) in millis, swapped as one value (no lock: see id_at)
        self._month = (0, 0)
        self._set_start(clock())

    def _set_start(self, now: int) -> None:
        start = _month_start_ms(now, self._tz)
        self._month = (start, _next_month_start_ms(start, self._tz))

    def next_id(self) -> str:
        """A fresh id."""
        return self.id_at(self._clock())

    def id_at(self, now: int) -> str:
        """A fresh id made at ``now`` (epoch millis: the caller's clock reading, e.g. the born timestamp).

        Safe from threads without a lock: the counter's step is one C call, and the month's bounds are
        replaced together (two threads crossing a month both compute the same bounds)."""
        start, next_start = self._month
        if now >= next_start:
            self._set_start(now)
            start = self._month[0]
        diff = (now - start) & 0xFFFFFFFF  # Java's (int) cast
        if diff >= 0x80000000 and diff - (1 << 32) > -1_000_000:
            diff = 0  # a clock stepped back a little (NTP): Java clamps to 0
        if _uniq_id_text is not None:
            return _uniq_id_text(self._prefix_bytes, diff, next(self._counter) & 0xFFFF)
        return self._format % (diff, next(self._counter) & 0xFFFF)

    __call__ = next_id


def _uniq_bytes(msg_id: str) -> bytes:
    if len(msg_id) not in (32, 56):
        raise CodecError(f"unique id must be 32 or 56 hex characters, got {len(msg_id)}")
    return hex_bytes(msg_id, "unique id")


def uniq_id_time(msg_id: str, now_ms: int | None = None, tz: tzinfo | None = None) -> int:
    """MessageClientIDSetter.getNearlyTimeFromID, in epoch millis.

    The id only holds millis since a month start: the current month's, or the
    previous one's when that would put the id at or after ``now_ms``.
    """
    raw = _uniq_bytes(msg_id)
    ip_len = 16 if len(raw) == 28 else 4
    (span,) = struct.unpack_from(">I", raw, ip_len + 6)
    now = _now_ms() if now_ms is None else now_ms
    start = _month_start_ms(now, tz)
    if start + span >= now:
        start = _month_start_ms(now, tz, months_back=1)
    return start + span


def uniq_id_ip(msg_id: str) -> str:
    """MessageClientIDSetter.getIPStrFromID: dotted IPv4, or IPv6 as eight 4-digit groups."""
    raw = _uniq_bytes(msg_id)
    if len(raw) == 28:
        return ":".join(f"{g:04x}" for g in struct.unpack_from(">8H", raw))
    return format_ip(raw[:4])


def uniq_id_pid(msg_id: str) -> int:
    """MessageClientIDSetter.getPidFromID: the low 16 bits of the producer's pid."""
    raw = _uniq_bytes(msg_id)
    return struct.unpack_from(">H", raw, len(raw) - 12)[0]
