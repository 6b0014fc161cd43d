"""Request/response pairing by opaque, per connection and direction, with latency.

A request travels src→dst and its response dst→src with the same opaque; the
opaque alone is not unique (every client counts from 0), the direction is.
"""

from __future__ import annotations

from collections import OrderedDict

from .reassembly import CapturedFrame, Endpoint

#: requests kept waiting for an answer; past this the oldest are forgotten (a live capture
#: that runs for days must not grow without bound on oneway-less requests that never return)
DEFAULT_MAX_PENDING = 200_000

_Key = tuple[Endpoint, Endpoint, int]


class Pairer:
    """Feed frames in capture order; responses get ``request``, ``latency`` and ``request_code``.

    A request waits for its response until one of three things gives it up: another
    request on the same connection and direction reuses its opaque, more than
    ``max_pending`` requests wait, or (with ``timeout``) a frame arrives more than
    ``timeout`` seconds of capture time after it. :meth:`add` returns the requests it
    gave up, oldest first, so a streaming consumer can release what it held for them.
    """

    def __init__(self, max_pending: int = DEFAULT_MAX_PENDING, timeout: float | None = None) -> None:
        self._pending: OrderedDict[_Key, CapturedFrame] = OrderedDict()
        self.max_pending = max_pending
        self.timeout = timeout
        self.unpaired_responses = 0
        self.forgotten = 0

    def add(self, fr: CapturedFrame) -> list[CapturedFrame]:
        """Pair ``fr``; returns the waiting requests given up meanwhile (never ``fr`` itself)."""
        pending = self._pending
        given_up: list[CapturedFrame] = []
        if self.timeout is not None:
            while pending:
                oldest = next(iter(pending.values()))
                if fr.ts - oldest.ts <= self.timeout:
                    break
                given_up.append(pending.popitem(last=False)[1])
        cmd = fr.command
        if cmd is None:
            return given_up
        if not cmd.is_response:
            if not cmd.is_oneway:
                key = (fr.src, fr.dst, cmd.opaque)
                stale = pending.pop(key, None)
                if stale is not None:  # the opaque came round again: the old request had no answer
                    given_up.append(stale)
                pending[key] = fr
                if len(pending) > self.max_pending:
                    given_up.append(pending.popitem(last=False)[1])
                    self.forgotten += 1
            return given_up
        req = pending.pop((fr.dst, fr.src, cmd.opaque), None)
        if req is None or req.command is None:
            self.unpaired_responses += 1
            return given_up
        fr.request = req
        fr.latency = fr.ts - req.ts
        cmd.request_code = req.command.code
        return given_up

    def waiting(self, fr: CapturedFrame) -> bool:
        """Whether ``fr`` is a request now held for its response (what :meth:`add` may later give up)."""
        cmd = fr.command
        return cmd is not None and self._pending.get((fr.src, fr.dst, cmd.opaque)) is fr

    def outstanding(self) -> list[CapturedFrame]:
        """Requests still waiting for a response, oldest first."""
        return list(self._pending.values())

    def drain(self) -> list[CapturedFrame]:
        """End of input: the requests still waiting, oldest first, and forget them."""
        out = list(self._pending.values())
        self._pending.clear()
        return out
