"""IndexFile and IndexService: hash index of message keys, UNIQ_KEY ids and times.

An index file (named by its creation time, ``yyyyMMddHHmmssSSS``) holds a 40-byte
header, ``maxHashSlotNum`` 4-byte slots and ``maxIndexNum`` 20-byte entries
(layouts in codecs.store_records). Each ``topic#key`` goes into the slot
``abs(hashCode) % slots``; the slot points at the newest entry, entries chain to
the previous one in the same slot. Lookups walk the chain (IndexFileView.lookup).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from datetime import datetime

from ..codecs import store_records as sr
from ..codecs.codes import MessageConst, MessageSysFlag
from .checkpoint import StoreCheckpoint
from .mapped_file import MappedFile
from .types import DispatchRequest

__all__ = ["IndexFile", "IndexService", "index_file_name"]

log = logging.getLogger("rocketpy.store")

_HEADER = sr.INDEX_HEADER_UNIT  # the codec's compiled INDEX_HEADER / INDEX_ENTRY layouts
_ENTRY = sr.INDEX_ENTRY_UNIT
_SLOT = sr.INDEX_HASH_SLOT_UNIT
_INT_MAX = 0x7FFFFFFF
_TRAN_ROLLBACK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
#: entries' blocks are allocated this far ahead (header and hash slots, written anywhere, at once)
ALLOCATION_CHUNK = 1024 * 1024


def index_file_name(now_ms: int) -> str:
    """UtilAll.timeMillisToHumanString in local time: yyyyMMddHHmmssSSS."""
    dt = datetime.fromtimestamp(now_ms / 1000)
    return dt.strftime("%Y%m%d%H%M%S") + f"{now_ms % 1000:03d}"


class IndexFile:
    """One index file, mapped whole."""

    def __init__(
        self, path: str, hash_slot_num: int, index_num: int, end_phy_offset: int = 0, end_timestamp: int = 0
    ) -> None:
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        size = sr.INDEX_HEADER_SIZE + hash_slot_num * sr.INDEX_HASH_SLOT_SIZE + index_num * sr.INDEX_ENTRY_SIZE
        #: where the entries begin: after the header and the hash slots
        self.entries_at = sr.INDEX_HEADER_SIZE + hash_slot_num * sr.INDEX_HASH_SLOT_SIZE
        self.mf = MappedFile(
            path,
            size,
            allocation_chunk=ALLOCATION_CHUNK,
            initial_allocation=self.entries_at + ALLOCATION_CHUNK,
        )
        self.path = path
        self.begin_timestamp = 0
        self.end_timestamp = 0
        self.begin_phy_offset = 0
        self.end_phy_offset = 0
        self.hash_slot_count = 0
        self.index_count = 1  # entry 0 is never used
        if end_phy_offset > 0:
            self.begin_phy_offset = self.end_phy_offset = end_phy_offset
        if end_timestamp > 0:
            self.begin_timestamp = self.end_timestamp = end_timestamp
        if end_phy_offset > 0 or end_timestamp > 0:
            self._write_header(self.index_count if self._header_count_written() else 0)

    def _header_count_written(self) -> bool:
        return _HEADER.unpack_from(self.mf.mm, 0)[5] > 0

    def _write_header(self, count_in_file: int) -> None:
        # Java writes each header field through to the buffer as it changes; the file's
        # count stays 0 until the first put, while the in-memory count starts at 1.
        _HEADER.pack_into(
            self.mf.mm,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            count_in_file,
        )

    def load(self) -> None:
        h = _HEADER.unpack_from(self.mf.mm, 0)
        (self.begin_timestamp, self.end_timestamp, self.begin_phy_offset, self.end_phy_offset) = h[:4]
        self.hash_slot_count = h[4]
        self.index_count = max(h[5], 1)

    def allocation_needed(self) -> int:
        """How far the blocks must go before the next key: header, every slot, the next entry."""
        return self.entries_at + (self.index_count + 1) * sr.INDEX_ENTRY_SIZE

    def is_write_full(self) -> bool:
        return self.index_count >= self.index_num

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        """False when the file is full; OSError (nothing written) when the entry's blocks cannot be had."""
        if self.index_count >= self.index_num:
            return False
        end = self.entries_at + (self.index_count + 1) * sr.INDEX_ENTRY_SIZE
        if end > self.mf.allocated:
            self.mf.reserve(end)
        mm = self.mf.mm
        key_hash = sr.index_key_hash(key)
        abs_slot = sr.INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * sr.INDEX_HASH_SLOT_SIZE
        (slot_value,) = _SLOT.unpack_from(mm, abs_slot)
        if slot_value <= sr.INVALID_INDEX or slot_value > self.index_count:
            slot_value = sr.INVALID_INDEX
        if self.begin_timestamp <= 0:
            time_diff = 0
        else:
            # Java truncates toward zero, we floor: both land on 0 after the clamp when negative.
            time_diff = (store_timestamp - self.begin_timestamp) // 1000
            if time_diff < 0:
                time_diff = 0
            elif time_diff > _INT_MAX:
                time_diff = _INT_MAX
        abs_index = self.entries_at + self.index_count * sr.INDEX_ENTRY_SIZE
        _ENTRY.pack_into(mm, abs_index, key_hash, phy_offset, time_diff, slot_value)
        _SLOT.pack_into(mm, abs_slot, self.index_count)
        if self.index_count <= 1:
            self.begin_phy_offset = phy_offset
            self.begin_timestamp = store_timestamp
        if slot_value == sr.INVALID_INDEX:
            self.hash_slot_count += 1
        self.index_count += 1
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        self._write_header(self.index_count)
        return True

    def view(self) -> sr.IndexFileView:
        return sr.IndexFileView(self.mf.mm, self.hash_slot_num, self.index_num)

    def is_time_matched(self, begin: int, end: int) -> bool:
        return (
            (begin < self.begin_timestamp and end > self.end_timestamp)
            or self.begin_timestamp <= begin <= self.end_timestamp
            or self.begin_timestamp <= end <= self.end_timestamp
        )

    def select_phy_offsets(self, key: str, max_num: int, begin: int, end: int) -> list[int]:
        if self.index_count <= 1:
            return []
        return self.view().lookup(key, begin, end, max_num)

    def flush(self) -> None:
        self.mf.mm.flush()

    def close(self) -> None:
        self.mf.close()

    def destroy(self) -> bool:
        return self.mf.destroy()


