"""Captures as rows: one per RemotingCommand, or one per message carried when exploded.

Frames come from :func:`rocketpy.sniffer.pcap.read_events`, which streams the capture and
recognises RocketMQ connections by their content on any port (option ``ports`` narrows it);
with ``haStream`` the master/slave HA connections come as rows too (kinds ``ha_report`` and
``ha_transfer``, a transfer held until the slave acknowledges it). Frames
and are paired by the sniffer's :class:`~rocketpy.sniffer.pairing.Pairer`, also streaming:
a request's row is held until its response arrives, so both rows carry the latency and
the request's row its outcome. Held requests are bounded: past ``pairTimeoutSeconds`` of
capture time without an answer (a long-poll still parked, a lost response) the request
is given up and emitted unpaired, so a capture of any length is read in bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..codecs import dledger as dl
from ..codecs.codes import LanguageCode, MessageConst, RequestCode, ResponseCode, request_code_name, response_code_name
from ..codecs.command import RemotingCommand
from ..codecs.dledger import is_dledger_code
from ..codecs.errors import CodecError
from ..codecs.headers.registry import V2_SEND_CODES
from ..codecs.message import Message, MessageExt, decode_batch, decode_message, decode_messages
from ..codecs.payload import (
    MESSAGE_RECORD_REQUESTS,
    MESSAGE_RECORD_RESPONSES,
    RAW_MESSAGE_BODY_REQUESTS,
    send_header,
    sent_message,
)
from ..javacompat.lang import parse_java_int
from ..sniffer.describe import dledger_summary
from ..sniffer.hastream import HaPairer, HaUnit
from ..sniffer.pairing import Pairer
from ..sniffer.pcap import CapturedFrame, read_events
from ._columns import BatchBuilder, seconds_to_us
from ._files import open_binary

__all__ = ["PCAP_COLUMNS", "PcapOptions", "pcap_batches"]

PCAP_COLUMNS: list[tuple[str, str]] = [
    ("file", "string"),
    ("frame_index", "long"),  # order in which frames completed in this capture
    ("ts", "double"),  # capture time, epoch seconds
    ("time", "timestamp"),
    ("src", "string"),
    ("dst", "string"),
    ("client", "string"),  # the connection's client end (ip:port)
    ("server", "string"),  # the connection's server end (name server or broker port)
    ("from_server", "bool"),
    ("direction", "string"),  # "to_server" or "to_client"
    ("kind", "string"),  # "request", "response", "error" (a frame that did not decode); "ha_report", "ha_transfer"
    ("code", "int"),  # as on the wire: a request code or a response code
    ("code_name", "string"),
    ("request_code", "int"),  # the request's code, on both rows of a pair
    ("request_code_name", "string"),
    ("response_code", "int"),  # the response's code, on both rows of a pair
    ("response_code_name", "string"),
    ("opaque", "int"),
    ("flag", "int"),
    ("oneway", "bool"),
    ("language", "string"),
    ("version", "int"),
    ("serialize_type", "string"),
    ("remark", "string"),
    ("ext_fields", "map"),
    ("topic", "string"),  # from the header; a response takes its request's
    ("group", "string"),  # producer or consumer group, likewise
    ("queue_id", "int"),
    ("body_size", "int"),
    ("frame_size", "int"),
    ("paired", "bool"),
    ("latency_ms", "double"),  # response time minus request time, on both rows
    ("error", "string"),
    # DLedger's Raft RPC (codes 50000-51005, on any port): what its JSON body says.
    ("summary", "string"),  # the frame in a few words, as `rocketpy sniff` shows it
    ("dledger_result", "string"),  # the reply body's code (its header says 200), on both rows of a pair
    ("dledger_term", "long"),
    ("dledger_index", "long"),  # a PUSH's first entry; the entry a PUSH or APPEND reply names
    ("dledger_push_type", "string"),  # APPEND, COMMIT, COMPARE, TRUNCATE
    # HA connections (option haStream): a slave's offset report or a master's transfer of CommitLog bytes.
    ("ha_offset", "long"),  # the reported max offset, or where the transfer's bytes start in the CommitLog
    ("ha_size", "int"),  # a transfer's CommitLog bytes (0: a heartbeat)
    ("ha_role", "string"),  # report: initial, ack, keepalive; transfer: data, heartbeat
    ("ha_records", "int"),  # whole CommitLog records a transfer carries (null: not at a record boundary)
    # Filled when messages are exploded (option explodeMessages): one row per message.
    ("msg_index", "int"),
    ("msg_topic", "string"),
    ("msg_queue_id", "int"),
    ("msg_queue_offset", "long"),
    ("msg_commit_log_offset", "long"),
    ("msg_id", "string"),  # offset msg id of a stored record (PULL, QUERY, VIEW, CHECK)
    ("msg_uniq_key", "string"),
    ("msg_tags", "string"),
    ("msg_keys", "strings"),
    ("msg_properties", "map"),
    ("msg_body_size", "int"),
    ("msg_flag", "int"),
    ("msg_sys_flag", "int"),
    ("msg_reconsume_times", "int"),
    ("msg_born_timestamp", "long"),
    ("msg_store_timestamp", "long"),
    ("msg_born_host", "string"),
    ("msg_store_host", "string"),
]

# Header fields carrying the topic, group and queue. SendMessageRequestHeaderV2 (the
# codes of V2_SEND_CODES) uses one-letter names: a = producerGroup, b = topic, e = queueId, i = properties.
_TOPIC_FIELDS = ("topic", "originTopic")
_GROUP_FIELDS = ("consumerGroup", "producerGroup", "group")
_QUEUE_FIELDS = ("queueId",)


@dataclass(frozen=True, slots=True)
class PcapOptions:
    """Reader options (``.option(name, value)``, names case-insensitive)."""

    explode_messages: bool = False  # explodeMessages
    ports: frozenset[int] | None = None  # ports: only connections with one of these (comma-separated) at an end
    pair_timeout: float = 300.0  # pairTimeoutSeconds: give up on an unanswered request after this
    ha_stream: bool = False  # haStream: rows for master/slave HA connections too

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> PcapOptions:
        lowered = {k.lower(): v for k, v in options.items()}
        ports = lowered.get("ports")
        return cls(
            explode_messages=lowered.get("explodemessages", "false").strip().lower() in ("1", "true", "yes"),
            ports=frozenset(int(p) for p in ports.split(",") if p.strip()) if ports else None,
            pair_timeout=float(lowered.get("pairtimeoutseconds", "300")),
            ha_stream=lowered.get("hastream", "false").strip().lower() in ("1", "true", "yes"),
        )


def _endpoint(ep: tuple[str, int]) -> str:
    return f"{ep[0]}:{ep[1]}"


def _int(text: str | None) -> int | None:
    """A header field as Integer.parseInt reads it; None when absent or not an int."""
    return None if text is None else parse_java_int(text)


def _first(ext: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = ext.get(name)
        if value:
            return value
    return None


def _where(cmd: RemotingCommand) -> tuple[str | None, str | None, int | None]:
    """(topic, group, queue id) named in a command's header fields."""
    ext = cmd.ext_fields or {}
    if not cmd.is_response and cmd.code in V2_SEND_CODES:
        return ext.get("b"), ext.get("a"), _int(ext.get("e"))
    return _first(ext, _TOPIC_FIELDS), _first(ext, _GROUP_FIELDS), _int(_first(ext, _QUEUE_FIELDS))


