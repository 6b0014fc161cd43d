"""RemotingCommand frames: round trips, both header encodings, framing, bad input."""

from __future__ import annotations

import struct

import pytest
from golden import PCAPS, frames
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketpy.codecs import CodecError, FrameSplitter, FrameTooLarge, LanguageCode, RemotingCommand, SerializeType
from rocketpy.codecs.frame import (
    FRAME_PREFIX,
    FRAME_PREFIX_UNIT,
    ROCKETMQ_FIXED_UNIT,
    ROCKETMQ_HEADER,
    ROCKETMQ_HEADER_MIN,
    decode_rocketmq_header,
    encode_rocketmq_header,
    parse_rocketmq_header,
    parse_rocketmq_header_py,
)

int16 = st.integers(-(1 << 15), (1 << 15) - 1)
int32 = st.integers(-(1 << 31), (1 << 31) - 1)
text = st.text(max_size=40)
nonempty = st.text(min_size=1, max_size=20)

commands = st.builds(
    RemotingCommand,
    code=int16,
    language=st.sampled_from(list(LanguageCode)),
    version=int16,
    opaque=int32,
    flag=st.integers(0, 3),
    remark=st.none() | st.text(min_size=1, max_size=40),
    ext_fields=st.none() | st.dictionaries(nonempty, text, min_size=1, max_size=6),
    body=st.none() | st.binary(min_size=1, max_size=200),
    serialize_type=st.sampled_from(list(SerializeType)),
)


@given(commands)
def test_encode_decode_identity(cmd: RemotingCommand) -> None:
    raw = cmd.encode()
    again = RemotingCommand.decode(raw)
    assert again == cmd
    assert again.encode() == raw


@given(st.builds(RemotingCommand, code=int16, ext_fields=st.just({}), serialize_type=st.just(SerializeType.JSON)))
def test_json_keeps_empty_ext_fields_apart_from_none(cmd: RemotingCommand) -> None:
    assert b'"extFields":{}' in cmd.encode()
    assert RemotingCommand.decode(cmd.encode()).ext_fields == {}


@given(commands.filter(lambda c: c.serialize_type == SerializeType.ROCKETMQ))
def test_fast_binary_header_agrees_with_construct_definition(cmd: RemotingCommand) -> None:
    header = cmd.encode_header()
    parsed = ROCKETMQ_HEADER.parse(header)
    fast = decode_rocketmq_header(header)
    assert fast["code"] == parsed.code and fast["opaque"] == parsed.opaque and fast["flag"] == parsed.flag
    assert fast["remark"] == parsed.remark
    assert (fast["ext_fields"] or {}) == {e.key: e.value for e in parsed.ext_fields}
    built = ROCKETMQ_HEADER.build(
        dict(
            parsed,
            ext_fields=[{"key": k, "value": v} for k, v in (cmd.ext_fields or {}).items()],
        )
    )
    assert built == header
    # the struct forms the hot paths and the sniffer's resync read: the same fields, the same bytes
    prefix = FRAME_PREFIX.parse(cmd.encode()[:8])
    assert FRAME_PREFIX_UNIT.unpack(cmd.encode()[:8]) == (prefix.length, prefix.header_info)
    assert ROCKETMQ_FIXED_UNIT.unpack_from(header) == (
        parsed.code, parsed.language, parsed.version, parsed.opaque, parsed.flag
    )


def _construct_outcome(data: bytes) -> object:
    """What the construct definition says of ``data``: the fields, or that it is refused."""
    try:
        h = ROCKETMQ_HEADER.parse(data)
    except Exception:  # construct's errors, and a remark that is not UTF-8
        return "refused"
    ext = {e.key: e.value for e in h.ext_fields} or None
    return (h.code, h.language, h.version, h.opaque, h.flag, h.remark, ext)


def _fast_outcome(parse: object, data: bytes) -> object:
    try:
        return parse(data)  # type: ignore[operator]
    except CodecError:
        return "refused"


