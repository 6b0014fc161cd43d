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
    """Feed frames in capture order; responses get ``request``, ``latency`` and ``request_code``."""

    def __init__(self, max_pending: int = DEFAULT_MAX_PENDING) -> None:
        self._pending: OrderedDict[_Key, CapturedFrame] = OrderedDict()
        self.max_pending = max_pending
        self.unpaired_responses = 0
        self.forgotten = 0

    def add(self, fr: CapturedFrame) -> None:
        cmd = fr.command
        if cmd is None:
            return
        if not cmd.is_response:
            if not cmd.is_oneway:
                key = (fr.src, fr.dst, cmd.opaque)
                self._pending[key] = fr
                self._pending.move_to_end(key)
                if len(self._pending) > self.max_pending:
                    self._pending.popitem(last=False)
                    self.forgotten += 1
            return
        req = self._pending.pop((fr.dst, fr.src, cmd.opaque), None)
        if req is None or req.command is None:
            self.unpaired_responses += 1
            return
        fr.request = req
        fr.latency = fr.ts - req.ts
        cmd.request_code = req.command.code

    def outstanding(self) -> list[CapturedFrame]:
        """Requests still waiting for a response, oldest first."""
        return list(self._pending.values())
