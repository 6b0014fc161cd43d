"""RemotingCommand: the one message type of the remoting protocol."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from ..accel import compiled
from ..javacompat.hashmap import hashmap_dict
from ..javacompat.lang import parse_java_int
from . import fastjson
from .codes import LanguageCode, MQVersion, SerializeType
from .errors import CodecError
from .frame import (
    DEFAULT_MAX_FRAME,
    FRAME_PREFIX_UNIT,
    check_length,
    encode_rocketmq_header,
    frame_parts,
    pack_frame,
    parse_rocketmq_header,
)

RESPONSE_FLAG = 1
ONEWAY_FLAG = 2

_LANG_BY_NAME = LANGUAGES_BY_NAME = {m.name: m for m in LanguageCode}
_LANG_BY_CODE = {m.value: m for m in LanguageCode}
_INT_FIELDS = ("code", "version", "opaque", "flag")
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
#: the compiled reader of plain JSON headers (None for anything else), when built: see _from_json_header
_parse_json_header = compiled("parse_json_header")


# the stdlib writes \u001f where fastjson writes \u001F, and leaves DEL, C1 controls and
# U+2028/9 raw; any of those sends the header through fastjson.py's writer instead
_UNLIKE_FASTJSON = re.compile("\\\\u00[01][a-f]|[\x7f-\xa0\u2028\u2029]")
_fast_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def _dump_header(doc: dict[str, Any]) -> bytes:
    """fastjson's bytes for a header; the stdlib encoder agrees unless rare control chars occur."""
    text = _fast_dumps(doc)
    if _UNLIKE_FASTJSON.search(text):
        return fastjson.dump_bytes(doc)
    return text.encode("utf-8")


def merge_ext_fields(
    header_fields: dict[str, str] | None, extra: dict[str, str] | None, *, fast: bool
) -> dict[str, str] | None:
    """extFields as Java fills them: a header's fields and addExtField's share one HashMap,
    except that a FastCodesHeader in a ROCKETMQ binary header (``fast``) writes its own
    fields first, in declared order. ``header_fields`` None: no header class (null map)."""
    if header_fields is None:
        return hashmap_dict(extra) if extra else None
    if fast:
        return {**header_fields, **hashmap_dict(extra)} if extra else dict(header_fields)
    return hashmap_dict({**extra, **header_fields}) if extra else hashmap_dict(header_fields)


def _ext_fields(header: Any, extra: dict[str, str] | None, serialize_type: int) -> dict[str, str] | None:
    if header is None:
        return merge_ext_fields(None, extra, fast=False)
    fast = serialize_type == SerializeType.ROCKETMQ and header.fast_codes
    return merge_ext_fields(header.to_ext_fields(fast_order=fast), extra, fast=fast)


def _language(value: object) -> LanguageCode | int | str:
    if isinstance(value, LanguageCode):
        return value
    if isinstance(value, str):
        return _LANG_BY_NAME.get(value, value)
    if isinstance(value, int):
        return _LANG_BY_CODE.get(value, value)
    raise CodecError(f"language {value!r} is neither a name nor a code")


