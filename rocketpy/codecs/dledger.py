"""DLedger (openmessaging/dledger 0.3.1.2, the Raft library of RocketMQ 4.9.8's DLedger mode).

Two kinds of layout live here:

* the RPC between the members of a group: ordinary RemotingCommand frames on each member's own
  DLedger port, the request code one of :class:`DLedgerRequestCode`, no ext fields, and the
  fastjson text of a request bean as the body. Every reply has header code 200
  (``DLedgerResponseCode.SUCCESS``, flag 1, the request's opaque); the real result is the
  ``code`` field of the reply's body;
* the store: ``<storePath>/dledger-<selfId>/`` holds ``data/`` (entries back to back, files of
  ``mappedFileSizeCommitLog`` bytes, the rest of a file after its last entry padded by a blank
  of magic -1 and the blank's size), ``index/`` (one 32-byte unit an entry), and two Java
  properties files, ``checkpoint`` (``committedIndex``, ``endIndex``) and ``currterm``
  (``currTerm``, ``voteLeader``).

In DLedger mode the broker's CommitLog is the DLedger ledger: an entry's body is one message
record (the CommitLog layout of :mod:`rocketpy.codecs.message`), and the record's physical offset is
``pos + ENTRY_HEADER_SIZE``, which is what ConsumeQueue and IndexFile units point at.
"""

from __future__ import annotations

import base64
import enum
import mmap
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import construct as cs

from .bodies.base import BOOL, BYTES, INT, LONG, STR, JsonBody, bfield, enum_of, list_of, map_of, obj
from .errors import CodecError
from .units import struct_unit

#: what the readers take: bytes, or a mapped store file
Buffer = bytes | bytearray | memoryview | mmap.mmap

__all__ = [
    "BLANK_MAGIC",
    "CURRENT_MAGIC",
    "DLEDGER_BLANK_HEAD",
    "DLEDGER_ENTRY",
    "DLEDGER_ENTRY_HEADER",
    "DLEDGER_INDEX_UNIT",
    "ENTRY_HEADER_SIZE",
    "INDEX_UNIT_SIZE",
    "MIN_BLANK_LEN",
    "REPLY_HEADER_CODE",
    "AppendEntryRequest",
    "AppendEntryResponse",
    "DLedgerEntry",
    "DLedgerBase",
    "DLedgerEntryBean",
    "DLedgerRequestCode",
    "DLedgerResponseCode",
    "GetEntriesRequest",
    "GetEntriesResponse",
    "HeartBeatRequest",
    "HeartBeatResponse",
    "IndexUnit",
    "LeadershipTransferRequest",
    "LeadershipTransferResponse",
    "MetadataRequest",
    "MetadataResponse",
    "PullEntriesRequest",
    "PullEntriesResponse",
    "PushEntryRequest",
    "PushEntryResponse",
    "PushType",
    "VoteRequest",
    "VoteResponse",
    "VoteResult",
    "decode_reply_body",
    "decode_request_body",
    "iter_data_entries",
    "iter_index_units",
    "is_dledger_code",
    "peek_magic_size",
]


class DLedgerRequestCode(enum.IntEnum):
    """DLedgerRequestCode: the request codes of the RPC between members (and DLedger clients)."""

    METADATA = 50000
    APPEND = 50001
    GET = 50002
    VOTE = 51001
    HEART_BEAT = 51002
    PULL = 51003
    PUSH = 51004
    LEADERSHIP_TRANSFER = 51005


