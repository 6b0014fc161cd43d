"""Java semantics the wire depends on: String.hashCode and HashMap iteration order.

Java puts header fields and many body maps into a HashMap before serialising them,
so the order on the wire is the map's bucket order. Reproducing it lets our servers
emit the very bytes a Java server would.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)

_MASK32 = 0xFFFFFFFF


def to_int32(value: int) -> int:
    """Wrap an integer to Java's signed 32-bit range."""
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: 31-polynomial over UTF-16 code units, signed 32-bit."""
    h = 0
    if text.isascii():
        for ch in text.encode("ascii"):
            h = (31 * h + ch) & _MASK32
    else:
        units = text.encode("utf-16-be")
        for i in range(0, len(units), 2):
            h = (31 * h + ((units[i] << 8) | units[i + 1])) & _MASK32
    return to_int32(h)


def java_hash(key: object) -> int:
    """hashCode() of the boxed Java value a Python key stands for (String, Integer, Long)."""
    if isinstance(key, str):
        return java_string_hash(key)
    if isinstance(key, bool):
        return 1231 if key else 1237
    if isinstance(key, int):
        if -(1 << 31) <= key < (1 << 31):
            return key  # Integer.hashCode (and Long.hashCode agrees in this range)
        v = key & 0xFFFFFFFFFFFFFFFF
        return to_int32(v ^ (v >> 32))
    raise TypeError(f"no Java hashCode for {type(key).__name__}")


def _spread(h: int) -> int:
    h &= _MASK32
    return h ^ (h >> 16)


def _table_size_for(cap: int) -> int:
    n = 1
    while n < cap:
        n <<= 1
    return n


def hashmap_order(keys: Iterable[K], initial_capacity: int = 16) -> list[K]:
    """The iteration order of a java.util.HashMap filled with ``keys`` in this order.

    Buckets are visited in index order; within a bucket, insertion order is kept
    (resizes split buckets without reordering, and bins small enough not to treeify).
    """
    ordered = list(dict.fromkeys(keys))
    capacity = _table_size_for(max(initial_capacity, 1))
    while len(ordered) > capacity * 3 // 4:
        capacity <<= 1
    mask = capacity - 1
    slots = sorted(range(len(ordered)), key=lambda i: (_spread(java_hash(ordered[i])) & mask, i))
    return [ordered[i] for i in slots]


def concurrent_hashmap_order(keys: Iterable[K], initial_capacity: int = 16) -> list[K]:
    """Approximate iteration order of a ConcurrentHashMap(initial_capacity).

    Its table is sized tableSizeFor(c + c/2 + 1) and the spread hash drops the sign bit.
    Exact except for keys sharing a bucket across a resize.
    """
    ordered = list(dict.fromkeys(keys))
    capacity = _table_size_for(initial_capacity + (initial_capacity >> 1) + 1)
    while len(ordered) >= capacity - (capacity >> 2):
        capacity <<= 1
    mask = capacity - 1
    slots = sorted(
        range(len(ordered)),
        key=lambda i: ((_spread(java_hash(ordered[i])) & 0x7FFFFFFF) & mask, i),
    )
    return [ordered[i] for i in slots]
