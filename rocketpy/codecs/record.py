"""The message record (MessageDecoder / CommitLog layout): declared once with ``construct`` as
:data:`MESSAGE_RECORD`, with a struct fast path checked against it, decoded to and encoded from
:class:`~.message_types.MessageExt`.

One record layout serves three places: the CommitLog on disk, PULL response bodies (records back
to back) and VIEW_MESSAGE_BY_ID replies.

Strings: Java decodes topic and properties with ``new String(bytes, UTF_8)``, which replaces
malformed input with U+FFFD; so do we. ``decode_message(decompress=True)`` inflates eagerly, so a
corrupt compressed body is reported at decode time (Java returns null there), and caches the result.
"""

from __future__ import annotations

import functools
import mmap
import struct
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from typing import Any

from construct import (
    Bytes,
    Const,
    GreedyBytes,
    IfThenElse,
    Int8sb,
    Int16sb,
    Int32sb,
    Int64sb,
    Prefixed,
    Struct,
    Terminated,
    this,
)

from ..accel import compiled
from .codes import MessageConst, MessageSysFlag
from .compression import body_crc
from .errors import CONSTRUCT_ERRORS as _CONSTRUCT_ERRORS
from .errors import CodecError
from .hosts import HOST_CACHE_SIZE, format_host, host_bytes_for
from .message_types import MessageExt
from .properties_string import (
    decode_properties,
    string_to_properties,
)
from .units import head_format, struct_unit

MESSAGE_MAGIC_CODE = -626843481  # 0xDAA320A7: a message record
BLANK_MAGIC_CODE = -875286124  # 0xCBD43194: the blank that fills the end of a CommitLog file

