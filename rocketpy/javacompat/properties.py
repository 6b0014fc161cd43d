"""java.util.Properties text: the config file format and UPDATE_NAMESRV_CONFIG bodies."""

from __future__ import annotations

import os
import re

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


class ConfigError(ValueError):
    """A config file or setting a server cannot start with; the CLIs print it on one line and exit."""


class PropertiesError(ConfigError):
    """Text that Properties.load refuses (a malformed \\uXXXX escape)."""


def _logical_lines(text: str) -> list[str]:
    """Physical lines joined where a line ends in an odd number of backslashes."""
    out: list[str] = []
    pending: str | None = None
    for raw in re.split(r"\r\n|\r|\n", text):
        line = raw.lstrip(" \t\f") if pending is not None else raw
        if pending is None:
            stripped = line.lstrip(" \t\f")
            if not stripped or stripped[0] in "#!":
                continue
            line = stripped
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending = (pending or "") + line[:-1]
            continue
        out.append((pending or "") + line)
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise PropertiesError(f"Malformed \\uxxxx encoding: {text[i : i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _key_end(line: str) -> int:
    """Index of the first separator not escaped by a backslash."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            return i
        i += 1
    return len(line)


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


def dumps(props: dict[str, str]) -> str:
    """``key=value`` lines as MixAll.properties2String writes them (no escaping, in dict order)."""
    return "".join(f"{k}={v}\n" for k, v in props.items() if v is not None)
