"""Dicts that know the iteration order of the java.util.HashMap / HashSet they stand for.

Java's NameServer writes its tables in HashMap bucket order; to answer with the
same bytes we keep insertion order (a Python dict does) and the table capacity,
which only grows, as in Java.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

from ..codecs.javalang import hashmap_order, table_size_for

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class JavaHashMap(dict[K, V]):
    """A dict tracking the capacity its Java HashMap would have. Assign with ``[]`` only."""

    __slots__ = ("capacity",)

    def __init__(self, initial_capacity: int = 16) -> None:
        super().__init__()
        self.capacity = table_size_for(max(initial_capacity, 1))

    def __setitem__(self, key: K, value: V) -> None:
        dict.__setitem__(self, key, value)
        if len(self) > self.capacity * 3 // 4:
            while len(self) > self.capacity * 3 // 4:
                self.capacity <<= 1

    def java_keys(self) -> list[K]:
        return hashmap_order(self.keys(), self.capacity)

    def java_values(self) -> list[V]:
        return [self[k] for k in self.java_keys()]

    def java_view(self) -> dict[K, V]:
        """A plain dict in Java iteration order."""
        return {k: self[k] for k in self.java_keys()}


class JavaHashSet(JavaHashMap[K, None]):
    """A HashSet: keys only."""

    __slots__ = ()

    def add(self, key: K) -> None:
        self[key] = None

    def discard(self, key: K) -> bool:
        return self.pop(key, 0) is None


def hash_set_order(items: Iterable[K]) -> list[K]:
    """Order of a fresh ``new HashSet<>()`` after adding ``items`` in turn."""
    return hashmap_order(items, 16)
