"""A store whose disk fills: clean errors instead of SIGBUS, puts refused with SERVICE_NOT_AVAILABLE while
full and taken again after, ConsumeQueue and index writes caught up, config files never half written,
retention that never deletes what is not safely elsewhere. The filesystem filling is simulated by an
``allocate`` that fails (ENOSPC) for the paths chosen; tests/test_disk_full_broker.py does it for real
on a small tmpfs."""

from __future__ import annotations

import errno
import gc
import logging
import os
import types
from pathlib import Path

import pytest
from test_store import CL_SIZE, Clock, fill, make_config, make_msg, pull_all

from rocketpy.codecs import ResponseCode
from rocketpy.codecs.bodies.store_config import encode_config_file
from rocketpy.codecs.message import properties_to_string
from rocketpy.store import GetMessageStatus, MessageStore, PutMessageStatus
from rocketpy.store import mapped_file as mapped_file_module
from rocketpy.store.check import check_store
from rocketpy.store.config_files import ConfigFile, string_to_file
from rocketpy.store.consume_queue import ConsumeQueue
from rocketpy.store.ha import HAClient
from rocketpy.store.mapped_file import ALLOCATED_SLACK, MappedFile
from rocketpy.testing import broker_client, running_broker


class FullDisk:
    """``mapped_file.allocate`` that fails with ENOSPC for files whose path contains one of ``full``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full: set[str] = set()
        self.refused = 0
        real = mapped_file_module.allocate

        def allocate(fd: int, offset: int, length: int) -> None:
            path = os.readlink(f"/proc/self/fd/{fd}")
            if any(part in path for part in self.full):
                self.refused += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            real(fd, offset, length)

        monkeypatch.setattr(mapped_file_module, "allocate", allocate)


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> FullDisk:
    return FullDisk(monkeypatch)


def _errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_file_that_cannot_be_allocated_is_an_error_and_leaves_nothing(tmp_path: Path, disk: FullDisk) -> None:
    disk.full.add("cl")
    with pytest.raises(OSError) as info:
        MappedFile(str(tmp_path / "cl" / "00000000000000000000"), 1 << 20)
    assert info.value.errno == errno.ENOSPC
    assert os.listdir(tmp_path / "cl") == []
    # a file that can be made is allocated whole at once (du says so), or by chunks when asked
    mf = MappedFile(str(tmp_path / "ok" / "00000000000000000000"), 1 << 20)
    assert mf.allocated == 1 << 20 and os.stat(mf.path).st_blocks * 512 >= 1 << 20
    mf.destroy()
    mf = MappedFile(str(tmp_path / "ok" / "00000000000000000000"), 1 << 20, allocation_chunk=4096)
    assert mf.allocated == 4096 - ALLOCATED_SLACK  # what is past the write limit stays readable
    assert mf.append(b"x" * 5000) and mf.allocated >= 5000
    disk.full.add("ok")
    with pytest.raises(OSError):
        mf.append(b"y" * 8192)  # past the allocated part on a full disk: an error, nothing written
    assert mf.wrote_position == 5000 and mf.read(0, 5000) == b"x" * 5000
    mf.destroy()


def test_commitlog_file_refused_puts_answer_14_reads_go_on_and_puts_resume(
    tmp_path: Path, disk: FullDisk, caplog: pytest.LogCaptureFixture
) -> None:
    with MessageStore(make_config(tmp_path), clock=Clock(), disk_usage=lambda p: 0.5) as store:
        placed = fill(store, 20, queues=1)
        disk.full.add("/commitlog/")
        caplog.clear()
        statuses = []
        for _ in range(60):  # enough to need new files: the first that does is refused, and all after
            statuses.append(store.put_message(make_msg("T", 0, b"z" * 100)).status)
        assert PutMessageStatus.SERVICE_NOT_AVAILABLE in statuses
        first = statuses.index(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        assert set(statuses[first:]) == {PutMessageStatus.SERVICE_NOT_AVAILABLE}
        assert not store.writable
        # the send lanes' put refuses too (the broker then answers through put_message)
        assert append_plain(store, 0, None, None, "T", 0, *_plain_record(b"x")) is None
        errors = _errors(caplog)
        assert len(errors) == 1 and "so mark disk full" in errors[0] and "No space left" in errors[0]
        # everything acknowledged is still served
        assert len(pull_all(store, "T", 0)) == 20 + first
        assert store.flush_until(store.max_phy_offset)
        store.check_disk()  # still no room for the next file: still refused
        assert store.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        disk.full.clear()
        store.check_disk()
        assert store.writable
        r = store.put_message(make_msg("T", 0, b"after"))
        assert r.is_ok and r.append is not None and r.append.logics_offset == 20 + first
        assert placed[0][2] == 0
    report = check_store(str(tmp_path), make_config(tmp_path))
    assert report.ok, report.errors


def test_disk_ratio_past_the_warning_level_refuses_puts_until_below(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    usage = [0.5]
    with MessageStore(make_config(tmp_path), clock=Clock(), disk_usage=lambda p: usage[0]) as store:
        fill(store, 3)
        usage[0] = 0.95
        store.check_disk()
        assert not store.writable
        caplog.clear()
        for _ in range(3):
            assert store.put_message(make_msg()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        refusals = [r.getMessage() for r in caplog.records if "not writable" in r.getMessage()]
        assert len(refusals) == 1  # one line, not one per put (Java: every 50,000th)
        assert store.disk_util() == "CL:  0.95 CQ:  0.95 INDEX:  0.95"
        usage[0] = 0.86  # below the warning level: puts again
        store.check_disk()
        assert store.writable and store.put_message(make_msg()).is_ok


@pytest.mark.parametrize("path", ["put_message", "append_plain"])
def test_consume_queue_that_cannot_grow_is_caught_up_when_space_returns(
    tmp_path: Path, disk: FullDisk, path: str
) -> None:
    with MessageStore(make_config(tmp_path), clock=Clock(), disk_usage=lambda p: 0.5) as store:
        fill(store, 8, queues=1)  # queue 0's first file (8 units) is full now
        disk.full.add("/consumequeue/")
        if path == "put_message":
            r = store.put_message(make_msg("T", 0, b"stored"))
            assert r.is_ok  # in the CommitLog: acknowledged, dispatched later
        else:  # the send lanes' put, dispatched by settle (the compiled dispatch_plain when built)
            assert append_plain(store, 0, None, None, "T", 0, *_plain_record(b"stored")) is not None
            store.settle()
        assert not store.writable
        assert store.put_message(make_msg("T", 0, b"refused")).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.get_max_offset_in_queue("T", 0) == 8
        store.check_disk()  # the disk is still full: nothing changes
        assert not store.writable
        disk.full.clear()
        store.check_disk()
        assert store.writable
        assert store.get_max_offset_in_queue("T", 0) == 9
        got = store.get_message("T", 0, 8, 1)
        assert got is not None and got.status is GetMessageStatus.FOUND
        assert got.messages[0].endswith(b"stored") or b"stored" in got.messages[0]
        assert store.put_message(make_msg("T", 0, b"next")).is_ok
        assert store.get_max_offset_in_queue("T", 0) == 10
    assert check_store(str(tmp_path), make_config(tmp_path)).ok


def append_plain(store: MessageStore, tags_code: int, keys: str | None, uniq: str | None, topic: str, queue_id: int,
                 *record: object) -> object:
    """The send lane's put through the store's compiled appender (skips without the extension)."""
    if store.plain_appender is None:
        pytest.skip("the compiled extension is not built (ROCKETPY_PURE=1 or no compiler): no send lane")
    return store.plain_appender.put(topic, queue_id, *record, tags_code, keys, uniq)


def _plain_record(body: bytes, keys: str | None = None) -> tuple[object, ...]:
    """The appender's arguments after topic and queue id, for topic T (with a KEYS property)."""
    props = properties_to_string({"KEYS": keys}).encode() if keys else b""
    return (b"T", 0, 0, 1_700_000_000_000, bytes([10, 0, 0, 1]), 5555, bytes([10, 0, 0, 2]), 10911, 0, body, props)


