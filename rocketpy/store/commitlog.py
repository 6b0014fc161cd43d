"""The CommitLog: every message of every topic, appended to one sequence of files.

Records are built with the codec's MESSAGE_RECORD (codecs.message: ``build_record``,
its struct fast path checked against the construct definition); this module
decides their field values the way Java's CommitLog.asyncPutMessage(s) and
DefaultAppendMessageCallback do: store timestamp taken under the put lock, body
CRC computed here, queue offset from the topic-queue table, physical offset from
the write position, IPv6 sys_flag bits from the hosts, the delay rewrite to
SCHEDULE_TOPIC_XXXX, and an 8-byte blank record closing a file when the next
record (plus room for a blank) does not fit.
"""

from __future__ import annotations

import logging
import mmap
import struct
import threading
from collections.abc import Callable, Mapping
from typing import NamedTuple

import construct as cs

from ..codecs.codes import MessageConst, MessageSysFlag, MixAll
from ..codecs.errors import CodecError
from ..codecs.message import (
    BATCH_ENTRY,
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    PROPERTY_SEPARATOR,
    MessageExt,
    body_crc,
    build_record,
    decode_message,
    host_bytes,
    offset_msg_id,
    peek_size_magic,
    peek_store_timestamp,
    properties_to_string,
    record_length,
    string_to_properties,
    tags_hash_code,
)
from ..codecs.store_records import build_blank_record
from ..javacompat.hashmap import hashmap_order
from .config import DelayLevels, MessageStoreConfig
from .free_page_reporting import reports_free_pages_here
from .mapped_file import MappedFile, MappedFileQueue, SyncHook
from .types import (
    AppendMessageResult,
    AppendMessageStatus,
    DispatchRequest,
    MessageExtBatch,
    MessageExtBrokerInner,
    PutMessageResult,
    PutMessageStatus,
)

__all__ = ["CommitLog", "dispatch_request_of", "END_FILE_MIN_BLANK_LENGTH"]

log = logging.getLogger("rocketpy.store")

END_FILE_MIN_BLANK_LENGTH = 8  # a file always keeps room for the blank record's size + magic
#: blocks are allocated this far ahead of the appends (see mapped_file); the send lanes write below
#: the last file's ``allocated`` only and leave the put that crosses it to put_message, which allocates
ALLOCATION_CHUNK = 4 * 1024 * 1024
#: on a VM that gives free memory back to its host (free_page_reporting), the page cache keeps this much of
#: the CommitLog behind the flushed offset; older pages are dropped by the flush services (see mapped_file: new
#: appends then take recycled pages, not fresh memory). Elsewhere nothing is dropped, as in Java's broker.
DROP_BEHIND = 1024 * 1024 * 1024
_BATCH_ENTRY = BATCH_ENTRY.compile()
_INT32 = struct.Struct(">i")
_BORN_V6 = int(MessageSysFlag.BORNHOST_V6_FLAG)
_STORE_V6 = int(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
_TRAN_NOT = int(MessageSysFlag.TRANSACTION_NOT_TYPE)
_TRAN_PREPARED = int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)
_TRAN_COMMIT = int(MessageSysFlag.TRANSACTION_COMMIT_TYPE)
#: the transaction types whose records take a queue offset and reach a ConsumeQueue (not prepared, rollback)
CONSUMED_TRANSACTION_TYPES = (_TRAN_NOT, _TRAN_COMMIT)
_TRAN_ROLLBACK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
_TRAN_MASK = _TRAN_ROLLBACK
_SCHEDULE_TOPIC = MixAll.RMQ_SYS_SCHEDULE_TOPIC
_DELAY = MessageConst.PROPERTY_DELAY_TIME_LEVEL
_MAX_BODY_EXTRA = 64 * 1024  # MessageExtEncoder reserves 64 KiB for the non-body fields
_SEP = PROPERTY_SEPARATOR.encode()


