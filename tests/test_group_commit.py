"""SYNC_FLUSH answers delivered by the group commit's flush thread, and writes from that thread.

GroupCommitService.answer_when_flushed hands an answer to the flush thread, which delivers it once the
disk covers its offset (no trip through the event loop), falls back to the trio thread when it cannot,
and answers FLUSH_DISK_TIMEOUT at the deadline. Connection.write_from_thread is how the broker's
answers leave from that thread: never inside another writer's frame, never on a closed descriptor.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from test_store import Clock, FlushLog, make_config, make_msg

from rocketpy.remoting.connection import Connection
from rocketpy.store import MessageStore, PutMessageStatus, services
from rocketpy.store.config import FlushDiskType
from rocketpy.store.services import GroupCommitService


class Answer:
    """A FlushedAnswer that records where and with what it was delivered."""

    count = 1

    def __init__(self, offset: int, token: trio.lowlevel.TrioToken, *, from_thread: bool = True) -> None:
        self.offset = offset
        self.token = token
        self.from_thread = from_thread
        self.delivered: list[tuple[str, PutMessageStatus]] = []
        self.flushed_then = -1
        self.event = trio.Event()
        self.store: MessageStore | None = None

    def deliver_from_thread(self) -> bool:
        if not self.from_thread:
            return False
        assert self.store is not None
        self.flushed_then = self.store.flushed_offset
        self.delivered.append((threading.current_thread().name, PutMessageStatus.PUT_OK))
        self.token.run_sync_soon(self.event.set)
        return True

    def absorb(self, later: Any) -> bool:
        return False  # each records its own delivery

    async def deliver(self, status: PutMessageStatus) -> None:
        assert self.store is not None
        self.flushed_then = self.store.flushed_offset
        self.delivered.append((threading.current_thread().name, status))
        self.event.set()


def hold(
    store: MessageStore, group: GroupCommitService, token: trio.lowlevel.TrioToken, keys: str | None = None
) -> Answer:
    """A message appended and its answer handed to the group commit."""
    r = store.put_message(make_msg(keys=keys))
    answer = Answer(r.flush_offset, token)
    answer.store = store
    group.answer_when_flushed(answer)
    return answer


async def test_held_answers_leave_from_the_flush_thread_once_on_disk(tmp_path: Path) -> None:
    flushes = FlushLog()
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    token = trio.lowlevel.current_trio_token()
    with trio.fail_after(30), MessageStore(cfg, clock=Clock(), sync_hook=flushes) as store:
        group = GroupCommitService(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            answers = []
            for i in range(3):
                r = store.put_message(make_msg(keys=f"k{i}"))
                assert r.is_ok and store.flushed_offset < r.flush_offset
                answer = Answer(r.flush_offset, token)
                answer.store = store
                answers.append(answer)
                group.answer_when_flushed(answer)
            for answer in answers:
                await answer.event.wait()
                # delivered by the flush thread, after an msync that covers it, and only once
                assert answer.delivered == [("GroupCommitService", PutMessageStatus.PUT_OK)]
                assert answer.flushed_then >= answer.offset and flushes.covered(answer.offset)
            nursery.cancel_scope.cancel()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("waiting", [1, 7, 128])
async def test_what_waits_during_a_flush_is_covered_by_the_next_one(
    tmp_path: Path, frozen_clock: trio.testing.MockClock, waiting: int
) -> None:
    """Java's GroupCommitService gathering: the answers asked for while a round is on the disk are all
    served by one more round (one msync reaching the last of them), started as soon as that round ends,
    whatever their number, without waiting for a timer (trio's clock stands still here)."""
    flushes = FlushLog()
    on_disk, go_on = threading.Event(), threading.Event()

    def first_msync_slow(path: str, start: int, end: int) -> None:
        flushes(path, start, end)
        if len(flushes.calls) == 1:  # the first round's msync is done with what it saw, and "takes long"
            on_disk.set()
            assert go_on.wait(30)

    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    token = trio.lowlevel.current_trio_token()
    with MessageStore(cfg, clock=Clock(), sync_hook=first_msync_slow) as store:
        group = GroupCommitService(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)

            def ask(i: int) -> Answer:
                r = store.put_message(make_msg(keys=f"k{i}"))
                answer = Answer(r.flush_offset, token)
                answer.store = store
                group.answer_when_flushed(answer)
                return answer

            first = ask(0)
            assert await trio.to_thread.run_sync(on_disk.wait, 30)
            later = [ask(i) for i in range(1, waiting + 1)]  # all asked for during the first round
            assert not flushes.covered(later[0].offset)
            go_on.set()
            for answer in [first, *later]:
                await answer.event.wait()
                assert answer.delivered == [("GroupCommitService", PutMessageStatus.PUT_OK)]
                assert answer.flushed_then >= answer.offset
            # one more round (its msyncs: one per CommitLog file it crosses) reached the last of them
            assert group.rounds == 2 and flushes.covered(later[-1].offset)
            assert trio.current_time() == 0
            nursery.cancel_scope.cancel()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("big", [False, True])
async def test_a_round_gathers_the_producers_the_last_one_answered(tmp_path: Path, big: bool) -> None:
    """Producers waiting on their answers send again at once: the round after one that answered N waits
    (up to its linger) for N more requests besides those already waiting, so steady producers share one
    msync instead of splitting into two halves a round apart. Not after an msync of more than
    gather_bytes per request (``big``): its time then goes with the bytes, and waiting only idles it."""
    flushes = FlushLog()
    on_disk, go_on = threading.Event(), threading.Event()

    def first_msync_slow(path: str, start: int, end: int) -> None:
        flushes(path, start, end)
        if len(flushes.calls) == 1:
            on_disk.set()
            assert go_on.wait(30)

    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    token = trio.lowlevel.current_trio_token()
    with trio.fail_after(40), MessageStore(cfg, clock=Clock(), sync_hook=first_msync_slow) as store:
        group = GroupCommitService(store)
        group.linger_share, group.max_linger = 1e12, 30.0  # a linger of 30 s, whatever the disk's speed
        if big:
            group.gather_bytes = 16  # the first round's msync: more than 16 bytes for its one request

        def ask(i: int) -> Answer:
            return hold(store, group, token, keys=f"k{i}")

        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            first = ask(0)
            assert await trio.to_thread.run_sync(on_disk.wait, 30)
            halves = [ask(1), ask(2)]  # asked while the first round is on the disk
            go_on.set()
            await first.event.wait()
            if big:  # no waiting: the two asked meanwhile have their round at once
                for answer in halves:
                    with trio.fail_after(10):
                        await answer.event.wait()
                assert group.rounds == 2
                nursery.cancel_scope.cancel()
                return
            # the next round waits for the producer just answered: 3 requests in all
            await trio.to_thread.run_sync(time.sleep, 0.3)
            assert not any(a.delivered for a in halves) and group.rounds == 1
            back = ask(3)
            for answer in [*halves, back]:
                await answer.event.wait()
                assert answer.delivered == [("GroupCommitService", PutMessageStatus.PUT_OK)]
            assert group.rounds == 2
            nursery.cancel_scope.cancel()


@pytest.mark.timeout(60)
async def test_one_producer_never_waits_for_gathering(tmp_path: Path) -> None:
    """Each round answers the one request there is; the next waits for one, which is all it gets."""
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    token = trio.lowlevel.current_trio_token()
    with MessageStore(cfg, clock=Clock()) as store:
        group = GroupCommitService(store)
        group.linger_share, group.max_linger = 1e12, 30.0
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            for i in range(6):
                answer = hold(store, group, token, keys=f"k{i}")
                with trio.fail_after(3):  # far below the linger (and the 5 s FLUSH_DISK_TIMEOUT watcher)
                    await answer.event.wait()
                assert answer.delivered == [("GroupCommitService", PutMessageStatus.PUT_OK)]
            assert group.rounds == 6
            nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def running_group(tmp_path: Path) -> AsyncIterator[tuple[MessageStore, GroupCommitService]]:
    """A SYNC_FLUSH store and its running group commit, stopped on leaving."""
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    with trio.fail_after(30), MessageStore(cfg, clock=Clock()) as store:
        group = GroupCommitService(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            yield store, group
            nursery.cancel_scope.cancel()


@contextlib.asynccontextmanager
async def one_answer_served(tmp_path: Path) -> AsyncIterator[tuple[MessageStore, threading.Thread]]:
    """A running group commit that has delivered one held answer from its thread: the store and that
    thread."""
    async with running_group(tmp_path) as (store, group):
        answer = hold(store, group, trio.lowlevel.current_trio_token())
        await answer.event.wait()
        assert answer.delivered == [("GroupCommitService", PutMessageStatus.PUT_OK)]
        yield store, next(t for t in threading.enumerate() if t.name == "GroupCommitService")


@pytest.mark.parametrize("allowed", [True, False])
async def test_flush_thread_takes_precedence_where_the_process_may_give_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, allowed: bool
) -> None:
    """The flush thread asks for a lower nice value (its msyncs' completions then wake it at once); a
    process without the right keeps the default priority and serves the same."""
    asked: list[tuple[int, int]] = []

    def setpriority(which: int, who: int, value: int) -> None:
        asked.append((who, value))
        if not allowed:
            raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(services.os, "setpriority", setpriority)
    async with one_answer_served(tmp_path) as (_, flusher):
        assert asked == [(flusher.native_id, services.FLUSH_THREAD_NICE)] and services.FLUSH_THREAD_NICE < 0


@pytest.mark.parametrize(
    ("interrupts", "expect"),
    [({1}, {1}), (None, None), ({0, 1, 2, 3}, None), ({7}, None), ({1, 7}, {1})],
    ids=["one-cpu", "unknown", "every-cpu", "none-allowed", "partly-allowed"],
)
async def test_flush_thread_follows_the_disk_interrupts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interrupts: set[int] | None, expect: set[int] | None
) -> None:
    """The flush thread moves to the CPUs that take the CommitLog disk's completion interrupts when those
    are some of its CPUs, not all (its msyncs' completions then wake it without another CPU's help);
    otherwise, or where affinities cannot be set, it stays where it is and serves the same."""
    looked: list[str] = []
    asked: list[tuple[int, set[int]]] = []

    def completion_cpus(path: str) -> frozenset[int] | None:
        looked.append(path)
        return None if interrupts is None else frozenset(interrupts)

    def sched_setaffinity(pid: int, cpus: set[int]) -> None:
        asked.append((pid, set(cpus)))
        raise PermissionError(1, "Operation not permitted")  # and the thread serves the same

    monkeypatch.setattr(services, "completion_cpus", completion_cpus)
    monkeypatch.setattr(services.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(services.os, "sched_setaffinity", sched_setaffinity)
    async with one_answer_served(tmp_path) as (store, flusher):
        while not looked:  # looked up off the event loop, beside the thread's start
            await trio.sleep(0.01)
        assert looked == [store.config.commit_log_dir]
        assert asked == ([] if expect is None else [(flusher.native_id, expect)])


async def test_flush_thread_follows_the_interrupts_when_they_move(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, virtual_clock: trio.testing.MockClock
) -> None:
    """irqbalance may move a disk's interrupts: the thread follows them, and goes back to every CPU of
    the process once they are on all of them."""
    where = iter([frozenset({1}), frozenset({1}), frozenset({0}), frozenset({0, 1})])
    current: dict[int, set[int]] = {}
    moves: list[set[int]] = []

    def sched_setaffinity(pid: int, cpus: set[int]) -> None:
        current[pid] = set(cpus)
        moves.append(set(cpus))

    monkeypatch.setattr(services, "completion_cpus", lambda path: next(where, frozenset({0, 1})))
    monkeypatch.setattr(services.os, "sched_getaffinity", lambda pid: current.get(pid, {0, 1}))
    monkeypatch.setattr(services.os, "sched_setaffinity", sched_setaffinity)
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    with MessageStore(cfg, clock=Clock()) as store:
        group = GroupCommitService(store, timeout=600.0)  # the deadline watcher then sleeps past every look
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            with trio.fail_after(services.FOLLOW_INTERVAL * 5):
                while len(moves) < 3:
                    await trio.sleep(services.FOLLOW_INTERVAL / 4)
            assert moves == [{1}, {0}, {0, 1}]
            nursery.cancel_scope.cancel()


async def test_held_answers_go_through_trio_when_the_thread_cannot_send(tmp_path: Path) -> None:
    async with running_group(tmp_path) as (store, group):
        r = store.put_message(make_msg())
        answer = Answer(r.flush_offset, trio.lowlevel.current_trio_token(), from_thread=False)
        answer.store = store
        group.answer_when_flushed(answer)
        await answer.event.wait()
        assert answer.delivered == [(threading.current_thread().name, PutMessageStatus.PUT_OK)]
        assert answer.flushed_then >= r.flush_offset


@pytest.mark.timeout(30)  # not trio.fail_after: the mocked clock jumps past it while the flush thread joins
async def test_held_answer_times_out_with_flush_disk_timeout(tmp_path: Path, virtual_clock: Any) -> None:
    """A disk that never syncs: the answer is FLUSH_DISK_TIMEOUT at syncFlushTimeout (Java's
    FlushDiskWatcher), not before, and never PUT_OK."""
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    token = trio.lowlevel.current_trio_token()
    with MessageStore(cfg, clock=Clock()) as store:
        store.flush_until = lambda offset: False  # type: ignore[method-assign]
        store.sync_request = lambda offset: None  # type: ignore[method-assign]  # no early msync either
        group = GroupCommitService(store, timeout=5.0)
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            await trio.sleep(3)  # the watcher is asleep with nothing held
            r = store.put_message(make_msg())
            answer = Answer(r.flush_offset, token)
            answer.store = store
            start = trio.current_time()
            group.answer_when_flushed(answer)
            await answer.event.wait()
            assert trio.current_time() - start >= 5.0
            assert trio.current_time() - start <= 5.0 + 5.0 / 4
            assert answer.delivered == [(threading.current_thread().name, PutMessageStatus.FLUSH_DISK_TIMEOUT)]
            nursery.cancel_scope.cancel()


async def test_waiter_sees_a_flush_that_ended_while_it_registered(tmp_path: Path) -> None:
    """wait_flushed returns at once when the round covering it ended between its first look and its
    registration (that round's end saw no waiter to wake)."""
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    with trio.fail_after(5), MessageStore(cfg, clock=Clock()) as store:
        group = GroupCommitService(store, timeout=1000)
        r = store.put_message(make_msg())
        # no flush thread: a request() that flushes on the spot stands for a round ending just then
        group.request = lambda offset: store.flush_until(offset)  # type: ignore[method-assign]
        assert await group.wait_flushed(r.flush_offset) is PutMessageStatus.PUT_OK
        assert group._waiters == []


# -- Connection.write_from_thread ------------------------------------------------------------------


class Wired:
    """A Connection on a real TCP socket, set up as _serve_socket sets it up for thread writes, and the
    peer's end; small buffers both ways, so a few MiB the peer does not read park a writer mid-frame."""

    conn: Connection
    client: trio.SocketStream
    raw: socket.socket


@pytest.fixture
async def wired(nursery: trio.Nursery) -> AsyncIterator[Wired]:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    w = Wired()
    w.client = await trio.open_tcp_stream("127.0.0.1", port)
    server = await listener.accept()
    await listener.aclose()
    assert isinstance(server, trio.SocketStream)
    server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
    w.client.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    w.conn = Connection(server)
    w.raw = socket.socket(fileno=server.socket.fileno())
    w.conn.raw, w.conn._token, w.conn._tail_nursery = w.raw, trio.lowlevel.current_trio_token(), nursery
    try:
        yield w
    finally:
        if w.raw.fileno() != -1:
            w.raw.detach()
        await w.client.aclose()
        await w.conn.aclose()


async def _read_exactly(stream: trio.SocketStream, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = await stream.receive_some(min(1 << 16, n - len(data)))
        assert chunk
        data += chunk
    return bytes(data)


async def test_thread_write_waits_behind_a_trio_writer_mid_frame(wired: Wired, nursery: trio.Nursery) -> None:
    """A thread write while a trio writer is parked mid-frame lands after that frame, whole, even when
    the socket has room again before the parked writer gets to run: frames never interleave."""
    conn = wired.conn
    big = b"A" * (4 << 20)
    sent = trio.Event()

    async def trio_writer() -> None:
        await conn.send_bytes(big)
        sent.set()

    nursery.start_soon(trio_writer)
    await trio.testing.wait_all_tasks_blocked()
    assert conn._send_lock.locked()  # parked: the socket buffer is full
    # the peer reads some, and the socket takes bytes again, with no checkpoint for the parked writer
    peer = socket.socket(fileno=wired.client.socket.fileno())
    head = bytearray()
    try:
        with contextlib.suppress(BlockingIOError):
            while len(head) < (1 << 20):
                head += peer.recv(1 << 16)
    finally:
        peer.detach()
    assert head and select.select([], [wired.raw], [], 5)[1]
    assert conn.write_from_thread(b"B" * 1000)
    data = bytes(head) + await _read_exactly(wired.client, len(big) + 1000 - len(head))
    assert data == big + b"B" * 1000
    await sent.wait()
    assert not conn._send_lock.locked() and conn._tail == b""


async def test_thread_write_left_over_goes_first(wired: Wired, nursery: trio.Nursery) -> None:
    """What the socket does not take of a thread write is sent by trio, before anything else, and
    without waiting for another write."""
    conn = wired.conn
    blob = b"B" * (4 << 20)
    assert await trio.to_thread.run_sync(conn.write_from_thread, blob)
    # the socket took only part: the rest waits (or is already parked in the trio task that sends it)
    assert conn._tail or conn._send_lock.locked()
    assert await _read_exactly(wired.client, 1 << 20) == b"B" * (1 << 20)  # flowing with no other write
    nursery.start_soon(conn.send_bytes, b"C" * 10)  # must not overtake the rest of the blob
    await trio.testing.wait_all_tasks_blocked()
    data = await _read_exactly(wired.client, len(blob) + 10 - (1 << 20))
    assert data == b"B" * (len(blob) - (1 << 20)) + b"C" * 10
    assert conn._tail == b""


async def test_thread_write_on_closed_or_trio_only_connections(wired: Wired) -> None:
    wired.raw.detach()
    await wired.conn.aclose()
    assert wired.conn.raw is None
    # closed: nothing to write to, the answer goes with the connection (and the descriptor is not touched)
    assert wired.conn.write_from_thread(b"x") is True
    # a stream only trio can write (memory streams, TLS): the caller must go through trio
    left, _right = trio.testing.memory_stream_pair()
    assert Connection(left).write_from_thread(b"x") is False


async def test_bytes_a_thread_queues_while_a_trio_writer_lets_go_are_sent(wired: Wired) -> None:
    """A thread's bytes queued just after a trio writer claimed the lock (here: a write of nothing, as the
    task that flushes a leftover does when another writer sent it first) go out; they are not dropped."""
    conn = wired.conn

    class QueueOnFirstExit:
        """The connection's thread lock, with a thread's write landing right after the first claim."""

        def __init__(self) -> None:
            self.lock = threading.Lock()
            self.exits = 0

        def __enter__(self) -> None:
            self.lock.acquire()

        def __exit__(self, *exc: object) -> None:
            self.exits += 1
            self.lock.release()
            if self.exits == 1:
                with self.lock:
                    conn._tail += b"from-thread"

    conn._wlock = QueueOnFirstExit()  # type: ignore[assignment]
    await conn.send_bytes(b"")
    with trio.fail_after(10):
        assert await _read_exactly(wired.client, len(b"from-thread")) == b"from-thread"
    assert not conn._send_lock.locked() and conn._tail == b""


async def test_no_thread_is_moved_once_the_flush_thread_has_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, virtual_clock: trio.testing.MockClock
) -> None:
    """A flush thread that ended (an error in its loop) is not followed any more: its id may belong to
    another thread by then, which must not be moved to the disk's interrupt CPUs every minute."""
    looked: list[str] = []

    def completion_cpus(path: str) -> frozenset[int]:
        looked.append(path)
        return frozenset({1})

    monkeypatch.setattr(GroupCommitService, "_loop", lambda self: None)  # the thread ends at once
    monkeypatch.setattr(services, "completion_cpus", completion_cpus)
    monkeypatch.setattr(services.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(services.os, "sched_setaffinity", lambda pid, cpus: None)
    cfg = make_config(tmp_path, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    with MessageStore(cfg, clock=Clock()) as store:
        group = GroupCommitService(store, timeout=600.0)
        async with trio.open_nursery() as nursery:
            await nursery.start(group.run)
            await trio.sleep(services.FOLLOW_INTERVAL * 4)
            assert len(looked) <= 1  # (at most the look that raced the thread's end)
            nursery.cancel_scope.cancel()
