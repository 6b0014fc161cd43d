"""rocketpy.store: append/read, file boundaries, queues, index, recovery, flushing, retention."""

from __future__ import annotations

import logging
import os
import struct
import zlib
from pathlib import Path

import pytest
import trio

from rocketpy.codecs import store_records as sr
from rocketpy.codecs.codes import MessageSysFlag
from rocketpy.codecs.message import Message, decode_message, decode_messages, encode_batch, tags_hash_code
from rocketpy.store import (
    FlushDiskType,
    GetMessageStatus,
    MessageExtBatch,
    MessageExtBrokerInner,
    MessageStore,
    MessageStoreConfig,
    PutMessageStatus,
    StoreError,
    TagFilter,
    config_files,
)
from rocketpy.store.check import check_store
from rocketpy.store.config_files import BrokerConfigFiles
from rocketpy.store.services import GroupCommitService, StoreServices
from rocketpy.testing import wait_until

CL_SIZE = 4096  # small CommitLog files: a dozen records each
CQ_UNITS = 8
BODY_POS_V4 = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4  # where the body starts (IPv4 hosts)
T0 = 1_700_000_000_000


class Clock:
    """A store clock that ticks 10 ms per read."""

    def __init__(self, start: int = T0) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 10
        return self.now


def make_config(root: Path, **over: object) -> MessageStoreConfig:
    values: dict[str, object] = dict(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=CL_SIZE,
        mapped_file_size_consume_queue=CQ_UNITS * sr.CQ_STORE_UNIT_SIZE,
        max_hash_slot_num=64,
        max_index_num=256,
    )
    values.update(over)
    return MessageStoreConfig(**values)  # type: ignore[arg-type]


def make_msg(
    topic: str = "T",
    queue_id: int = 0,
    body: bytes = b"hello",
    *,
    tags: str | None = "TagA",
    keys: str | None = None,
    uniq: str | None = None,
    props: dict[str, str] | None = None,
    sys_flag: int = 0,
    born_host: str = "10.0.0.1:5555",
    store_host: str = "10.0.0.2:10911",
) -> MessageExtBrokerInner:
    properties: dict[str, str] = {}
    if keys:
        properties["KEYS"] = keys
    if uniq:
        properties["UNIQ_KEY"] = uniq
    properties.update(props or {})
    if tags:
        properties["TAGS"] = tags
    return MessageExtBrokerInner(
        topic=topic,
        queue_id=queue_id,
        body=body,
        properties=properties,
        sys_flag=sys_flag,
        born_timestamp=T0 - 5,
        born_host=born_host,
        store_host=store_host,
    )


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    s = MessageStore(make_config(tmp_path), clock=Clock())
    s.open()
    yield s
    s.close()


def fill(store: MessageStore, n: int, queues: int = 2, size: int = 100) -> list[tuple[int, int, int]]:
    """Put n messages round-robin over queues; returns (queue, queue offset, commitlog offset)."""
    out = []
    for i in range(n):
        q = i % queues
        body = f"body-{i}-".encode().ljust(size, b"x")
        r = store.put_message(make_msg("T", q, body, keys=f"k{i} common", uniq=f"U{i:030d}"))
        assert r.is_ok and r.append is not None
        out.append((q, r.append.logics_offset, r.append.wrote_offset))
    return out


def pull_all(store: MessageStore, topic: str, queue_id: int, offset: int = 0) -> list[bytes]:
    """Pull until the queue is exhausted, as a consumer would."""
    out: list[bytes] = []
    while True:
        got = store.get_message(topic, queue_id, offset, 32)
        assert got is not None
        if got.status is not GetMessageStatus.FOUND:
            return out
        out.extend(got.messages)
        offset = got.next_begin_offset


# -- append / read ---------------------------------------------------------------------------


def test_round_trip_across_files_with_blank_ends(store: MessageStore, tmp_path: Path) -> None:
    placed = fill(store, 120)
    files = sorted(os.listdir(tmp_path / "commitlog"))
    assert len(files) > 3
    assert all(len(f) == 20 and int(f) % CL_SIZE == 0 for f in files)
    assert [int(f) for f in files] == [i * CL_SIZE for i in range(len(files))]
    # Every full file ends with a blank record reaching its end; records never straddle files.
    for name in files[:-1]:
        data = (tmp_path / "commitlog" / name).read_bytes()
        walk = sr.iter_commitlog(data, int(name))
        recs = list(walk)
        blank = recs[-1]
        assert isinstance(blank, sr.BlankRecord) and blank.offset + blank.size == int(name) + CL_SIZE
        assert all(
            isinstance(r, sr.BlankRecord) or r.commit_log_offset // CL_SIZE == int(name) // CL_SIZE for r in recs
        )
    for i, (q, qoff, phys) in enumerate(placed):
        got = store.get_message("T", q, qoff, 1)
        assert got is not None and got.status is GetMessageStatus.FOUND
        msg = decode_message(got.messages[0])
        assert (msg.queue_id, msg.queue_offset, msg.commit_log_offset) == (q, qoff, phys)
        assert msg.body.startswith(f"body-{i}-".encode())
        assert msg.offset_msg_id == f"0A00000200002A9F{phys:016X}"
        assert got.next_begin_offset == qoff + 1
    assert store.get_max_offset_in_queue("T", 0) == 60
    assert store.get_min_offset_in_queue("T", 0) == 0


