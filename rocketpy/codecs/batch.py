"""SEND_BATCH_MESSAGE bodies: messages laid back to back as MessageDecoder.encodeMessages writes them."""

from __future__ import annotations

import struct
from collections.abc import Iterable

from construct import (
    GreedyBytes,
    Int16sb,
    Int32sb,
    Prefixed,
    Struct,
    Terminated,
)

from .errors import CONSTRUCT_ERRORS as _CONSTRUCT_ERRORS
from .errors import CodecError
from .message_types import Message
from .properties_string import (
    decode_properties,
)

BATCH_ENTRY = Struct(
    "total_size" / Int32sb,
    "magic_code" / Int32sb,  # the client writes 0 and nobody reads it
    "body_crc" / Int32sb,  # likewise 0; the broker computes the CRC itself
    "flag" / Int32sb,
    "body" / Prefixed(Int32sb, GreedyBytes),
    "properties" / Prefixed(Int16sb, GreedyBytes),
    Terminated,
)
"""One message inside a SEND_BATCH_MESSAGE body (MessageDecoder.encodeMessage)."""

_BATCH_C = BATCH_ENTRY.compile()
#: an entry less its body and properties (22 bytes), measured on the declaration
_ENTRY_FIXED = len(_BATCH_C.build(dict.fromkeys(("total_size", "magic_code", "body_crc", "flag"), 0)
                                  | dict.fromkeys(("body", "properties"), b"")))
_INT32 = struct.Struct(">i")


def encode_batch(messages: Iterable[Message]) -> bytes:
    """MessageDecoder.encodeMessages: each message as size, 0, 0, flag, body, properties."""
    parts: list[bytes] = []
    for msg in messages:
        props = msg.properties_bytes()
        if len(props) > 32767:
            raise CodecError(f"properties are {len(props)} bytes; at most 32767 fit")
        size = _ENTRY_FIXED + len(msg.body) + len(props)
        try:
            parts.append(
                _BATCH_C.build(
                    {
                        "total_size": size,
                        "magic_code": 0,
                        "body_crc": 0,
                        "flag": msg.flag,
                        "body": msg.body,
                        "properties": props,
                    }
                )
            )
        except _CONSTRUCT_ERRORS as exc:
            raise CodecError(f"cannot encode batch entry: {exc}") from None
    return b"".join(parts)


def decode_batch(body: bytes | bytearray | memoryview, topic: str = "") -> list[Message]:
    """MessageDecoder.decodeMessages: the messages of a batch body (topic comes from the header)."""
    out: list[Message] = []
    offset = 0
    end = len(body)
    while offset < end:
        if offset + 4 > end:
            raise CodecError(f"truncated batch entry at offset {offset}")
        (size,) = _INT32.unpack_from(body, offset)
        if size < _ENTRY_FIXED or offset + size > end:
            raise CodecError(f"batch entry at offset {offset} declares an impossible size {size}")
        try:
            c = _BATCH_C.parse(bytes(body[offset : offset + size]))
        except _CONSTRUCT_ERRORS as exc:
            raise CodecError(f"malformed batch entry at offset {offset}: {exc}") from None
        out.append(
            Message(
                topic=topic,
                body=c.body,
                flag=c.flag,
                properties=decode_properties(c.properties),
                _raw_properties=c.properties,
            )
        )
        offset += size
    return out