def test_consume_queue_allocated_by_chunks_stops_at_the_chunk_the_disk_refuses(tmp_path: Path, disk: FullDisk) -> None:
    from rocketpy.store.consume_queue import ALLOCATION_CHUNK

    units = ALLOCATION_CHUNK // 20 + 50  # one file, past its first chunk
    cfg = make_config(tmp_path, mapped_file_size_consume_queue=20 * 2 * units, mapped_file_size_commit_log=1 << 20)
    with MessageStore(cfg, clock=Clock(), disk_usage=lambda p: 0.5) as store:
        assert store.put_message(make_msg("T", 0, b"b")).is_ok  # the first CommitLog file
        for _ in range(units - 101):
            assert append_plain(store, 0, None, None, "T", 0, *_plain_record(b"b")) is not None
        store.settle()
        disk.full.add("/consumequeue/")
        for _ in range(100):
            assert append_plain(store, 0, None, None, "T", 0, *_plain_record(b"b")) is not None
        store.settle()  # the unit past the first chunk finds no room: the queue stops there
        first_missing = (ALLOCATION_CHUNK - ALLOCATED_SLACK) // 20
        assert store.get_max_offset_in_queue("T", 0) == first_missing
        assert not store.writable and disk.refused >= 1
        disk.full.clear()
        store.check_disk()
        assert store.writable and store.get_max_offset_in_queue("T", 0) == units
        assert len(pull_all(store, "T", 0)) == units


