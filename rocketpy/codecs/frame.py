"""The RemotingCommand frame: length-prefixed, a header in JSON or ROCKETMQ binary, a body.

Layout (big-endian)::

    int32 length            bytes after this field
    int32 header_info       serializeType << 24 | headerLength
    header                  headerLength bytes, JSON or ROCKETMQ binary
    body                    the rest

The ROCKETMQ binary header (RocketMQSerializable)::

    int16 code, int8 language, int16 version, int32 opaque, int32 flag,
    int32 remarkLength + remark (UTF-8), int32 extLength + ext entries,
    ext entry = int16 keyLength + key, int32 valueLength + value
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterator
from typing import Any

import construct as cs

from ..accel import compiled
from .errors import CodecError, FrameTooLarge
from .units import struct_unit

#: Java's com.rocketmq.remoting.frameMaxLength default; it counts the length prefix too.
DEFAULT_MAX_FRAME = 16 * 1024 * 1024

FRAME_PREFIX = cs.Struct(
    "length" / cs.Int32sb,
    "header_info" / cs.Int32ub,
)

_NullableUtf8 = cs.ExprAdapter(
    cs.PascalString(cs.Int32ub, "utf8"),
    lambda obj, ctx: obj or None,  # Java reads a zero-length string as null
    lambda obj, ctx: obj or "",
)

EXT_FIELD = cs.Struct(
    "key" / cs.PascalString(cs.Int16sb, "utf8"),  # Java reads the key length as a short
    "value" / cs.PascalString(cs.Int32ub, "utf8"),
)

#: The ROCKETMQ binary header: the reference every parser of it is checked against (see
#: :func:`_parse_rocketmq_header_checked`). The extFields entries must fill their length
#: exactly and the header must end where they do, as RocketMQSerializable reads it.
ROCKETMQ_HEADER = cs.Struct(
    "code" / cs.Int16sb,
    "language" / cs.Int8ub,
    "version" / cs.Int16sb,
    "opaque" / cs.Int32sb,
    "flag" / cs.Int32sb,
    "remark" / _NullableUtf8,
    "ext_fields"
    / cs.Prefixed(cs.Int32ub, cs.FocusedSeq("entries", "entries" / cs.GreedyRange(EXT_FIELD), cs.Terminated)),
    cs.Terminated,
)

# Fast struct forms of the definitions above, for the hot paths (and the sniffer's resync).
FRAME_PREFIX_UNIT = struct_unit(FRAME_PREFIX)
ROCKETMQ_FIXED_UNIT = struct_unit(ROCKETMQ_HEADER, 5)  # code, language, version, opaque, flag
#: the smallest ROCKETMQ header: the fixed fields, then empty remark and extFields lengths
ROCKETMQ_HEADER_MIN = ROCKETMQ_FIXED_UNIT.size + 4 + 4
assert FRAME_PREFIX_UNIT.size == FRAME_PREFIX.sizeof()


def split_header_info(header_info: int) -> tuple[int, int]:
    """(serialize type, header length) from the second int of a frame."""
    return (header_info >> 24) & 0xFF, header_info & 0xFFFFFF


def check_length(length: int, max_frame: int = DEFAULT_MAX_FRAME) -> None:
    """Refuse a length prefix before anything is allocated for it."""
    if length < 4:
        raise CodecError(f"frame length {length} is too small (a header length needs 4 bytes)")
    if length + 4 > max_frame:
        raise FrameTooLarge(length + 4, max_frame)


def decode_rocketmq_header(data: bytes | memoryview) -> dict[str, object]:
    """Parse a ROCKETMQ binary header (the construct definition above, with a fast path)."""
    code, language, version, opaque, flag, remark, ext = parse_rocketmq_header(bytes(data))
    return {
        "code": code,
        "language": language,
        "version": version,
        "opaque": opaque,
        "flag": flag,
        "remark": remark,
        "ext_fields": ext,
    }


# the fixed fields, then the remark length (read signed, as Java's getInt does)
_HEAD_AND_REMARK_LEN = struct.Struct(ROCKETMQ_FIXED_UNIT.format + "i")
_REMARK_AT = _HEAD_AND_REMARK_LEN.size
_INT32 = struct.Struct(">i")


def parse_rocketmq_header_py(data: bytes) -> tuple[int, int, int, int, int, str | None, dict[str, str] | None]:
    """(code, language, version, opaque, flag, remark, ext_fields) of a ROCKETMQ binary header.

    The hot path of every binary frame: a tight loop for the plain case (lengths that
    add up, valid UTF-8); anything else goes through :func:`_parse_rocketmq_header_checked`,
    which decides what is an error and how it is worded.
    """
    n = len(data)
    if n < ROCKETMQ_HEADER_MIN:
        return _parse_rocketmq_header_checked(data)
    code, language, version, opaque, flag, rlen = _HEAD_AND_REMARK_LEN.unpack_from(data, 0)
    pos = _REMARK_AT + rlen
    if rlen < 0 or pos + 4 > n:
        return _parse_rocketmq_header_checked(data)
    (elen,) = _INT32.unpack_from(data, pos)
    pos += 4
    if pos + elen != n or elen < 0:
        return _parse_rocketmq_header_checked(data)
    try:
        remark = data[_REMARK_AT : _REMARK_AT + rlen].decode() if rlen else None
        if not elen:
            return code, language, version, opaque, flag, remark, None
        ext = {}
        unpack = _INT32.unpack_from
        while pos < n:
            kstart = pos + 2
            hi = data[pos]
            if hi & 0x80:  # a negative key length
                return _parse_rocketmq_header_checked(data)
            kend = kstart + ((hi << 8) | data[pos + 1])
            (vlen,) = unpack(data, kend)
            if vlen < 0:
                return _parse_rocketmq_header_checked(data)
            pos = kend + 4 + vlen
            ext[data[kstart:kend].decode()] = data[kend + 4 : pos].decode()
    except (UnicodeDecodeError, IndexError, struct.error):
        return _parse_rocketmq_header_checked(data)
    if pos != n:  # the last value runs past the header
        return _parse_rocketmq_header_checked(data)
    return code, language, version, opaque, flag, remark, ext


_FIXED_FIELDS = ("code", "language", "version", "opaque", "flag")


def _parse_rocketmq_header_checked(data: bytes) -> tuple[int, int, int, int, int, str | None, dict[str, str] | None]:
    """The reference parse: :data:`ROCKETMQ_HEADER` itself, its failures worded for one log line.

    The fast parsers hand everything unusual here, so they agree with the construct
    definition by construction (and hypothesis checks the plain cases agree too)."""
    try:
        header = ROCKETMQ_HEADER.parse(data)
    except cs.StringError as exc:  # only the remark: a bad entry ends the GreedyRange, and its Terminated fails
        raise CodecError(f"ROCKETMQ header string is not UTF-8: {exc}") from None
    except cs.ConstructError as exc:
        where = (getattr(exc, "path", None) or "").rpartition("-> ")[2]
        if where in _FIXED_FIELDS:
            raise CodecError("ROCKETMQ header is truncated") from None
        if where == "remark":
            raise CodecError("remark length runs past the header") from None
        if where == "ext_fields" and isinstance(exc, cs.TerminatedError):
            raise CodecError("extFields entry runs past the header or is not UTF-8") from None
        raise CodecError("extFields length does not match the header length") from None
    entries = header.ext_fields
    # Java decodes extFields only when their length is positive: none at all is null, not {}
    ext = {e.key: e.value for e in entries} if entries else None
    return header.code, header.language, header.version, header.opaque, header.flag, header.remark, ext


_compiled_parse = compiled("parse_rocketmq_header")
#: the compiled twin when built (accel), else the pure function above; both leave the unusual to the checked parser
parse_rocketmq_header: Callable[[bytes], tuple[int, int, int, int, int, str | None, dict[str, str] | None]] = (
    functools.partial(_compiled_parse, fallback=_parse_rocketmq_header_checked)
    if _compiled_parse is not None
    else parse_rocketmq_header_py
)

#: ext field name -> its int16 length prefix and UTF-8 bytes (the same few short names recur: longer
#: ones, which only a hostile peer sends, are not kept)
_KEY_ENTRIES: dict[str, bytes] = {}
_KEY_CACHED_LENGTH = 64


def encode_rocketmq_header(
    code: int,
    language: int,
    version: int,
    opaque: int,
    flag: int,
    remark: str | None,
    ext_fields: dict[str, str] | None,
) -> bytes:
    head = ROCKETMQ_FIXED_UNIT.pack(code, language, version, opaque, flag)
    r = remark.encode("utf-8") if remark else b""
    if not ext_fields:
        return b"".join((head, _INT32.pack(len(r)), r, b"\x00\x00\x00\x00"))
    parts = [head, _INT32.pack(len(r)), r, b""]
    pack32 = _INT32.pack
    entries = _KEY_ENTRIES
    for k, v in ext_fields.items():
        if k is None or v is None:
            continue
        entry = entries.get(k)
        if entry is None:
            kb, vb = k.encode("utf-8"), v.encode("utf-8")
            entry = struct.pack(">h", len(kb)) + kb
            if len(entries) < 4096 and len(kb) <= _KEY_CACHED_LENGTH:
                entries[k] = entry
        else:
            vb = v.encode("utf-8")
        parts += (entry, pack32(len(vb)), vb)
    parts[3] = pack32(sum(map(len, parts)) - len(r) - 17)
    return b"".join(parts)


def pack_frame(serialize_type: int, header: bytes, body: bytes | None) -> bytes:
    return b"".join(frame_parts(serialize_type, header, body))


def frame_parts(serialize_type: int, header: bytes, body: bytes | None) -> tuple[bytes, ...]:
    """A frame as (prefix + header, body) pieces: a batch of frames is joined once, bodies copied once."""
    if len(header) > 0xFFFFFF:
        raise CodecError(f"header of {len(header)} bytes does not fit in 24 bits")
    if not body:
        return (FRAME_PREFIX_UNIT.pack(4 + len(header), (serialize_type << 24) | len(header)) + header,)
    return (FRAME_PREFIX_UNIT.pack(4 + len(header) + len(body), (serialize_type << 24) | len(header)) + header, body)


#: frames this long are copied out through a memoryview (whose making costs more than a small copy)
_COPY_ONCE_FROM = 2048


class FrameSplitter:
    """Incremental framing: feed bytes in any chunking, iterate whole frames.

    Each frame is yielded with its 4-byte length prefix, ready for
    RemotingCommand.decode. A bad length raises CodecError (FrameTooLarge for an
    absurd one) before anything is buffered for it; the stream is then unusable.
    """

    __slots__ = ("_buf", "_pos", "max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._buf = bytearray()
        self._pos = 0
        self.max_frame = max_frame

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        self._buf += data

    @property
    def buffered(self) -> int:
        """Bytes held: whole frames not taken yet, then the start of one still coming."""
        return len(self._buf) - self._pos

    @property
    def frame_ready(self) -> bool:
        """A whole frame is held, or a length that :meth:`next_frame` will refuse (see check_length: a
        refused length must read as ready, or a reader would wait for bytes it is going to refuse)."""
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 4:
            return False
        (length,) = struct.unpack_from(">i", buf, pos)
        try:
            check_length(length, self.max_frame)
        except CodecError:
            return True
        return len(buf) >= pos + 4 + length

    def next_frame(self, kind: Callable[[Any], bytes] = bytes) -> bytes | None:
        """The next whole frame as ``kind`` (bytes or a subclass) made from its bytes, or None."""
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 4:
            return None
        (length,) = struct.unpack_from(">i", buf, pos)
        check_length(length, self.max_frame)
        end = pos + 4 + length
        if len(buf) < end:
            return None
        if length < _COPY_ONCE_FROM:
            frame = kind(buf[pos:end])
        else:  # one copy (through a view) rather than a bytearray slice and then its copy
            with memoryview(buf) as view:
                frame = kind(view[pos:end])
        self._taken(end)
        return frame

    def _taken(self, end: int) -> None:
        """The frames up to ``end`` are out: the buffer keeps what follows (emptied or cut when that is cheap)."""
        buf = self._buf
        if end == len(buf):
            buf.clear()
            self._pos = 0
        elif end > 65536:
            del buf[:end]
            self._pos = 0
        else:
            self._pos = end

    def __iter__(self) -> Iterator[bytes]:
        while (frame := self.next_frame()) is not None:
            yield frame

    def take_plain(self, read: Callable[..., tuple[list[Any], int]], *args: Any) -> list[Any]:
        """What ``read(buffer, position, max_frame, *args)`` makes of the whole frames at the front (it returns
        them and the position after them: a compiled reader's, see ``_speedups.read_frames``)."""
        out, end = read(self._buf, self._pos, self.max_frame, *args)
        if end != self._pos:
            self._taken(end)
        return out
