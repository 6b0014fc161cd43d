"""The CommitLog file being written takes its appends by pwrite (MappedFile.advise_writing): the bytes are
those a write through the mapping makes, readers of the mapping see them, an msync of the range makes them
durable, and a write that cannot be done refuses the put cleanly (no SIGBUS, nothing acknowledged)."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import random
from pathlib import Path

import pytest
from test_store import CL_SIZE, Clock, make_config, make_msg, pull_all

from rocketpy.accel import compiled
from rocketpy.codecs.message import decode_message
from rocketpy.store import MessageStore, PutMessageStatus
from rocketpy.store import mapped_file as mapped_file_module
from rocketpy.store.check import check_store
from rocketpy.store.mapped_file import MappedFile

pytestmark = pytest.mark.timeout(60)

needs_appender = pytest.mark.skipif(
    compiled("PlainAppender") is None, reason="no compiled appender without the accelerated build"
)


def _file_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _commitlog_bytes(store: MessageStore) -> dict[str, bytes]:
    return {mf.file_name: _file_bytes(mf.path) for mf in store.commitlog.mfq.files}


def test_appends_by_pwrite_make_the_bytes_a_write_through_the_mapping_makes(tmp_path: Path) -> None:
    rnd = random.Random(7)
    size = 64 * 1024
    written = MappedFile(str(tmp_path / "w" / "00000000000000000000"), size, allocation_chunk=8192)
    mapped = MappedFile(str(tmp_path / "m" / "00000000000000000000"), size, allocation_chunk=8192)
    written.advise_writing(True)
    assert written.write_fd >= 0 and mapped.write_fd == -1
    while True:
        data = rnd.randbytes(rnd.choice((1, 100, 4095, 4096, 5000, 16 * 1024 + 7)))
        ok = written.append(data)
        assert mapped.append(data) == ok
        if not ok:
            break
        # readers of the mapping see what pwrite wrote, at once
        assert written.read(written.wrote_position - len(data), len(data)) == data
    for mf in (written, mapped):
        mf.write_at(100, b"overwritten")
    assert written.wrote_position == mapped.wrote_position > size - 16 * 1024 - 8
    assert _file_bytes(written.path) == _file_bytes(mapped.path)
    assert written.read_from(0) == mapped.read_from(0)
    # once only read, no descriptor is kept; writes go through the mapping again
    written.advise_writing(False)
    assert written.write_fd == -1
    written.write_at(0, b"again")
    assert _file_bytes(written.path)[:5] == b"again"
    written.advise_writing(True)
    written.close()  # closing lets the descriptor go too
    assert written.write_fd == -1
    written.advise_writing(True)  # a closed file takes no advice and opens nothing
    assert written.write_fd == -1
    mapped.close()


def cachestat(path: str) -> tuple[int, int] | None:
    """(cached, dirty) page-cache pages of the file (Linux >= 6.5's cachestat), or None where it cannot be
    told."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    crange = (ctypes.c_uint64 * 2)(0, 0)  # off, len (0: to the end)
    cstat = (ctypes.c_uint64 * 5)()  # cache, dirty, writeback, evicted, recently_evicted
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.syscall(451, fd, crange, cstat, 0) != 0:  # __NR_cachestat on both
            return None
    finally:
        os.close(fd)
    return int(cstat[0]), int(cstat[1])


def _cachestat_dirty(path: str) -> int | None:
    """Dirty page-cache pages of the file, or None where it cannot be told."""
    stat = cachestat(path)
    return None if stat is None else stat[1]


def test_an_msync_of_the_range_flushes_what_pwrite_wrote(tmp_path: Path) -> None:
    flushed: list[tuple[int, int]] = []
    path = str(tmp_path / "00000000000000000000")
    mf = MappedFile(path, 1 << 20, sync_hook=lambda p, start, stop: flushed.append((start, stop)))
    mf.advise_writing(True)
    assert mf.append(os.urandom(3 * 4096 + 100))
    dirty = _cachestat_dirty(mf.path)
    if dirty is None:
        mf.close()
        pytest.skip("cachestat (Linux 6.5) is not available here")
    assert dirty >= 3  # written by pwrite, not yet on disk
    assert mf.flush() == 3 * 4096 + 100
    assert flushed == [(0, 3 * 4096 + 100)]
    assert _cachestat_dirty(mf.path) == 0
    mf.close()


@needs_appender
def test_the_compiled_appender_writes_the_same_records_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The send lane's appender pwritev's a record from its parts; where the file cannot be opened for
    that, it writes through the mapping: the stores hold the same bytes, records across file ends included."""
    bodies = [os.urandom(n) for n in (1, 300, 1000, 17, 2500, 64, 999, 1500, 3000, 5)] * 3

    def run(root: Path, by_pwrite: bool) -> dict[str, bytes]:
        with MessageStore(make_config(root), clock=Clock()) as store:
            appender = store.plain_appender
            assert appender is not None
            general = 0
            for i, body in enumerate(bodies):
                topic = "TopicA" if i % 3 else "T"
                props = f"KEYS\x01k{i}\x02TAGS\x01t\x02UNIQ_KEY\x01U{i:030d}".encode()
                args = (topic, i % 2, topic.encode(), 0, 0, 1_700_000_000_000 + i, b"\x0a\x00\x00\x01", 5555,
                        b"\x0a\x00\x00\x02", 10911, 0, body, props)
                if appender.put(*args) is None:  # the record does not fit: put_message ends the file
                    general += 1
                    r = store.put_message(make_msg(topic, i % 2, body))
                    assert r.is_ok
                assert (store.commitlog.mfq.files[-1].write_fd >= 0) is by_pwrite
            store.settle()
            # the appender wrote all but the first record and each file's last try
            assert general <= len(store.commitlog.mfq.files)
            return _commitlog_bytes(store)

    by_pwrite = run(tmp_path / "pwrite", True)
    real_open = os.open

    def no_second_open(path: str, flags: int, *args: int) -> int:
        if flags & os.O_CLOEXEC:  # advise_writing's descriptor
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))
        return real_open(path, flags, *args)

    monkeypatch.setattr(mapped_file_module.os, "open", no_second_open)
    by_mapping = run(tmp_path / "mapping", False)
    monkeypatch.undo()
    assert len(by_pwrite) >= 3
    assert by_pwrite == by_mapping


def test_a_write_that_fails_refuses_the_put_and_the_store_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """pwrite failing (a full or failing disk) is an error answer, not a crash: the put is refused with
    SERVICE_NOT_AVAILABLE (14), nothing is acknowledged or visible, and once the disk takes writes again
    the store takes puts, every acknowledged message is read back and `store check` is clean."""
    cfg = make_config(tmp_path)
    with MessageStore(cfg, clock=Clock(), disk_usage=lambda p: 0.5) as store:
        assert store.put_message(make_msg(body=b"before")).is_ok
        real_pwrite = os.pwrite
        failing = [True]

        def pwrite(fd: int, data: bytes, offset: int) -> int:
            if failing[0]:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real_pwrite(fd, data, offset)

        monkeypatch.setattr(mapped_file_module.os, "pwrite", pwrite)
        before = store.commitlog.max_offset
        r = store.put_message(make_msg(body=b"refused"))
        assert r.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert store.commitlog.max_offset == before
        failing[0] = False
        store.check_disk()  # (the store's periodic check: the CommitLog file can be written again)
        accepted = []
        for i in range(CL_SIZE // 200 * 3):  # across file ends (the blank records are written by pwrite too)
            body = f"after-{i}".encode().ljust(150, b".")
            r = store.put_message(make_msg(body=body))
            assert r.is_ok, r.status
            accepted.append(body)
        got = [decode_message(record).body for record in pull_all(store, "T", 0)]
        assert got == [b"before", *accepted]
    report = check_store(str(tmp_path), cfg)
    assert report.ok, report.errors


@needs_appender
@pytest.mark.parametrize(("topic_len", "host_len"), [(130, 4), (10, 8)])
def test_the_compiled_appender_leaves_a_record_its_buffers_cannot_hold_to_put_message(
    tmp_path: Path, topic_len: int, host_len: int
) -> None:
    """PlainAppender.put is callable from Python with any topic and hosts: a topic over 127 bytes (Java's
    limit; the record's fixed-size buffers hold no more) or a host that is neither IPv4 nor IPv6 is not
    the plain case, so it answers None (put_message decides) and writes nothing."""
    with MessageStore(make_config(tmp_path), clock=Clock()) as store:
        appender = store.plain_appender
        assert appender is not None
        ok = ("TopicA", 0, b"TopicA", 0, 0, 1_700_000_000_000, b"\x0a\x00\x00\x01", 5555, b"\x0a\x00\x00\x02",
              10911, 0, b"x", b"")
        assert store.put_message(make_msg("TopicA", 0, b"first")).is_ok  # (the file exists)
        assert appender.put(*ok) is not None  # (and takes plain records)
        mf = store.commitlog.mfq.files[-1]
        before = mf.wrote_position
        topic = "T" * topic_len
        host = bytes(range(1, host_len + 1))
        odd = (topic, 0, topic.encode(), 0, 0, 1_700_000_000_001, host, 5555, b"\x0a\x00\x00\x02", 10911, 0,
               b"y", b"")
        assert appender.put(*odd) is None
        assert mf.wrote_position == before


def test_closing_the_file_waits_for_a_pwrite_under_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A put from Python lets the GIL go in pwrite; a close from another thread (shutdown, a flush worker) must not
    close the descriptor under it, or its number could be handed to another file and the record written there."""
    import threading

    mf = MappedFile(str(tmp_path / f"{0:020d}"), 1 << 16)
    mf.advise_writing(True)
    assert mf.write_fd >= 0
    in_write, release = threading.Event(), threading.Event()
    real_pwrite = os.pwrite
    closed_during_write: list[bool] = []
    fd_closes: list[int] = []
    real_close = os.close

    def slow_pwrite(fd: int, data: bytes, pos: int) -> int:
        in_write.set()
        release.wait(5)
        closed_during_write.append(bool(fd_closes))
        return real_pwrite(fd, data, pos)

    def watching_close(fd: int) -> None:
        fd_closes.append(fd)
        real_close(fd)

    monkeypatch.setattr(mapped_file_module.os, "pwrite", slow_pwrite)
    monkeypatch.setattr(mapped_file_module.os, "close", watching_close)
    writer = threading.Thread(target=mf.append, args=(b"x" * 100,))
    writer.start()
    assert in_write.wait(5)
    closer = threading.Thread(target=mf.close)
    closer.start()
    closer.join(0.2)
    release.set()
    writer.join(5)
    closer.join(5)
    assert closed_during_write == [False]  # the descriptor was still open for the write
    assert mf.write_fd == -1
    with open(tmp_path / f"{0:020d}", "rb") as f:
        assert f.read(100) == b"x" * 100