def dispatch_request_of(
    topic: str,
    queue_id: int,
    commit_log_offset: int,
    size: int,
    store_timestamp: int,
    queue_offset: int,
    sys_flag: int,
    prepared_transaction_offset: int,
    props: Mapping[str, str],
    delay_levels: DelayLevels,
) -> DispatchRequest:
    """The dispatch facts of a record (the tail of checkMessageAndReturnSize)."""
    tags = props.get(MessageConst.PROPERTY_TAGS)
    tags_code = tags_hash_code(tags) if tags else 0
    if topic == _SCHEDULE_TOPIC:
        level_text = props.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL)
        if level_text is not None:
            try:
                level = min(int(level_text), delay_levels.max_level)
            except ValueError:
                level = 0
            if level > 0:
                # Scheduled records carry their deliver time where a tags hash would be.
                tags_code = delay_levels.deliver_timestamp(level, store_timestamp)
    return DispatchRequest(
        topic=topic,
        queue_id=queue_id,
        commit_log_offset=commit_log_offset,
        msg_size=size,
        tags_code=tags_code,
        store_timestamp=store_timestamp,
        consume_queue_offset=queue_offset,
        keys=props.get(MessageConst.PROPERTY_KEYS) or None,
        uniq_key=props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or None,
        sys_flag=sys_flag,
        prepared_transaction_offset=prepared_transaction_offset,
    )


class CheckedMessage(NamedTuple):
    """A message as :meth:`CommitLog.check_put` found it fit to write."""

    tran: int
    born_ip: bytes
    born_port: int
    store_ip: bytes
    store_port: int
    topic_b: bytes
    props_b: bytes
    props_text: str
    msg_len: int


class CheckedBatch(NamedTuple):
    """A batch as :meth:`CommitLog.check_batch` found it fit to write."""

    entries: list[tuple[int, bytes, bytes, int, int]]
    born_ip: bytes
    born_port: int
    store_ip: bytes
    store_port: int
    topic_b: bytes


