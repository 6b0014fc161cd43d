"""The message store of a DLedger broker (DefaultMessageStore over a DLedgerCommitLog).

Everything but the CommitLog is the store's own: ConsumeQueues, IndexFile, checkpoint, config files,
lock and abort file in ``storePathRootDir``. The CommitLog is the member's ledger
(``storePathRootDir/dledger-<selfId>/``), recovered as DLedgerMmapFileStore recovers it, and the
ConsumeQueues and index are fed from committed entries only: at open (the reput from what the
ConsumeQueues already hold) and whenever the committed index moves (:meth:`dispatch_committed`).

A store that had a plain CommitLog goes on with it as the divided CommitLog (DLedgerCommitLog's
``dividedCommitlogOffset``): on the first start in DLedger mode the old CommitLog is recovered, its last
file sealed with a blank, and the ledger's first data file made where that file ends; the old records stay
readable below that offset, their ConsumeQueues, index and the consumer offsets hold, and new messages go
into the ledger above it. Later starts find the ledger and take the divided offset from its first file.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable

from ..codecs.dledger import ENTRY_HEADER_SIZE
from ..codecs.message import BLANK_MAGIC_CODE
from ..store.commitlog import CommitLog
from ..store.config import MessageStoreConfig
from ..store.mapped_file import MappedFileQueue, SyncHook
from ..store.message_store import MessageStore
from ..store.recovery import RecoveryReport, recover_commitlog, reput
from ..store.types import DispatchRequest, StoreError
from .commitlog import DLedgerCommitLog
from .file_ledger import FileLedger
from .ledger import LedgerError

__all__ = ["DLedgerMessageStore"]

log = logging.getLogger("rocketpy.dledger")

#: a CommitLog blank's first 8 bytes: the size of the rest of the file and BLANK_MAGIC_CODE
BLANK_HEAD = struct.Struct(">ii")


class DLedgerMessageStore(MessageStore):
    def __init__(
        self,
        config: MessageStoreConfig,
        *,
        clock: Callable[[], int] | None = None,
        sync_hook: SyncHook | None = None,
        disk_usage: Callable[[str], float] | None = None,
    ) -> None:
        if not config.d_leger_self_id:
            raise StoreError("a DLedger store needs dLegerSelfId")
        self.ledger = FileLedger(
            config.dledger_dir, config.mapped_file_size_commit_log, data_path=config.store_path_d_ledger_commit_log
        )
        super().__init__(config, clock=clock, sync_hook=sync_hook, disk_usage=disk_usage)
        self.commitlog: DLedgerCommitLog
        #: where the next committed entry to dispatch starts (ReputMessageService.reputFromOffset)
        self.reput_from = 0

    plain_appends = False  # the send lane's appender writes a plain CommitLog: not here

    def _make_commitlog(self, sync_hook: SyncHook | None) -> DLedgerCommitLog:
        return DLedgerCommitLog(self.config, self.clock, self.ledger)

    # -- open: the ledger's recovery, then the reput of what is committed ----------------------------
    def _load_commitlog(self, clean: bool) -> None:
        try:
            self.ledger.load()
        except LedgerError as exc:
            raise StoreError(f"DLedger store {self.ledger.path}: {exc}") from None
        cfg = self.config
        old_dir = cfg.commit_log_dir
        if os.path.isdir(old_dir) and any(name.isdigit() for name in os.listdir(old_dir)):
            # a CommitLog written without DLedger: the divided CommitLog's part below the ledger, read only
            old = CommitLog(cfg, self.clock, files=MappedFileQueue(old_dir, cfg.mapped_file_size_commit_log))
            old.mfq.load(repair_short_last=not clean)
            first = self.ledger.data.first_file()
            # the ledger already took over (an earlier start): it begins at the divided offset
            self.commitlog.divide(old, first.file_from_offset if first is not None else -1)

    def _recover_commitlog(self, clean: bool, index_rebuild_from: int | None) -> RecoveryReport:
        # DLedgerCommitLog.recover: the ledger cut its own unfinished tail; ConsumeQueue units past the
        # last written entry go (truncated_at); what they miss is dispatched by the reput
        old = self.commitlog.old
        if old is not None and self.commitlog.divided_offset < 0:
            return self._divide(old, clean, index_rebuild_from)
        return RecoveryReport(
            clean_shutdown=clean,
            records=self.ledger.end_index + 1,
            truncated_at=self.ledger.max_wrote_position,
        )

    def _divide(self, old: CommitLog, clean: bool, index_rebuild_from: int | None) -> RecoveryReport:
        """The first start over a plain CommitLog (DLedgerCommitLog.recover with no ledger files): the old
        CommitLog is recovered as a clean one (Java: "No need the abnormal recover"), its last file sealed
        with a blank at its end, and the ledger's first data file made where that file ends, the divided
        offset. ConsumeQueue units past the old CommitLog's end go (truncated_at)."""
        cp = self.checkpoint
        assert cp is not None
        index_safe = self.config.message_index_enable and self.config.message_index_safe
        report = recover_commitlog(
            old, clean_shutdown=True, dispatch=self.do_dispatch, index_rebuild_from=index_rebuild_from,
            checkpoint_min_timestamp=cp.min_timestamp_index if index_safe else cp.min_timestamp,
        )
        report.clean_shutdown = clean
        mf = old.mfq.last_file()
        if mf is None:  # nothing valid in it: the ledger starts at 0 as on an empty store
            self.commitlog.old = None
            return report
        size = old.file_size
        pos = mf.wrote_position
        need_blank = size - pos >= BLANK_HEAD.size and BLANK_HEAD.unpack_from(mf.mm, pos)[1] != BLANK_MAGIC_CODE
        if need_blank:
            mf.write_at(pos, BLANK_HEAD.pack(size - pos, BLANK_MAGIC_CODE))
        mf.wrote_position = size
        mf.flush(0)
        mf.set_positions(size)
        divided = mf.file_from_offset + size
        log.info("Recover old commitlog needWriteMagicCode=%s pos=%d file=%s dividedCommitlogOffset=%d",
                 "true" if need_blank else "false", mf.file_from_offset + pos, mf.path, divided)
        try:
            self.ledger.start_at(divided)
        except (LedgerError, OSError) as exc:
            raise StoreError(f"DLedger store {self.ledger.path}: cannot start the ledger at {divided}: {exc}") from None
        log.info("Will set the initial commitlog offset=%d for dledger", divided)
        self.commitlog.divide(old, divided)
        return report

    def _reput(self, from_offset: int) -> int:
        self.reput_from = from_offset
        return self._reput_old() + len(self.dispatch_committed())

    def _reput_old(self) -> int:
        """Dispatch what the old CommitLog of a divided store holds past ``reput_from`` (a plain store stopped
        before its dispatch caught up), then go on at the divided offset; how many records."""
        cl = self.commitlog
        if cl.old is None or self.reput_from >= cl.divided_offset:
            return 0
        _, count = reput(cl.old, self.reput_from, self.do_dispatch)
        self.reput_from = cl.divided_offset
        return count

    def _prepare_writable_file(self) -> bool:
        return True  # the ledger allocates a chunk ahead as it appends (a full disk answers DISK_FULL)

    # -- the dispatch of committed entries --------------------------------------------------------------
    def dispatch_committed(self) -> list[DispatchRequest]:
        """Feed every entry committed since the last call to its ConsumeQueue and the index; returns what
        was dispatched (the broker wakes the long polls of those queues)."""
        out: list[DispatchRequest] = []
        self._reput_old()
        for end, msg in self.commitlog.committed_records(self.reput_from):
            self.reput_from = end
            if msg is not None:
                req = self.commitlog.dispatch_request(msg)
                self.do_dispatch(req)
                out.append(req)
        return out

    def get_earliest_message_time(self, topic: str | None = None, queue_id: int = 0) -> int:
        """Without a topic, DefaultMessageStore.getEarliestMessageTime over a DLedgerCommitLog: the record in
        the ledger's first entry, at getMinPhyOffset() + DLedgerEntry.BODY_OFFSET (not the entry's header,
        whose magic read as a record size gave -1). Java reads maxMessageSize * 2 bytes there, which its
        mapped file refuses (-1) until that much is written after it; the plain store reads the record's own
        size, and so does this one."""
        if topic is not None or self.commitlog.has_old_files:
            # below a divided store's ledger: the old CommitLog's first record (Java reads 48 bytes into it)
            return super().get_earliest_message_time(topic, queue_id)
        first = self.commitlog.min_offset
        if first < 0 or self.ledger.end_index < 0:
            return -1
        offset = first + ENTRY_HEADER_SIZE
        size = self.commitlog.record_size_at(offset)
        return -1 if size is None or size <= 0 else self.commitlog.pickup_store_timestamp(offset, size)

    def dispatch_behind_bytes(self) -> int:
        """Committed bytes not dispatched yet (DefaultMessageStore.dispatchBehindBytes)."""
        return max(0, self.commitlog.max_offset - self.reput_from)

    def _deletable_below(self) -> int:
        return min(super()._deletable_below(), self.reput_from)  # nothing the ConsumeQueues still miss

    def recover_topic_queue_table(self) -> None:
        """The next queue offsets from the ConsumeQueues (a new leader's first step: entries of the old
        leader that never committed took offsets nobody holds)."""
        self._recover_topic_queue_table()