class DLedgerResponseCode(enum.IntEnum):
    """DLedgerResponseCode: the result carried in a reply body's ``code`` (and reply header's 200)."""

    UNKNOWN = -1
    SUCCESS = 200
    TIMEOUT = 300
    METADATA_ERROR = 301
    NETWORK_ERROR = 302
    UNSUPPORTED = 303
    UNKNOWN_GROUP = 400
    UNKNOWN_MEMBER = 401
    UNEXPECTED_MEMBER = 402
    EXPIRED_TERM = 403
    NOT_LEADER = 404
    NOT_FOLLOWER = 405
    INCONSISTENT_STATE = 406
    INCONSISTENT_TERM = 407
    INCONSISTENT_INDEX = 408
    INCONSISTENT_LEADER = 409
    INDEX_OUT_OF_RANGE = 410
    UNEXPECTED_ARGUMENT = 411
    REPEATED_REQUEST = 412
    REPEATED_PUSH = 413
    DISK_ERROR = 414
    DISK_FULL = 415
    TERM_NOT_READY = 416
    FALL_BEHIND_TOO_MUCH = 417
    TAKE_LEADERSHIP_FAILED = 418
    INDEX_LESS_THAN_LOCAL_BEGIN = 419
    REQUEST_WITH_EMPTY_BODYS = 420
    PUSH_REQUEST_IS_FULL = 421
    INTERNAL_ERROR = 500
    TERM_CHANGED = 501
    WAIT_QUORUM_ACK_TIMEOUT = 502
    LEADER_PENDING_FULL = 503
    ILLEGAL_MEMBER_STATE = 504
    LEADER_NOT_READY = 505
    LEADER_TRANSFERRING = 506


#: the header code of every DLedger reply (the body's ``code`` says how it went)
REPLY_HEADER_CODE = DLedgerResponseCode.SUCCESS


class VoteResult(enum.Enum):
    """VoteResponse.RESULT, in Java's declaration order (fastjson may read an ordinal)."""

    UNKNOWN = 0
    ACCEPT = 1
    REJECT_UNKNOWN_LEADER = 2
    REJECT_UNEXPECTED_LEADER = 3
    REJECT_EXPIRED_VOTE_TERM = 4
    REJECT_ALREADY_VOTED = 5
    REJECT_ALREADY_HAS_LEADER = 6
    REJECT_TERM_NOT_READY = 7
    REJECT_TERM_SMALL_THAN_LEDGER = 8
    REJECT_EXPIRED_LEDGER_TERM = 9
    REJECT_SMALL_LEDGER_END_INDEX = 10
    REJECT_TAKING_LEADERSHIP = 11


class PushType(enum.Enum):
    """PushEntryRequest.Type."""

    APPEND = 0
    COMMIT = 1
    COMPARE = 2
    TRUNCATE = 3


def is_dledger_code(code: int) -> bool:
    return code in _CODES


_CODES = frozenset(int(c) for c in DLedgerRequestCode)

# ---------------------------------------------------------------------------
# the entry as stored and as carried (DLedgerEntryCoder)
# ---------------------------------------------------------------------------

CURRENT_MAGIC = 1
#: MmapFileList.BLANK_MAGIC_CODE: the padding after a data file's last entry starts with it
BLANK_MAGIC = -1
#: MmapFileList.MIN_BLANK_LEN: the blank's magic and size
MIN_BLANK_LEN = 8

_ENTRY_HEAD_FIELDS = (
    "magic" / cs.Int32sb,
    "size" / cs.Int32sb,  # the whole entry: this header and the body
    "index" / cs.Int64sb,
    "term" / cs.Int64sb,
    "pos" / cs.Int64sb,  # where the entry starts in the ledger (data files' offsets)
    "channel" / cs.Int32sb,  # reserved
    "chain_crc" / cs.Int32sb,  # 0 in 0.3.1.2: nothing computes it
    "body_crc" / cs.Int32sb,  # likewise
    "body_size" / cs.Int32sb,
)
DLEDGER_ENTRY_HEADER = cs.Struct(*_ENTRY_HEAD_FIELDS)
DLEDGER_ENTRY = cs.Struct(*_ENTRY_HEAD_FIELDS, "body" / cs.Bytes(cs.this.body_size))
#: DLedgerEntry.BODY_OFFSET: 48, so a message record's physical offset is ``pos + 48``
ENTRY_HEADER_SIZE = DLEDGER_ENTRY_HEADER.sizeof()
#: the index file's unit (DLedgerEntryCoder.encodeIndex)
DLEDGER_INDEX_UNIT = cs.Struct(
    "magic" / cs.Int32sb,
    "pos" / cs.Int64sb,
    "size" / cs.Int32sb,
    "index" / cs.Int64sb,
    "term" / cs.Int64sb,
)
INDEX_UNIT_SIZE = DLEDGER_INDEX_UNIT.sizeof()
DLEDGER_BLANK_HEAD = cs.Struct("magic" / cs.Const(BLANK_MAGIC, cs.Int32sb), "size" / cs.Int32sb)
assert ENTRY_HEADER_SIZE == 48 and INDEX_UNIT_SIZE == 32 and DLEDGER_BLANK_HEAD.sizeof() == MIN_BLANK_LEN
# the struct forms of the two (every append and every push reads and writes them; tests hold them equal)
_ENTRY_HEAD = struct_unit(DLEDGER_ENTRY_HEADER)
_MAGIC_SIZE = struct_unit(DLEDGER_ENTRY_HEADER, 2)  # an entry's and the end blank's first two fields
_INDEX_UNIT = struct_unit(DLEDGER_INDEX_UNIT)


