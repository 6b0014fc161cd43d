"""SQL92 message selectors, read and evaluated the way RocketMQ 4.9.8's filter module does.

Pure module: a lazy tokenizer, a recursive-descent parser and an evaluator over a
message's properties (``TAGS``, ``KEYS`` and every user property are plain strings).

The language of 4.9.8 (no LIKE, no arithmetic beyond unary minus):

* ``OR`` < ``AND`` < ``=``, ``<>``, ``IS [NOT] NULL`` < ``>``, ``>=``, ``<``, ``<=``,
  ``[NOT] BETWEEN x AND y``, ``[NOT] IN ('a', ...)`` < unary ``+``, ``-``, ``NOT``;
  keywords are case-insensitive, ``--`` line and ``/* */`` block comments are skipped;
* literals: ``'str'`` (``''`` escapes a quote), integers (a Java int when it fits, else a
  long; ``L`` suffix allowed), doubles (``1.5``, ``.5``, ``5.``, ``1E3``), ``TRUE``,
  ``FALSE``, ``NULL``; identifiers ``[a-zA-Z_$][a-zA-Z0-9_$]*`` name properties.

Facts of Java's implementation kept here on purpose:

* the parser stops after one expression and never asks for the end of input
  (``a = 1 b`` is ``a = 1``), though the token after the expression must be lexable;
* a double literal of 0 (``0.0``) is refused ("is less than 4.9E-324");
* values keep Java types (Integer, Long, Double, String, Boolean); comparing a property
  (a string) with a number converts the string with Integer/Long/Double.valueOf, and a
  string that does not convert makes the whole selector false for that message, as does
  ordering two strings that are not both numbers;
* a missing property gives NULL: comparisons with NULL are NULL, NOT NULL is NULL,
  ``NULL AND FALSE`` is FALSE, ``NULL OR TRUE`` is TRUE, and only TRUE matches;
* ``a = b`` is NULL when ``a`` is missing but FALSE when only ``b`` is (so ``a <> b``
  matches then); ``x = TRUE`` compares ``Boolean.valueOf(x)``;
* a bare property used as a condition is FALSE unless missing (NULL).
"""

from __future__ import annotations

import dataclasses
import math
import re
import struct
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

from ..codecs.fastjson import java_double

# ---------------------------------------------------------------------------
# Java values: str = String, bool = Boolean, None = null, JInt/JLong, float = Double
# ---------------------------------------------------------------------------


class JInt(int):
    """A java.lang.Integer."""

    __slots__ = ()


class JLong(int):
    """A java.lang.Long."""

    __slots__ = ()


_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


#: bounds on a subscription's selector (Java has none): a hostile one costs no more than a normal parse
MAX_SELECTOR_LENGTH = 64 * 1024
MAX_SELECTOR_DEPTH = 128


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


_PARSE_EXC = "org.apache.rocketmq.filter.parser.ParseException"
_LEX_EXC = "org.apache.rocketmq.filter.parser.TokenMgrError"
_RUNTIME = "java.lang.RuntimeException"
_NFE = "java.lang.NumberFormatException"


def _nfe(text: str) -> str:
    return f'For input string: "{text}"'


