"""Pure codecs of the RocketMQ 4.x remoting protocol: bytes in, objects out, no I/O.

Importable without trio (Spark executors load it).
"""

from .codes import (
    LanguageCode,
    MQVersion,
    RequestCode,
    ResponseCode,
    SerializeType,
)
from .command import RemotingCommand
from .errors import CodecError, FrameTooLarge, MissingField
from .frame import DEFAULT_MAX_FRAME, FrameSplitter

__all__ = [
    "DEFAULT_MAX_FRAME",
    "CodecError",
    "FrameSplitter",
    "FrameTooLarge",
    "LanguageCode",
    "MQVersion",
    "MissingField",
    "RemotingCommand",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
]