def _message_values(msg: Message, index: int) -> dict[str, Any]:
    values: dict[str, Any] = {
        "msg_index": index,
        "msg_topic": msg.topic,
        "msg_uniq_key": msg.properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        "msg_tags": msg.tags,
        "msg_keys": msg.keys,
        "msg_properties": msg.properties,
        "msg_body_size": len(msg.body),
        "msg_flag": msg.flag,
    }
    if isinstance(msg, MessageExt):
        try:
            msg_id: str | None = msg.msg_id
        except CodecError:
            msg_id = None
        values.update(
            msg_queue_id=msg.queue_id,
            msg_queue_offset=msg.queue_offset,
            msg_commit_log_offset=msg.commit_log_offset,
            msg_id=msg_id,
            msg_sys_flag=msg.sys_flag,
            msg_reconsume_times=msg.reconsume_times,
            msg_born_timestamp=msg.born_timestamp,
            msg_store_timestamp=msg.store_timestamp,
            msg_born_host=msg.born_host,
            msg_store_host=msg.store_host,
        )
    return values


def _sent_message(cmd: RemotingCommand, queue_id: int | None) -> dict[str, Any]:
    """The one message of a SEND / reply request: body from the frame, the rest from the typed header."""
    header = send_header(cmd)
    values = _message_values(sent_message(cmd, header), 0)
    values.update(
        msg_queue_id=queue_id,
        msg_sys_flag=header.sys_flag,
        msg_born_timestamp=header.born_timestamp,
        msg_reconsume_times=header.reconsume_times,
        # a reply the broker pushes (ReplyMessageRequestHeader) says where it was stored
        msg_born_host=getattr(header, "born_host", None),
        msg_store_host=getattr(header, "store_host", None),
        msg_store_timestamp=getattr(header, "store_timestamp", None),
    )
    return values