def test_index_that_cannot_get_a_new_file_is_caught_up_when_space_returns(tmp_path: Path, disk: FullDisk) -> None:
    cfg = make_config(tmp_path, max_index_num=8)
    with MessageStore(cfg, clock=Clock(), disk_usage=lambda p: 0.5) as store:
        for i in range(7):  # an index file of 8 entries takes 7 keys (entry 0 is never used)
            assert store.put_message(make_msg("T", 0, b"b", keys=f"key{i}")).is_ok
        disk.full.add("/index/")
        assert store.put_message(make_msg("T", 0, b"b", keys="key7")).is_ok  # stored, not indexed
        assert not store.writable
        assert store.put_message(make_msg("T", 0, b"b", keys="key8")).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.query_message("T", "key7", 32, 0, 1 << 62).messages == []
        disk.full.clear()
        store.check_disk()
        assert store.writable
        assert store.put_message(make_msg("T", 0, b"b", keys="key8")).is_ok
        for i in range(9):
            found = store.query_message("T", f"key{i}", 32, 0, 1 << 62).messages
            assert len(found) == 1, i


def test_an_index_failure_keeps_no_frame_of_the_put_that_met_it(
    tmp_path: Path, disk: FullDisk, caplog: pytest.LogCaptureFixture
) -> None:
    # the index kept the last OSError, whose traceback held the frames of the put (and its message) alive
    cfg = make_config(tmp_path, max_index_num=8)
    with MessageStore(cfg, clock=Clock(), disk_usage=lambda p: 0.5) as store:
        for i in range(7):
            assert store.put_message(make_msg("T", 0, b"b", keys=f"key{i}")).is_ok
        disk.full.add("/index/")
        assert store.put_message(make_msg("T", 0, b"b", keys="key7")).is_ok  # stored, not indexed
        gc.collect()
        kept = [f for f in gc.get_objects() if isinstance(f, types.FrameType) and f.f_code.co_name == "put_message"]
        assert kept == []
        assert any(f"[Errno {errno.ENOSPC}] {os.strerror(errno.ENOSPC)}" in m for m in _errors(caplog))  # the cause


def test_forced_clean_up_keeps_the_current_file_and_unflushed_bytes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    usage = [0.95]  # past diskSpaceCleanForciblyRatio: files go whatever their age
    with MessageStore(make_config(tmp_path), clock=Clock(), disk_usage=lambda p: usage[0]) as store:
        fill(store, 60, queues=1)
        files = sorted(os.listdir(tmp_path / "commitlog"))
        assert len(files) >= 4
        assert store.clean_expired().commitlog == []  # nothing is on disk yet: nothing goes
        store.flush_commitlog(0)  # the first file only
        caplog.clear()
        gone = store.clean_expired().commitlog
        assert [os.path.basename(p) for p in gone] == files[:1]
        deletions = [r.getMessage() for r in caplog.records if r.getMessage().startswith("deleted CommitLog file")]
        assert deletions == [f"deleted CommitLog file {gone[0]}, offsets [0, {CL_SIZE}) (forcibly: disk space)"]
        assert store.flush_until(store.max_phy_offset)
        store.clean_expired()
        assert sorted(os.listdir(tmp_path / "commitlog")) == files[-1:]  # never the current file
        # the queue starts at the first unit still pointing into the CommitLog
        first = store.get_min_offset_in_queue("T", 0)
        got = store.get_message("T", 0, first, 1)
        assert got is not None and got.status is GetMessageStatus.FOUND
        assert store.get_message("T", 0, first - 1, 1).status is GetMessageStatus.OFFSET_TOO_SMALL
    report = check_store(str(tmp_path), make_config(tmp_path))
    assert report.ok, report.errors


def test_a_queue_whose_units_all_point_into_deleted_files_starts_after_them(tmp_path: Path) -> None:
    cq = ConsumeQueue("T", 0, str(tmp_path), 20 * 100)
    for i in range(5):
        assert cq.put(1000 + 100 * i, 100, 0, i)
    cq.correct_min_offset(5000)  # the CommitLog now starts past every unit
    assert cq.min_offset_in_queue == cq.max_offset_in_queue == 5
    cq.close()


