"""MessageStore: the store a broker writes to and pulls from (DefaultMessageStore).

All methods are synchronous and never block on the network; the caller decides
where they run. The contract for an async (trio) broker:

* ``put_message`` / ``put_messages`` append under a lock, dispatch the new records
  to their ConsumeQueue and the index right away, and return in microseconds. The
  bytes are in the page cache, not necessarily on disk.
* ASYNC_FLUSH: run ``flush_commitlog`` periodically (every flushIntervalCommitLog
  ms) in a worker thread; ``rocketpy.store.services.FlushCommitLogService`` does.
* SYNC_FLUSH: acknowledge a send only after ``flush_until(result.flush_offset)``
  returned True. ``rocketpy.store.services.GroupCommitService`` batches the
  waiters of many sends into one msync from a worker thread (group commit), and
  answers FLUSH_DISK_TIMEOUT after syncFlushTimeout. ``put_message_and_flush`` is
  the blocking one-call form.
* ``flush_consume_queues`` (every flushIntervalConsumeQueue ms) also writes the
  checkpoint; ``clean_expired`` (every cleanResourceInterval ms) applies retention.
* Reads (``get_message``, ``query_message`` ...) return copies of the record
  bytes, so results stay valid after files are deleted.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from ..codecs.accel import compiled
from ..codecs.codes import MixAll
from ..codecs.errors import CodecError
from ..codecs.javalang import java_string_hash, to_int32
from ..codecs.message import MessageExt, decode_message, decode_offset_msg_id, parse_host
from ..codecs.store_records import CONSUME_QUEUE_UNIT, CQ_STORE_UNIT_SIZE
from .checkpoint import StoreCheckpoint
from .commitlog import CommitLog
from .config import BrokerRole, FlushDiskType, MessageStoreConfig
from .config_files import BrokerConfigFiles
from .consume_queue import ConsumeQueue
from .index import IndexService
from .mapped_file import SyncHook
from .recovery import RecoveryReport, recover_commitlog, reput
from .types import (
    DispatchRequest,
    GetMessageResult,
    GetMessageStatus,
    MessageExtBatch,
    MessageExtBrokerInner,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
    StoreError,
)

#: the compiled twin of MessageStore._dispatch_plain (accel), else None
_dispatch_plain = compiled("dispatch_plain")

__all__ = ["CleanResult", "MessageFilter", "MessageStore", "TagFilter", "is_it_time_to_do"]

log = logging.getLogger("rocketpy.store")

_NOT_OR_COMMIT = (0, 8)  # TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE
_TRAN_MASK = 0xC


# POSIX record locks belong to the process: a second open in this process would get the
# lock again, and closing any descriptor of the file would drop it. So stores opened by
# this process are tracked here too (Java throws OverlappingFileLockException likewise).
_LOCKED_HERE: set[str] = set()


def held_by_this_process(lock_path: str) -> bool:
    return os.path.realpath(lock_path) in _LOCKED_HERE


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _total_physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def _disk_used_ratio(path: str) -> float:
    """UtilAll.getDiskPartitionSpaceUsedPercent: (total - free) / total, -1 when unknown."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    total = st.f_blocks * st.f_frsize
    if total <= 0:
        return -1.0
    return (total - st.f_bfree * st.f_frsize) / total


def is_it_time_to_do(when: str, now_ms: int) -> bool:
    """UtilAll.isItTimeToDo: is the local hour of ``now_ms`` one of the ';'-separated hours?"""
    hour = datetime.fromtimestamp(now_ms / 1000).hour
    for item in when.split(";"):
        item = item.strip()
        if item.lstrip("-").isdigit() and int(item) == hour:
            return True
    return False


class MessageFilter(Protocol):
    """What a pull filters on (Java's MessageFilter)."""

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool: ...

    def is_matched_by_commit_log(self, record: bytes) -> bool: ...


class TagFilter:
    """Tag subscription ("TagA || TagB", "*"), matched on tag hash codes like ExpressionMessageFilter."""

    def __init__(self, expression: str | None = "*") -> None:
        expr = (expression or "").strip()
        self.all = expr in ("", "*")
        self.tags = [] if self.all else [t.strip() for t in expr.split("||") if t.strip()]
        self.codes = {java_string_hash(t) for t in self.tags}

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        if tags_code is None or self.all:
            return True
        return to_int32(tags_code) in self.codes  # Java compares tagsCode.intValue()

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        return True


