"""What the outputs say about a frame: topic and group, JSON views of headers and bodies."""

from __future__ import annotations

import base64
import dataclasses
import enum
from typing import Any

from ..codecs import dledger as dl
from ..codecs.codes import SerializeType, request_code_name
from ..codecs.command import RemotingCommand
from ..codecs.errors import CodecError
from ..codecs.headers.registry import V2_SEND_CODES
from .reassembly import CapturedFrame, Endpoint, HaUnit

_TOPIC_KEYS = ("topic",)
_GROUP_KEYS = ("consumerGroup", "producerGroup", "group")
PROPERTY_KEYS = {"properties", "i"}


def endpoint(ep: Endpoint) -> str:
    host, port = ep
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _request_of(fr: CapturedFrame) -> RemotingCommand | None:
    cmd = fr.command
    if cmd is None:
        return None
    if cmd.is_response:
        return fr.request.command if fr.request is not None else None
    return cmd


def topic_of(fr: CapturedFrame) -> str | None:
    """The topic a command is about; a response is about its request's topic."""
    cmd = _request_of(fr)
    if cmd is None or not cmd.ext_fields:
        return None
    ext = cmd.ext_fields
    if cmd.code in V2_SEND_CODES and "b" in ext:  # SendMessageRequestHeaderV2 names fields a, b, ...
        return ext["b"]
    for key in _TOPIC_KEYS:
        if key in ext:
            return ext[key]
    return None


def group_of(fr: CapturedFrame) -> str | None:
    cmd = _request_of(fr)
    if cmd is None or not cmd.ext_fields:
        return None
    ext = cmd.ext_fields
    if cmd.code in V2_SEND_CODES and "a" in ext:  # SendMessageRequestHeaderV2 names fields a, b, ...
        return ext["a"]
    for key in _GROUP_KEYS:
        if key in ext:
            return ext[key]
    return None


def dledger_summary(fr: CapturedFrame) -> tuple[str, bool] | None:
    """What a DLedger frame says in a few words, and whether it went well (a reply's body ``code``);
    None for other frames."""
    req = _request_of(fr)
    cmd = fr.command
    if req is None or cmd is None or not dl.is_dledger_code(req.code):
        return None
    try:
        body = cmd.decode_body()
    except CodecError:
        return None
    if not isinstance(body, dl.DLedgerBase):
        return None
    words = [f"term={body.term}"]
    if isinstance(body, dl.PushEntryRequest):
        index = body.first_index()
        words.insert(0, body.type.name + (f" index={index}" if index >= 0 else ""))
        words.append(f"commit={body.commit_index}")
    elif isinstance(body, dl.VoteRequest):
        words.append(f"ledgerEnd={body.ledger_end_index}/{body.ledger_end_term}")
    elif isinstance(body, dl.PushEntryResponse):
        words.append(f"end={body.end_index}")
    elif isinstance(body, dl.VoteResponse):
        words.insert(0, body.vote_result.name)
    if not cmd.is_response:
        words.append(f"{body.local_id}→{body.remote_id}")
        return " ".join(words), True
    ok = body.code == dl.DLedgerResponseCode.SUCCESS
    words.insert(0, f"{body.response_code.name}({body.code})")
    return " ".join(words), ok


def header_length(raw: bytes) -> int:
    return int.from_bytes(raw[5:8], "big") if len(raw) >= 8 else 0


def serialize_name(value: int) -> str:
    try:
        return SerializeType(value).name
    except ValueError:
        return str(value)


def language_name(value: object) -> str:
    return value.name if isinstance(value, enum.Enum) else str(value)


def frame_json(fr: CapturedFrame, verbose: bool = False) -> dict[str, Any]:
    """The ``--json`` object of one frame (RemotingCommand or undecodable frame)."""
    out: dict[str, Any] = {
        "ts": round(fr.ts, 6),
        "frame": fr.number or None,
        "src": endpoint(fr.src),
        "dst": endpoint(fr.dst),
        "frame_len": len(fr.raw),
    }
    cmd = fr.command
    if cmd is None:
        out["error"] = fr.error
        return out
    out.update(
        code=cmd.code,
        name=cmd.name,
        opaque=cmd.opaque,
        flag=cmd.flag,
        is_response=cmd.is_response,
        is_oneway=cmd.is_oneway,
        serialize_type=serialize_name(cmd.serialize_type),
        language=language_name(cmd.language),
        version=cmd.version,
        remark=cmd.remark,
        ext_fields=cmd.ext_fields,
        header_len=header_length(fr.raw),
        body_len=len(cmd.body or b""),
        topic=topic_of(fr),
        group=group_of(fr),
    )
    dledger = dledger_summary(fr)
    if dledger is not None:  # what the DLedger body says, as the text output shows it
        out["dledger"], out["dledger_ok"] = dledger
    if cmd.is_response:
        req = fr.request.command if fr.request is not None else None
        out["request_code"] = req.code if req is not None else None
        out["request_name"] = request_code_name(req.code) if req is not None else None
        out["latency_ms"] = round(fr.latency * 1000, 3) if fr.latency is not None else None
        out["paired"] = req is not None
    if verbose:
        out["header"] = header_json(cmd)
        out["body"] = body_json(cmd)
    return out


