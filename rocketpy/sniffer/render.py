"""Outputs: one tshark-like line per command (``-V`` adds the decoded header and body), or JSON lines."""

from __future__ import annotations

import json
from typing import IO, Any, Protocol

from rich.console import Console
from rich.text import Text

from ..codecs.codes import request_code_name
from ..codecs.errors import CodecError
from .describe import (
    PROPERTY_KEYS,
    decoded_body,
    dledger_summary,
    endpoint,
    frame_json,
    group_of,
    ha_json,
    ha_records_summary,
    header_length,
    jsonable,
    language_name,
    message_extras,
    serialize_name,
    topic_of,
    typed_header,
)
from .reassembly import CapturedFrame, HaUnit, StreamNote

#: how much of a message body ``-V`` prints
BODY_PREVIEW = 200


class Output(Protocol):
    def frame(self, fr: CapturedFrame) -> None: ...

    def note(self, note: StreamNote) -> None: ...

    def ha(self, unit: HaUnit) -> None: ...

    def close(self) -> None: ...


class NullOutput:
    """``-q``: nothing per command (with --stats, only the summary)."""

    def frame(self, fr: CapturedFrame) -> None:
        pass

    def note(self, note: StreamNote) -> None:
        pass

    def ha(self, unit: HaUnit) -> None:
        pass

    def close(self) -> None:
        pass


def _size(n: int) -> str:
    return f"{n}" if n < 10_000 else f"{n / 1024:.1f}K" if n < 10 << 20 else f"{n / (1 << 20):.1f}M"


def line_parts(fr: CapturedFrame, t0: float) -> list[tuple[str, str]]:
    """The one-line summary of a frame, as (text, style) pieces."""
    parts: list[tuple[str, str]] = []
    add = parts.append
    add((f"{fr.number or '':>6} ", "dim"))
    add((f"{fr.ts - t0:11.6f} ", ""))
    # client first, like a conversation: the arrow says which way this frame went
    if fr.from_server:
        add((f"{endpoint(fr.dst)} ← {endpoint(fr.src)}  ", "blue"))
    else:
        add((f"{endpoint(fr.src)} → {endpoint(fr.dst)}  ", "blue"))
    cmd = fr.command
    if cmd is None:
        add((f"[undecodable frame, {len(fr.raw)} bytes: {fr.error}]", "bold red"))
        return parts
    dledger = dledger_summary(fr)
    if cmd.is_response:
        style = "green" if (cmd.code == 0 if dledger is None else dledger[1]) else "bold red"
        add((f"{cmd.name}({cmd.code})", style))
        if fr.request is not None and fr.request.command is not None:
            add((f" ↩ {request_code_name(fr.request.command.code)}", "cyan"))
        else:
            add((" [no request seen]", "yellow"))
    else:
        add((f"{cmd.name}({cmd.code})", "bold cyan"))
        if cmd.is_oneway:
            add((" oneway", "magenta"))
    add((f"  #{cmd.opaque}", ""))
    if dledger is not None:
        add((f"  {dledger[0]}", "bold" if dledger[1] else "bold red"))
    topic, group = topic_of(fr), group_of(fr)
    if topic is not None:
        add((f"  topic={topic}", "bold"))
    if group is not None:
        add((f"  group={group}", ""))
    if cmd.serialize_type != 0:
        add((f"  {serialize_name(cmd.serialize_type)}", "dim"))
    add((f"  hdr={_size(header_length(fr.raw))} body={_size(len(cmd.body or b''))}", "dim"))
    if cmd.is_response and cmd.code != 0 and cmd.remark:
        add((f"  {cmd.remark[:120]!r}", "red"))
    if fr.latency is not None:
        add((f"  {fr.latency * 1000:.3f} ms", "yellow"))
    return parts


