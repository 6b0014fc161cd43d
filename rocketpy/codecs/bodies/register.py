"""Broker registration: RegisterBrokerBody (plain JSON or the compressed binary form),
topic configs, data versions, and the CRC32 the request header carries."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from typing import ClassVar

from ...clock import now_ms as _now_ms
from ...javacompat.lang import parse_java_int
from .. import fastjson
from ..codes import TopicFilterType
from ..compression import body_crc
from ..errors import CodecError
from .base import BOOL, INT, LONG, STR, JsonBody, bfield, enum_of, list_of, map_of, obj
from .route import KVTable

PERM_READ_WRITE = 4 | 2  # PermName.PERM_READ | PermName.PERM_WRITE


class DataVersion(JsonBody):
    """Version stamp of a broker's topic (or subscription group) table."""

    java_class = "org.apache.rocketmq.common.DataVersion"

    timestamp: int = bfield(LONG, factory=_now_ms, doc="ms since the epoch, set at creation")
    counter: int = bfield(LONG, default=0, doc="an AtomicLong in Java, written as a number")

    def next_version(self) -> None:
        """DataVersion.nextVersion: new timestamp, counter + 1."""
        self.timestamp = _now_ms()
        self.counter += 1


class TopicConfig(JsonBody):
    """A topic as a broker stores and registers it."""

    java_class = "org.apache.rocketmq.common.TopicConfig"

    topic_name: str | None = bfield(STR)
    read_queue_nums: int = bfield(INT, default=16)
    write_queue_nums: int = bfield(INT, default=16)
    perm: int = bfield(INT, default=PERM_READ_WRITE, doc="PermName bits")
    topic_filter_type: TopicFilterType | None = bfield(enum_of(TopicFilterType), default=TopicFilterType.SINGLE_TAG)
    topic_sys_flag: int = bfield(INT, default=0, doc="TopicSysFlag bits")
    order: bool = bfield(BOOL, default=False)

    def to_line(self) -> str:
        """TopicConfig.encode(): 'name read write perm filterType', the compressed-register form."""

        def java(v: object) -> str:  # StringBuilder.append: null -> "null"
            return "null" if v is None else str(v)

        ftype = None if self.topic_filter_type is None else self.topic_filter_type.name
        return " ".join(
            java(v) for v in (self.topic_name, self.read_queue_nums, self.write_queue_nums, self.perm, ftype)
        )

    @classmethod
    def from_line(cls, line: str) -> TopicConfig:
        """TopicConfig.decode(String): five space-separated parts, or CodecError (where Java
        ends with a null topic name that the register path cannot store)."""
        parts = line.split(" ")
        while parts and parts[-1] == "" and len(parts) > 1:  # String.split drops trailing empties
            parts.pop()
        if len(parts) != 5:
            raise CodecError(f"topic config line needs 5 fields, got {len(parts)}: {line[:80]!r}")
        name, read, write, perm, ftype = parts
        try:
            filter_type = TopicFilterType[ftype]
        except KeyError:
            raise CodecError(f"unknown topic filter type {ftype[:40]!r}") from None
        return cls(
            topic_name=name,
            read_queue_nums=_java_int(read),
            write_queue_nums=_java_int(write),
            perm=_java_int(perm),
            topic_filter_type=filter_type,
        )


def _java_int(text: str) -> int:
    """Integer.parseInt (parse_java_int: optional sign, decimal digits of any script, 32-bit range)."""
    value = parse_java_int(text)
    if value is None:
        raise CodecError(f"not an int: {text[:40]!r}")
    return value


class TopicConfigSerializeWrapper(JsonBody):
    """A broker's topic table with its version: GET_ALL_TOPIC_CONFIG, config/topics.json,
    and the heart of RegisterBrokerBody."""

    java_class = "org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper"

    topic_config_table: dict[str, TopicConfig] = bfield(map_of(STR, obj(TopicConfig)), default={})
    data_version: DataVersion | None = bfield(obj(DataVersion), factory=DataVersion)


#: a compressed body may not inflate beyond this (a frame of 16 MiB could otherwise expand to GiBs), whatever
#: the NameServer's registerBrokerMaxBodySize says
MAX_INFLATED_REGISTER_BODY = 64 * 1024 * 1024


