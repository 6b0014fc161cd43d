"""The group commit's wake-up (rocketpy.store.flush_wake): the compiled FlushWake against its reference,
and the early msync it does never acknowledging what is not on disk."""

from __future__ import annotations

import errno
import mmap
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from test_group_commit import Answer
from test_store import Clock, FlushLog, make_config, make_msg

from rocketpy.accel import compiled
from rocketpy.store import MessageStore, PutMessageStatus
from rocketpy.store import flush_wake as flush_wake_module
from rocketpy.store.config import FlushDiskType
from rocketpy.store.flush_wake import PyFlushWake
from rocketpy.store.mapped_file import MappedFile
from rocketpy.store.msync import address_of
from rocketpy.store.services import GroupCommitService

pytestmark = pytest.mark.timeout(60)

FastFlushWake = compiled("FlushWake")
PAGES = 4
FORMS = [PyFlushWake] + ([FastFlushWake] if FastFlushWake is not None else [])


@pytest.fixture(scope="module")
def mapping(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[mmap.mmap, int]]:
    path = tmp_path_factory.mktemp("wake") / "f"
    with open(path, "wb") as f:
        f.truncate(PAGES * mmap.PAGESIZE)
    with open(path, "r+b") as f:
        mm = mmap.mmap(f.fileno(), PAGES * mmap.PAGESIZE)
    address = address_of(mm)
    if address is None:
        pytest.skip("no libc msync here")
    yield mm, address
    mm.close()


class Owner:
    pass


OWNERS = [Owner(), Owner()]
# a post: target, which owner (None: no range), whether at the mapping's address (else one byte in:
# msync refuses it), start page, length
posts = st.lists(
    st.tuples(
        st.integers(0, 10**6),
        st.sampled_from([None, 0, 1]),
        st.booleans(),
        st.integers(0, PAGES - 1),
        st.integers(0, mmap.PAGESIZE),
        st.integers(0, 300),  # the requests the post counts
    ),
    max_size=6,
)


@pytest.mark.skipif(FastFlushWake is None, reason="the accelerated build is not here")
@settings(max_examples=200, deadline=None)
@given(rounds=st.lists(posts, max_size=4))
def test_compiled_wake_returns_what_the_reference_returns(mapping: tuple[mmap.mmap, int], rounds: Any) -> None:
    """Same posts, same answers from wait: the highest target, one range over the same file's ranges,
    no range once two files (or a post without one) meet, and msync's errno for the range."""
    _, address = mapping
    forms = [PyFlushWake(), FastFlushWake()]
    for batch in rounds:
        for target, which, aligned, page, length, count in batch:
            at = address if aligned else address + 1
            start = page * mmap.PAGESIZE
            for wake in forms:
                if which is None:
                    wake.post(target, count=count)
                else:
                    wake.post(target, OWNERS[which], at, start, start + length, target // 7, count=count)
        assert [wake.pending() for wake in forms] == [sum(b[-1] for b in batch)] * 2
        # asked to gather more than was posted, with no time to: the same as without
        results = [wake.wait(0, until=10**4, linger=0.0) for wake in forms]
        assert results[0] == results[1]
        assert [wake.pending() for wake in forms] == [0, 0]
        if batch:
            assert results[0] is not None and results[0][0] == max(t for t, *_ in batch)
        else:
            assert results[0] is None


@pytest.mark.parametrize("form", FORMS)
def test_wait_sleeps_until_posted_or_stopped(form: Any, mapping: tuple[mmap.mmap, int]) -> None:
    mm, address = mapping
    wake = form()
    assert wake.wait(0.01) is None  # nothing posted: the timeout
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(wake.wait()))
    waiter.start()
    mm[:5] = b"early"
    wake.post(5, OWNERS[0], address, 0, 5, 1)
    waiter.join(10)
    assert got == [(5, OWNERS[0], 0, 5, 1, 0)] and wake.sync_seconds > 0
    waiter = threading.Thread(target=lambda: got.append(wake.wait()))
    waiter.start()
    wake.stop_waiting()
    waiter.join(10)
    assert got[1:] == [None] and not waiter.is_alive()
    wake.post(9)  # stopped: what is posted is still returned, then None at once
    assert wake.wait() == (9, None, 0, 0, 0, 0) and wake.wait() is None
    assert wake.sync_seconds == 0.0  # no range, no msync


def _waiting(wake: Any, **kwargs: Any) -> tuple[threading.Thread, list[Any]]:
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(wake.wait(**kwargs)))
    waiter.start()
    return waiter, got


