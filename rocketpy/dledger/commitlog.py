"""The DLedger CommitLog (DLedgerCommitLog): message records carried inside DLedger entries.

Each record is the body of one entry of the member's ledger (:class:`FileLedger`, Java's layout), so a
record's physical offset, the one its ConsumeQueue unit, its index keys and its offset message id hold, is
``entry pos + 48`` (DLedgerEntry.BODY_OFFSET). Java writes it through an append hook once the position is
known; here the position is known first (the put lock holds, nothing else appends) and the record is built
with it, which gives the same bytes.

A store that held a plain CommitLog before it became a DLedger member keeps it as the "divided" CommitLog
(``dividedCommitlogOffset``): the old files stay where they are, read only, and serve every offset below
the divided offset (the end of the old last file, which the first start seals with a blank); the ledger's
first data file starts there. Reads, pulls and lookups go to the old files below it, the dispatch walks
them before the entries, and retention deletes them first (the ledger's files are kept meanwhile).

Only the leader appends, through ``append_entry`` (the member's :meth:`DLedgerNode.append_now`, set by
the broker): the put answers once the member reports the entry held by a quorum. Readers see committed
entries only: ``max_offset`` is the committed position, and :meth:`committed_records` walks the entries up
to it for the ConsumeQueue and index dispatch (ReputMessageService over DLedgerCommitLog's getData and
checkMessageAndReturnSize).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from ..codecs.dledger import BLANK_MAGIC, ENTRY_HEADER_SIZE, DLedgerEntry, DLedgerResponseCode, peek_magic_size
from ..codecs.message import MessageExt, offset_msg_id
from ..store.commitlog import CONSUMED_TRANSACTION_TYPES, CommitLog
from ..store.config import MessageStoreConfig
from ..store.mapped_file import MappedFile
from ..store.types import (
    AppendMessageResult,
    AppendMessageStatus,
    DispatchRequest,
    MessageExtBatch,
    MessageExtBrokerInner,
    PutMessageResult,
    PutMessageStatus,
)
from .file_ledger import FileLedger
from .ledger import LedgerError

__all__ = ["DLedgerCommitLog"]

log = logging.getLogger("rocketpy.dledger")

_HOUR_MS = 3_600_000


class DLedgerCommitLog(CommitLog):
    """A CommitLog over a member's ledger: same reads, appends through the leader."""

    def __init__(self, config: MessageStoreConfig, clock: Callable[[], int], ledger: FileLedger) -> None:
        # reads find records in the ledger's data files, by the same offsets
        super().__init__(config, clock, files=ledger.data)
        self.ledger = ledger
        #: the leader's append (DLedgerNode.append_now); None until the broker's member runs
        self.append_entry: Callable[[bytes], DLedgerEntry] | None = None
        #: the plain CommitLog this store had before (read only), and where the ledger takes over from it
        #: (dividedCommitlogOffset; -1: none)
        self.old: CommitLog | None = None
        self.divided_offset = -1

    def divide(self, old: CommitLog, divided_offset: int) -> None:
        """Serve offsets below ``divided_offset`` from ``old``, the CommitLog written without DLedger."""
        self.old, self.divided_offset = old, divided_offset

    @property
    def has_old_files(self) -> bool:
        return self.old is not None and bool(self.old.mfq.files)

    # -- reads below the divided offset go to the old CommitLog -----------------------------------
    def find_file(self, offset: int, return_first_on_not_found: bool = False) -> MappedFile | None:
        old = self.old
        if old is not None and offset < self.divided_offset:
            return old.mfq.find_by_offset(offset, return_first_on_not_found)
        return self.mfq.find_by_offset(offset, return_first_on_not_found)

    def get_message(self, offset: int, size: int) -> bytes | None:
        old = self.old
        if old is not None and offset < self.divided_offset:
            return old.get_message(offset, size)
        return super().get_message(offset, size)

    @property
    def min_offset(self) -> int:
        """getMinOffset: the old CommitLog's while it has files, else the ledger's."""
        old = self.old
        if old is not None and old.mfq.files:
            return old.min_offset
        return self.ledger_min_offset

    @property
    def ledger_min_offset(self) -> int:
        return super().min_offset

    # -- offsets: readers see what is committed ----------------------------------------------------
    @property
    def max_offset(self) -> int:
        committed = self.ledger.committed_pos
        if committed > 0:
            return committed
        first = self.mfq.first_file()
        return first.file_from_offset if first is not None else 0

    def get_data(self, offset: int, return_first_on_not_found: bool | None = None) -> tuple[int, bytes] | None:
        old = self.old
        if old is not None and offset < self.divided_offset:
            return old.get_data(offset, return_first_on_not_found)
        got = super().get_data(offset, return_first_on_not_found)
        if got is None:
            return None
        start, data = got
        end = self.ledger.committed_pos
        if start >= end:
            return None
        return start, data[: end - start]

    # -- writing: the leader's appends ----------------------------------------------------------------
    def _append(self, record: bytes, pos: int) -> DLedgerEntry:
        append = self.append_entry
        if append is None:
            raise LedgerError(DLedgerResponseCode.NOT_LEADER, "the DLedger member is not running")
        entry = append(record)
        if entry.pos != pos:  # nothing else appends under the put lock: a bug, not a race
            raise LedgerError(DLedgerResponseCode.DISK_ERROR, f"entry {entry.index} went to {entry.pos}, not {pos}")
        return entry

    def put_message(self, msg: MessageExtBrokerInner) -> tuple[PutMessageResult, list[DispatchRequest]]:
        """DLedgerCommitLog.asyncPutMessage up to handleAppend: the record is appended as an entry and the
        result names it (``dledger_entry``); nothing is dispatched before the entry is committed."""
        msg.store_timestamp = self.clock()  # Java sets it before taking the lock (setMessageInfo)
        c = self.check_put(msg)
        if isinstance(c, PutMessageResult):
            return c, []
        key = (msg.topic, msg.queue_id)
        with self.lock:
            queue_offset = self.topic_queue_table.setdefault(key, 0)
            if c.tran not in CONSUMED_TRANSACTION_TYPES:
                queue_offset = 0  # prepared and rollback records never reach a ConsumeQueue
            pos = self.ledger.next_pos(ENTRY_HEADER_SIZE + c.msg_len)
            phys = pos + ENTRY_HEADER_SIZE
            try:
                entry = self._append(self.record_of(msg, c, queue_offset, phys), pos)
            except LedgerError as exc:
                return _refused(exc), []
            if c.tran in CONSUMED_TRANSACTION_TYPES:
                self.topic_queue_table[key] = queue_offset + 1
        result = self.stored(msg, c, queue_offset, phys)
        return PutMessageResult(PutMessageStatus.PUT_OK, result, dledger_entry=(entry.term, entry.index)), []

    def put_messages(self, batch: MessageExtBatch) -> tuple[PutMessageResult, list[DispatchRequest]]:
        """asyncPutMessages: one entry per message of the batch, each record carrying only its own
        properties (DLedger's batch serializer adds none of the batch's); the last entry answers."""
        batch.store_timestamp = self.clock()
        c = self.check_batch(batch, batch_properties=False)
        if isinstance(c, PutMessageResult):
            return c, []
        key = (batch.topic, batch.queue_id)
        ids: list[str] = []
        first_phys = -1
        entry: DLedgerEntry | None = None
        with self.lock:
            first_queue_offset = queue_offset = self.topic_queue_table.setdefault(key, 0)
            for e in c.entries:
                pos = self.ledger.next_pos(ENTRY_HEADER_SIZE + e[4])
                phys = pos + ENTRY_HEADER_SIZE
                try:
                    entry = self._append(self.batch_record(batch, c, e, queue_offset, phys), pos)
                except LedgerError as exc:
                    if entry is not None:
                        # some entries are in: they may yet commit; Java's batch future fails likewise
                        self.topic_queue_table[key] = queue_offset
                    return _refused(exc), []
                if first_phys < 0:
                    first_phys = phys
                ids.append(offset_msg_id(c.store_ip, c.store_port, phys))
                queue_offset += 1
            self.topic_queue_table[key] = queue_offset
        assert entry is not None
        batch.queue_offset = first_queue_offset
        batch.commit_log_offset = first_phys
        result = AppendMessageResult(
            AppendMessageStatus.PUT_OK,
            wrote_offset=first_phys,
            wrote_bytes=sum(e[4] for e in c.entries),
            msg_id=",".join(ids),
            store_timestamp=batch.store_timestamp,
            logics_offset=first_queue_offset,
            msg_num=len(c.entries),
        )
        return PutMessageResult(PutMessageStatus.PUT_OK, result, dledger_entry=(entry.term, entry.index)), []

    def append_data(self, start_offset: int, data: bytes) -> bool:
        return False  # no HA stream in DLedger mode: followers get entries from the leader

    def allocate_writable_file(self) -> None:
        pass  # the ledger allocates its blocks a chunk ahead as it appends

    def delete_expired_files(
        self, expired_ms: int, now_ms: int, *, clean_immediately: bool, keep_from: int
    ) -> list[str]:
        """DLedger's CleanSpaceService: whole data files older than fileReservedTime + 1 hours (DLedgerCommitLog
        gives DLedger fileReservedHours so), never one holding an entry that is not committed (Java's does not
        look) nor one past ``keep_from``; the ledger's first index moves past them.

        While the old CommitLog of a divided store has files, those go instead (its last one too, once it is
        the only one left) and the ledger's stay (deleteExpiredFile's disableDeleteDledger)."""
        old = self.old
        if old is not None and old.mfq.files:
            gone = old.delete_expired_files(expired_ms, now_ms, clean_immediately=clean_immediately,
                                            keep_from=min(keep_from, self.divided_offset))
            files = old.mfq.files
            if not gone and len(files) == 1:  # the plain rule keeps the last file: here it goes too
                last = files[0]
                log.info("Try to delete the last old commitlog file %s", last.file_name)
                if now_ms >= last.last_modified_ms() + expired_ms or clean_immediately:
                    old.mfq.delete_last_file()
                    log.warning("deleted CommitLog file %s, the last of the old CommitLog", last.path)
                    gone = [last.path]
            return gone
        gone = super().delete_expired_files(expired_ms + _HOUR_MS, now_ms, clean_immediately=clean_immediately,
                                            keep_from=min(keep_from, self.ledger.committed_pos))
        if gone:
            self.ledger.revise_begin()
        return gone

    def flush(self, least_pages: int = 0) -> int:
        self.ledger.flush()
        return self.mfq.flushed_where

    def close(self) -> None:
        self.ledger.close()  # its data files (this CommitLog's) and its index
        if self.old is not None:
            self.old.close()

    # -- the committed records, for the dispatch ------------------------------------------------------
    def committed_records(self, from_offset: int) -> Iterator[tuple[int, MessageExt | None]]:
        """(entry end, record) for every entry from the one starting at ``from_offset`` up to the committed
        position; the record is None where an entry holds no valid message (logged, skipped)."""
        end = self.ledger.committed_pos
        offset = max(from_offset, self.ledger_min_offset, 0)
        while offset < end:
            mf = self.mfq.find_by_offset(offset)
            if mf is None:
                return
            rel = offset - mf.file_from_offset
            if mf.file_size - rel < ENTRY_HEADER_SIZE:
                offset = mf.file_from_offset + mf.file_size  # no room for an entry: the file's end
                continue
            magic, size = peek_magic_size(mf.mm, rel)
            if magic == BLANK_MAGIC:
                offset = mf.file_from_offset + mf.file_size  # the blank that ends a data file
                continue
            if size <= ENTRY_HEADER_SIZE or rel + size > mf.file_size:
                log.error("[BUG] no DLedger entry at offset %d (size %d): dispatch stops there", offset, size)
                return
            got, msg = self.check_message(mf.mm, rel + ENTRY_HEADER_SIZE, False)
            if got <= 0 or msg is None:
                log.error("[BUG] DLedger entry at offset %d holds no message record", offset)
                msg = None
            offset += size
            yield offset, msg


def _refused(exc: LedgerError) -> PutMessageResult:
    """handleAppend refused (not the leader, pending full, disk full...): Java's future has pos -1, which
    DLedgerCommitLog answers OS_PAGECACHE_BUSY."""
    log.debug("DLedger append refused: %s", exc)
    return PutMessageResult(
        PutMessageStatus.OS_PAGECACHE_BUSY, AppendMessageResult(AppendMessageStatus.UNKNOWN_ERROR)
    )
