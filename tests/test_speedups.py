"""The accelerated build (rocketpy._speedups) gives what its pure-Python twins give, for any input."""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketpy.accel import compiled
from rocketpy.codecs import CodecError, RemotingCommand, SerializeType
from rocketpy.codecs.codes import MessageSysFlag
from rocketpy.codecs.frame import _parse_rocketmq_header_checked, encode_rocketmq_header, parse_rocketmq_header_py
from rocketpy.codecs.message import build_record, record_length
from rocketpy.javacompat.lang import java_string_hash_py, java_string_hash_reference

c_parse = compiled("parse_rocketmq_header")
c_hash = compiled("java_string_hash")

if c_parse is None or c_hash is None:
    if os.environ.get("CI") and not os.environ.get("ROCKETPY_PURE"):
        pytest.fail("rocketpy._speedups was not built: the install lost the accelerated build", pytrace=False)
    pytest.skip("rocketpy._speedups is not built (or ROCKETPY_PURE is set)", allow_module_level=True)

_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40)
_int32 = st.integers(-(1 << 31), (1 << 31) - 1)


def _outcome(fn, data: bytes):  # type: ignore[no-untyped-def]
    try:
        return fn(data)
    except CodecError as exc:
        return ("CodecError", str(exc))


def _c(data: bytes):  # type: ignore[no-untyped-def]
    return c_parse(data, _parse_rocketmq_header_checked)


@given(
    st.integers(-(1 << 15), (1 << 15) - 1),
    st.integers(0, 255),
    st.integers(-(1 << 15), (1 << 15) - 1),
    _int32,
    _int32,
    st.none() | _text,
    st.none() | st.dictionaries(_text, _text, max_size=6),
)
def test_header_parse_matches_the_pure_parser(code, lang, version, opaque, flag, remark, ext) -> None:  # type: ignore[no-untyped-def]
    data = encode_rocketmq_header(code, lang, version, opaque, flag, remark, ext)
    assert _outcome(_c, data) == _outcome(parse_rocketmq_header_py, data)


@given(st.binary(max_size=80), st.data())
def test_header_parse_matches_on_mutated_and_random_bytes(junk: bytes, data: st.DataObject) -> None:
    base = bytearray(encode_rocketmq_header(310, 0, 409, 7, 0, "r", {"a": "b", "topic": "T"}))
    for _ in range(data.draw(st.integers(0, 4))):
        at = data.draw(st.integers(0, len(base) - 1))
        base[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(base)))
    for sample in (bytes(base), bytes(base[:cut]), junk, bytes(base) + junk):
        assert _outcome(_c, sample) == _outcome(parse_rocketmq_header_py, sample)


def test_bad_utf8_goes_to_the_checked_parser() -> None:
    data = bytearray(encode_rocketmq_header(1, 0, 0, 0, 0, None, {"k": "v"}))
    data[-1] = 0xFF
    assert _outcome(_c, bytes(data)) == _outcome(parse_rocketmq_header_py, bytes(data))
    assert _outcome(_c, bytes(data))[0] == "CodecError"
    assert struct.calcsize(">hBhii") == 13


@given(st.text(max_size=200))
def test_string_hash_matches_java(text: str) -> None:
    assert c_hash(text) == java_string_hash_reference(text) == java_string_hash_py(text)


def test_string_hash_known_values() -> None:
    assert c_hash("") == 0
    assert c_hash("TagA") == java_string_hash_reference("TagA")
    assert c_hash("\U0001d11e") == java_string_hash_reference("\U0001d11e")  # a surrogate pair in Java
    assert c_hash("x" * 10_000) == java_string_hash_reference("x" * 10_000)


c_write = compiled("write_record")
c_answer = compiled("send_answer")


@given(
    st.booleans(),
    st.booleans(),
    _int32,
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.binary(max_size=300),
    st.binary(max_size=127),
    st.binary(max_size=400),
    st.integers(0, 64),
)
def test_record_writer_matches_build_record(born6, store6, i32, i64, body, topic, props, pos) -> None:  # type: ignore[no-untyped-def]
    sys_flag = (int(MessageSysFlag.BORNHOST_V6_FLAG) if born6 else 0) | (
        int(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG) if store6 else 0
    )
    born, store = (b"\x01" * 16 if born6 else b"\x7f\x00\x00\x01"), (b"\x02" * 16 if store6 else b"\x0a\x00\x00\x02")
    size = record_length(sys_flag, len(body), len(topic), len(props))
    expected = build_record(
        size, i32, i32, -i32 - 1, i64, i64 // 3, sys_flag, i64, born, 65535, -i64 - 1, store, 0, 7, i64 // 5, body,
        topic, props,
    )  # fmt: skip
    buf = bytearray(b"\xee" * (pos + size + 10))
    wrote = c_write(
        buf, pos, pos + size, i32, i32, -i32 - 1, i64, i64 // 3, sys_flag, i64, born, 65535, -i64 - 1, store, 0, 7,
        i64 // 5, body, topic, props,
    )  # fmt: skip
    assert wrote == size
    assert bytes(buf[pos : pos + size]) == expected
    assert buf[:pos] == b"\xee" * pos and buf[pos + size :] == b"\xee" * 10
    # one byte short of room: nothing written
    assert (
        c_write(buf, pos, pos + size - 1, 0, 0, 0, 0, 0, sys_flag, 0, born, 0, 0, store, 0, 0, 0, body, topic, props)
        == -1
    )


