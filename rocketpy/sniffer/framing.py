"""Cutting one direction's bytes into frames, and finding frame starts again when lost.

A stream whose start was not captured, or that lost bytes in a gap, is
resynchronised by scanning for the next plausible frame: a sane length, a known
serialize type and a header that actually decodes to believable values.
"""

from __future__ import annotations

import re

from ..codecs.command import RemotingCommand
from ..codecs.dledger import is_dledger_code
from ..codecs.errors import CodecError
from ..codecs.frame import (
    DEFAULT_MAX_FRAME,
    FRAME_PREFIX_UNIT,
    ROCKETMQ_FIXED_UNIT,
    ROCKETMQ_HEADER_MIN,
    parse_rocketmq_header,
)

# A frame start: length, then header_info with serialize type 0 (JSON, header
# opening with '{') or 1 (ROCKETMQ, header length below 16 MiB so its top byte is 0).
_CANDIDATE = re.compile(rb"\x00[\x00-\xff]{3}\{|\x01\x00[\x00-\xff]{2}", re.S)
#: a resync candidate whose header claims more than this is not believed
_MAX_RESYNC_HEADER = 1 << 20


class StreamDecoder:
    """Cut one direction's bytes into frames, resynchronising when the start is unknown.

    ``feed`` returns ``(frames, skipped)``: whole frames with their length prefix,
    and, when a frame start was just found again, how many bytes were thrown away
    looking for it (one number per resync, however many feeds the search took).
    """

    def __init__(self, synced: bool = True, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.synced = synced
        self.max_frame = max_frame
        self._buf = bytearray()
        self._pos = 0
        #: bytes thrown away by the resync in progress
        self.searching = 0
        self.skipped = 0
        self.resyncs = 0

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos

    def lose_sync(self) -> None:
        """Bytes went missing: drop the partial frame and look for the next start."""
        self.searching += self.buffered
        self._buf.clear()
        self._pos = 0
        self.synced = False

    def feed(self, data: bytes, final: bool = False) -> tuple[list[bytes], int]:
        """Add bytes. ``final``: no more will come, so a frame start that cannot be told
        from what is buffered is not one (keep scanning past it instead of waiting)."""
        if self._pos and self._pos == len(self._buf):
            self._buf.clear()
            self._pos = 0
        self._buf += data
        frames: list[bytes] = []
        reported = 0
        buf = self._buf
        while True:
            if not self.synced:
                n, found = self._scan(final)
                self.searching += n
                if not found:
                    break
                reported += self.searching
                self.skipped += self.searching
                self.searching = 0
            pos = self._pos
            if len(buf) - pos < 8:
                break
            length, _info = FRAME_PREFIX_UNIT.unpack_from(buf, pos)
            if length < 4 or length + 4 > self.max_frame:
                # not a frame boundary after all: the stream is out of step
                self.synced = False
                self._pos += 1
                self.searching += 1
                continue
            end = pos + 4 + length
            if len(buf) < end:
                break
            frames.append(bytes(buf[pos:end]))
            self._pos = end
        if self._pos > 65536:
            del buf[: self._pos]
            self._pos = 0
        return frames, reported

    def _scan(self, final: bool = False) -> tuple[int, bool]:
        """Move the cursor to the next plausible frame start. (bytes skipped, found)."""
        buf, start = self._buf, self._pos
        pos = start
        while True:
            verdict = _plausible(buf, pos, self.max_frame)
            if verdict is None and final and pos < len(buf):
                verdict = False
            if verdict is None:  # undecided: wait for more bytes
                self._pos = pos
                return pos - start, False
            if verdict:
                self._pos = pos
                self.synced = True
                self.resyncs += 1
                return pos - start, True
            m = _CANDIDATE.search(buf, pos + 5)
            if m is None:
                if final:
                    self._pos = len(buf)
                    return len(buf) - start, False
                # keep the last 8 bytes: a start the pattern could not match yet (it needs
                # 9 bytes) may straddle the next read
                pos = max(pos + 1, len(buf) - 8)
                self._pos = pos
                return pos - start, False
            pos = m.start() - 4


#: resync accepts only values a real header has: request/response codes and MQVersion
#: ordinals are far below these, LanguageCode has a dozen members
_MAX_CODE = 4096
_MAX_VERSION = 4096


def _code_ok(code: int) -> bool:
    """RocketMQ's codes are small; DLedger's Raft RPC uses 50000-51005 on the same framing."""
    return 0 <= code < _MAX_CODE or is_dledger_code(code)
_MAX_LANGUAGE = 63
_JSON_SECOND = frozenset(b'"} \t\r\n')
_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.\-]*\Z")


