"""The hot path's fast codecs agree with their declared (construct / careful) references,
and the broker answers a receive's frames with one write."""

from __future__ import annotations

import struct
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketpy import accel
from rocketpy.codecs import CodecError, RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketpy.codecs.codes import MessageSysFlag
from rocketpy.codecs.frame import _parse_rocketmq_header_checked, encode_rocketmq_header, parse_rocketmq_header
from rocketpy.codecs.headers import SendMessageRequestHeaderV2
from rocketpy.codecs.message import (
    MESSAGE_RECORD,
    build_record,
    decode_message,
    decode_messages,
    offset_msg_id,
    parse_record_fields,
    properties_to_string,
    string_to_properties,
)
from rocketpy.codecs.record import _RECORD_C, _record_view, plain_records_py
from rocketpy.javacompat.lang import java_string_hash, java_string_hash_reference
from rocketpy.remoting import RemotingServer
from rocketpy.remoting.connection import CommandReader
from rocketpy.testing import running_broker

_int32 = st.integers(-(1 << 31), (1 << 31) - 1)
_int64 = st.integers(-(1 << 63), (1 << 63) - 1)
_port = st.integers(0, 65535)
_FIELDS = [
    "total_size", "body_crc", "queue_id", "flag", "queue_offset", "physical_offset", "sys_flag", "born_timestamp",
    "born_host", "born_port", "store_timestamp", "store_host", "store_port", "reconsume_times",
    "prepared_transaction_offset", "body", "topic", "properties",
]  # fmt: skip
_BORN_V6 = int(MessageSysFlag.BORNHOST_V6_FLAG)
_STORE_V6 = int(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)


@st.composite
def record_fields(draw: st.DrawFn) -> dict[str, Any]:
    sys_flag = draw(_int32)
    born_v6, store_v6 = bool(sys_flag & _BORN_V6), bool(sys_flag & _STORE_V6)
    body = draw(st.binary(max_size=300))
    topic = draw(st.binary(max_size=127))
    props = draw(st.binary(max_size=300))
    return {
        "total_size": draw(_int32),
        "body_crc": draw(_int32),
        "queue_id": draw(_int32),
        "flag": draw(_int32),
        "queue_offset": draw(_int64),
        "physical_offset": draw(_int64),
        "sys_flag": sys_flag,
        "born_timestamp": draw(_int64),
        "born_host": draw(st.binary(min_size=16, max_size=16) if born_v6 else st.binary(min_size=4, max_size=4)),
        "born_port": draw(_int32),
        "store_timestamp": draw(_int64),
        "store_host": draw(st.binary(min_size=16, max_size=16) if store_v6 else st.binary(min_size=4, max_size=4)),
        "store_port": draw(_int32),
        "reconsume_times": draw(_int32),
        "prepared_transaction_offset": draw(_int64),
        "body": body,
        "topic": topic,
        "properties": props,
    }


