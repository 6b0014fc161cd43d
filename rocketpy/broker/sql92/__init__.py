"""SQL92 message selectors, read and evaluated the way RocketMQ 4.9.8's filter module does.

Pure package: a lazy tokenizer (:mod:`.lexer`), a recursive-descent parser (:mod:`.parser`),
a syntax tree that evaluates over a message's properties (:mod:`.tree`; ``TAGS``, ``KEYS``
and every user property are plain strings) and Java's value semantics (:mod:`.values`).

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

Java's chains (``a OR b OR ...``, ``x = y = ...``) are left-deep trees of pairs evaluated recursively;
ours are one node of all the terms evaluated in a loop (same order, same verdicts, same ``toString``),
so a chain of thousands of terms needs no Python frame per term.
"""

from __future__ import annotations

from ...codecs.message import record_properties
from .lexer import KEYWORDS, Lexer, Token, iter_tokens
from .parser import MAX_SELECTOR_DEPTH, MAX_SELECTOR_LENGTH, Selector, compile_cached, parse
from .tree import (
    FALSE,
    NULL,
    TRUE,
    And,
    BoolCast,
    Compare,
    Const,
    EqualChain,
    Expr,
    In,
    Neg,
    Not,
    Or,
    Prop,
    as_boolean,
    evaluate,
    make_between,
    make_equal,
    make_in,
    make_not_between,
    make_order,
    matches,
)
from .values import (
    EvalError,
    JInt,
    JLong,
    SelectorError,
    java_boolean_of,
    java_compare,
    java_double_of,
    java_integer,
    java_long,
)

__all__ = [
    "FALSE",
    "KEYWORDS",
    "MAX_SELECTOR_DEPTH",
    "MAX_SELECTOR_LENGTH",
    "NULL",
    "TRUE",
    "And",
    "BoolCast",
    "Compare",
    "Const",
    "EqualChain",
    "EvalError",
    "Expr",
    "In",
    "JInt",
    "JLong",
    "Lexer",
    "Neg",
    "Not",
    "Or",
    "Prop",
    "Selector",
    "SelectorError",
    "Token",
    "as_boolean",
    "compile_cached",
    "evaluate",
    "iter_tokens",
    "java_boolean_of",
    "java_compare",
    "java_double_of",
    "java_integer",
    "java_long",
    "make_between",
    "make_equal",
    "make_in",
    "make_not_between",
    "make_order",
    "matches",
    "parse",
    "record_properties",
]
