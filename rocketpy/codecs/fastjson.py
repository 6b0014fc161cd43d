"""JSON in fastjson's dialect, the one every RocketMQ 4.x header and body speaks.

Reading: everything fastjson emits, including its legacy non-string map keys
written bare (``{0:"127.0.0.1:10911"}``) and bean keys written as objects
(``{{"brokerName":"a","queueId":0,"topic":"t"}:5}``, kept as :class:`ObjectKey`);
key order is kept so a parsed document re-encodes to the same bytes.
Writing: compact, no spaces, fastjson's string escapes, Java's ``Double.toString``,
bare non-string map keys unless ``non_string_keys_as_string``, ``browser_compatible``
for the escaped-ASCII form brokers send to 4.9.4+ clients, and ``pretty`` for
fastjson's PrettyFormat (tab indents) used by the broker's config files.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from .errors import CodecError

JsonValue = Any

# -- reading -----------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")


def _skip_ws(text: str, pos: int) -> int:
    """The first position at or after ``pos`` that is not JSON whitespace."""
    m = _WS.match(text, pos)
    assert m is not None  # the pattern matches the empty string
    return m.end()
_BARE_KEY = re.compile(r"-?[0-9A-Za-z_$.]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


def _no_constant(name: str) -> Any:
    raise CodecError(f"{name} is not JSON")


# the stdlib's C scanner building the dicts itself (an object_pairs_hook=dict made it a quarter slower, same dicts)
_decoder = json.JSONDecoder(parse_constant=_no_constant)
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
    except CodecError:
        raise
    except (ValueError, RecursionError):  # JSONDecodeError, or a number too long for int()
        pass
    try:
        value, end = _Lenient(text).parse()
    except RecursionError:
        raise CodecError("JSON nested too deeply") from None
    except CodecError:
        raise
    except ValueError as exc:
        raise CodecError(f"bad JSON: {exc}") from None
    if _skip_ws(text, end) != len(text):
        raise CodecError(f"trailing data after JSON at {end}")
    return value


class _Lenient:
    """Recursive-descent reader for fastjson's extensions (bare keys, single quotes)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def parse(self) -> tuple[JsonValue, int]:
        return self.value(_skip_ws(self.text, 0))

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

    def key(self, pos: int) -> tuple[Any, int]:
        if self.text[pos] in "\"'":
            return self.string(pos)
        if self.text[pos] in "{[":  # a bean or collection used as a map key
            value, end = self.value(pos)
            return freeze(value), end
        m = _BARE_KEY.match(self.text, pos)
        if not m:
            raise self.fail(pos, "expected a key")
        s = m.group()
        try:
            return int(s), m.end()
        except ValueError:
            return s, m.end()

    def obj(self, pos: int) -> tuple[dict[Any, Any], int]:
        text, out = self.text, dict[Any, Any]()
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == "}":
            return out, pos + 1
        while True:
            pos = _skip_ws(text, pos)
            if pos >= len(text):
                raise self.fail(pos, "unterminated object")
            k, pos = self.key(pos)
            pos = _skip_ws(text, pos)
            if pos >= len(text) or text[pos] != ":":
                raise self.fail(pos, "expected ':'")
            v, pos = self.value(_skip_ws(text, pos + 1))
            out[k] = v
            pos = _skip_ws(text, pos)
            if pos < len(text) and text[pos] == ",":
                pos += 1
                continue
            if pos < len(text) and text[pos] == "}":
                return out, pos + 1
            raise self.fail(pos, "expected ',' or '}'")

    def arr(self, pos: int) -> tuple[list[Any], int]:
        text, out = self.text, list[Any]()
        pos = _skip_ws(text, pos)
        if pos < len(text) and text[pos] == "]":
            return out, pos + 1
        while True:
            v, pos = self.value(_skip_ws(text, pos))
            out.append(v)
            pos = _skip_ws(text, pos)
            if pos < len(text) and text[pos] == ",":
                pos += 1
                continue
            if pos < len(text) and text[pos] == "]":
                return out, pos + 1
            raise self.fail(pos, "expected ',' or ']'")


# -- values that need a Java-side shape ---------------------------------------


class ObjectKey(tuple):
    """A map key that is a JSON object: fastjson writes a bean key (e.g. MessageQueue in
    ConsumeStats.offsetTable) as the bean itself. Hashable: a tuple of (name, value) pairs."""

    __slots__ = ()

    def as_dict(self) -> dict[Any, Any]:
        return {k: thaw(v) for k, v in self}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.as_dict()!r})"


