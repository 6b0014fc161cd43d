"""The iteration order of java.util.HashMap, HashSet and ConcurrentHashMap, and dicts that know it.

Java puts header fields and many body maps into a HashMap before serialising them, so the order on
the wire is the map's bucket order; reproducing it lets our servers emit the very bytes a Java server
would. Java's NameServer writes its tables in HashMap bucket order too: :class:`JavaHashMap` keeps
insertion order (a Python dict does) and the table capacity, which only grows, as in Java.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Iterable
from typing import TypeVar

from .lang import java_hash

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_MASK32 = 0xFFFFFFFF


def _spread(h: int) -> int:
    h &= _MASK32
    return h ^ (h >> 16)


def table_size_for(cap: int) -> int:
    """HashMap.tableSizeFor: the power of two a table of ``cap`` entries gets."""
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
    capacity = table_size_for(max(initial_capacity, 1))
    while len(ordered) > capacity * 3 // 4:
        capacity <<= 1
    mask = capacity - 1
    slots = sorted(range(len(ordered)), key=lambda i: (_spread(java_hash(ordered[i])) & mask, i))
    return [ordered[i] for i in slots]


@functools.lru_cache(maxsize=4096)
def hashmap_key_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    """hashmap_order for a tuple of keys, cached: servers see the same few key sets again and again."""
    return tuple(hashmap_order(keys))


#: a message's property names longer than this in all are ordered without the cache: a producer may
#: make up any names (megabytes of them before the store refuses the message), and 4,096 such key sets
#: were kept whole
PROPERTY_KEYS_CACHED_LENGTH = 512


def property_key_order(keys: tuple[str, ...]) -> tuple[str, ...]:
    """hashmap_key_order for a message's property names, which a peer chose: short sets cached."""
    if sum(map(len, keys)) > PROPERTY_KEYS_CACHED_LENGTH:
        return tuple(hashmap_order(keys))
    return hashmap_key_order(keys)


def hashmap_dict(d: dict[str, str]) -> dict[str, str]:
    """``d`` reordered as a java.util.HashMap holding its items would iterate them."""
    return {k: d[k] for k in hashmap_key_order(tuple(d))}


def concurrent_hashmap_order(keys: Iterable[K], initial_capacity: int = 16) -> list[K]:
    """Approximate iteration order of a ConcurrentHashMap(initial_capacity).

    Its table is sized tableSizeFor(c + c/2 + 1) and the spread hash drops the sign bit.
    Exact except for keys sharing a bucket across a resize.
    """
    ordered = list(dict.fromkeys(keys))
    capacity = table_size_for(initial_capacity + (initial_capacity >> 1) + 1)
    while len(ordered) >= capacity - (capacity >> 2):
        capacity <<= 1
    mask = capacity - 1
    slots = sorted(
        range(len(ordered)),
        key=lambda i: ((_spread(java_hash(ordered[i])) & 0x7FFFFFFF) & mask, i),
    )
    return [ordered[i] for i in slots]


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