def test_a_config_file_write_the_disk_refuses_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from rocketpy.broker.persist import persist_json
    from rocketpy.codecs.bodies import ConsumerOffsetSerializeWrapper
    from rocketpy.store import config_files

    path = str(tmp_path / "config" / "consumerOffset.json")
    old = ConsumerOffsetSerializeWrapper(offset_table={"T@G": {0: 5}})
    assert persist_json(path, old)
    assert persist_json(path, old)  # now there is a .bak too
    before = Path(path).read_bytes()
    assert before == encode_config_file(old) and Path(path + ".bak").read_bytes() == before

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(config_files.os, "fsync", no_space)
    new = ConsumerOffsetSerializeWrapper(offset_table={"T@G": {0: 6}})
    caplog.clear()
    assert not persist_json(path, new)
    assert not persist_json(path, new)
    assert len(_errors(caplog)) == 1  # once, not once per attempt
    assert Path(path).read_bytes() == before and Path(path + ".bak").read_bytes() == before
    assert sorted(os.listdir(tmp_path / "config")) == ["consumerOffset.json", "consumerOffset.json.bak"]
    monkeypatch.undo()
    assert persist_json(path, new)
    loaded = ConfigFile(path, ConsumerOffsetSerializeWrapper).load()
    assert loaded is not None and loaded.offset_table == {"T@G": {0: 6}}  # type: ignore[attr-defined]
    assert Path(path + ".bak").read_bytes() == before
    # string_to_file itself raises: nothing but the old files
    monkeypatch.setattr(config_files.os, "fsync", no_space)
    with pytest.raises(OSError):
        string_to_file("{}", path)
    assert sorted(os.listdir(tmp_path / "config")) == ["consumerOffset.json", "consumerOffset.json.bak"]


def test_a_slave_that_cannot_append_stops_and_resumes_from_the_same_offset(
    tmp_path: Path, disk: FullDisk, caplog: pytest.LogCaptureFixture
) -> None:
    master_cfg = make_config(tmp_path / "m")
    with MessageStore(master_cfg, clock=Clock(), disk_usage=lambda p: 0.5) as master:
        fill(master, 40, queues=1)
        data = master.commitlog.get_data(0)
        assert data is not None
        first_file = data[1]
    slave_cfg = make_config(tmp_path / "s", broker_role="SLAVE")
    with MessageStore(slave_cfg, clock=Clock(), disk_usage=lambda p: 0.5) as slave:
        client = HAClient(slave)
        disk.full.add(str(tmp_path / "s") + "/")
        caplog.clear()
        assert not client.append(0, first_file)
        assert not client.append(0, first_file)
        assert len(_errors(caplog)) == 1 and client.append_failing
        assert slave.max_phy_offset == 0
        disk.full.clear()
        assert client.append(0, first_file)
        assert slave.max_phy_offset == len(first_file) and not client.append_failing
        assert slave.commitlog.get_message(0, len(first_file)) == first_file


async def test_broker_answers_14_with_javas_remark_while_the_disk_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rocketpy.store import message_store

    usage = [0.5]
    monkeypatch.setattr(message_store, "disk_used_ratio", lambda p: usage[0])
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            assert (await c.send("TDisk", b"ok")).code == ResponseCode.SUCCESS
            usage[0] = 0.93
            broker.store.check_disk()
            for _ in range(2):  # the fast lane's put and the general one both refuse
                r = await c.send("TDisk", b"refused")
                assert r.code == ResponseCode.SERVICE_NOT_AVAILABLE
                assert r.remark == (
                    "service not available now. It may be caused by one of the following reasons: the broker's "
                    "disk is full [CL:  0.93 CQ:  0.93 INDEX:  0.93], messages are put to the slave, message "
                    "store has been shut down, etc."
                )
            usage[0] = 0.5
            broker.store.check_disk()
            assert (await c.send("TDisk", b"again")).code == ResponseCode.SUCCESS


