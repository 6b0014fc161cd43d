"""Store files (CommitLog walk, ConsumeQueue, IndexFile, checkpoint) against the Java broker's store."""

from __future__ import annotations

import json
import struct
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketpy.codecs.codes import MessageSysFlag, MixAll
from rocketpy.codecs.errors import CodecError
from rocketpy.codecs.message import MessageExt, decode_message, encode_message, tags_hash_code
from rocketpy.codecs.store_records import (
    CHECKPOINT,
    CHECKPOINT_FILE_SIZE,
    CONSUME_QUEUE_ENTRY,
    CQ_STORE_UNIT_SIZE,
    INDEX_ENTRY,
    INDEX_HEADER,
    BlankRecord,
    CommitLogCorruption,
    ConsumeQueueEntry,
    IndexFileView,
    IndexHeader,
    StoreCheckpoint,
    build_blank_record,
    build_checkpoint,
    build_consumequeue_entry,
    build_index_header,
    index_key,
    index_key_hash,
    iter_commitlog,
    iter_consumequeue,
    parse_checkpoint,
    parse_consumequeue_entry,
)

GOLDEN = Path(__file__).parent.parent / "protocol" / "golden"
STORE = GOLDEN / "store-dump"
CRASHED = GOLDEN / "store-dump-crashed"
HASH_SLOTS = 1000  # maxHashSlotNum of the golden broker
INDEX_NUM = 4000  # maxIndexNum
# messageDelayLevel default: 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h
DELAY_LEVEL_MS = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]


@cache
def manifest(store: Path) -> dict[str, Any]:
    return json.loads((store / "manifest.json").read_text())


@cache
def commitlog(store: Path) -> bytes:
    return (store / "commitlog" / "00000000000000000000").read_bytes()


@cache
def walk(store: Path) -> tuple[MessageExt | BlankRecord, ...]:
    return tuple(iter_commitlog(commitlog(store), 0, check_crc=True))


def records(store: Path) -> dict[int, MessageExt]:
    return {r.commit_log_offset: r for r in walk(store) if isinstance(r, MessageExt)}


def index_view(store: Path) -> IndexFileView:
    (info,) = manifest(store)["store"]["indexFiles"]
    return IndexFileView((store / "index" / info["file"]).read_bytes(), HASH_SLOTS, INDEX_NUM)


STORES = pytest.mark.parametrize("store", [STORE, CRASHED], ids=["clean", "crashed"])

# ---------------------------------------------------------------------------
# CommitLog
# ---------------------------------------------------------------------------


@STORES
def test_golden_commitlog_walk(store: Path) -> None:
    info = manifest(store)["store"]
    w = iter_commitlog(commitlog(store), 0, check_crc=True)
    got = list(w)
    assert all(isinstance(r, MessageExt) for r in got)
    assert len(got) == w.records == info["records"]
    assert w.end_offset == info["commitlogMaxOffset"]
    assert w.end_reason == "zero" and w.error is None and w.blank is None
    assert dict(Counter(r.topic for r in got if isinstance(r, MessageExt))) == info["recordsPerTopic"]
    # Past the end the file is zero-filled, as preallocated.
    assert not any(commitlog(store)[w.end_offset :])


@STORES
def test_golden_commitlog_reencodes(store: Path) -> None:
    buf = commitlog(store)
    for offset, r in records(store).items():
        assert encode_message(r) == buf[offset : offset + r.store_size]


def test_crashed_store_acknowledged_messages_present() -> None:
    m = manifest(CRASHED)
    assert (CRASHED / "abort").exists() and m["store"]["abortFilePresent"]
    recs = records(CRASHED)
    by_uniq = {r.uniq_key: r for r in recs.values() if r.uniq_key}
    assert len(m["acknowledgedBeforeKill"]) == m["acknowledgedCount"]
    for msg_id in m["acknowledgedBeforeKill"]:
        assert msg_id in by_uniq
    for attempt in m["producerAttempts"]:
        stored = {(s["physicalOffset"], s["queueId"], s["queueOffset"]) for s in attempt["inStore"]}
        found = {
            (r.commit_log_offset, r.queue_id, r.queue_offset) for r in recs.values() if r.uniq_key == attempt["msgId"]
        }
        assert found == stored
        for s in attempt["inStore"]:
            r = recs[s["physicalOffset"]]
            assert r.topic == attempt["topic"] == m["crashTopic"]
            assert r.msg_id == s["offsetMsgId"]
            assert r.keys_string == attempt["keys"]
            assert r.body == attempt["body"].encode()
    # The clean store is a prefix of the crashed one.
    clean_end = manifest(STORE)["store"]["commitlogMaxOffset"]
    assert commitlog(CRASHED)[:clean_end] == commitlog(STORE)[:clean_end]