def ha_line_parts(unit: HaUnit, t0: float) -> list[tuple[str, str]]:
    """The one-line summary of an HA unit: slave first, the arrow gives the direction."""
    parts: list[tuple[str, str]] = [(f"{unit.number or '':>6} ", "dim"), (f"{unit.ts - t0:11.6f} ", "")]
    slave, master = unit.conn
    arrow = "←" if unit.from_master else "→"
    parts.append((f"{endpoint(slave)} {arrow} {endpoint(master)}  ", "blue"))
    if unit.kind == "report":
        parts.append(("HA report", "bold magenta"))
        parts.append((f" offset={unit.offset}", ""))
    elif unit.data:
        parts.append(("HA transfer", "bold magenta"))
        parts.append((f" offset={unit.offset} size={unit.size} end={unit.end}", ""))
        parts.append((f"  [{ha_records_summary(unit)}]", "bold"))
    else:
        parts.append(("HA heartbeat", "magenta"))
        parts.append((f" offset={unit.offset}", ""))
    if unit.role and unit.role not in ("data", "heartbeat"):
        parts.append((f"  {unit.role}", "cyan"))
    if unit.latency is not None:
        parts.append((f"  {unit.latency * 1000:.3f} ms", "yellow"))
    return parts


def ha_detail(unit: HaUnit) -> list[Text]:
    """``-V`` for an HA unit: each CommitLog record a transfer carries."""
    if unit.kind == "report" or not unit.data:
        return []
    if unit.records is None:
        return [Text(f"    {unit.size} CommitLog bytes not at a record boundary", "dim"), _preview(unit.data)]
    out = [Text(f"    {len(unit.records)} CommitLog record(s)", "bold")]
    for i, msg in enumerate(unit.records):
        out += _message_lines(i, msg)
    return out


def line(fr: CapturedFrame, t0: float) -> Text:
    """The one-line summary of a frame, styled."""
    return Text.assemble(*line_parts(fr, t0), no_wrap=True)


def detail(fr: CapturedFrame) -> list[Text]:
    """``-V``: the full typed header and decoded body, indented under the line."""
    cmd = fr.command
    if cmd is None:
        return [Text(f"    raw {fr.raw[:64].hex()}", "dim")]
    out = [
        Text(
            f"    flag={cmd.flag} language={language_name(cmd.language)} version={cmd.version} "
            f"serialize={serialize_name(cmd.serialize_type)}",
            "dim",
        )
    ]
    if cmd.remark is not None:
        out.append(Text(f"    remark: {cmd.remark}"))
    cls, rows = typed_header(cmd)
    if rows or cls:
        out.append(Text(f"    header {cls or '(extFields)'}", "bold"))
        for wire, attr, value in rows:
            # one-letter wire names (SendMessageRequestHeaderV2) need the field they stand for
            label = f"{wire} ({attr})" if attr and len(wire) <= 2 and attr != wire else wire
            if wire in PROPERTY_KEYS and isinstance(value, str):
                from ..codecs.message import string_to_properties

                value = string_to_properties(value)
            out.append(Text(f"      {label} = {value!r}" if not isinstance(value, str) else f"      {label} = {value}"))
    if cmd.body:
        out += _body_lines(cmd)
    return out


def _body_lines(cmd: Any) -> list[Text]:
    from ..codecs.message import Message

    try:
        body = decoded_body(cmd)
    except CodecError as exc:  # show why, then the bytes
        return [Text(f"    body ({len(cmd.body)} bytes, undecodable: {exc})", "red"), _preview(cmd.body)]
    if isinstance(body, Message):
        body = [body]
    if isinstance(body, list) and all(isinstance(m, Message) for m in body):
        out = [Text(f"    body: {len(body)} message(s)", "bold")]
        for i, msg in enumerate(body):
            out += _message_lines(i, msg)
        return out
    if isinstance(body, (bytes, bytearray)):
        return [Text(f"    body ({len(body)} bytes)", "bold"), _preview(bytes(body))]
    text = json.dumps(jsonable(body), ensure_ascii=False, indent=2)
    out = [Text(f"    body {type(body).__name__}", "bold")]
    out += [Text("      " + ln) for ln in text.splitlines()]
    return out


