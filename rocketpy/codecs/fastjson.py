"""JSON in fastjson's dialect, the one every RocketMQ 4.x header and body speaks.

Reading: everything fastjson emits, including its legacy non-string map keys
written bare (``{0:"127.0.0.1:10911"}``); key order is kept so a parsed document
re-encodes to the same bytes. Writing: compact, no spaces, fastjson's string
escapes, bare integer map keys unless ``non_string_keys_as_string``, and
``browser_compatible`` for the escaped-ASCII form brokers send to 4.9.4+ clients.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .errors import CodecError

JsonValue = Any

# -- reading -----------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")
_BARE_KEY = re.compile(r"-?[0-9A-Za-z_$.]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_decoder = json.JSONDecoder(object_pairs_hook=dict)
_scan_string = json.decoder.scanstring  # type: ignore[attr-defined]


def loads(data: bytes | str) -> JsonValue:
    """Parse one fastjson document; bad input raises CodecError."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(f"JSON is not UTF-8: {exc}") from None
    else:
        text = data
    try:
        return _decoder.decode(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        value, end = _Lenient(text).parse()
    except RecursionError:
        raise CodecError("JSON nested too deeply") from None
    if _WS.match(text, end).end() != len(text):
        raise CodecError(f"trailing data after JSON at {end}")
    return value


class _Lenient:
    """Recursive-descent reader for fastjson's extensions (bare keys, single quotes)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def parse(self) -> tuple[JsonValue, int]:
        return self.value(_WS.match(self.text, 0).end())

    def fail(self, pos: int, what: str) -> CodecError:
        return CodecError(f"bad JSON at offset {pos}: {what}")

    def value(self, pos: int) -> tuple[JsonValue, int]:
        text = self.text
        if pos >= len(text):
            raise self.fail(pos, "unexpected end")
        ch = text[pos]
        if ch == "{":
            return self.obj(pos + 1)
        if ch == "[":
            return self.arr(pos + 1)
        if ch == '"' or ch == "'":
            return self.string(pos)
        m = _NUMBER.match(text, pos)
        if m:
            s = m.group()
            return (float(s) if any(c in s for c in ".eE") else int(s)), m.end()
        for word, val in (("true", True), ("false", False), ("null", None)):
            if text.startswith(word, pos):
                return val, pos + len(word)
        raise self.fail(pos, f"unexpected {ch!r}")

    def string(self, pos: int) -> tuple[str, int]:
        quote = self.text[pos]
        if quote == '"':
            try:
                return _scan_string(self.text, pos + 1, True)
            except (json.JSONDecodeError, ValueError) as exc:
                raise self.fail(pos, str(exc)) from None
        end = self.text.find("'", pos + 1)
        if end < 0:
            raise self.fail(pos, "unterminated string")
        return self.text[pos + 1 : end], end + 1

    def key(self, pos: int) -> tuple[str | int, int]:
        if self.text[pos] in "\"'":
            return self.string(pos)
        m = _BARE_KEY.match(self.text, pos)
        if not m:
            raise self.fail(pos, "expected a key")
        s = m.group()
        try:
            return int(s), m.end()
        except ValueError:
            return s, m.end()

    def obj(self, pos: int) -> tuple[dict[Any, Any], int]:
        text, out = self.text, {}
        pos = _WS.match(text, pos).end()
        if pos < len(text) and text[pos] == "}":
            return out, pos + 1
        while True:
            pos = _WS.match(text, pos).end()
            if pos >= len(text):
                raise self.fail(pos, "unterminated object")
            k, pos = self.key(pos)
            pos = _WS.match(text, pos).end()
            if pos >= len(text) or text[pos] != ":":
                raise self.fail(pos, "expected ':'")
            v, pos = self.value(_WS.match(text, pos + 1).end())
            out[k] = v
            pos = _WS.match(text, pos).end()
            if pos < len(text) and text[pos] == ",":
                pos += 1
                continue
            if pos < len(text) and text[pos] == "}":
                return out, pos + 1
            raise self.fail(pos, "expected ',' or '}'")

    def arr(self, pos: int) -> tuple[list[Any], int]:
        text, out = self.text, []
        pos = _WS.match(text, pos).end()
        if pos < len(text) and text[pos] == "]":
            return out, pos + 1
        while True:
            v, pos = self.value(_WS.match(text, pos).end())
            out.append(v)
            pos = _WS.match(text, pos).end()
            if pos < len(text) and text[pos] == ",":
                pos += 1
                continue
            if pos < len(text) and text[pos] == "]":
                return out, pos + 1
            raise self.fail(pos, "expected ',' or ']'")


# -- writing -----------------------------------------------------------------

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_ESCAPE: dict[int, str] = {c: f"\\u{c:04X}" for c in list(range(0x20)) + [0x7F]}
_ESCAPE.update({ord(k): v for k, v in _SHORT_ESCAPES.items()})
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\x7f]')
_NEEDS_ESCAPE_ASCII = re.compile(r'["\\\x00-\x1f\x7f-\U0010ffff]')
_JS_SAFE = (1 << 53) - 1


def _escape_browser(m: re.Match[str]) -> str:
    ch = m.group()
    code = ord(ch)
    if code in _ESCAPE:
        return _ESCAPE[code]
    if code > 0xFFFF:  # Java strings hold surrogate pairs; escape each unit
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"
    return f"\\u{code:04X}"


def quote(text: str, browser_compatible: bool = False) -> str:
    """A JSON string literal the way fastjson writes it."""
    if browser_compatible:
        return '"' + _NEEDS_ESCAPE_ASCII.sub(_escape_browser, text) + '"'
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPE[ord(m.group())], text) + '"'


def _float_text(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return "null"
    return repr(value)


def dumps(
    value: JsonValue,
    *,
    browser_compatible: bool = False,
    non_string_keys_as_string: bool = False,
    sort_map_keys: bool = False,
) -> str:
    """Serialise like fastjson's JSON.toJSONString with the given features.

    Dicts are written in their own order (callers order bean fields and Java maps);
    ``sort_map_keys`` is fastjson's MapSortField.
    """
    parts: list[str] = []
    keys_as_str = non_string_keys_as_string or browser_compatible

    def write(v: JsonValue) -> None:
        if v is None:
            parts.append("null")
        elif v is True:
            parts.append("true")
        elif v is False:
            parts.append("false")
        elif isinstance(v, int):
            if browser_compatible and not -_JS_SAFE <= v <= _JS_SAFE:
                parts.append(f'"{v}"')
            else:
                parts.append(str(v))
        elif isinstance(v, float):
            parts.append(_float_text(v))
        elif isinstance(v, str):
            parts.append(quote(v, browser_compatible))
        elif isinstance(v, Mapping):
            items = list(v.items())
            if sort_map_keys:
                items.sort(key=lambda kv: _sort_key(kv[0]))
            parts.append("{")
            first = True
            for k, item in items:
                if item is None:
                    continue  # fastjson drops null map values by default
                if not first:
                    parts.append(",")
                first = False
                if isinstance(k, str):
                    parts.append(quote(k, browser_compatible))
                elif keys_as_str:
                    parts.append(f'"{k}"')
                else:
                    write(k)
                parts.append(":")
                write(item)
            parts.append("}")
        elif isinstance(v, (list, tuple, set, frozenset)):
            parts.append("[")
            for i, item in enumerate(v):
                if i:
                    parts.append(",")
                write(item)
            parts.append("]")
        elif hasattr(v, "to_json"):
            write(v.to_json())
        elif hasattr(v, "value") and hasattr(v, "name"):  # Enum: fastjson writes the name
            parts.append(quote(v.name, browser_compatible))
        else:
            raise TypeError(f"cannot serialise {type(v).__name__} as fastjson")

    write(value)
    return "".join(parts)


def _sort_key(key: object) -> tuple[int, Any]:
    # MapSortField orders comparable keys naturally; strings and numbers never mix in one map
    if isinstance(key, str):
        return (1, key.encode("utf-16-be"))
    return (0, key)


def dump_bytes(value: JsonValue, **features: bool) -> bytes:
    return dumps(value, **features).encode("utf-8")