def test_commitlog_blank_and_absolute_offsets() -> None:
    clean = commitlog(STORE)
    first, second = (r for r in walk(STORE)[:2] if isinstance(r, MessageExt))
    raw = clean[: first.store_size + second.store_size]
    file_size = len(raw) + 300
    base = 4 * 1024 * 1024
    # The blank's 8 bytes, then whatever was there: Java leaves the rest of the file alone.
    data = raw + build_blank_record(300) + b"\xee" * 292
    w = iter_commitlog(data, base)
    got = list(w)
    assert [type(x) for x in got] == [MessageExt, MessageExt, BlankRecord]
    assert got[2] == BlankRecord(base + len(raw), 300)
    assert w.blank == got[2] and w.end_reason == "blank"
    assert w.end_offset == base + len(raw) == base + file_size - 300


def test_commitlog_corruption_strict_and_report() -> None:
    buf = bytearray(commitlog(STORE))
    offsets = sorted(records(STORE))
    bad = offsets[7]
    buf[bad + 4] ^= 0xFF  # the magic code of the 8th record
    with pytest.raises(CommitLogCorruption) as info:
        list(iter_commitlog(buf, 1000))
    assert info.value.offset == 1000 + bad
    assert isinstance(info.value, CodecError)
    w = iter_commitlog(buf, 1000, strict=False)
    assert len(list(w)) == 7
    assert w.end_offset == 1000 + bad
    assert w.end_reason == "corrupt" and w.error is not None and w.error.offset == 1000 + bad


def test_commitlog_crc_and_torn_tail() -> None:
    buf = bytearray(commitlog(STORE))
    offsets = sorted(records(STORE))
    last = offsets[-1]
    end = manifest(STORE)["store"]["commitlogMaxOffset"]
    body_len_at = last + 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8  # IPv4 hosts
    body_start = body_len_at + 4
    # A torn write: the last record's second half never reached the file.
    torn = bytearray(buf)
    torn[body_len_at:end] = bytes(end - body_len_at)
    w = iter_commitlog(torn, strict=False)
    assert len(list(w)) == len(offsets) - 1 and w.end_offset == last
    assert w.error is not None and w.error.offset == last
    # A flipped body byte passes without check_crc and stops the walk with it.
    buf[body_start] ^= 1
    assert len(list(iter_commitlog(buf))) == len(offsets)
    w = iter_commitlog(buf, check_crc=True, strict=False)
    assert len(list(w)) == len(offsets) - 1 and "CRC" in str(w.error)


def test_commitlog_small_buffers() -> None:
    assert list(iter_commitlog(b"")) == []
    assert list(iter_commitlog(bytes(7))) == []
    with pytest.raises(CommitLogCorruption):
        list(iter_commitlog(b"\x01\x02"))
    with pytest.raises(CommitLogCorruption):
        list(iter_commitlog(struct.pack(">ii", 500, -875286124)))  # blank larger than the file
    with pytest.raises(CommitLogCorruption):
        list(iter_commitlog(struct.pack(">ii", 0, 12345)))


@given(st.binary(max_size=300), st.booleans())
def test_prop_commitlog_random_bytes(data: bytes, check_crc: bool) -> None:
    try:
        list(iter_commitlog(data, check_crc=check_crc))
    except CodecError:
        pass
    w = iter_commitlog(data, check_crc=check_crc, strict=False)
    list(w)
    assert 0 <= w.end_offset <= len(data)


@given(st.integers(0, 36000), st.binary(min_size=1, max_size=16))
def test_prop_commitlog_spliced(pos: int, noise: bytes) -> None:
    buf = bytearray(commitlog(STORE)[:40000])
    buf[pos : pos + len(noise)] = noise
    w = iter_commitlog(buf, strict=False, check_crc=True)
    got = list(w)
    # Every record before the damage still comes out; nothing else escapes.
    assert w.end_offset <= len(buf)
    assert all(isinstance(r, MessageExt | BlankRecord) for r in got)