@dataclass(frozen=True, slots=True)
class DLedgerEntry:
    """One ledger entry; ``size`` is what the entry says (48 + the body's length when well formed)."""

    index: int
    term: int
    pos: int
    body: bytes
    magic: int = CURRENT_MAGIC
    channel: int = 0
    chain_crc: int = 0
    body_crc: int = 0
    #: what the entry's size field says; -1: the header and the body (the well-formed size)
    size: int = -1

    def __post_init__(self) -> None:
        if self.size == -1:
            object.__setattr__(self, "size", ENTRY_HEADER_SIZE + len(self.body))

    @property
    def entry_size(self) -> int:
        return self.size

    def same(self, other: DLedgerEntry | None) -> bool:
        """DLedgerEntry.equals: size, magic, index, term, channel, pos and body (not the CRCs)."""
        return other is not None and (
            self.entry_size, self.magic, self.index, self.term, self.channel, self.pos, self.body
        ) == (other.entry_size, other.magic, other.index, other.term, other.channel, other.pos, other.body)

    @property
    def body_offset(self) -> int:
        """The ledger offset of the body: a message record's physical offset in DLedger mode."""
        return self.pos + ENTRY_HEADER_SIZE

    def encode(self) -> bytes:
        """DLEDGER_ENTRY's bytes (its struct form)."""
        try:
            head = _ENTRY_HEAD.pack(self.magic, self.entry_size, self.index, self.term, self.pos, self.channel,
                                    self.chain_crc, self.body_crc, len(self.body))
        except struct.error as exc:
            raise CodecError(f"DLedger entry {self.index}: {exc}") from None
        return head + self.body

    @classmethod
    def decode(cls, data: Buffer, offset: int = 0) -> DLedgerEntry:
        """The entry at ``offset``; CodecError when it is cut short or its sizes disagree."""
        if len(data) - offset < ENTRY_HEADER_SIZE:
            raise CodecError(f"DLedger entry at {offset}: {len(data) - offset} bytes, fewer than its header")
        magic, size, index, term, pos, channel, chain_crc, crc, n = _ENTRY_HEAD.unpack_from(data, offset)
        if n < 0 or size != ENTRY_HEADER_SIZE + n:
            raise CodecError(f"DLedger entry at {offset}: size {size} does not fit a body of {n} bytes")
        end = offset + ENTRY_HEADER_SIZE + n
        if end > len(data):
            raise CodecError(f"DLedger entry at {offset}: body of {n} bytes runs past the data")
        return cls(index=index, term=term, pos=pos, body=bytes(data[offset + ENTRY_HEADER_SIZE : end]), magic=magic,
                   channel=channel, chain_crc=chain_crc, body_crc=crc, size=size)

    def to_bean(self) -> DLedgerEntryBean:
        return DLedgerEntryBean(
            body=self.body,
            body_crc=self.body_crc,
            chain_crc=self.chain_crc,
            channel=self.channel,
            index=self.index,
            magic=self.magic,
            pos=self.pos,
            size=self.entry_size,
            term=self.term,
        )

    @classmethod
    def from_bean(cls, bean: DLedgerEntryBean) -> DLedgerEntry:
        return cls(
            index=bean.index,
            term=bean.term,
            pos=bean.pos,
            body=bean.body or b"",
            magic=bean.magic,
            channel=bean.channel,
            chain_crc=bean.chain_crc,
            body_crc=bean.body_crc,
            size=bean.size,
        )


