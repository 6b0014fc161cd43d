"""MessageStore: the store a broker writes to and pulls from (DefaultMessageStore).

All methods are synchronous and never block on the network; the caller decides
where they run. The contract for an async (trio) broker:

* ``put_message`` / ``put_messages`` append under a lock, dispatch the new records
  to their ConsumeQueue and the index right away, and return in microseconds. The
  bytes are in the page cache, not necessarily on disk.
* ASYNC_FLUSH: run ``flush_commitlog`` periodically (every flushIntervalCommitLog
  ms) in a worker thread; ``rocketpy.store.services.flush_commitlog_service`` does.
* SYNC_FLUSH: acknowledge a send only after ``flush_until(result.flush_offset)``
  returned True. ``rocketpy.store.services.GroupCommitService`` batches the
  waiters of many sends into one msync from a worker thread (group commit), and
  answers FLUSH_DISK_TIMEOUT after syncFlushTimeout. ``put_message_and_flush`` is
  the blocking one-call form.
* ``flush_consume_queues`` (every flushIntervalConsumeQueue ms) also writes the
  checkpoint; ``clean_expired`` (every cleanResourceInterval ms) applies retention.
* ``check_disk`` (every 10 s) refuses puts (SERVICE_NOT_AVAILABLE) while the disk is
  full and takes them again once there is room; so does a put that finds no room for
  the CommitLog's next blocks (see mapped_file: blocks are allocated before they are
  written, so a full disk is never a SIGBUS).
* Reads (``get_message``, ``query_message`` ...) return copies of the record
  bytes, so results stay valid after files are deleted.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Callable, Iterator

from ..accel import compiled
from ..clock import now_ms
from .checkpoint import StoreCheckpoint
from .commitlog import CommitLog
from .config import BrokerRole, FlushDiskType, MessageStoreConfig
from .config_files import BrokerConfigFiles
from .consume_queue import ConsumeQueue
from .filters import MessageFilter, TagFilter
from .index import IndexService
from .mapped_file import MappedFile, SyncHook
from .reads import StoreReads
from .recovery import RecoveryReport, recover_commitlog, reput
from .retention import (
    DISK_SPACE_WARNING_LEVEL_RATIO,
    CleanResult,
    StoreRetention,
    disk_used_ratio,
    is_it_time_to_do,
    total_physical_memory,
)
from .running_flags import RunningFlags
from .types import (
    DispatchRequest,
    MessageExtBatch,
    MessageExtBrokerInner,
    PutMessageResult,
    PutMessageStatus,
    StoreError,
)

#: the send lane's plain-message appender and the dispatch of what it queued (accel), else None
_PlainAppender = compiled("PlainAppender")
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


class MessageStore(StoreReads, StoreRetention):
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
        self.clock = clock or now_ms
        self._sync_hook = sync_hook
        self._disk_usage = disk_usage or disk_used_ratio
        self.commitlog = self._make_commitlog(sync_hook)
        self._queues: dict[str, dict[int, ConsumeQueue]] = {}
        self.checkpoint: StoreCheckpoint | None = None
        self._index: IndexService | None = None
        self.config_files = BrokerConfigFiles(config.store_path_root_dir)
        self.recovery: RecoveryReport | None = None
        self._lock_fd: int | None = None
        self._open = False
        self.running_flags = RunningFlags()
        # The send lanes read these two on every put (RunningFlags.writeable, split as they test it):
        # kept in step with running_flags by _sync_flags.
        self._writable = True
        self._disk_full = False
        #: a CommitLog file could not be made or allocated: the disk counts as full until one can
        self._allocation_failed = False
        self._refusals = 0  # puts refused since the store was last writable (Java's printTimes)
        self._memory = total_physical_memory() * config.access_message_in_memory_max_ratio // 100
        self._last_physical_min_offset = 0
        self._last_cq_thorough_flush = 0
        self._last_cl_thorough_flush = 0
        #: appended by the send lane (plain_appender), not yet in the ConsumeQueues and index (see settle)
        self.pending: list[tuple[str, int, int, int, int, int, int, str | None, str | None]] = []
        #: the compiled appender of plain messages (accel), else None: the send lane's way into the
        #: CommitLog (the store's put_message, for the plain case, queuing the dispatch in ``pending``)
        self.plain_appender = _PlainAppender(self) if _PlainAppender is not None and self.plain_appends else None

    #: whether the send lane's compiled appender may write this store's CommitLog (a plain one)
    plain_appends = True

    def _make_commitlog(self, sync_hook: SyncHook | None) -> CommitLog:
        """The CommitLog this store writes (a subclass may put its records elsewhere)."""
        return CommitLog(self.config, self.clock, sync_hook=sync_hook)

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
            self._load_commitlog(clean)
            self._load_consume_queues()
            self.checkpoint = StoreCheckpoint(cfg.checkpoint_path)
            self._index = IndexService(
                cfg.index_dir,
                cfg.max_hash_slot_num,
                cfg.max_index_num,
                self.checkpoint,
                self.clock,
                cfg.max_msgs_num_batch,
            )
            self._index.on_failure = self._index_failed
            rebuild_from = self._index.load(clean)
            max_phy_cq = -1
            for cq in self._all_queues():
                cq.recover()
                max_phy_cq = max(max_phy_cq, cq.max_physic_offset)
            report = self._recover_commitlog(clean, rebuild_from)
            if not self.commitlog.mfq.files:
                for cq in self._all_queues():
                    cq.destroy()
                self._queues.clear()
            elif max_phy_cq >= report.truncated_at:
                for cq in self._all_queues():
                    cq.truncate_dirty_logic_files(report.truncated_at)
            self._recover_topic_queue_table()
            # The reput: whatever the ConsumeQueues do not cover yet gets dispatched now.
            reput_from = max([cq.max_physic_offset for cq in self._all_queues()] + [self.commitlog.min_offset, 0])
            report.dispatched = self._reput(reput_from)
            self._recover_topic_queue_table()
            with open(cfg.abort_path, "ab"):
                pass
            if cfg.broker_role != BrokerRole.SLAVE or self.commitlog.mfq.files:
                self._prepare_writable_file()
        except BaseException:
            self._release()
            raise
        self.recovery = report
        self._open = True
        return report

    def _load_commitlog(self, clean: bool) -> None:
        """Map the CommitLog's files (a crashed store's short last file may be extended)."""
        self.commitlog.mfq.load(repair_short_last=not clean)

    def _recover_commitlog(self, clean: bool, index_rebuild_from: int | None) -> RecoveryReport:
        """Cut the CommitLog after its last good record (re-dispatching after a crash); the report's
        ``truncated_at`` is where it now ends."""
        cp = self.checkpoint
        assert cp is not None
        index_safe = self.config.message_index_enable and self.config.message_index_safe
        return recover_commitlog(
            self.commitlog,
            clean_shutdown=clean,
            checkpoint_min_timestamp=cp.min_timestamp_index if index_safe else cp.min_timestamp,
            dispatch=self.do_dispatch,
            index_rebuild_from=index_rebuild_from,
        )

    def _reput(self, from_offset: int) -> int:
        """Dispatch every record from ``from_offset`` on (ReputMessageService); returns how many."""
        return reput(self.commitlog, from_offset, self.do_dispatch)[1]

    def close(self) -> None:
        """Flush everything, write the checkpoint, remove the abort file, unlock."""
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
            if self._index is not None:
                self._index.flush()
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
        if self._index is not None:
            self._index.close()
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
            holder = lock_holder(fd)
            os.close(fd)
            raise StoreError(f"store {self.config.store_path_root_dir} is in use by {holder} "
                             f"(it holds {self.config.lock_path})") from None
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
                self._queues.setdefault(topic, {})[qid] = cq

    def _all_queues(self) -> Iterator[ConsumeQueue]:
        """Every ConsumeQueue as it is (without settling: the flush thread walks them too)."""
        for queues in list(self._queues.values()):
            yield from list(queues.values())

    # -- deferred dispatch: settled here, before anything reads the queues or the index ----------

    @property
    def consume_queues(self) -> dict[str, dict[int, ConsumeQueue]]:
        """The ConsumeQueues by topic and queue id, with every append dispatched into them: the one place
        the send lane's deferred dispatch is settled before a read (see :meth:`settle`)."""
        if self.pending:
            self.settle()
        return self._queues

    @property
    def index(self) -> IndexService | None:
        """The IndexService (None before :meth:`open`), with every append indexed (as consume_queues)."""
        if self.pending:
            self.settle()
        return self._index

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
            self._queues.setdefault(topic, {})[queue_id] = cq
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
                self.consume_queue_failed(req.topic, req.queue_id)
        if self.config.message_index_enable and self.index is not None:
            self.index.build_index(req)

    # -- writing -----------------------------------------------------------------------------

    @property
    def put_allowed(self) -> bool:
        """Whether a put may append now: open, writable, disk not full, not a slave (_check_store_status's
        PUT_OK, read on every send of the lane)."""
        return self._open and self._writable and not self._disk_full and self.config.broker_role != BrokerRole.SLAVE

    def _check_store_status(self) -> PutMessageStatus:
        if not self._open:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        if self.config.broker_role == BrokerRole.SLAVE:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        if not self._writable or self._disk_full:
            if self._refusals % 50000 == 0:
                log.warning(
                    "the message store is not writable. It may be caused by one of the following reasons: "
                    "the broker's disk is full, write to logic queue error, write to index file error, etc"
                )
            self._refusals += 1
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        self._refusals = 0
        return PutMessageStatus.PUT_OK

    @property
    def writable(self) -> bool:
        """Whether puts are taken (RunningFlags.isWriteable): False while the disk is full or a
        ConsumeQueue or the index could not be written."""
        return self.running_flags.writeable

    def _sync_flags(self) -> None:
        flags = self.running_flags
        self._disk_full = flags.disk_full
        self._writable = flags.cq_writeable

    def _cannot_allocate(self, exc: OSError, what: str) -> None:
        """A CommitLog file could not be made or allocated: refuse puts until one can (check_disk)."""
        self._allocation_failed = True
        if self.running_flags.set_disk_full(True):
            log.error("%s: %s, so mark disk full", what, exc.strerror or exc)
        self._sync_flags()

    def _prepare_writable_file(self) -> bool:
        """The file the next append goes to, made and allocated ahead (AllocateMappedFileService's
        job): True when it is ready; otherwise the store refuses puts until it is."""
        commitlog = self.commitlog
        try:
            with commitlog.lock:
                if commitlog.mfq.files:
                    commitlog.mfq.get_last_mapped_file(0)  # the next file when the last is full
                commitlog.allocate_writable_file()
        except OSError as exc:
            if not self._allocation_failed:
                self._cannot_allocate(exc, "cannot allocate the CommitLog file appends go to")
            return False
        self._allocation_failed = False
        return True

    def settle(self) -> list[tuple[str, int, int, int, int, int, int, str | None, str | None]]:
        """Dispatch what the plain appender queued (ConsumeQueue units, index keys), in order; returns it
        (topic, queue id, offset, size, tags code, store timestamp, queue offset, keys, UNIQ_KEY).

        The dispatch is the compiled ``dispatch_plain``: only the compiled appender queues anything, and
        the general path (:meth:`do_dispatch`, ConsumeQueue.put, IndexService.build_index) is its reference."""
        pending = self.pending
        if not pending:
            return pending
        self.pending = []
        index = self._index if self.config.message_index_enable else None
        if index is not None and index.failed_from is not None:
            index = None  # keys are put again from where it failed (check_disk)
        last_ts = _dispatch_plain(self, pending, index)
        if last_ts and self.checkpoint is not None:
            self.checkpoint.logics_msg_timestamp = last_ts
        return pending

    def consume_queue_failed(self, topic: str, queue_id: int) -> None:
        """A ConsumeQueue refused a unit (its disk is full): no puts until check_disk re-dispatches."""
        if self.running_flags.set_logics_queue_error(True):
            log.error("consume queue can not write, %s %d: writes refused until it can", topic, queue_id)
            self._sync_flags()

    def _index_failed(self, phy_offset: int) -> None:
        if self.running_flags.set_index_file_error(True):
            self._sync_flags()

    def _redispatch(self) -> bool:
        """After ConsumeQueue or index writes failed: dispatch again from the first record they
        missed (units and keys already there are skipped); True when everything is dispatched."""
        if self.pending:
            self.settle()
        starts: list[int] = []
        index = self._index
        if index is not None and index.failed_from is not None:
            resumed = index.resume()
            if resumed is None:
                return False  # its last file still cannot be allocated
            starts.append(resumed)
        for cq in self._all_queues():
            if cq.failed_from is not None:
                starts.append(cq.failed_from)
                cq.failed_from = None
        if not starts:
            return True
        start = min(starts)
        _, count = reput(self.commitlog, start, self.do_dispatch)
        if any(cq.failed_from is not None for cq in self._all_queues()) or (
            self._index is not None and self._index.failed_from is not None
        ):
            return False
        log.info("dispatched %d records again from CommitLog offset %d: writes resume", count, start)
        return True

    def check_disk(self) -> None:
        """Java's CleanCommitLogService.isSpaceFull (every 10 s): past diskSpaceWarningLevelRatio the
        store refuses puts (DISK_FULL) and takes them again below it. Also, once there is room, the
        CommitLog file appends go to is made ahead, and what the ConsumeQueues or the index missed
        is dispatched again."""
        cfg = self.config
        used = self._disk_usage(cfg.commit_log_dir)
        if used > cfg.disk_max_used_space_ratio / 100.0:
            log.info("physic disk of commitLog used: %s", used)
        flags = self.running_flags
        if used > DISK_SPACE_WARNING_LEVEL_RATIO:
            if flags.set_disk_full(True):
                log.error("physic disk of commitLog maybe full soon, used %s, so mark disk full", used)
        elif not self._open or cfg.broker_role == BrokerRole.SLAVE and not self.commitlog.mfq.files:
            flags.set_disk_full(False)
        elif not self._allocation_failed or self._prepare_writable_file():
            if flags.set_disk_full(False):
                log.info("physic disk space of commitLog OK %s, so mark disk ok", used)
        if not flags.disk_full and self._open and flags.dispatch_error and self._redispatch():
            flags.set_logics_queue_error(False)
            flags.set_index_file_error(False)
        self._sync_flags()

    def disk_util(self) -> str:
        """SendMessageProcessor.diskUtil: used fractions of the CommitLog, ConsumeQueue and index paths."""
        cfg = self.config
        cl = min(100.0, self._disk_usage(cfg.commit_log_dir))
        cq = self._disk_usage(cfg.consume_queue_dir)
        index = self._disk_usage(cfg.index_dir)
        return f"CL: {cl:5.2f} CQ: {cq:5.2f} INDEX: {index:5.2f}"

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Append one message and dispatch it. Not yet durable: see :meth:`flush_until`."""
        status = self._check_store_status()
        if status is not PutMessageStatus.PUT_OK:
            return PutMessageResult(status)
        try:
            result, reqs = self.commitlog.put_message(msg)
        except OSError as exc:
            self._cannot_allocate(exc, f"create mapped file error, topic: {msg.topic} clientAddr: {msg.born_host}")
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        for req in reqs:
            self.do_dispatch(req)
        return result

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """Append a batch (one record per entry, consecutive queue offsets) and dispatch it."""
        status = self._check_store_status()
        if status is not PutMessageStatus.PUT_OK:
            return PutMessageResult(status)
        try:
            result, reqs = self.commitlog.put_messages(batch)
        except OSError as exc:
            self._cannot_allocate(exc, f"create mapped file error, topic: {batch.topic} clientAddr: {batch.born_host}")
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
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
        if not self._open:
            return False
        before = self.commitlog.max_offset
        try:
            if not self.commitlog.append_data(start_offset, data):
                return False
        except OSError as exc:
            self._cannot_allocate(exc, f"cannot append replicated bytes at CommitLog offset {start_offset}")
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
        now = now_ms()
        if least_pages is None:
            least_pages = self.config.flush_commit_log_least_pages
            if now >= self._last_cl_thorough_flush + self.config.flush_commit_log_thorough_interval:
                self._last_cl_thorough_flush = now
                least_pages = 0
        flushed = self.commitlog.flush(least_pages)
        self._stamp_checkpoint()
        return flushed

    def drop_cached_pages(self) -> int:
        """Drop the page cache of the CommitLog long flushed (see MappedFileQueue.drop_cached); the bytes
        dropped. For the flush services' threads: not on the event loop."""
        return self.commitlog.mfq.drop_cached()

    def flush(self) -> int:
        """Flush the whole CommitLog now (MessageStore.flush); returns the flushed offset."""
        return self.flush_commitlog(0)

    def flush_until(self, offset: int) -> bool:
        """Make sure CommitLog bytes below ``offset`` are on disk (group commit).

        Returns True when they are. Safe to call from a worker thread while the
        owner keeps appending.
        """
        ok = self.commitlog.mfq.flush_until(offset)
        self._stamp_checkpoint()
        return ok

    def _stamp_checkpoint(self) -> None:
        """The checkpoint's physicMsgTimestamp: the store time of the last record on disk."""
        ts = self.commitlog.mfq.store_timestamp
        if ts > 0 and self.checkpoint is not None:
            self.checkpoint.physic_msg_timestamp = ts

    def sync_request(self, offset: int) -> tuple[MappedFile, int, int, int, int] | None:
        """(file, address, start, stop, stamp): the CommitLog range whose msync brings the flushed offset
        to ``offset`` when it lies in one file, and the store time of the last record in it; None
        otherwise. For a flusher that syncs by address (GroupCommitService) and then calls
        :meth:`note_synced`."""
        mfq = self.commitlog.mfq
        dirty = mfq.dirty_range(offset)
        return None if dirty is None else (*dirty, dirty[0].store_timestamp)

    def note_synced(self, mf: MappedFile, start: int, stop: int, stamp: int) -> None:
        """The range :meth:`sync_request` gave was msynced without error (see MappedFileQueue.note_synced)."""
        self.commitlog.mfq.note_synced(mf, start, stop, stamp)
        self._stamp_checkpoint()

    def flush_consume_queues(self, least_pages: int | None = None) -> None:
        """One FlushConsumeQueueService round; a thorough one also writes the checkpoint."""
        now = now_ms()
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


def lock_holder(fd: int) -> str:
    """Who holds the record lock on byte 0 of ``fd`` (F_GETLK): "process PID (command line)", or "another
    process" when the kernel does not say (a holder in another PID namespace)."""
    import struct

    flock = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 1, 0)
    try:
        pid = struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK, flock))[4]
    except OSError:
        return "another process"
    if pid <= 0:
        return "another process"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmdline = ""
    return f"process {pid} ({cmdline[:200]})" if cmdline else f"process {pid}"

