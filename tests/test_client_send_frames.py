"""The producer's send frames from cached pieces are the frames the typed header makes, byte for byte (and a
send's answer reads as the typed response header).

Today's reference is ClientAPI.send_request (SendMessageRequestHeader -> V2 -> RemotingCommand) encoded
with the opaque and oneway flag the connection gives; SendFrames must agree for every message, JSON
headers (what the client sends) and ROCKETMQ binary headers both, including the values whose JSON only
fastjson's writer gets right.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from rocketpy.client.api import ClientAPI, send_response_header
from rocketpy.client.producer import wire_properties
from rocketpy.client.send_frames import (
    _MIDDLE,
    _TAIL,
    _UNLIKE_FASTJSON,
    SendFields,
    SendFrames,
    _json_string,
    _send_frame,
    _written_alike,
)
from rocketpy.codecs import CodecError, RemotingCommand, SerializeType
from rocketpy.codecs.command import ONEWAY_FLAG
from rocketpy.codecs.headers import SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketpy.codecs.properties_string import properties_to_string
from rocketpy.javacompat.hashmap import hashmap_dict
from rocketpy.remoting.client_connection import encode_request

INT32 = st.integers(-(2**31), 2**31 - 1)
# every kind of character, the ones the stdlib's and fastjson's JSON writers disagree on among them
TEXT = st.text(st.characters(codec="utf-8"), max_size=12) | st.sampled_from(
    ["TopicTest", "%RETRY%group", "a\x1fb", "\x0b", "\x0c", "\x0e", "\x1a", "\x7f", "\xa0", "\u2029", "\u2028",
     "\x01\x02", 'q"\\'])


@st.composite
def sends(draw: st.DrawFn) -> tuple[SendFrames, int, SendFields, bytes]:
    frames = SendFrames(draw(TEXT), draw(TEXT), draw(st.integers(0, 1024)),
                        draw(st.sampled_from([SerializeType.JSON, SerializeType.ROCKETMQ])))
    props = draw(st.dictionaries(TEXT.filter(bool), TEXT.filter(bool), max_size=5))
    fields = SendFields(
        topic=draw(TEXT), queue_id=draw(INT32), sys_flag=draw(INT32),
        born_timestamp=draw(st.integers(-(2**63), 2**63 - 1)), flag=draw(INT32), properties=wire_properties(props),
        reconsume_times=draw(INT32), max_reconsume_times=draw(st.none() | INT32), batch=draw(st.booleans()),
        broker_name=draw(st.none() | TEXT))
    code = ClientAPI.send_code(batch=fields.batch, reply=draw(st.booleans()))
    return frames, code, fields, draw(st.binary(max_size=64))


def todays_request(frames: SendFrames, code: int, f: SendFields, body: bytes) -> RemotingCommand:
    """The request as the producer built it before SendFrames: the long header, then the short one."""
    v1 = SendMessageRequestHeader(
        producer_group=frames.group, topic=f.topic, default_topic=frames.default_topic,
        default_topic_queue_nums=frames.default_topic_queue_nums, queue_id=f.queue_id, sys_flag=f.sys_flag,
        born_timestamp=f.born_timestamp, flag=f.flag, reconsume_times=f.reconsume_times, unit_mode=False,
        batch=f.batch, bname=f.broker_name, properties=f.properties, max_reconsume_times=f.max_reconsume_times)
    return RemotingCommand.request(code, SendMessageRequestHeaderV2.from_v1(v1), body,
                                   serialize_type=frames.serialize_type)


@given(sends(), st.integers(0, 2**31 - 1), st.booleans())
def test_send_frame_is_the_typed_headers_frame(send: tuple[SendFrames, int, SendFields, bytes], opaque: int,
                                               oneway: bool) -> None:
    frames, code, fields, body = send
    prepared = frames.prepare(code, fields, body)
    frame = prepared.frame(opaque, oneway)
    assert frame == encode_request(todays_request(frames, code, fields, body), opaque, oneway)
    assert frame == encode_request(prepared.command(), opaque, oneway)
    # and it reads back as the request it stands for
    decoded = RemotingCommand.decode(frame)
    assert (decoded.code, decoded.opaque, decoded.is_oneway, decoded.body or b"") == (code, opaque, oneway, body)
    header = decoded.decode_header(SendMessageRequestHeaderV2)
    assert (header.topic, header.properties, header.broker_name) == (fields.topic, fields.properties,
                                                                     fields.broker_name)


def test_json_frame_layout() -> None:
    """One plain send, spelled out: extFields in java.util.HashMap order, then flag, language, opaque."""
    frames = SendFrames("pg", "TBW102", 4)
    fields = SendFields(topic="T", queue_id=1, sys_flag=0, born_timestamp=5, flag=0,
                        properties=wire_properties({"WAIT": "true", "UNIQ_KEY": "U"}), broker_name="broker-a")
    frame = frames.prepare(ClientAPI.send_code(), fields, b"body").frame(7)
    header = frame[8:-4]
    assert header == (b'{"code":310,"extFields":{"a":"pg","b":"T","c":"TBW102","d":"4","e":"1","f":"0","g":"5",'
                      b'"h":"0","i":"UNIQ_KEY\\u0001U\\u0002WAIT\\u0001true","j":"0","k":"false","m":"false",'
                      b'"n":"broker-a"},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON",'
                      b'"version":' + str(RemotingCommand(code=0).version).encode() + b"}")
    assert frame[-4:] == b"body"


def _outcome(make: Callable[[], bytes]) -> bytes | type[BaseException]:
    try:
        return make()
    except Exception as exc:
        return type(exc)


@pytest.mark.skipif(_send_frame is None, reason="the accelerated build (rocketpy._speedups) is not built")
@given(sends(), st.integers(0, 2**31 - 1), st.booleans(),
       st.none() | st.lists(TEXT | st.sampled_from(["\\u001a", "\\u0001", "\\", "\ud800", "\U0001f600"]),
                            max_size=4))
@example((SendFrames("g", "TBW102", 4), ClientAPI.send_code(),
          SendFields("T", 2**63, 0, 0, 0, "x"), b""), 1, False, None)  # beyond 64 bits: the reference's
def test_compiled_send_frame_is_the_reference(send: tuple[SendFrames, int, SendFields, bytes], opaque: int,
                                              oneway: bool, props: list[str] | None) -> None:
    """The compiled frame (_speedups.send_frame) is the Python path's, byte for byte, and what it leaves to
    the reference (values only fastjson writes right, lone surrogates, numbers beyond 64 bits) is the reference's
    to make or refuse."""
    frames, code, fields, body = send
    if props is not None:  # any text as the properties, literal backslash-u escapes among it
        fields.properties = "".join(props)
    prepared = frames.prepare(code, fields, body)
    flag = ONEWAY_FLAG if oneway else 0
    assert _outcome(lambda: prepared.frame(opaque, oneway)) == _outcome(lambda: prepared.frame_py(opaque, flag))


def test_compiled_send_frame_takes_a_plain_send() -> None:
    """An ordinary send's frame is the compiled one (not handed back to the reference)."""
    if _send_frame is None:
        pytest.skip("the accelerated build (rocketpy._speedups) is not built")
    frames = SendFrames("pg", "TBW102", 4)
    fields = SendFields(topic="T", queue_id=1, sys_flag=0, born_timestamp=5, flag=0,
                        properties=wire_properties({"WAIT": "true", "UNIQ_KEY": "U", "TAGS": "é"}),
                        max_reconsume_times=16, broker_name="broker-a")
    prepared = frames.prepare(ClientAPI.send_code(), fields, b"body")
    template = prepared._template
    assert template is not None
    made = _send_frame(template[1], 1, 0, 5, 0, fields.properties, 0, 16, False, 0, 7, _MIDDLE, _TAIL, b"body")
    assert made is not None and made == prepared.frame_py(7, 0)