@given(_int32, st.integers(0, (1 << 63) - 1), st.integers(0, (1 << 31) - 1), st.integers(0, (1 << 63) - 1))
def test_send_answer_is_the_encoded_response(opaque: int, phys: int, queue_id: int, queue_offset: int) -> None:
    """The compiled SEND answer is the bytes RemotingCommand encodes for the same response (the general path's):
    ROCKETMQ header, msgId, queueId, queueOffset, then the broker's added fields."""
    tail = b"\x00\x02ab\x00\x00\x00\x01c"
    msg_id = f"7F00000100002A9F{phys:016X}"
    expected = RemotingCommand(
        code=0, opaque=opaque, flag=1, version=409, serialize_type=SerializeType.ROCKETMQ,
        ext_fields={"msgId": msg_id, "queueId": str(queue_id), "queueOffset": str(queue_offset), "ab": "c"},
    ).encode()  # fmt: skip
    got = c_answer(409, opaque, b"7F00000100002A9F", phys, queue_id, queue_offset, tail)
    assert got == expected
    cmd = RemotingCommand.decode(got)
    assert cmd.opaque == opaque and cmd.is_response and cmd.ext_fields is not None
    assert cmd.ext_fields["msgId"] == msg_id and cmd.ext_fields["ab"] == "c"


# -- the Spark sources' CommitLog walk ------------------------------------------------------------

_ranges = st.lists(st.tuples(st.integers(0, 600), st.integers(0, 600)), max_size=12)


@given(st.binary(max_size=600), _ranges)
def test_body_crcs_match_zlib(buf: bytes, pairs: list[tuple[int, int]]) -> None:
    import zlib

    import numpy as np

    from rocketpy.spark._records import _body_crcs

    inside = [(s, min(n, len(buf) - s)) for s, n in pairs if s <= len(buf)]
    starts = np.array([s for s, _ in inside], np.int64)
    lengths = np.array([n for _, n in inside], np.int64)
    assert _body_crcs(buf, starts, lengths).tolist() == [zlib.crc32(buf[s : s + n]) for s, n in inside]


@given(st.binary(max_size=600), _ranges)
def test_binary_ranges_match_the_pure_slices(buf: bytes, pairs: list[tuple[int, int]]) -> None:
    import numpy as np

    from rocketpy.spark._arrays import binary_ranges, binary_ranges_pure

    inside = [(s, min(n, len(buf) - s)) for s, n in pairs if s <= len(buf)]
    starts = np.array([s for s, _ in inside], np.int64)
    lengths = np.array([n for _, n in inside], np.int64)
    assert binary_ranges(buf, starts, lengths).equals(binary_ranges_pure(buf, starts, lengths))


def test_compiled_ranges_outside_the_buffer_are_refused() -> None:
    import numpy as np

    out = np.zeros(4, np.int64)
    for fn, dest in ((compiled("crc32_ranges"), out), (compiled("gather_ranges"), np.zeros(5, np.uint8))):
        with pytest.raises(ValueError, match="outside the buffer"):
            fn(b"abcd", np.array([2], np.int64), np.array([3], np.int64), dest)
        with pytest.raises(ValueError, match="outside the buffer"):
            fn(b"abcd", np.array([-1], np.int64), np.array([1], np.int64), dest)
        with pytest.raises(ValueError, match="outside the buffer"):  # start + length overflows int64
            fn(b"abcd", np.array([2], np.int64), np.array([(1 << 63) - 1], np.int64), dest)


_record_sizes = st.lists(st.integers(-5, 200), max_size=20)


@given(
    _record_sizes, st.lists(st.booleans(), max_size=20), st.integers(0, 40), st.integers(1, 25), st.integers(1, 4000)
)
def test_record_positions_match_the_pure_walk(
    sizes: list[int], bad_magic: list[bool], start: int, max_rows: int, max_bytes: int
) -> None:
    """Records of any size (too small, too large for the buffer), some with a wrong magic: the
    compiled walk stops where the pure one does and names the same positions."""
    from rocketpy.codecs.message import MESSAGE_MAGIC_CODE
    from rocketpy.spark._records import _MIN_RECORD, _next_positions, _next_positions_pure

    buf = bytearray(b"\x01" * start)
    for i, size in enumerate(sizes):
        magic = MESSAGE_MAGIC_CODE ^ 1 if i < len(bad_magic) and bad_magic[i] else MESSAGE_MAGIC_CODE
        size = size if size < 0 else _MIN_RECORD + size
        buf += struct.pack(">ii", size, magic) + b"\x00" * max(0, size - 8)
    buf = bytes(buf[: len(buf) - (len(sizes) % 3)])  # sometimes the last record is cut short
    for stop in (len(buf), len(buf) // 2):
        want, want_after = _next_positions_pure(buf, start, stop, max_rows, max_bytes)
        got, after = _next_positions(buf, start, stop, max_rows, max_bytes)
        assert got.tolist() == want.tolist() and after == want_after
