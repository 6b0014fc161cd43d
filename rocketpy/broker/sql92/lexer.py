"""The SQL92 selector's tokens, made on demand the way JavaCC's token manager makes them."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator

from .values import LEX_EXC, SelectorError

KEYWORDS = ("NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS")
_PUNCT = ("<>", "<=", ">=", "=", ">", "<", "(", ",", ")", "+", "-")
JAVACC_IMAGE = {
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
        kind = JAVACC_IMAGE.get(self.kind, f'"{self.kind}"')
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
            LEX_EXC,
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


def iter_tokens(text: str) -> Iterator[Token]:
    """Every token of ``text`` up to EOF (a debugging aid)."""
    lexer = Lexer(text)
    while True:
        tok = lexer.next()
        yield tok
        if tok.kind == "EOF":
            return