# ---------------------------------------------------------------------------
# ConsumeQueue
# ---------------------------------------------------------------------------


def expected_tags_code(r: MessageExt) -> int:
    # Delayed messages in SCHEDULE_TOPIC_XXXX carry their delivery time instead of a tags hash.
    if r.topic == MixAll.RMQ_SYS_SCHEDULE_TOPIC and r.delay_time_level > 0:
        return r.store_timestamp + DELAY_LEVEL_MS[r.delay_time_level - 1] * 1000
    return tags_hash_code(r.tags)


@STORES
def test_golden_consumequeues(store: Path) -> None:
    info = manifest(store)["store"]["consumeQueues"]
    recs = records(store)
    seen: set[int] = set()
    for name, expect in info.items():
        topic, queue_id = name.rsplit("/", 1)
        entries = list(
            iter_consumequeue((store / "consumequeue" / topic / queue_id / "00000000000000000000").read_bytes())
        )
        assert len(entries) == expect["entries"], name
        for i, e in enumerate(entries):
            r = recs[e.commit_log_offset]
            assert (r.topic, r.queue_id, r.queue_offset) == (topic, int(queue_id), expect["firstQueueOffset"] + i)
            assert e.size == r.store_size
            assert e.tags_code == expected_tags_code(r)
            assert not e.is_pre_blank and e.is_valid
            seen.add(e.commit_log_offset)
    # Conversely, every consumable record of a live topic has its unit.
    live = {name.rsplit("/", 1)[0] for name in info}
    for offset, r in recs.items():
        if r.topic in live and r.transaction_type in (
            MessageSysFlag.TRANSACTION_NOT_TYPE,
            MessageSysFlag.TRANSACTION_COMMIT_TYPE,
        ):
            assert offset in seen


def test_consumequeue_units() -> None:
    unit = build_consumequeue_entry(1234, 301, -5)
    assert len(unit) == CQ_STORE_UNIT_SIZE == CONSUME_QUEUE_ENTRY.sizeof()
    assert parse_consumequeue_entry(unit) == ConsumeQueueEntry(1234, 301, -5)
    blank = build_consumequeue_entry(0, 0x7FFFFFFF, 0)
    assert parse_consumequeue_entry(blank).is_pre_blank
    # Pre-blank fillers count as written; a zero unit ends the queue; a partial unit is ignored.
    data = blank + unit + bytes(20) + unit + unit[:7]
    assert list(iter_consumequeue(data)) == [ConsumeQueueEntry(0, 0x7FFFFFFF, 0), ConsumeQueueEntry(1234, 301, -5)]
    assert list(iter_consumequeue(unit + build_consumequeue_entry(-1, 10, 0))) == [ConsumeQueueEntry(1234, 301, -5)]
    with pytest.raises(CodecError):
        parse_consumequeue_entry(unit[:19])
    with pytest.raises(CodecError):
        build_consumequeue_entry(0, 1 << 40, 0)


@given(st.binary(max_size=200))
def test_prop_consumequeue_random(data: bytes) -> None:
    for e in iter_consumequeue(data):
        assert e.is_valid


# ---------------------------------------------------------------------------
# IndexFile
# ---------------------------------------------------------------------------


@STORES
def test_golden_index_header(store: Path) -> None:
    (info,) = manifest(store)["store"]["indexFiles"]
    view = index_view(store)
    h = view.header
    assert (h.begin_timestamp, h.end_timestamp, h.begin_phy_offset, h.end_phy_offset) == (
        info["beginTimestamp"],
        info["endTimestamp"],
        info["beginPhyOffset"],
        info["endPhyOffset"],
    )
    assert (h.hash_slot_count, h.index_count) == (info["hashSlotCount"], info["indexCount"])
    assert info["size"] == 40 + HASH_SLOTS * 4 + INDEX_NUM * 20
    assert sum(1 for s in range(HASH_SLOTS) if view.slot(s) != 0) == h.hash_slot_count
    assert sum(1 for _ in view.entries()) == h.index_count - 1
    raw = (store / "index" / info["file"]).read_bytes()
    assert build_index_header(h) == raw[:40]
    assert INDEX_HEADER.parse(raw[:40]).index_count == h.index_count
    assert INDEX_ENTRY.parse(raw[4040:4060]).phy_offset == view.entry(1).phy_offset