def _message_lines(i: int, msg: Any) -> list[Text]:
    facts = message_extras(msg)
    head = f"      [{i}] topic={msg.topic}"
    for attr in ("queue_id", "queue_offset", "commit_log_offset", "reconsume_times", "sys_flag"):
        if hasattr(msg, attr):
            head += f" {attr}={getattr(msg, attr)}"
    out = [Text(head)]
    if "msg_id" in facts:
        out.append(Text(f"          msgId={facts['msg_id']}"))
    if facts.get("uniq_key"):
        out.append(Text(f"          uniqKey={facts['uniq_key']}"))
    out.append(Text(f"          keys={facts['keys']} tags={facts['tags']}"))
    for k, v in msg.properties.items():
        out.append(Text(f"          {k}={v}", "dim"))
    try:
        body = msg.decompressed_body()
    except CodecError:  # a compressed body that does not inflate: show it as stored
        body = msg.body
    out.append(_preview(body, indent=10))
    return out


def _preview(data: bytes, indent: int = 6) -> Text:
    shown = data[:BODY_PREVIEW]
    try:
        text = repr(shown.decode("utf-8"))
    except UnicodeDecodeError:
        text = shown.hex()
    more = f" … ({len(data)} bytes)" if len(data) > BODY_PREVIEW else ""
    return Text(" " * indent + text + more, "dim")


class LineOutput:
    """Rich text, one line per command; notes about the streams inline, like tshark's."""

    def __init__(self, console: Console, verbose: bool = False) -> None:
        self.console = console
        self.verbose = verbose
        self.t0: float | None = None
        # into a file or pipe there is no colour to draw: write the plain text, which is
        # several times faster than rich's renderer (it matters on million-frame captures)
        self._plain = not console.is_terminal

    def _print(self, text: Text) -> None:
        if self._plain:
            self.console.file.write(text.plain + "\n")
        else:
            self.console.print(text)

    def _start(self, ts: float) -> float:
        if self.t0 is None:
            self.t0 = ts
        return self.t0

    def frame(self, fr: CapturedFrame) -> None:
        t0 = self._start(fr.ts)
        if self._plain:
            self.console.file.write("".join(p[0] for p in line_parts(fr, t0)) + "\n")
        else:
            self.console.print(line(fr, t0))
        if self.verbose:
            for t in detail(fr):
                self._print(t)

    def ha(self, unit: HaUnit) -> None:
        t0 = self._start(unit.ts)
        parts = ha_line_parts(unit, t0)
        if self._plain:
            self.console.file.write("".join(p[0] for p in parts) + "\n")
        else:
            self.console.print(Text.assemble(*parts, no_wrap=True))
        if self.verbose:
            for t in ha_detail(unit):
                self._print(t)

    def note(self, note: StreamNote) -> None:
        t0 = self._start(note.ts)
        t = Text(no_wrap=True)
        t.append(f"{note.number or '':>6} ", "dim")
        t.append(f"{note.ts - t0:11.6f} ")
        t.append(f"{endpoint(note.src)} → {endpoint(note.dst)}  ", "blue")
        t.append(f"[{note.kind}: {note.describe()}]", "yellow")
        self._print(t)

    def close(self) -> None:
        pass


class JsonOutput:
    """One JSON object per RemotingCommand on ``out``; stream notes go to ``notes`` (stderr)."""

    def __init__(self, out: IO[str], verbose: bool = False, notes: Console | None = None) -> None:
        self.out = out
        self.verbose = verbose
        self.notes = notes

    def frame(self, fr: CapturedFrame) -> None:
        self.out.write(json.dumps(frame_json(fr, self.verbose), ensure_ascii=False) + "\n")

    def ha(self, unit: HaUnit) -> None:
        self.out.write(json.dumps(ha_json(unit, self.verbose), ensure_ascii=False) + "\n")

    def note(self, note: StreamNote) -> None:
        if self.notes is not None:
            self.notes.print(
                Text(f"{endpoint(note.src)} → {endpoint(note.dst)} [{note.kind}: {note.describe()}]", "yellow")
            )

    def close(self) -> None:
        self.out.flush()