class CommitLog:
    """Append, read and check CommitLog records."""

    def __init__(
        self,
        config: MessageStoreConfig,
        clock: Callable[[], int],
        *,
        sync_hook: SyncHook | None = None,
        files: MappedFileQueue | None = None,
    ) -> None:
        """``files``: where the records are (the CommitLog directory's files by default)."""
        self.config = config
        self.file_size = config.mapped_file_size_commit_log
        if files is None:
            files = MappedFileQueue(
                config.commit_log_dir, self.file_size, sync_hook=sync_hook, allocation_chunk=ALLOCATION_CHUNK,
                write_pages=True, drop_behind=DROP_BEHIND if reports_free_pages_here() else 0,
            )
        self.mfq = files
        self.delay_levels = DelayLevels(config.message_delay_level)
        self.clock = clock
        self.topic_queue_table: dict[tuple[str, int], int] = {}
        self.lock = threading.Lock()  # the put lock: one append at a time
        self.check_crc = config.check_crc_on_recover

    # -- offsets -------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        first = self.mfq.first_file()
        if first is None:
            return -1
        return first.file_from_offset if first.is_available else self.roll_next_file(first.file_from_offset)

    @property
    def max_offset(self) -> int:
        return self.mfq.max_offset

    @property
    def flushed_where(self) -> int:
        return self.mfq.flushed_where

    def roll_next_file(self, offset: int) -> int:
        return offset + self.file_size - offset % self.file_size

    # -- writing -----------------------------------------------------------------------

    def _writable_file(self) -> MappedFile:
        mf = self.mfq.last_file()
        if mf is None or mf.is_full():
            mf = self.mfq.get_last_mapped_file(0)
        assert mf is not None
        return mf

    def _close_file(self, mf: MappedFile, store_timestamp: int) -> None:
        """Write the blank record that ends ``mf`` and mark it full."""
        remaining = self.file_size - mf.wrote_position
        mf.write_at(mf.wrote_position, build_blank_record(remaining))
        mf.wrote_position = self.file_size
        mf.store_timestamp = store_timestamp

    def _apply_delay(self, msg: MessageExtBrokerInner) -> None:
        """Java's CommitLog.asyncPutMessage delay rewrite (non-transactional or commit only)."""
        level = msg.delay_time_level
        if level <= 0:
            return
        if level > self.delay_levels.max_level:
            level = self.delay_levels.max_level
            msg.properties[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = str(level)
        msg.properties[MessageConst.PROPERTY_REAL_TOPIC] = msg.topic
        msg.properties[MessageConst.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
        # Java's properties map is a HashMap: the stored string follows its bucket order.
        msg.properties = {k: msg.properties[k] for k in hashmap_order(msg.properties)}
        msg.properties_string = properties_to_string(msg.properties)
        msg.topic = _SCHEDULE_TOPIC
        msg.queue_id = DelayLevels.queue_id(level)

    def check_put(self, msg: MessageExtBrokerInner) -> CheckedMessage | PutMessageResult:
        """What every CommitLog checks and derives before a message is written (body CRC, the delay
        rewrite, the hosts' sys_flag bits, the limits), or the refusal."""
        msg.body_crc = body_crc(msg.body)
        tran = msg.sys_flag & _TRAN_MASK
        # (no DELAY property: delay_time_level is 0 and _apply_delay does nothing)
        if (tran == _TRAN_NOT or tran == _TRAN_COMMIT) and _DELAY in msg.properties:
            try:
                self._apply_delay(msg)
            except CodecError:
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        try:
            born_ip, born_port = host_bytes(msg.born_host)
            store_ip, store_port = host_bytes(msg.store_host)
        except CodecError:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        sys_flag = msg.sys_flag & ~(_BORN_V6 | _STORE_V6)
        if len(born_ip) == 16:
            sys_flag |= _BORN_V6
        if len(store_ip) == 16:
            sys_flag |= _STORE_V6
        msg.sys_flag = sys_flag
        props_text = msg.stored_properties()
        topic_b = msg.topic.encode("utf-8")
        props_b = props_text.encode("utf-8")
        if len(topic_b) > 127 or len(props_text) > 32767:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        if len(props_b) > 32767:
            return PutMessageResult(PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
        body = msg.body
        msg_len = record_length(sys_flag, len(body), len(topic_b), len(props_b))
        max_size = self.config.max_message_size
        if len(body) > max_size or msg_len > max_size + _MAX_BODY_EXTRA:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        if msg_len + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        return CheckedMessage(tran, born_ip, born_port, store_ip, store_port, topic_b, props_b, props_text, msg_len)

    def record_of(self, msg: MessageExtBrokerInner, c: CheckedMessage, queue_offset: int, phys: int) -> bytes:
        """The record of a checked message at ``phys`` with ``queue_offset`` (store timestamp set)."""
        return build_record(
            c.msg_len,
            msg.body_crc,
            msg.queue_id,
            msg.flag,
            queue_offset,
            phys,
            msg.sys_flag,
            msg.born_timestamp,
            c.born_ip,
            c.born_port,
            msg.store_timestamp,
            c.store_ip,
            c.store_port,
            msg.reconsume_times,
            msg.prepared_transaction_offset,
            msg.body,
            c.topic_b,
            c.props_b,
        )

    def dispatch_request_for(self, msg: MessageExtBrokerInner, c: CheckedMessage) -> DispatchRequest:
        """The dispatch facts of a message this CommitLog has just written."""
        props = msg.properties if msg.properties_string is None else string_to_properties(c.props_text)
        return dispatch_request_of(
            msg.topic,
            msg.queue_id,
            msg.commit_log_offset,
            c.msg_len,
            msg.store_timestamp,
            msg.queue_offset,
            msg.sys_flag,
            msg.prepared_transaction_offset,
            props,
            self.delay_levels,
        )

    def put_message(self, msg: MessageExtBrokerInner) -> tuple[PutMessageResult, list[DispatchRequest]]:
        """Append one message; returns the result and what to dispatch.

        ``msg`` is updated like Java's MessageExtBrokerInner: store timestamp, body
        CRC, sys_flag, queue and physical offsets, and topic/queue for delayed ones.
        """
        c = self.check_put(msg)
        if isinstance(c, PutMessageResult):
            return c, []
        tran = c.tran
        msg_len = c.msg_len
        key = (msg.topic, msg.queue_id)
        with self.lock:
            store_ts = self.clock()
            msg.store_timestamp = store_ts
            mf = self._writable_file()
            if msg_len + END_FILE_MIN_BLANK_LENGTH > self.file_size - mf.wrote_position:
                self._close_file(mf, store_ts)
                mf = self._writable_file()
            queue_offset = self.topic_queue_table.setdefault(key, 0)
            if tran in (_TRAN_PREPARED, _TRAN_ROLLBACK):
                queue_offset = 0  # never consumed, never in a ConsumeQueue
            pos = mf.wrote_position
            phys = mf.file_from_offset + pos
            record = self.record_of(msg, c, queue_offset, phys)
            mf.write_at(pos, record)  # allocates what it needs first (OSError: nothing written)
            mf.wrote_position = pos + msg_len
            mf.store_timestamp = store_ts
            if tran in CONSUMED_TRANSACTION_TYPES:
                self.topic_queue_table[key] = queue_offset + 1
        result = self.stored(msg, c, queue_offset, phys)
        req = self.dispatch_request_for(msg, c)
        return PutMessageResult(PutMessageStatus.PUT_OK, result), [req]

    @staticmethod
    def stored(msg: MessageExtBrokerInner, c: CheckedMessage, queue_offset: int, phys: int) -> AppendMessageResult:
        """A message's record is at ``phys``: the message gets its offsets and size, the put its result."""
        msg.queue_offset = queue_offset
        msg.commit_log_offset = phys
        msg.store_size = c.msg_len
        return AppendMessageResult(
            AppendMessageStatus.PUT_OK,
            wrote_offset=phys,
            wrote_bytes=c.msg_len,
            msg_id=offset_msg_id(c.store_ip, c.store_port, phys),
            store_timestamp=msg.store_timestamp,
            logics_offset=queue_offset,
        )

    def check_batch(
        self, batch: MessageExtBatch, *, batch_properties: bool = True
    ) -> CheckedBatch | PutMessageResult:
        """A batch's entries as records will hold them (flag, body, properties, body CRC, record length),
        or the refusal. ``batch_properties``: the batch's own properties end every entry's (the CommitLog's
        batch encoder does that; DLedger's does not)."""
        if batch.sys_flag & _TRAN_MASK != _TRAN_NOT:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        try:
            if batch.delay_time_level > 0:
                return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
            born_ip, born_port = host_bytes(batch.born_host)
            store_ip, store_port = host_bytes(batch.store_host)
        except CodecError:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        sys_flag = batch.sys_flag & ~(_BORN_V6 | _STORE_V6)
        if len(born_ip) == 16:
            sys_flag |= _BORN_V6
        if len(store_ip) == 16:
            sys_flag |= _STORE_V6
        batch.sys_flag = sys_flag
        topic_b = batch.topic.encode("utf-8")
        if len(topic_b) > 127 or len(batch.body) > self.config.max_message_size:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        batch_props = b""
        if batch_properties:
            # Java appends messageProperties2String(batch.getProperties()) to every entry.
            batch_props = (
                batch.properties_string
                if batch.properties_string is not None
                else properties_to_string(batch.properties)
            ).encode("utf-8")
        if len(batch_props) > 32767:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        entries: list[tuple[int, bytes, bytes, int, int]] = []  # flag, body, props, crc, length
        body = batch.body
        pos = 0
        try:
            while pos < len(body):
                (size,) = _INT32.unpack_from(body, pos)
                if size <= 0 or pos + size > len(body):
                    raise CodecError(f"batch entry at {pos} declares size {size}")
                entry = _BATCH_ENTRY.parse(body[pos : pos + size])
                pos += size
                props = entry.properties
                if props and batch_props and props[-1:] != _SEP:
                    props = props + _SEP
                props += batch_props
                if len(props) > 32767:
                    return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
                length = record_length(sys_flag, len(entry.body), len(topic_b), len(props))
                entries.append((entry.flag, entry.body, props, body_crc(entry.body), length))
        except (CodecError, struct.error, cs.ConstructError) as exc:
            log.warning("bad batch body: %s", exc)
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        if not entries:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL)
        return CheckedBatch(entries, born_ip, born_port, store_ip, store_port, topic_b)

    def batch_record(
        self, batch: MessageExtBatch, c: CheckedBatch, entry: tuple[int, bytes, bytes, int, int],
        queue_offset: int, phys: int,
    ) -> bytes:
        """The record of one batch entry at ``phys`` with ``queue_offset`` (store timestamp set)."""
        flag, ebody, props, crc, length = entry
        return build_record(
            length, crc, batch.queue_id, flag, queue_offset, phys, batch.sys_flag, batch.born_timestamp,
            c.born_ip, c.born_port, batch.store_timestamp, c.store_ip, c.store_port, batch.reconsume_times, 0,
            ebody, c.topic_b, props,
        )

    def put_messages(self, batch: MessageExtBatch) -> tuple[PutMessageResult, list[DispatchRequest]]:
        """Append a batch: one record per entry, consecutive queue offsets, one store timestamp."""
        c = self.check_batch(batch)
        if isinstance(c, PutMessageResult):
            return c, []
        entries = c.entries
        store_ip, store_port = c.store_ip, c.store_port
        sys_flag = batch.sys_flag
        total = sum(e[4] for e in entries)
        if total + END_FILE_MIN_BLANK_LENGTH > self.file_size:
            return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL), []
        key = (batch.topic, batch.queue_id)
        parts: list[bytes] = []
        reqs: list[DispatchRequest] = []
        ids: list[str] = []
        with self.lock:
            store_ts = self.clock()
            batch.store_timestamp = store_ts
            mf = self._writable_file()
            if total + END_FILE_MIN_BLANK_LENGTH > self.file_size - mf.wrote_position:
                self._close_file(mf, store_ts)
                mf = self._writable_file()
            first_queue_offset = queue_offset = self.topic_queue_table.setdefault(key, 0)
            start = mf.wrote_position
            phys = mf.file_from_offset + start
            first_phys = phys
            for e in entries:
                props, length = e[2], e[4]
                parts.append(self.batch_record(batch, c, e, queue_offset, phys))
                ids.append(offset_msg_id(store_ip, store_port, phys))
                reqs.append(
                    dispatch_request_of(
                        batch.topic,
                        batch.queue_id,
                        phys,
                        length,
                        store_ts,
                        queue_offset,
                        sys_flag,
                        0,
                        string_to_properties(props.decode("utf-8", "replace")),
                        self.delay_levels,
                    )
                )
                phys += length
                queue_offset += 1
            mf.write_at(start, b"".join(parts))
            mf.wrote_position = start + total
            mf.store_timestamp = store_ts
            self.topic_queue_table[key] = queue_offset
        batch.queue_offset = first_queue_offset
        batch.commit_log_offset = first_phys
        result = AppendMessageResult(
            AppendMessageStatus.PUT_OK,
            wrote_offset=first_phys,
            wrote_bytes=total,
            msg_id=",".join(ids),
            store_timestamp=store_ts,
            logics_offset=first_queue_offset,
            msg_num=len(entries),
        )
        return PutMessageResult(PutMessageStatus.PUT_OK, result), reqs

    def append_data(self, start_offset: int, data: bytes) -> bool:
        """Append raw CommitLog bytes at ``start_offset`` (a slave replicating its master); OSError
        when the file they go to cannot be made or allocated (then nothing was written)."""
        with self.lock:
            mf = self.mfq.get_last_mapped_file(start_offset)
            if mf is None:
                return False
            return mf.append(data)

    # -- reading -----------------------------------------------------------------------

    def find_file(self, offset: int, return_first_on_not_found: bool = False) -> MappedFile | None:
        """The file holding CommitLog ``offset`` (a pull's reads go by it)."""
        return self.mfq.find_by_offset(offset, return_first_on_not_found)

    def get_message(self, offset: int, size: int) -> bytes | None:
        """``size`` bytes at CommitLog ``offset`` (one record when size is its store size)."""
        mf = self.mfq.find_by_offset(offset, offset == 0)
        if mf is None:
            return None
        return mf.read(offset % self.file_size, size)

    def get_data(self, offset: int, return_first_on_not_found: bool | None = None) -> tuple[int, bytes] | None:
        """Everything from ``offset`` to the end of what is written in its file: (start, bytes)."""
        if return_first_on_not_found is None:
            return_first_on_not_found = offset == 0
        mf = self.mfq.find_by_offset(offset, return_first_on_not_found)
        if mf is None:
            return None
        pos = offset % self.file_size
        data = mf.read_from(pos)
        if data is None:
            return None
        return mf.file_from_offset + pos, data

    def record_size_at(self, offset: int) -> int | None:
        head = self.get_message(offset, 4)
        if head is None:
            return None
        return _INT32.unpack(head)[0]

    def read_record(self, offset: int) -> bytes | None:
        size = self.record_size_at(offset)
        if size is None or size <= 0:
            return None
        return self.get_message(offset, size)

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        """The store timestamp of the record at ``offset`` (-1 if unreadable)."""
        if offset < self.min_offset:
            return -1
        data = self.get_message(offset, size)
        if data is None or len(data) < 60:
            return -1
        return peek_store_timestamp(data)

    # -- checking (recovery and reput) -------------------------------------------------

    def check_message(
        self, buf: bytes | memoryview | mmap.mmap, pos: int, check_crc: bool
    ) -> tuple[int, MessageExt | None]:
        """checkMessageAndReturnSize: (size, message) for a good record, (0, None) at a
        blank or the end of the buffer, (-1, None) for anything that is not a valid record.
        """
        if pos + 8 > len(buf):
            return (0, None) if pos == len(buf) else (-1, None)
        size, magic = peek_size_magic(buf, pos)
        if magic == BLANK_MAGIC_CODE:
            return 0, None
        if magic != MESSAGE_MAGIC_CODE:
            return -1, None
        try:
            msg = decode_message(buf, pos, check_crc=check_crc, decompress=False)
        except CodecError as exc:
            log.warning("CommitLog record at file position %d is not valid: %s", pos, exc)
            return -1, None
        return size, msg

    def dispatch_request(self, msg: MessageExt) -> DispatchRequest:
        return dispatch_request_of(
            msg.topic,
            msg.queue_id,
            msg.commit_log_offset,
            msg.store_size,
            msg.store_timestamp,
            msg.queue_offset,
            msg.sys_flag,
            msg.prepared_transaction_offset,
            msg.properties,
            self.delay_levels,
        )

    # -- flushing and retention --------------------------------------------------------

    def flush(self, least_pages: int = 0) -> int:
        self.mfq.flush(least_pages)
        return self.mfq.flushed_where

    def allocate_writable_file(self) -> None:
        """Allocate the next chunk of the file appends go to (OSError when the disk cannot give it):
        a file loaded or cut by recovery may be sparse, and the send lanes write into the last file's
        mapping directly, below its ``allocated``."""
        mf = self.mfq.last_file()
        if mf is not None and not mf.is_full():
            mf.reserve(min(self.file_size, mf.wrote_position + ALLOCATION_CHUNK))

    def delete_expired_files(
        self, expired_ms: int, now_ms: int, *, clean_immediately: bool, keep_from: int
    ) -> list[str]:
        """deleteExpiredFile: whole files older than ``expired_ms`` (any, with ``clean_immediately``),
        never the one being written nor one holding a byte at or past ``keep_from``; each deletion is
        logged with the offsets it held."""
        gone = self.mfq.delete_expired_by_time(
            expired_ms, now_ms, clean_immediately=clean_immediately, keep_from=keep_from
        )
        for path in gone:
            start = int(path.rsplit("/", 1)[-1])
            log.warning(
                "deleted CommitLog file %s, offsets [%d, %d)%s",
                path,
                start,
                start + self.file_size,
                " (forcibly: disk space)" if clean_immediately else "",
            )
        return gone

    def remove_queue_from_topic_queue_table(self, topic: str, queue_id: int) -> None:
        with self.lock:
            self.topic_queue_table.pop((topic, queue_id), None)

    def close(self) -> None:
        self.mfq.close()
