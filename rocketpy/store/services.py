"""The store's background work as trio tasks: flushing, group commit, retention.

Java runs these as threads (FlushRealTimeService, GroupCommitService,
FlushConsumeQueueService, CleanCommitLogService...). Here the broker starts them
in its nursery; msync calls run in worker threads (trio.to_thread) so the event
loop keeps serving while the disk works (the group commit has one flush thread of
its own, like Java's), and everything else stays on the trio thread. Start them
after ``MessageStore.open()``, cancel them before ``close()``.

    async with trio.open_nursery() as nursery:
        services = await StoreServices.start(store, nursery)
        ...
        result = store.put_message(msg)
        if result.is_ok and services.group_commit is not None and msg.wait_store_msg_ok:
            result.status = await services.group_commit.wait_flushed(result.flush_offset)
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import trio

from .config import FlushDiskType
from .flush_wake import new_flush_wake
from .irq_cpus import completion_cpus
from .message_store import MessageStore
from .types import PutMessageStatus

__all__ = [
    "FlushedAnswer",
    "GroupCommitService",
    "StoreServices",
    "clean_service",
    "flush_commitlog_service",
    "flush_consume_queue_service",
]

log = logging.getLogger("rocketpy.store")


#: the GIL switch interval while a group commit runs (see GroupCommitService.run)
SWITCH_INTERVAL = 0.0005
#: how long a round may wait for the producers the last round answered: a share of an msync's time (a
#: running mean), at most GATHER_MAX seconds, and only for up to GATHER_UP_TO requests (see
#: GroupCommitService._loop)
GATHER_SHARE = 0.5
GATHER_MAX = 0.001
GATHER_UP_TO = 8
#: nor after a round whose msync wrote more than this many bytes per request it answered
GATHER_BYTES = 4096
#: seconds between two looks at the CPUs the CommitLog disk interrupts (see _follow_completions)
FOLLOW_INTERVAL = 60.0
#: the flush thread's nice value, when the process may raise a thread's priority (see _raise_priority)
FLUSH_THREAD_NICE = -10


class FlushedAnswer(Protocol):
    """What :meth:`GroupCommitService.answer_when_flushed` delivers once the disk has ``offset``."""

    #: the CommitLog offset the answer waits for
    offset: int

    @property
    def count(self) -> int:
        """The requests it answers (their producers are likely to send again once answered)."""
        ...

    def deliver_from_thread(self) -> bool:
        """Called on the flush thread once flushed: deliver now if that can be done from there."""
        ...

    def absorb(self, later: FlushedAnswer) -> bool:
        """Take over ``later``'s delivery (covered by the same flush) when both go to the same place, so
        that one write carries both; False when they cannot be joined."""
        ...

    async def deliver(self, status: PutMessageStatus) -> None:
        """Called on the trio thread: flushed (PUT_OK) but not deliverable from the thread, or
        FLUSH_DISK_TIMEOUT after syncFlushTimeout."""
        ...


class GroupCommitService:
    """SYNC_FLUSH acknowledgements: many waiters, one msync per round.

    ``wait_flushed(offset)`` returns PUT_OK once the CommitLog is on disk up to
    ``offset`` and FLUSH_DISK_TIMEOUT after syncFlushTimeout (Java's
    FlushDiskWatcher). The msyncs run in one flush thread (Java's GroupCommitService
    thread), owned by :meth:`run`: a round flushes everything asked for when it starts;
    what is asked meanwhile is served by the next round, which the thread starts as soon
    as the last one ends, without a trip through the event loop. Each finished round wakes
    the waiters it covers on the trio thread; answers held with :meth:`answer_when_flushed`
    are delivered by the flush thread itself, which saves the producer a round trip through
    the event loop per round (the send lane's SYNC_FLUSH answers). Unlike Java's, a round
    may wait a little for the producers the last round answered (see :meth:`_loop`), the
    thread asks for a higher priority than the event loop's (see ``_raise_priority``), and it
    stays on the CPUs that take the CommitLog disk's completion interrupts (see
    :meth:`_follow_interrupts`).
    """

    def __init__(self, store: MessageStore, *, timeout: float | None = None, wake: Any = None) -> None:
        self.store = store
        self.timeout = store.config.sync_flush_timeout / 1000 if timeout is None else timeout
        self._waiters: list[tuple[int, trio.Event]] = []
        #: wakes the flush thread with what to flush, and msyncs it before the thread needs the GIL
        self._wake = new_flush_wake() if wake is None else wake
        self._wanted = 0  # the highest offset asked for (trio thread)
        self._stop = False
        self._token: trio.lowlevel.TrioToken | None = None
        self.rounds = 0  # flushes done, for observability and tests
        #: (offset, trio deadline, answer) in offset order: appended on the trio thread, taken by the
        #: flush thread once covered or by the watcher once past the deadline, under _held_lock
        self._held: deque[tuple[int, float, FlushedAnswer]] = deque()
        self._held_lock = threading.Lock()
        self._nursery: trio.Nursery | None = None
        #: gathering (see _loop): the share of an msync's time a round may wait, at most max_linger
        #: seconds, for at most gather_up_to requests, after an msync of at most gather_bytes per request
        self.linger_share = GATHER_SHARE
        self.max_linger = GATHER_MAX
        self.gather_up_to = GATHER_UP_TO
        self.gather_bytes = GATHER_BYTES

    def answer_when_flushed(self, answer: FlushedAnswer) -> None:
        """Deliver ``answer`` once the CommitLog up to ``answer.offset`` is on disk, from the flush thread
        when it can (see FlushedAnswer), or FLUSH_DISK_TIMEOUT after syncFlushTimeout. Offsets must not
        go down from one call to the next (the CommitLog's end, as appended)."""
        self._held.append((answer.offset, trio.current_time() + self.timeout, answer))
        self.request(answer.offset, answer.count)

    def request(self, offset: int, count: int = 1) -> None:
        """Ask for the CommitLog up to ``offset`` on disk, for ``count`` requests, without waiting (Java's
        putRequest at append time): the flush thread starts the round as soon as it is free, before anyone
        awaits it."""
        if offset > self._wanted:
            self._wanted = offset
            # the range to msync goes with the wake-up: the flush thread syncs it before taking the GIL
            sync = self.store.sync_request(offset)
            if sync is None:
                self._wake.post(offset, count=count)
            else:
                self._wake.post(offset, *sync, count=count)

    async def wait_flushed(self, offset: int) -> PutMessageStatus:
        if self.store.flushed_offset >= offset:
            return PutMessageStatus.PUT_OK
        done = trio.Event()
        self._waiters.append((offset, done))
        self.request(offset)
        if self.store.flushed_offset >= offset:
            # flushed between the look above and the append: the round's end may have found no waiter
            self._waiters = [w for w in self._waiters if w[1] is not done]
            return PutMessageStatus.PUT_OK
        with trio.move_on_after(self.timeout):
            await done.wait()
        if not done.is_set():
            self._waiters = [w for w in self._waiters if w[1] is not done]
        return PutMessageStatus.PUT_OK if self.store.flushed_offset >= offset else PutMessageStatus.FLUSH_DISK_TIMEOUT

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self._token = trio.lowlevel.current_trio_token()
        # The flush thread needs the GIL after every wake-up and every msync; with the default 5 ms switch
        # interval a busy event loop keeps it waiting, and every producer's answer with it. 0.5 ms bounds
        # that wait (SYNC_FLUSH sends/s +15% in bench_vs_java); it is process-wide, so it is put back after.
        switch = sys.getswitchinterval()
        sys.setswitchinterval(min(switch, SWITCH_INTERVAL))
        thread = threading.Thread(target=self._loop, name="GroupCommitService", daemon=True)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                thread.start()
                nursery.start_soon(self._watch_deadlines)
                nursery.start_soon(self._follow_interrupts, thread)
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            sys.setswitchinterval(switch)
            # Shutting down: the thread does a last round for whoever still waits, then ends.
            self._stop = True
            self._wake.stop_waiting()
            with trio.CancelScope(shield=True):
                if thread.is_alive():
                    await trio.to_thread.run_sync(thread.join)
                self._wake_covered()

    def _loop(self) -> None:
        _raise_priority()
        store = self.store
        wake = self._wake
        carry = 0  # a target the last round did not reach (an I/O error): tried again shortly
        until = 0  # the requests the next round waits for, when they come soon enough
        linger = 0.0
        sync_mean = 0.0  # seconds per msync, a running mean
        while True:
            # no GIL held while waiting and syncing
            posted = wake.wait(-1.0 if not carry else 0.01, until, linger)
            stop = self._stop
            target = carry
            if stop:
                target = max(target, self._wanted)
            if posted is not None:
                target = max(target, posted[0])
            before = store.flushed_offset
            carry = 0
            took = wake.sync_seconds
            synced = posted[3] - posted[2] if posted is not None and posted[1] is not None else 0
            if target > before and store.is_open:
                if posted is not None and posted[1] is not None:
                    _, mf, start, end, stamp, error = posted
                    if error == 0:
                        store.note_synced(mf, start, end, stamp)
                try:
                    if store.flushed_offset < target:
                        began = time.perf_counter()
                        store.flush_until(target)
                        took += time.perf_counter() - began
                except Exception:  # an I/O error: the waiters time out rather than hear PUT_OK
                    log.exception("group commit flush failed")
                self.rounds += 1
                if store.flushed_offset < target and not stop:
                    carry = target
                sync_mean += (took - sync_mean) / 8
            # Gathering: the producers answered now send again at once, and one msync costs about as much
            # for one request as for many. The next round waits for them (those asked for during this
            # round, plus as many as it answers) as long as a share of an msync, where Java's starts at
            # once and so splits steady producers into two halves, each paying an msync per request.
            # One producer is never kept waiting: what it sends is all the next round waits for.
            waiting = wake.pending()
            # Also when no round was needed: an earlier round's flush may have reached past its target
            # and covered what was asked for since (asked while that round was past its delivery).
            answered = self._deliver_covered()
            if not stop and self._waiters and self._token is not None:
                flushed = store.flushed_offset
                answered += sum(1 for offset, _ in self._waiters if offset <= flushed)
                try:
                    self._token.run_sync_soon(self._wake_covered)
                except trio.RunFinishedError:
                    return
            if stop:
                return
            # after this round's answers went out: it delays only the next round's start
            try:
                store.drop_cached_pages()
            except Exception as exc:  # advice only: one line, the group commit goes on
                log.warning("dropping cached CommitLog pages failed: %s", exc)
            until = waiting + answered if not carry else 0
            # an msync of more than a page per request takes about as long as its bytes: waiting only idles it
            small = synced <= self.gather_bytes * max(1, answered)
            linger = (
                min(self.max_linger, self.linger_share * sync_mean) if until <= self.gather_up_to and small else 0.0
            )

    def _deliver_covered(self) -> int:
        """On the flush thread: deliver the held answers the disk now covers; the requests they answer."""
        held = self._held
        if not held:
            return 0
        flushed = self.store.flushed_offset
        covered: list[FlushedAnswer] = []
        answered = 0
        with self._held_lock:  # the watcher takes from the same end
            while held and held[0][0] <= flushed:
                answer = held.popleft()[2]
                answered += answer.count
                covered.append(answer)
        if len(covered) > 1:  # one write per destination for the round
            joined = [covered[0]]
            for answer in covered[1:]:
                if not joined[-1].absorb(answer):
                    joined.append(answer)
            covered = joined
        left = []
        for answer in covered:
            try:
                if not answer.deliver_from_thread():
                    left.append(answer)
            except Exception:
                log.exception("group commit answer failed")
        if left and self._token is not None:
            try:
                self._token.run_sync_soon(self._deliver_on_trio, left, PutMessageStatus.PUT_OK)
            except trio.RunFinishedError:
                pass
        return answered

    def _deliver_on_trio(self, answers: list[FlushedAnswer], status: PutMessageStatus) -> None:
        nursery = self._nursery
        if nursery is not None:
            for answer in answers:
                nursery.start_soon(answer.deliver, status)

    async def _watch_deadlines(self) -> None:
        """FLUSH_DISK_TIMEOUT for held answers the disk has not covered by their deadline (Java's
        FlushDiskWatcher); asleep until the oldest deadline, or a quarter of the timeout when none."""
        held = self._held
        while True:
            now = trio.current_time()
            expired: list[FlushedAnswer] = []
            with self._held_lock:  # the flush thread takes from the same end
                while held and held[0][1] <= now:
                    expired.append(held.popleft()[2])
                wake = held[0][1] if held else now + self.timeout / 4
            if expired:
                flushed = self.store.flushed_offset
                for answer in expired:
                    ok = answer.offset <= flushed  # the flush thread covered it just now
                    status = PutMessageStatus.PUT_OK if ok else PutMessageStatus.FLUSH_DISK_TIMEOUT
                    assert self._nursery is not None
                    self._nursery.start_soon(answer.deliver, status)
            await trio.sleep_until(wake)

    async def _follow_interrupts(self, thread: threading.Thread) -> None:
        """Keep the flush thread on the CPUs that take the CommitLog disk's completion interrupts (see
        _follow_completions), looked up again every FOLLOW_INTERVAL seconds: irqbalance may move them."""
        path = self.store.config.commit_log_dir
        while thread.is_alive() and thread.native_id is not None:  # (an ended thread's id may be reused)
            # sysfs and procfs reads: off the event loop, as any file I/O
            await trio.to_thread.run_sync(_follow_completions, path, thread.native_id)
            await trio.sleep(FOLLOW_INTERVAL)

    def _wake_covered(self) -> None:
        flushed = self.store.flushed_offset
        waiting = [w for w in self._waiters if w[0] > flushed]
        for offset, done in self._waiters:
            if offset <= flushed:
                done.set()
        self._waiters = waiting


def _raise_priority() -> None:
    """Give the calling thread (the flush thread) precedence over the event loop where allowed.

    Each msync ends with the device's interrupt waking this thread; while the event loop and the
    producers keep both cores busy the scheduler may let it wait its turn, and every answer of the
    round waits with it (SYNC_FLUSH at 32 producers x 1 KiB: msync 770-870 -> 580-660 us, sends/s
    +10-35% in bench_vs_java). Lowering a nice value needs CAP_SYS_NICE (or RLIMIT_NICE); without it
    the thread keeps the default priority."""
    if not hasattr(os, "setpriority"):
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), FLUSH_THREAD_NICE)
    except OSError as exc:
        log.debug("group commit thread keeps its priority: %s", exc)


