"""Java values of a SQL92 selector and how RocketMQ 4.9.8 compares them.

str = String, bool = Boolean, None = null, :class:`JInt`/:class:`JLong`, float = Double;
``Integer/Long/Double/Boolean.valueOf`` and ComparisonExpression's conversions between them.
Also the two errors: a selector that does not compile, a value that does not evaluate.
"""

from __future__ import annotations

import math
import re
from typing import Any


class JInt(int):
    """A java.lang.Integer."""

    __slots__ = ()


class JLong(int):
    """A java.lang.Long."""

    __slots__ = ()


INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


class SelectorError(Exception):
    """The selector does not compile (Java's MQFilterException).

    ``java_message`` is what Java's exception message reads (``cause.toString()``),
    the remark CHECK_CLIENT_CONFIG answers with."""

    def __init__(self, java_class: str, message: str | None) -> None:
        self.java_class = java_class
        self.message = message
        super().__init__(self.java_message)

    @property
    def java_message(self) -> str:
        return self.java_class if self.message is None else f"{self.java_class}: {self.message}"


class EvalError(Exception):
    """A Java exception thrown while evaluating (the message then does not match)."""


PARSE_EXC = "org.apache.rocketmq.filter.parser.ParseException"
LEX_EXC = "org.apache.rocketmq.filter.parser.TokenMgrError"
RUNTIME_EXC = "java.lang.RuntimeException"
NFE_EXC = "java.lang.NumberFormatException"


def nfe_message(text: str) -> str:
    return f'For input string: "{text}"'


def runtime_error(message: str) -> SelectorError:
    return SelectorError(RUNTIME_EXC, message)


_JAVA_INT = re.compile(r"[+-]?\d+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)",
)
_JAVA_HEX_DOUBLE = re.compile(r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?")


def _parse_integral(text: str, lo: int, hi: int) -> int:
    if not _JAVA_INT.fullmatch(text):
        raise EvalError(nfe_message(text))
    if len(text.lstrip("+-").lstrip("0")) > 20:  # beyond any long; int() would refuse thousands of digits
        raise EvalError(nfe_message(text))
    value = int(text)
    if not lo <= value <= hi:
        raise EvalError(nfe_message(text))
    return value


def java_integer(text: str) -> JInt:
    """Integer.valueOf(String)."""
    return JInt(_parse_integral(text, INT_MIN, INT_MAX))


def java_long(text: str) -> JLong:
    """Long.valueOf(String)."""
    return JLong(_parse_integral(text, LONG_MIN, LONG_MAX))


def java_double_of(text: str) -> float:
    """Double.valueOf(String): surrounding blanks allowed, NaN/Infinity, f/d suffixes, hex."""
    core = text.strip("".join(chr(c) for c in range(33)))
    if _JAVA_DOUBLE.fullmatch(core):
        body = core.rstrip("fFdD") if not core.endswith("NaN") and not core.endswith("Infinity") else core
        if body.lstrip("+-") == "NaN":
            return math.nan
        if body.lstrip("+-") == "Infinity":
            return -math.inf if body.startswith("-") else math.inf
        return float(body)
    m = _JAVA_HEX_DOUBLE.fullmatch(core)
    if m:
        value = float.fromhex("0x" + m.group(2))
        return -value if m.group(1) == "-" else value
    raise EvalError(nfe_message(text))


def java_boolean_of(text: str) -> bool:
    """Boolean.valueOf(String): "true" in any case, anything else false."""
    return len(text) == 4 and text.lower() == "true"


def _kind(v: Any) -> str:
    t = type(v)
    if t is str:
        return "string"
    if t is bool:
        return "bool"
    if t is JInt:
        return "int"
    if t is JLong:
        return "long"
    if t is float:
        return "double"
    if v is None:
        return "null"
    raise EvalError(f"unexpected value {v!r}")


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


def _sign(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _double_compare(a: float, b: float) -> int:
    """Double.compare: NaN above everything and equal to itself, -0.0 below 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    if math.isnan(a) or math.isnan(b):
        return (1 if math.isnan(a) else 0) - (1 if math.isnan(b) else 0)
    return _sign(math.copysign(1.0, a), math.copysign(1.0, b))


def java_equals(a: Any, b: Any) -> bool:
    ka, kb = _kind(a), _kind(b)
    if ka != kb:
        return False
    if ka == "double":
        return _double_compare(a, b) == 0  # equals() goes by the bits: NaN == NaN, 0.0 != -0.0
    return bool(a == b)


def java_compare(lv: Any, rv: Any) -> int:
    """ComparisonExpression.__compare with string conversion on, as the parser sets it."""
    lk, rk = _kind(lv), _kind(rv)
    if lk != rk:
        if lk == "bool":
            if rk == "string":
                raise EvalError("java.lang.ClassCastException: Boolean cannot be cast to String")
            return -1
        if lk == "int":
            if rk == "long":
                lv, lk = JLong(lv), "long"
            elif rk == "double":
                lv, lk = float(lv), "double"
            elif rk == "string":
                rv, rk = java_integer(rv), "int"
            else:
                return -1
        elif lk == "long":
            if rk == "int":
                rv, rk = JLong(rv), "long"
            elif rk == "double":
                lv, lk = float(lv), "double"
            elif rk == "string":
                rv, rk = java_long(rv), "long"
            else:
                return -1
        elif lk == "double":
            if rk in ("int", "long"):
                rv, rk = float(rv), "double"
            elif rk == "string":
                rv, rk = java_double_of(rv), "double"
            else:
                return -1
        elif lk == "string":
            if rk == "bool":
                lv, lk = java_boolean_of(lv), "bool"
            elif rk == "int":
                lv, lk = java_integer(lv), "int"
            elif rk == "long":
                lv, lk = java_long(lv), "long"
            elif rk == "double":
                lv, lk = java_double_of(lv), "double"
            else:
                return -1
        else:
            return -1
    if lk == "double":
        return _double_compare(lv, rv)
    if lk == "string":
        return _sign(_utf16(lv), _utf16(rv))
    return _sign(lv, rv)
