"""What a pull filters on: the MessageFilter protocol and tag subscriptions (Java's MessageFilter and
ExpressionMessageFilter on tag hash codes)."""

from __future__ import annotations

from typing import Protocol

from ..javacompat.lang import java_string_hash, to_int32

__all__ = ["MessageFilter", "TagFilter"]


class MessageFilter(Protocol):
    """What a pull filters on (Java's MessageFilter)."""

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool: ...

    def is_matched_by_commit_log(self, record: bytes) -> bool: ...


class TagFilter:
    """Tag subscription ("TagA || TagB", "*"), matched on tag hash codes like ExpressionMessageFilter."""

    def __init__(self, expression: str | None = "*") -> None:
        expr = (expression or "").strip()
        self.all = expr in ("", "*")
        self.tags = [] if self.all else [t.strip() for t in expr.split("||") if t.strip()]
        self.codes = {java_string_hash(t) for t in self.tags}

    def is_matched_by_consume_queue(self, tags_code: int | None) -> bool:
        if tags_code is None or self.all:
            return True
        return to_int32(tags_code) in self.codes  # Java compares tagsCode.intValue()

    def is_matched_by_commit_log(self, record: bytes) -> bool:
        return True