class RegisterBodyOverLimit(CodecError):
    """A RegisterBrokerBody over a limit its reader was given: ``what`` is "inflated" (``amount``: the
    bytes it would inflate past) or "topics" (``amount``: its topic count)."""

    def __init__(self, what: str, amount: int) -> None:
        self.what = what
        self.amount = amount
        if what == "inflated":
            super().__init__(f"RegisterBrokerBody: inflates past {amount} bytes")
        else:
            super().__init__(f"RegisterBrokerBody: {amount} topics")


class RegisterBrokerBody(JsonBody):
    """REGISTER_BROKER request body.

    Plain form: fastjson JSON. Compressed form (header ``compressed=true``): a zlib stream
    (Deflater BEST_COMPRESSION) of big-endian int32-length-prefixed parts: the data version
    JSON, the topic count, each topic as ``TopicConfig.to_line()`` (so topicSysFlag and order
    are not carried), and the filter server list as a JSON array.

    :meth:`decode` accepts either form (a zlib stream never starts with ``{``) and remembers
    which one it read, so :meth:`encode` gives the same form back unless told otherwise."""

    java_class = "org.apache.rocketmq.common.protocol.body.RegisterBrokerBody"

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper | None = bfield(
        obj(TopicConfigSerializeWrapper), factory=TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] | None = bfield(list_of(STR), default=[])

    #: the form this instance was decoded from; encode() defaults to it
    compressed_form: ClassVar[bool] = False

    @classmethod
    def decode(cls, data: bytes | str, compressed: bool | None = None, *, max_inflated: int | None = None,
               max_topics: int = 0) -> RegisterBrokerBody:
        """Either form; ``compressed`` as the request header says, or None to tell by the bytes.
        ``max_inflated`` and ``max_topics``: see :meth:`decode_compressed` (``max_topics`` is checked for
        the plain form too, once decoded)."""
        if compressed is None:
            compressed = isinstance(data, (bytes, bytearray, memoryview)) and _looks_compressed(bytes(data))
        if not compressed:
            body = cls.from_json(fastjson.loads(data))
            wrapper = body.topic_config_serialize_wrapper
            count = len(wrapper.topic_config_table or ()) if wrapper is not None else 0
            if 0 < max_topics < count:
                raise RegisterBodyOverLimit("topics", count)
            return body
        if isinstance(data, str):
            raise CodecError("a compressed RegisterBrokerBody is bytes")
        return cls.decode_compressed(bytes(data), max_inflated=max_inflated, max_topics=max_topics)

    @classmethod
    def decode_body(cls, data: bytes, compressed: bool | None = None) -> RegisterBrokerBody:
        """RegisterBrokerBody.decode(data, compressed), with ``compressed`` from the request
        header (None: tell by the bytes)."""
        return cls.decode(data, compressed)

    @classmethod
    def decode_compressed(cls, data: bytes, *, max_inflated: int | None = None,
                          max_topics: int = 0) -> RegisterBrokerBody:
        """RegisterBrokerBody.decode(data, true). A stream inflating past ``max_inflated`` bytes (at most,
        and by default, MAX_INFLATED_REGISTER_BODY) raises RegisterBodyOverLimit("inflated", bytes read so
        far), a topic count over ``max_topics`` (0: none) RegisterBodyOverLimit("topics", count) before any
        topic is read."""
        cap = MAX_INFLATED_REGISTER_BODY
        limit = cap if max_inflated is None or not 0 < max_inflated < cap else max_inflated
        inflater = zlib.decompressobj()
        try:
            raw = inflater.decompress(data, limit)
        except zlib.error as exc:
            raise CodecError(f"RegisterBrokerBody: bad deflate stream: {exc}") from None
        if inflater.unconsumed_tail:
            raise RegisterBodyOverLimit("inflated", limit)
        reader = _Reader(raw)
        version = DataVersion.decode(reader.chunk())
        table: dict[str, TopicConfig] = {}
        count = reader.int32()
        if count < 0:
            raise CodecError(f"RegisterBrokerBody: negative topic count {count}")
        if 0 < max_topics < count:
            raise RegisterBodyOverLimit("topics", count)
        for _ in range(count):
            chunk = reader.chunk()
            try:
                line = chunk.decode("utf-8")
            except UnicodeDecodeError:
                raise CodecError("RegisterBrokerBody: topic config is not UTF-8") from None
            config = TopicConfig.from_line(line)
            table[config.topic_name or ""] = config
        servers = fastjson.loads(reader.chunk())
        if servers is not None and (not isinstance(servers, list) or not all(isinstance(s, str) for s in servers)):
            raise CodecError("RegisterBrokerBody: filter server list is not a list of strings")
        body = cls(
            topic_config_serialize_wrapper=TopicConfigSerializeWrapper(topic_config_table=table, data_version=version),
            filter_server_list=servers,
        )
        body.compressed_form = True  # type: ignore[misc]
        return body

    def encode(self, compress: bool | None = None, **features: bool) -> bytes:
        """RegisterBrokerBody.encode(compress); ``compress`` defaults to the decoded form."""
        if compress is None:
            compress = self.compressed_form
        if not compress:
            return super().encode(**features)
        return self.encode_compressed()

    def encode_compressed(self) -> bytes:
        """RegisterBrokerBody.encode(true)."""
        wrapper = self.topic_config_serialize_wrapper or TopicConfigSerializeWrapper()
        return self._compressed(wrapper.topic_config_table)

    def encode_with_topics(self, topics: Mapping[str, TopicConfig], compress: bool | None = None) -> bytes:
        """:meth:`encode` with ``topics`` as the wrapper's topic table (whose own table must be empty), written
        one topic at a time: a broker's whole table is never a JSON tree (or a list of lines) at once."""
        wrapper = self.topic_config_serialize_wrapper
        if wrapper is None or wrapper.topic_config_table:
            raise ValueError("the wrapper's own topic table must be empty: the given one takes its place")
        if compress is None:
            compress = self.compressed_form
        if compress:
            return self._compressed(topics)
        return self.encode_streamed(("topic_config_serialize_wrapper", "topic_config_table"), topics)

    def _compressed(self, topics: Mapping[str, TopicConfig]) -> bytes:
        # Deflater at BEST_COMPRESSION fed 16 KiB at a time (a zlib stream does not depend on how its input is
        # cut): the lines are never all held at once, and the calls are few
        wrapper = self.topic_config_serialize_wrapper or TopicConfigSerializeWrapper()
        version = wrapper.data_version if wrapper.data_version is not None else DataVersion()
        deflater = zlib.compressobj(9)
        out: list[bytes] = []
        batch = bytearray(_chunk(version.encode()) + struct.pack(">i", len(topics)))
        for config in topics.values():
            batch += _chunk(config.to_line().encode("utf-8"))
            if len(batch) >= _DEFLATE_BATCH:
                out.append(deflater.compress(batch))
                batch.clear()
        batch += _chunk(fastjson.dump_bytes(self.filter_server_list))
        out.append(deflater.compress(batch))
        out.append(deflater.flush())
        return b"".join(out)


