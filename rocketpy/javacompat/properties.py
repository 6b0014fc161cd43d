"""java.util.Properties text: the config file format and UPDATE_NAMESRV_CONFIG bodies."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SURROGATE = re.compile("[\ud800-\udfff]")


class ConfigError(ValueError):
    """A config file or setting a server cannot start with; the CLIs print it on one line and exit."""


class PropertiesError(ConfigError):
    """Text that Properties.load refuses (a malformed \\uXXXX escape)."""


def _logical_lines(text: str) -> list[str]:
    """Physical lines joined where a line ends in an odd number of backslashes, as JDK 17's
    Properties.LineReader joins them: the next line's leading whitespace dropped, a comment line
    only at the start of a logical line (or right after a continuation that left it empty), an
    empty logical line dropped unless the text ends right after its backslash."""
    out: list[str] = []
    pending: str | None = None
    lines = re.split(r"\r\n|\r|\n", text)
    last = len(lines) - 1
    for i, raw in enumerate(lines):
        line = raw.lstrip(" \t\f")
        if not pending and line[:1] in ("#", "!"):
            pending = None  # a comment (after a continuation that left nothing, as LineReader's len == 0)
            continue
        if pending is None and not line:
            continue
        line = (pending or "") + line
        pending = None
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            line = line[:-1]
            if i + 1 < last or (i + 1 == last and lines[last]):
                pending = line
            elif line or i == last or not text.endswith("\r\n"):
                # the text ends after the backslash (and its line break): the line is what it has; an empty
                # one after a \r\n is dropped (LineReader reads past the \n before it looks for the end)
                out.append(line)
            continue
        if line:
            out.append(line)
    return out


#: an escape: \\uXXXX, a malformed \\u, or a backslash and any character (a lone one at the very end stays)
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(u)|(.))", re.DOTALL)


def _unescaped(match: re.Match[str]) -> str:
    hex_digits, bad_u, other = match.groups()
    if hex_digits is not None:
        return chr(int(hex_digits, 16))
    if bad_u is not None:
        start = match.start()
        raise PropertiesError(f"Malformed \\uxxxx encoding: {match.string[start : start + 6]!r}")
    return _ESCAPES.get(other, other)


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    text = _ESCAPE.sub(_unescaped, text)
    if _SURROGATE.search(text):
        # a Java string is UTF-16: \uD83D\uDE00 is one character (what store() writes for it)
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return text


#: a key: up to the first separator (= : space tab form feed) not escaped by a backslash
_KEY = re.compile(r"[^\\=: \t\f]*(?:\\.[^\\=: \t\f]*)*", re.DOTALL)


def _key_end(line: str) -> int:
    """Index of the first separator not escaped by a backslash."""
    match = _KEY.match(line)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def loads(text: str) -> dict[str, str]:
    """Parse like Properties.load: ``key=value``, ``key: value`` or ``key value``; last one wins."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        end = _key_end(line)
        key = line[:end]
        # separator: whitespace, then at most one '=' or ':', then whitespace
        rest = line[end:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:]
        value = rest.lstrip(" \t\f")
        props[_unescape(key)] = _unescape(value)
    return props


def load_file(path: str | os.PathLike[str]) -> dict[str, str]:
    """A properties file as Java's Properties.load(InputStream) reads it: ISO-8859-1 bytes
    (any byte is a character, non-Latin-1 text comes as ``\\uXXXX`` escapes), then :func:`loads`."""
    with open(path, "rb") as f:
        return loads(f.read().decode("iso-8859-1"))


def dumps(props: Mapping[str, str | None]) -> str:
    """``key=value`` lines as MixAll.properties2String writes them (no escaping, in dict order): the
    wire's text (GET_BROKER_CONFIG, GET_NAMESRV_CONFIG answers, update requests), never a file's."""
    return "".join(f"{k}={v}\n" for k, v in props.items() if v is not None)


#: characters a key or value may hold as they are; anything else is escaped by :func:`store`
_PLAIN_KEY = re.compile(r"[\x22\x24-\x39\x3b\x3c\x3e-\x5b\x5d-\x7e][\x21-\x39\x3b\x3c\x3e-\x5b\x5d-\x7e]*")
_PLAIN_VALUE = re.compile(r"(?:[\x21-\x5b\x5d-\x7e][\x20-\x5b\x5d-\x7e]*)?")
_KEY_SPECIAL = re.compile(r"[^\x21-\x39\x3b\x3c\x3e-\x5b\x5d-\x7e]|^[#!]")
_VALUE_SPECIAL = re.compile(r"[^\x20-\x5b\x5d-\x7e]|^ ")
_ESCAPED = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _ESCAPED:
        return _ESCAPED[ch]
    if " " <= ch <= "~":  # a separator in a key, a key's leading comment mark, a value's leading space
        return "\\" + ch
    units = ch.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{units[i]:02X}{units[i + 1]:02X}" for i in range(0, len(units), 2))


def store(props: Mapping[str, str | None]) -> str:
    """``key=value`` lines escaped as Properties.store escapes them (without its comment lines), so that
    :func:`loads` and Java's Properties.load read back exactly ``props``: backslashes, line breaks, tabs,
    form feeds, a key's separators and leading ``#``/``!``, a value's leading space, and every character
    outside printable ASCII (as ``\\uXXXX``; the file is ASCII, whatever reads it as ISO-8859-1 or UTF-8).
    The one writer of every properties file the servers write (broker.conf, namesrv.properties); ``=`` and
    ``:`` inside a value stay as they are (``namesrvAddr=1.2.3.4:9876``), as a reader needs no escape there."""
    lines = []
    for key, value in props.items():
        if value is None:
            continue
        if not _PLAIN_KEY.fullmatch(key):
            key = _KEY_SPECIAL.sub(_escape_char, key)
        if not _PLAIN_VALUE.fullmatch(value):
            value = _VALUE_SPECIAL.sub(_escape_char, value)
        lines.append(f"{key}={value}\n")
    return "".join(lines)


#: what a reader of lines may take for the end of one: Properties' \n and \r, and the rest of the
#: separators of Python's str.splitlines (vertical tab, form feed, the file/group/record separators,
#: NEL, U+2028, U+2029)
_LINE_BREAK = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def has_line_break(text: str) -> bool:
    """Whether ``text`` holds a line break (see ``_LINE_BREAK``): no config value or key may."""
    return _LINE_BREAK.search(text) is not None


def parse_update(body: bytes) -> dict[str, str]:
    """An UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG body as Java's MixAll.string2Properties reads it
    (Properties.load: escapes resolved, continuation lines joined); PropertiesError for what load refuses.
    The body is read as UTF-8 (Java turns its non-ASCII bytes into ISO-8859-1 characters, one a byte)."""
    return loads(body.decode("utf-8", "replace"))
