"""Message records, properties, batches and ids against the Java broker's own bytes."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections import Counter
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketpy.codecs.codes import CompressionType, MessageSysFlag
from rocketpy.codecs.errors import CodecError
from rocketpy.codecs.message import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_RECORD,
    Message,
    MessageExt,
    UniqIdGenerator,
    body_crc,
    compress_body,
    create_offset_msg_id,
    decode_batch,
    decode_message,
    decode_messages,
    decode_offset_msg_id,
    decompress_body,
    encode_batch,
    encode_message,
    format_host,
    parse_host,
    properties_to_string,
    record_length,
    string_to_properties,
    tags_hash_code,
    uniq_id_ip,
    uniq_id_pid,
    uniq_id_time,
)
from rocketpy.codecs.store_records import BlankRecord, iter_commitlog
from rocketpy.codecs.uniq_id import _uniq_id_text
from rocketpy.javacompat.lang import java_string_hash

GOLDEN = Path(__file__).parent.parent / "protocol" / "golden"
STORE = GOLDEN / "store-dump"
CRASHED = GOLDEN / "store-dump-crashed"
CAPTURES = GOLDEN / "captures"


# ---------------------------------------------------------------------------
# Golden data helpers
# ---------------------------------------------------------------------------


@cache
def manifest(store: Path = STORE) -> dict[str, Any]:
    return json.loads((store / "manifest.json").read_text())


@cache
def commitlog(store: Path = STORE) -> bytes:
    return (store / "commitlog" / "00000000000000000000").read_bytes()


@cache
def golden_records(store: Path = STORE) -> tuple[MessageExt, ...]:
    """Every record of the CommitLog, decoded back to back up to commitlogMaxOffset."""
    end = manifest(store)["store"]["commitlogMaxOffset"]
    return tuple(decode_messages(memoryview(commitlog(store))[:end], check_crc=True))


def record_at(offset: int, store: Path = STORE) -> MessageExt:
    return decode_message(commitlog(store), offset)


def manifest_messages() -> list[dict[str, Any]]:
    return [m for msgs in manifest()["messagesByTopic"].values() for m in msgs]


def frames_with(pcap: bytes, marker: bytes) -> list[bytes]:
    """Bodies of the remoting frames whose JSON header contains ``marker``.

    Good enough for these captures: every such frame sits in one loopback segment.
    """
    bodies = []
    pos = 0
    while (i := pcap.find(marker, pos)) >= 0:
        pos = i + 1
        header_start = pcap.rfind(b'{"code":', 0, i + 8)  # the marker may itself start the header
        frame_start = header_start - 8
        total, header_len = struct.unpack_from(">ii", pcap, frame_start)
        header_len &= 0xFFFFFF
        bodies.append(pcap[frame_start + 8 + header_len : frame_start + 4 + total])
    return bodies


def expected_body(m: dict[str, Any]) -> bytes:
    if m["bodyEncoding"] == "base64":
        return base64.b64decode(m["body"])
    assert m["bodyEncoding"] == "utf8"
    return m["body"].encode("utf-8")


# ---------------------------------------------------------------------------
# Golden CommitLog
# ---------------------------------------------------------------------------


def test_golden_record_count_and_topics() -> None:
    store = manifest()["store"]
    records = golden_records()
    assert len(records) == store["records"]
    assert dict(Counter(m.topic for m in records)) == store["recordsPerTopic"]
    # Back to back, each record says where it is.
    offset = 0
    for m in records:
        assert m.commit_log_offset == offset
        offset += m.store_size
    assert offset == store["commitlogMaxOffset"]


def test_golden_records_reencode_identically() -> None:
    buf = commitlog()
    for m in golden_records():
        assert encode_message(m) == buf[m.commit_log_offset : m.commit_log_offset + m.store_size]


def test_golden_records_via_construct_struct() -> None:
    # The declarative definition (not only the compiled one) reads and rebuilds the bytes.
    buf = commitlog()
    for m in golden_records()[:5]:
        raw = buf[m.commit_log_offset : m.commit_log_offset + m.store_size]
        c = MESSAGE_RECORD.parse(raw)
        assert c.total_size == m.store_size
        assert MESSAGE_RECORD.build(c) == raw
        assert record_length(c.sys_flag, len(c.body), len(c.topic), len(c.properties)) == m.store_size


def test_golden_body_crc() -> None:
    assert manifest()["store"]["recordsWithBadBodyCrc"] == 0
    for m in golden_records():
        assert body_crc(m.body) == m.body_crc


def test_golden_manifest_messages_present() -> None:
    records = golden_records()
    by_uniq: dict[str, list[MessageExt]] = {}
    for r in records:
        if r.uniq_key:
            by_uniq.setdefault(r.uniq_key, []).append(r)
    checked = 0
    for m in manifest_messages():
        if not m["mustBePresent"]:
            # The ACL-refused send never reached the store.
            assert not any(r.decompressed_body() == expected_body(m) for r in records)
            continue
        found = by_uniq[m["msgId"]]
        assert {r.commit_log_offset for r in found} == {s["physicalOffset"] for s in m["storedRecords"]}
        for stored in m["storedRecords"]:
            r = record_at(stored["physicalOffset"])
            assert r.topic == stored["topic"]
            assert r.queue_id == stored["queueId"]
            assert r.queue_offset == stored["queueOffset"]
            assert r.reconsume_times == stored["reconsumeTimes"]
            assert r.msg_id == stored["offsetMsgId"]
            assert r.offset_msg_id == stored["offsetMsgId"]
            assert r.client_msg_id == m["msgId"]
            assert r.properties.get("REAL_TOPIC") == stored["realTopic"]
            assert r.tags == m["tags"]
            assert r.keys_string == m["keys"]
            assert r.keys == (m["keys"].split(" ") if m["keys"] else [])
            for name, value in m["userProperties"].items():
                assert r.properties[name] == value
            assert r.decompressed_body() == expected_body(m)
            assert len(r.decompressed_body()) == m["bodyLength"]
        first = record_at(m["storedRecords"][0]["physicalOffset"])
        assert first.delay_time_level == m["delayLevel"]
        if m["offsetMsgId"] is not None:
            assert first.msg_id == m["offsetMsgId"]
        checked += 1
    assert checked >= manifest()["messagesThatMustBePresent"]


def test_golden_compressed_record() -> None:
    compressed = [r for r in golden_records() if r.is_compressed]
    assert len(compressed) == 1
    r = compressed[0]
    assert r.compression_type == CompressionType.ZLIB
    assert r.sys_flag & MessageSysFlag.COMPRESSION_TYPE_COMPARATOR == MessageSysFlag.COMPRESSION_ZLIB_TYPE
    plain = r.decompressed_body()
    assert len(plain) == int(r.properties["size"]) > len(r.body)
    # Python's zlib at the producer's level 5 makes the very bytes Java's Deflater made.
    assert compress_body(plain) == r.body
    raw = decode_message(commitlog(), r.commit_log_offset, decompress=False)
    assert raw.body == r.body
    assert raw.decompressed_body() == plain


def test_golden_transaction_and_system_flags() -> None:
    tx = [r for r in golden_records() if r.topic == "Transaction_T_golden"]
    assert tx and all(r.transaction_type == MessageSysFlag.TRANSACTION_COMMIT_TYPE for r in tx)


def test_golden_pull_bodies_are_commitlog_bytes() -> None:
    """PULL responses carry records verbatim: decode_messages reads them, bytes match the store."""
    buf = commitlog()
    total = 0
    for name in ("01-ProducerSync", "02-ProducerAsyncOneway", "03-Batch", "05-PushRetry", "07-LitePull"):
        for body in frames_with((CAPTURES / f"{name}.pcap").read_bytes(), b'"nextBeginOffset"'):
            if not body:
                continue
            for m in decode_messages(body, check_crc=True):
                assert encode_message(m) == buf[m.commit_log_offset : m.commit_log_offset + m.store_size]
                total += 1
    assert total >= 50


def test_golden_batch_body() -> None:
    """The SEND_BATCH_MESSAGE body of 03-Batch decodes to the produced messages and re-encodes exactly."""
    cap = json.loads((CAPTURES / "03-Batch.json").read_text())
    (body,) = frames_with((CAPTURES / "03-Batch.pcap").read_bytes(), b'{"code":320,')
    msgs = decode_batch(body, topic="Batch_T_golden")
    assert encode_batch(msgs) == body
    produced = cap["produced"]
    assert len(msgs) == len(produced) == 10
    for msg, p in zip(msgs, produced, strict=True):
        assert msg.topic == "Batch_T_golden"
        assert msg.flag == p["flag"]
        assert msg.tags == p["tags"]
        assert msg.keys_string == p["keys"]
        assert msg.uniq_key == p["uniqKey"]
        assert msg.body == expected_body(p)
        for name, value in p["userProperties"].items():
            assert msg.properties[name] == value
    # The broker stores each with the batch properties appended: WAIT appears twice.
    stored = [r for r in golden_records() if r.topic == "Batch_T_golden"]
    assert all(r._raw_properties.count(b"WAIT\x01") == 2 for r in stored if r._raw_properties)


def test_golden_uniq_ids() -> None:
    # Store records: the id's time is the producer's clock when it made the id (born ~ that).
    for r in golden_records():
        if r.uniq_key:
            t = uniq_id_time(r.uniq_key, now_ms=r.store_timestamp + 1000, tz=UTC)
            assert abs(t - r.born_timestamp) <= 1000
            assert uniq_id_ip(r.uniq_key) == "fd00:0000:0000:0000:0000:0000:0000:0002"
    # The brief's example: its time is the record's born timestamp exactly.
    first = golden_records()[0]
    assert first.uniq_key == "FD00000000000000000000000000000273F05FFD2B276BC71FE40000"
    assert uniq_id_time(first.uniq_key, now_ms=first.store_timestamp, tz=UTC) == first.born_timestamp
    assert uniq_id_pid(first.uniq_key) == 0x73F0


def test_golden_uniq_ids_crash_producer() -> None:
    attempts = manifest(CRASHED)["producerAttempts"]
    for a in attempts:
        t = uniq_id_time(a["msgId"], now_ms=a["doneAtMillis"], tz=UTC)
        assert a["sentAtMillis"] <= t <= a["doneAtMillis"]
    # A generator with the same ip, pid, hash and clock makes the same ids.
    sample = attempts[5]["msgId"]
    pid = int(sample[32:36], 16)
    loader_hash = int(sample[36:44], 16)
    for a in attempts[1:]:
        t = uniq_id_time(a["msgId"], now_ms=a["doneAtMillis"], tz=UTC)
        gen = UniqIdGenerator("fd00::2", pid, loader_hash, clock=lambda t=t: t, tz=UTC, counter=a["index"])
        assert gen.next_id() == a["msgId"]


def test_golden_tags_hash() -> None:
    # tagsCode in the ConsumeQueue of ProducerSync queue 3: first entry is TagA's hash.
    cq = (STORE / "consumequeue" / "ProducerSync_T_golden" / "3" / "00000000000000000000").read_bytes()
    offset, size, tags_code = struct.unpack_from(">qiq", cq, 0)
    r = record_at(offset)
    assert r.tags == "TagA"
    assert tags_code == tags_hash_code("TagA") == java_string_hash("TagA")


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("a\x01b", {"a": "b"}),
        ("a\x01b\x02c\x01d", {"a": "b", "c": "d"}),
        ("a\x01b\x02", {"a": "b"}),  # trailing separator
        ("\x02a\x01b", {"a": "b"}),  # leading separator
        ("a\x01\x02c\x01d", {"c": "d"}),  # empty value dropped
        ("\x01b\x02c\x01d", {"c": "d"}),  # empty name dropped
        ("ab\x02c\x01d", {"c": "d"}),  # no name/value separator
        ("a\x01b\x01c", {"a": "b\x01c"}),  # split at the first \x01
        ("a\x01b\x02a\x01c", {"a": "c"}),  # last value wins
        ("a\x01", {}),
        ("\x02\x02", {}),
    ],
)
def test_string_to_properties_edges(text: str, expected: dict[str, str]) -> None:
    assert string_to_properties(text) == expected


def test_string_to_properties_duplicate_keeps_first_position() -> None:
    assert list(string_to_properties("a\x01b\x02c\x01d\x02a\x01e")) == ["a", "c"]


def test_properties_to_string() -> None:
    assert properties_to_string({}) == ""
    assert properties_to_string(None) == ""
    assert properties_to_string({"a": "b"}) == "a\x01b"
    assert properties_to_string({"a": "b", "c": "d"}) == "a\x01b\x02c\x01d"  # no trailing separator
    assert properties_to_string({"a": None, "c": "d"}) == "c\x01d"  # null values skipped


def test_properties_accessors() -> None:
    m = Message("T", b"", properties={"KEYS": " k1  k2 ", "TAGS": "t", "DELAY": "3", "WAIT": "FALSE"})
    assert m.keys == ["k1", "k2"]
    assert m.tags == "t"
    assert m.delay_time_level == 3
    assert m.wait_store_msg_ok is False
    assert Message().wait_store_msg_ok is True
    assert Message().delay_time_level == 0
    assert Message().keys == []
    assert Message(properties={"DELAY": "x"}).properties["DELAY"] == "x"
    assert Message(properties={"DELAY": "0" * 5000 + "2"}).delay_time_level == 2  # Integer.parseInt
    for bad in ("x", "9" * 5000, "\u00b2", "2147483648"):  # 5000 digits: int()'s own limit, found by fuzzing
        with pytest.raises(CodecError):
            _ = Message(properties={"DELAY": bad}).delay_time_level


def test_changed_properties_are_reencoded() -> None:
    r = golden_records()[0]
    m = decode_message(encode_message(r))
    m.properties["extra"] = "1"
    again = decode_message(encode_message(m))
    assert again.properties == m.properties


# ---------------------------------------------------------------------------
# Ids, hosts, CRC, compression, hashes
# ---------------------------------------------------------------------------


def test_offset_msg_id() -> None:
    assert create_offset_msg_id("127.0.0.1:10911", 0x12D) == "7F00000100002A9F000000000000012D"
    assert decode_offset_msg_id("7F00000100002A9F000000000000012D") == ("127.0.0.1", 10911, 0x12D)
    v6 = create_offset_msg_id("[fd00::2]:10911", 42)
    assert len(v6) == 56
    assert decode_offset_msg_id(v6) == ("fd00:0:0:0:0:0:0:2", 10911, 42)
    for bad in ("", "XYZ", "7F00000100002A9F000000000000012", "G" * 32):
        with pytest.raises(CodecError):
            decode_offset_msg_id(bad)


def test_hosts() -> None:
    assert format_host(b"\x7f\x00\x00\x01", 80) == "127.0.0.1:80"
    assert format_host(bytes(15) + b"\x01", 80) == "0:0:0:0:0:0:0:1:80"
    assert format_host(bytes(10) + b"\xff\xff\x01\x02\x03\x04", 80) == "1.2.3.4:80"
    assert parse_host("0:0:0:0:0:0:0:1:80") == (bytes(15) + b"\x01", 80)
    assert parse_host("[::1]:80") == (bytes(15) + b"\x01", 80)
    for bad in ("nohost", "1.2.3.4", "1.2.3.4:x", "a.b:1", "1.2.3.4:١"):
        with pytest.raises(CodecError):
            parse_host(bad)


def test_uniq_id_month_rollover() -> None:
    start = int(datetime(2026, 1, 31, 23, 59, 59, 900000, tzinfo=UTC).timestamp() * 1000)
    clock = iter([start, start, start + 200])
    gen = UniqIdGenerator("10.0.0.1", 1, 2, clock=lambda: next(clock), tz=UTC)
    a, b = gen.next_id(), gen.next_id()
    assert len(a) == 32 and a[:20] == "0A000001000100000002"
    assert a[-4:] == "0000" and b[-4:] == "0001"
    # Late in a 31-day month the millis exceed 2^31 and are kept as unsigned 32 bits.
    assert int(a[20:28], 16) == start - int(datetime(2026, 1, 1, tzinfo=UTC).timestamp() * 1000)
    assert uniq_id_time(a, now_ms=start + 1, tz=UTC) == start
    assert uniq_id_ip(a) == "10.0.0.1"
    assert uniq_id_pid(a) == 1
    # Read in February, the same id still points at January.
    assert uniq_id_time(a, now_ms=start + 10_000, tz=UTC) == start
    with pytest.raises(CodecError):
        uniq_id_time("abc")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=70_000), st.integers(0, 64))
def test_body_crc_is_zlibs_crc32_of_any_body(body: bytes, cut: int) -> None:
    """The body CRC (zlib-ng's CRC-32 where installed) is zlib.crc32's value, java.util.zip.CRC32's,
    for bodies of every size and alignment, and of buffers as well as bytes."""
    assert body_crc(body) == zlib.crc32(body) & 0x7FFFFFFF
    view = memoryview(body)[cut:]
    assert body_crc(view) == zlib.crc32(view) & 0x7FFFFFFF  # type: ignore[arg-type]


def test_crc_and_compression() -> None:
    assert body_crc(b"") == 0
    assert body_crc(b"hello") == zlib.crc32(b"hello") & 0x7FFFFFFF
    data = b"x" * 5000
    assert decompress_body(compress_body(data)) == data
    assert decompress_body(compress_body(data) + b"trailing") == data
    with pytest.raises(CodecError):
        decompress_body(b"not zlib")
    with pytest.raises(CodecError):
        decompress_body(compress_body(data)[:-5])
    with pytest.raises(CodecError):
        decompress_body(compress_body(data), max_size=100)
    with pytest.raises(CodecError):
        decompress_body(data, CompressionType.LZ4)


def test_java_string_hash() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("TagA") == 2598919
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00  # UTF-16 surrogate pair
    assert tags_hash_code(None) == 0 and tags_hash_code("") == 0


def test_magic_codes_are_what_the_java_broker_writes() -> None:
    """Every record the Java broker wrote carries MESSAGE_MAGIC_CODE; a blank with BLANK_MAGIC_CODE
    ends a walk, as Java's recovery does."""
    data = commitlog()
    offset = 0
    for rec in golden_records():
        assert struct.unpack_from(">i", data, offset + 4)[0] == MESSAGE_MAGIC_CODE
        offset += rec.store_size
    rec = encode_message(golden_records()[0])
    walked = list(iter_commitlog(rec + struct.pack(">ii", 100, BLANK_MAGIC_CODE) + bytes(92)))
    assert isinstance(walked[-1], BlankRecord) and walked[-1].size == 100 and len(walked) == 2


def test_decode_rejects() -> None:
    rec = encode_message(golden_records()[0])
    blank = struct.pack(">ii", 100, BLANK_MAGIC_CODE) + bytes(92)
    for bad in (b"", rec[:8], rec[:-1], blank, bytes(len(rec)), rec[:4] + b"\0\0\0\0" + rec[8:]):
        with pytest.raises(CodecError):
            decode_message(bad)
    with pytest.raises(CodecError):
        decode_messages(rec + rec[:10])
    bad_crc = bytearray(rec)
    bad_crc[8] ^= 1
    decode_message(bytes(bad_crc))
    with pytest.raises(CodecError):
        decode_message(bytes(bad_crc), check_crc=True)


def test_encode_rejects() -> None:
    with pytest.raises(CodecError):
        encode_message(MessageExt(topic="x" * 128))
    with pytest.raises(CodecError):
        encode_message(MessageExt(topic="t", born_host="::1:1"))  # IPv6 host without the flag
    with pytest.raises(CodecError):
        encode_message(MessageExt(topic="t", properties={"k": "v" * 40000}))
    with pytest.raises(CodecError):
        encode_message(MessageExt(topic="t", queue_id=1 << 40))


# ---------------------------------------------------------------------------
# Property tests
# ---------------------------------------------------------------------------

_chars = st.characters(blacklist_categories=("Cs",))
_names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x01\x02"), min_size=1, max_size=12)
_values = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x02"), min_size=1, max_size=24)
_props = st.dictionaries(_names, _values, max_size=6)
_int32 = st.integers(-(1 << 31), (1 << 31) - 1)
_int64 = st.integers(-(1 << 63), (1 << 63) - 1)
_port = st.integers(0, 65535)
_topic = st.text(_chars, max_size=40).filter(lambda t: len(t.encode()) <= 127)


@st.composite
def messages(draw: st.DrawFn) -> MessageExt:
    born_v6 = draw(st.booleans())
    store_v6 = draw(st.booleans())
    born_ip = draw(st.ip_addresses(v=6 if born_v6 else 4)).packed
    store_ip = draw(st.ip_addresses(v=6 if store_v6 else 4)).packed
    sys_flag = draw(_int32) & ~0x7F1  # random other bits; hosts and compression set below
    if born_v6:
        sys_flag |= MessageSysFlag.BORNHOST_V6_FLAG
    if store_v6:
        sys_flag |= MessageSysFlag.STOREHOSTADDRESS_V6_FLAG
    body = draw(st.binary(max_size=600))
    if draw(st.booleans()):
        sys_flag |= MessageSysFlag.COMPRESSED_FLAG | draw(st.sampled_from([0, MessageSysFlag.COMPRESSION_ZLIB_TYPE]))
        body = compress_body(body)
    return MessageExt(
        topic=draw(_topic),
        body=body,
        flag=draw(_int32),
        properties=draw(_props),
        queue_id=draw(_int32),
        queue_offset=draw(_int64),
        sys_flag=int(sys_flag),
        born_timestamp=draw(_int64),
        born_host=format_host(born_ip, draw(_port)),
        store_timestamp=draw(_int64),
        store_host=format_host(store_ip, draw(_port)),
        commit_log_offset=draw(_int64),
        body_crc=body_crc(body),
        reconsume_times=draw(_int32),
        prepared_transaction_offset=draw(_int64),
    )


@given(messages())
def test_prop_message_round_trip(msg: MessageExt) -> None:
    raw = encode_message(msg)
    msg.store_size = len(raw)
    back = decode_message(raw, check_crc=True)
    assert back == msg
    assert encode_message(back) == raw
    assert back.decompressed_body() == msg.decompressed_body()
    assert decode_offset_msg_id(back.msg_id)[2] == msg.commit_log_offset


@given(st.lists(messages(), max_size=4))
def test_prop_messages_concatenated(msgs: list[MessageExt]) -> None:
    raw = b"".join(encode_message(m) for m in msgs)
    assert [encode_message(m) for m in decode_messages(raw)] == [encode_message(m) for m in msgs]


@given(st.lists(st.builds(Message, topic=st.just("T"), body=st.binary(max_size=300), flag=_int32, properties=_props)))
def test_prop_batch_round_trip(msgs: list[Message]) -> None:
    raw = encode_batch(msgs)
    back = decode_batch(raw, topic="T")
    assert back == msgs
    assert encode_batch(back) == raw


@given(_props)
def test_prop_properties_round_trip(props: dict[str, str]) -> None:
    text = properties_to_string(props)
    assert string_to_properties(text) == props
    assert properties_to_string(string_to_properties(text)) == text


@given(st.text(st.sampled_from("ab\x01\x02")))
def test_prop_string_to_properties_total(text: str) -> None:
    props = string_to_properties(text)
    assert all(k and v and "\x02" not in k + v and "\x01" not in k for k, v in props.items())


@given(st.ip_addresses(), _port, st.integers(0, (1 << 63) - 1))
def test_prop_offset_msg_id(ip: Any, port: int, offset: int) -> None:
    host = format_host(ip.packed, port)
    msg_id = create_offset_msg_id(host, offset)
    ip_text, port_back, offset_back = decode_offset_msg_id(msg_id)
    assert parse_host(f"{ip_text}:{port_back}") == parse_host(host)
    assert offset_back == offset


@given(st.integers(0, 4_000_000_000_000), st.integers(1, 10_000_000))
def test_prop_uniq_id_time(now: int, later: int) -> None:
    gen = UniqIdGenerator(bytes(16), 7, 9, clock=lambda: now, tz=UTC)
    msg_id = gen.next_id()
    assert len(msg_id) == 56
    assert uniq_id_time(msg_id, now_ms=now + later, tz=UTC) == now


_ERRORS_OK = (CodecError,)


@given(st.binary(max_size=400))
def test_prop_random_bytes_only_codec_error(data: bytes) -> None:
    for fn in (decode_message, decode_messages, decode_batch):
        try:
            fn(data)
        except _ERRORS_OK:
            pass


@st.composite
def mutated_record(draw: st.DrawFn) -> bytes:
    records = golden_records()
    r = records[draw(st.integers(0, len(records) - 1))]
    raw = bytearray(commitlog()[r.commit_log_offset : r.commit_log_offset + r.store_size])
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(raw) - 1))
        raw[pos] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        raw = raw[: draw(st.integers(0, len(raw)))]
    return bytes(raw)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(mutated_record(), st.booleans(), st.booleans())