def _whole(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields with total_size set to the record's real length (what a parser needs)."""
    f = dict(fields)
    f["total_size"] = len(MESSAGE_RECORD.build(f))
    return f


# -- records: struct fast paths against MESSAGE_RECORD ------------------------------------


@given(record_fields())
def test_build_record_is_construct_build(fields: dict[str, Any]) -> None:
    assert build_record(*[fields[k] for k in _FIELDS]) == MESSAGE_RECORD.build(fields)


@given(record_fields(), st.sampled_from(["queue_id", "born_port", "queue_offset", "topic", "born_host", "body"]))
def test_build_record_bad_values_fail_like_construct(fields: dict[str, Any], bad: str) -> None:
    fields = dict(fields)
    fields[bad] = {
        "queue_id": 1 << 31,
        "born_port": -(1 << 40),
        "queue_offset": 1 << 63,
        "topic": b"t" * 128,
        "born_host": b"\x01\x02\x03",
        "body": "not bytes",
    }[bad]
    # whatever the compiled construct build (the one used before) does, build_record does
    try:
        expected = _RECORD_C.build(fields)
    except Exception as exc:
        with pytest.raises(type(exc)):
            build_record(*[fields[k] for k in _FIELDS])
        return
    assert build_record(*[fields[k] for k in _FIELDS]) == expected


@given(record_fields())
def test_parse_record_fields_is_construct_parse(fields: dict[str, Any]) -> None:
    fields = _whole(fields)
    raw = MESSAGE_RECORD.build(fields)
    parsed = MESSAGE_RECORD.parse(raw)
    assert parse_record_fields(raw) == tuple(parsed[k] for k in _FIELDS)


def _decode_by_construct(raw: bytes, check_crc: bool) -> Any:
    """decode_messages as it was before the fast path: the compiled construct parses every record.

    (The compiled parser is more lenient than the interpreted one about a short last field;
    the fast path hands every such record to it, so nothing changes.)
    """
    from rocketpy.codecs.message import body_crc

    out = []
    offset = 0
    while offset < len(raw):
        size, magic = struct.unpack_from(">ii", raw, offset) if offset + 8 <= len(raw) else (0, 0)
        if magic != -626843481 or size < 91 or offset + size > len(raw):
            raise CodecError("bad record head")
        try:
            c = _RECORD_C.parse(raw[offset : offset + size])
        except Exception as exc:
            raise CodecError(str(exc)) from None
        if check_crc and c.body and body_crc(c.body) != c.body_crc:
            raise CodecError("crc")
        out.append(_record_view(c, c.properties))
        offset += size
    return out


@st.composite
def record_bytes(draw: st.DrawFn) -> bytes:
    """Valid records, then maybe a few bytes changed or cut: both decoders must agree."""
    records = [MESSAGE_RECORD.build(_whole(f)) for f in draw(st.lists(record_fields(), min_size=1, max_size=3))]
    raw = bytearray(b"".join(records))
    for _ in range(draw(st.integers(0, 3))):
        pos = draw(st.integers(0, len(raw) - 1))
        raw[pos] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        raw = raw[: draw(st.integers(0, len(raw)))]
    return bytes(raw)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(record_bytes(), st.booleans())
def test_decode_messages_agrees_with_construct(raw: bytes, check_crc: bool) -> None:
    try:
        expected = _decode_by_construct(raw, check_crc)
    except CodecError:
        with pytest.raises(CodecError):
            decode_messages(raw, check_crc=check_crc, decompress=False)
        return
    got = decode_messages(raw, check_crc=check_crc, decompress=False)
    assert got == expected
    assert [m._raw_properties for m in got] == [m._raw_properties for m in expected]
    if expected:
        assert decode_message(memoryview(raw), decompress=False) == expected[0]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(record_bytes(), st.binary(max_size=8))
def test_compiled_plain_records_is_the_reference(raw: bytes, tail: bytes) -> None:
    """The compiled walk of a PULL body's plain records stops where the reference does, with equal fields."""
    compiled = accel.compiled("plain_records")
    if compiled is None:
        pytest.skip("the accelerated build is not there (or ROCKETPY_PURE is set)")
    for buf in (raw, raw + tail):
        assert compiled(buf) == plain_records_py(buf)


# -- frames: the fast ROCKETMQ header parser against the careful one ---------------------------


_ext = st.dictionaries(st.text(max_size=10), st.text(max_size=30), max_size=8)


@st.composite
def rocketmq_headers(draw: st.DrawFn) -> bytes:
    header = encode_rocketmq_header(
        draw(st.integers(-(1 << 15), (1 << 15) - 1)),
        draw(st.integers(0, 255)),
        draw(st.integers(-(1 << 15), (1 << 15) - 1)),
        draw(_int32),
        draw(_int32),
        draw(st.none() | st.text(max_size=30)),
        draw(st.none() | _ext),
    )
    raw = bytearray(header)
    for _ in range(draw(st.integers(0, 3))):
        pos = draw(st.integers(0, len(raw) - 1))
        raw[pos] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        raw = raw[: draw(st.integers(0, len(raw)))]
    return bytes(raw)


def _outcome(fn: Any, data: bytes) -> Any:
    try:
        return fn(data)
    except CodecError as exc:
        return ("error", str(exc))


@settings(max_examples=300)
@given(rocketmq_headers())
def test_fast_rocketmq_header_agrees_with_checked_parser(data: bytes) -> None:
    fast = _outcome(parse_rocketmq_header, data)
    careful = _outcome(_parse_rocketmq_header_checked, data)
    assert fast == careful
    if isinstance(fast, tuple) and fast[0] != "error" and fast[6] is not None:
        assert list(fast[6]) == list(careful[6])  # wire order kept


@given(st.binary(max_size=80))
def test_fast_rocketmq_header_random_bytes(data: bytes) -> None:
    assert _outcome(parse_rocketmq_header, data) == _outcome(_parse_rocketmq_header_checked, data)


def _json_header_reference(header: bytes) -> Any:
    """RemotingCommand._from_json_header as it was before its fast path."""
    import json

    from rocketpy.codecs import fastjson
    from rocketpy.codecs.command import _language

    data = json.loads(header)
    if not isinstance(data, dict):
        raise CodecError("JSON header is not an object")
    values: dict[str, Any] = {}
    for key in ("code", "version", "opaque", "flag"):
        v = data.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, str) and v.lstrip("-").isdigit():
                v = int(v)
            else:
                raise CodecError(f"JSON header field {key} is not an integer: {v!r}")
        values[key] = v
    if "code" not in data:
        raise CodecError("JSON header has no code")
    values["language"] = _language(data.get("language", "JAVA"))
    remark = data.get("remark")
    if remark is not None and not isinstance(remark, str):
        remark = str(remark)
    values["remark"] = remark
    ext = data.get("extFields")
    if ext is not None:
        if not isinstance(ext, dict):
            raise CodecError("JSON header extFields is not an object")
        ext = {str(k): v if isinstance(v, str) else fastjson.dumps(v) for k, v in ext.items() if v is not None}
    values["ext_fields"] = ext
    return RemotingCommand(**values)


