"""Reading the store: pulls (getMessage with Java's transfer limits), queue offsets and times,
lookups by offset, message id and key (DefaultMessageStore's read side), as a part of MessageStore."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..codecs.errors import CodecError
from ..codecs.message import MessageExt, decode_message, decode_offset_msg_id, parse_host
from ..codecs.store_records import CONSUME_QUEUE_UNIT, CQ_STORE_UNIT_SIZE
from .config import BrokerRole
from .filters import MessageFilter
from .types import GetMessageResult, GetMessageStatus, QueryMessageResult

if TYPE_CHECKING:
    from .commitlog import CommitLog
    from .config import MessageStoreConfig
    from .consume_queue import ConsumeQueue
    from .index import IndexService

__all__ = ["StoreReads"]


class StoreReads:
    """MessageStore's read methods (mixed into MessageStore)."""

    # MessageStore's, used here
    config: MessageStoreConfig
    commitlog: CommitLog
    _open: bool
    _memory: int

    if TYPE_CHECKING:
        # properties that settle the send lane's deferred dispatch first (MessageStore.consume_queues)
        @property
        def consume_queues(self) -> dict[str, dict[int, ConsumeQueue]]: ...

        @property
        def index(self) -> IndexService | None: ...

        def find_consume_queue(self, topic: str, queue_id: int, create: bool = False) -> ConsumeQueue | None: ...

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
            find_file = commitlog.find_file  # (a DLedger store's divided CommitLog: the old files below)
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
        cq = self.find_consume_queue(topic, queue_id)
        return cq.max_offset_in_queue if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.find_consume_queue(topic, queue_id)
        return cq.min_offset_in_queue if cq is not None else 0

    def get_message_total_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self.find_consume_queue(topic, queue_id)
        return cq.message_total if cq is not None else 0

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, cq_offset: int) -> int:
        cq = self.find_consume_queue(topic, queue_id)
        unit = cq.get_unit(cq_offset) if cq is not None else None
        return unit.commit_log_offset if unit is not None else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
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
