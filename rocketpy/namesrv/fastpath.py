"""Repeated GET_ROUTEINFO_BY_TOPIC lookups answered from bytes, without decoding the request.

Clients ask the same question over and over (every client polls its topics' routes every 30 s,
and each new producer or consumer asks at start): the same header bytes each time except the
opaque. :class:`RouteShortcut` is the NameServer's fast path (``rocketpy.remoting.dispatch.FastPath``):
for a route-lookup frame it cuts the opaque out of the request, looks the rest up in a memo, and
splices the opaque into the memoized answer.

A memo entry is made from the ordinary path's own answer to the first such request: the frame
is decoded, answered by the ``GET_ROUTEINFO_BY_TOPIC`` handler and encoded as usual, and the
entry is kept only if the answer, rebuilt from the entry with that request's opaque, is the same
bytes. The memo is dropped whenever anything an answer depends on may have changed (the route
tables' or the KV store's version, orderMessageEnable, clusterTest), so every answer is the
bytes the ordinary path would give. Anything unusual (another code, a oneway or response flag,
an opaque that is not a plain JSON int, the opaque key twice, a decoding error, a hook) goes the
ordinary way.
"""

from __future__ import annotations

import re
import struct
from typing import TYPE_CHECKING

from ..codecs import CodecError, RemotingCommand, RequestCode
from ..codecs.frame import FRAME_PREFIX_UNIT, ROCKETMQ_HEADER
from ..codecs.units import struct_unit
from ..remoting.dispatch import RequestContext, fix_response
from .processor import get_route_info_by_topic

if TYPE_CHECKING:
    from .server import NameServer

#: distinct request shapes (header minus opaque, body) kept between two state changes
MEMO_LIMIT = 4096
#: longer frames are left to the dispatcher: a route lookup is a short header (a topic of at most a few
#: hundred characters) without a body, and a memo keyed by a hostile peer's padded frames (a body, a long
#: remark or topic) kept each of them, up to 4,096 of 16 MB
MEMO_FRAME_LIMIT = 1024

_PREFIX = FRAME_PREFIX_UNIT
_CODE = RequestCode.GET_ROUTEINFO_BY_TOPIC
#: fastjson (and our encoder) write the code first: a JSON route lookup starts so
_JSON_START = b'{"code":%d,' % _CODE
_BINARY_CODE = struct.pack(">h", _CODE)
_OPAQUE_KEY = b'"opaque":'
#: a JSON int as Java's and our encoders print one (what str(int) gives back), then , or }
_JSON_INT = re.compile(rb"-?(?:0|[1-9][0-9]{0,9})(?=[,}])")
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
#: ROCKETMQ binary header: the opaque follows code, language and version (in the frame, after its prefix)
_BIN_OPAQUE = FRAME_PREFIX_UNIT.size + struct_unit(ROCKETMQ_HEADER, 3).size