def carried_messages(cmd: RemotingCommand, topic: str | None, queue_id: int | None) -> list[dict[str, Any]]:
    """Message columns for each message ``cmd`` carries (empty when it carries none).

    Responses must have ``request_code`` set (pairing does it). Bodies are decoded
    without decompressing: sizes are as they travelled.
    """
    if not cmd.body:
        return []
    if cmd.is_response:
        if cmd.code == ResponseCode.SUCCESS and cmd.request_code in MESSAGE_RECORD_RESPONSES:
            return [_message_values(m, i) for i, m in enumerate(decode_messages(cmd.body, decompress=False))]
        return []
    if cmd.code in RAW_MESSAGE_BODY_REQUESTS:
        return [_sent_message(cmd, queue_id)]
    if cmd.code == RequestCode.SEND_BATCH_MESSAGE:
        out = []
        for i, m in enumerate(decode_batch(cmd.body, topic or "")):
            values = _message_values(m, i)
            values["msg_queue_id"] = queue_id
            out.append(values)
        return out
    if cmd.code in MESSAGE_RECORD_REQUESTS:
        return [_message_values(decode_message(cmd.body, decompress=False), 0)]
    return []


def _dledger_values(fr: CapturedFrame) -> dict[str, Any]:
    """The DLedger columns of a frame of DLedger's RPC (a reply once paired); {} for others."""
    found = dledger_summary(fr)
    if found is None:
        return {}
    cmd = fr.command
    assert cmd is not None
    body = cmd.decode_body()  # decoded already by the summary: it decodes
    values: dict[str, Any] = {"summary": found[0], "dledger_term": body.term}
    if cmd.is_response:
        values["dledger_result"] = body.response_code.name
    if isinstance(body, dl.PushEntryRequest):
        values.update(dledger_push_type=body.type.name, dledger_index=body.first_index())
    elif isinstance(body, (dl.PushEntryResponse, dl.AppendEntryResponse)):
        values["dledger_index"] = body.index
    return values


def dledger_messages(cmd: RemotingCommand) -> list[dict[str, Any]]:
    """Message columns for each message record carried inside the DLedger entries of a PUSH
    request or a GET/PULL reply (a DLedger broker's entries each hold one); an entry whose body is
    no message record carries none."""
    try:
        body = cmd.decode_body()
    except CodecError:
        return []
    if isinstance(body, dl.PushEntryRequest):
        entries = body.batch_entry or ([body.entry] if body.entry is not None else [])
    elif isinstance(body, (dl.GetEntriesResponse, dl.PullEntriesResponse)):
        entries = body.entries
    else:
        return []
    out: list[dict[str, Any]] = []
    for entry in entries:
        try:
            msg = decode_message(entry.body or b"", decompress=False)
        except CodecError:
            continue
        out.append(_message_values(msg, len(out)))
    return out