class BeanKey(ObjectKey):
    """An :class:`ObjectKey` made from a :class:`Bean` (thaws back to a Bean)."""

    __slots__ = ()

    def as_dict(self) -> dict[Any, Any]:
        return Bean((k, thaw(v)) for k, v in self)


class ArrayKey(tuple):
    """A map key that is a JSON array (a Java collection used as a key)."""

    __slots__ = ()

    def as_list(self) -> list[Any]:
        return [thaw(v) for v in self]

    def __repr__(self) -> str:
        return f"ArrayKey({self.as_list()!r})"


def freeze(value: JsonValue) -> Any:
    """Make a parsed value usable as a dict key (objects and arrays become tuples)."""
    if isinstance(value, dict):
        kind = BeanKey if isinstance(value, Bean) else ObjectKey
        return kind((k, freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return ArrayKey(freeze(v) for v in value)
    return value


def thaw(value: Any) -> JsonValue:
    """Inverse of :func:`freeze`."""
    if isinstance(value, ObjectKey):
        return value.as_dict()
    if isinstance(value, ArrayKey):
        return value.as_list()
    return value


class RawJson(str):
    """JSON text written as it is: a part of a value encoded before the rest (see
    JsonBody.encode_streamed), so that the whole value never has to be held at once."""

    __slots__ = ()


class StreamedMap:
    """A map whose entries are converted as the writer reaches them, not before (JsonBody.encode_streamed): a
    whole table is written holding one entry's JSON tree at a time, never all of them. ``entries``, a Mapping
    or (key, value) pairs, is iterated once; ``key`` converts each key, ``value`` each non-null value. The
    writer treats it as any map (order, MapSortField, null values skipped, PrettyFormat's line breaks)."""

    __slots__ = ("entries", "key", "value")

    def __init__(
        self,
        entries: Mapping[Any, Any] | Iterable[tuple[Any, Any]],
        key: Callable[[Any], Any],
        value: Callable[[Any], JsonValue],
    ) -> None:
        self.entries = entries
        self.key = key
        self.value = value

    def pairs(self) -> Iterator[tuple[Any, Any]]:
        """(converted key, value as given) for each entry."""
        key = self.key
        for k, v in self.entries.items() if isinstance(self.entries, Mapping) else self.entries:
            yield key(k), v


class Bean(dict):
    """The properties of a Java bean (JavaBeanSerializer), as opposed to a Java Map.

    Written like a map, except under PrettyFormat, where fastjson breaks the line after
    ``{`` even for a bean with no non-null property."""

    __slots__ = ()


class CompactArray(list):
    """A JSON array from a Java Set or primitive array: PrettyFormat keeps it on one line
    (only java.util.List goes through fastjson's line-breaking ListSerializer)."""

    __slots__ = ()


# -- writing -----------------------------------------------------------------

# fastjson 1.2.69 SerializeWriter.writeStringWithDoubleQuote, default features: control
# characters, '"' and '\\', DEL and the C1 controls (0x7F-0x9F), U+2028 and U+2029.
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_ESCAPE: dict[int, str] = {c: f"\\u{c:04X}" for c in [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029]}
_ESCAPE.update({ord(k): v for k, v in _SHORT_ESCAPES.items()})
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\x7f-\x9f\u2028\u2029]')
# BrowserCompatible: also '/' (as "\/") and everything from 0x7F up, one \\uXXXX per UTF-16 unit.
_ESCAPE_BROWSER: dict[int, str] = {c: f"\\u{c:04X}" for c in range(0x20)}
_ESCAPE_BROWSER.update({ord(k): v for k, v in _SHORT_ESCAPES.items()})
_ESCAPE_BROWSER[ord("/")] = "\\/"
_NEEDS_ESCAPE_BROWSER = re.compile('["\\\\/\x00-\x1f\x7f-\U0010ffff]')
_JS_SAFE = (1 << 53) - 1


def _escape_default(m: re.Match[str]) -> str:
    return _ESCAPE[ord(m.group())]


def _escape_browser(m: re.Match[str]) -> str:
    code = ord(m.group())
    if code in _ESCAPE_BROWSER:
        return _ESCAPE_BROWSER[code]
    if code > 0xFFFF:  # Java strings hold surrogate pairs; escape each unit
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"
    return f"\\u{code:04X}"


def quote(text: str, browser_compatible: bool = False) -> str:
    """A JSON string literal the way fastjson writes it."""
    if browser_compatible:
        return '"' + _NEEDS_ESCAPE_BROWSER.sub(_escape_browser, text) + '"'
    return '"' + _NEEDS_ESCAPE.sub(_escape_default, text) + '"'


def java_double(value: float) -> str:
    """``Double.toString`` as fastjson's RyuDouble writes it (NaN and infinities: null).

    Shortest round-trip digits; plain notation for 1E-3 <= |v| < 1E7, else ``d.dddE[-]n``
    with at least two significant digits (Java prints Double.MIN_VALUE as 4.9E-324)."""
    if math.isnan(value) or math.isinf(value):
        return "null"
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    mag = abs(value)
    text = repr(mag)  # shortest round-trip digits, like Ryu
    mantissa, _, exp_text = text.partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    all_digits = int_part + frac_part
    digits = all_digits.lstrip("0")
    # decimal exponent of the first significant digit
    exp10 = len(int_part) - 1 - (len(all_digits) - len(digits)) + int(exp_text or "0")
    digits = digits.rstrip("0") or "0"
    if -3 <= exp10 < 7:
        if exp10 < 0:
            return f"{sign}0.{'0' * (-exp10 - 1)}{digits}"
        if exp10 + 1 >= len(digits):
            return f"{sign}{digits}{'0' * (exp10 + 1 - len(digits))}.0"
        return f"{sign}{digits[: exp10 + 1]}.{digits[exp10 + 1 :]}"
    if len(digits) == 1:  # Java keeps two significant digits in scientific notation
        two = f"{mag:.1e}"
        digits = two[0] + two[2]
        exp10 = int(two[4:])
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp10}"


