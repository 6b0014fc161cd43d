"""Inputs, statuses and results of the message store (the Java names, Python shapes)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..codecs.message import MessageExt

__all__ = [
    "AppendMessageResult",
    "AppendMessageStatus",
    "DispatchRequest",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageExtBatch",
    "MessageExtBrokerInner",
    "PutMessageResult",
    "PutMessageStatus",
    "QueryMessageResult",
    "StoreError",
    "java_properties_string",
]


def java_properties_string(properties: Mapping[str, str]) -> str:
    """The properties string Java's broker stores for a map: HashMap iteration order.

    SendMessageProcessor rebuilds the string from a HashMap (the client's properties
    plus CLUSTER), so stored records list properties in bucket order, not as sent.
    Keys sharing a bucket keep insertion order, so pass the map in Java's insertion
    order: the client's properties as received, then CLUSTER.
    """
    from ..codecs.message import properties_to_string
    from ..javacompat.hashmap import hashmap_order

    return properties_to_string({k: properties[k] for k in hashmap_order(properties)})


class StoreError(Exception):
    """The store cannot open or go on: bad files, a held lock, a closed store."""


class PutMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"
    LMQ_CONSUME_QUEUE_NUM_EXCEEDED = "LMQ_CONSUME_QUEUE_NUM_EXCEEDED"


class AppendMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetMessageStatus(enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(slots=True, kw_only=True)
class MessageExtBrokerInner(MessageExt):
    """A message as the broker hands it to the store (Java's MessageExtBrokerInner).

    ``properties`` is the full map (Java's ``getProperties()``); ``properties_string``
    is what gets stored, when the broker stores something else (Java drops
    ``WAIT=true`` from the string but keeps it in the map). None: the string is made
    from ``properties`` in their dict order (Java's is HashMap order: see
    :func:`java_properties_string`). The store fills in store_timestamp,
    body_crc, queue_offset, commit_log_offset and the IPv6 sys_flag bits.
    """

    properties_string: str | None = None

    def stored_properties(self) -> str:
        if self.properties_string is not None:
            return self.properties_string
        from ..codecs.message import properties_to_string

        return properties_to_string(self.properties)


@dataclass(slots=True, kw_only=True)
class MessageExtBatch(MessageExtBrokerInner):
    """A SEND_BATCH_MESSAGE: ``body`` is the encoded batch (codecs.message.encode_batch).

    ``properties``/``properties_string`` are the batch-level properties that Java
    appends to every entry's own properties (CLUSTER, WAIT ...).
    """


@dataclass(slots=True)
class AppendMessageResult:
    status: AppendMessageStatus
    wrote_offset: int = 0
    wrote_bytes: int = 0
    msg_id: str = ""  # offset msg id(s); a batch joins them with ','
    store_timestamp: int = 0
    logics_offset: int = 0  # queue offset of the (first) message
    msg_num: int = 1


@dataclass(slots=True)
class PutMessageResult:
    """Outcome of put_message(s).

    PUT_OK means appended (and dispatched to the ConsumeQueue and index), not
    durable: ``flush_offset`` is the CommitLog offset that must be flushed before a
    SYNC_FLUSH broker may acknowledge the send (see MessageStore.flush_until and
    rocketpy.store.services.GroupCommitService).
    """

    status: PutMessageStatus
    append: AppendMessageResult | None = None
    #: DLedger mode: (term, index) of the entry whose commit by a quorum the answer waits for
    dledger_entry: tuple[int, int] | None = None

    @property
    def is_ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK

    @property
    def flush_offset(self) -> int:
        a = self.append
        return 0 if a is None else a.wrote_offset + a.wrote_bytes


@dataclass(slots=True)
class DispatchRequest:
    """What a CommitLog record tells the ConsumeQueue and index builders."""

    topic: str
    queue_id: int
    commit_log_offset: int
    msg_size: int
    tags_code: int
    store_timestamp: int
    consume_queue_offset: int
    keys: str | None
    uniq_key: str | None
    sys_flag: int
    prepared_transaction_offset: int = 0


@dataclass(slots=True)
class GetMessageResult:
    """getMessage: status, offsets for the next pull, and the raw records found."""

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[bytes] = field(default_factory=list)
    queue_offsets: list[int] = field(default_factory=list)
    suggest_pulling_from_slave: bool = False

    @property
    def message_count(self) -> int:
        return len(self.messages)

    @property
    def buffer_total_size(self) -> int:
        return sum(len(m) for m in self.messages)

    def body(self) -> bytes:
        """The records back to back: a PULL response body."""
        return b"".join(self.messages)


@dataclass(slots=True)
class QueryMessageResult:
    messages: list[bytes] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0

    @property
    def buffer_total_size(self) -> int:
        return sum(len(m) for m in self.messages)

    def body(self) -> bytes:
        return b"".join(self.messages)
