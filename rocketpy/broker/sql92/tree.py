"""The syntax tree of a SQL92 selector: its nodes evaluate over a message's properties.

Node builders (``make_*``, :func:`as_boolean`) make Java's compile-time checks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from ...codecs.fastjson import java_double
from .values import (
    INT_MAX,
    LONG_MAX,
    NFE_EXC,
    PARSE_EXC,
    EvalError,
    JInt,
    JLong,
    SelectorError,
    java_compare,
    java_double_of,
    java_equals,
    runtime_error,
)


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
            return JInt(n - (1 << 32) if n > INT_MAX else n)
        if t is JLong:
            n = -int(v)
            return JLong(n - (1 << 64) if n > LONG_MAX else n)
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
            if lv is None or java_equals(lv, rv):
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


def _check_less_than_operand(e: Expr) -> None:
    if isinstance(e, Const):
        if e.kind in ("int", "long", "double"):
            return
        raise runtime_error(f"Value '{e.java_str()}' cannot be compared.")
    if e.is_boolean:
        raise runtime_error(f"Value '{e.java_str()}' cannot be compared.")


def _check_equal_operand(e: Expr) -> None:
    if isinstance(e, Const) and e.value is None:
        raise runtime_error(f"'{e.java_str()}' cannot be compared.")


def make_equal(left: Expr, right: Expr) -> Expr:
    _check_equal_operand(left)
    _check_equal_operand(right)
    if isinstance(left, Const) and isinstance(right, Const) and left.is_boolean and not right.is_boolean:
        raise runtime_error(f"'{left.java_str()}' cannot be compared with '{right.java_str()}'")
    return Compare("=", left, right)


def make_order(op: str, left: Expr, right: Expr) -> Expr:
    _check_less_than_operand(left)
    _check_less_than_operand(right)
    return Compare(op, left, right)


def make_between(value: Expr, low: Expr, high: Expr) -> Expr:
    if isinstance(low, Const) and isinstance(high, Const):
        if low.value is None or high.value is None:
            raise runtime_error("Illegal values of between, values can not be null!")
        try:
            order = java_compare(high.value, low.value)
        except EvalError as exc:
            raise runtime_error(f"{NFE_EXC}: {exc}") from None
        if order < 0:
            raise runtime_error(
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
        raise runtime_error(f"Expected a property for In expression, got: {left.java_str()}")
    return In(left, tuple(values), negated)


def as_boolean(e: Expr) -> Expr:
    if e.is_boolean:
        return e
    if isinstance(e, Prop):
        return BoolCast(e)
    raise SelectorError(PARSE_EXC, f"Expression will not result in a boolean value: {e.java_str()}")


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