def test_commitlog_and_index_allocated_by_chunks_fill_and_stop_cleanly(
    tmp_path: Path, disk: FullDisk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files bigger than their allocation chunk: the send lane's put and the compiled dispatch stop
    at the allocated end and leave the rest to the Python paths, which allocate (or fail cleanly)."""
    from rocketpy.store import commitlog, index

    monkeypatch.setattr(commitlog, "ALLOCATION_CHUNK", 8192)
    monkeypatch.setattr(index, "ALLOCATION_CHUNK", 4096)
    cfg = make_config(tmp_path, mapped_file_size_commit_log=64 * 1024, max_index_num=2000, max_hash_slot_num=100)
    with MessageStore(cfg, clock=Clock(), disk_usage=lambda p: 0.5) as store:
        assert store.put_message(make_msg("T", 0, b"first", keys="k0")).is_ok
        n = 1
        while store.commitlog.mfq.files[-1].wrote_position < 40 * 1024:  # past several chunks
            done = append_plain(store, 0, f"k{n}", None, "T", 0, *_plain_record(b"%d" % n, f"k{n}"))
            if done is None:  # the chunk's end: the general put allocates the next one
                assert store.put_message(make_msg("T", 0, b"%d" % n, keys=f"k{n}")).is_ok
            n += 1
        store.settle()
        last = store.commitlog.mfq.files[-1]
        assert last.wrote_position <= last.allocated < last.file_size
        disk.full.add("/commitlog/")
        refused = 0
        for _ in range(200):  # until the next chunk is needed: refused, never a fault
            if append_plain(store, 0, None, None, "T", 0, *_plain_record(b"x" * 200)) is not None:
                continue
            if store.put_message(make_msg("T", 0, b"x" * 200)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
                refused += 1
        store.settle()
        assert refused > 0 and not store.writable
        assert last.wrote_position <= last.allocated
        disk.full.clear()
        store.check_disk()
        assert store.writable and store.put_message(make_msg("T", 0, b"again")).is_ok
        for i in range(n):
            assert len(store.query_message("T", f"k{i}", 32, 0, 1 << 62).messages) == 1, i
        assert store.index is not None and store.index.files[-1].mf.allocated < store.index.files[-1].mf.file_size
    assert check_store(str(tmp_path), cfg).ok


async def test_send_lane_crosses_allocation_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rocketpy.store import commitlog

    monkeypatch.setattr(commitlog, "ALLOCATION_CHUNK", 16 * 1024)
    async with running_broker(str(tmp_path), mappedFileSizeCommitLog=str(256 * 1024)) as broker:
        async with broker_client(broker.address) as c:
            for i in range(300):  # 300 KiB: chunk after chunk, and a new file
                assert (await c.send("TChunks", b"%04d" % i + b"x" * 1000)).code == ResponseCode.SUCCESS
            resp, msgs = await c.pull("G", "TChunks", 0, 0, max_nums=32)
            assert resp.code == ResponseCode.SUCCESS and msgs[0].body.startswith(b"0000")
        files = broker.store.commitlog.mfq.files
        assert len(files) == 2 and all(f.wrote_position <= f.allocated for f in files)
        assert files[-1].allocated < files[-1].file_size


def test_a_filesystem_that_cannot_preallocate_keeps_files_sparse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def unsupported(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))

    monkeypatch.setattr(mapped_file_module.os, "posix_fallocate", unsupported)
    monkeypatch.setattr(mapped_file_module, "_unsupported_logged", False)
    with MessageStore(make_config(tmp_path), clock=Clock(), disk_usage=lambda p: 0.5) as store:
        fill(store, 30)  # several files: every put taken (not refused for want of preallocation)
        assert store.writable
    warnings = [r.getMessage() for r in caplog.records if "cannot preallocate" in r.getMessage()]
    assert len(warnings) == 1


@pytest.mark.parametrize("path", ["put_message", "append_plain"])
def test_index_that_cannot_grow_its_file_is_caught_up_in_order(
    tmp_path: Path, disk: FullDisk, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    from rocketpy.store import index

    monkeypatch.setattr(index, "ALLOCATION_CHUNK", 4096)  # about 200 entries a chunk
    cfg = make_config(tmp_path, mapped_file_size_commit_log=256 * 1024, max_index_num=2000, max_hash_slot_num=100)
    with MessageStore(cfg, clock=Clock(), disk_usage=lambda p: 0.5) as store:
        assert store.put_message(make_msg("T", 0, b"0", keys="k0")).is_ok
        acked = [0]
        for i in range(1, 400):
            if i == 150:
                disk.full.add("/index/")
            if path == "put_message":
                ok = store.put_message(make_msg("T", 0, b"%d" % i, keys=f"k{i}")).is_ok
            else:
                ok = append_plain(store, 0, f"k{i}", None, "T", 0, *_plain_record(b"%d" % i, f"k{i}")) is not None
                store.settle()
            if ok:
                acked.append(i)
        assert 150 < len(acked) < 400 and not store.writable  # the index's next chunk was refused
        disk.full.clear()
        store.check_disk()
        assert store.writable
        for i in acked:
            assert len(store.query_message("T", f"k{i}", 32, 0, 1 << 62).messages) == 1, i
    assert check_store(str(tmp_path), cfg).ok
