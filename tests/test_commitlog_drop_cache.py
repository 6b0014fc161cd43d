"""The CommitLog's page cache dropped behind the flushed offset (MappedFileQueue.drop_cached).

What a user relies on: pages of records flushed more than ``drop_behind`` bytes ago leave the page cache
(so new appends recycle them instead of taking fresh memory), nothing unflushed or recent is dropped, the
records still read back the same (from disk), and the group commit's flush thread does it after its rounds.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import trio
import trio.testing
from hypothesis import given
from hypothesis import strategies as st
from test_commitlog_pwrite import cachestat
from test_group_commit import hold, running_group
from test_store import Clock, make_config, make_msg

from rocketpy.store import MessageStore, commitlog, services
from rocketpy.store.free_page_reporting import reports_free_pages
from rocketpy.store.mapped_file import MappedFileQueue, drop_plan

pytestmark = pytest.mark.timeout(60)

KIB = 1024


def _cached_pages(path: str) -> int | None:
    stat = cachestat(path)
    return None if stat is None else stat[0]


def _needs_droppable_cache(tmp_path: Path) -> None:
    """Skip where the page cache cannot be looked at, or where the filesystem keeps what fadvise drops
    (tmpfs: its pages are the file)."""
    probe = tmp_path / "probe"
    probe.write_bytes(os.urandom(16 * KIB))
    fd = os.open(probe, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    cached = _cached_pages(str(probe))
    probe.unlink()
    if cached is None:
        pytest.skip("cachestat (Linux 6.5) is not available here")
    if cached:
        pytest.skip("this filesystem keeps the pages fadvise(DONTNEED) drops (tmpfs?)")


@given(
    dropped_steps=st.integers(0, 40),
    flushed=st.integers(0, 1 << 22),
    behind=st.integers(0, 1 << 20),
    file_kib=st.sampled_from([64, 96, 256, 1024]),
    step_kib=st.sampled_from([16, 64, 100]),
    most_steps=st.integers(1, 8),
)
def test_drop_plan_takes_whole_steps_below_the_window_never_across_a_file_end(
    dropped_steps: int, flushed: int, behind: int, file_kib: int, step_kib: int, most_steps: int
) -> None:
    file_size, step = file_kib * KIB, step_kib * KIB
    dropped = dropped_steps * step
    most = most_steps * step
    plan = drop_plan(dropped, flushed, behind, file_size, step=step, most=most)
    where = dropped
    for start, length in plan:
        assert start == where  # contiguous from where the last call stopped
        assert 0 < length <= step
        assert start // file_size == (start + length - 1) // file_size  # within one file
        assert length == step or (start + length) % file_size == 0  # short only at a file end
        where = start + length
    assert where <= max(dropped, flushed - behind)  # nothing within the window or unflushed
    assert where - dropped <= most
    # it stopped only where the next piece would cross the limit
    limit = min(flushed - behind, dropped + most)
    assert where + min(step, file_size - where % file_size) > limit


def test_pages_behind_the_window_leave_the_cache_and_records_still_read(tmp_path: Path) -> None:
    _needs_droppable_cache(tmp_path)
    file_size = 64 * KIB
    mfq = MappedFileQueue(str(tmp_path / "commitlog"), file_size, write_pages=True, drop_behind=file_size)
    assert mfq.drop_cached() == 0  # nothing flushed yet: starts at 0
    records = [os.urandom(8 * KIB) for _ in range(4 * file_size // (8 * KIB))]
    for i, data in enumerate(records[:-1]):
        mf = mfq.get_last_mapped_file()
        assert mf is not None and mf.append(data)
        if i == len(records) // 2:
            mfq.flush_until(mfq.max_offset)
    mfq.flush(0)  # the last file's end stays unflushed: never dropped
    files = list(mfq.files)
    assert len(files) == 4
    unflushed = mfq.max_offset - mfq.flushed_where
    assert mfq.drop_cached() == 2 * file_size  # the two files wholly behind the window
    assert [_cached_pages(f.path) for f in files[:2]] == [0, 0]
    assert all(_cached_pages(f.path) for f in files[2:])  # within the window: kept
    assert mfq.drop_cached() == 0  # nothing more until more is flushed
    assert mfq.max_offset - mfq.flushed_where == unflushed
    for i, data in enumerate(records[:-1]):  # read back from disk
        mf = mfq.find_by_offset(i * len(data))
        assert mf is not None and mf.read(i * len(data) % file_size, len(data)) == data
    mfq.close()


def test_a_queue_without_a_window_drops_nothing(tmp_path: Path) -> None:
    mfq = MappedFileQueue(str(tmp_path / "cq"), 16 * KIB)
    for _ in range(4):
        mf = mfq.get_last_mapped_file()
        assert mf is not None and mf.append(os.urandom(16 * KIB))
    mfq.flush_until(mfq.max_offset)
    assert mfq.drop_cached() == 0
    mfq.close()


async def test_the_group_commit_drops_what_it_flushed_long_ago(tmp_path: Path) -> None:
    """SYNC_FLUSH: after its rounds the flush thread drops the pages behind the window; the last file's
    stay."""
    _needs_droppable_cache(tmp_path)
    async with running_group(tmp_path) as (store, group):
        mfq = store.commitlog.mfq
        mfq.drop_behind = 2 * mfq.mapped_file_size
        token = trio.lowlevel.current_trio_token()
        while len(mfq.files) < 6:
            answer = hold(store, group, token, keys="k" * 200)
            await answer.event.wait()
        first, last = mfq.files[0], mfq.files[-1]
        with trio.fail_after(10):
            while _cached_pages(first.path):
                await trio.sleep(0.01)
        assert _cached_pages(last.path)
        assert store.flushed_offset == mfq.max_offset


async def test_the_async_flush_service_drops_what_it_flushed_long_ago(
    tmp_path: Path, virtual_clock: trio.testing.MockClock
) -> None:
    """ASYNC_FLUSH: FlushRealTimeService's rounds drop the pages behind the window too."""
    _needs_droppable_cache(tmp_path)
    cfg = make_config(tmp_path, mapped_file_size_commit_log=16 * KIB)
    with trio.fail_after(60), MessageStore(cfg, clock=Clock()) as store:
        mfq = store.commitlog.mfq
        mfq.drop_behind = 2 * mfq.mapped_file_size
        async with trio.open_nursery() as nursery:
            await nursery.start(services.flush_commitlog_service, store)
            await trio.sleep(1)  # a first round: the window starts at the empty CommitLog
            while len(mfq.files) < 6:
                assert store.put_message(make_msg(body=os.urandom(2 * KIB))).is_ok
            first, last = mfq.files[0], mfq.files[-1]
            while _cached_pages(first.path):
                await trio.sleep(1)  # flushIntervalCommitLog is 500 ms
            assert _cached_pages(last.path)
            nursery.cancel_scope.cancel()