@dataclass(frozen=True, slots=True)
class IndexUnit:
    """One unit of the index file: where entry ``index`` sits in the data files."""

    magic: int
    pos: int
    size: int
    index: int
    term: int

    def encode(self) -> bytes:
        """DLEDGER_INDEX_UNIT's bytes (its struct form)."""
        return _INDEX_UNIT.pack(self.magic, self.pos, self.size, self.index, self.term)

    @classmethod
    def decode(cls, data: Buffer, offset: int = 0) -> IndexUnit:
        """The unit at ``offset`` (struct.error when fewer than 32 bytes are there)."""
        return cls(*_INDEX_UNIT.unpack_from(data, offset))


def iter_index_units(data: Buffer) -> Iterator[IndexUnit]:
    """The units of an index file's bytes up to the first unwritten one (magic 0)."""
    for start in range(0, len(data) - INDEX_UNIT_SIZE + 1, INDEX_UNIT_SIZE):
        u = IndexUnit.decode(data, start)
        if u.magic == 0:
            return
        yield u


def peek_magic_size(data: Buffer, at: int = 0) -> tuple[int, int]:
    """(magic, size) of the entry or the end-of-file blank at ``at``: 8 bytes must be there."""
    magic, size = _MAGIC_SIZE.unpack_from(data, at)
    return magic, size


def iter_data_entries(data: Buffer, file_offset: int = 0) -> Iterator[DLedgerEntry]:
    """The entries of one data file's bytes (``file_offset``: the file's ledger offset, its name),
    stopping at the blank that pads its end or at the first unwritten byte; CodecError on an entry
    whose ``pos`` is not where it sits or that does not decode (a torn tail is the caller's call)."""
    at = 0
    while len(data) - at >= MIN_BLANK_LEN:
        magic, _size = peek_magic_size(data, at)
        if magic == 0 or magic == BLANK_MAGIC:
            return
        entry = DLedgerEntry.decode(data, at)
        if entry.pos != file_offset + at:
            raise CodecError(f"DLedger entry {entry.index} at {file_offset + at} says it is at {entry.pos}")
        yield entry
        at += entry.entry_size


# ---------------------------------------------------------------------------
# RPC bodies (fastjson beans: properties from the getters, sorted, nulls left out)
# ---------------------------------------------------------------------------


class DLedgerEntryBean(JsonBody):
    """DLedgerEntry as fastjson writes it inside PUSH, GET and PULL bodies (``body`` in base64)."""

    java_class = "io.openmessaging.storage.dledger.entry.DLedgerEntry"
    body: bytes | None = bfield(BYTES)
    body_crc: int = bfield(INT, default=0)
    chain_crc: int = bfield(INT, default=0)
    channel: int = bfield(INT, default=0)
    index: int = bfield(LONG, default=0)
    magic: int = bfield(INT, default=0)
    pos: int = bfield(LONG, default=0)
    size: int = bfield(INT, default=0)
    term: int = bfield(LONG, default=0)


class DLedgerBase(JsonBody):
    """RequestOrResponse: the fields every DLedger request and reply carries."""

    code: int = bfield(INT, default=int(DLedgerResponseCode.SUCCESS))
    group: str | None = bfield(STR)
    leader_id: str | None = bfield(STR)
    local_id: str | None = bfield(STR)
    remote_id: str | None = bfield(STR)
    term: int = bfield(LONG, default=-1)

    @property
    def response_code(self) -> DLedgerResponseCode:
        try:
            return DLedgerResponseCode(self.code)
        except ValueError:
            return DLedgerResponseCode.UNKNOWN