class IndexService:
    """The list of index files: build on dispatch, query by key and time."""

    def __init__(
        self,
        store_path: str,
        hash_slot_num: int,
        index_num: int,
        checkpoint: StoreCheckpoint,
        clock: Callable[[], int],
        max_msgs_num_batch: int = 64,
    ) -> None:
        self.store_path = store_path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.checkpoint = checkpoint
        self.clock = clock
        self.max_msgs_num_batch = max_msgs_num_batch
        self.files: list[IndexFile] = []
        #: CommitLog offset from where keys could not be indexed (no disk space for a file): nothing
        #: is indexed until the store re-dispatches from here (MessageStore.check_disk)
        self.failed_from: int | None = None
        #: why the last new file could not be made, as text ("[Errno 28] No space left on device: path"): the
        #: OSError itself would keep its traceback, the frames of the put that met it and their locals
        self._error = ""
        #: told of the first failure (the store stops taking writes)
        self.on_failure: Callable[[int], None] | None = None

    def load(self, last_exit_ok: bool) -> int | None:
        """Map the existing files.

        After a crash, files newer than the checkpoint's index stamp may be torn and
        are deleted, as Java does. Returns the lowest CommitLog offset they covered
        (their begin offset), from where the caller re-dispatches so that their keys
        come back; None when nothing was dropped.
        """
        try:
            names = sorted(os.listdir(self.store_path))
        except FileNotFoundError:
            return None
        rebuild_from: int | None = None
        for name in names:
            path = os.path.join(self.store_path, name)
            if not name.isdigit() or not os.path.isfile(path):
                continue
            f = IndexFile(path, self.hash_slot_num, self.index_num)
            f.load()
            if not last_exit_ok and f.end_timestamp > self.checkpoint.index_msg_timestamp:
                begin = f.begin_phy_offset
                rebuild_from = begin if rebuild_from is None else min(rebuild_from, begin)
                f.destroy()
                continue
            self.files.append(f)
        last = self.files[-1] if self.files else None
        if last is not None and not last.is_write_full():
            # keys are written into the last file's mapping directly, slots anywhere: their blocks must exist
            try:
                last.mf.reserve(last.allocation_needed())
            except OSError as exc:
                self._error = str(exc)
                # re-dispatched from its last record once there is room (whose keys may go in twice)
                self._fail(last.end_phy_offset)
        return rebuild_from

    # -- building ---------------------------------------------------------------------

    def _fail(self, phy_offset: int) -> None:
        """The keys of the record at ``phy_offset`` found no file: nothing more is indexed until
        :meth:`resume` (the store re-dispatches from there)."""
        if self.failed_from is None:
            self.failed_from = phy_offset
            log.error("build index error, stop building index from CommitLog offset %d: %s", phy_offset, self._error)
            if self.on_failure is not None:
                self.on_failure(phy_offset)

    def resume(self) -> int | None:
        """Take keys again if the last file's blocks can be had now: where the failure began (the
        caller re-dispatches from there), or None (still failing)."""
        failed = self.failed_from
        if failed is None:
            return None
        last = self.files[-1] if self.files else None
        if last is not None and not last.is_write_full():
            try:
                last.mf.reserve(last.allocation_needed())
            except OSError:
                return None
        self.failed_from = None
        return failed

    def _last_file(self) -> IndexFile | None:
        """The file keys go to, a new one when the last is full; None while none can be made (the
        caller, which knows the record, calls _fail)."""
        if self.failed_from is not None:
            return None  # nothing goes in out of order: the re-dispatch comes first
        last = self.files[-1] if self.files else None
        if last is not None and not last.is_write_full():
            return last
        end_phy = last.end_phy_offset if last is not None else 0
        end_ts = last.end_timestamp if last is not None else 0
        now = self.clock()
        path = os.path.join(self.store_path, index_file_name(now))
        while os.path.exists(path) or any(f.path == path for f in self.files):
            now += 1  # two files in one millisecond: keep names unique and ordered
            path = os.path.join(self.store_path, index_file_name(now))
        try:
            f = IndexFile(path, self.hash_slot_num, self.index_num, end_phy, end_ts)
        except OSError as exc:
            self._error = str(exc)
            return None
        self.files.append(f)
        if last is not None:
            self._flush_full(last)
        return f

    def _flush_full(self, f: IndexFile) -> None:
        f.flush()
        if f.is_write_full():
            self.checkpoint.index_msg_timestamp = f.end_timestamp
            self.checkpoint.flush()

    def build_index(self, req: DispatchRequest) -> None:
        f = self._last_file()
        if f is None:
            self._fail(req.commit_log_offset)
            return
        if req.commit_log_offset < f.end_phy_offset:
            return  # already indexed (re-dispatch after recovery)
        if req.sys_flag & _TRAN_ROLLBACK == _TRAN_ROLLBACK:
            return
        self._put_keys(f, req.topic, req.uniq_key, req.keys, req.commit_log_offset, req.store_timestamp)

    def put_keys(self, topic: str, uniq_key: str | None, keys: str | None, phy_offset: int, store_ts: int) -> None:
        """build_index for a plain message appended in order (the send hot path's dispatch)."""
        f = self._last_file()
        if f is None:
            self._fail(phy_offset)
        elif phy_offset >= f.end_phy_offset:
            self._put_keys(f, topic, uniq_key, keys, phy_offset, store_ts)

    def put_key(self, key: str, phy_offset: int, store_ts: int) -> None:
        """One ``topic#key`` entry, in the last file or a new one when it is full."""
        self._put(self._last_file(), key, phy_offset, store_ts)

    def _put_keys(
        self, f: IndexFile, topic: str, uniq_key: str | None, keys: str | None, phy_offset: int, store_ts: int
    ) -> None:
        put: IndexFile | None = f
        if uniq_key:
            put = self._put(put, sr.index_key(topic, uniq_key), phy_offset, store_ts)
        if keys:
            for key in keys.split(MessageConst.KEY_SEPARATOR):
                if key:
                    put = self._put(put, sr.index_key(topic, key), phy_offset, store_ts)

    def _put(self, f: IndexFile | None, key: str, phy_offset: int, store_ts: int) -> IndexFile | None:
        """Put ``key`` into ``f`` or the files after it; None (nothing written) while the disk has no
        room for it."""
        try:
            while f is not None and not f.put_key(key, phy_offset, store_ts):
                f = self._last_file()
        except OSError as exc:
            self._error = str(exc)
            f = None
        if f is None:
            self._fail(phy_offset)
        return f

    # -- querying ---------------------------------------------------------------------

    def query_offset(self, topic: str, key: str, max_num: int, begin: int, end: int) -> tuple[list[int], int, int]:
        """(CommitLog offsets, index last update timestamp, index last update offset)."""
        offsets: list[int] = []
        last_ts = last_phy = 0
        max_num = min(max_num, self.max_msgs_num_batch)
        full_key = sr.index_key(topic, key)
        files = self.files
        for i in range(len(files), 0, -1):
            f = files[i - 1]
            if i == len(files):
                last_ts, last_phy = f.end_timestamp, f.end_phy_offset
            if f.is_time_matched(begin, end):
                for off in f.select_phy_offsets(full_key, max_num - len(offsets), begin, end):
                    offsets.append(off)
            if f.begin_timestamp < begin or len(offsets) >= max_num:
                break
        return offsets, last_ts, last_phy

    # -- maintenance ---------------------------------------------------------------------

    def delete_expired_file(self, offset: int) -> list[str]:
        """Delete files (never the last) whose entries all point below ``offset``."""
        gone: list[str] = []
        while len(self.files) > 1 and self.files[0].end_phy_offset < offset:
            f = self.files.pop(0)
            f.destroy()
            gone.append(f.path)
        return gone

    def flush(self) -> None:
        for f in self.files:
            f.flush()

    def close(self) -> None:
        for f in self.files:
            f.close()

    def destroy(self) -> None:
        for f in self.files:
            f.destroy()
        self.files = []