@pytest.mark.parametrize("form", FORMS)
def test_wait_gathers_until_enough_requests_are_posted(form: Any) -> None:
    """With ``until``, a wait that has something posted goes on until that many requests are (the
    producers the last round answered, sending again), then takes all of them at once."""
    wake = form()
    wake.post(3, count=2)
    waiter, got = _waiting(wake, until=4, linger=60.0)
    waiter.join(0.2)
    assert waiter.is_alive() and wake.pending() == 2  # two of four: still gathering
    wake.post(7)
    waiter.join(0.2)
    assert waiter.is_alive()
    wake.post(9)
    waiter.join(10)
    assert got == [(9, None, 0, 0, 0, 0)] and wake.pending() == 0


@pytest.mark.parametrize("form", FORMS)
def test_gathering_ends_at_its_linger_or_when_stopped_or_when_enough_are_there(form: Any) -> None:
    wake = form()
    wake.post(5)
    waiter, got = _waiting(wake, until=3, linger=0.05)  # nobody else comes: it goes on after 50 ms
    waiter.join(10)
    assert got == [(5, None, 0, 0, 0, 0)]
    wake.post(6)
    waiter, got = _waiting(wake, until=3, linger=60.0)
    waiter.join(0.2)
    assert waiter.is_alive()
    wake.stop_waiting()  # shutting down: no gathering
    waiter.join(10)
    assert got == [(6, None, 0, 0, 0, 0)]
    wake = form()
    wake.post(8, count=3)  # already enough: no wait at all
    waiter, got = _waiting(wake, until=3, linger=60.0)
    waiter.join(10)
    assert got == [(8, None, 0, 0, 0, 0)]


def test_the_commitlog_file_being_written_keeps_small_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CommitLog's file being written asks for no read-ahead (4 KiB page-cache pages: an msync then
    writes what changed, not a 2 MiB folio); a file once full goes back to normal read-ahead; other
    queues (ConsumeQueues) are left alone. Advice only: a closed file or a refused madvise is no error."""
    advised: list[tuple[str, bool]] = []
    original = MappedFile.advise_writing

    def spy(self: MappedFile, writing: bool) -> None:
        advised.append((self.file_name, writing))
        original(self, writing)

    monkeypatch.setattr(MappedFile, "advise_writing", spy)
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    with MessageStore(cfg, clock=Clock()) as store:
        first = store.commitlog.mfq.files[-1].file_name if store.commitlog.mfq.files else None
        while len(store.commitlog.mfq.files) < 2:
            assert store.put_message(make_msg(body=os.urandom(700))).is_ok
        names = [mf.file_name for mf in store.commitlog.mfq.files]
        assert first is None or first == names[0]
        assert advised == [(names[0], True), (names[1], True), (names[0], False)]
    advised.clear()
    with MessageStore(cfg, clock=Clock()) as store:  # loaded again: the last file is the one written
        assert advised == [(names[1], True)]
    closed = MappedFile(str(tmp_path / "00000000000000000000"), 8 * mmap.PAGESIZE)
    closed.close()
    closed.advise_writing(True)


def test_a_range_synced_after_its_file_closed_is_not_taken_as_flushed(tmp_path: Path) -> None:
    mf = MappedFile(str(tmp_path / "00000000000000000000"), 8 * mmap.PAGESIZE)
    assert mf.append(b"x" * 100)
    dirty = mf.dirty_range()
    assert dirty is not None and dirty[1:] == (0, 100)
    mf.close()
    assert not mf.note_synced(0, 100) and mf.flushed_position == 0
    assert mf.dirty_range() is None


async def test_an_early_msync_that_fails_is_never_acknowledged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, virtual_clock: Any
) -> None:
    """The range synced before the GIL reports EIO, and the flush that follows fails too: the answer is
    FLUSH_DISK_TIMEOUT, and nothing was noted as flushed."""
    monkeypatch.setattr(flush_wake_module, "msync_address", lambda address, length: errno.EIO)
    flushes = FlushLog()
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    token = trio.lowlevel.current_trio_token()
    with MessageStore(cfg, clock=Clock(), sync_hook=flushes) as store:
        store.flush_until = lambda offset: False  # type: ignore[method-assign]  # the flush after it fails too
        group = GroupCommitService(store, timeout=5.0, wake=PyFlushWake())
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            r = store.put_message(make_msg())
            assert store.sync_request(r.flush_offset) is not None  # the early path is taken
            answer = Answer(r.flush_offset, token)
            answer.store = store
            group.answer_when_flushed(answer)
            await answer.event.wait()
            assert answer.delivered == [(threading.current_thread().name, PutMessageStatus.FLUSH_DISK_TIMEOUT)]
            assert store.flushed_offset < r.flush_offset and not flushes.calls
            nursery.cancel_scope.cancel()


@pytest.mark.parametrize("form", FORMS)
async def test_answers_wait_for_the_early_msync_of_their_bytes(tmp_path: Path, form: Any) -> None:
    """Every answer is delivered after an msync (the early one, noted through the sync hook) reached its
    offset; a CommitLog file change on the way is flushed by the thread's own flush."""
    flushes = FlushLog()
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    token = trio.lowlevel.current_trio_token()
    with trio.fail_after(30), MessageStore(cfg, clock=Clock(), sync_hook=flushes) as store:
        group = GroupCommitService(store, wake=form())
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            for i in range(40):
                r = store.put_message(make_msg(keys=f"k{i}", body=os.urandom(700)))
                answer = Answer(r.flush_offset, token)
                answer.store = store
                group.answer_when_flushed(answer)
                await answer.event.wait()
                assert answer.delivered == [("GroupCommitService", PutMessageStatus.PUT_OK)]
                assert answer.flushed_then >= answer.offset and flushes.covered(answer.offset)
            nursery.cancel_scope.cancel()