@settings(max_examples=300)
@given(
    st.builds(encode_rocketmq_header, int16, st.integers(0, 255), int16, int32, int32,
              st.none() | text, st.none() | st.dictionaries(text, text, max_size=6)),
    st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=4),
    st.one_of(st.none(), st.integers(0, 1 << 16)),
    st.binary(max_size=6),
)
def test_fast_header_parsers_agree_with_construct(header: bytes, flips: list[tuple[int, int]], cut: int | None,
                                                   tail: bytes) -> None:
    """Both fast parsers (pure and, when built, compiled) equal the construct definition on valid
    headers and on mutated, truncated and overlong ones."""
    samples = [header]
    mutated = bytearray(header)
    for at, value in flips:
        mutated[at % len(mutated)] = value
    samples.append(bytes(mutated))
    if cut is not None:
        samples.append(bytes(mutated[: cut % (len(mutated) + 1)]))
    samples.append(header + tail)
    for data in samples:
        reference = _construct_outcome(data)
        assert _fast_outcome(parse_rocketmq_header_py, data) == reference
        assert _fast_outcome(parse_rocketmq_header, data) == reference


def test_construct_header_refuses_what_java_refuses() -> None:
    good = encode_rocketmq_header(310, 0, 409, 7, 0, "r", {"a": "b"})
    assert _construct_outcome(good) == (310, 0, 409, 7, 0, "r", {"a": "b"})
    for bad, message in (
        (good + b"\0", "extFields length does not match the header length"),  # trailing bytes
        (good[:-1], "extFields length does not match the header length"),
        (good[:-1] + b"\xff", "extFields entry runs past the header or is not UTF-8"),
        (good[:17] + b"\xff" + good[18:], "not UTF-8"),
        (good[:13] + b"\x00\x00\x10\x00" + good[17:], "remark length runs past the header"),
        (good[:9], "ROCKETMQ header is truncated"),
    ):
        assert _construct_outcome(bad) == "refused"
        with pytest.raises(CodecError, match=message):
            parse_rocketmq_header(bad)


def test_smallest_binary_header() -> None:
    empty = ROCKETMQ_HEADER.build(
        {"code": 0, "language": 0, "version": 0, "opaque": 0, "flag": 0, "remark": None, "ext_fields": []}
    )
    assert len(empty) == ROCKETMQ_HEADER_MIN
    assert decode_rocketmq_header(empty)["ext_fields"] is None
    with pytest.raises(CodecError):
        decode_rocketmq_header(empty[:-1])


def test_java_json_header_layout() -> None:
    cmd = RemotingCommand(code=105, opaque=2, ext_fields={"topic": "T"})
    assert cmd.encode()[8:] == (
        b'{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":2,'
        b'"serializeTypeCurrentRPC":"JSON","version":409}'
    )
    resp = cmd.response(17, remark="No topic\nroute")
    assert resp.is_response and resp.opaque == 2 and resp.request_code == 105
    assert b'"remark":"No topic\\nroute"' in resp.encode()


def test_flags() -> None:
    assert RemotingCommand(code=1, flag=1).is_response
    assert RemotingCommand(code=1, flag=2).is_oneway
    assert not RemotingCommand(code=1).is_response


@given(st.lists(commands, min_size=1, max_size=5), st.data())
def test_splitter_any_chunking(cmds: list[RemotingCommand], data: st.DataObject) -> None:
    stream = b"".join(c.encode() for c in cmds)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    splitter = FrameSplitter()
    out = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        splitter.feed(stream[prev:cut])
        prev = cut
        out.extend(splitter)
    assert [RemotingCommand.decode(f) for f in out] == cmds
    assert splitter.buffered == 0


