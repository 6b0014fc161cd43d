""":func:`fastjson.loads` in steps, for documents too big to parse in one go on an event loop.

The stdlib's C scanner holds the GIL for the whole document (0.55 s for a 14 MiB heartbeat), in a
worker thread as well as on the loop. :func:`loads_steps` reads the same dialect (fastjson's bare and
single-quoted keys, objects as keys) with containers walked here and strings scanned by the C
``scanstring``, and yields after every ``every`` values, so its driver can let others run in between
(sans-IO: the generator does no I/O and knows nothing of trio)::

    steps = loads_steps(text)
    try:
        while True:
            next(steps)
            await trio.sleep(0)
    except StopIteration as done:
        value = done.value

Its results and errors are :func:`fastjson.loads`'s (CodecError for what that refuses).
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from typing import Any

from .errors import CodecError
from .fastjson import JsonValue, freeze

_WS = re.compile(r"[ \t\n\r]*")
_BARE_KEY = re.compile(r"-?[0-9A-Za-z_$.]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_scan_string = json.decoder.scanstring  # type: ignore[attr-defined]
_LITERALS = (("true", True), ("false", False), ("null", None))
# the stdlib's C scanner, for each container small enough to be read at once (as fastjson.loads reads a
# standard document: NaN and Infinity are CodecError there too)
_decoder = json.JSONDecoder(parse_constant=lambda name: _no_constant(name))


def _no_constant(name: str) -> Any:
    raise CodecError(f"{name} is not JSON")


def _small_container(depth: int) -> str:
    """A regex for an object or array nested at most ``depth`` deep, with no single quote outside strings
    (fastjson's own syntax is left to the walk), its quantifiers possessive (no backtracking)."""
    string = r'"(?:[^"\\]++|\\.)*+"'
    inner = rf"""(?:[^{{}}\[\]"']++|{string})*+"""
    for _ in range(depth):
        container = rf"(?:\{{{inner}\}}|\[{inner}\])"
        inner = rf"""(?:[^{{}}\[\]"']++|{string}|{container})*+"""
    return container


#: containers of at most SMALL characters (and 4 levels) are read by the C scanner in one call: about
#: 0.3 ms each; bigger ones are walked here, their small members each read at once
SMALL = 8192
_SMALL = re.compile(_small_container(4), re.DOTALL)

Steps = Generator[None, None, Any]


def _fail(pos: int, what: str) -> CodecError:
    return CodecError(f"bad JSON at offset {pos}: {what}")


def _ws(text: str, pos: int) -> int:
    m = _WS.match(text, pos)
    assert m is not None  # the pattern matches the empty string
    return m.end()


def _string(text: str, pos: int) -> tuple[str, int]:
    if text[pos] == '"':
        try:
            return _scan_string(text, pos + 1, True)
        except (json.JSONDecodeError, ValueError) as exc:
            raise _fail(pos, str(exc)) from None
    end = text.find("'", pos + 1)
    if end < 0:
        raise _fail(pos, "unterminated string")
    return text[pos + 1 : end], end + 1


def _scalar(text: str, pos: int) -> tuple[JsonValue, int]:
    """A value that is not an object or an array."""
    if pos >= len(text):
        raise _fail(pos, "unexpected end")
    ch = text[pos]
    if ch == '"' or ch == "'":
        return _string(text, pos)
    m = _NUMBER.match(text, pos)
    if m:
        s = m.group()
        return (float(s) if any(c in s for c in ".eE") else int(s)), m.end()
    for word, val in _LITERALS:
        if text.startswith(word, pos):
            return val, pos + len(word)
    raise _fail(pos, f"unexpected {ch!r}")


class _Budget:
    """Counts values; the parse yields when ``every`` have been read since the last yield."""

    __slots__ = ("every", "left")

    def __init__(self, every: int) -> None:
        self.every = every
        self.left = every


def _key(text: str, pos: int, budget: _Budget) -> Generator[None, None, tuple[Any, int]]:
    if pos >= len(text):
        raise _fail(pos, "unterminated object")
    ch = text[pos]
    if ch == '"' or ch == "'":
        return _string(text, pos)
    if ch == "{" or ch == "[":  # a bean or collection used as a map key
        value, end = yield from _value(text, pos, budget)
        return freeze(value), end
    m = _BARE_KEY.match(text, pos)
    if not m:
        raise _fail(pos, "expected a key")
    s = m.group()
    try:
        return int(s), m.end()
    except ValueError:
        return s, m.end()


def _member_start(text: str, pos: int, budget: _Budget) -> Generator[None, None, tuple[Any, int]]:
    """An object member's key and ``:``; returns the key and where its value starts."""
    key, pos = yield from _key(text, _ws(text, pos), budget)
    pos = _ws(text, pos)
    if pos >= len(text) or text[pos] != ":":
        raise _fail(pos, "expected ':'")
    return key, _ws(text, pos + 1)


def _small(text: str, pos: int) -> tuple[JsonValue, int] | None:
    """The container at ``pos`` read by the C scanner in one call, if it is small and standard JSON."""
    if _SMALL.match(text, pos, pos + SMALL) is None:
        return None
    try:
        return _decoder.raw_decode(text, pos)
    except ValueError:  # not standard JSON (or bad): walked instead, as fastjson.loads falls back
        return None


def _value(text: str, pos: int, budget: _Budget) -> Generator[None, None, tuple[JsonValue, int]]:
    """The value at ``pos`` and where it ends, big containers kept on a stack of our own (no recursion
    but for a container used as a key)."""
    # each frame: [container, key of the member being read (objects), closing character]
    stack: list[list[Any]] = []
    value: JsonValue
    while True:
        budget.left -= 1
        if budget.left <= 0:
            budget.left = budget.every
            yield
        if pos >= len(text):
            raise _fail(pos, "unexpected end")
        ch = text[pos]
        read = _small(text, pos) if ch == "{" or ch == "[" else None
        if read is not None:
            value, end = read
            budget.left -= (end - pos) >> 5  # the C scanner reads ~32 characters in the time of a value here
            pos = end
        elif ch == "{" or ch == "[":
            pos = _ws(text, pos + 1)
            close = "}" if ch == "{" else "]"
            container: Any = {} if ch == "{" else []
            if pos >= len(text) or text[pos] != close:
                key = None
                if ch == "{":
                    key, pos = yield from _member_start(text, pos, budget)
                stack.append([container, key, close])
                continue
            value = container
            pos += 1
        else:
            value, pos = _scalar(text, pos)
        # a value is complete: put it in its container, then read on (or close containers)
        while True:
            if not stack:
                return value, pos
            frame = stack[-1]
            container, key, close = frame
            if close == "}":
                container[key] = value
            else:
                container.append(value)
            pos = _ws(text, pos)
            if pos < len(text) and text[pos] == ",":
                pos += 1
                if close == "}":
                    frame[1], pos = yield from _member_start(text, pos, budget)
                else:
                    pos = _ws(text, pos)
                break
            if pos < len(text) and text[pos] == close:
                pos += 1
                stack.pop()
                value = container
                continue
            raise _fail(pos, f"expected ',' or '{close}'")


def loads_steps(data: bytes | str, every: int = 2000) -> Generator[None, None, JsonValue]:
    """Parse one fastjson document as :func:`fastjson.loads` does, yielding after every ``every`` values;
    the generator's return value is the document. Bad input raises CodecError."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CodecError(f"JSON is not UTF-8: {exc}") from None
    else:
        text = data
    try:
        value, end = yield from _value(text, _ws(text, 0), _Budget(max(1, every)))
    except RecursionError:
        raise CodecError("JSON nested too deeply") from None
    except CodecError:
        raise
    except ValueError as exc:  # a number too long for int()
        raise CodecError(f"bad JSON: {exc}") from None
    if _ws(text, end) != len(text):
        raise CodecError(f"trailing data after JSON at {end}")
    return value


def run_steps(steps: Generator[None, None, Any]) -> Any:
    """Run a step generator to its end at once (tests, small documents)."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