def dumps(
    value: JsonValue,
    *,
    browser_compatible: bool = False,
    non_string_keys_as_string: bool = False,
    sort_map_keys: bool = False,
    pretty: bool = False,
    level: int = 0,
) -> str:
    """Serialise like fastjson's JSON.toJSONString with the given features.

    Dicts are written in their own order (callers order bean fields and Java maps);
    ``sort_map_keys`` is fastjson's MapSortField; ``pretty`` is PrettyFormat (JSON.toJSONString
    (obj, true)): beans and non-empty Lists break lines with tab indents, maps break before
    string keys only, Sets and primitive arrays (:class:`CompactArray`) stay on one line.

    ``level``: the indent level ``value`` is written at, as if it were nested that deep in a larger
    document (a part of it written ahead as :class:`RawJson`); it only matters when ``pretty``.
    """
    writer = _Writer(browser_compatible, non_string_keys_as_string or browser_compatible, sort_map_keys, pretty)
    writer.write(value, level)
    return writer.text()


def dump_bytes(
    value: JsonValue,
    *,
    browser_compatible: bool = False,
    non_string_keys_as_string: bool = False,
    sort_map_keys: bool = False,
    pretty: bool = False,
) -> bytes:
    """:func:`dumps` as UTF-8, with lone surrogates written as '?' like Java's String.getBytes.

    A long document's pieces go to one growing buffer as UTF-8 each time they are joined, and that buffer
    becomes the result without a copy: its text is never held twice (as pieces and joined), nor as both a
    string and bytes."""
    writer = _Writer(browser_compatible, non_string_keys_as_string or browser_compatible, sort_map_keys, pretty)
    writer.to_bytes = True
    writer.write(value, 0)
    if writer.sink is None:  # a short document (a header): its pieces were never joined before
        return "".join(writer.parts).encode("utf-8", errors="replace")
    writer.spill()
    return writer.sink.getvalue()  # the buffer itself, trimmed in place


#: pieces a writer holds before joining them into one string: a body of many entries (a broker's
#: consume stats, every group on every topic) is hundreds of thousands of short strings, which held to
#: the end would fill pymalloc pools that other objects then keep resident after the call
SPILL_PARTS = 4096