@dataclass
class CleanResult:
    """Files removed by one retention pass."""

    commitlog: list[str] = field(default_factory=list)
    consume_queue: list[str] = field(default_factory=list)
    index: list[str] = field(default_factory=list)


class MessageStore:
    """A message store directory: CommitLog, ConsumeQueues, index, checkpoint, abort, lock.

    ``clock`` gives the store timestamp of appended messages (Java: the system
    clock, read under the put lock); ``sync_hook`` sees every msync (tests);
    ``disk_usage`` returns the used fraction of a path's partition (retention).
    """

    def __init__(
        self,
        config: MessageStoreConfig,
        *,
        clock: Callable[[], int] | None = None,
        sync_hook: SyncHook | None = None,
        disk_usage: Callable[[str], float] | None = None,
    ) -> None:
        self.config = config
        self.clock = clock or _now_ms
        self._sync_hook = sync_hook
        self._disk_usage = disk_usage or _disk_used_ratio
        self.commitlog = CommitLog(config, self.clock, sync_hook=sync_hook)
        self.consume_queues: dict[str, dict[int, ConsumeQueue]] = {}
        self.checkpoint: StoreCheckpoint | None = None
        self.index: IndexService | None = None
        self.config_files = BrokerConfigFiles(config.store_path_root_dir)
        self.recovery: RecoveryReport | None = None
        self._lock_fd: int | None = None
        self._open = False
        self._writable = True
        self._disk_full = False
        self._memory = _total_physical_memory() * config.access_message_in_memory_max_ratio // 100
        self._last_physical_min_offset = 0
        self._last_cq_thorough_flush = 0
        self._last_cl_thorough_flush = 0
        #: appended by append_plain, not yet in the ConsumeQueues and index (see settle)
        self.pending: list[tuple[str, int, int, int, int, int, int, str | None, str | None]] = []

    # -- lifecycle ---------------------------------------------------------------------

    def open(self) -> RecoveryReport:
        """Lock the directory, load and recover everything, then mark the store running.

        A missing ``abort`` file means the last shutdown was clean. The abort file is
        created once recovery is done and removed again by :meth:`close`.
        """
        cfg = self.config
        for d in (cfg.store_path_root_dir, cfg.commit_log_dir, cfg.consume_queue_dir):
            os.makedirs(d, exist_ok=True)
        self._acquire_lock()
        try:
            clean = not os.path.exists(cfg.abort_path)
            self.commitlog.mfq.load(repair_short_last=not clean)
            self._load_consume_queues()
            self.checkpoint = StoreCheckpoint(cfg.checkpoint_path)
            self.index = IndexService(
                cfg.index_dir,
                cfg.max_hash_slot_num,
                cfg.max_index_num,
                self.checkpoint,
                self.clock,
                cfg.max_msgs_num_batch,
            )
            rebuild_from = self.index.load(clean)
            max_phy_cq = -1
            for cq in self._all_queues():
                cq.recover()
                max_phy_cq = max(max_phy_cq, cq.max_physic_offset)
            cp = self.checkpoint
            min_ts = cp.min_timestamp_index if cfg.message_index_enable and cfg.message_index_safe else cp.min_timestamp
            report = recover_commitlog(
                self.commitlog,
                clean_shutdown=clean,
                checkpoint_min_timestamp=min_ts,
                dispatch=self.do_dispatch,
                index_rebuild_from=rebuild_from,
            )
            if not self.commitlog.mfq.files:
                for cq in self._all_queues():
                    cq.destroy()
                self.consume_queues.clear()
            elif max_phy_cq >= report.truncated_at:
                for cq in self._all_queues():
                    cq.truncate_dirty_logic_files(report.truncated_at)
            self._recover_topic_queue_table()
            # The reput: whatever the ConsumeQueues do not cover yet gets dispatched now.
            reput_from = max([cq.max_physic_offset for cq in self._all_queues()] + [self.commitlog.min_offset, 0])
            _, report.dispatched = reput(self.commitlog, reput_from, self.do_dispatch)
            self._recover_topic_queue_table()
            with open(cfg.abort_path, "ab"):
                pass
        except BaseException:
            self._release()
            raise
        self.recovery = report
        self._open = True
        return report

    def close(self) -> None:
        """Flush everything, write the checkpoint, remove the abort file, unlock."""
        if self.pending:
            self.settle()
        if not self._open:
            self._release()
            return
        self._open = False
        try:
            self.commitlog.flush(0)
            if self.checkpoint is not None:
                self.checkpoint.physic_msg_timestamp = max(
                    self.checkpoint.physic_msg_timestamp, self.commitlog.mfq.store_timestamp
                )
            for cq in self._all_queues():
                cq.flush(0)
            if self.index is not None:
                self.index.flush()
            if self.checkpoint is not None:
                self.checkpoint.flush()
            if self._writable:
                try:
                    os.remove(self.config.abort_path)
                except FileNotFoundError:
                    pass
        finally:
            self._release()

    def _release(self) -> None:
        self.commitlog.close()
        for cq in self._all_queues():
            cq.close()
        if self.index is not None:
            self.index.close()
        if self._lock_fd is not None:
            try:
                fcntl.lockf(self._lock_fd, fcntl.LOCK_UN, 1, 0)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None
                _LOCKED_HERE.discard(os.path.realpath(self.config.lock_path))

    def _acquire_lock(self) -> None:
        # The same POSIX record lock Java takes with FileChannel.tryLock(0, 1, false),
        # so a Java broker and rocketpy exclude each other too.
        if held_by_this_process(self.config.lock_path):
            raise StoreError(f"{self.config.lock_path} is locked: the store is already open in this process")
        fd = os.open(self.config.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError:
            os.close(fd)
            raise StoreError(f"{self.config.lock_path} is locked: the store is already in use") from None
        os.pwrite(fd, b"lock", 0)
        os.fsync(fd)
        self._lock_fd = fd
        _LOCKED_HERE.add(os.path.realpath(self.config.lock_path))

    def __enter__(self) -> MessageStore:
        if not self._open:
            self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def is_open(self) -> bool:
        return self._open

    # -- consume queue table ----------------------------------------------------------------

    def _load_consume_queues(self) -> None:
        root = self.config.consume_queue_dir
        try:
            topics = sorted(os.listdir(root))
        except FileNotFoundError:
            return
        for topic in topics:
            tdir = os.path.join(root, topic)
            if not os.path.isdir(tdir):
                continue
            for qname in sorted(os.listdir(tdir)):
                try:
                    qid = int(qname)
                except ValueError:
                    continue
                cq = ConsumeQueue(topic, qid, root, self.config.consume_queue_file_size, sync_hook=self._sync_hook)
                cq.load()
                self.consume_queues.setdefault(topic, {})[qid] = cq

    def _all_queues(self) -> Iterator[ConsumeQueue]:
        for queues in list(self.consume_queues.values()):
            yield from list(queues.values())

    def find_consume_queue(self, topic: str, queue_id: int, create: bool = False) -> ConsumeQueue | None:
        queues = self.consume_queues.get(topic)
        cq = queues.get(queue_id) if queues else None
        if cq is None and create:
            cq = ConsumeQueue(
                topic,
                queue_id,
                self.config.consume_queue_dir,
                self.config.consume_queue_file_size,
                sync_hook=self._sync_hook,
            )
            self.consume_queues.setdefault(topic, {})[queue_id] = cq
        return cq

    def _recover_topic_queue_table(self) -> None:
        table: dict[tuple[str, int], int] = {}
        min_phy = self.commitlog.min_offset
        for cq in self._all_queues():
            table[(cq.topic, cq.queue_id)] = cq.max_offset_in_queue
            cq.correct_min_offset(min_phy)
        self.commitlog.topic_queue_table = table

    # -- dispatch ------------------------------------------------------------------------

    def do_dispatch(self, req: DispatchRequest) -> None:
        """Feed one record to its ConsumeQueue (committed/plain only) and to the index."""
        if req.sys_flag & _TRAN_MASK in _NOT_OR_COMMIT:
            cq = self.find_consume_queue(req.topic, req.queue_id, create=True)
            assert cq is not None
            if cq.put(req.commit_log_offset, req.msg_size, req.tags_code, req.consume_queue_offset):
                if self.checkpoint is not None:
                    self.checkpoint.logics_msg_timestamp = req.store_timestamp
            else:
                log.error("[BUG] consume queue can not write, %s %d", req.topic, req.queue_id)
                self._writable = False
        if self.config.message_index_enable and self.index is not None:
            self.index.build_index(req)

    # -- writing -----------------------------------------------------------------------------

    def _check_store_status(self) -> PutMessageStatus:
        if not self._open:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        if self.config.broker_role == BrokerRole.SLAVE:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        if not self._writable or self._disk_full:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        return PutMessageStatus.PUT_OK

    def append_plain(
        self, tags_code: int, keys: str | None, uniq_key: str | None, topic: str, queue_id: int, *record: Any
    ) -> tuple[int, int, int] | None:
        """The send hot path's put: append a plain message (``topic, queue_id, *record`` are
        CommitLog.append_plain's arguments) and queue its dispatch for :meth:`settle`, which must run
        before anything reads the ConsumeQueues again.

        Returns (physical offset, queue offset, store timestamp), or None: use :meth:`put_message`.
        """
        if not self._open or not self._writable or self._disk_full or self.config.broker_role == BrokerRole.SLAVE:
            return None
        done = self.commitlog.append_plain(topic, queue_id, *record)
        if done is None:
            return None
        phys, queue_offset, store_ts, size = done
        self.pending.append((topic, queue_id, phys, size, tags_code, store_ts, queue_offset, keys, uniq_key))
        return phys, queue_offset, store_ts

    def settle(self) -> list[tuple[str, int, int, int, int, int, int, str | None, str | None]]:
        """Dispatch what :meth:`append_plain` queued (ConsumeQueue units, index keys), in order; returns it
        (topic, queue id, offset, size, tags code, store timestamp, queue offset, keys, UNIQ_KEY)."""
        pending = self.pending
        if not pending:
            return pending
        self.pending = []
        index = self.index if self.config.message_index_enable else None
        if _dispatch_plain is not None:
            last_ts = _dispatch_plain(self, pending, index)
        else:
            last_ts = self._dispatch_plain(pending, index)
        if last_ts and self.checkpoint is not None:
            self.checkpoint.logics_msg_timestamp = last_ts
        return pending

    def _dispatch_plain(self, pending: list[tuple[Any, ...]], index: IndexService | None) -> int:
        """ConsumeQueue units and index keys of what append_plain queued, in order (the pure twin of the
        compiled ``dispatch_plain``): the store timestamp of the last unit written, 0 if none."""
        queues = self.consume_queues
        last_ts = 0
        for topic, queue_id, phys, size, tags_code, store_ts, queue_offset, keys, uniq in pending:
            per_topic = queues.get(topic)
            cq = per_topic.get(queue_id) if per_topic else None
            if cq is None:
                cq = self.find_consume_queue(topic, queue_id, create=True)
                assert cq is not None
            if cq.put(phys, size, tags_code, queue_offset):
                last_ts = store_ts
            else:
                self.consume_queue_failed(topic, queue_id)
            if index is not None and (uniq or keys):
                index.put_keys(topic, uniq, keys, phys, store_ts)
        return last_ts

    def consume_queue_failed(self, topic: str, queue_id: int) -> None:
        log.error("[BUG] consume queue can not write, %s %d", topic, queue_id)
        self._writable = False

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Append one message and dispatch it. Not yet durable: see :meth:`flush_until`."""
        if self.pending:
            self.settle()
        status = self._check_store_status()
        if status is not PutMessageStatus.PUT_OK:
            return PutMessageResult(status)
        result, reqs = self.commitlog.put_message(msg)
        for req in reqs:
            self.do_dispatch(req)
        return result

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """Append a batch (one record per entry, consecutive queue offsets) and dispatch it."""
        if self.pending:
            self.settle()
        status = self._check_store_status()
        if status is not PutMessageStatus.PUT_OK:
            return PutMessageResult(status)
        result, reqs = self.commitlog.put_messages(batch)
        for req in reqs:
            self.do_dispatch(req)
        return result

    def put_message_and_flush(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """put_message, then for SYNC_FLUSH (and WAIT not false) flush before returning.

        Blocking form for callers without a group-commit task; FLUSH_DISK_TIMEOUT if
        the flush could not cover the record.
        """
        result = self.put_message(msg)
        if (
            result.is_ok
            and self.config.flush_disk_type == FlushDiskType.SYNC_FLUSH
            and msg.wait_store_msg_ok
            and not self.flush_until(result.flush_offset)
        ):
            result.status = PutMessageStatus.FLUSH_DISK_TIMEOUT
        return result

    def append_to_commit_log(self, start_offset: int, data: bytes) -> bool:
        """Append replicated CommitLog bytes and dispatch them (a slave's HA path)."""
        if self.pending:
            self.settle()
        if not self._open:
            return False
        before = self.commitlog.max_offset
        if not self.commitlog.append_data(start_offset, data):
            return False
        reput(self.commitlog, before, self.do_dispatch)
        return True

    # -- flushing ----------------------------------------------------------------------------

    @property
    def flushed_offset(self) -> int:
        """CommitLog bytes known to be on disk."""
        return self.commitlog.flushed_where

    def flush_commitlog(self, least_pages: int | None = None) -> int:
        """One FlushRealTimeService round: flush at least ``least_pages`` dirty pages
        (flushCommitLogLeastPages; 0 = everything, forced every flushCommitLogThoroughInterval).
        Returns the flushed offset. Safe to call from a worker thread.
        """
        now = _now_ms()
        if least_pages is None:
            least_pages = self.config.flush_commit_log_least_pages
            if now >= self._last_cl_thorough_flush + self.config.flush_commit_log_thorough_interval:
                self._last_cl_thorough_flush = now
                least_pages = 0
        flushed = self.commitlog.flush(least_pages)
        ts = self.commitlog.mfq.store_timestamp
        if ts > 0 and self.checkpoint is not None:
            self.checkpoint.physic_msg_timestamp = ts
        return flushed

    def flush(self) -> int:
        """Flush the whole CommitLog now (MessageStore.flush); returns the flushed offset."""
        return self.flush_commitlog(0)

    def flush_until(self, offset: int) -> bool:
        """Make sure CommitLog bytes below ``offset`` are on disk (group commit).

        Returns True when they are. Safe to call from a worker thread while the
        owner keeps appending.
        """
        ok = self.commitlog.mfq.flush_until(offset)
        ts = self.commitlog.mfq.store_timestamp
        if ts > 0 and self.checkpoint is not None:
            self.checkpoint.physic_msg_timestamp = ts
        return ok

    def flush_consume_queues(self, least_pages: int | None = None) -> None:
        """One FlushConsumeQueueService round; a thorough one also writes the checkpoint."""
        now = _now_ms()
        logics_ts = 0
        if least_pages is None:
            least_pages = self.config.flush_consume_queue_least_pages
            if now >= self._last_cq_thorough_flush + self.config.flush_consume_queue_thorough_interval:
                self._last_cq_thorough_flush = now
                least_pages = 0
        if least_pages == 0 and self.checkpoint is not None:
            # Only claim in the checkpoint what this flush is certain to cover.
            logics_ts = self.checkpoint.logics_msg_timestamp
        for cq in self._all_queues():
            cq.flush(least_pages)
        if least_pages == 0 and self.checkpoint is not None:
            if logics_ts > 0:
                self.checkpoint.logics_msg_timestamp = logics_ts
            self.checkpoint.flush()

    # -- reading -----------------------------------------------------------------------------

    def _next_offset_correction(self, old: int, new: int) -> int:
        if self.config.broker_role != BrokerRole.SLAVE or self.config.offset_check_in_slave:
            return new
        return old

    def _batch_full(self, size: int, max_msg_nums: int, total: int, count: int, in_disk: bool, cap: int | None) -> bool:
        if total == 0 or count == 0:
            return False
        if max_msg_nums <= count:
            return True
        if cap is not None and total + size > cap:
            return True
        cfg = self.config
        if in_disk:
            return (
                total + size > cfg.max_transfer_bytes_on_message_in_disk
                or count > cfg.max_transfer_count_on_message_in_disk - 1
            )
        return (
            total + size > cfg.max_transfer_bytes_on_message_in_memory
            or count > cfg.max_transfer_count_on_message_in_memory - 1
        )

    def get_message(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int = 32,
        message_filter: MessageFilter | None = None,
        max_total_size: int | None = None,
    ) -> GetMessageResult | None:
        """Records of a queue from ``offset`` (DefaultMessageStore.getMessage).

        ``max_total_size`` caps the bytes returned on top of Java's transfer limits.
        None when the store is closed.
        """
        if self.pending:
            self.settle()
        if not self._open:
            return None
        max_offset_py = self.commitlog.max_offset
        cq = self.find_consume_queue(topic, queue_id)
        if cq is None:
            # Java creates an empty queue here: same answer, no directory left behind.
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, self._next_offset_correction(offset, 0), 0, 0)
        min_offset = cq.min_offset_in_queue
        max_offset = cq.max_offset_in_queue
        result = GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, offset, min_offset, max_offset)
        if max_offset == 0:
            result.next_begin_offset = self._next_offset_correction(offset, 0)
        elif offset < min_offset:
            result.status = GetMessageStatus.OFFSET_TOO_SMALL
            result.next_begin_offset = self._next_offset_correction(offset, min_offset)
        elif offset == max_offset:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_ONE
            result.next_begin_offset = self._next_offset_correction(offset, offset)
        elif offset > max_offset:
            result.status = GetMessageStatus.OFFSET_OVERFLOW_BADLY
            result.next_begin_offset = self._next_offset_correction(offset, max_offset)
        else:
            units = cq.read_units(offset, max(16000, max_msg_nums * CQ_STORE_UNIT_SIZE))
            if units is None:
                result.status = GetMessageStatus.OFFSET_FOUND_NULL
                result.next_begin_offset = self._next_offset_correction(offset, cq.roll_next_file(offset))
                return result
            status = GetMessageStatus.NO_MATCHED_MESSAGE
            next_phy_file_start: int | None = None
            max_phy_pulling = 0
            total = 0
            i = 0
            # the hot loop of every pull: locals, and the CommitLog file of the last record
            # kept (nothing can change the file list during this synchronous call)
            commitlog = self.commitlog
            file_size = commitlog.file_size
            find_file = commitlog.mfq.find_by_offset
            mf = None
            mf_lo = mf_hi = 0
            memory = self._memory
            unpack_unit = CONSUME_QUEUE_UNIT.unpack_from
            messages = result.messages
            queue_offsets = result.queue_offsets
            batch_full = self._batch_full
            n_units = len(units)
            while i < n_units:
                phy, size, tags_code = unpack_unit(units, i)
                max_phy_pulling = phy
                if next_phy_file_start is not None and phy < next_phy_file_start:
                    i += CQ_STORE_UNIT_SIZE
                    continue
                in_disk = max_offset_py - phy > memory
                if total and batch_full(size, max_msg_nums, total, len(messages), in_disk, max_total_size):
                    break
                if message_filter is not None and not message_filter.is_matched_by_consume_queue(tags_code):
                    if total == 0:
                        status = GetMessageStatus.NO_MATCHED_MESSAGE
                    i += CQ_STORE_UNIT_SIZE
                    continue
                # commitlog.get_message(phy, size), without looking the file up again
                if not mf_lo <= phy < mf_hi:
                    mf = find_file(phy, phy == 0)
                    if mf is not None:
                        mf_lo = mf.file_from_offset
                        mf_hi = mf_lo + file_size
                    else:
                        mf_lo = mf_hi = 0
                data = mf.read(phy % file_size, size) if mf is not None else None
                if data is None:
                    if total == 0:
                        status = GetMessageStatus.MESSAGE_WAS_REMOVING
                    next_phy_file_start = commitlog.roll_next_file(phy)
                    i += CQ_STORE_UNIT_SIZE
                    continue
                if message_filter is not None and not message_filter.is_matched_by_commit_log(data):
                    if total == 0:
                        status = GetMessageStatus.NO_MATCHED_MESSAGE
                    i += CQ_STORE_UNIT_SIZE
                    continue
                messages.append(data)
                queue_offsets.append(offset + i // CQ_STORE_UNIT_SIZE)
                total += len(data)
                status = GetMessageStatus.FOUND
                next_phy_file_start = None
                i += CQ_STORE_UNIT_SIZE
            result.status = status
            result.next_begin_offset = offset + i // CQ_STORE_UNIT_SIZE
            result.suggest_pulling_from_slave = max_offset_py - max_phy_pulling > self._memory
        return result

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        if self.pending:
            self.settle()
        cq = self.find_consume_queue(topic, queue_id)
        return cq.max_offset_in_queue if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        if self.pending:
            self.settle()
        cq = self.find_consume_queue(topic, queue_id)
        return cq.min_offset_in_queue if cq is not None else 0

    def get_message_total_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.find_consume_queue(topic, queue_id)
        return cq.message_total if cq is not None else 0

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, cq_offset: int) -> int:
        if self.pending:
            self.settle()
        cq = self.find_consume_queue(topic, queue_id)
        unit = cq.get_unit(cq_offset) if cq is not None else None
        return unit.commit_log_offset if unit is not None else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        if self.pending:
            self.settle()
        cq = self.find_consume_queue(topic, queue_id)
        if cq is None:
            return 0
        return cq.get_offset_in_queue_by_time(
            timestamp, self.commitlog.min_offset, self.commitlog.pickup_store_timestamp
        )

    def get_message_store_timestamp(self, topic: str, queue_id: int, cq_offset: int) -> int:
        cq = self.find_consume_queue(topic, queue_id)
        unit = cq.get_unit(cq_offset) if cq is not None else None
        if unit is None:
            return -1
        return self.commitlog.pickup_store_timestamp(unit.commit_log_offset, unit.size)

    def get_earliest_message_time(self, topic: str | None = None, queue_id: int = 0) -> int:
        """Store time of a queue's first message; without a topic, of the CommitLog's first."""
        if topic is None:
            offset = self.commitlog.min_offset
            size = self.commitlog.record_size_at(offset) if offset >= 0 else None
            return -1 if size is None or size <= 0 else self.commitlog.pickup_store_timestamp(offset, size)
        cq = self.find_consume_queue(topic, queue_id)
        if cq is None:
            return -1
        return self.get_message_store_timestamp(topic, queue_id, cq.min_offset_in_queue)

    @property
    def min_phy_offset(self) -> int:
        return self.commitlog.min_offset

    @property
    def max_phy_offset(self) -> int:
        return self.commitlog.max_offset

    def look_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> MessageExt | None:
        """The decoded record at a CommitLog offset (body left as stored)."""
        data = (
            self.commitlog.read_record(commit_log_offset)
            if size is None
            else self.commitlog.get_message(commit_log_offset, size)
        )
        if data is None:
            return None
        try:
            return decode_message(data, 0, decompress=False)
        except CodecError:
            return None

    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> bytes | None:
        """The raw record at a CommitLog offset."""
        if size is None:
            return self.commitlog.read_record(commit_log_offset)
        return self.commitlog.get_message(commit_log_offset, size)

    def look_message_by_msg_id(self, offset_msg_id: str) -> MessageExt | None:
        """VIEW_MESSAGE_BY_ID: decode the offset msg id (store host + offset) and read the record."""
        try:
            _ip, _port, offset = decode_offset_msg_id(offset_msg_id)
        except CodecError:
            return None
        return self.look_message_by_offset(offset)

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        """Records indexed under ``key`` (a KEYS entry or a UNIQ_KEY) stored in [begin, end].

        Like Java, hash collisions are not filtered out here; callers compare keys.
        """
        if self.pending:
            self.settle()
        result = QueryMessageResult()
        if self.index is None:
            return result
        last_query_time = end
        for _ in range(3):
            offsets, last_ts, last_phy = self.index.query_offset(topic, key, max_num, begin, last_query_time)
            if not offsets:
                break
            offsets.sort()
            result.index_last_update_timestamp = last_ts
            result.index_last_update_phyoffset = last_phy
            for m, off in enumerate(offsets):
                msg = self.look_message_by_offset(off)
                if msg is None:
                    continue
                if m == 0:
                    last_query_time = msg.store_timestamp
                data = self.commitlog.read_record(off)
                if data is not None:
                    result.messages.append(data)
            if result.messages or last_query_time < begin:
                break
        return result

    def get_commit_log_data(self, offset: int) -> tuple[int, bytes] | None:
        """CommitLog bytes from ``offset`` to the end of its file's data: (start offset, bytes)."""
        if not self._open:
            return None
        return self.commitlog.get_data(offset)

    def get_message_ids(
        self, topic: str, queue_id: int, min_offset: int, max_offset: int, store_host: str
    ) -> dict[str, int]:
        """Offset msg ids of queue offsets [min, max) (getMessageIds)."""
        out: dict[str, int] = {}
        cq = self.find_consume_queue(topic, queue_id)
        if cq is None:
            return out
        ip, port = parse_host(store_host)
        lo = max(min_offset, cq.min_offset_in_queue)
        hi = min(max_offset, cq.max_offset_in_queue)
        for q in range(lo, hi):
            unit = cq.get_unit(q)
            if unit is None:
                break
            raw = ip + port.to_bytes(4, "big", signed=True) + unit.commit_log_offset.to_bytes(8, "big")
            out[raw.hex().upper()] = q
        return out

    def check_in_disk_by_consume_offset(self, topic: str, queue_id: int, consume_offset: int) -> bool:
        cq = self.find_consume_queue(topic, queue_id)
        unit = cq.get_unit(consume_offset) if cq is not None else None
        if unit is None:
            return False
        return self.commitlog.max_offset - unit.commit_log_offset > self._memory

    def dispatch_behind_bytes(self) -> int:
        """Dispatch is done inline with each put: nothing is ever behind."""
        return 0

    def topics(self) -> list[str]:
        return sorted(self.consume_queues)

    def queue_ids(self, topic: str) -> list[int]:
        return sorted(self.consume_queues.get(topic, {}))

    # -- topics and retention ------------------------------------------------------------------

    def delete_topics(self, topics: Iterable[str]) -> int:
        """Destroy the ConsumeQueues of ``topics`` (their CommitLog records stay)."""
        n = 0
        for topic in list(topics):
            queues = self.consume_queues.pop(topic, None)
            if not queues:
                continue
            for cq in queues.values():
                cq.destroy()
                self.commitlog.remove_queue_from_topic_queue_table(cq.topic, cq.queue_id)
                n += 1
            try:
                os.rmdir(os.path.join(self.config.consume_queue_dir, topic))
            except OSError:
                pass
        return n

    def clean_unused_topic(self, keep: Iterable[str]) -> int:
        """cleanUnusedTopic: drop queues of topics not in ``keep`` (system queues stay)."""
        keep_set = set(keep) | {MixAll.RMQ_SYS_SCHEDULE_TOPIC, MixAll.RMQ_SYS_TRANS_OP_HALF_TOPIC}
        gone = [t for t in self.consume_queues if t not in keep_set and not t.startswith(MixAll.LMQ_PREFIX)]
        return self.delete_topics(gone)

    def clean_expired_consumer_queue(self) -> list[tuple[str, int]]:
        """Destroy queues whose every unit points below the CommitLog min offset."""
        min_offset = self.commitlog.min_offset
        gone: list[tuple[str, int]] = []
        for topic, queues in list(self.consume_queues.items()):
            if topic == MixAll.RMQ_SYS_SCHEDULE_TOPIC:
                continue
            for qid, cq in list(queues.items()):
                last = cq.get_last_offset()
                if last != -1 and last < min_offset:
                    self.commitlog.remove_queue_from_topic_queue_table(topic, qid)
                    cq.destroy()
                    del queues[qid]
                    gone.append((topic, qid))
            if not queues:
                del self.consume_queues[topic]
        return gone

    def _space_check(self) -> tuple[bool, bool]:
        """(space to delete, clean immediately) as CleanCommitLogService.isSpaceToDelete."""
        ratio = self.config.disk_max_used_space_ratio / 100.0
        warning, forcibly = 0.90, 0.85  # rocketmq.broker.diskSpaceWarningLevelRatio / CleanForciblyRatio
        full = immediately = disk_full = False
        for path in (self.config.commit_log_dir, self.config.consume_queue_dir):
            used = self._disk_usage(path)
            if used > warning:
                disk_full = immediately = True
            elif used > forcibly:
                immediately = True
            if used < 0 or used > ratio:
                full = True
        # Past the warning level writes are refused (RunningFlags disk full) until space is back.
        self._disk_full = disk_full
        return full, immediately

    def clean_expired(self, now_ms: int | None = None, *, force: bool = False) -> CleanResult:
        """One retention pass (CleanCommitLogService + CleanConsumeQueueService).

        CommitLog files (never the current one) are deleted once older than
        fileReservedTime hours, when the local hour is in deleteWhen, the disk is
        fuller than diskMaxUsedSpaceRatio, or ``force``; then ConsumeQueue and index
        files wholly below the new CommitLog min offset go too.
        """
        now = self.clock() if now_ms is None else now_ms
        out = CleanResult()
        cfg = self.config
        time_up = is_it_time_to_do(cfg.delete_when, now)
        space_full, immediately = self._space_check()
        if time_up or space_full or force:
            at_once = cfg.clean_file_forcibly_enable and immediately
            out.commitlog = self.commitlog.mfq.delete_expired_by_time(
                cfg.file_reserved_time * 3_600_000, now, clean_immediately=at_once
            )
        min_offset = self.commitlog.min_offset
        if min_offset > self._last_physical_min_offset:
            self._last_physical_min_offset = min_offset
            for cq in self._all_queues():
                out.consume_queue.extend(cq.delete_expired_file(min_offset))
            if self.index is not None:
                out.index = self.index.delete_expired_file(min_offset)
        return out
