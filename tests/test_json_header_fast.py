"""The compiled readers of plain JSON headers give what the references give, or hand the input back:
``_speedups.parse_json_header`` (used by RemotingCommand.decode; reference ``RemotingCommand._from_json_header``)
and ``_speedups.read_frames`` (a client's CommandReader; reference FrameSplitter and RemotingCommand.decode)."""

from __future__ import annotations

import json
import os
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketpy.accel import compiled
from rocketpy.codecs import CodecError, RemotingCommand, SerializeType
from rocketpy.codecs.codes import LanguageCode
from rocketpy.remoting import core
from rocketpy.remoting.core import CommandReader

c_parse = compiled("parse_json_header")
if c_parse is None:
    if os.environ.get("CI") and not os.environ.get("ROCKETPY_PURE"):
        pytest.fail("rocketpy._speedups was not built: the install lost the accelerated build", pytrace=False)
    pytest.skip("rocketpy._speedups is not built (or ROCKETPY_PURE is set)", allow_module_level=True)

_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=20)
_int32 = st.integers(-(1 << 31), (1 << 31) - 1)
_language = st.sampled_from([m for m in LanguageCode]) | _text


def _frame(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body


def _reference(frame: bytes) -> object:
    """What the pure path gives: the command, or the CodecError's text."""
    (hlen,) = struct.unpack_from(">i", frame, 4)
    try:
        cmd = RemotingCommand._from_json_header(memoryview(frame)[8 : 8 + hlen])
    except CodecError as exc:
        return ("CodecError", str(exc))
    cmd.body = frame[8 + hlen :] or None
    return cmd


def _agrees(frame: bytes) -> None:
    """Either the compiled reader leaves the header to the reference, or it reads what the reference reads
    (and decode, which takes the compiled reading, is then equal to the reference, language type included)."""
    (hlen,) = struct.unpack_from(">i", frame, 4)
    plain = c_parse(frame, 8, 8 + hlen)
    expected = _reference(frame)
    if plain is None:
        return
    assert isinstance(expected, RemotingCommand), (frame, plain, expected)
    got = RemotingCommand.decode(frame)
    assert got == expected
    assert type(got.language) is type(expected.language)
    assert got.ext_fields is None or list(got.ext_fields) == list(expected.ext_fields or {})


@given(st.integers(-(1 << 15), (1 << 15) - 1), _language, _int32, _int32, _int32, st.none() | _text,
       st.none() | st.dictionaries(_text, _text, max_size=6), st.binary(max_size=8))
def test_encoded_commands_read_as_the_reference_reads_them(code, language, version, opaque, flag, remark, ext,
                                                           body) -> None:  # type: ignore[no-untyped-def]
    cmd = RemotingCommand(code=code, language=language, version=version, opaque=opaque, flag=flag, remark=remark,
                          ext_fields=ext, body=body or None)
    frame = cmd.encode()
    _agrees(frame)
    assert RemotingCommand.decode(frame) == cmd


def test_a_send_answer_is_read_without_the_reference() -> None:
    answer = RemotingCommand(code=0, opaque=12345, flag=1, ext_fields={
        "msgId": "7F00000100002A9F0000000000123456", "queueId": "1", "queueOffset": "12345",
        "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})
    frame = answer.encode()
    plain = c_parse(frame, 8, len(frame))
    assert plain == (0, "JAVA", answer.version, 12345, 1, None, answer.ext_fields)
    assert RemotingCommand.decode(frame) == answer


_scalar = st.none() | st.booleans() | st.integers(-(1 << 40), 1 << 40) | st.floats(allow_nan=False) | _text
_value = st.recursive(_scalar, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(_text, inner, max_size=3), max_leaves=6)
_keys = st.sampled_from(["code", "language", "version", "opaque", "flag", "remark", "extFields",
                         "serializeTypeCurrentRPC", "other"])


@given(st.lists(st.tuples(_keys, _value | _int32 | st.dictionaries(_text, _text, max_size=3)), max_size=9),
       st.booleans())
def test_any_json_object_reads_as_the_reference_reads_it(pairs, spaced) -> None:  # type: ignore[no-untyped-def]
    body = ",".join(json.dumps(k) + ":" + json.dumps(v, ensure_ascii=False) for k, v in pairs)
    text = "{" + body + "}"
    if spaced:
        text = text.replace(":", ": ", 1)
    _agrees(_frame(text.encode()))


@given(st.data())
def test_mutated_headers_read_as_the_reference_reads_them(data: st.DataObject) -> None:
    base = bytearray(RemotingCommand(code=0, opaque=7, flag=1, remark="r",
                                     ext_fields={"msgId": "AB", "queueOffset": "-12"}).encode_header())
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(base) - 1))
        base[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(1, len(base)))
    for header in (bytes(base), bytes(base[:cut])):
        _agrees(_frame(header))


@pytest.mark.parametrize("header", [
    b'{"code":01}', b'{"code":1.0}', b'{"code":1e3}', b'{"code":2147483648}', b'{"code":-0,"flag":1}',
    b'{"code":"1"}', b'{"flag":1}', b'{"code":1,"remark":"a\\nb"}', b'{"code":1,"remark":"\x01"}',
    b'{"code":1,"extFields":{"a":1}}', b'{"code":1,"extFields":null}', b'{"code":1} ', b'{"code":1,}',
    b'{"code":1,"remark":"\xff"}', b'{"code":1,"language":7}', b'{"code":1}}', b'{"code":1,"x":[1]}',
    b'{"code":1,"extFields":{}}', b'{"code":1,"extFields":{"a":"b","a":"c"},"extFields":{"d":"e"}}',
])
def test_edge_headers(header: bytes) -> None:
    _agrees(_frame(header))


def test_out_of_range_offsets_are_refused() -> None:
    frame = _frame(b'{"code":1}')
    assert c_parse(frame, 8, len(frame) + 1) is None
    assert c_parse(frame, -1, len(frame)) is None
    assert c_parse(frame, 9, 9) is None


_commands = st.builds(
    RemotingCommand, code=st.integers(-(1 << 15), (1 << 15) - 1), language=_language, opaque=_int32, flag=_int32,
    remark=st.none() | _text, ext_fields=st.none() | st.dictionaries(_text, _text, max_size=4),
    body=st.none() | st.binary(min_size=1, max_size=8),
    serialize_type=st.sampled_from([SerializeType.JSON, SerializeType.JSON, SerializeType.ROCKETMQ]))


def _read_all(chunks: list[bytes], compiled_reader: bool) -> list[object]:
    """What a client's CommandReader gives for ``chunks`` fed one by one (a CodecError ends the stream)."""
    saved = core._read_frames
    core._read_frames = saved if compiled_reader else None
    try:
        reader = CommandReader(max_frame=300)
        out: list[object] = []
        for chunk in chunks:
            try:
                out.append(reader.feed(chunk))
            except CodecError as exc:
                out.append(("CodecError", str(exc)))
                break
        out.append(reader.buffered)
        return out
    finally:
        core._read_frames = saved


@given(st.lists(_commands | st.binary(max_size=12), max_size=6), st.data())
def test_a_client_reads_any_stream_as_the_reference_reads_it(items, data: st.DataObject) -> None:  # type: ignore[no-untyped-def]
    """Frames of every kind (plain JSON, JSON the reference must read, ROCKETMQ, too large, junk) in any chunking:
    the compiled reader gives the same commands, buffers the same and fails at the same frame."""
    stream = b"".join(item if isinstance(item, bytes) else item.encode() for item in items)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=4)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert _read_all(chunks, True) == _read_all(chunks, False)