def _plausible(buf: bytearray, pos: int, max_frame: int) -> bool | None:
    """Is a frame starting at ``pos``? None when more bytes are needed to tell.

    Only used while resynchronising, so it can afford a full header decode: random
    bytes inside a message body must not pass for a frame and swallow real ones.
    """
    if len(buf) - pos < 9:
        return None
    length, info = FRAME_PREFIX_UNIT.unpack_from(buf, pos)
    stype, hlen = info >> 24, info & 0xFFFFFF
    if length < 4 or length + 4 > max_frame or hlen > length - 4 or hlen > _MAX_RESYNC_HEADER:
        return False
    avail = len(buf) - pos
    if stype == 0:
        if hlen < 2 or buf[pos + 8] != 0x7B:  # '{'
            return False
        if avail > 9 and buf[pos + 9] not in _JSON_SECOND:  # a key or the end must follow
            return False
    elif stype == 1:
        if hlen < ROCKETMQ_HEADER_MIN:
            return False
        if avail >= 8 + ROCKETMQ_FIXED_UNIT.size:  # judge the fixed fields before the whole header is in
            code, language, version, _opaque, flag = ROCKETMQ_FIXED_UNIT.unpack_from(buf, pos + 8)
            if flag & ~3 or not _code_ok(code) or not 0 <= version < _MAX_VERSION or language > _MAX_LANGUAGE:
                return False
    else:
        return False
    if avail < 8 + hlen:
        return None
    header = bytes(buf[pos + 8 : pos + 8 + hlen])
    try:
        if stype == 0:
            cmd = RemotingCommand.decode(FRAME_PREFIX_UNIT.pack(4 + hlen, info) + header)
            code, flag, version = cmd.code, cmd.flag, cmd.version
            language = 0
            keys = list(cmd.ext_fields or ())
        else:
            code, language, version, _opaque, flag, _remark, ext = parse_rocketmq_header(header)
            keys = list(ext or ())
    except (CodecError, RecursionError):
        return False
    if flag & ~3 or not _code_ok(code) or not 0 <= version < _MAX_VERSION or language > _MAX_LANGUAGE:
        return False
    return all(_KEY.match(k) for k in keys)  # header fields are Java identifiers


def quick_frame_start(data: bytes | bytearray) -> bool:
    """A cheap look at a stream's first bytes: a sane length, then a JSON header opening (``{`` and a
    quote or the end) or a binary one with believable fixed fields. Enough, on a port said to be
    RocketMQ, to tell remoting from an HA stream (whose first four bytes read as a length below 4)."""
    if len(data) < 10:
        return False
    length, info = FRAME_PREFIX_UNIT.unpack_from(data, 0)
    stype, hlen = info >> 24, info & 0xFFFFFF
    if length < 4 or length + 4 > DEFAULT_MAX_FRAME or hlen > length - 4:
        return False
    if stype == 0:
        return hlen >= 2 and data[8] == 0x7B and data[9] in _JSON_SECOND
    if stype == 1 and hlen >= ROCKETMQ_HEADER_MIN and len(data) >= 8 + ROCKETMQ_FIXED_UNIT.size:
        code, language, version, _opaque, flag = ROCKETMQ_FIXED_UNIT.unpack_from(data, 8)
        return not flag & ~3 and _code_ok(code) and 0 <= version < _MAX_VERSION and language <= _MAX_LANGUAGE
    return False


#: bytes a mid-stream direction is searched for a frame start before it is judged not remoting
_VERDICT_SCAN = 64 * 1024


def remoting_verdict(
    buf: bytes | bytearray, synced: bool, final: bool = False, strict: bool = True, max_frame: int = DEFAULT_MAX_FRAME
) -> bool | None:
    """Do these first bytes of one direction carry RemotingCommand frames? None: cannot tell yet.

    ``synced``: ``buf`` starts where the stream starts (its SYN was seen), so a frame must start at
    byte 0. Otherwise the capture joined mid-stream and a frame start is searched for; with
    ``strict`` (a port nobody said is RocketMQ) a found start only counts when the next frame
    starts right after it, so that a lucky run of bytes in other traffic is not taken for one.
    ``final``: nothing more will come.
    """
    data = bytearray(buf) if not isinstance(buf, bytearray) else buf
    if synced:
        verdict = _plausible(data, 0, max_frame)
        return False if verdict is None and final else verdict
    limit = min(len(data), _VERDICT_SCAN)
    pos = 0
    while pos < limit:
        verdict = _plausible(data, pos, max_frame)
        if verdict is None and not final:
            return None
        if verdict:
            if not strict:
                return True
            end = pos + 4 + FRAME_PREFIX_UNIT.unpack_from(data, pos)[0]
            following = _plausible(data, end, max_frame) if end < len(data) else None
            if following:
                return True
            if following is None and not final:
                return None
        m = _CANDIDATE.search(data, pos + 5)
        if m is None:
            break
        pos = m.start() - 4
    if final or len(data) >= _VERDICT_SCAN:
        return False
    return None