class _Marked(bytes):
    """A bytes subclass, as the server's LaneFrame."""


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=4, max_size=6000), min_size=1, max_size=8), st.data())
def test_splitter_makes_frames_of_the_kind_asked_small_and_large(bodies: list[bytes], data: st.DataObject) -> None:
    """Frames come out as the kind asked for with their exact bytes, whether copied out as a slice
    (small) or through a view (large); the buffer stays usable after either (no view left on it)."""
    frames = [struct.pack(">i", len(b)) + b for b in bodies]
    stream = b"".join(frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    splitter = FrameSplitter()
    out: list[bytes] = []
    prev = 0
    for cut in [*cuts, len(stream)]:
        splitter.feed(stream[prev:cut])
        prev = cut
        while (frame := splitter.next_frame(_Marked)) is not None:
            out.append(frame)
    assert out == frames and all(type(f) is _Marked for f in out)
    assert splitter.buffered == 0
    splitter.feed(frames[0])
    assert splitter.next_frame() == frames[0]


def test_absurd_length_rejected_before_allocation() -> None:
    splitter = FrameSplitter(max_frame=1024)
    splitter.feed(struct.pack(">i", 0x7FFFFFF0) + b"\x00\x00\x00\x10")
    with pytest.raises(FrameTooLarge):
        list(splitter)
    with pytest.raises(FrameTooLarge):
        RemotingCommand.decode(struct.pack(">ii", 20 * 1024 * 1024, 0) + b"x" * 8)
    splitter = FrameSplitter()
    splitter.feed(struct.pack(">i", -5))
    with pytest.raises(CodecError):
        list(splitter)


@given(st.integers(-(2**31), 2**31 - 1), st.integers(0, 40), st.integers(8, 64))
def test_frame_ready_says_whether_next_frame_gives_or_refuses(length: int, more: int, max_frame: int) -> None:
    # a server keeps the frames beyond its batch and takes them when frame_ready says one waits: a length
    # next_frame refuses must read as ready, or the server waits for bytes it will refuse (and, at EOF,
    # reports "closed mid-frame" instead of the bad frame)
    splitter = FrameSplitter(max_frame=max_frame)
    splitter.feed(struct.pack(">i", length) + b"\x00" * more)
    ready = splitter.frame_ready
    try:
        frame = splitter.next_frame()
    except CodecError:
        assert ready
    else:
        assert ready == (frame is not None)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x00\x00\x00\x04\x00\x00\x00\x00",  # JSON header of length 0
        struct.pack(">ii", 6, 10) + b"{}",  # header longer than frame
        struct.pack(">ii", 6, 2) + b"{}",  # JSON without code
        struct.pack(">ii", 7, 3) + b"{x]",  # broken JSON
        struct.pack(">ii", 6, (7 << 24) | 2) + b"{}",  # unknown serialize type
        struct.pack(">ii", 9, (1 << 24) | 5) + b"\x00" * 5,  # truncated binary header
        struct.pack(">ii", 14, 10) + b'{"code":"x"}',
    ],
)
def test_bad_frames_raise_codec_error(raw: bytes) -> None:
    with pytest.raises(CodecError):
        RemotingCommand.decode(raw)


def _json_frame(header: str) -> bytes:
    h = header.encode()
    return struct.pack(">ii", 4 + len(h), len(h)) + h


@pytest.mark.parametrize(
    "header",
    [
        '{"code":"\u00b2"}',  # isdigit() says yes, int() says no (found by fuzzing)
        '{"code":"' + "9" * 5000 + '"}',  # past int()'s 4300-digit limit
        '{"code":10,"opaque":1099511627776}',  # not a Java int: fastjson refuses it
        '{"code":10,"flag":"-2147483649"}',
    ],
)
def test_json_header_ints_must_be_java_ints(header: str) -> None:
    with pytest.raises(CodecError, match="JSON header field"):
        RemotingCommand.decode(_json_frame(header))