_JAVA_INT = re.compile(r"[+-]?\d+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)",
)
_JAVA_HEX_DOUBLE = re.compile(r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?")


def _parse_integral(text: str, lo: int, hi: int) -> int:
    if not _JAVA_INT.fullmatch(text):
        raise EvalError(_nfe(text))
    if len(text.lstrip("+-").lstrip("0")) > 20:  # beyond any long; int() would refuse thousands of digits
        raise EvalError(_nfe(text))
    value = int(text)
    if not lo <= value <= hi:
        raise EvalError(_nfe(text))
    return value


def java_integer(text: str) -> JInt:
    """Integer.valueOf(String)."""
    return JInt(_parse_integral(text, _INT_MIN, _INT_MAX))


def java_long(text: str) -> JLong:
    """Long.valueOf(String)."""
    return JLong(_parse_integral(text, _LONG_MIN, _LONG_MAX))


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
    raise EvalError(_nfe(text))


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


def _java_equals(a: Any, b: Any) -> bool:
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


# ---------------------------------------------------------------------------
# The syntax tree
# ---------------------------------------------------------------------------


class Expr:
    """A compiled selector node. ``is_boolean`` is Java's ``instanceof BooleanExpression``."""

    is_boolean = False

    def evaluate(self, props: Mapping[str, str]) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def java_str(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_sql(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@dataclasses.dataclass(frozen=True)
class Const(Expr):
    """A literal: kind is "int", "long", "double", "string", "bool" or "null"."""

    kind: str
    value: Any

    @property
    def is_boolean(self) -> bool:  # type: ignore[override]
        return self.kind in ("bool", "null")  # TRUE, FALSE, NULL are BooleanConstantExpressions

    def evaluate(self, props: Mapping[str, str]) -> Any:
        return self.value

    def java_str(self) -> str:
        if self.kind == "null":
            return "NULL"
        if self.kind == "bool":
            return "TRUE" if self.value else "FALSE"
        if self.kind == "string":
            return _quote(self.value)
        if self.kind == "double":
            return java_double(self.value)
        return str(int(self.value))

    def to_sql(self) -> str:
        if self.kind == "double":
            return repr(float(self.value))
        return self.java_str()


NULL = Const("null", None)
TRUE = Const("bool", True)
FALSE = Const("bool", False)


@dataclasses.dataclass(frozen=True)
class Prop(Expr):
    name: str

    def evaluate(self, props: Mapping[str, str]) -> Any:
        return props.get(self.name)

    def java_str(self) -> str:
        return self.name

    def to_sql(self) -> str:
        return self.name


@dataclasses.dataclass(frozen=True)
class Neg(Expr):
    operand: Expr

    def evaluate(self, props: Mapping[str, str]) -> Any:
        v = self.operand.evaluate(props)
        t = type(v)
        if t is JInt:
            n = -int(v)
            return JInt(n - (1 << 32) if n > _INT_MAX else n)
        if t is JLong:
            n = -int(v)
            return JLong(n - (1 << 64) if n > _LONG_MAX else n)
        if t is float:
            return -v
        return None  # null, strings and booleans negate to null

    def java_str(self) -> str:
        return f"(- {self.operand.java_str()})"

    def to_sql(self) -> str:
        return f"(-{self.operand.to_sql()})"


@dataclasses.dataclass(frozen=True)
class Not(Expr):
    operand: Expr
    is_boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        v = self.operand.evaluate(props)
        if v is None:
            return None
        if type(v) is not bool:
            raise EvalError("java.lang.ClassCastException: not a Boolean")
        return not v

    def java_str(self) -> str:
        return f"(NOT {self.operand.java_str()})"

    def to_sql(self) -> str:
        return f"(NOT {self.operand.to_sql()})"


@dataclasses.dataclass(frozen=True)
class BoolCast(Expr):
    """A property used as a condition: its Boolean value, FALSE for any string."""

    operand: Expr
    is_boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        v = self.operand.evaluate(props)
        if v is None:
            return None
        return v if type(v) is bool else False

    def java_str(self) -> str:
        return self.operand.java_str()

    def to_sql(self) -> str:
        return self.operand.to_sql()


_JAVA_SYMBOL = {"=": "==", ">": ">", ">=": ">=", "<": "<", "<=": "<="}
_AS_BOOLEAN: dict[str, Callable[[int], bool]] = {
    "=": lambda c: c == 0,
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


@dataclasses.dataclass(frozen=True)
class Compare(Expr):
    """``=`` (also IS NULL: ``x = NULL``), ``>``, ``>=``, ``<``, ``<=``."""

    op: str
    left: Expr
    right: Expr
    is_boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        if self.op == "=":
            lv = self.left.evaluate(props)
            rv = self.right.evaluate(props)
            if (lv is None) != (rv is None):
                return None if lv is None else False
            if lv is None or _java_equals(lv, rv):
                return True
            return java_compare(lv, rv) == 0
        lv = self.left.evaluate(props)
        if lv is None:
            return None
        rv = self.right.evaluate(props)
        if rv is None:
            return None
        if type(lv) is str and type(rv) is str:
            try:
                lv, rv = java_double_of(lv), java_double_of(rv)
            except EvalError:
                raise EvalError("It's illegal to compare string by '>=', '>', '<', '<='.") from None
        return _AS_BOOLEAN[self.op](java_compare(lv, rv))

    def java_str(self) -> str:
        return f"({self.left.java_str()} {_JAVA_SYMBOL[self.op]} {self.right.java_str()})"

    def to_sql(self) -> str:
        if self.op == "=" and self.right == NULL:
            return f"({self.left.to_sql()} IS NULL)"
        return f"({self.left.to_sql()} {self.op} {self.right.to_sql()})"


@dataclasses.dataclass(frozen=True)
class In(Expr):
    operand: Prop
    values: tuple[str, ...]
    negated: bool = False
    is_boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        v = self.operand.evaluate(props)
        if type(v) is not str:
            return None
        return (v in self.values) != self.negated

    def java_str(self) -> str:
        sym = "NOT IN" if self.negated else "IN"
        return f"{self.operand.java_str()} {sym} ( {', '.join(self.values)} )"

    def to_sql(self) -> str:
        sym = "NOT IN" if self.negated else "IN"
        return f"({self.operand.to_sql()} {sym} ({', '.join(_quote(v) for v in self.values)}))"


@dataclasses.dataclass(frozen=True)
class _Junction(Expr):
    """AND / OR with SQL's three-valued logic: ``dominant`` decides alone, NULL beats the other value."""

    left: Expr
    right: Expr
    is_boolean = True
    dominant: ClassVar[bool]
    java_sym: ClassVar[str]
    sql_sym: ClassVar[str]

    def evaluate(self, props: Mapping[str, str]) -> Any:
        lv = _as_bool(self.left.evaluate(props))
        if lv is self.dominant:
            return self.dominant
        rv = _as_bool(self.right.evaluate(props))
        if rv is self.dominant:
            return self.dominant
        if lv is None or rv is None:
            return None
        return not self.dominant

    def java_str(self) -> str:
        return f"({self.left.java_str()} {self.java_sym} {self.right.java_str()})"

    def to_sql(self) -> str:
        return f"({self.left.to_sql()} {self.sql_sym} {self.right.to_sql()})"


class And(_Junction):
    dominant = False
    java_sym = "&&"
    sql_sym = "AND"


class Or(_Junction):
    dominant = True
    java_sym = "||"
    sql_sym = "OR"


def _as_bool(v: Any) -> bool | None:
    if v is None or type(v) is bool:
        return v
    raise EvalError("java.lang.ClassCastException: not a Boolean")


# -- node builders with Java's compile-time checks -----------------------------------


def _runtime(message: str) -> SelectorError:
    return SelectorError(_RUNTIME, message)


def _check_less_than_operand(e: Expr) -> None:
    if isinstance(e, Const):
        if e.kind in ("int", "long", "double"):
            return
        raise _runtime(f"Value '{e.java_str()}' cannot be compared.")
    if e.is_boolean:
        raise _runtime(f"Value '{e.java_str()}' cannot be compared.")


def _check_equal_operand(e: Expr) -> None:
    if isinstance(e, Const) and e.value is None:
        raise _runtime(f"'{e.java_str()}' cannot be compared.")


def make_equal(left: Expr, right: Expr) -> Expr:
    _check_equal_operand(left)
    _check_equal_operand(right)
    if isinstance(left, Const) and isinstance(right, Const) and left.is_boolean and not right.is_boolean:
        raise _runtime(f"'{left.java_str()}' cannot be compared with '{right.java_str()}'")
    return Compare("=", left, right)


def make_order(op: str, left: Expr, right: Expr) -> Expr:
    _check_less_than_operand(left)
    _check_less_than_operand(right)
    return Compare(op, left, right)


def make_between(value: Expr, low: Expr, high: Expr) -> Expr:
    if isinstance(low, Const) and isinstance(high, Const):
        if low.value is None or high.value is None:
            raise _runtime("Illegal values of between, values can not be null!")
        try:
            order = java_compare(high.value, low.value)
        except EvalError as exc:
            raise _runtime(f"{_NFE}: {exc}") from None
        if order < 0:
            raise _runtime(
                f"Illegal values of between, left value({_java_text(low.value)}) must less than or equal to "
                f"right value({_java_text(high.value)})"
            )
    return And(make_order(">=", value, low), make_order("<=", value, high))


def make_not_between(value: Expr, low: Expr, high: Expr) -> Expr:
    return Or(make_order("<", value, low), make_order(">", value, high))


def _java_text(v: Any) -> str:
    if type(v) is bool:
        return "true" if v else "false"
    if type(v) is float:
        return java_double(v)
    return str(v)


def make_in(left: Expr, values: list[str], negated: bool) -> Expr:
    if not isinstance(left, Prop):
        raise _runtime(f"Expected a property for In expression, got: {left.java_str()}")
    return In(left, tuple(values), negated)


def as_boolean(e: Expr) -> Expr:
    if e.is_boolean:
        return e
    if isinstance(e, Prop):
        return BoolCast(e)
    raise SelectorError(_PARSE_EXC, f"Expression will not result in a boolean value: {e.java_str()}")


# ---------------------------------------------------------------------------
# Tokens
# ---------------------------------------------------------------------------

KEYWORDS = ("NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS")
_PUNCT = ("<>", "<=", ">=", "=", ">", "<", "(", ",", ")", "+", "-")
_JAVACC_IMAGE = {
    "EOF": "<EOF>",
    "DECIMAL": "<DECIMAL_LITERAL>",
    "FLOAT": "<FLOATING_POINT_LITERAL>",
    "STRING": "<STRING_LITERAL>",
    "ID": "<ID>",
}

_WS = " \t\n\r\f"
_ID_RE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_STRING_RE = re.compile(r"'(?:''|[^'])*'")
_FLOAT_RES = (
    re.compile(r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?"),
    re.compile(r"\.[0-9]+(?:[eE][+-]?[0-9]+)?"),
    re.compile(r"[0-9]+[eE][+-]?[0-9]+"),
)
_DECIMAL_RE = re.compile(r"0|[1-9][0-9]*[lL]?")


@dataclasses.dataclass(frozen=True)
class Token:
    kind: str  # a keyword, a punctuation string, DECIMAL, FLOAT, STRING, ID or EOF
    image: str
    line: int
    column: int

    def describe(self) -> str:
        if self.kind == "EOF":
            return "<EOF>"
        kind = _JAVACC_IMAGE.get(self.kind, f'"{self.kind}"')
        return f' {kind} "{self.image} "'


class Lexer:
    """Tokens made on demand, as JavaCC's token manager does (only peeked ones are read)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.col = 0

    def _advance(self, n: int) -> None:
        for ch in self.text[self.pos : self.pos + n]:
            if ch == "\n" or ch == "\r":
                self.line += 1
                self.col = 0
            else:
                self.col += 1
        self.pos += n

    def _error(self, after: str = "") -> SelectorError:
        if self.pos >= len(self.text):
            found = "<EOF> "
        else:
            ch = self.text[self.pos]
            found = f'"{ch}" ({ord(ch)}), '
        return SelectorError(
            _LEX_EXC,
            f'Lexical error at line {self.line}, column {self.col + 1}.  Encountered: {found}after : "{after}"',
        )

    def _skip(self) -> None:
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in _WS:
                self._advance(1)
            elif text.startswith("--", self.pos):
                ends = [i for i in (text.find("\n", self.pos), text.find("\r", self.pos)) if i >= 0]
                if not ends:
                    return  # an unterminated line comment is no token: "-" "-" ... follow
                end = min(ends)
                end += 2 if text.startswith("\r\n", end) else 1
                self._advance(end - self.pos)
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self._error()
                self._advance(end + 2 - self.pos)
            else:
                return

    def next(self) -> Token:
        self._skip()
        text, pos = self.text, self.pos
        line, col = self.line, self.col + 1
        if pos >= len(text):
            return Token("EOF", "", line, col)
        ch = text[pos]
        m = _ID_RE.match(text, pos)
        if m:
            image = m.group()
            kind = image.upper() if image.upper() in KEYWORDS else "ID"
            self._advance(len(image))
            return Token(kind, image, line, col)
        if ch.isdigit() and ch.isascii() or (ch == "." and pos + 1 < len(text) and text[pos + 1].isdigit()):
            best, kind = "", ""
            d = _DECIMAL_RE.match(text, pos)
            if d:
                best, kind = d.group(), "DECIMAL"
            for rx in _FLOAT_RES:
                f = rx.match(text, pos)
                if f and len(f.group()) > len(best):
                    best, kind = f.group(), "FLOAT"
            if best:
                self._advance(len(best))
                return Token(kind, best, line, col)
        if ch == "'":
            s = _STRING_RE.match(text, pos)
            if not s:
                self._advance(len(text) - pos)
                raise self._error(after=text[pos:])
            self._advance(len(s.group()))
            return Token("STRING", s.group(), line, col)
        for p in _PUNCT:
            if text.startswith(p, pos):
                self._advance(len(p))
                return Token(p, p, line, col)
        raise self._error()


# ---------------------------------------------------------------------------
# The parser
# ---------------------------------------------------------------------------

_LITERAL_START = ("STRING", "DECIMAL", "FLOAT", "TRUE", "FALSE", "NULL")


class _Parser:
    def __init__(self, text: str) -> None:
        self.lexer = Lexer(text)
        self.tokens: list[Token] = []
        self.last: Token | None = None
        self.depth = 0

    def peek(self, k: int = 1) -> Token:
        while len(self.tokens) < k:
            if self.tokens and self.tokens[-1].kind == "EOF":
                return self.tokens[-1]
            self.tokens.append(self.lexer.next())
        return self.tokens[k - 1]

    def take(self) -> Token:
        tok = self.peek()
        self.tokens.pop(0)
        self.last = tok
        return tok

    def fail(self, expected: tuple[str, ...] = ()) -> SelectorError:
        tok = self.peek()
        msg = f'Encountered "{tok.describe()}" at line {tok.line}, column {tok.column}.'
        if expected:
            names = [_JAVACC_IMAGE.get(e, f'"{e}"') for e in expected]
            msg += "\nWas expecting" + (":" if len(names) == 1 else " one of:") + "\n    " + " ...\n    ".join(names)
            msg += " ...\n    "
        return SelectorError(_PARSE_EXC, msg)

    def expect(self, kind: str) -> Token:
        if self.peek().kind != kind:
            raise self.fail((kind,))
        return self.take()

    # grammar ------------------------------------------------------------------------
    def selector(self) -> Expr:
        return as_boolean(self.or_expr())

    def or_expr(self) -> Expr:
        left = self.and_expr()
        while self.peek().kind == "OR":
            self.take()
            right = self.and_expr()
            left = Or(as_boolean(left), as_boolean(right))
        return left

    def and_expr(self) -> Expr:
        left = self.equality()
        while self.peek().kind == "AND":
            self.take()
            right = self.equality()
            left = And(as_boolean(left), as_boolean(right))
        return left

    def equality(self) -> Expr:
        left = self.comparison()
        while True:
            kind = self.peek().kind
            if kind == "=":
                self.take()
                left = make_equal(left, self.comparison())
            elif kind == "<>":
                self.take()
                left = Not(make_equal(left, self.comparison()))
            elif kind == "IS":
                if self.peek(2).kind == "NULL":
                    self.take()
                    self.take()
                    left = Compare("=", left, NULL)
                else:
                    self.take()
                    self.expect("NOT")
                    self.expect("NULL")
                    left = Not(Compare("=", left, NULL))
            else:
                return left

    def comparison(self) -> Expr:
        left = self.unary()
        while True:
            kind = self.peek().kind
            if kind in (">", ">=", "<", "<="):
                self.take()
                left = make_order(kind, left, self.unary())
            elif kind == "BETWEEN":
                self.take()
                low = self.unary()
                self.expect("AND")
                left = make_between(left, low, self.unary())
            elif kind == "IN":
                self.take()
                left = make_in(left, self.string_list(), False)
            elif kind == "NOT":
                after = self.peek(2).kind
                if after == "BETWEEN":
                    self.take()
                    self.take()
                    low = self.unary()
                    self.expect("AND")
                    left = make_not_between(left, low, self.unary())
                elif after == "IN":
                    self.take()
                    self.take()
                    left = make_in(left, self.string_list(), True)
                else:
                    raise self.fail(("BETWEEN", "IN"))
            else:
                return left

    def string_list(self) -> list[str]:
        self.expect("(")
        values = [self.string()]
        while self.peek().kind == ",":
            self.take()
            values.append(self.string())
        self.expect(")")
        return values

    def string(self) -> str:
        image = self.expect("STRING").image
        return image[1:-1].replace("''", "'")

    def unary(self) -> Expr:
        # every nesting (a parenthesis, NOT, a sign) passes here: bound it before Python's stack is
        self.depth += 1
        try:
            if self.depth > MAX_SELECTOR_DEPTH:
                raise _runtime(f"selector nested deeper than {MAX_SELECTOR_DEPTH} levels")
            return self._unary()
        finally:
            self.depth -= 1

    def _unary(self) -> Expr:
        kind = self.peek().kind
        if kind == "+":
            self.take()
            return self.unary()
        if kind == "-":
            self.take()
            return Neg(self.unary())
        if kind == "NOT":
            self.take()
            return Not(as_boolean(self.unary()))
        return self.primary()

    def primary(self) -> Expr:
        tok = self.peek()
        if tok.kind in _LITERAL_START:
            return self.literal()
        if tok.kind == "ID":
            return Prop(self.take().image)
        if tok.kind == "(":
            self.take()
            inner = self.or_expr()
            self.expect(")")
            return inner
        raise self.fail(("+", "-", "NOT", "(", *_LITERAL_START, "ID"))

    def literal(self) -> Expr:
        tok = self.take()
        if tok.kind == "STRING":
            return Const("string", tok.image[1:-1].replace("''", "'"))
        if tok.kind == "TRUE":
            return TRUE
        if tok.kind == "FALSE":
            return FALSE
        if tok.kind == "NULL":
            return NULL
        if tok.kind == "DECIMAL":
            text = tok.image.rstrip("lL")
            # no int() on thousands of digits (Python refuses them with ValueError): too long is too big
            value = int(text) if len(text.lstrip("0")) <= 20 else _LONG_MAX + 1
            if value > _LONG_MAX:
                raise SelectorError(_NFE, _nfe(text))
            return Const("int", JInt(value)) if value <= _INT_MAX else Const("long", JLong(value))
        value_f = float(tok.image)
        if math.isinf(value_f):
            raise _runtime(f"{tok.image} is greater than 1.7976931348623157E308")
        if value_f < 5e-324:
            raise _runtime(f"{tok.image} is less than 4.9E-324")
        return Const("double", value_f)


def parse(text: str | None) -> Expr:
    """Compile a selector (SelectorParser.parse); raises :class:`SelectorError`."""
    if text is None:
        raise SelectorError("java.lang.NullPointerException", None)
    if len(text) > MAX_SELECTOR_LENGTH:
        raise _runtime(f"selector longer than {MAX_SELECTOR_LENGTH} characters")
    return _Parser(text).selector()


# ---------------------------------------------------------------------------
# Matching
# ---------------------------------------------------------------------------


def evaluate(expr: Expr, props: Mapping[str, str]) -> Any:
    """The selector's Java value for these properties (True, False, None); raises EvalError."""
    return expr.evaluate(props)


def matches(expr: Expr, props: Mapping[str, str]) -> bool:
    """ExpressionMessageFilter's verdict: only TRUE matches; an exception does not."""
    try:
        return expr.evaluate(props) is True
    except (EvalError, RecursionError, ValueError, ArithmeticError):
        # whatever a property's value makes the evaluation raise, Java's filter says: no match
        return False


class Selector:
    """A compiled SQL92 selector (``Selector(text).matches(props)``)."""

    __slots__ = ("text", "expr")

    def __init__(self, text: str) -> None:
        self.text = text
        self.expr = parse(text)

    def matches(self, props: Mapping[str, str]) -> bool:
        return matches(self.expr, props)

    def __repr__(self) -> str:
        return f"Selector({self.text!r})"


_CACHE: dict[str, Expr | SelectorError] = {}
_CACHE_SIZE = 100


def compile_cached(text: str) -> Expr:
    """parse() behind a small cache of results and failures, like Java's PARSE_CACHE."""
    hit = _CACHE.get(text)
    if hit is None:
        try:
            hit = parse(text)
        except SelectorError as exc:
            hit = exc
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[text] = hit
    if isinstance(hit, SelectorError):
        raise hit
    return hit


# ---------------------------------------------------------------------------
# Properties of a stored record (MessageDecoder.decodeProperties)
# ---------------------------------------------------------------------------

_I32 = struct.Struct(">i")
_U16 = struct.Struct(">H")


def record_properties(record: bytes | bytearray | memoryview) -> dict[str, str]:
    """The properties of one CommitLog record, read without decoding the rest."""
    from ..codecs.message import RECORD_SYS_FLAG_AT, record_field_at, string_to_properties

    (sys_flag,) = _I32.unpack_from(record, RECORD_SYS_FLAG_AT)
    pos = record_field_at("body", sys_flag)  # where the body length sits
    (body_len,) = _I32.unpack_from(record, pos)
    pos += 4 + max(body_len, 0)
    topic_len = record[pos]
    pos += 1 + topic_len
    (props_len,) = _U16.unpack_from(record, pos)
    pos += 2
    raw = bytes(record[pos : pos + props_len])
    return string_to_properties(raw.decode("utf-8", "replace")) if raw else {}


def iter_tokens(text: str) -> Iterator[Token]:
    """Every token of ``text`` up to EOF (a debugging aid)."""
    lexer = Lexer(text)
    while True:
        tok = lexer.next()
        yield tok
        if tok.kind == "EOF":
            return