def typed_header(cmd: RemotingCommand) -> tuple[str | None, list[tuple[str, str, Any]]]:
    """(header class name, [(wire name, python name, value)]) — the raw extFields when untyped."""
    raw = [(k, "", v) for k, v in (cmd.ext_fields or {}).items()]
    if cmd.is_response and cmd.code != 0:
        return None, raw  # error responses carry no typed header, only what the remark says
    try:
        header = cmd.header
    except CodecError as exc:  # a header that does not decode is shown raw, with why
        return f"undecodable: {exc}", raw
    if header is None:
        return None, raw
    rows = [(s.java_name, s.attr, getattr(header, s.attr)) for s in header.fields_spec]
    return type(header).__name__, [r for r in rows if r[2] is not None]


def header_json(cmd: RemotingCommand) -> dict[str, Any]:
    name, rows = typed_header(cmd)
    fields = {}
    for wire, _attr, value in rows:
        if wire in PROPERTY_KEYS and isinstance(value, str):
            fields[wire] = jsonable(_properties(value))
        else:
            fields[wire] = jsonable(value)
    return {"class": name, "fields": fields}


def _properties(text: str) -> dict[str, str]:
    from ..codecs.message import string_to_properties

    return string_to_properties(text)


def decoded_body(cmd: RemotingCommand) -> Any:
    """The typed body; SEND requests become a Message built from the typed header and the body
    (inflated when compressed: what the application sent, not the deflate stream)."""
    from ..codecs import payload

    if not cmd.body:
        return None
    if not cmd.is_response and cmd.code in payload.RAW_MESSAGE_BODY_REQUESTS:
        return payload.sent_message(cmd, decompress=True, max_size=64 << 20)
    return cmd.decode_body()


def body_json(cmd: RemotingCommand) -> Any:
    try:
        return jsonable(decoded_body(cmd))
    except CodecError as exc:  # a body that does not decode: still show the bytes
        return {"undecodable": str(exc), "raw": jsonable(cmd.body)}


def message_extras(msg: Any) -> dict[str, Any]:
    """Computed facts about a message worth showing next to its fields."""
    out: dict[str, Any] = {"keys": list(msg.keys), "tags": msg.tags}
    for attr in ("msg_id", "uniq_key"):
        try:
            value = getattr(msg, attr, None)
        except CodecError:  # a record with a malformed store host has no msg id
            value = None
        if value is not None:
            out[attr] = value
    return out


def jsonable(obj: Any) -> Any:
    """Plain JSON data for typed headers, bodies and messages (bytes as text or base64)."""
    from ..codecs.bodies.base import JsonBody
    from ..codecs.message import Message

    if isinstance(obj, enum.Enum):
        return obj.name
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        try:
            text = data.decode("utf-8")
            if text.isprintable() or all(c.isprintable() or c in "\r\n\t" for c in text):
                return text
        except UnicodeDecodeError:
            pass
        return {"base64": base64.b64encode(data).decode("ascii")}
    if isinstance(obj, JsonBody):
        out = {p.java_name: jsonable(getattr(obj, p.attr)) for p in obj.props}
        extra = getattr(obj, "extra", None)
        if extra:
            out.update({str(k): jsonable(v) for k, v in extra.items()})
        return out
    if isinstance(obj, Message):
        out = {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj) if not f.name.startswith("_")}
        out.update(message_extras(obj))
        return out
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj) if not f.name.startswith("_")}
    if isinstance(obj, dict):
        return {str(jsonable(k)) if not isinstance(k, str) else k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in obj]
    return repr(obj)


def record_json(msg: Any, verbose: bool = False) -> dict[str, Any]:
    """A CommitLog record an HA transfer carries: where it sits (and with ``verbose`` what it says)."""
    facts = message_extras(msg)
    out: dict[str, Any] = {
        "topic": msg.topic,
        "queue_id": msg.queue_id,
        "queue_offset": msg.queue_offset,
        "commit_log_offset": msg.commit_log_offset,
        "store_size": msg.store_size,
        "msg_id": facts.get("msg_id"),
    }
    if verbose:
        out.update(
            uniq_key=facts.get("uniq_key"),
            keys=facts["keys"],
            tags=facts["tags"],
            properties=dict(msg.properties),
            body_len=len(msg.body),
            store_timestamp=msg.store_timestamp,
        )
    return out


def ha_json(unit: HaUnit, verbose: bool = False) -> dict[str, Any]:
    """The ``--json`` object of one HA unit (``"ha"`` tells it from a RemotingCommand's)."""
    out: dict[str, Any] = {
        "ts": round(unit.ts, 6),
        "frame": unit.number or None,
        "src": endpoint(unit.src),
        "dst": endpoint(unit.dst),
        "ha": unit.kind,
        "role": unit.role or None,
        "offset": unit.offset,
    }
    if unit.kind == "transfer":
        out["size"] = unit.size
        out["end"] = unit.end
        out["records"] = None if unit.records is None else [record_json(m, verbose) for m in unit.records]
    else:  # an acknowledgement names the transfer it answers (a transfer is written before its answer comes)
        out["acks_offset"] = unit.peer.offset if unit.peer is not None else None
        out["latency_ms"] = round(unit.latency * 1000, 3) if unit.latency is not None else None
        out["paired"] = unit.peer is not None
    return out


def ha_records_summary(unit: HaUnit) -> str:
    """``HaTopic/1@4`` for each record of a transfer (topic/queue@queue offset)."""
    if unit.records is None:
        return "not at a record boundary"
    return " ".join(f"{m.topic}/{m.queue_id}@{m.queue_offset}" for m in unit.records)