class RecordingConnection:
    """Stands in for a Connection: records what the flush thread writes."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.written = threading.Event()

    def write_from_thread(self, data: bytes) -> bool:
        self.writes.append(data)
        self.written.set()
        return True


async def test_answers_of_several_receives_covered_by_one_flush_leave_in_one_write(tmp_path: Path) -> None:
    """Answers held by three receives (two connections) and covered by the same round: one write per
    run of the same connection, the answers in the order they came in."""
    from rocketpy.broker.processors.send_lane import _StoredAnswers

    flushes = FlushLog()
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    hold, go_on = threading.Event(), threading.Event()

    def slow_first(path: str, start: int, end: int) -> None:
        flushes(path, start, end)
        if not hold.is_set():
            hold.set()
            assert go_on.wait(30)

    with trio.fail_after(30), MessageStore(cfg, clock=Clock(), sync_hook=slow_first) as store:
        group = GroupCommitService(store)
        one, two = RecordingConnection(), RecordingConnection()
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            first = store.put_message(make_msg(keys="first"))
            group.answer_when_flushed(_StoredAnswers(first.flush_offset, one, [b"a0"]))  # type: ignore[arg-type]
            assert await trio.to_thread.run_sync(hold.wait, 30)
            # asked while the first round is on the disk: all covered by the next round
            for conn, answer in ((one, b"a1"), (one, b"a2"), (two, b"b1"), (one, b"a3")):
                r = store.put_message(make_msg(keys=answer.decode()))
                group.answer_when_flushed(_StoredAnswers(r.flush_offset, conn, [answer]))  # type: ignore[arg-type]
            go_on.set()
            with trio.fail_after(10):
                while len(one.writes) < 3 or not two.writes:
                    await trio.sleep(0.01)
            assert one.writes == [b"a0", b"a1a2", b"a3"] and two.writes == [b"b1"]
            assert flushes.covered(r.flush_offset)
            nursery.cancel_scope.cancel()


@pytest.mark.timeout(60)
async def test_an_answer_asked_after_a_flush_reached_past_it_is_delivered_at_once(
    tmp_path: Path, frozen_clock: trio.testing.MockClock
) -> None:
    """A flush may reach past what its round was asked for (it syncs all that is written): an answer
    registered afterwards, already covered, is delivered by the wake-up it posts, not left for the
    syncFlushTimeout watcher (trio's clock stands still here: that watcher never fires)."""
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    token = trio.lowlevel.current_trio_token()
    with MessageStore(cfg, clock=Clock()) as store:
        group = GroupCommitService(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            r = store.put_message(make_msg())
            assert store.flush_until(r.flush_offset)  # covered before anyone asked
            answer = Answer(r.flush_offset, token)
            answer.store = store
            delivered = threading.Event()
            original = answer.deliver_from_thread
            answer.deliver_from_thread = lambda: original() and not delivered.set()  # type: ignore[method-assign]
            group.answer_when_flushed(answer)
            assert await trio.to_thread.run_sync(delivered.wait, 20)
            assert answer.delivered == [("GroupCommitService", PutMessageStatus.PUT_OK)]
            nursery.cancel_scope.cancel()