_odd = st.sampled_from(["12", "-4", "x", None, True, 1.5, [1], {"a": 1}, 7, "JAVA", "CPP"])


@given(st.dictionaries(st.sampled_from(["code", "version", "opaque", "flag", "language", "extFields", "remark"]), _odd))
def test_json_header_odd_values_decode_as_before(odd: dict[str, Any]) -> None:
    import json

    doc: dict[str, Any] = {"code": 10, "flag": 0, "language": "JAVA", "opaque": 3, "version": 409}
    doc.update(odd)
    header = json.dumps({k: v for k, v in doc.items() if v is not None or k in ("remark", "extFields")}).encode()
    frame = struct.pack(">ii", 4 + len(header), len(header)) + header
    try:
        expected = _json_header_reference(header)
    except CodecError as exc:
        with pytest.raises(CodecError) as got:
            RemotingCommand.decode(frame)
        assert str(got.value) == str(exc)
        return
    cmd = RemotingCommand.decode(frame)
    assert cmd == expected and type(cmd.language) is type(expected.language)


# -- small helpers with references --------------------------------------------------------


@given(st.text(max_size=600))
def test_java_string_hash_matches_reference(text: str) -> None:
    try:
        expected = java_string_hash_reference(text)
    except UnicodeEncodeError:  # a lone surrogate: Java strings may hold one, Python cannot encode it
        with pytest.raises(UnicodeEncodeError):
            java_string_hash(text)
        return
    assert java_string_hash(text) == expected


def _string_to_properties_reference(text: str | None) -> dict[str, str]:
    result: dict[str, str] = {}
    if not text:
        return result
    for entry in text.split("\x02"):
        sep = entry.find("\x01")
        if 0 < sep < len(entry) - 1:
            result[entry[:sep]] = entry[sep + 1 :]
    return result


@given(st.text(st.sampled_from("ab\x01\x02"), max_size=30) | st.text(max_size=40))
def test_string_to_properties_matches_reference(text: str) -> None:
    got = string_to_properties(text)
    expected = _string_to_properties_reference(text)
    assert got == expected and list(got) == list(expected)


@given(st.binary(min_size=4, max_size=4) | st.binary(min_size=16, max_size=16), _int32, st.integers(0, (1 << 63) - 1))
def test_offset_msg_id_matches_struct(ip: bytes, port: int, offset: int) -> None:
    assert offset_msg_id(ip, port, offset) == (ip + struct.pack(">iq", port, offset)).hex().upper()


# -- the connection layer: one receive, one write ----------------------------------------------


class CountingStream(trio.abc.Stream):
    def __init__(self, inner: trio.abc.Stream) -> None:
        self.inner = inner
        self.sends = 0

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.sends += 1
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _send_frame(i: int) -> bytes:
    header = SendMessageRequestHeaderV2(
        producer_group="PG",
        topic="HotTopic",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=i % 4,
        sys_flag=0,
        born_timestamp=1795299411940,
        flag=0,
        properties=properties_to_string({"UNIQ_KEY": f"{i:032X}", "WAIT": "true"}),
        reconsume_times=0,
        unit_mode=False,
        batch=False,
    )
    req = RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, header, b"m%d" % i, opaque=i, serialize_type=SerializeType.ROCKETMQ
    )
    return req.encode()


async def test_broker_answers_a_receive_of_sends_with_one_write(tmp_path: Any) -> None:
    async with running_broker(str(tmp_path)) as broker:
        client, server_side = trio.testing.memory_stream_pair()
        counting = CountingStream(server_side)
        server = RemotingServer(broker.dispatcher, state=broker)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.handle_stream, counting, "10.0.0.7:5555")
            await client.send_all(_send_frame(0))  # auto-creates the topic
            reader = CommandReader()
            got: list[RemotingCommand] = []
            with trio.fail_after(5):
                while not got:
                    got += reader.feed(await client.receive_some())
            assert counting.sends == 1
            await client.send_all(b"".join(_send_frame(i) for i in range(1, 17)))
            with trio.fail_after(5):
                while len(got) < 17:
                    got += reader.feed(await client.receive_some())
            assert counting.sends == 2  # sixteen answers, one write
            assert [c.opaque for c in got] == list(range(17))
            assert all(c.code == ResponseCode.SUCCESS and c.is_response for c in got)
            assert [int(c.ext_fields["queueOffset"]) for c in got[1:5]] == [0, 0, 0, 1]
            await client.aclose()