def test_pull_statuses_and_batches(store: MessageStore) -> None:
    fill(store, 40, queues=1)
    got = store.get_message("T", 0, 8, 5)
    assert got is not None and got.status is GetMessageStatus.FOUND
    assert got.queue_offsets == list(range(8, 13)) and got.next_begin_offset == 13
    assert [m.queue_offset for m in decode_messages(got.body())] == list(range(8, 13))
    # like Java, one pull reads one ConsumeQueue file: it stops at the file's end
    edge = store.get_message("T", 0, 5, 10)
    assert edge is not None and edge.queue_offsets == [5, 6, 7] and edge.next_begin_offset == 8
    assert (got.min_offset, got.max_offset) == (0, 40)
    capped = store.get_message("T", 0, 0, 32, max_total_size=3 * 300)
    assert capped is not None and 1 <= capped.message_count <= 3
    one = store.get_message("T", 0, 40, 1)
    assert one is not None and one.status is GetMessageStatus.OFFSET_OVERFLOW_ONE and one.next_begin_offset == 40
    bad = store.get_message("T", 0, 99, 1)
    assert bad is not None and bad.status is GetMessageStatus.OFFSET_OVERFLOW_BADLY and bad.next_begin_offset == 40
    none = store.get_message("T", 3, 0, 1)
    assert none is not None and none.status is GetMessageStatus.NO_MESSAGE_IN_QUEUE
    unknown = store.get_message("nope", 0, 7, 1)
    assert unknown is not None and unknown.status is GetMessageStatus.NO_MESSAGE_IN_QUEUE
    assert unknown.next_begin_offset == 0


def test_consume_queue_units(store: MessageStore, tmp_path: Path) -> None:
    placed = fill(store, 30, queues=1)
    qdir = tmp_path / "consumequeue" / "T" / "0"
    files = sorted(os.listdir(qdir))
    assert len(files) == 4  # 8 units per file
    assert files[1] == f"{CQ_UNITS * sr.CQ_STORE_UNIT_SIZE:020d}"
    units = [u for f in files for u in sr.iter_consumequeue((qdir / f).read_bytes())]
    assert len(units) == 30
    for (_q, qoff, phys), unit in zip(placed, units, strict=True):
        msg = store.look_message_by_offset(phys)
        assert msg is not None and msg.queue_offset == qoff
        assert unit == sr.ConsumeQueueEntry(phys, msg.store_size, tags_hash_code("TagA"))


def test_index_lookups(store: MessageStore) -> None:
    placed = fill(store, 50)
    q = store.query_message("T", "k7", 32, 0, 1 << 62)
    hits = [decode_message(r) for r in q.messages]
    assert [m.commit_log_offset for m in hits if "k7" in m.keys] == [placed[7][2]]
    common = store.query_message("T", "common", 1000, 0, 1 << 62)
    assert len(common.messages) == 50  # capped by maxMsgsNumBatch=64
    assert q.index_last_update_phyoffset == placed[-1][2]
    uniq = store.query_message("T", f"U{3:030d}", 32, 0, 1 << 62)
    assert any(decode_message(r).commit_log_offset == placed[3][2] for r in uniq.messages)
    assert store.query_message("Other", "k7", 32, 0, 1 << 62).messages == []
    # time range: the messages were stored after T0
    assert store.query_message("T", "k7", 32, 0, T0 - 100_000).messages == []
    by_id = store.look_message_by_msg_id(f"0A00000200002A9F{placed[9][2]:016X}")
    assert by_id is not None and by_id.keys == ["k9", "common"]
    assert store.look_message_by_msg_id("zz") is None


def test_index_rolls_to_new_files(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, max_index_num=16, max_hash_slot_num=4)
    with MessageStore(cfg, clock=Clock()) as store:
        placed = fill(store, 30)
        assert len(os.listdir(tmp_path / "index")) >= 4
        for i in (0, 13, 29):
            q = store.query_message("T", f"k{i}", 32, 0, 1 << 62)
            assert placed[i][2] in [decode_message(r).commit_log_offset for r in q.messages]