@STORES
def test_golden_index_lookup(store: Path) -> None:
    view = index_view(store)
    h = view.header
    looked_up = 0
    for offset, r in records(store).items():
        if r.transaction_type == MessageSysFlag.TRANSACTION_ROLLBACK_TYPE:
            continue  # IndexService skips rollback records
        for key in ([r.uniq_key] if r.uniq_key else []) + r.keys:
            full = index_key(r.topic, key)
            assert offset in view.lookup(full, h.begin_timestamp, h.end_timestamp), full
            assert offset in view.lookup(full)
            # The stored time is rounded down to the second: a window ending before it misses.
            assert offset not in view.lookup(full, 0, h.begin_timestamp - 1)
            looked_up += 1
    assert looked_up == h.index_count - 1
    assert view.lookup(index_key("NoSuchTopic", "nope")) == []


def test_golden_index_lookup_max_num() -> None:
    view = index_view(STORE)
    r = next(r for r in records(STORE).values() if r.topic == "Batch_T_golden")
    assert len(view.lookup(index_key(r.topic, r.uniq_key or ""), max_num=0)) == 0
    assert view.is_time_matched(view.header.begin_timestamp, view.header.begin_timestamp)
    assert not view.is_time_matched(0, 1)


def test_index_key_hash() -> None:
    assert index_key("T", "k") == "T#k"
    assert index_key_hash("polygenelubricants") == 0  # hashCode is Integer.MIN_VALUE
    assert index_key_hash("TagA") == 2598919
    # Java's values (String.hashCode, then Math.abs): a negative hash, a short one, one that overflows int, surrogates
    assert index_key_hash("TopicTest#OrderID188") == 1231271670  # hashCode -1231271670
    assert index_key_hash("a") == 97
    assert index_key_hash("zzzzzzzzzzzz") == 1097476992
    assert index_key_hash("\U0001f600" * 9) == 2091543931


def test_index_view_rejects_and_survives_cycles() -> None:
    with pytest.raises(CodecError):
        IndexFileView(bytes(100), 10, 10)
    # A two-entry cycle in a corrupt file: the walk still ends.
    slots, num = 4, 8
    buf = bytearray(40 + slots * 4 + num * 20)
    key = "T#k"
    h = index_key_hash(key)
    buf[:40] = build_index_header(IndexHeader(1000, 2000, 0, 0, 1, 3))
    struct.pack_into(">i", buf, 40 + (h % slots) * 4, 2)
    base = 40 + slots * 4
    struct.pack_into(">iqii", buf, base + 1 * 20, h, 111, 0, 2)
    struct.pack_into(">iqii", buf, base + 2 * 20, h, 222, 0, 1)
    view = IndexFileView(buf, slots, num)
    found = view.lookup(key)
    assert found[:2] == [222, 111] and len(found) <= 3


@given(st.binary(min_size=40 + 16 + 80, max_size=40 + 16 + 80), st.text(max_size=5))
def test_prop_index_random(data: bytes, key: str) -> None:
    try:
        view = IndexFileView(data, 4, 4)
        view.lookup(key)
        list(view.entries())
    except CodecError:
        pass


# ---------------------------------------------------------------------------
# Checkpoint
# ---------------------------------------------------------------------------


@STORES
def test_golden_checkpoint(store: Path) -> None:
    raw = (store / "checkpoint").read_bytes()
    assert len(raw) == CHECKPOINT_FILE_SIZE
    cp = parse_checkpoint(raw)
    expect = manifest(store)["store"]["checkpoint"]
    assert cp == StoreCheckpoint(
        expect["physicMsgTimestamp"], expect["logicsMsgTimestamp"], expect["indexMsgTimestamp"]
    )
    assert build_checkpoint(cp) == raw
    assert CHECKPOINT.parse(raw).physic_msg_timestamp == cp.physic_msg_timestamp
    assert cp.min_timestamp == min(cp.physic_msg_timestamp, cp.logics_msg_timestamp) - 3000
    assert cp.min_timestamp_index == min(cp.min_timestamp, cp.index_msg_timestamp)


def test_crashed_checkpoint_lags() -> None:
    # SIGKILL left the checkpoint at the clean store's values although records followed.
    cp = parse_checkpoint((CRASHED / "checkpoint").read_bytes())
    last = max(records(CRASHED).values(), key=lambda r: r.commit_log_offset)
    assert cp.physic_msg_timestamp < last.store_timestamp
    with pytest.raises(CodecError):
        parse_checkpoint(bytes(23))