def test_json_header_ints_given_as_strings_parse_like_java() -> None:
    cmd = RemotingCommand.decode(_json_frame('{"code":"+10","opaque":"-0007","flag":"2147483647"}'))
    assert (cmd.code, cmd.opaque, cmd.flag) == (10, -7, 2147483647)


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_random_bytes_only_raise_codec_error(raw: bytes) -> None:
    try:
        RemotingCommand.decode(raw)
    except CodecError:
        pass


GOLDEN_FRAMES = [f.raw for p in PCAPS[:4] + PCAPS[9:11] for f in frames(p)][:400]


@settings(max_examples=400)
@given(st.sampled_from(GOLDEN_FRAMES), st.data())
def test_mutated_golden_frames_only_raise_codec_error(raw: bytes, data: st.DataObject) -> None:
    buf = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        del buf[data.draw(st.integers(0, len(buf))) :]
    try:
        cmd = RemotingCommand.decode(bytes(buf))
        cmd.encode()
    except CodecError:
        pass


def test_rocketmq_header_round_trip_keeps_ext_order() -> None:
    header = encode_rocketmq_header(310, 0, 409, 7, 0, None, {"b": "1", "a": "2"})
    assert list(decode_rocketmq_header(header)["ext_fields"]) == ["b", "a"]


@given(st.text(max_size=30), st.dictionaries(st.text(max_size=8), st.text(max_size=20), max_size=4))
def test_json_header_fast_path_writes_what_fastjson_writes(remark: str, ext: dict[str, str]) -> None:
    from rocketpy.codecs import fastjson

    cmd = RemotingCommand(code=10, remark=remark, ext_fields=ext)
    doc = {"code": 10, "extFields": ext, "flag": 0, "language": "JAVA", "opaque": 0, "remark": remark,
           "serializeTypeCurrentRPC": "JSON", "version": 409}
    assert cmd.encode_header() == fastjson.dump_bytes(doc)


def test_added_ext_fields_share_the_java_hashmap_with_header_fields() -> None:
    from rocketpy.codecs.headers import SendMessageResponseHeader

    req = RemotingCommand(code=310, opaque=6)
    header = SendMessageResponseHeader(msg_id="7F00000100002A9F0000000000000000", queue_id=3, queue_offset=0)
    extra = {"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
    resp = req.response(0, header, ext_fields=extra)
    # the order the Java broker's SEND_MESSAGE_V2 answers carry in the golden captures
    assert list(resp.ext_fields) == ["queueId", "TRACE_ON", "MSG_REGION", "msgId", "queueOffset"]
    binary = RemotingCommand(code=310, opaque=6, serialize_type=SerializeType.ROCKETMQ)
    resp = binary.response(0, header, ext_fields=extra)
    assert list(resp.ext_fields)[:3] == ["msgId", "queueId", "queueOffset"]
    assert set(list(resp.ext_fields)[3:]) == {"TRACE_ON", "MSG_REGION"}
    plain = RemotingCommand.request(105, None, ext_fields={"topic": "T"})
    assert plain.ext_fields == {"topic": "T"}


def test_hostile_names_and_peer_addresses_do_not_pile_up_in_the_codec_caches() -> None:
    """Header names and peer addresses are cached because a few recur; what a hostile peer or thousands
    of short connections bring must not stay (the fuzzer's broker kept 4,096 of each: 10 MB here)."""
    import tracemalloc

    from rocketpy.codecs.hosts import HOST_CACHE_SIZE, host_bytes, parse_host

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(5000):
            name = f"{i}:" + "k" * 1000
            assert parse_rocketmq_header(encode_rocketmq_header(310, 0, 409, i, 0, None, {name: "v"}))[6] == {name: "v"}
            ip = bytes((10, 99, i >> 8 & 255, i & 255))
            assert host_bytes(".".join(map(str, ip)) + f":{1024 + i}") == (ip, 1024 + i)
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 512 * 1024
    assert host_bytes.cache_info().currsize <= HOST_CACHE_SIZE
    assert parse_host.cache_info().currsize <= HOST_CACHE_SIZE