def _follow_completions(path: str, thread_id: int) -> frozenset[int] | None:
    """Keep thread ``thread_id`` (the flush thread) on the CPUs that take the completion interrupts of the
    disk under ``path`` when those are some of the process's CPUs, not all; otherwise on the process's
    CPUs. The CPUs it is on when this returns, or None when they cannot be told or set.

    Each msync ends with that interrupt waking the thread: on another CPU the wake-up takes one more
    hop, an inter-processor interrupt, and in a VM each hop may first wake a halted virtual CPU (see
    :mod:`.irq_cpus` for the figures: 1-page msync 204-472 -> 93-138 us on average). Where the
    interrupts are spread over every CPU (multi-queue NVMe) or cannot be told, the scheduler decides.
    Unlike Java's GroupCommitService, which runs wherever the scheduler puts it."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    cpus = completion_cpus(path)
    try:
        allowed = os.sched_getaffinity(os.getpid())
        target = cpus & allowed if cpus and cpus & allowed and not allowed <= cpus else allowed
        if os.sched_getaffinity(thread_id) != target:
            os.sched_setaffinity(thread_id, target)
            log.info(
                "group commit thread on CPU(s) %s%s",
                ",".join(map(str, sorted(target))),
                ", which take the CommitLog disk's completion interrupts" if target != allowed else "",
            )
    except OSError as exc:
        log.debug("group commit thread keeps its CPUs: %s", exc)
        return None
    return frozenset(target)


async def flush_commitlog_service(
    store: MessageStore, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """ASYNC_FLUSH: flush every flushIntervalCommitLog ms (FlushRealTimeService)."""
    task_status.started()
    interval = store.config.flush_interval_commit_log / 1000
    while True:
        await trio.sleep(interval)
        await trio.to_thread.run_sync(_flush_and_drop, store)


def _flush_and_drop(store: MessageStore) -> None:
    """One FlushRealTimeService round, then the page cache of what is long flushed goes (in its thread)."""
    store.flush_commitlog()
    store.drop_cached_pages()


async def flush_consume_queue_service(
    store: MessageStore, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Flush ConsumeQueues (and the checkpoint on thorough rounds) every flushIntervalConsumeQueue ms."""
    task_status.started()
    interval = store.config.flush_interval_consume_queue / 1000
    while True:
        await trio.sleep(interval)
        await trio.to_thread.run_sync(store.flush_consume_queues)