class _Writer:
    """One :func:`dumps` call's output and features. A class rather than nested functions that call each
    other: those would make a reference cycle per call, left to the cyclic collector."""

    __slots__ = ("parts", "joined", "to_bytes", "sink", "browser_compatible", "keys_as_str", "sort_map_keys", "pretty")

    def __init__(self, browser_compatible: bool, keys_as_str: bool, sort_map_keys: bool, pretty: bool) -> None:
        #: the latest pieces (emptied in place: the methods hold it in locals), and what came before, joined
        #: (or, for dump_bytes, written to ``sink`` as UTF-8, made at the first spill)
        self.parts: list[str] = []
        self.joined: list[str] = []
        self.to_bytes = False
        self.sink: io.BytesIO | None = None
        self.browser_compatible = browser_compatible
        self.keys_as_str = keys_as_str
        self.sort_map_keys = sort_map_keys
        self.pretty = pretty

    def text(self) -> str:
        return "".join([*self.joined, *self.parts])

    def spill(self) -> None:
        """Join the pieces so far (they are many short strings) and keep the result."""
        if self.to_bytes:
            if self.sink is None:
                self.sink = io.BytesIO()
            self.sink.write("".join(self.parts).encode("utf-8", errors="replace"))
        else:
            self.joined.append("".join(self.parts))
        self.parts.clear()

    def newline(self, level: int) -> None:
        self.parts.append("\n" + "\t" * level)

    def write_key(self, k: Any, level: int) -> None:
        if isinstance(k, str):
            self.parts.append(quote(k, self.browser_compatible))
        elif self.keys_as_str:  # JSON.toJSONString(key) with default features, written as a string
            self.parts.append(quote(dumps(thaw(k)), self.browser_compatible))
        else:
            self.write(thaw(k), level)

    def write_map(self, v: Mapping[Any, Any] | StreamedMap, level: int) -> None:
        parts, pretty = self.parts, self.pretty
        convert: Callable[[Any], Any] | None = None
        items: Iterable[tuple[Any, Any]]
        if isinstance(v, StreamedMap):
            items, convert = v.pairs(), v.value
        else:
            items = v.items()  # not copied unless sorted: a whole table's map would be a tuple per entry
        if self.sort_map_keys:
            items = _sorted_items(list(items))
        inner = level + 1
        parts.append("{")
        first = True
        size = 0
        for k, item in items:
            size += 1
            if item is None:
                continue  # fastjson drops null map values by default
            if not first:
                parts.append(",")
            first = False
            if pretty and isinstance(k, str):
                self.newline(inner)
            self.write_key(k, inner)
            parts.append(":")
            self.write(item if convert is None else convert(item), inner)
        if pretty and size > 0:  # the map's size, skipped nulls included
            self.newline(level)
        parts.append("}")

    def write_bean(self, v: Mapping[str, Any], level: int) -> None:
        parts = self.parts
        inner = level + 1
        parts.append("{")
        self.newline(inner)
        first = True
        for k, item in v.items():
            if item is None:
                continue
            if not first:
                parts.append(",")
                self.newline(inner)
            first = False
            self.write_key(k, inner)
            parts.append(":")
            self.write(item, inner)
        self.newline(level)
        parts.append("}")

    def write_list(self, v: Any, level: int) -> None:
        parts = self.parts
        if self.pretty and len(v) > 0 and not isinstance(v, CompactArray):
            inner = level + 1
            parts.append("[")
            for i, item in enumerate(v):
                if i:
                    parts.append(",")
                self.newline(inner)
                self.write(item, inner)
            self.newline(level)
            parts.append("]")
            return
        parts.append("[")
        for i, item in enumerate(v):
            if i:
                parts.append(",")
            self.write(item, level)
        parts.append("]")

    def write(self, v: JsonValue, level: int) -> None:
        parts = self.parts
        if len(parts) >= SPILL_PARTS:
            self.spill()
        if v is None:
            parts.append("null")
        elif v is True:
            parts.append("true")
        elif v is False:
            parts.append("false")
        elif isinstance(v, int):
            if self.browser_compatible and not -_JS_SAFE <= v <= _JS_SAFE:
                parts.append(f'"{v}"')
            else:
                parts.append(str(v))
        elif isinstance(v, float):
            parts.append(java_double(v))
        elif isinstance(v, str):
            parts.append(v if type(v) is RawJson else quote(v, self.browser_compatible))
        elif isinstance(v, Bean) and self.pretty:
            self.write_bean(v, level)
        elif isinstance(v, (Mapping, StreamedMap)):
            self.write_map(v, level)
        elif isinstance(v, (ObjectKey, ArrayKey)):
            self.write(thaw(v), level)
        elif isinstance(v, (list, tuple)):
            self.write_list(v, level)
        elif isinstance(v, (set, frozenset)):
            self.write_list(CompactArray(v), level)
        elif hasattr(v, "to_json"):
            self.write(v.to_json(), level)
        elif hasattr(v, "value") and hasattr(v, "name"):  # Enum: fastjson writes the name
            parts.append(quote(v.name, self.browser_compatible))
        else:
            raise TypeError(f"cannot serialise {type(v).__name__} as fastjson")


def _sorted_items(items: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """MapSortField: ``new TreeMap(map)``; keys that are not mutually comparable (mixed kinds,
    beans) make Java keep the map's own order."""
    if all(isinstance(k, str) for k, _ in items):
        return sorted(items, key=lambda kv: kv[0].encode("utf-16-be"))
    if all(isinstance(k, (int, float)) and not isinstance(k, bool) for k, _ in items):
        return sorted(items, key=lambda kv: kv[0])
    return items