class RouteShortcut:
    """One NameServer's fast path: ``takes`` route lookups, ``answer`` them from the memo (None: the
    dispatcher answers), nothing to ``settle``."""

    def __init__(self, ns: NameServer) -> None:
        self.ns = ns
        self._ctx = RequestContext(None, "", ns)  # type: ignore[arg-type]  # the handler reads ctx.state only
        self._memo: dict[tuple[object, ...], tuple[bytes, bytes, int, int]] = {}
        self._state: tuple[int, int, bool, bool] = (-1, -1, False, False)
        self.hits = 0

    @property
    def memo_size(self) -> int:
        """Request shapes whose answers are kept."""
        return len(self._memo)

    def forget_stale(self) -> None:
        """Drop the memo once routes, KV or the config it was made under changed (or it is full)."""
        state = self.ns.answers_state
        if state != self._state or len(self._memo) > MEMO_LIMIT:
            self._memo.clear()
            self._state = state

    @staticmethod
    def takes(frame: bytes) -> bool:
        """A GET_ROUTEINFO_BY_TOPIC request frame, by its first bytes (a JSON header as fastjson writes it,
        or a ROCKETMQ binary one)."""
        stype = frame[4] if len(frame) > 4 else -1
        if stype == 0:
            return frame.startswith(_JSON_START, 8)
        return stype == 1 and frame[8:10] == _BINARY_CODE

    def answer(self, ctx: object, frame: bytes) -> bytes | None:
        """The encoded answer to the frame, or None: decode it and let the dispatcher answer."""
        if not 8 <= len(frame) <= MEMO_FRAME_LIMIT or self.ns.dispatcher.before:
            return None
        header_info = _PREFIX.unpack_from(frame, 0)[1]
        stype, hlen = header_info >> 24, header_info & 0xFFFFFF
        hend = 8 + hlen
        if hend > len(frame):
            return None
        if stype == 0:
            return self._json(frame, hlen, hend)
        if stype == 1:
            return self._binary(frame, hend)
        return None

    def settle(self) -> None:
        """Nothing is deferred here."""

    # -- JSON headers: the opaque is a decimal int inside the header ----------------------
    def _json(self, frame: bytes, hlen: int, hend: int) -> bytes | None:
        if not frame.startswith(_JSON_START, 8):
            return None
        at = frame.find(_OPAQUE_KEY, 8, hend)
        if at < 0 or frame.find(_OPAQUE_KEY, at + 1, hend) >= 0:
            return None
        start = at + len(_OPAQUE_KEY)
        m = _JSON_INT.match(frame, start, hend)
        if m is None:
            return None
        end = m.end()
        digits = frame[start:end]
        key = (0, hlen - len(digits), frame[8:start], frame[end:])
        self.forget_stale()
        entry = self._memo.get(key)
        if entry is not None:
            pre, post, fixed, body_len = entry
            self.hits += 1
            n = fixed + len(digits)
            return _PREFIX.pack(4 + n + body_len, n) + pre + digits + post
        opaque = int(digits)
        if not _INT_MIN <= opaque <= _INT_MAX:
            return None
        answer = self._answer(frame, opaque)
        if answer is None:
            return None
        rh = _PREFIX.unpack_from(answer, 0)[1] & 0xFFFFFF
        r_at = answer.find(_OPAQUE_KEY + digits, 8, 8 + rh)
        if r_at < 0 or answer.find(_OPAQUE_KEY, r_at + 1, 8 + rh) >= 0:
            return answer
        cut = r_at + len(_OPAQUE_KEY)
        pre, post = answer[8:cut], answer[cut + len(digits) :]
        entry = (pre, post, rh - len(digits), len(answer) - 8 - rh)
        n = entry[2] + len(digits)
        if _PREFIX.pack(4 + n + entry[3], n) + pre + digits + post == answer:
            self._memo[key] = entry
        return answer

    # -- ROCKETMQ binary headers: the opaque is 4 bytes at a fixed place ------------------
    def _binary(self, frame: bytes, hend: int) -> bytes | None:
        if hend < _BIN_OPAQUE + 8 or frame[8:10] != _BINARY_CODE:
            return None
        key = (1, frame[:_BIN_OPAQUE], frame[_BIN_OPAQUE + 4 :])
        self.forget_stale()
        entry = self._memo.get(key)
        if entry is not None:
            pre, post, _fixed, _body_len = entry
            self.hits += 1
            return pre + frame[_BIN_OPAQUE : _BIN_OPAQUE + 4] + post
        (opaque,) = struct.unpack_from(">i", frame, _BIN_OPAQUE)
        answer = self._answer(frame, opaque)
        if answer is None or len(answer) < _BIN_OPAQUE + 4 or answer[4] != 1:
            return answer
        pre, post = answer[:_BIN_OPAQUE], answer[_BIN_OPAQUE + 4 :]
        if pre + frame[_BIN_OPAQUE : _BIN_OPAQUE + 4] + post == answer:
            self._memo[key] = (pre, post, 0, 0)
        return answer

    # -- the ordinary path, once per request shape ---------------------------------------
    def _answer(self, frame: bytes, opaque: int) -> bytes | None:
        """What the dispatcher would send for this frame, or None to leave it to the dispatcher."""
        try:
            request = RemotingCommand.decode(frame)
        except CodecError:
            return None
        if request.code != _CODE or request.is_response or request.is_oneway or request.opaque != opaque:
            return None
        try:
            response = get_route_info_by_topic(self._ctx, request)
            fix_response(request, response)
            return response.encode()
        except Exception:  # the dispatcher answers it (SYSTEM_ERROR) and logs it
            return None