def test_tag_filter(store: MessageStore) -> None:
    for i in range(6):
        assert store.put_message(make_msg(tags="A" if i % 3 == 0 else "B", body=b"%d" % i)).is_ok
    got = store.get_message("T", 0, 0, 32, TagFilter("A"))
    assert got is not None and got.status is GetMessageStatus.FOUND
    assert [m.body for m in decode_messages(got.body())] == [b"0", b"3"]
    assert got.next_begin_offset == 6
    miss = store.get_message("T", 0, 0, 32, TagFilter("C || D"))
    assert miss is not None and miss.status is GetMessageStatus.NO_MATCHED_MESSAGE and miss.next_begin_offset == 6
    every = store.get_message("T", 0, 0, 32, TagFilter("*"))
    assert every is not None and every.message_count == 6


def test_offsets_by_time(store: MessageStore) -> None:
    placed = fill(store, 6, queues=1)  # one ConsumeQueue file: the search happens inside it
    ts = [store.look_message_by_offset(p).store_timestamp for _q, _o, p in placed]  # type: ignore[union-attr]
    assert ts == sorted(ts) and ts[4] - ts[3] == 10
    assert store.get_earliest_message_time("T", 0) == ts[0]
    assert store.get_earliest_message_time() == ts[0]
    assert store.get_message_store_timestamp("T", 0, 4) == ts[4]
    assert store.get_offset_in_queue_by_time("T", 0, ts[3]) == 3
    assert store.get_offset_in_queue_by_time("T", 0, ts[3] + 3) == 3  # nearer to 3 than to 4
    assert store.get_offset_in_queue_by_time("T", 0, ts[3] + 7) == 4
    assert store.get_offset_in_queue_by_time("T", 0, 0) == 0
    assert store.get_offset_in_queue_by_time("T", 0, ts[-1] + 10**6) == 5
    assert store.get_offset_in_queue_by_time("nope", 0, 0) == 0
    assert store.get_commit_log_offset_in_queue("T", 0, 5) == placed[5][2]
    ids = store.get_message_ids("T", 0, 0, 3, "10.0.0.2:10911")
    assert ids == {f"0A00000200002A9F{placed[i][2]:016X}": i for i in range(3)}


# -- special messages ------------------------------------------------------------------------


def test_batch(store: MessageStore) -> None:
    store.put_message(make_msg("B", 1))
    entries = [
        Message(body=b"m%d" % i, flag=i, properties={"KEYS": f"bk{i}", "UNIQ_KEY": f"B{i:031d}", "TAGS": "TB"})
        for i in range(5)
    ]
    batch = MessageExtBatch(
        topic="B",
        queue_id=1,
        body=encode_batch(entries),
        properties={"CLUSTER": "DefaultCluster", "WAIT": "true"},
        born_timestamp=T0,
        born_host="10.0.0.1:1",
        store_host="10.0.0.2:10911",
    )
    r = store.put_messages(batch)
    assert r.is_ok and r.append is not None and r.append.msg_num == 5 and r.append.logics_offset == 1
    ids = r.append.msg_id.split(",")
    assert len(ids) == 5
    got = store.get_message("B", 1, 1, 32)
    assert got is not None
    msgs = decode_messages(got.body())
    assert [m.queue_offset for m in msgs] == [1, 2, 3, 4, 5]
    assert len({m.store_timestamp for m in msgs}) == 1
    assert [m.offset_msg_id for m in msgs] == ids
    assert msgs[2].flag == 2 and msgs[2].body == b"m2"
    own = f"KEYS\x01bk2\x02UNIQ_KEY\x01B{2:031d}\x02TAGS\x01TB"
    assert msgs[2]._raw_properties == f"{own}\x02CLUSTER\x01DefaultCluster\x02WAIT\x01true".encode()
    assert all(m.body_crc == zlib.crc32(m.body) & 0x7FFFFFFF for m in msgs)
    assert len(store.query_message("B", "bk4", 32, 0, 1 << 62).messages) == 1
    bad = MessageExtBatch(
        topic="B", queue_id=1, body=b"\x00\x00\x00\x05junk", born_host="1.1.1.1:1", store_host="1.1.1.1:2"
    )
    assert store.put_messages(bad).status is PutMessageStatus.MESSAGE_ILLEGAL


def test_transactions(store: MessageStore) -> None:
    prepared = store.put_message(make_msg("TX", keys="prep", sys_flag=int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)))
    rollback = store.put_message(make_msg("TX", keys="rb", sys_flag=int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)))
    commit = store.put_message(make_msg("TX", keys="ok", sys_flag=int(MessageSysFlag.TRANSACTION_COMMIT_TYPE)))
    plain = store.put_message(make_msg("TX", keys="plain"))
    assert prepared.append is not None and rollback.append is not None
    assert prepared.append.logics_offset == 0 and rollback.append.logics_offset == 0
    assert commit.append is not None and commit.append.logics_offset == 0
    assert plain.append is not None and plain.append.logics_offset == 1
    assert store.get_max_offset_in_queue("TX", 0) == 2  # prepared/rollback never reach the queue
    assert len(store.query_message("TX", "prep", 32, 0, 1 << 62).messages) == 1  # prepared is indexed
    assert store.query_message("TX", "rb", 32, 0, 1 << 62).messages == []  # rollback is not