NUMBERISH = st.none() | st.from_regex(r"\A-?[0-9]{1,21}\Z") | st.sampled_from(
    ["+1", " 1", "1 ", "²", "١٢", "0x10", "", "-", "2147483648", "-2147483649", "9223372036854775808"]) | TEXT


@given(st.dictionaries(st.sampled_from(["msgId", "queueId", "queueOffset", "transactionId", "MSG_REGION"]),
                       NUMBERISH))
def test_send_response_header_reads_as_the_typed_header(ext: dict[str, str]) -> None:
    """The direct read of a send's answer agrees with the typed header's decoding, errors included."""
    ext = {k: v for k, v in ext.items() if v is not None}
    try:
        expected: object = SendMessageResponseHeader.from_ext_fields(ext)
    except CodecError as exc:
        expected = type(exc)
    try:
        got: object = send_response_header(ext)
    except CodecError as exc:
        got = type(exc)
    assert got == expected


@given(st.dictionaries(TEXT, st.none() | TEXT, max_size=6))
def test_wire_properties_is_the_hashmap_ordered_string(props: dict[str, str]) -> None:
    assert wire_properties(props) == properties_to_string(hashmap_dict(props))


@given(st.lists(TEXT | st.sampled_from(["\\u001a", "\\", "\\u0001", "u00", "\x01\x1a"]), max_size=4))
@example(["\x7f"])
@example(["\x1a"])
@example(["a\x02\x0b"])
def test_written_alike_is_the_regexs_verdict(pieces: list[str]) -> None:
    """The cheap look before the regex changes no verdict, on JSON strings and on any text."""
    text = "".join(pieces)
    for candidate in (text, _json_string(text), _json_string(text.replace("\\", "\x02"))):
        assert _written_alike(candidate) == (_UNLIKE_FASTJSON.search(candidate) is None)