def _language(cmd: RemotingCommand) -> str:
    lang = cmd.language
    return lang.name if isinstance(lang, LanguageCode) else str(lang)


class _Row:
    """A frame's (or HA unit's) row while it waits for its pair."""

    __slots__ = ("frame", "index", "values")

    def __init__(self, frame: CapturedFrame | HaUnit, index: int, values: dict[str, Any]) -> None:
        self.frame = frame
        self.index = index
        self.values = values


def _base_values(path: str, index: int, fr: CapturedFrame) -> dict[str, Any]:
    client, server = fr.conn
    values: dict[str, Any] = {
        "file": path,
        "frame_index": index,
        "ts": fr.ts,
        "time": seconds_to_us(fr.ts),
        "src": _endpoint(fr.src),
        "dst": _endpoint(fr.dst),
        "client": _endpoint(client),
        "server": _endpoint(server),
        "from_server": fr.from_server,
        "direction": "to_client" if fr.from_server else "to_server",
        "frame_size": len(fr.raw),
        "paired": False,
        "error": fr.error,
    }
    cmd = fr.command
    if cmd is None:
        values["kind"] = "error"
        return values
    topic, group, queue_id = _where(cmd)
    values.update(
        kind="response" if cmd.is_response else "request",
        code=cmd.code,
        code_name=response_code_name(cmd.code) if cmd.is_response else request_code_name(cmd.code),
        opaque=cmd.opaque,
        flag=cmd.flag,
        oneway=cmd.is_oneway,
        language=_language(cmd),
        version=cmd.version,
        serialize_type=cmd.serialize_type.name,
        remark=cmd.remark,
        ext_fields=cmd.ext_fields,
        topic=topic,
        group=group,
        queue_id=queue_id,
        body_size=len(cmd.body) if cmd.body else 0,
    )
    if cmd.is_response:
        values.update(response_code=cmd.code, response_code_name=values["code_name"])
    else:
        values.update(request_code=cmd.code, request_code_name=values["code_name"])
        if is_dledger_code(cmd.code):
            values.update(_dledger_values(fr))
    return values


def _ha_values(path: str, index: int, unit: HaUnit) -> dict[str, Any]:
    slave, master = unit.conn
    transfer = unit.kind == "transfer"
    return {
        "file": path,
        "frame_index": index,
        "ts": unit.ts,
        "time": seconds_to_us(unit.ts),
        "src": _endpoint(unit.src),
        "dst": _endpoint(unit.dst),
        "client": _endpoint(slave),
        "server": _endpoint(master),
        "from_server": unit.from_master,
        "direction": "to_client" if unit.from_master else "to_server",
        "kind": "ha_transfer" if transfer else "ha_report",
        "frame_size": 12 + unit.size if transfer else 8,
        "body_size": unit.size if transfer else None,
        "paired": False,
        "ha_offset": unit.offset,
        "ha_size": unit.size if transfer else None,
        "ha_role": unit.role,
        "ha_records": (len(unit.records) if unit.records is not None else None) if transfer and unit.data else None,
    }


def _ha_paired(row: _Row) -> None:
    unit = row.frame
    assert isinstance(unit, HaUnit)
    if unit.peer is not None and unit.latency is not None:
        row.values.update(paired=True, latency_ms=unit.latency * 1000.0)