def test_prop_mutated_golden_records(raw: bytes, check_crc: bool, decompress: bool) -> None:
    try:
        m = decode_message(raw, check_crc=check_crc, decompress=decompress)
    except CodecError:
        return
    # Whatever decodes can be inspected and re-encoded without any other exception.
    actions: list[Any] = [
        m.decompressed_body,
        lambda: encode_message(m),
        lambda: m.msg_id,
        lambda: m.client_msg_id,
        lambda: m.delay_time_level,
    ]
    for action in actions:
        try:
            action()
        except CodecError:
            pass


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(min_size=1, max_size=60), st.integers(0, 300))
def test_prop_spliced_golden_bytes(noise: bytes, cut: int) -> None:
    rec = commitlog()[:301]
    data = rec[:cut] + noise + rec[cut + len(noise) :]
    try:
        decode_messages(data, check_crc=True)
    except CodecError:
        pass


@given(st.binary(max_size=300), st.integers(-10, 400), st.sampled_from([0, 0x10, 0x20, 0x30, 0x301, 0x201]))
def test_prop_valid_header_random_rest(rest: bytes, size: int, sys_flag: int) -> None:
    # Past the size/magic check the parser meets arbitrary lengths and flags.
    head = struct.pack(">iiiiiqqi", size, MESSAGE_MAGIC_CODE, 0, 0, 0, 0, 0, sys_flag)
    try:
        decode_message(head + rest, check_crc=True)
    except CodecError:
        pass


