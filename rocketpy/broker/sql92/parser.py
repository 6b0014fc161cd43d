"""The SQL92 selector's recursive-descent parser (SelectorParser) and its compiled-selector cache."""

from __future__ import annotations

import math
from collections.abc import Mapping

from .lexer import JAVACC_IMAGE, Lexer, Token
from .tree import (
    FALSE,
    NULL,
    TRUE,
    And,
    Compare,
    Const,
    Expr,
    Neg,
    Not,
    Or,
    Prop,
    as_boolean,
    chain_equalities,
    make_between,
    make_equal,
    make_in,
    make_not_between,
    make_order,
    matches,
)
from .values import INT_MAX, LONG_MAX, NFE_EXC, PARSE_EXC, JInt, JLong, SelectorError, nfe_message, runtime_error

#: bounds on a subscription's selector (Java has none): a hostile one costs no more than a normal parse
MAX_SELECTOR_LENGTH = 64 * 1024
MAX_SELECTOR_DEPTH = 128

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
            names = [JAVACC_IMAGE.get(e, f'"{e}"') for e in expected]
            msg += "\nWas expecting" + (":" if len(names) == 1 else " one of:") + "\n    " + " ...\n    ".join(names)
            msg += " ...\n    "
        return SelectorError(PARSE_EXC, msg)

    def expect(self, kind: str) -> Token:
        if self.peek().kind != kind:
            raise self.fail((kind,))
        return self.take()

    # grammar ------------------------------------------------------------------------
    def selector(self) -> Expr:
        return as_boolean(self.or_expr())

    # a chain (a OR b OR ...) is one node of all its terms, not Java's left-deep tree of pairs: the same
    # evaluation without a Python frame per term (see tree._Junction, tree.EqualChain)
    def or_expr(self) -> Expr:
        left = self.and_expr()
        terms: list[Expr] = []
        while self.peek().kind == "OR":
            self.take()
            right = self.and_expr()
            if not terms:
                terms.append(as_boolean(left))
            terms.append(as_boolean(right))
        return Or(*terms) if terms else left

    def and_expr(self) -> Expr:
        left = self.equality()
        terms: list[Expr] = []
        while self.peek().kind == "AND":
            self.take()
            right = self.equality()
            if not terms:
                terms.append(as_boolean(left))
            terms.append(as_boolean(right))
        return And(*terms) if terms else left

    def equality(self) -> Expr:
        left = self.comparison()
        steps = 0
        while True:
            steps += 1
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
                return chain_equalities(left, steps - 1)

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
                raise runtime_error(f"selector nested deeper than {MAX_SELECTOR_DEPTH} levels")
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
            value = int(text) if len(text.lstrip("0")) <= 20 else LONG_MAX + 1
            if value > LONG_MAX:
                raise SelectorError(NFE_EXC, nfe_message(text))
            return Const("int", JInt(value)) if value <= INT_MAX else Const("long", JLong(value))
        value_f = float(tok.image)
        if math.isinf(value_f):
            raise runtime_error(f"{tok.image} is greater than 1.7976931348623157E308")
        if value_f < 5e-324:
            raise runtime_error(f"{tok.image} is less than 4.9E-324")
        return Const("double", value_f)


def parse(text: str | None) -> Expr:
    """Compile a selector (SelectorParser.parse); raises :class:`SelectorError`."""
    if text is None:
        raise SelectorError("java.lang.NullPointerException", None)
    if len(text) > MAX_SELECTOR_LENGTH:
        raise runtime_error(f"selector longer than {MAX_SELECTOR_LENGTH} characters")
    return _Parser(text).selector()


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


#: compiled selectors, and the failures as (java_class, message): a cached exception object would be
#: raised again each time, and every raise adds the caller's frames to its traceback, so a consumer
#: heartbeating with a bad expression would keep each of its requests alive
_CACHE: dict[str, Expr | tuple[str, str | None]] = {}
_CACHE_SIZE = 100
#: longer expressions are compiled each time, not kept: a consumer's filter is a line or two, while 100
#: of 64 KB kept 230 MB of trees, and 100 refused ones of megabytes their whole text
_CACHED_LENGTH = 2048


def compile_cached(text: str) -> Expr:
    """parse() behind a small cache of results and failures, like Java's PARSE_CACHE."""
    hit = _CACHE.get(text)
    if hit is None:
        try:
            hit = parse(text)
        except SelectorError as exc:
            hit = (exc.java_class, exc.message)
        if len(text) <= _CACHED_LENGTH:
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[text] = hit
    if isinstance(hit, tuple):
        raise SelectorError(*hit)
    return hit