class _Emitter:
    """Turns finished rows into batches, exploding messages when asked."""

    def __init__(self, explode: bool) -> None:
        self.explode = explode
        self.builder = BatchBuilder(PCAP_COLUMNS)

    def emit(self, row: _Row) -> Iterator[pa.RecordBatch]:
        values = row.values
        messages: list[dict[str, Any]] = []
        if isinstance(row.frame, HaUnit):
            if self.explode and row.frame.records:
                messages = [_message_values(m, i) for i, m in enumerate(row.frame.records)]
            cmd = None
        else:
            cmd = row.frame.command
        if self.explode and cmd is not None:
            try:
                messages = carried_messages(cmd, values.get("topic"), values.get("queue_id"))
                if not messages and values.get("summary") is not None:
                    messages = dledger_messages(cmd)
            except CodecError as exc:
                values["error"] = f"messages not decodable: {exc}"
        for m in messages or [{}]:
            batch = self.builder.add_dict({**values, **m}, payload_bytes=0)
            if batch is not None:
                yield batch

    def finish(self) -> Iterator[pa.RecordBatch]:
        last = self.builder.flush()
        if last is not None:
            yield last


def _pair(req: _Row, resp: _Row) -> None:
    rq, rs = req.values, resp.values
    latency = (resp.frame.ts - req.frame.ts) * 1000.0
    # a DLedger reply's header code (200) is named by DLedger's table, which only the request tells
    rs["code_name"] = rs["response_code_name"] = response_code_name(rs["code"], rq["code"])
    if is_dledger_code(rq["code"]):
        assert isinstance(resp.frame, CapturedFrame)
        rs.update(_dledger_values(resp.frame))
        rq["dledger_result"] = rs.get("dledger_result")
    rq.update(paired=True, latency_ms=latency, response_code=rs["code"], response_code_name=rs["code_name"])
    rs.update(paired=True, latency_ms=latency, request_code=rq["code"], request_code_name=rq["code_name"])
    # A response names no topic or group of its own (PULL, SEND): it answers for its request's.
    for key in ("topic", "group", "queue_id"):
        if rs.get(key) is None:
            rs[key] = rq.get(key)


def pcap_batches(path: str, options: PcapOptions | None = None) -> Iterator[pa.RecordBatch]:
    """Batches of the rows of one capture file, read as a stream."""
    opts = options or PcapOptions()
    out = _Emitter(opts.explode_messages)
    pairer = Pairer(timeout=opts.pair_timeout)
    held: dict[int, _Row] = {}  # rows of the requests the pairer holds, by id of their frame
    ha_pairer = HaPairer()
    ha_held: list[_Row] = []  # data transfers waiting for the slave's acknowledgement, oldest first
    with open_binary(path) as stream:
        for index, fr in enumerate(read_events(stream, opts.ports)):
            if isinstance(fr, HaUnit):
                if opts.ha_stream:
                    yield from _ha_row(path, index, fr, ha_pairer, ha_held, out, opts.pair_timeout)
                continue
            row = _Row(fr, index, _base_values(path, index, fr))
            for given_up in pairer.add(fr):  # unanswered in time, or the opaque reused: emitted unpaired
                yield from out.emit(held.pop(id(given_up)))
            if pairer.waiting(fr):
                held[id(fr)] = row
                continue
            if fr.request is not None:  # a response: its request's row goes out first
                req = held.pop(id(fr.request))
                _pair(req, row)
                yield from out.emit(req)
            yield from out.emit(row)
    for fr in pairer.drain():
        yield from out.emit(held.pop(id(fr)))
    for row in ha_held:
        yield from out.emit(row)
    yield from out.finish()


def _ha_row(
    path: str, index: int, unit: HaUnit, pairer: HaPairer, held: list[_Row], out: _Emitter, timeout: float
) -> Iterator[pa.RecordBatch]:
    """Emit an HA unit's row; a data transfer waits for the report acknowledging it (or ``timeout``)."""
    pairer.add(unit)
    while held and unit.ts - held[0].frame.ts > timeout:
        yield from out.emit(held.pop(0))
    row = _Row(unit, index, _ha_values(path, index, unit))
    if unit.kind == "transfer" and unit.data:
        held.append(row)
        return
    if unit.kind == "report" and unit.peer is not None:
        acked = [r for r in held if isinstance(r.frame, HaUnit) and r.frame.peer is unit]
        for r in acked:
            held.remove(r)
            _ha_paired(r)
            yield from out.emit(r)
        _ha_paired(row)
    yield from out.emit(row)
