"""ConsumeQueue: per topic and queue id, one 20-byte unit per message.

Files live under ``consumequeue/<topic>/<queueId>/`` and are named by their start
byte offset in the queue; unit n sits at byte n * 20. A unit is (CommitLog
offset, record size, tagsCode); layout in codecs.store_records.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from ..codecs import store_records as sr
from .mapped_file import MappedFileQueue, SyncHook

__all__ = ["CQ_STORE_UNIT_SIZE", "ConsumeQueue"]

log = logging.getLogger("rocketpy.store")

CQ_STORE_UNIT_SIZE = sr.CQ_STORE_UNIT_SIZE
_UNIT = CQ_STORE_UNIT_SIZE
_PRE_BLANK = sr.build_consumequeue_entry(0, 0x7FFFFFFF, 0)
_unpack_unit = sr.CONSUME_QUEUE_UNIT.unpack_from  # the codec's compiled form of CONSUME_QUEUE_ENTRY
_pack_unit = sr.CONSUME_QUEUE_UNIT.pack
#: blocks are allocated this far ahead of the units (a queue's file is mostly empty for long)
ALLOCATION_CHUNK = 64 * 1024


class ConsumeQueue:
    """The logical queue of one (topic, queueId)."""

    __slots__ = (
        "topic", "queue_id", "mapped_file_size", "dir", "mfq", "max_physic_offset", "min_logic_offset", "failed_from",
    )  # fmt: skip

    def __init__(
        self, topic: str, queue_id: int, root: str, mapped_file_size: int, *, sync_hook: SyncHook | None = None
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.mapped_file_size = mapped_file_size
        self.dir = os.path.join(root, topic, str(queue_id))
        self.mfq = MappedFileQueue(
            self.dir, mapped_file_size, sync_hook=sync_hook, allocation_chunk=ALLOCATION_CHUNK, shared_locks=True
        )
        self.max_physic_offset = -1  # end (offset + size) of the last record indexed
        self.min_logic_offset = 0  # byte offset of the first live unit
        #: CommitLog offset of the first record this queue could not take (no disk space): later
        #: ones are refused too, until the store re-dispatches from here (MessageStore.check_disk)
        self.failed_from: int | None = None

    # -- load and recovery ------------------------------------------------------------

    def load(self) -> None:
        self.mfq.load()

    def recover(self) -> None:
        """Find the last written unit (scanning the last three files) and cut there."""
        files = self.mfq.files
        if not files:
            return
        index = max(len(files) - 3, 0)
        mf = files[index]
        process = mf.file_from_offset
        file_offset = 0
        while True:
            buf = mf.mm
            file_offset = 0
            for i in range(0, self.mapped_file_size, _UNIT):
                offset, size, _tags = _unpack_unit(buf, i)
                if offset >= 0 and size > 0:
                    file_offset = i + _UNIT
                    self.max_physic_offset = offset + size
                else:
                    break
            if file_offset == self.mapped_file_size and index + 1 < len(files):
                index += 1
                mf = files[index]
                process = mf.file_from_offset
                continue
            break
        process += file_offset
        self.mfq.flushed_where = process
        self.mfq.truncate_dirty_files(process)

    def truncate_dirty_logic_files(self, phy_offset: int) -> None:
        """Drop units pointing at or past ``phy_offset`` (the CommitLog was cut there)."""
        self.max_physic_offset = phy_offset
        while True:
            mf = self.mfq.last_file()
            if mf is None:
                return
            mf.set_positions(0)
            for i in range(0, self.mapped_file_size, _UNIT):
                offset, size, _tags = _unpack_unit(mf.mm, i)
                if i == 0:
                    if offset >= phy_offset:
                        self.mfq.delete_last_file()
                        break
                    if not (offset >= 0 and size > 0):
                        return  # an empty last file stays empty
                elif not (offset >= 0 and size > 0) or offset >= phy_offset:
                    return
                mf.set_positions(i + _UNIT)
                self.max_physic_offset = offset + size
                if i + _UNIT == self.mapped_file_size:
                    return
            else:
                return

    def correct_min_offset(self, phy_min_offset: int) -> None:
        """Move the queue's start to the first unit still pointing into the CommitLog; when every
        unit of its first file points below it (the CommitLog files they named were deleted and
        this file is the queue's last), the queue starts after them."""
        mf = self.mfq.first_file()
        if mf is None:
            return
        for i in range(0, mf.read_position, _UNIT):
            offset, _size, _tags = _unpack_unit(mf.mm, i)
            if offset >= phy_min_offset:
                self.min_logic_offset = mf.file_from_offset + i
                return
        if mf is self.mfq.last_file() and mf.read_position > 0:
            self.min_logic_offset = max(self.min_logic_offset, mf.file_from_offset + mf.read_position)

    # -- writing --------------------------------------------------------------------

    def put(self, offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        """Append one unit at queue offset ``cq_offset`` (putMessagePositionInfo).

        Units already covered (the CommitLog offset is not past what this queue has
        indexed) are accepted and skipped, so re-dispatching after recovery is safe.
        """
        if offset + size <= self.max_physic_offset:
            return True
        if self.failed_from is not None:
            return False
        try:
            return self._put(offset, size, tags_code, cq_offset)
        except OSError as exc:
            log.error(
                "consume queue %s %d cannot write the unit of CommitLog offset %d: %s",
                self.topic,
                self.queue_id,
                offset,
                exc.strerror or exc,
            )
            self.failed_from = offset
            return False

    def _put(self, offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        expect = cq_offset * _UNIT
        files = self.mfq.files
        mf = files[-1] if files else None
        if mf is None or mf.wrote_position >= mf.file_size or mf.wrote_position == 0:
            # no file yet, the last one full, or a fresh one: the careful way
            mf = self.mfq.get_last_mapped_file(expect)
            if mf is None:
                return False
        if mf.wrote_position == 0 and mf.first_create_in_queue and cq_offset != 0:
            # A queue whose first file starts mid-file: pad it with filler units.
            mf.reserve(expect % self.mapped_file_size + _UNIT)  # before any state changes
            self.min_logic_offset = expect
            self.mfq.flushed_where = expect
            for _ in range(0, expect % self.mapped_file_size, _UNIT):
                mf.append(_PRE_BLANK)
        if cq_offset != 0:
            current = mf.wrote_position + mf.file_from_offset
            if expect < current:
                return True  # already there
            if expect != current:
                log.warning(
                    "[BUG] logic queue order maybe wrong: expect %d current %d topic %s qid %d",
                    expect,
                    current,
                    self.topic,
                    self.queue_id,
                )
        unit = _pack_unit(offset, size, tags_code)
        if mf.wrote_position + _UNIT > mf.allocated:
            mf.reserve(mf.wrote_position + _UNIT)  # OSError here leaves the queue as it was
        self.max_physic_offset = offset + size
        return mf.append(unit)

    # -- reading --------------------------------------------------------------------

    @property
    def min_offset_in_queue(self) -> int:
        return self.min_logic_offset // _UNIT

    @property
    def max_offset_in_queue(self) -> int:
        return self.mfq.max_offset // _UNIT

    @property
    def message_total(self) -> int:
        return self.max_offset_in_queue - self.min_offset_in_queue

    def read_units(self, start_index: int, max_bytes: int) -> bytes | None:
        """Raw units from ``start_index`` to the end of its file (at most ``max_bytes``)."""
        offset = start_index * _UNIT
        if offset < self.min_logic_offset:
            return None
        mf = self.mfq.find_by_offset(offset)
        if mf is None:
            return None
        pos = offset % self.mapped_file_size
        end = min(mf.read_position, pos + max_bytes - max_bytes % _UNIT)
        if pos >= end:
            return None
        return mf.mm[pos:end]

    def get_unit(self, index: int) -> sr.ConsumeQueueEntry | None:
        raw = self.read_units(index, _UNIT)
        if raw is None or len(raw) < _UNIT:
            return None
        return sr.parse_consumequeue_entry(raw)

    def get_last_offset(self) -> int:
        """End offset (offset + size) of the last unit, or -1."""
        mf = self.mfq.last_file()
        if mf is None:
            return -1
        last = -1
        pos = max(mf.wrote_position - _UNIT, 0)
        for i in range(pos, self.mapped_file_size, _UNIT):
            offset, size, _tags = _unpack_unit(mf.mm, i)
            if offset >= 0 and size > 0:
                last = offset + size
            else:
                break
        return last

    def roll_next_file(self, index: int) -> int:
        units = self.mapped_file_size // _UNIT
        return index + units - index % units

    def get_offset_in_queue_by_time(
        self, timestamp: int, min_phy_offset: int, store_time_of: Callable[[int, int], int]
    ) -> int:
        """Binary search in the file modified around ``timestamp`` (getOffsetInQueueByTime)."""
        mf = self.mfq.get_mapped_file_by_time(timestamp)
        if mf is None:
            return 0
        low = max(self.min_logic_offset - mf.file_from_offset, 0)
        high = mf.read_position - _UNIT
        target = left = right = -1
        left_value = right_value = -1
        while high >= low:
            mid = (low + high) // (2 * _UNIT) * _UNIT
            phy, size, _tags = _unpack_unit(mf.mm, mid)
            if phy < min_phy_offset:
                low = mid + _UNIT
                left = mid
                continue
            store_time = store_time_of(phy, size)
            if store_time < 0:
                return 0
            if store_time == timestamp:
                target = mid
                break
            if store_time > timestamp:
                high = mid - _UNIT
                right, right_value = mid, store_time
            else:
                low = mid + _UNIT
                left, left_value = mid, store_time
        if target != -1:
            offset = target
        elif left_value == -1:
            offset = right
        elif right_value == -1:
            offset = left
        else:
            offset = right if abs(timestamp - left_value) > abs(timestamp - right_value) else left
        return (mf.file_from_offset + offset) // _UNIT

    # -- maintenance ------------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> bool:
        return self.mfq.flush(least_pages)

    def delete_expired_file(self, phy_min_offset: int) -> list[str]:
        gone = self.mfq.delete_expired_by_offset(phy_min_offset, _UNIT)
        self.correct_min_offset(phy_min_offset)
        return gone

    def close(self) -> None:
        self.mfq.close()

    def destroy(self) -> None:
        self.max_physic_offset = -1
        self.min_logic_offset = 0
        self.mfq.destroy()
