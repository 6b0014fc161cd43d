"""What every source (file, live, proxy) shares: pairing, filters, output and stats."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from ..codecs.codes import RequestCode, ResponseCode
from .describe import group_of, topic_of
from .hastream import HaPairer
from .pairing import Pairer
from .reassembly import CapturedFrame, Event, HaUnit, StreamNote
from .render import Output
from .stats import Stats


def parse_codes(tokens: Iterable[str]) -> tuple[frozenset[int], frozenset[int]]:
    """``--code`` values → (request codes, response codes).

    A number or a RequestCode name selects requests and their responses; a
    ResponseCode name (``TOPIC_NOT_EXIST``) selects responses carrying it.
    """
    requests: set[int] = set()
    responses: set[int] = set()
    for token in tokens:
        for part in token.split(","):
            part = part.strip()
            if not part:
                continue
            if part.lstrip("-").isdigit():
                requests.add(int(part))
            elif part.upper() in RequestCode.__members__:
                requests.add(int(RequestCode[part.upper()]))
            elif part.upper() in ResponseCode.__members__:
                responses.add(int(ResponseCode[part.upper()]))
            else:
                raise ValueError(f"unknown request or response code {part!r}")
    return frozenset(requests), frozenset(responses)


@dataclasses.dataclass
class FrameFilter:
    request_codes: frozenset[int] = frozenset()
    response_codes: frozenset[int] = frozenset()
    topics: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.request_codes or self.response_codes or self.topics or self.groups)

    def match_ha(self, unit: HaUnit) -> bool:
        """HA units show unfiltered, or for ``--topic`` when a transfer carries a record of one."""
        if not self:
            return True
        if self.request_codes or self.response_codes or self.groups or not self.topics:
            return False
        return any(m.topic in self.topics for m in unit.records or ())

    def match(self, fr: CapturedFrame) -> bool:
        cmd = fr.command
        if cmd is None:
            return not self  # undecodable frames show only when nothing is filtered
        if self.request_codes or self.response_codes:
            if cmd.is_response:
                req = fr.request.command if fr.request is not None else None
                ok = cmd.code in self.response_codes or (req is not None and req.code in self.request_codes)
            else:
                ok = cmd.code in self.request_codes
            if not ok:
                return False
        if self.topics and topic_of(fr) not in self.topics:
            return False
        if self.groups and group_of(fr) not in self.groups:
            return False
        return True


class Session:
    """Feed events in capture order; shown frames go to the output and the stats."""

    def __init__(
        self,
        output: Output,
        stats: Stats | None = None,
        frame_filter: FrameFilter | None = None,
        limit: int | None = None,
    ) -> None:
        self.output = output
        self.stats = stats
        self.filter = frame_filter or FrameFilter()
        self.pairer = Pairer()
        self.ha_pairer = HaPairer()
        self.limit = limit
        self.shown = 0
        self.seen = 0

    @property
    def done(self) -> bool:
        return self.limit is not None and self.shown >= self.limit

    def event(self, ev: Event) -> None:
        if self.done:
            return
        if isinstance(ev, StreamNote):
            self.output.note(ev)
            if self.stats is not None:
                self.stats.note(ev)
            return
        self.seen += 1
        if isinstance(ev, HaUnit):
            self.ha_pairer.add(ev)
            if self.filter and not self.filter.match_ha(ev):
                return
            self.shown += 1
            self.output.ha(ev)
            if self.stats is not None:
                self.stats.ha(ev)
            return
        self.pairer.add(ev)  # every frame, shown or not: a filter must not break pairing
        if self.filter and not self.filter.match(ev):
            return
        self.shown += 1
        self.output.frame(ev)
        if self.stats is not None:
            self.stats.add(ev)

    def events(self, events: Iterable[Event]) -> None:
        for ev in events:
            self.event(ev)

    def finish(self) -> None:
        if self.stats is not None:
            self.stats.finish([fr for fr in self.pairer.outstanding() if not self.filter or self.filter.match(fr)])
        self.output.close()