async def clean_service(store: MessageStore, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Retention every cleanResourceInterval ms (first run after a minute, like Java)."""
    task_status.started()
    await trio.sleep(60)
    interval = store.config.clean_resource_interval / 1000
    while True:
        # On the trio thread: deletions change file lists the put path reads.
        result = store.clean_expired()
        if result.commitlog or result.consume_queue or result.index:
            log.info("retention removed %s", result)
        await trio.sleep(interval)


#: seconds between disk checks (Java's diskCheckScheduledExecutorService: after 1 s, then every 10 s)
DISK_CHECK_INTERVAL = 10.0


async def disk_check_service(
    store: MessageStore, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """MessageStore.check_disk every 10 s: refuse puts while the disk is full, take them again after."""
    task_status.started()
    await trio.sleep(1)
    while True:
        # On the trio thread: it may make the next CommitLog file and re-dispatch, which the put path reads.
        store.check_disk()
        await trio.sleep(DISK_CHECK_INTERVAL)


@dataclass
class StoreServices:
    """Handles of the tasks started by :meth:`start`."""

    group_commit: GroupCommitService | None

    @classmethod
    async def start(cls, store: MessageStore, nursery: trio.Nursery, *, clean: bool = True) -> StoreServices:
        group: GroupCommitService | None = None
        if store.config.flush_disk_type == FlushDiskType.SYNC_FLUSH:
            group = GroupCommitService(store)
            await nursery.start(group.run)
        else:
            await nursery.start(flush_commitlog_service, store)
        await nursery.start(flush_consume_queue_service, store)
        await nursery.start(disk_check_service, store)
        if clean:
            await nursery.start(clean_service, store)
        return cls(group)
