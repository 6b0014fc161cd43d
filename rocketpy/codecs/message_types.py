"""The typed views of a message: :class:`Message` (what a producer sends) and :class:`MessageExt` (a stored one).

Body semantics (decided here, used everywhere): ``Message.body`` always holds the
bytes exactly as they travel or sit in the record, so a compressed message keeps its
zlib stream there and ``record.encode_message`` reproduces records byte for byte.
:meth:`Message.decompressed_body` gives what the application sent (Java's
``getBody()`` after ``MessageDecoder.decode(..., deCompressBody=true)``).

The raw properties bytes are kept alongside the parsed map, because the broker may store
strings that do not re-serialise canonically (batch records repeat ``WAIT``), and
re-encoding an unchanged message must give back the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..javacompat.lang import parse_java_int
from .codes import CompressionType, MessageConst, MessageSysFlag
from .compression import compression_of, decompress_body
from .errors import CodecError
from .hosts import offset_msg_id, parse_host
from .properties_string import (
    decode_properties,
    properties_to_string,
)

_COMPRESSED = int(MessageSysFlag.COMPRESSED_FLAG)


@dataclass(slots=True)
class Message:
    """What a producer sends: topic, flag, properties and body (Java's Message)."""

    topic: str = ""
    body: bytes = b""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    # Properties bytes as decoded, reused by the encoders while `properties` is unchanged.
    _raw_properties: bytes | None = field(default=None, repr=False, compare=False, kw_only=True)

    # -- properties accessors --------------------------------------------------

    def get_property(self, name: str) -> str | None:
        """One property, or None."""
        return self.properties.get(name)

    def put_property(self, name: str, value: str) -> None:
        """Set one property."""
        self.properties[name] = value

    @property
    def tags(self) -> str | None:
        """The TAGS property."""
        return self.properties.get(MessageConst.PROPERTY_TAGS)

    @property
    def keys_string(self) -> str | None:
        """The KEYS property as stored (keys separated by spaces)."""
        return self.properties.get(MessageConst.PROPERTY_KEYS)

    @property
    def keys(self) -> list[str]:
        """The KEYS property split on spaces, empty pieces dropped (as IndexService does)."""
        raw = self.properties.get(MessageConst.PROPERTY_KEYS)
        if not raw:
            return []
        return [k for k in raw.split(MessageConst.KEY_SEPARATOR) if k]

    @property
    def uniq_key(self) -> str | None:
        """UNIQ_KEY: the client-made message id."""
        return self.properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    @property
    def delay_time_level(self) -> int:
        """DELAY as an int, 0 when absent; CodecError when not an integer (Java's parseInt throws)."""
        raw = self.properties.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL)
        if raw is None:
            return 0
        level = parse_java_int(raw)
        if level is None:
            raise CodecError(f"DELAY is not an int: {raw[:40]!r}")
        return level

    @property
    def wait_store_msg_ok(self) -> bool:
        """WAIT: true when absent, else Boolean.parseBoolean."""
        raw = self.properties.get(MessageConst.PROPERTY_WAIT_STORE_MSG_OK)
        return True if raw is None else raw.lower() == "true"

    def decompressed_body(self) -> bytes:
        """The body as the application sees it: inflated when the message says it is compressed."""
        return self.body

    def properties_bytes(self) -> bytes:
        """The properties as a record or batch entry holds them: the bytes decoded, while the map is unchanged."""
        raw = self._raw_properties
        # Order matters too: the same map in another order is another string.
        if raw is not None and list(decode_properties(raw).items()) == list(self.properties.items()):
            return raw
        return properties_to_string(self.properties).encode("utf-8")


@dataclass(slots=True, kw_only=True)
class MessageExt(Message):
    """A stored message: one record of the CommitLog or of a PULL body (Java's MessageExt).

    ``body`` holds the bytes exactly as stored (compressed when ``sys_flag`` has
    COMPRESSED_FLAG); :meth:`decompressed_body` gives the application payload.
    Hosts are ``"ip:port"`` strings.

    Ids: :attr:`msg_id` is the offset msg id (store host + CommitLog offset), what Java's MessageExt.getMsgId
    gives on the broker, and so here wherever a stored message is read, consumers included. Java's consumers
    get a MessageClientExt instead, whose getMsgId is the UNIQ_KEY, the id the producer's SendResult gave:
    that is :attr:`client_msg_id` here (Java's getOffsetMsgId is :attr:`offset_msg_id`, the same as
    :attr:`msg_id`). Match a consumed message with its send by ``client_msg_id``.
    """

    queue_id: int = 0
    store_size: int = 0
    queue_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = "127.0.0.1:0"
    store_timestamp: int = 0
    store_host: str = "127.0.0.1:0"
    commit_log_offset: int = 0
    body_crc: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    # (body object it was computed from, inflated body): survives only while body is unchanged.
    _inflated: tuple[bytes, bytes] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def is_compressed(self) -> bool:
        """Whether the stored body is compressed (COMPRESSED_FLAG)."""
        return bool(self.sys_flag & _COMPRESSED)

    @property
    def compression_type(self) -> CompressionType:
        """The algorithm recorded in sys_flag (ZLIB when none is recorded)."""
        return compression_of(self.sys_flag)

    def decompressed_body(self) -> bytes:
        """The application payload: the inflated body when COMPRESSED_FLAG is set, else ``body``."""
        if not self.sys_flag & _COMPRESSED:
            return self.body
        cached = self._inflated
        if cached is not None and cached[0] is self.body:
            return cached[1]
        plain = decompress_body(self.body, compression_of(self.sys_flag))
        self._inflated = (self.body, plain)
        return plain

    @property
    def msg_id(self) -> str:
        """The offset msg id: store host + CommitLog offset (MessageExt.getMsgId on the broker). Not what Java's
        consumer-side getMsgId gives (the UNIQ_KEY): that is :attr:`client_msg_id`."""
        ip, port = parse_host(self.store_host)
        return offset_msg_id(ip, port, self.commit_log_offset)

    @property
    def offset_msg_id(self) -> str:
        """Same as :attr:`msg_id` (MessageClientExt.getOffsetMsgId)."""
        return self.msg_id

    @property
    def client_msg_id(self) -> str:
        """MessageClientExt.getMsgId: UNIQ_KEY when present, else the offset msg id."""
        return self.uniq_key or self.msg_id

    @property
    def transaction_type(self) -> int:
        """The TRANSACTION_* bits of sys_flag."""
        return MessageSysFlag.transaction_value(self.sys_flag)
