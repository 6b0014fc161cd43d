"""The store's background work as trio tasks: flushing, group commit, retention.

Java runs these as threads (FlushRealTimeService, GroupCommitService,
FlushConsumeQueueService, CleanCommitLogService...). Here the broker starts them
in its nursery; msync calls run in worker threads (trio.to_thread) so the event
loop keeps serving while the disk works, and everything else stays on the trio
thread. Start them after ``MessageStore.open()``, cancel them before ``close()``.

    async with trio.open_nursery() as nursery:
        services = await StoreServices.start(store, nursery)
        ...
        result = store.put_message(msg)
        if result.is_ok and services.group_commit is not None and msg.wait_store_msg_ok:
            result.status = await services.group_commit.wait_flushed(result.flush_offset)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import trio

from .config import FlushDiskType
from .message_store import MessageStore
from .types import PutMessageStatus

__all__ = [
    "GroupCommitService",
    "StoreServices",
    "clean_service",
    "flush_commitlog_service",
    "flush_consume_queue_service",
]

log = logging.getLogger("rocketpy.store")


class GroupCommitService:
    """SYNC_FLUSH acknowledgements: many waiters, one msync per round.

    ``wait_flushed(offset)`` returns PUT_OK once the CommitLog is on disk up to
    ``offset`` and FLUSH_DISK_TIMEOUT after syncFlushTimeout (Java's
    FlushDiskWatcher). Requests that arrive while a flush runs are served by the
    next one: that is the group commit.
    """

    def __init__(self, store: MessageStore, *, timeout: float | None = None) -> None:
        self.store = store
        self.timeout = store.config.sync_flush_timeout / 1000 if timeout is None else timeout
        self._pending: list[tuple[int, trio.Event, list[PutMessageStatus]]] = []
        self._wakeup = trio.Event()
        self.rounds = 0  # flushes done, for observability and tests

    async def wait_flushed(self, offset: int) -> PutMessageStatus:
        if self.store.flushed_offset >= offset:
            return PutMessageStatus.PUT_OK
        done = trio.Event()
        box: list[PutMessageStatus] = []
        self._pending.append((offset, done, box))
        self._wakeup.set()
        with trio.move_on_after(self.timeout):
            await done.wait()
        return box[0] if box else PutMessageStatus.FLUSH_DISK_TIMEOUT

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            while True:
                await self._wakeup.wait()
                self._wakeup = trio.Event()
                await self._round()
        finally:
            # Shutting down: answer everyone still waiting with what is on disk now.
            with trio.CancelScope(shield=True):
                if self._pending and self.store.is_open:
                    await self._round()

    async def _round(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        target = max(offset for offset, _, _ in batch)
        try:
            await trio.to_thread.run_sync(self.store.flush_until, target)
        except Exception:  # an I/O error: the waiters time out rather than hear PUT_OK
            log.exception("group commit flush failed")
        self.rounds += 1
        flushed = self.store.flushed_offset
        for offset, done, box in batch:
            box.append(PutMessageStatus.PUT_OK if flushed >= offset else PutMessageStatus.FLUSH_DISK_TIMEOUT)
            done.set()


async def flush_commitlog_service(
    store: MessageStore, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """ASYNC_FLUSH: flush every flushIntervalCommitLog ms (FlushRealTimeService)."""
    task_status.started()
    interval = store.config.flush_interval_commit_log / 1000
    while True:
        await trio.sleep(interval)
        await trio.to_thread.run_sync(store.flush_commitlog)


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
        if clean:
            await nursery.start(clean_service, store)
        return cls(group)