def test_record_is_found_by_offset_from_cq() -> None:
    # End to end: ConsumeQueue unit -> CommitLog record, as a PULL does.
    cq = (STORE / "consumequeue" / "Ordered_T_golden" / "0" / "00000000000000000000").read_bytes()
    for e in iter_consumequeue(cq):
        r = decode_message(commitlog(STORE), e.commit_log_offset)
        assert r.topic == "Ordered_T_golden" and r.queue_id == 0 and r.store_size == e.size



def _unit_pairs() -> list[tuple[str, object, object, int | None]]:
    from rocketpy.codecs import frame, message, record, store_records
    from rocketpy.sniffer import hastream

    return [
        ("BLANK_RECORD _SIZE_MAGIC", store_records._SIZE_MAGIC, store_records.BLANK_RECORD, None),
        ("CHECKPOINT _CHECKPOINT_TIMES", store_records._CHECKPOINT_TIMES, store_records.CHECKPOINT, 3),
        ("MESSAGE_RECORD head (sniffer)", hastream._PHYSICAL, message.MESSAGE_RECORD, 7),
        ("MESSAGE_RECORD size and magic", record._SIZE_MAGIC, message.MESSAGE_RECORD, 2),
        ("CONSUME_QUEUE_UNIT", store_records.CONSUME_QUEUE_UNIT, store_records.CONSUME_QUEUE_ENTRY, None),
        ("INDEX_HEADER_UNIT", store_records.INDEX_HEADER_UNIT, store_records.INDEX_HEADER, None),
        ("INDEX_ENTRY_UNIT", store_records.INDEX_ENTRY_UNIT, store_records.INDEX_ENTRY, None),
        ("FRAME_PREFIX_UNIT", frame.FRAME_PREFIX_UNIT, frame.FRAME_PREFIX, None),
        ("ROCKETMQ_FIXED_UNIT", frame.ROCKETMQ_FIXED_UNIT, frame.ROCKETMQ_HEADER, 5),
    ]


@pytest.mark.parametrize("index", range(len(_unit_pairs())), ids=[name for name, *_ in _unit_pairs()])
@given(data=st.data())
def test_fast_unit_reads_what_its_construct_definition_builds(index: int, data: st.DataObject) -> None:
    """Each struct form (derived by codecs.units.struct_unit) equals its construct Struct field by field."""
    import construct as cs

    _, unit, definition, count = _unit_pairs()[index]
    fields = definition.subcons[:count]  # type: ignore[attr-defined]
    values = []
    for sub in fields:
        if isinstance(sub.subcon, cs.Const):  # a magic code: the one value it may hold
            values.append(sub.subcon.value)
            continue
        bits = sub.sizeof() * 8
        signed = sub.subcon.fmtstr[-1].islower()
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        values.append(data.draw(st.integers(lo, hi)))
    built = cs.Struct(*fields).build(dict(zip((f.name for f in fields), values)))
    assert unit.pack(*values) == built  # type: ignore[attr-defined]
    assert unit.unpack(built) == tuple(values)  # type: ignore[attr-defined]


def test_struct_unit_refuses_variable_fields() -> None:
    from rocketpy.codecs.frame import ROCKETMQ_HEADER
    from rocketpy.codecs.units import struct_unit

    with pytest.raises(TypeError, match="remark"):
        struct_unit(ROCKETMQ_HEADER)


@given(
    st.one_of(st.binary(min_size=4, max_size=4), st.binary(min_size=16, max_size=16)),
    st.integers(0, 65535),
    st.integers(-(1 << 63), (1 << 63) - 1),
)
def test_store_offset_msg_id_is_the_codecs(ip: bytes, port: int, offset: int) -> None:
    """The CommitLog's fast message id (a cached host prefix, then the offset in hex) equals
    MessageDecoder.createMessageId as the codec writes it and reads back."""
    import ipaddress

    from rocketpy.codecs.message import create_offset_msg_id, decode_offset_msg_id, host_bytes, offset_msg_id

    addr = ipaddress.ip_address(ip)
    host = f"{addr}:{port}" if len(ip) == 4 else f"[{addr}]:{port}"
    store_ip, store_port = host_bytes(host)
    msg_id = offset_msg_id(store_ip, store_port, offset)
    assert msg_id == create_offset_msg_id(host, offset)
    assert decode_offset_msg_id(msg_id)[1:] == (store_port, offset)