def _virtio(root: Path, name: str, device: str, features: str | None, bound: bool = True) -> None:
    dev = root / "bus" / "virtio" / "devices" / name
    dev.mkdir(parents=True)
    (dev / "device").write_text(device + "\n")
    if features is not None:
        (dev / "features").write_text(features + "\n")
    if bound:
        (dev / "driver").mkdir()


def test_only_a_balloon_that_reports_free_pages_turns_the_drop_on(tmp_path: Path) -> None:
    """The CommitLog drops its old pages on a VM that hands free memory back to its host, nowhere else."""
    reporting = "011001" + "0" * 58  # this machine's balloon: STATS_VQ, DEFLATE_ON_OOM, REPORTING (bit 5)
    assert not reports_free_pages(str(tmp_path / "none"))  # no virtio bus (bare metal, another OS)
    _virtio(tmp_path / "a", "virtio0", "0x0005", "0110000" + "0" * 57)  # a balloon without reporting
    _virtio(tmp_path / "a", "virtio1", "0x0002", reporting)  # a block device: bit 5 is not REPORTING there
    assert not reports_free_pages(str(tmp_path / "a"))
    _virtio(tmp_path / "b", "virtio0", "0x0005", reporting, bound=False)  # no driver: nothing negotiated
    _virtio(tmp_path / "b", "virtio1", "junk", reporting)
    assert not reports_free_pages(str(tmp_path / "b"))
    _virtio(tmp_path / "c", "virtio3", "0x0005", reporting)
    assert reports_free_pages(str(tmp_path / "c"))


def test_the_commitlog_window_follows_the_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for reports, window in ((True, commitlog.DROP_BEHIND), (False, 0)):
        monkeypatch.setattr(commitlog, "reports_free_pages_here", lambda reports=reports: reports)
        store = MessageStore(make_config(tmp_path / str(reports)), clock=Clock())
        store.open()
        try:
            assert store.commitlog.mfq.drop_behind == window
        finally:
            store.close()


def test_pages_a_reader_mapped_leave_the_cache_too(tmp_path: Path) -> None:
    """Consumers read the CommitLog through its mapping, which maps the pages they touch; fadvise alone
    leaves mapped pages in the cache, so records read once would never be dropped."""
    _needs_droppable_cache(tmp_path)
    file_size = 64 * KIB
    mfq = MappedFileQueue(str(tmp_path / "commitlog"), file_size, write_pages=True, drop_behind=file_size)
    records = [os.urandom(8 * KIB) for _ in range(3 * file_size // (8 * KIB))]
    for data in records:
        mf = mfq.get_last_mapped_file()
        assert mf is not None and mf.append(data)
    mfq.flush_until(mfq.max_offset)
    for i, data in enumerate(records):  # a consumer reads everything once
        mf = mfq.find_by_offset(i * len(data))
        assert mf is not None and mf.read(i * len(data) % file_size, len(data)) == data
    files = list(mfq.files)
    assert all(_cached_pages(f.path) for f in files)
    assert mfq.drop_cached() == 2 * file_size
    assert [_cached_pages(f.path) for f in files[:2]] == [0, 0]
    assert _cached_pages(files[2].path)  # within the window: kept
    for i, data in enumerate(records):  # and they still read back (from disk)
        mf = mfq.find_by_offset(i * len(data))
        assert mf is not None and mf.read(i * len(data) % file_size, len(data)) == data
    mfq.close()