def test_delay_rewrite(store: MessageStore) -> None:
    msg = make_msg("D", 3, props={"DELAY": "3", "WAIT": "true"})
    r = store.put_message(msg)
    assert r.is_ok and msg.topic == "SCHEDULE_TOPIC_XXXX" and msg.queue_id == 2
    stored = store.look_message_by_offset(r.append.wrote_offset)  # type: ignore[union-attr]
    assert stored is not None and stored.topic == "SCHEDULE_TOPIC_XXXX"
    assert stored.properties["REAL_TOPIC"] == "D" and stored.properties["REAL_QID"] == "3"
    unit = store.find_consume_queue("SCHEDULE_TOPIC_XXXX", 2).get_unit(0)  # type: ignore[union-attr]
    assert unit is not None and unit.tags_code == stored.store_timestamp + 10_000  # level 3 = 10s
    clamped = make_msg("D", 0, props={"DELAY": "99"})
    assert store.put_message(clamped).is_ok and clamped.queue_id == 17 and clamped.properties["DELAY"] == "18"
    assert store.put_message(make_msg("D", 0, props={"DELAY": "x"})).status is PutMessageStatus.MESSAGE_ILLEGAL
    # transactional half messages are not delayed
    half = make_msg("D", 0, props={"DELAY": "2"}, sys_flag=int(MessageSysFlag.TRANSACTION_PREPARED_TYPE))
    assert store.put_message(half).is_ok and half.topic == "D"


