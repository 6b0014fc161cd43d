"""The one error type every codec raises on bad input."""

from __future__ import annotations

import struct

import construct as cs


class CodecError(ValueError):
    """Bytes or values that do not form a valid RocketMQ structure."""


class FrameTooLarge(CodecError):
    """A frame announces a length above the configured limit."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"frame length {length} exceeds the limit of {limit} bytes")
        self.length = length
        self.limit = limit


class MissingField(CodecError):
    """A header field that Java marks @CFNotNull is absent."""

    def __init__(self, header: str, field: str) -> None:
        super().__init__(f"{header}: required field <{field}> is missing")
        self.header = header
        self.field = field


#: what parsing untrusted bytes with construct (or struct) may raise; codecs turn these into CodecError
CONSTRUCT_ERRORS = (cs.ConstructError, ValueError, OverflowError, struct.error, IndexError, TypeError)
