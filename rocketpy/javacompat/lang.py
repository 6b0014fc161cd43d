"""java.lang semantics the wire depends on: integer parsing and overflow, String.hashCode, hashCode of
the boxed values a map key stands for."""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Callable
from operator import mul
from typing import Any

from ..accel import compiled

_MASK32 = 0xFFFFFFFF


def java_split(text: str, sep: str) -> list[str]:
    """String.split(sep) for a plain separator: trailing empty parts dropped (``"T@".split("@")`` is one
    part, ``"@"`` none)."""
    if sep not in text:
        return [text]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def to_int32(value: int) -> int:
    """Wrap an integer to Java's signed 32-bit range."""
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def to_int64(value: int) -> int:
    """Wrap an integer to Java's signed 64-bit range (long arithmetic overflows silently)."""
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value & (1 << 63) else value


# sign, leading zeros, then at most 19 significant digits: a Java long never needs more, and
# int() refuses strings of over 4300 digits with a ValueError of its own
_JAVA_INTEGER = re.compile(r"([-+]?)0*([0-9]{1,19})\Z")


@functools.cache
def _bmp_digits() -> dict[int, int]:
    """Character.digit(ch, 10) beyond ASCII: every decimal digit of the Basic Multilingual Plane (a char;
    one beyond it is two surrogates, neither a digit), as its ASCII digit. Python's table and Java 17's
    agree (Java 8's, of Unicode 6.2, lacks U+0DE6-0DEF and U+A9F0-A9F9). Made on first use: a scan of
    65,536 chars (2.6 ms) that every process importing the codecs would pay otherwise."""
    return {c: ord("0") + d for c in range(0x80, 0x10000) if (d := unicodedata.decimal(chr(c), -1)) >= 0}


def parse_java_int(text: str, bits: int = 32) -> int | None:
    """Integer.parseInt (``bits=32``) or Long.parseLong (64) of ``text``; None where Java throws.

    An optional ASCII sign and decimal digits of any script (as Character.digit reads them), in range;
    any number of leading zeros.
    """
    if not text.isascii():
        text = text.translate(_bmp_digits())
        if not text.isascii():
            return None
    m = _JAVA_INTEGER.match(text)
    if m is None:
        return None
    value = int(m.group(1) + m.group(2))
    limit = 1 << (bits - 1)
    return value if -limit <= value < limit else None


_HASH_CHUNK = 256
#: _HASH_POW[i] = 31 ** (_HASH_CHUNK - 1 - i) mod 2**32: a whole polynomial in one C-level sum
_HASH_POW = [pow(31, _HASH_CHUNK - 1 - i, 1 << 32) for i in range(_HASH_CHUNK)]
_NATIVE_UTF16 = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def java_string_hash_py(text: str) -> int:
    """Java's String.hashCode: 31-polynomial over UTF-16 code units, signed 32-bit.

    The sum of unit * 31**(n-1-i), taken mod 2**32 at the end (the Horner loop in
    :func:`java_string_hash_reference` wraps at every step; the result is the same).
    """
    if text.isascii():
        units: Any = text.encode("ascii")
        n = len(units)
        if n < 12:  # short strings: the plain loop is quicker
            h = 0
            for ch in units:
                h = 31 * h + ch
            return to_int32(h)
    else:
        units = memoryview(text.encode(_NATIVE_UTF16)).cast("H")
        n = len(units)
    if n <= _HASH_CHUNK:
        return to_int32(sum(map(mul, units, _HASH_POW[_HASH_CHUNK - n :])))
    h = 0
    for start in range(0, n, _HASH_CHUNK):
        chunk = units[start : start + _HASH_CHUNK]
        m = len(chunk)
        h = (h * pow(31, m, 1 << 32) + sum(map(mul, chunk, _HASH_POW[_HASH_CHUNK - m :]))) & _MASK32
    return to_int32(h)


#: String.hashCode: the compiled twin when built (accel), else the pure function above
java_string_hash: Callable[[str], int] = compiled("java_string_hash") or java_string_hash_py


def java_string_hash_reference(text: str) -> int:
    """String.hashCode exactly as Java computes it (the checked reference of the fast one)."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & _MASK32
    return to_int32(h)


def java_hash(key: object) -> int:
    """hashCode() of the boxed Java value a Python key stands for (String, Integer, Long)."""
    if isinstance(key, str):
        return java_string_hash(key)
    if key is None:
        return 0  # HashMap.hash(null)
    if isinstance(key, bool):
        return 1231 if key else 1237
    if isinstance(key, int):
        if -(1 << 31) <= key < (1 << 31):
            return key  # Integer.hashCode (and Long.hashCode agrees in this range)
        v = key & 0xFFFFFFFFFFFFFFFF
        return to_int32(v ^ (v >> 32))
    raise TypeError(f"no Java hashCode for {type(key).__name__}")
