"""The YAML of ACL files: a small reader and writer, no dependency.

Reads what people and SnakeYAML write in ``plain_acl.yml``: block mappings and
sequences (``key: value``, ``- item``, ``- key: value`` starting an inline mapping),
flow sequences and mappings of scalars (``[a, b]``, ``{counter: 1, timestamp: 2}``),
plain, single- and double-quoted scalars, comments and a leading ``---``. Scalars
resolve as YAML 1.1 does for SnakeYAML: ``~``/``null``/empty -> None, ``true``/``yes``/``on``
(any case form) -> True, their opposites -> False, decimal integers -> int, other
numbers -> float, anything else a string. Anchors, tags, multi-line and block scalars
are refused with :class:`YamlError`.

The writer emits block style, with flow style for lists of scalars, and quotes
every string that would otherwise read back as something else.
"""

from __future__ import annotations

import re
from typing import Any


class YamlError(ValueError):
    pass


_NULLS = {"", "~", "null", "Null", "NULL"}
_TRUE = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y"}
_FALSE = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N"}
_INT = re.compile(r"[-+]?(0|[1-9][0-9_]*)")
_OCT = re.compile(r"[-+]?0[0-7_]+")
_HEX = re.compile(r"[-+]?0x[0-9a-fA-F_]+")
_FLOAT = re.compile(r"[-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)?")


def resolve(text: str) -> Any:
    """The value of a plain (unquoted) scalar."""
    if text in _NULLS:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT.fullmatch(text):
        return int(text.replace("_", ""))
    if _OCT.fullmatch(text):
        return int(text.replace("_", ""), 8)
    if _HEX.fullmatch(text):
        sign = -1 if text.startswith("-") else 1
        return sign * int(text.lstrip("+-")[2:].replace("_", ""), 16)
    if _FLOAT.fullmatch(text) and any(c.isdigit() for c in text):
        return float(text.replace("_", ""))
    return text


def _strip_comment(line: str) -> str:
    """Drop a `` #`` comment outside quotes."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def _scalar(text: str) -> Any:
    text = text.strip()
    if not text:
        return None
    if text[0] == "'":
        if len(text) < 2 or text[-1] != "'":
            raise YamlError(f"unterminated quoted scalar: {text}")
        return text[1:-1].replace("''", "'")
    if text[0] == '"':
        if len(text) < 2 or text[-1] != '"':
            raise YamlError(f"unterminated quoted scalar: {text}")
        return _unescape(text[1:-1])
    if text[0] == "[":
        return [_scalar(p) for p in _split_flow(text, "[", "]")]
    if text[0] == "{":
        out: dict[str, Any] = {}
        for part in _split_flow(text, "{", "}"):
            key, sep, value = _split_key(part)
            if not sep:
                raise YamlError(f"bad flow mapping entry: {part}")
            out[str(_scalar(key))] = _scalar(value)
        return out
    if text[0] in "&*!|>%@`":
        raise YamlError(f"unsupported YAML: {text}")
    return resolve(text)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", '"': '"', "\\": "\\", "/": "/", " ": " "}


def _unescape(body: str) -> str:
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if nxt in "xuU":
                width = {"x": 2, "u": 4, "U": 8}[nxt]
                out.append(chr(int(body[i + 2 : i + 2 + width], 16)))
                i += 2 + width
                continue
            raise YamlError(f"unknown escape \\{nxt}")
        out.append(ch)
        i += 1
    return "".join(out)


def _split_flow(text: str, open_: str, close: str) -> list[str]:
    if not text.endswith(close):
        raise YamlError(f"unterminated flow collection: {text}")
    inner = text[1:-1]
    parts, quote, start = [], "", 0
    for i, ch in enumerate(inner):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "[]{}":
            raise YamlError(f"nested flow collections are not supported: {text}")
        elif ch == ",":
            parts.append(inner[start:i])
            start = i + 1
    last = inner[start:]
    if last.strip() or parts:
        parts.append(last)
    return [p for p in (x.strip() for x in parts) if p]


def _split_key(text: str) -> tuple[str, str, str]:
    """``key: value`` -> (key, ':', value); ('', '', text) when it is no mapping entry."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"" and i == 0:
            quote = ch
        elif ch == ":" and (i + 1 == len(text) or text[i + 1] in " \t"):
            return text[:i].strip(), ":", text[i + 1 :].strip()
        elif ch in "[{" and i == 0:
            return "", "", text
    return "", "", text


class _Lines:
    def __init__(self, text: str) -> None:
        self.items: list[tuple[int, str]] = []
        for raw in text.splitlines():
            if "\t" in raw[: len(raw) - len(raw.lstrip())]:
                raise YamlError("tabs are not allowed in indentation")
            line = _strip_comment(raw)
            if not line.strip() or line.strip() in ("---", "..."):
                continue
            self.items.append((len(line) - len(line.lstrip(" ")), line.strip()))
        self.i = 0

    def peek(self) -> tuple[int, str] | None:
        return self.items[self.i] if self.i < len(self.items) else None