def test_hosts_and_sysflag(store: MessageStore) -> None:
    msg = make_msg(born_host="[2001:db8::1]:4000", store_host="[2001:db8::2]:10911")
    r = store.put_message(msg)
    assert r.append is not None and len(r.append.msg_id) == 56
    stored = store.look_message_by_offset(r.append.wrote_offset)
    assert stored is not None
    assert stored.sys_flag & int(MessageSysFlag.BORNHOST_V6_FLAG)
    assert stored.sys_flag & int(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
    assert stored.born_host == "2001:db8:0:0:0:0:0:1:4000"
    mapped = make_msg(born_host="[::ffff:10.1.2.3]:9", store_host="10.0.0.2:10911")
    r2 = store.put_message(mapped)
    assert r2.append is not None and len(r2.append.msg_id) == 32
    assert mapped.sys_flag & int(MessageSysFlag.BORNHOST_V6_FLAG) == 0


def test_illegal_messages(store: MessageStore) -> None:
    assert store.put_message(make_msg("x" * 128)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(make_msg(body=b"x" * CL_SIZE)).status is PutMessageStatus.MESSAGE_ILLEGAL
    big = make_msg(props={"p": "v" * 40000})
    assert store.put_message(big).status is PutMessageStatus.MESSAGE_ILLEGAL
    store.close()
    assert store.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert store.get_message("T", 0, 0) is None


def test_properties_string_is_stored_as_given(store: MessageStore) -> None:
    msg = make_msg(props={"WAIT": "true"})
    msg.properties_string = "TAGS\x01TagA\x02X\x01y"  # what the broker chose to store
    r = store.put_message(msg)
    stored = store.look_message_by_offset(r.append.wrote_offset)  # type: ignore[union-attr]
    assert stored is not None and stored._raw_properties == b"TAGS\x01TagA\x02X\x01y"


# -- restart and recovery ------------------------------------------------------------------------


def test_reopen_after_clean_close(tmp_path: Path) -> None:
    cfg = make_config(tmp_path)
    with MessageStore(cfg, clock=Clock()) as store:
        placed = fill(store, 70)
        assert (tmp_path / "abort").exists()
        assert (tmp_path / "lock").read_bytes() == b"lock"
        with pytest.raises(StoreError):
            MessageStore(cfg).open()  # the directory is locked
    assert not (tmp_path / "abort").exists()
    cp = sr.parse_checkpoint((tmp_path / "checkpoint").read_bytes())
    assert cp.physic_msg_timestamp > T0 and cp.logics_msg_timestamp > T0
    with MessageStore(cfg, clock=Clock(T0 + 1_000_000)) as store:
        rep = store.recovery
        assert rep is not None and rep.clean_shutdown and rep.dispatched == 0
        assert store.max_phy_offset == placed[-1][2] + store.commitlog.record_size_at(placed[-1][2])
        r = store.put_message(make_msg("T", 0, b"after"))
        assert r.append is not None and r.append.logics_offset == 35
        assert len(pull_all(store, "T", 1)) == 35
    assert check_store(str(tmp_path), cfg).ok


def crash(store: MessageStore) -> None:
    """Drop the store like a killed process: no flush, no checkpoint, abort file stays."""
    store._open = False
    store._release()


def test_crash_with_torn_tail(tmp_path: Path) -> None:
    cfg = make_config(tmp_path)
    store = MessageStore(cfg, clock=Clock())
    store.open()
    placed = fill(store, 30)
    last_phys = placed[-1][2]
    last_size = store.commitlog.record_size_at(last_phys)
    assert last_size is not None
    crash(store)
    path = tmp_path / "commitlog" / f"{last_phys - last_phys % CL_SIZE:020d}"
    data = bytearray(path.read_bytes())
    pos = last_phys % CL_SIZE
    data[pos + last_size // 2 : pos + last_size] = bytes(last_size - last_size // 2)  # the write was cut short
    path.write_bytes(bytes(data))
    report = check_store(str(tmp_path), cfg)
    assert report.ok and not report.clean_shutdown and any("torn" in w for w in report.warnings)
    with MessageStore(cfg, clock=Clock(T0 + 1_000_000)) as store:
        rep = store.recovery
        assert rep is not None and not rep.clean_shutdown
        assert rep.truncated_at == last_phys and rep.dropped_bytes > 0
        q = placed[-1][0]
        assert store.get_max_offset_in_queue("T", q) == placed[-1][1]  # the torn one is gone
        for qq, qoff, phys in placed[:-1]:
            got = store.get_message("T", qq, qoff, 1)
            assert got is not None and decode_message(got.messages[0]).commit_log_offset == phys
        assert store.query_message("T", "k29", 32, 0, 1 << 62).messages == []
        assert len(store.query_message("T", "k28", 32, 0, 1 << 62).messages) == 1
        # the next message takes the torn one's place and queue offset
        r = store.put_message(make_msg("T", q, b"again"))
        assert r.append is not None and r.append.wrote_offset == last_phys and r.append.logics_offset == placed[-1][1]
    assert check_store(str(tmp_path), cfg).ok


def test_crash_with_short_file_and_bad_crc(tmp_path: Path) -> None:
    cfg = make_config(tmp_path)
    store = MessageStore(cfg, clock=Clock())
    store.open()
    placed = fill(store, 8, queues=1)  # all in the first file
    crash(store)
    path = tmp_path / "commitlog" / "00000000000000000000"
    # flip a body byte of record 5: its CRC no longer matches
    phys5 = placed[5][2]
    data = bytearray(path.read_bytes())
    body_at = phys5 + BODY_POS_V4
    assert struct.unpack_from(">i", data, body_at - 4)[0] == 100  # the body length field
    data[body_at + 10] ^= 0xFF
    data = data[: placed[7][2] + 40]  # and the file itself was cut mid-record 7
    path.write_bytes(bytes(data))
    report = check_store(str(tmp_path), cfg)
    assert report.errors and any("CRC" in e for e in report.errors)  # a CRC error is damage, not a torn tail
    with MessageStore(cfg, clock=Clock(T0 + 1_000_000)) as store:
        assert os.path.getsize(path) == CL_SIZE  # extended back to its configured size
        assert store.recovery is not None and store.recovery.truncated_at == phys5
        assert store.get_max_offset_in_queue("T", 0) == 5


def test_crash_without_crc_check_keeps_corrupt_body(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, check_crc_on_recover=False)
    store = MessageStore(cfg, clock=Clock())
    store.open()
    placed = fill(store, 4, queues=1)
    crash(store)
    path = tmp_path / "commitlog" / "00000000000000000000"
    data = bytearray(path.read_bytes())
    data[placed[2][2] + BODY_POS_V4 + 3] ^= 0xFF
    path.write_bytes(bytes(data))
    with MessageStore(cfg, clock=Clock(T0 + 1_000_000)) as store:
        assert store.get_max_offset_in_queue("T", 0) == 4


def test_crash_rebuilds_consume_queue_and_index(tmp_path: Path) -> None:
    cfg = make_config(tmp_path)
    store = MessageStore(cfg, clock=Clock())
    store.open()
    placed = fill(store, 40)
    store.flush()
    crash(store)
    # the queues lost their tail (never flushed) and the index was never written out
    for q in (0, 1):
        qdir = tmp_path / "consumequeue" / "T" / str(q)
        files = sorted(os.listdir(qdir))
        for f in files[1:]:
            os.remove(qdir / f)
        first = qdir / files[0]
        data = bytearray(first.read_bytes())
        data[3 * sr.CQ_STORE_UNIT_SIZE :] = bytes(len(data) - 3 * sr.CQ_STORE_UNIT_SIZE)
        first.write_bytes(bytes(data))
    for f in os.listdir(tmp_path / "index"):
        os.remove(tmp_path / "index" / f)
    with MessageStore(cfg, clock=Clock(T0 + 1_000_000)) as store:
        for q, qoff, phys in placed:
            got = store.get_message("T", q, qoff, 1)
            assert got is not None and got.status is GetMessageStatus.FOUND
            assert decode_message(got.messages[0]).commit_log_offset == phys
        for i in (0, 21, 39):
            hits = store.query_message("T", f"k{i}", 32, 0, 1 << 62).messages
            assert placed[i][2] in [decode_message(h).commit_log_offset for h in hits]
    assert check_store(str(tmp_path), cfg).ok


def test_clean_restart_dispatches_lagging_queues(tmp_path: Path) -> None:
    cfg = make_config(tmp_path)
    with MessageStore(cfg, clock=Clock()) as store:
        placed = fill(store, 10, queues=1)
    qfile = tmp_path / "consumequeue" / "T" / "0" / f"{CQ_UNITS * sr.CQ_STORE_UNIT_SIZE:020d}"
    os.remove(qfile)  # units 8 and 9
    report = check_store(str(tmp_path), cfg)
    assert report.ok and any("behind" in w for w in report.warnings)
    with MessageStore(cfg, clock=Clock(T0 + 10**6)) as store:
        assert store.recovery is not None and store.recovery.dispatched == 2
        assert store.get_commit_log_offset_in_queue("T", 0, 9) == placed[9][2]


# -- flushing ---------------------------------------------------------------------------------------


class FlushLog:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []

    def __call__(self, path: str, start: int, end: int) -> None:
        self.calls.append((os.path.basename(path), start, end))

    def covered(self, offset: int) -> bool:
        """Did some msync reach CommitLog offset ``offset``?"""
        return any(
            len(name) == 20 and int(name) + end >= offset and int(name) <= offset for name, _s, end in self.calls
        )


async def test_sync_flush_acknowledges_only_after_msync(tmp_path: Path) -> None:
    flushes = FlushLog()
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    with MessageStore(cfg, clock=Clock(), sync_hook=flushes) as store:
        group = GroupCommitService(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            r = store.put_message(make_msg())
            assert r.is_ok and store.flushed_offset < r.flush_offset  # appended, not yet durable
            assert not flushes.covered(r.flush_offset)
            status = await group.wait_flushed(r.flush_offset)
            assert status is PutMessageStatus.PUT_OK
            assert flushes.covered(r.flush_offset) and store.flushed_offset >= r.flush_offset

            # many concurrent senders share flushes (group commit), across a file boundary too
            results: list[PutMessageStatus] = []

            async def send(i: int) -> None:
                res = store.put_message(make_msg(body=b"x" * 200, keys=f"g{i}"))
                results.append(await group.wait_flushed(res.flush_offset))

            rounds = group.rounds
            async with trio.open_nursery() as senders:
                for i in range(40):
                    senders.start_soon(send, i)
            assert results == [PutMessageStatus.PUT_OK] * 40
            assert group.rounds - rounds < 40
            assert store.flushed_offset == store.max_phy_offset
            nursery.cancel_scope.cancel()


async def test_group_commit_shortens_the_gil_switch_interval_while_it_runs(tmp_path: Path) -> None:
    """The flush thread must not wait 5 ms for the GIL after each msync: the switch interval is lowered while
    the group commit runs, and put back when it stops (it is process-wide)."""
    import sys

    from rocketpy.store.services import SWITCH_INTERVAL

    before = sys.getswitchinterval()
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    with MessageStore(cfg, clock=Clock()) as store:
        group = GroupCommitService(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            assert sys.getswitchinterval() == min(before, SWITCH_INTERVAL)
            nursery.cancel_scope.cancel()
    assert sys.getswitchinterval() == before


async def test_sync_flush_timeout(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    with MessageStore(cfg, clock=Clock()) as store:
        store.flush_until = lambda offset: False  # type: ignore[method-assign]  # a disk that never syncs
        store.sync_request = lambda offset: None  # type: ignore[method-assign]  # (nor before the GIL)
        group = GroupCommitService(store, timeout=0.2)
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            r = store.put_message(make_msg())
            assert await group.wait_flushed(r.flush_offset) is PutMessageStatus.FLUSH_DISK_TIMEOUT
            nursery.cancel_scope.cancel()


def test_put_message_and_flush(tmp_path: Path) -> None:
    flushes = FlushLog()
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    with MessageStore(cfg, clock=Clock(), sync_hook=flushes) as store:
        r = store.put_message_and_flush(make_msg())
        assert r.is_ok and flushes.covered(r.flush_offset)
        lazy = make_msg(props={"WAIT": "false"})
        r2 = store.put_message_and_flush(lazy)
        assert r2.is_ok and store.flushed_offset < r2.flush_offset


async def test_async_flush_services(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, flush_interval_commit_log=10, flush_interval_consume_queue=10)
    with MessageStore(cfg, clock=Clock()) as store:
        async with trio.open_nursery() as nursery:
            services = await StoreServices.start(store, nursery, clean=False)
            assert services.group_commit is None
            fill(store, 5)
            await wait_until(lambda: store.flushed_offset >= store.max_phy_offset, timeout=5)
            nursery.cancel_scope.cancel()


# -- retention and topics ----------------------------------------------------------------------------


def test_retention_deletes_only_expired_files(tmp_path: Path) -> None:
    cfg = make_config(tmp_path, file_reserved_time=1, delete_when="99")  # never the delete hour
    with MessageStore(cfg, clock=Clock(), disk_usage=lambda p: 0.1) as store:
        placed = fill(store, 80, queues=1)
        cl = tmp_path / "commitlog"
        files = sorted(os.listdir(cl))
        assert len(files) >= 5
        now = T0 + 10 * 3_600_000
        for f in files[:3]:
            os.utime(cl / f, ns=(0, (now - 2 * 3_600_000) * 1_000_000))  # older than 1 h
        for f in files[3:]:
            os.utime(cl / f, ns=(0, now * 1_000_000))
        assert store.clean_expired(now).commitlog == []  # not the hour, disk not full
        assert store.clean_expired(now, force=True).commitlog == []  # nothing flushed: nothing goes
        store.flush_until(store.max_phy_offset)
        res = store.clean_expired(now, force=True)
        assert sorted(os.path.basename(p) for p in res.commitlog) == files[:3]
        assert sorted(os.listdir(cl)) == files[3:]
        min_phys = int(files[3])
        assert store.min_phy_offset == min_phys
        assert res.consume_queue  # queue files wholly below the new min offset went too
        first_kept = min(i for i, (_q, _o, p) in enumerate(placed) if p >= min_phys)
        assert store.get_min_offset_in_queue("T", 0) == first_kept
        assert store.get_min_offset_in_queue("T", 0) > 0
        old = store.get_message("T", 0, 0, 1)
        assert old is not None and old.status is GetMessageStatus.OFFSET_TOO_SMALL
        assert old.next_begin_offset == first_kept
        got = store.get_message("T", 0, first_kept, 1)
        assert got is not None and got.status is GetMessageStatus.FOUND
        # the current file is never deleted, even when everything is expired
        for f in os.listdir(cl):
            os.utime(cl / f, ns=(0, 0))
        store.clean_expired(now, force=True)
        assert len(os.listdir(cl)) == 1
        assert store.put_message(make_msg()).is_ok


def test_retention_by_hour_and_disk_ratio(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import time
    from datetime import datetime

    now = int(time.time() * 1000) + 1000  # file ages come from their mtime: real time
    hour = datetime.fromtimestamp(now / 1000).hour
    cfg = make_config(tmp_path, file_reserved_time=0, delete_when=f"{(hour + 5) % 24};{hour}")
    with MessageStore(cfg, clock=Clock(), disk_usage=lambda p: 0.1) as store:
        fill(store, 40, queues=1)
        store.flush_until(store.max_phy_offset)
        n = len(os.listdir(tmp_path / "commitlog"))
        assert store.clean_expired(now + 3_600_000).commitlog == []  # an hour later: not a delete hour
        assert len(store.clean_expired(now).commitlog) == n - 1
    cfg2 = make_config(tmp_path / "b", file_reserved_time=1000, delete_when="99")
    usage = [0.5]
    with MessageStore(cfg2, clock=Clock(), disk_usage=lambda p: usage[0]) as store:
        fill(store, 40, queues=1)
        store.flush_until(store.max_phy_offset)
        assert store.clean_expired(T0).commitlog == []
        usage[0] = 0.87  # above the forcibly-clean ratio: unexpired files go too
        assert store.clean_expired(T0).commitlog
        usage[0] = 0.95  # above the warning level: writes refused until space is back
        with caplog.at_level(logging.INFO, logger="rocketpy.store"):
            store.clean_expired(T0)
            store.clean_expired(T0)  # still full: said once, as Java's store log says it
            assert store.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
            usage[0] = 0.5
            store.clean_expired(T0)
        assert store.put_message(make_msg()).is_ok
        errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        # one line: the logics check finds the DISK_FULL bit the physic one just set (getAndMakeDiskFull)
        assert errors == [f"physic disk maybe full soon 0.95, so mark disk full, storePathPhysic={cfg2.commit_log_dir}"]
        assert any(r.getMessage().startswith("physic disk space OK") for r in caplog.records)


def test_delete_topic(store: MessageStore, tmp_path: Path) -> None:
    fill(store, 6)
    store.put_message(make_msg("Keep"))
    assert store.delete_topics(["T"]) == 2
    assert not (tmp_path / "consumequeue" / "T").exists()
    got = store.get_message("T", 0, 0, 1)
    assert got is not None and got.status is GetMessageStatus.NO_MESSAGE_IN_QUEUE
    r = store.put_message(make_msg("T", 0))
    assert r.append is not None and r.append.logics_offset == 0  # offsets restart
    store.clean_unused_topic({"Keep"})
    assert store.topics() == ["Keep"]


# -- config files ---------------------------------------------------------------------------------------


def test_config_files_persist_with_bak(tmp_path: Path) -> None:
    from rocketpy.codecs.bodies.store_config import DelayOffsetSerializeWrapper

    files = BrokerConfigFiles(str(tmp_path))
    f = files.delay_offset
    assert f.load() is None
    f.persist(DelayOffsetSerializeWrapper(offset_table={1: 2}))
    assert not os.path.exists(f.bak_path)
    assert (tmp_path / "config" / "delayOffset.json").read_bytes() == b'{\n\t"offsetTable":{1:2\n\t}\n}'
    f.persist(DelayOffsetSerializeWrapper(offset_table={1: 3, 2: 1}))
    assert f.load().offset_table == {1: 3, 2: 1}  # type: ignore[union-attr]
    bak = f.doc_class.decode(open(f.bak_path, "rb").read())
    assert bak.offset_table == {1: 2}  # type: ignore[attr-defined]
    assert not os.path.exists(f.path + ".tmp")
    # an empty or broken file falls back to the .bak, like ConfigManager.load
    open(f.path, "w").close()
    assert f.load().offset_table == {1: 2}  # type: ignore[union-attr]
    open(f.path, "w").write("{oops")
    assert f.load().offset_table == {1: 2}  # type: ignore[union-attr]
    # neither parses: an error naming the file, never an empty table in its place
    open(f.bak_path, "w").write("{oops")
    with pytest.raises(config_files.ConfigFileUnreadable, match="delayOffset.json"):
        f.load()
    os.remove(f.bak_path)
    with pytest.raises(config_files.ConfigFileUnreadable, match="delayOffset.json does not parse and has no backup"):
        f.load()
    open(f.path, "w").close()  # an empty file and no .bak: nothing was ever written, Java's empty table
    assert f.load() is None


def test_config_from_properties() -> None:
    cfg = MessageStoreConfig.from_properties(
        "# c\nflushDiskType = SYNC_FLUSH\nmappedFileSizeConsumeQueue=100\ncheckCRCOnRecover=false\nunknownKey=1\n"
    )
    assert cfg.flush_disk_type == FlushDiskType.SYNC_FLUSH
    assert cfg.consume_queue_file_size == 100  # already a multiple of 20
    assert MessageStoreConfig(mapped_file_size_consume_queue=101).consume_queue_file_size == 120
    assert cfg.check_crc_on_recover is False
    d = MessageStoreConfig()
    assert (d.mapped_file_size_commit_log, d.file_reserved_time, d.delete_when) == (1 << 30, 72, "04")
    assert (d.flush_interval_commit_log, d.max_message_size, d.max_hash_slot_num) == (500, 4 << 20, 5_000_000)


def test_queue_recreated_mid_stream_is_pre_blanked(store: MessageStore, tmp_path: Path) -> None:
    fill(store, 11, queues=1)
    # The queue's files vanish while the CommitLog still counts its offsets (as on a slave,
    # or after an operator removed them): the next unit lands at offset 11 of a fresh file.
    cq = store.find_consume_queue("T", 0)
    assert cq is not None
    cq.destroy()
    del store.consume_queues["T"][0]
    r = store.put_message(make_msg("T", 0, b"late"))
    assert r.append is not None and r.append.logics_offset == 11
    assert store.get_min_offset_in_queue("T", 0) == 11 and store.get_max_offset_in_queue("T", 0) == 12
    first = (tmp_path / "consumequeue" / "T" / "0" / f"{CQ_UNITS * sr.CQ_STORE_UNIT_SIZE:020d}").read_bytes()
    units = list(sr.iter_consumequeue(first))
    assert [u.is_pre_blank for u in units] == [True, True, True, False]
    got = store.get_message("T", 0, 0, 4)
    assert got is not None and got.status is GetMessageStatus.OFFSET_TOO_SMALL and got.next_begin_offset == 11
    got = store.get_message("T", 0, 11, 4)
    assert got is not None and decode_message(got.messages[0]).body == b"late"


def test_replication_by_commitlog_data(store: MessageStore, tmp_path: Path) -> None:
    placed = fill(store, 30)
    slave_cfg = make_config(tmp_path / "slave")
    with MessageStore(slave_cfg) as slave:
        offset = 0
        while offset < store.max_phy_offset:
            chunk = store.get_commit_log_data(offset)
            assert chunk is not None and chunk[0] == offset
            assert slave.append_to_commit_log(offset, chunk[1])
            offset += len(chunk[1])
        assert slave.max_phy_offset == store.max_phy_offset
        for q, qoff, phys in placed:
            got = slave.get_message("T", q, qoff, 1)
            assert got is not None and decode_message(got.messages[0]).commit_log_offset == phys
        assert len(slave.query_message("T", "k12", 32, 0, 1 << 62).messages) == 1