@dataclasses.dataclass(slots=True, eq=True)
class RemotingCommand:
    """One request or response. ``ext_fields`` keeps wire order; None and {} differ on the wire."""

    code: int
    language: LanguageCode | int | str = LanguageCode.JAVA
    version: int = int(MQVersion.V4_9_8)
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] | None = None
    body: bytes | None = None
    serialize_type: SerializeType = SerializeType.JSON
    #: for a response, the code of the request it answers (set by whoever pairs them)
    request_code: int | None = dataclasses.field(default=None, compare=False)

    # -- flags -------------------------------------------------------------
    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)

    # -- constructors --------------------------------------------------------
    @classmethod
    def request(
        cls,
        code: int,
        header: Any = None,
        body: bytes | None = None,
        *,
        opaque: int = 0,
        oneway: bool = False,
        serialize_type: SerializeType = SerializeType.JSON,
        ext_fields: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> RemotingCommand:
        """A request as Java's createRequestCommand builds it (extFields from the typed header).

        ``ext_fields`` adds fields the way Java's addExtField does (AccessKey, ReqT...).
        """
        ext = _ext_fields(header, ext_fields, serialize_type)
        return cls(
            code=int(code),
            opaque=opaque,
            flag=ONEWAY_FLAG if oneway else 0,
            ext_fields=ext,
            body=body,
            serialize_type=serialize_type,
            **kwargs,
        )

    def response(
        self,
        code: int = 0,
        header: Any = None,
        body: bytes | None = None,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> RemotingCommand:
        """The response to this request: same opaque and serialize type, response flag set.

        ``ext_fields`` adds fields beside the header's, as Java's addExtField does.
        """
        ext = _ext_fields(header, ext_fields, self.serialize_type)
        return RemotingCommand(
            code=int(code),
            opaque=self.opaque,
            flag=RESPONSE_FLAG,
            remark=remark,
            ext_fields=ext,
            body=body,
            serialize_type=self.serialize_type,
            request_code=self.code,
            **kwargs,
        )

    # -- wire ---------------------------------------------------------------
    @classmethod
    def decode(cls, frame: bytes | bytearray | memoryview, max_frame: int = DEFAULT_MAX_FRAME) -> RemotingCommand:
        """Decode one whole frame, starting at its 4-byte length."""
        if type(frame) is not bytes:
            frame = bytes(frame)
        n = len(frame)
        if n < 8:
            raise CodecError(f"frame of {n} bytes is shorter than its 8-byte prefix")
        length, header_info = FRAME_PREFIX_UNIT.unpack_from(frame, 0)
        check_length(length, max_frame)
        if length + 4 != n:
            raise CodecError(f"frame length field says {length + 4} bytes, got {n}")
        stype, hlen = header_info >> 24, header_info & 0xFFFFFF
        if hlen > length - 4:
            raise CodecError(f"header length {hlen} runs past the frame ({length - 4} bytes left)")
        end = 8 + hlen
        body = frame[end:] if end < n else None
        if stype == 1:  # SerializeType.ROCKETMQ: the hot path
            code, language, version, opaque, flag, remark, ext = parse_rocketmq_header(frame[8:end])
            return cls(
                code,
                _LANG_BY_CODE.get(language, language),
                version,
                opaque,
                flag,
                remark,
                ext,
                body,
                SerializeType.ROCKETMQ,
            )
        if stype == SerializeType.JSON:
            plain = _parse_json_header(frame, 8, end) if _parse_json_header is not None else None
            if plain is not None:  # what _from_json_header gives, read without the json module
                code, language, version, opaque, flag, remark, ext = plain
                return cls(code, _LANG_BY_NAME.get(language, language), version, opaque, flag, remark, ext, body)
            cmd = cls._from_json_header(memoryview(frame)[8:end])
        else:
            raise CodecError(f"unknown serialize type {stype}")
        cmd.body = body
        return cmd

    @classmethod
    def _from_json_header(cls, header: memoryview) -> RemotingCommand:
        try:
            data = json.loads(bytes(header))
        except (ValueError, RecursionError):
            data = fastjson.loads(bytes(header))
        if not isinstance(data, dict):
            raise CodecError("JSON header is not an object")
        get = data.get
        code, version, opaque, flag = get("code"), get("version", 0), get("opaque", 0), get("flag", 0)
        if not (
            type(code) is int
            and type(version) is int
            and type(opaque) is int
            and type(flag) is int
            and _INT_MIN <= code <= _INT_MAX
            and _INT_MIN <= version <= _INT_MAX
            and _INT_MIN <= opaque <= _INT_MAX
            and _INT_MIN <= flag <= _INT_MAX
        ):
            # something unusual (a missing code, numbers as strings ...): the careful way;
            # the fields are Java ints, and fastjson refuses what does not fit one
            values: dict[str, Any] = {}
            for key in _INT_FIELDS:
                v = get(key, 0)
                if type(v) is int:
                    parsed = v if _INT_MIN <= v <= _INT_MAX else None
                else:
                    parsed = parse_java_int(v) if isinstance(v, str) else None
                if parsed is None:
                    raise CodecError(f"JSON header field {key} is not an integer: {v!r}")
                values[key] = parsed
            if "code" not in data:
                raise CodecError("JSON header has no code")
            code, version, opaque, flag = values["code"], values["version"], values["opaque"], values["flag"]
        language = _language(get("language", "JAVA"))
        remark = get("remark")
        if remark is not None and not isinstance(remark, str):
            remark = str(remark)
        ext = get("extFields")
        if ext is not None:
            if not isinstance(ext, dict):
                raise CodecError("JSON header extFields is not an object")
            # fastjson reads any scalar into the String map; mirror that leniency
            ext = {str(k): v if isinstance(v, str) else fastjson.dumps(v) for k, v in ext.items() if v is not None}
        return cls(code, language, version, opaque, flag, remark, ext)

    def encode_header(self) -> bytes:
        if self.serialize_type == SerializeType.ROCKETMQ:
            lang = self.language
            if isinstance(lang, str):
                lang = _LANG_BY_NAME.get(lang, LanguageCode.OTHER)
            return encode_rocketmq_header(
                self.code, int(lang), self.version, self.opaque, self.flag, self.remark, self.ext_fields
            )
        lang = self.language.name if isinstance(self.language, LanguageCode) else str(self.language)
        doc: dict[str, Any] = {"code": self.code}
        if self.ext_fields is not None:
            doc["extFields"] = self.ext_fields
        doc["flag"] = self.flag
        doc["language"] = lang
        doc["opaque"] = self.opaque
        if self.remark is not None:
            doc["remark"] = self.remark
        doc["serializeTypeCurrentRPC"] = "JSON"
        doc["version"] = self.version
        return _dump_header(doc)

    def encode(self) -> bytes:
        """The whole frame, length prefix included."""
        return pack_frame(int(self.serialize_type), self.encode_header(), self.body)

    def encode_parts(self) -> tuple[bytes, ...]:
        """:meth:`encode` as pieces to join (the body is not copied into a frame of its own)."""
        return frame_parts(int(self.serialize_type), self.encode_header(), self.body)

    # -- typed views ------------------------------------------------------------
    @property
    def header(self) -> Any:
        """The typed header for this code and direction, or None when none is known."""
        from .headers.registry import header_class

        code = self.request_code if self.is_response else self.code
        if code is None:
            return None
        cls = header_class(code, self.is_response)
        if cls is None:
            return None
        return cls.from_ext_fields(self.ext_fields)

    def decode_header(self, cls: Any) -> Any:
        """Decode ``ext_fields`` as the given header class."""
        return cls.from_ext_fields(self.ext_fields)

    def decode_body(self) -> Any:
        """The typed body for this code and direction (see codecs.payload), or the raw bytes."""
        from .payload import decode_body

        return decode_body(self)

    @property
    def name(self) -> str:
        from .codes import request_code_name, response_code_name

        if self.is_response:
            return response_code_name(self.code, self.request_code)
        return request_code_name(self.code)
