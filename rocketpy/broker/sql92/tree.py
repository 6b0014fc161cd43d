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
        return _not(self.operand.evaluate(props))

    def java_str(self) -> str:
        return f"(NOT {self.operand.java_str()})"

    def to_sql(self) -> str:
        return f"(NOT {self.operand.to_sql()})"


def _not(v: Any) -> Any:
    if v is None:
        return None
    if type(v) is not bool:
        raise EvalError("java.lang.ClassCastException: not a Boolean")
    return not v


def _equal(lv: Any, rv: Any) -> Any:
    """ComparisonExpression's ``=``: NULL when only the left is null, FALSE when only the right is."""
    if (lv is None) != (rv is None):
        return None if lv is None else False
    if lv is None or java_equals(lv, rv):
        return True
    return java_compare(lv, rv) == 0


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
            return _equal(lv, self.right.evaluate(props))
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


@dataclasses.dataclass(frozen=True, init=False)
class _Junction(Expr):
    """AND / OR of two or more terms with SQL's three-valued logic.

    ``a OR b OR c`` is Java's left-deep ``((a || b) || c)``; one node with the terms in order is the
    same evaluation (left to right, stopping at the first ``dominant`` value, which decides alone; else
    NULL beats the other value) in a loop, so a chain of thousands of terms does not recurse per term.
    """

    terms: tuple[Expr, ...]
    is_boolean = True
    dominant: ClassVar[bool]
    java_sym: ClassVar[str]
    sql_sym: ClassVar[str]

    def __init__(self, *terms: Expr) -> None:
        if len(terms) < 2:
            raise TypeError(f"{type(self).__name__} needs two terms or more")
        object.__setattr__(self, "terms", terms)

    def evaluate(self, props: Mapping[str, str]) -> Any:
        dominant = self.dominant
        unknown = False
        for term in self.terms:
            v = term.evaluate(props)
            if v is dominant:
                return dominant
            if v is None:
                unknown = True
            elif type(v) is not bool:
                raise EvalError("java.lang.ClassCastException: not a Boolean")
        return None if unknown else not dominant

    def java_str(self) -> str:
        first, *rest = self.terms
        return "(" * len(rest) + first.java_str() + "".join(f" {self.java_sym} {t.java_str()})" for t in rest)

    def to_sql(self) -> str:
        return "(" + f" {self.sql_sym} ".join(t.to_sql() for t in self.terms) + ")"


class And(_Junction):
    dominant = False
    java_sym = "&&"
    sql_sym = "AND"


class Or(_Junction):
    dominant = True
    java_sym = "||"
    sql_sym = "OR"


@dataclasses.dataclass(frozen=True)
class EqualChain(Expr):
    """``x = y <> z IS NULL ...``: two or more equality steps after one operand.

    Java's left-deep chain of ComparisonExpressions (``((x == y) == z)``) evaluated in a loop, left to
    right as Java does, so thousands of steps do not recurse per step. A step is (negated, right):
    ``=`` (False, y), ``<>`` (True, y), ``IS NULL`` (False, NULL), ``IS NOT NULL`` (True, NULL).
    """

    operand: Expr
    steps: tuple[tuple[bool, Expr], ...]
    is_boolean = True

    def evaluate(self, props: Mapping[str, str]) -> Any:
        v = self.operand.evaluate(props)
        for negated, right in self.steps:
            v = _equal(v, right.evaluate(props))
            if negated:
                v = _not(v)
        return v

    def java_str(self) -> str:
        opens = "".join("(NOT (" if negated else "(" for negated, _ in reversed(self.steps))
        closes = "".join(f" == {right.java_str()}){')' if negated else ''}" for negated, right in self.steps)
        return opens + self.operand.java_str() + closes

    def to_sql(self) -> str:
        def step(negated: bool, right: Expr) -> str:
            if right == NULL:
                return " IS NOT NULL" if negated else " IS NULL"
            return f" {'<>' if negated else '='} {right.to_sql()}"

        return "(" + self.operand.to_sql() + "".join(step(n, r) for n, r in self.steps) + ")"


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


def chain_equalities(left: Expr, count: int) -> Expr:
    """The last ``count`` equality steps the parser made on ``left`` (a left-deep spine of ``Compare("=")``,
    under a ``Not`` for ``<>`` and IS NOT NULL) as one :class:`EqualChain`; one step stays as it is."""
    if count < 2:
        return left
    steps: list[tuple[bool, Expr]] = []
    for _ in range(count):
        negated = isinstance(left, Not)
        node = left.operand if isinstance(left, Not) else left
        assert isinstance(node, Compare) and node.op == "="
        steps.append((negated, node.right))
        left = node.left
    steps.reverse()
    return EqualChain(left, tuple(steps))


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