_BORN_V6 = int(MessageSysFlag.BORNHOST_V6_FLAG)
_STORE_V6 = int(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
_COMPRESSED = int(MessageSysFlag.COMPRESSED_FLAG)

MESSAGE_RECORD = Struct(
    "total_size" / Int32sb,
    "magic_code" / Const(MESSAGE_MAGIC_CODE, Int32sb),
    "body_crc" / Int32sb,
    "queue_id" / Int32sb,
    "flag" / Int32sb,
    "queue_offset" / Int64sb,
    "physical_offset" / Int64sb,
    "sys_flag" / Int32sb,
    "born_timestamp" / Int64sb,
    "born_host" / IfThenElse(this.sys_flag & _BORN_V6, Bytes(16), Bytes(4)),
    "born_port" / Int32sb,
    "store_timestamp" / Int64sb,
    "store_host" / IfThenElse(this.sys_flag & _STORE_V6, Bytes(16), Bytes(4)),
    "store_port" / Int32sb,
    "reconsume_times" / Int32sb,
    "prepared_transaction_offset" / Int64sb,
    "body" / Prefixed(Int32sb, GreedyBytes),
    # Java writes (byte) topicLength and (short) propertiesLength: both signed.
    "topic" / Prefixed(Int8sb, GreedyBytes),
    "properties" / Prefixed(Int16sb, GreedyBytes),
    # Parsed from a slice of exactly total_size bytes, so this ties the size to the fields.
    Terminated,
)
"""One message record (MessageDecoder / CommitLog layout), ``total_size`` bytes long."""

# Compiled parsers are about five times faster than the interpreted ones for the
# record (measured: 3.6 vs 17 us parse, 5.5 vs 15 us build); the Structs above stay
# the single definition.
_RECORD_C = MESSAGE_RECORD.compile()

_INT32 = struct.Struct(">i")
_UINT16 = struct.Struct(">H")

# Fixed part of a record: everything but the two hosts and the three variable fields (83 bytes),
# measured on the declaration: an empty record with IPv4 hosts, less the hosts.
_FIXED_LEN = (
    len(
        MESSAGE_RECORD.build(
            {
                **{sub.name: 0 for sub in MESSAGE_RECORD.subcons if sub.name and sub.name != "magic_code"},
                **dict.fromkeys(("born_host", "store_host"), bytes(4)),
                **dict.fromkeys(("body", "topic", "properties"), b""),
            }
        )
    )
    - 8
)


@functools.cache
def _field_at(name: str, host_flags: int) -> int:
    pos = 0
    for sub in MESSAGE_RECORD.subcons:
        if sub.name == name:
            return pos
        pos += sub.sizeof(sys_flag=host_flags)  # raises past the fixed-size fields: only names before body work
    raise KeyError(name)


def record_field_at(name: str, sys_flag: int = 0) -> int:
    """Byte offset of field ``name`` (up to ``body``, whose length prefix sits there) in a
    MESSAGE_RECORD with this ``sys_flag``, computed from the declaration."""
    return _field_at(name, sys_flag & (_BORN_V6 | _STORE_V6))


RECORD_MAGIC_AT = record_field_at("magic_code")
RECORD_SYS_FLAG_AT = record_field_at("sys_flag")
#: offset of store_timestamp, indexed by 1 if the born host is IPv6
_STORE_TIMESTAMP_AT = (record_field_at("store_timestamp"), record_field_at("store_timestamp", _BORN_V6))
#: total size and magic code, the head every record (and the blank) starts with
_SIZE_MAGIC = struct_unit(MESSAGE_RECORD, 2)
_INT64 = struct.Struct(">q")


def peek_size_magic(buf: bytes | bytearray | memoryview | Any, offset: int = 0) -> tuple[int, int]:
    """``(total_size, magic_code)`` of the record at ``offset``, read without checking either
    (struct.error when fewer than 8 bytes are there)."""
    return _SIZE_MAGIC.unpack_from(buf, offset)


def peek_store_timestamp(buf: bytes | bytearray | memoryview | Any, offset: int = 0) -> int:
    """store_timestamp of the record at ``offset`` (struct.error when the buffer is too short)."""
    (sys_flag,) = _INT32.unpack_from(buf, offset + RECORD_SYS_FLAG_AT)
    return _INT64.unpack_from(buf, offset + _STORE_TIMESTAMP_AT[1 if sys_flag & _BORN_V6 else 0])[0]


def record_length(sys_flag: int, body_len: int, topic_len: int, properties_len: int) -> int:
    """Total size of a record (CommitLog.calMsgLength); hosts are 4 or 16 bytes per sys_flag."""
    born = 16 if sys_flag & _BORN_V6 else 4
    store = 16 if sys_flag & _STORE_V6 else 4
    return _FIXED_LEN + born + store + max(body_len, 0) + topic_len + max(properties_len, 0)


# ---------------------------------------------------------------------------
# Fast paths: MESSAGE_RECORD with precompiled struct formats
# ---------------------------------------------------------------------------
# The hot paths (CommitLog appends, PULL bodies) pack and unpack records with one
# struct per host-width combination: everything from total_size to the body length.
# MESSAGE_RECORD stays the declared layout: anything the fast path does not handle
# plainly (a value out of range, inconsistent lengths) goes through construct, so
# results and errors are construct's; tests check both agree on random records.


def _record_head(born_v6: bool, store_v6: bool) -> struct.Struct:
    # total_size magic body_crc queue_id flag queue_offset physical_offset sys_flag born_timestamp
    # born_host born_port store_timestamp store_host store_port reconsume_times prepared_tx_offset body_len
    wide = {"born_host"} if born_v6 else set()
    if store_v6:
        wide.add("store_host")
    return struct.Struct(head_format(MESSAGE_RECORD, wide))


#: indexed by (1 if born host is IPv6) | (2 if store host is IPv6)
_RECORD_HEADS = tuple(_record_head(bool(v & 1), bool(v & 2)) for v in range(4))
_HOST_LENS = ((4, 4), (16, 4), (4, 16), (16, 16))
_INT16 = struct.Struct(">h")
_INT8_PREFIX = tuple(struct.pack(">b", n) for n in range(128))


def _host_variant(sys_flag: int) -> int:
    return (1 if sys_flag & _BORN_V6 else 0) | (2 if sys_flag & _STORE_V6 else 0)


def build_record(
    total_size: int,
    body_crc: int,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    sys_flag: int,
    born_timestamp: int,
    born_host: bytes,
    born_port: int,
    store_timestamp: int,
    store_host: bytes,
    store_port: int,
    reconsume_times: int,
    prepared_transaction_offset: int,
    body: bytes,
    topic: bytes,
    properties: bytes,
) -> bytes:
    """MESSAGE_RECORD.build of these fields, with struct (construct decides whatever is unusual)."""
    v = _host_variant(sys_flag)
    born_len, store_len = _HOST_LENS[v]
    tlen = len(topic)
    if len(born_host) == born_len and len(store_host) == store_len and tlen < 128:
        try:
            return b"".join(
                (
                    _RECORD_HEADS[v].pack(
                        total_size,
                        MESSAGE_MAGIC_CODE,
                        body_crc,
                        queue_id,
                        flag,
                        queue_offset,
                        physical_offset,
                        sys_flag,
                        born_timestamp,
                        born_host,
                        born_port,
                        store_timestamp,
                        store_host,
                        store_port,
                        reconsume_times,
                        prepared_transaction_offset,
                        len(body),
                    ),
                    body,
                    _INT8_PREFIX[tlen],
                    topic,
                    _INT16.pack(len(properties)),
                    properties,
                )
            )
        except (struct.error, TypeError):
            pass
    return _RECORD_C.build(
        {
            "total_size": total_size,
            "body_crc": body_crc,
            "queue_id": queue_id,
            "flag": flag,
            "queue_offset": queue_offset,
            "physical_offset": physical_offset,
            "sys_flag": sys_flag,
            "born_timestamp": born_timestamp,
            "born_host": born_host,
            "born_port": born_port,
            "store_timestamp": store_timestamp,
            "store_host": store_host,
            "store_port": store_port,
            "reconsume_times": reconsume_times,
            "prepared_transaction_offset": prepared_transaction_offset,
            "body": body,
            "topic": topic,
            "properties": properties,
        }
    )


def parse_record_fields(rec: bytes) -> tuple[Any, ...] | None:
    """The MESSAGE_RECORD fields of one whole record, in declared order (magic left out).

    ``(total_size, body_crc, queue_id, flag, queue_offset, physical_offset, sys_flag,
    born_timestamp, born_host, born_port, store_timestamp, store_host, store_port,
    reconsume_times, prepared_transaction_offset, body, topic, properties)``, or None
    when the bytes are not a plainly consistent record (the caller asks construct).
    """
    end = len(rec)
    if end < RECORD_SYS_FLAG_AT + 4:
        return None
    (sys_flag,) = _INT32.unpack_from(rec, RECORD_SYS_FLAG_AT)
    head = _RECORD_HEADS[_host_variant(sys_flag)]
    pos = head.size
    if end < pos:
        return None
    f = head.unpack_from(rec, 0)
    if f[1] != MESSAGE_MAGIC_CODE:
        return None
    blen = f[16]
    bend = pos + blen
    if blen < 0 or bend >= end:
        return None
    tlen = rec[bend]
    tend = bend + 1 + tlen
    if tlen > 127 or tend + 2 > end:
        return None
    (plen,) = _INT16.unpack_from(rec, tend)
    if plen < 0 or tend + 2 + plen != end:
        return None
    return (
        f[0],
        f[2],
        f[3],
        f[4],
        f[5],
        f[6],
        f[7],
        f[8],
        f[9],
        f[10],
        f[11],
        f[12],
        f[13],
        f[14],
        f[15],
        rec[pos:bend],
        rec[bend + 1 : tend],
        rec[tend + 2 :],
    )


def record_properties(record: bytes | bytearray | memoryview) -> dict[str, str]:
    """The properties of one CommitLog record, read without decoding the rest (a SQL92 filter's view)."""
    (sys_flag,) = _INT32.unpack_from(record, RECORD_SYS_FLAG_AT)
    pos = record_field_at("body", sys_flag)  # where the body length sits
    (body_len,) = _INT32.unpack_from(record, pos)
    pos += 4 + max(body_len, 0)
    topic_len = record[pos]
    pos += 1 + topic_len
    (props_len,) = _UINT16.unpack_from(record, pos)
    pos += 2
    return decode_properties(bytes(record[pos : pos + props_len]))



def _record_view(c: Any, raw_props: bytes) -> MessageExt:
    return MessageExt(
        topic=c.topic.decode("utf-8", "replace"),
        body=c.body,
        flag=c.flag,
        properties=decode_properties(raw_props),
        _raw_properties=raw_props,
        queue_id=c.queue_id,
        store_size=c.total_size,
        queue_offset=c.queue_offset,
        sys_flag=c.sys_flag,
        born_timestamp=c.born_timestamp,
        born_host=_host_text(c.born_host, c.born_port),
        store_timestamp=c.store_timestamp,
        store_host=_host_text(c.store_host, c.store_port),
        commit_log_offset=c.physical_offset,
        body_crc=c.body_crc,
        reconsume_times=c.reconsume_times,
        prepared_transaction_offset=c.prepared_transaction_offset,
    )


def _fields_view(f: tuple[Any, ...]) -> MessageExt:
    """_record_view of parse_record_fields' tuple."""
    raw_props = f[17]
    return MessageExt(
        topic=f[16].decode("utf-8", "replace"),
        body=f[15],
        flag=f[3],
        properties=string_to_properties(raw_props.decode("utf-8", "replace")) if raw_props else {},
        _raw_properties=raw_props,
        queue_id=f[2],
        store_size=f[0],
        queue_offset=f[4],
        sys_flag=f[6],
        born_timestamp=f[7],
        born_host=_host_text(f[8], f[9]),
        store_timestamp=f[10],
        store_host=_host_text(f[11], f[12]),
        commit_log_offset=f[5],
        body_crc=f[1],
        reconsume_times=f[13],
        prepared_transaction_offset=f[14],
    )


@functools.lru_cache(maxsize=HOST_CACHE_SIZE)
def _host_text(ip: bytes, port: int) -> str:
    # records repeat a few hosts (the store's, each producer connection's): format each once
    return format_host(ip, port)


def _check_record_at(buf: bytes | bytearray | memoryview | mmap.mmap, offset: int) -> int:
    """The size of the record at ``offset`` once its size and magic code are plausible."""
    if offset < 0 or offset + 8 > len(buf):
        raise CodecError(f"no message record header at offset {offset} (buffer is {len(buf)} bytes)")
    size, magic = _SIZE_MAGIC.unpack_from(buf, offset)
    if magic != MESSAGE_MAGIC_CODE:
        kind = "blank end-of-file record" if magic == BLANK_MAGIC_CODE else f"bad magic code 0x{magic & 0xFFFFFFFF:08X}"
        raise CodecError(f"{kind} at offset {offset}, not a message")
    if size < _FIXED_LEN + 8 or offset + size > len(buf):
        raise CodecError(f"record at offset {offset} declares an impossible size {size}")
    return size


def _decode_record(buf: bytes | bytearray | memoryview | mmap.mmap, offset: int, check_crc: bool) -> MessageExt:
    size = _check_record_at(buf, offset)
    rec = buf[offset : offset + size]
    if type(rec) is not bytes:
        rec = bytes(rec)
    f = parse_record_fields(rec)
    if f is None:
        # not plainly consistent: construct decides (and words the error)
        try:
            c = _RECORD_C.parse(rec)
        except _CONSTRUCT_ERRORS as exc:
            raise CodecError(f"malformed message record at offset {offset}: {exc}") from None
        if check_crc and c.body and body_crc(c.body) != c.body_crc:
            raise CodecError(f"body CRC mismatch at offset {offset}: stored {c.body_crc}, computed {body_crc(c.body)}")
        return _record_view(c, c.properties)
    if check_crc and f[15] and body_crc(f[15]) != f[1]:
        raise CodecError(f"body CRC mismatch at offset {offset}: stored {f[1]}, computed {body_crc(f[15])}")
    return _fields_view(f)


def decode_message(
    buf: bytes | bytearray | memoryview | mmap.mmap,
    offset: int = 0,
    *,
    check_crc: bool = False,
    decompress: bool = True,
) -> MessageExt:
    """Decode the record at ``offset`` (MessageDecoder.decode).

    ``check_crc`` verifies the body CRC as CommitLog recovery does; ``decompress``
    inflates a compressed body now (cached for :meth:`MessageExt.decompressed_body`)
    so corruption surfaces here. ``body`` stays the stored bytes either way.
    """
    msg = _decode_record(buf, offset, check_crc)
    if decompress and msg.sys_flag & _COMPRESSED and msg.body:
        msg.decompressed_body()
    return msg


def plain_records_py(buf: bytes) -> tuple[list[tuple[Any, ...]], int]:
    """parse_record_fields of the records laid back to back from the start of ``buf``, up to the first one
    that is not plainly consistent (the reference of the compiled ``plain_records``): (their fields, the
    offset where they end)."""
    out: list[tuple[Any, ...]] = []
    offset, end = 0, len(buf)
    while end - offset >= 8:
        size, magic = _SIZE_MAGIC.unpack_from(buf, offset)
        if magic != MESSAGE_MAGIC_CODE or size < _FIXED_LEN + 8 or offset + size > end:
            break
        f = parse_record_fields(buf[offset : offset + size])
        if f is None:
            break
        out.append(f)
        offset += size
    return out, offset


#: a PULL body's records in one call (one form of plain_records_py)
_plain_records = compiled("plain_records") or plain_records_py


# ---------------------------------------------------------------------------
# A consumer's PULL body: the messages it keeps, in one pass
# ---------------------------------------------------------------------------


def inflate_pulled(msg: MessageExt) -> None:
    """What a consumer does to a compressed pulled message (Java's client decodes with deCompressBody):
    ``body`` becomes the payload and COMPRESSED_FLAG is cleared, so ``decompressed_body()`` stays consistent."""
    msg.body = msg.decompressed_body()
    msg.sys_flag = MessageSysFlag.clear_compressed_flag(msg.sys_flag)


def plain_messages_py(buf: bytes, decompress: bool) -> list[MessageExt] | None:
    """decode_messages(buf, decompress=decompress) of a body made only of plain records (the reference of the
    compiled ``PulledDecoder.records``), or None when it is anything else (the caller takes the general path)."""
    fields, stop = plain_records_py(buf)
    if stop != len(buf):
        return None
    out: list[MessageExt] = []
    for f in fields:
        msg = _fields_view(f)
        if decompress and msg.sys_flag & _COMPRESSED and msg.body:
            msg.decompressed_body()
        out.append(msg)
    return out


def pulled_messages_py(buf: bytes, wanted: AbstractSet[str] | None) -> list[MessageExt] | None:
    """The messages a consumer keeps from a PULL body made only of plain records (the reference of the
    compiled ``PulledDecoder.messages``): decoded as ``decode_messages`` does, compressed bodies inflated
    (:func:`inflate_pulled`), then those whose TAGS is not in ``wanted`` dropped (``None``: all kept).

    None when the body is anything else (a record that is not plainly consistent, a compressed record with
    an empty body): the caller takes the general path, which decides and words the errors."""
    msgs = plain_messages_py(buf, False)
    if msgs is None:
        return None
    out: list[MessageExt] = []
    for msg in msgs:
        if msg.sys_flag & _COMPRESSED:
            if not msg.body:
                return None
            inflate_pulled(msg)
        if wanted is not None:
            tags = msg.tags
            if tags is None or tags not in wanted:
                continue
        out.append(msg)
    return out


def _compiled_decoder() -> Any:
    decoder = compiled("PulledDecoder")
    try:
        return decoder and decoder(MessageExt, _host_text, inflate_pulled, MessageConst.PROPERTY_TAGS)
    except TypeError:  # MessageExt grew what it cannot fill: the references serve (a test says so)
        return None


_DECODER = _compiled_decoder()
#: one form of pulled_messages_py
pulled_messages: Callable[[bytes, AbstractSet[str] | None], list[MessageExt] | None] = (
    _DECODER.messages if _DECODER is not None else pulled_messages_py
)
#: one form of plain_messages_py
plain_messages: Callable[[bytes, bool], list[MessageExt] | None] = (
    _DECODER.records if _DECODER is not None else plain_messages_py
)


def decode_messages(
    buf: bytes | bytearray | memoryview, *, check_crc: bool = False, decompress: bool = True
) -> list[MessageExt]:
    """Decode records laid back to back (a PULL or QUERY_MESSAGE response body)."""
    if type(buf) is bytes and not check_crc:  # plain records (the usual body) in one pass
        msgs = plain_messages(buf, decompress)
        if msgs is not None:
            return msgs
    out: list[MessageExt] = []
    offset = 0
    end = len(buf)
    if type(buf) is bytes:  # the plain records at once; whatever follows them record by record below
        fields, stop = _plain_records(buf)
        for f in fields:
            if check_crc and f[15] and body_crc(f[15]) != f[1]:
                raise CodecError(f"body CRC mismatch at offset {offset}: stored {f[1]}, computed {body_crc(f[15])}")
            msg = _fields_view(f)
            if decompress and msg.sys_flag & _COMPRESSED and msg.body:
                msg.decompressed_body()
            out.append(msg)
            offset += f[0]
        offset = stop  # (the sum of their sizes)
    while offset < end:
        msg = decode_message(buf, offset, check_crc=check_crc, decompress=decompress)
        out.append(msg)
        offset += msg.store_size
    return out


def encode_message(msg: MessageExt) -> bytes:
    """The record bytes of ``msg`` (MessageDecoder.encode without recompression).

    ``store_size`` is recomputed from the contents; ``body`` is written as is.
    """
    topic = msg.topic.encode("utf-8")
    props = msg.properties_bytes()
    if len(topic) > 127:
        raise CodecError(f"topic is {len(topic)} bytes; a record holds at most 127")
    if len(props) > 32767:
        raise CodecError(f"properties are {len(props)} bytes; a record holds at most 32767")
    sys_flag = msg.sys_flag
    born_ip, born_port = host_bytes_for(msg.born_host, bool(sys_flag & _BORN_V6))
    store_ip, store_port = host_bytes_for(msg.store_host, bool(sys_flag & _STORE_V6))
    size = record_length(sys_flag, len(msg.body), len(topic), len(props))
    try:
        return build_record(
            size,
            msg.body_crc,
            msg.queue_id,
            msg.flag,
            msg.queue_offset,
            msg.commit_log_offset,
            sys_flag,
            msg.born_timestamp,
            born_ip,
            born_port,
            msg.store_timestamp,
            store_ip,
            store_port,
            msg.reconsume_times,
            msg.prepared_transaction_offset,
            msg.body,
            topic,
            props,
        )
    except _CONSTRUCT_ERRORS as exc:
        raise CodecError(f"cannot encode message: {exc}") from None
