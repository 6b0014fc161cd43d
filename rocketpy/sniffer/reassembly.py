"""TCP stream reassembly for captures: out-of-order segments, retransmissions, gaps.

Sans-IO: feed segments (sequence number, payload), take contiguous bytes out.
"""

from __future__ import annotations

import dataclasses

_SEQ_MOD = 1 << 32


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

    def __init__(self) -> None:
        self.next_seq: int | None = None
        self.pending: dict[int, bytes] = {}
        self.gaps: list[Gap] = []

    def syn(self, seq: int) -> None:
        self.next_seq = (seq + 1) % _SEQ_MOD
        self.pending.clear()

    def add(self, seq: int, payload: bytes) -> bytes:
        """Add a segment; return the bytes that became contiguous (possibly empty)."""
        if not payload:
            return b""
        if self.next_seq is None:  # capture started mid-stream
            self.next_seq = seq
        d = _seq_diff(seq, self.next_seq)
        if d + len(payload) <= 0:
            return b""  # pure retransmission
        if d < 0:
            payload = payload[-d:]
            seq = self.next_seq
            d = 0
        if d > 0:
            old = self.pending.get(seq)
            if old is None or len(old) < len(payload):
                self.pending[seq] = payload
            return b""
        out = [payload]
        self.next_seq = (self.next_seq + len(payload)) % _SEQ_MOD
        self._drain(out)
        return b"".join(out)

    def _drain(self, out: list[bytes]) -> None:
        assert self.next_seq is not None
        progressed = True
        while progressed and self.pending:
            progressed = False
            for seq in list(self.pending):
                d = _seq_diff(seq, self.next_seq)
                data = self.pending[seq]
                if d > 0:
                    continue
                del self.pending[seq]
                if d + len(data) <= 0:
                    continue
                data = data[-d:] if d < 0 else data
                out.append(data)
                self.next_seq = (self.next_seq + len(data)) % _SEQ_MOD
                progressed = True

    def skip_gap(self) -> int:
        """Give up waiting for missing bytes: jump to the earliest pending segment.

        Returns how many bytes were skipped (0 when nothing is pending).
        """
        if not self.pending or self.next_seq is None:
            return 0
        nearest = min(self.pending, key=lambda s: _seq_diff(s, self.next_seq or 0))
        size = _seq_diff(nearest, self.next_seq)
        self.gaps.append(Gap(nearest, size))
        self.next_seq = nearest
        return size

    def flush(self) -> tuple[bytes, int]:
        """Contiguous data recoverable past gaps, and the number of bytes lost."""
        lost = 0
        out: list[bytes] = []
        while self.pending:
            lost += self.skip_gap()
            self._drain(out)
        return b"".join(out), lost
