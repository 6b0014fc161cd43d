"""``--stats``: per-code counts, error codes, latency percentiles, bytes per topic."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..codecs.codes import request_code_name, response_code_name
from ..codecs.dledger import REPLY_HEADER_CODE, is_dledger_code
from .describe import topic_of
from .reassembly import CapturedFrame, HaUnit, StreamNote

PERCENTILES = (50, 90, 99)


def _table(console: Console, title: str) -> Table:
    """A table with rich's borders on a terminal; in a file or pipe plain columns with no box characters,
    the title a line of its own (easy to grep and to read back)."""
    if console.is_terminal:
        return Table(title=title)
    return Table(title=title, box=None, pad_edge=False, title_justify="left", title_style=None,
                 header_style=None)


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


class Stats:
    def __init__(self) -> None:
        self.frames = 0
        self.bytes = 0
        self.undecodable = 0
        self.requests: Counter[str] = Counter()
        self.oneway: Counter[str] = Counter()
        self.responses: Counter[tuple[str, str]] = Counter()
        self.errors: Counter[tuple[str, str]] = Counter()
        self.latencies: defaultdict[str, list[float]] = defaultdict(list)
        #: topic → [frames, bytes]
        self.topics: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.unpaired_responses = 0
        self.unanswered: Counter[str] = Counter()
        self.notes: Counter[str] = Counter()
        self.note_bytes: Counter[str] = Counter()
        self.first_ts: float | None = None
        self.last_ts: float | None = None
        #: HA connections: units by kind and role, CommitLog bytes and records replicated, ack latency
        self.ha_units: Counter[tuple[str, str]] = Counter()
        self.ha_bytes = 0
        self.ha_records: Counter[str] = Counter()
        self.ha_latencies: list[float] = []
        self.ha_connections: set[tuple[tuple[str, int], tuple[str, int]]] = set()
        self.ha_max_offset: dict[tuple[tuple[str, int], tuple[str, int]], int] = {}

    def add(self, fr: CapturedFrame) -> None:
        self.frames += 1
        self.bytes += len(fr.raw)
        if self.first_ts is None:
            self.first_ts = fr.ts
        self.last_ts = fr.ts
        cmd = fr.command
        if cmd is None:
            self.undecodable += 1
            return
        if cmd.is_response:
            req = fr.request.command if fr.request is not None else None
            if req is None:
                self.unpaired_responses += 1
                rname = "(no request)"
            else:
                rname = request_code_name(req.code)
                if fr.latency is not None:
                    self.latencies[rname].append(fr.latency)
            resp = response_code_name(cmd.code, None if req is None else req.code)
            self.responses[(rname, resp)] += 1
            ok = REPLY_HEADER_CODE if req is not None and is_dledger_code(req.code) else 0
            if cmd.code != ok:
                self.errors[(rname, f"{cmd.code} {resp}")] += 1
        else:
            self.requests[request_code_name(cmd.code)] += 1
            if cmd.is_oneway:
                self.oneway[request_code_name(cmd.code)] += 1
        topic = topic_of(fr)
        if topic is not None:
            entry = self.topics[topic]
            entry[0] += 1
            entry[1] += len(fr.raw)

    def ha(self, unit: HaUnit) -> None:
        if self.first_ts is None:
            self.first_ts = unit.ts
        self.last_ts = unit.ts
        self.ha_connections.add(unit.conn)
        self.ha_units[(unit.kind, unit.role)] += 1
        if unit.kind == "transfer":
            self.ha_bytes += unit.size
            for msg in unit.records or ():
                self.ha_records[msg.topic] += 1
        else:
            self.ha_max_offset[unit.conn] = max(unit.offset, self.ha_max_offset.get(unit.conn, 0))
        if unit.kind == "report" and unit.latency is not None:
            self.ha_latencies.append(unit.latency)

    def ha_dict(self) -> dict[str, Any]:
        values = sorted(self.ha_latencies)
        return {
            "connections": len(self.ha_connections),
            "units": {f"{k} {r}".strip(): n for (k, r), n in sorted(self.ha_units.items())},
            "bytes": self.ha_bytes,
            "records_by_topic": dict(sorted(self.ha_records.items())),
            "slave_offsets": {f"{s[0]}:{s[1]} -> {m[0]}:{m[1]}": o for (s, m), o in sorted(self.ha_max_offset.items())},
            "ack_latency_ms": {
                "count": len(values),
                **{f"p{p}": round(percentile(values, p) * 1000, 3) for p in PERCENTILES if values},
                **({"max": round(values[-1] * 1000, 3)} if values else {}),
            },
        }

    def note(self, note: StreamNote) -> None:
        self.notes[note.kind] += 1
        self.note_bytes[note.kind] += note.size

    def finish(self, outstanding: list[CapturedFrame]) -> None:
        """Requests never answered (still pending at the end)."""
        for fr in outstanding:
            if fr.command is not None:
                self.unanswered[request_code_name(fr.command.code)] += 1

    def latency_row(self, name: str) -> dict[str, float]:
        values = sorted(self.latencies[name])
        row = {f"p{p}": percentile(values, p) * 1000 for p in PERCENTILES}
        row["max"] = values[-1] * 1000
        row["mean"] = sum(values) / len(values) * 1000
        return row

    def as_dict(self) -> dict[str, Any]:
        return {
            "frames": self.frames,
            "bytes": self.bytes,
            "undecodable": self.undecodable,
            "requests": dict(self.requests.most_common()),
            "oneway": dict(self.oneway.most_common()),
            "responses": {f"{r} {c}": n for (r, c), n in self.responses.most_common()},
            "errors": {f"{r} {c}": n for (r, c), n in self.errors.most_common()},
            "latency_ms": {
                name: {"count": len(v), **{k: round(x, 3) for k, x in self.latency_row(name).items()}}
                for name, v in sorted(self.latencies.items())
            },
            "topics": {t: {"frames": f, "bytes": b} for t, (f, b) in sorted(self.topics.items())},
            "unpaired_responses": self.unpaired_responses,
            "unanswered_requests": dict(self.unanswered.most_common()),
            "notes": {k: {"count": n, "bytes": self.note_bytes[k]} for k, n in self.notes.items()},
            **({"ha": self.ha_dict()} if self.ha_units else {}),
        }

    def render(self, console: Console) -> None:
        span = (self.last_ts or 0) - (self.first_ts or 0)
        console.print(
            f"[bold]{self.frames}[/] commands, {self.bytes} bytes over {span:.3f} s; "
            f"{self.unpaired_responses} responses without request, {self.undecodable} undecodable"
        )
        t = _table(console, "Requests by code")
        for col in ("request", "count", "oneway", "unanswered", "p50 ms", "p90 ms", "p99 ms", "max ms"):
            t.add_column(col, justify="left" if col == "request" else "right")
        for name, n in self.requests.most_common():
            lat = self.latency_row(name) if self.latencies.get(name) else {}
            cells = [f"{lat[k]:.3f}" if k in lat else "" for k in ("p50", "p90", "p99", "max")]
            t.add_row(Text(name), str(n), str(self.oneway.get(name, "")), str(self.unanswered.get(name, "")), *cells)
        if self.requests or not self.ha_units:  # an HA stream alone (--port 10912) has no request table
            console.print(t)
        if self.responses:
            t = _table(console, "Responses")
            t.add_column("request")
            t.add_column("response code")
            t.add_column("count", justify="right")
            for (req, resp), n in sorted(self.responses.items()):
                t.add_row(Text(req), Text(resp), str(n), style="red" if resp != "SUCCESS" else None)
            console.print(t)
        if self.errors:
            t = _table(console, "Error responses")
            t.add_column("request")
            t.add_column("code")
            t.add_column("count", justify="right")
            for (req, code), n in self.errors.most_common():
                t.add_row(Text(req), Text(code), str(n))
            console.print(t)
        if self.topics:
            t = _table(console, "Bytes per topic")
            t.add_column("topic")
            t.add_column("commands", justify="right")
            t.add_column("bytes", justify="right")
            for topic, (f, b) in sorted(self.topics.items(), key=lambda kv: -kv[1][1]):
                t.add_row(Text(topic), str(f), str(b))
            console.print(t)
        if self.ha_units:
            self._render_ha(console)
        if self.notes:
            console.print(
                "stream notes: " + ", ".join(f"{k} ×{n} ({self.note_bytes[k]} bytes)" for k, n in self.notes.items()),
                style="yellow",
            )

    def _render_ha(self, console: Console) -> None:
        ha = self.ha_dict()
        t = _table(console, f"HA replication ({ha['connections']} connection(s), {self.ha_bytes} CommitLog bytes)")
        t.add_column("unit")
        t.add_column("count", justify="right")
        for name, n in ha["units"].items():
            t.add_row(Text(name), str(n))
        console.print(t)
        lat = ha["ack_latency_ms"]
        if lat["count"]:
            console.print(
                Text(
                    f"slave acknowledgements: {lat['count']}, "
                    + ", ".join(f"{k} {lat[k]:.3f} ms" for k in ("p50", "p90", "p99", "max"))
                )
            )
        for conn, offset in ha["slave_offsets"].items():
            console.print(Text(f"slave {conn}: last reported offset {offset}"))
        if ha["records_by_topic"]:
            replicated = ", ".join(f"{k} ×{n}" for k, n in ha["records_by_topic"].items())
            console.print(Text(f"records replicated: {replicated}"))