class VoteRequest(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.VoteRequest"
    ledger_end_index: int = bfield(LONG, default=-1)
    ledger_end_term: int = bfield(LONG, default=-1)


class VoteResponse(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.VoteResponse"
    vote_result: VoteResult = bfield(enum_of(VoteResult), default=VoteResult.UNKNOWN)


class HeartBeatRequest(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.HeartBeatRequest"


class HeartBeatResponse(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.HeartBeatResponse"


def _first_index(r: PushEntryRequest) -> int:
    if r.batch_entry:
        return r.batch_entry[0].index
    return r.entry.index if r.entry is not None else -1


def _last_index(r: PushEntryRequest) -> int:
    if r.batch_entry:
        return r.batch_entry[-1].index
    return r.entry.index if r.entry is not None else -1


def _count(r: PushEntryRequest) -> int:
    if r.batch_entry:
        return len(r.batch_entry)
    return 1 if r.entry is not None else 0


class PushEntryRequest(DLedgerBase):
    """The leader's push; ``batch``, ``count``, ``firstEntryIndex`` and ``lastEntryIndex`` are
    getters with no field behind them (computed from the entries when left None)."""

    java_class = "io.openmessaging.storage.dledger.protocol.PushEntryRequest"
    batch: bool | None = bfield(BOOL, computed=lambda r: bool(r.batch_entry))
    batch_entry: list[DLedgerEntryBean] = bfield(list_of(obj(DLedgerEntryBean)), default=[])
    commit_index: int = bfield(LONG, default=-1)
    count: int | None = bfield(INT, computed=_count)
    entry: DLedgerEntryBean | None = bfield(obj(DLedgerEntryBean))
    first_entry_index: int | None = bfield(LONG, computed=_first_index)
    last_entry_index: int | None = bfield(LONG, computed=_last_index)
    total_size: int = bfield(LONG, default=0)
    type: PushType = bfield(enum_of(PushType), default=PushType.APPEND)

    def first_index(self) -> int:
        """getFirstEntryIndex, from the entries (what the wire's ``firstEntryIndex`` says)."""
        return _first_index(self)

    def last_index(self) -> int:
        """getLastEntryIndex, from the entries."""
        return _last_index(self)

    def encode(self, **features: Any) -> bytes:
        """fastjson's bytes; a push of at most one entry, as the leader makes them, is written by a template
        (every push goes out once per follower); tests hold it to the general writer."""
        if not features:
            fast = _push_request_bytes(self)
            if fast is not None:
                return fast
        return super().encode(**features)

    def entry_count(self) -> int:
        return _count(self)


class PushEntryResponse(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.PushEntryResponse"
    begin_index: int = bfield(LONG, default=0)
    count: int = bfield(INT, default=0)
    end_index: int = bfield(LONG, default=0)
    index: int | None = bfield(LONG)

    def encode(self, **features: Any) -> bytes:
        if not features:
            fast = _push_response_bytes(self)
            if fast is not None:
                return fast
        return super().encode(**features)


# -- the push's fast forms (every entry crosses the network in one of these) ------------------------
def _plain(text: str | None) -> bool:
    """A string fastjson writes between quotes as it is (ASCII, nothing to escape)."""
    return text is None or (text.isascii() and text.isprintable() and '"' not in text and "\\" not in text)


def _opt(name: str, text: str | None) -> str:
    return "" if text is None else f',"{name}":"{text}"'


def _entry_json(e: DLedgerEntryBean) -> str | None:
    if e.body is None or e.extra:
        return None
    body = base64.b64encode(e.body).decode("ascii")
    return (f'{{"body":"{body}","bodyCrc":{e.body_crc},"chainCrc":{e.chain_crc},"channel":{e.channel},'
            f'"index":{e.index},"magic":{e.magic},"pos":{e.pos},"size":{e.size},"term":{e.term}}}')


def _push_request_bytes(r: PushEntryRequest) -> bytes | None:
    """PushEntryRequest.encode's bytes by template (a push of one entry, or a batch, as the leader makes
    them), or None where the general writer must decide."""
    if (r.batch is not None or r.count is not None or r.first_entry_index is not None
            or r.last_entry_index is not None or r.extra or not isinstance(r.type, PushType)
            or (r.batch_entry and r.entry is not None)):
        return None
    if not (_plain(r.group) and _plain(r.leader_id) and _plain(r.local_id) and _plain(r.remote_id)):
        return None
    e = r.entry
    batch = "[]"
    if r.batch_entry:
        parts = [_entry_json(b) for b in r.batch_entry]
        if None in parts:
            return None
        batch = "[" + ",".join(parts) + "]"  # type: ignore[arg-type]
        entry, count, first, last = "", len(parts), r.batch_entry[0].index, r.batch_entry[-1].index
    elif e is None:
        entry, count, first, last = "", 0, -1, -1
    else:
        one = _entry_json(e)
        if one is None:
            return None
        entry, count, first, last = f',"entry":{one}', 1, e.index, e.index
    head = (f'{{"batch":{"true" if r.batch_entry else "false"},"batchEntry":{batch},"code":{r.code},'
            f'"commitIndex":{r.commit_index},"count":{count}')
    tail = (f',"firstEntryIndex":{first}{_opt("group", r.group)},"lastEntryIndex":{last}'
            f'{_opt("leaderId", r.leader_id)}{_opt("localId", r.local_id)}{_opt("remoteId", r.remote_id)}'
            f',"term":{r.term},"totalSize":{r.total_size},"type":"{r.type.name}"}}')
    return (head + entry + tail).encode("ascii")


def _push_response_bytes(r: PushEntryResponse) -> bytes | None:
    if r.extra or not (_plain(r.group) and _plain(r.leader_id) and _plain(r.local_id) and _plain(r.remote_id)):
        return None
    index = "" if r.index is None else f',"index":{r.index}'
    return (f'{{"beginIndex":{r.begin_index},"code":{r.code},"count":{r.count},"endIndex":{r.end_index}'
            f'{_opt("group", r.group)}{index}{_opt("leaderId", r.leader_id)}{_opt("localId", r.local_id)}'
            f'{_opt("remoteId", r.remote_id)},"term":{r.term}}}').encode("ascii")


class AppendEntryRequest(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.AppendEntryRequest"
    body: bytes | None = bfield(BYTES)


class AppendEntryResponse(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.AppendEntryResponse"
    index: int = bfield(LONG, default=-1)
    pos: int = bfield(LONG, default=-1)


class GetEntriesRequest(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.GetEntriesRequest"
    begin_index: int | None = bfield(LONG)
    index_list: list[int] | None = bfield(list_of(LONG))
    max_size: int = bfield(INT, default=0)


class GetEntriesResponse(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.GetEntriesResponse"
    entries: list[DLedgerEntryBean] = bfield(list_of(obj(DLedgerEntryBean)), default=[])


class MetadataRequest(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.MetadataRequest"


class MetadataResponse(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.MetadataResponse"
    peers: dict[str, str] | None = bfield(map_of(STR, STR))


class PullEntriesRequest(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.PullEntriesRequest"
    begin_index: int | None = bfield(LONG)
    node_id: str | None = bfield(STR)


class PullEntriesResponse(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.PullEntriesResponse"
    entries: list[DLedgerEntryBean] = bfield(list_of(obj(DLedgerEntryBean)), default=[])


class LeadershipTransferRequest(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.LeadershipTransferRequest"
    take_leadership_ledger_index: int = bfield(LONG, default=0)
    transfer_id: str | None = bfield(STR)
    transferee_id: str | None = bfield(STR)


class LeadershipTransferResponse(DLedgerBase):
    java_class = "io.openmessaging.storage.dledger.protocol.LeadershipTransferResponse"


_C = DLedgerRequestCode
#: request code -> (request body, reply body)
BODIES: dict[int, tuple[type[JsonBody], type[JsonBody]]] = {
    _C.METADATA: (MetadataRequest, MetadataResponse),
    _C.APPEND: (AppendEntryRequest, AppendEntryResponse),
    _C.GET: (GetEntriesRequest, GetEntriesResponse),
    _C.VOTE: (VoteRequest, VoteResponse),
    _C.HEART_BEAT: (HeartBeatRequest, HeartBeatResponse),
    _C.PULL: (PullEntriesRequest, PullEntriesResponse),
    _C.PUSH: (PushEntryRequest, PushEntryResponse),
    _C.LEADERSHIP_TRANSFER: (LeadershipTransferRequest, LeadershipTransferResponse),
}


def decode_request_body(code: int, body: bytes) -> Any:
    """The typed body of a DLedger request of ``code``."""
    try:
        cls = BODIES[code][0]
    except KeyError:
        raise CodecError(f"{code} is not a DLedger request code") from None
    return cls.decode(body)


def decode_reply_body(request_code: int, body: bytes) -> Any:
    """The typed body of the reply to a DLedger request of ``request_code``."""
    try:
        cls = BODIES[request_code][1]
    except KeyError:
        raise CodecError(f"{request_code} is not a DLedger request code") from None
    return cls.decode(body)
