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
        #: the remark a server answers with (RemotingCommand.decodeCommandCustomHeader's exception)
        self.remote_desc = (
            f"org.apache.rocketmq.remoting.exception.RemotingCommandException: the custom field <{field}> is null"
        )


class BadFieldValue(CodecError):
    """A header field whose text Java's Integer.parseInt / Long.parseLong / Double.parseDouble refuses."""

    def __init__(self, header: str, field: str, kind: str, text: str) -> None:
        super().__init__(f"{header}: field <{field}> is not a Java {kind}: {text[:40]!r}")
        self.header = header
        self.field = field
        #: the remark a server answers with: the NumberFormatException Java's parse throws
        self.remote_desc = f'java.lang.NumberFormatException: For input string: "{text[:64]}"'


#: what parsing untrusted bytes with construct (or struct) may raise; codecs turn these into CodecError
CONSTRUCT_ERRORS = (cs.ConstructError, ValueError, OverflowError, struct.error, IndexError, TypeError)
