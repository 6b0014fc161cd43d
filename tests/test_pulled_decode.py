"""A consumer's PULL body decoded in one pass: the compiled PulledDecoder gives exactly what its Python
reference (``record.pulled_messages_py``) gives, and ``decode_pulled`` exactly what the general path
(``decode_pulled_general``: decode every record, inflate the compressed bodies, keep the subscribed tags) gives."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketpy import accel
from rocketpy.client.api import decode_pulled, decode_pulled_general
from rocketpy.codecs import CodecError, record
from rocketpy.codecs.codes import MessageConst, MessageSysFlag
from rocketpy.codecs.message import (
    MessageExt,
    build_record,
    compress_body,
    decode_message,
    decode_messages,
    record_length,
)
from rocketpy.codecs.record import (
    _host_text,
    inflate_pulled,
    plain_messages,
    plain_messages_py,
    pulled_messages,
    pulled_messages_py,
)

_COMPRESSED = int(MessageSysFlag.COMPRESSED_FLAG)
_BORN_V6 = int(MessageSysFlag.BORNHOST_V6_FLAG)
_STORE_V6 = int(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
_int32 = st.integers(-(1 << 31), (1 << 31) - 1)
_int64 = st.integers(-(1 << 63), (1 << 63) - 1)
_TAGS = ["TagA", "TagB", "标签"]

# property names and values as producers set them, and the odd bytes a broker may hold
_piece = st.one_of(
    st.sampled_from([b"UNIQ_KEY", b"WAIT", b"TAGS", b"KEYS", b"true", b"TagA", b"TagB", "标签".encode(), b""]),
    st.binary(max_size=12),
    st.text(max_size=6).map(lambda t: t.encode("utf-8")),
)
_entry = st.one_of(
    st.tuples(_piece, _piece).map(lambda kv: kv[0] + b"\x01" + kv[1]),
    _piece,  # no separator: dropped
    st.tuples(_piece, _piece, _piece).map(lambda kv: kv[0] + b"\x01" + kv[1] + b"\x01" + kv[2]),
)
_properties = st.lists(_entry, max_size=7).map(b"\x02".join)


@st.composite
def records(draw: st.DrawFn) -> bytes:
    """One plain record: compressed (a real or a corrupt stream, maybe empty) or not, hosts v4 or v6."""
    sys_flag = draw(_int32) if draw(st.booleans()) else draw(st.sampled_from([0, _BORN_V6, _STORE_V6, _COMPRESSED]))
    body = draw(st.binary(max_size=64))
    if sys_flag & _COMPRESSED and draw(st.booleans()):
        body = compress_body(body)
    topic = draw(st.sampled_from([b"TopicTest", "主题".encode(), b"\xff\xfe"]) | st.binary(max_size=20))
    props = draw(_properties)
    born = draw(st.sampled_from([b"\x7f\x00\x00\x01", b"\x0a\x00\x00\x02"]) | st.binary(min_size=4, max_size=4))
    store = draw(st.sampled_from([b"\x7f\x00\x00\x01"]) | st.binary(min_size=4, max_size=4))
    if sys_flag & _BORN_V6:
        born = born * 4
    if sys_flag & _STORE_V6:
        store = store * 4
    return build_record(
        record_length(sys_flag, len(body), len(topic), len(props)),
        draw(_int32), draw(_int32), draw(_int32), draw(_int64), draw(_int64), sys_flag, draw(_int64),
        born, draw(st.sampled_from([10911, 54321]) | _int32), draw(_int64),
        store, draw(st.sampled_from([10911]) | _int32), draw(_int32), draw(_int64),
        body, topic, props,
    )  # fmt: skip


@st.composite
def pull_bodies(draw: st.DrawFn) -> bytes:
    """Plain records back to back, sometimes spoilt (a byte changed, cut short, junk after)."""
    raw = bytearray(b"".join(draw(st.lists(records(), max_size=5))))
    if raw and draw(st.integers(0, 4)) == 0:
        raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
    if raw and draw(st.integers(0, 4)) == 0:
        raw = raw[: draw(st.integers(0, len(raw)))]
    if draw(st.integers(0, 6)) == 0:
        raw += draw(st.binary(max_size=10))
    return bytes(raw)


_wanted = st.none() | st.sets(st.sampled_from(_TAGS + ["", "TagC"]), max_size=3)


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except CodecError as exc:
        return CodecError, str(exc)


def _agree(got: Callable[[], Any], expected: Callable[[], Any]) -> None:
    """Both give the same messages (in every field, the ones equality skips too), or the same CodecError."""
    g, e = _outcome(got), _outcome(expected)
    assert g == e
    if not isinstance(e, list):
        return
    for gm, em in zip(g, e, strict=True):
        assert type(gm) is type(em)
        assert gm._raw_properties == em._raw_properties
        assert list(gm.properties.items()) == list(em.properties.items())
        assert _outcome(gm.decompressed_body) == _outcome(em.decompressed_body)
        assert (gm._inflated is None) == (em._inflated is None)


def _compiled_decoder() -> Any:
    decoder = accel.compiled("PulledDecoder")
    if decoder is None:
        pytest.skip("the accelerated build is not there (or ROCKETPY_PURE is set)")
    return decoder


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(st.lists(st.tuples(pull_bodies(), _wanted, st.booleans()), min_size=1, max_size=3))
def test_compiled_decoder_is_the_reference(bodies: list[tuple[bytes, set[str] | None, bool]]) -> None:
    """Body after body through one decoder (its remembered texts carried over): what a consumer keeps, and all
    of a body's messages (decode_messages' one pass, stored or with their inflation cached)."""
    decoder = _compiled_decoder()(MessageExt, _host_text, inflate_pulled, MessageConst.PROPERTY_TAGS)
    for body, wanted, decompress in bodies:
        _agree(partial(decoder.messages, body, wanted), partial(pulled_messages_py, body, wanted))
        _agree(partial(decoder.records, body, decompress), partial(plain_messages_py, body, decompress))


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(pull_bodies(), st.none() | st.lists(st.sampled_from(_TAGS + ["TagC"]), max_size=3), st.booleans())
def test_decode_pulled_is_the_general_path(body: bytes, tags: list[str] | None, class_filter: bool) -> None:
    wanted = set(tags) if tags and not class_filter else None
    with mock.patch.object(record, "plain_messages", plain_messages_py):  # the general path, pure Python
        expected = _outcome(partial(decode_pulled_general, body, wanted))
    _agree(partial(decode_pulled, body, tags, class_filter), lambda: expected)


def _record_by_record(body: bytes, decompress: bool) -> list[MessageExt]:
    out, offset = [], 0
    while offset < len(body):
        out.append(decode_message(body, offset, decompress=decompress))
        offset += out[-1].store_size
    return out


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=200)
@given(pull_bodies(), st.booleans())
def test_decode_messages_is_record_by_record(body: bytes, decompress: bool) -> None:
    _agree(partial(decode_messages, body, decompress=decompress), partial(_record_by_record, body, decompress))


def test_the_one_pass_forms_are_used_when_built() -> None:
    _compiled_decoder()
    assert pulled_messages is not pulled_messages_py
    assert plain_messages is not plain_messages_py


def test_typical_body_decodes_to_what_was_stored() -> None:
    """The common case spelled out: the properties a Java producer sets, the tag filter, the shared texts."""
    props = b"KEYS\x011764201600\x02UNIQ_KEY\x017F0000010001\x02WAIT\x01true\x02TAGS\x01TagA"
    body = b"".join(
        build_record(record_length(0, 3, 9, len(props)), 0, 1, 0, i, 100 * i, 0, 5, b"\x7f\x00\x00\x01", 4321, 6,
                     b"\x7f\x00\x00\x01", 10911, 0, 0, b"abc", b"TopicTest", props)
        for i in range(3)
    )  # fmt: skip
    msgs = decode_pulled(body, ["TagA"])
    assert [m.queue_offset for m in msgs] == [0, 1, 2]
    first = msgs[0]
    assert first.topic == "TopicTest" and first.body == b"abc" and first.tags == "TagA"
    assert first.properties == {"KEYS": "1764201600", "UNIQ_KEY": "7F0000010001", "WAIT": "true", "TAGS": "TagA"}
    assert first.born_host == "127.0.0.1:4321" and first.store_host == "127.0.0.1:10911"
    assert first.properties_bytes() == props
    first.properties["TAGS"] = "TagB"  # each message has its own map
    assert msgs[1].tags == "TagA"
    assert decode_pulled(body, ["TagB"]) == []


def test_pulled_decoder_refuses_a_class_it_cannot_fill() -> None:
    decoder = _compiled_decoder()

    @dataclasses.dataclass(slots=True)
    class Other:
        topic: str = ""

    with pytest.raises(TypeError):
        decoder(Other, _host_text, inflate_pulled, MessageConst.PROPERTY_TAGS)