def _parse_node(lines: _Lines, indent: int) -> Any:
    head = lines.peek()
    if head is None:
        return None
    ind, text = head
    if text.startswith("- ") or text == "-":
        return _parse_seq(lines, ind)
    return _parse_map(lines, ind)


def _parse_seq(lines: _Lines, indent: int) -> list[Any]:
    out: list[Any] = []
    while True:
        head = lines.peek()
        if head is None:
            return out
        ind, text = head
        if ind < indent or not (text.startswith("- ") or text == "-"):
            if ind > indent:
                raise YamlError(f"bad indentation: {text}")
            return out
        if ind > indent:
            raise YamlError(f"bad indentation: {text}")
        rest = text[1:].strip()
        lines.i += 1
        if not rest:
            nxt = lines.peek()
            out.append(_parse_node(lines, nxt[0]) if nxt is not None and nxt[0] > indent else None)
            continue
        key, sep, value = _split_key(rest)
        if sep:
            # "- key: value" opens a mapping whose keys line up after "- "
            inner = ind + (len(text) - len(rest))
            lines.i -= 1
            lines.items[lines.i] = (inner, rest)
            out.append(_parse_map(lines, inner))
        elif rest.startswith("- "):
            inner = ind + (len(text) - len(rest))
            lines.i -= 1
            lines.items[lines.i] = (inner, rest)
            out.append(_parse_seq(lines, inner))
        else:
            out.append(_scalar(rest))


def _parse_map(lines: _Lines, indent: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    while True:
        head = lines.peek()
        if head is None:
            return out
        ind, text = head
        if ind < indent:
            return out
        if ind > indent:
            raise YamlError(f"bad indentation: {text}")
        if text.startswith("- ") or text == "-":
            return out
        key, sep, value = _split_key(text)
        if not sep:
            raise YamlError(f"expected 'key: value', got: {text}")
        lines.i += 1
        name = str(_scalar(key)) if key else ""
        if value:
            out[name] = _scalar(value)
            continue
        nxt = lines.peek()
        if nxt is not None and (nxt[0] > indent or (nxt[0] == indent and nxt[1].startswith("-"))):
            out[name] = _parse_node(lines, nxt[0])
        else:
            out[name] = None
    return out


def loads(text: str) -> Any:
    """The document in ``text`` (None when empty)."""
    lines = _Lines(text)
    if lines.peek() is None:
        return None
    if lines.peek()[1][:1] in "[{":  # type: ignore[index]
        value = _scalar(" ".join(t for _, t in lines.items))
        return value
    value = _parse_node(lines, lines.peek()[0])  # type: ignore[index]
    if lines.peek() is not None:
        raise YamlError(f"unexpected content: {lines.peek()[1]}")  # type: ignore[index]
    return value


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------

_PLAIN_SAFE = re.compile(r"[A-Za-z0-9_./@%$^=|*+()?-][A-Za-z0-9_./@%$^=|*+()? -]*")


def _dump_scalar(v: Any) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return repr(v)
    text = str(v)
    if _PLAIN_SAFE.fullmatch(text) and text[0] not in "-*?" and text == text.strip() and resolve(text) == text:
        return text
    return "'" + text.replace("'", "''") + "'"


def _is_scalar(v: Any) -> bool:
    return not isinstance(v, (dict, list))


def _dump_into(out: list[str], value: Any, indent: int) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for k, v in value.items():
            key = _dump_scalar(k)
            if _is_scalar(v):
                out.append(f"{pad}{key}: {_dump_scalar(v)}")
            elif isinstance(v, list) and all(_is_scalar(x) for x in v):
                out.append(f"{pad}{key}: [{', '.join(_dump_scalar(x) for x in v)}]")
            elif isinstance(v, dict) and not v:
                out.append(f"{pad}{key}: {{}}")
            else:
                out.append(f"{pad}{key}:")
                _dump_into(out, v, indent if isinstance(v, list) else indent + 2)
    elif isinstance(value, list):
        for item in value:
            if _is_scalar(item):
                out.append(f"{pad}- {_dump_scalar(item)}")
            elif isinstance(item, dict) and item:
                sub: list[str] = []
                _dump_into(sub, item, indent + 2)
                sub[0] = f"{pad}- " + sub[0][indent + 2 :]
                out.extend(sub)
            elif isinstance(item, list) and item and all(_is_scalar(x) for x in item):
                out.append(f"{pad}- [{', '.join(_dump_scalar(x) for x in item)}]")
            else:
                out.append(f"{pad}- {'{}' if isinstance(item, dict) else '[]'}")
                if isinstance(item, list) and item:
                    raise YamlError("nested lists of collections are not supported")
    else:
        out.append(pad + _dump_scalar(value))


def dumps(value: Any) -> str:
    """Block-style YAML of a mapping (SnakeYAML's dumpAsMap)."""
    out: list[str] = []
    _dump_into(out, value, 0)
    return "\n".join(out) + "\n"