_DEFLATE_BATCH = 16 * 1024


def _looks_compressed(data: bytes) -> bool:
    # zlib header: CMF 0x78 for a 32K window, and (CMF*256 + FLG) % 31 == 0
    return len(data) >= 2 and data[0] & 0x0F == 8 and ((data[0] << 8) | data[1]) % 31 == 0


def _chunk(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise CodecError("RegisterBrokerBody: end of compressed data has been reached")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def int32(self) -> int:
        value: int = struct.unpack(">i", self.take(4))[0]
        return value

    def chunk(self) -> bytes:
        return self.take(self.int32())


def body_crc32(body: bytes | None) -> int:
    """UtilAll.crc32: CRC-32 of the body with the sign bit cleared (0 for no body), the
    ``bodyCrc32`` field of RegisterBrokerRequestHeader."""
    return 0 if body is None else body_crc(body)


def check_body_crc32(body: bytes | None, expected: int | None) -> bool:
    """The name server's check: a header value of 0 (or none) is not checked."""
    if not expected:
        return True
    return body_crc32(body) == expected


class RegisterBrokerResult(JsonBody):
    """What RouteInfoManager.registerBroker returns (the reply's header carries the two
    addresses; the reply body is the KV table alone)."""

    java_class = "org.apache.rocketmq.common.namesrv.RegisterBrokerResult"

    ha_server_addr: str | None = bfield(STR)
    master_addr: str | None = bfield(STR)
    kv_table: KVTable | None = bfield(obj(KVTable))


__all__ = [
    "DataVersion",
    "RegisterBodyOverLimit",
    "RegisterBrokerBody",
    "RegisterBrokerResult",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "body_crc32",
    "check_body_crc32",
]
