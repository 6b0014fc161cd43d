"""The message store of a DLedger broker (DefaultMessageStore over a DLedgerCommitLog).

Everything but the CommitLog is the store's own: ConsumeQueues, IndexFile, checkpoint, config files,
lock and abort file in ``storePathRootDir``. The CommitLog is the member's ledger
(``storePathRootDir/dledger-<selfId>/``), recovered as DLedgerMmapFileStore recovers it, and the
ConsumeQueues and index are fed from committed entries only: at open (the reput from what the
ConsumeQueues already hold) and whenever the committed index moves (:meth:`dispatch_committed`).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..codecs.dledger import ENTRY_HEADER_SIZE
from ..store.config import MessageStoreConfig
from ..store.mapped_file import SyncHook
from ..store.message_store import MessageStore
from ..store.recovery import RecoveryReport
from ..store.types import DispatchRequest, StoreError
from .commitlog import DLedgerCommitLog
from .file_ledger import FileLedger
from .ledger import LedgerError

__all__ = ["DLedgerMessageStore"]


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
        old = self.config.commit_log_dir
        if os.path.isdir(old) and any(name.isdigit() for name in os.listdir(old)):
            # Java would go on with the old CommitLog as the part below the ledger ("divided" offset);
            # here its offsets would collide with the ledger's, so the store is refused instead
            raise StoreError(f"{old} holds a CommitLog written without DLedger: a DLedger broker cannot take it "
                             f"over here; start on an empty store (or move the CommitLog away)")
        try:
            self.ledger.load()
        except LedgerError as exc:
            raise StoreError(f"DLedger store {self.ledger.path}: {exc}") from None

    def _recover_commitlog(self, clean: bool, index_rebuild_from: int | None) -> RecoveryReport:
        # DLedgerCommitLog.recover: the ledger cut its own unfinished tail; ConsumeQueue units past the
        # last written entry go (truncated_at); what they miss is dispatched by the reput
        return RecoveryReport(
            clean_shutdown=clean,
            records=self.ledger.end_index + 1,
            truncated_at=self.ledger.max_wrote_position,
        )

    def _reput(self, from_offset: int) -> int:
        self.reput_from = from_offset
        return len(self.dispatch_committed())

    def _prepare_writable_file(self) -> bool:
        return True  # the ledger allocates a chunk ahead as it appends (a full disk answers DISK_FULL)

    # -- the dispatch of committed entries --------------------------------------------------------------
    def dispatch_committed(self) -> list[DispatchRequest]:
        """Feed every entry committed since the last call to its ConsumeQueue and the index; returns what
        was dispatched (the broker wakes the long polls of those queues)."""
        out: list[DispatchRequest] = []
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
        if topic is not None:
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
