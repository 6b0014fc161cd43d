"""Mapped files' locks: a ConsumeQueue's files share 64 striped locks (a broker keeps thousands of them, and
two locks of their own each were two objects and two OS semaphores left scattered through memory by files made
while it served); the CommitLog's files keep locks of their own, so that no msync of theirs waits for another
file's."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rocketpy.store import mapped_file
from rocketpy.store.mapped_file import MappedFileQueue

pytestmark = pytest.mark.timeout(60)

SIZE = 4096


def _fill(mfq: MappedFileQueue, files: int) -> None:
    for _ in range(files):
        mf = mfq.get_last_mapped_file(0)
        assert mf is not None and mf.append(bytes(SIZE))


def test_consume_queue_files_share_the_striped_locks(tmp_path: Path) -> None:
    mfq = MappedFileQueue(str(tmp_path / "cq"), SIZE, shared_locks=True)
    _fill(mfq, 3 * mapped_file.LOCK_STRIPES)
    locks = {id(mf._lock) for mf in mfq.files} | {id(mf._write_lock) for mf in mfq.files}
    assert locks <= {id(lock) for lock in mapped_file._FILE_LOCKS + mapped_file._WRITE_LOCKS}
    # the files spread over the stripes: no one lock serialises a whole queue's flushes
    assert len({id(mf._lock) for mf in mfq.files}) == mapped_file.LOCK_STRIPES
    # loaded again from disk, the files take stripes too
    again = MappedFileQueue(str(tmp_path / "cq"), SIZE, shared_locks=True)
    again.load()
    assert len(again.files) == 3 * mapped_file.LOCK_STRIPES
    assert {id(mf._lock) for mf in again.files} <= {id(lock) for lock in mapped_file._FILE_LOCKS}
    mfq.close()
    again.close()


def test_a_commit_log_flush_never_waits_for_a_consume_queue_file(tmp_path: Path) -> None:
    # a ConsumeQueue file's msync holds its stripe (here: a sync hook that waits); meanwhile the CommitLog's
    # files, with locks of their own, flush and close
    inside, release = threading.Event(), threading.Event()

    def slow_sync(path: str, start: int, stop: int) -> None:
        inside.set()
        release.wait(30)

    cq = MappedFileQueue(str(tmp_path / "cq"), SIZE, sync_hook=slow_sync, shared_locks=True)
    _fill(cq, mapped_file.LOCK_STRIPES)  # every stripe has a file
    commit_log = MappedFileQueue(str(tmp_path / "commitlog"), SIZE)
    _fill(commit_log, 2)
    holders = [threading.Thread(target=mf.flush) for mf in cq.files]
    try:
        for t in holders:
            t.start()
        assert inside.wait(10)
        done = threading.Event()
        flusher = threading.Thread(target=lambda: (commit_log.flush_until(2 * SIZE), commit_log.close(), done.set()))
        flusher.start()
        assert done.wait(10), "the CommitLog's flush waited for a ConsumeQueue file's lock"
        flusher.join()
    finally:
        release.set()
        for t in holders:
            t.join()
        cq.close()