@given(st.integers(0, 4_000_000_000_000), st.integers(0, 40 * 86_400_000), st.integers(0, 0x1FFFF))
def test_prop_uniq_id_at_a_given_time_is_the_clocks(first: int, step: int, counter: int) -> None:
    """A send makes its UNIQ_KEY at its born timestamp (id_at): the id the generator's clock would give then,
    across month ends (the month's bounds move) and the counter's wrap."""
    times = iter([first, first, first + step])  # the first reading sets the month up
    by_clock = UniqIdGenerator("10.0.0.1", 1, 2, clock=lambda: next(times), tz=UTC, counter=counter)
    given_time = UniqIdGenerator("10.0.0.1", 1, 2, clock=lambda: first, tz=UTC, counter=counter)
    assert [given_time.id_at(first), given_time.id_at(first + step)] == [by_clock.next_id(), by_clock.next_id()]


@pytest.mark.skipif(_uniq_id_text is None, reason="the accelerated build (rocketpy._speedups) is not built")
@given(st.binary(min_size=4, max_size=4) | st.binary(min_size=16, max_size=16), st.integers(0, 0xFFFF),
       st.integers(0, 2**32 - 1), st.integers(0, 0xFFFF))
def test_prop_compiled_uniq_id_text_is_the_format(ip: bytes, pid: int, diff: int, count: int) -> None:
    """The compiled id text is the Python form's: the prefix, then 8 and 4 upper-case hex digits."""
    gen = UniqIdGenerator(ip, pid, 3)
    assert _uniq_id_text(gen.prefix.encode(), diff, count) == f"{gen.prefix}{diff:08X}{count:04X}"
