"""Kept for the client's and the Spark package's imports: these live in :mod:`rocketpy.javacompat`."""

from ..javacompat.hashmap import (
    concurrent_hashmap_order,
    hashmap_dict,
    hashmap_key_order,
    hashmap_order,
    table_size_for,
)
from ..javacompat.lang import (
    java_hash,
    java_string_hash,
    java_string_hash_py,
    java_string_hash_reference,
    parse_java_int,
    to_int32,
    to_int64,
)

__all__ = [
    "concurrent_hashmap_order",
    "hashmap_dict",
    "hashmap_key_order",
    "hashmap_order",
    "java_hash",
    "java_string_hash",
    "java_string_hash_py",
    "java_string_hash_reference",
    "parse_java_int",
    "table_size_for",
    "to_int32",
    "to_int64",
]
