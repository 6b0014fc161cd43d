"""Fast ``struct`` forms of fixed-size layouts, derived from their construct definitions.

Hot loops (ConsumeQueue walks, IndexFile lookups, frame prefixes) read fixed-size units with
``struct`` rather than construct; deriving the format from the Struct keeps the construct
definition the only place the layout is written.
"""

from __future__ import annotations

import struct
from collections.abc import Collection

import construct as cs


def struct_unit(definition: cs.Struct, fields: int | None = None) -> struct.Struct:
    """The ``struct.Struct`` of ``definition``'s first ``fields`` fields (all by default).

    Each must be a big-endian integer field (``Int32sb`` ...), possibly renamed or a ``Const``;
    anything else raises TypeError at import time, where a layout change would show first.
    """
    fmt = ">"
    for sub in definition.subcons[:fields]:
        inner = sub
        while isinstance(inner, (cs.Renamed, cs.Const)):
            inner = inner.subcon
        if not isinstance(inner, cs.FormatField) or inner.fmtstr[:1] != ">":
            raise TypeError(f"{sub.name or sub!r} is not a big-endian fixed-size integer field")
        fmt += inner.fmtstr[1:]
    return struct.Struct(fmt)


def head_format(definition: cs.Struct, wide: Collection[str] = ()) -> str:
    """The struct format of ``definition`` from its start to the length prefix of its first
    length-prefixed field (included): big-endian integers, and ``IfThenElse`` byte fields (a record's
    hosts) as their then-branch when named in ``wide``, else their else-branch."""
    fmt = ">"
    for sub in definition.subcons:
        inner = sub
        while isinstance(inner, (cs.Renamed, cs.Const)):
            inner = inner.subcon
        if isinstance(inner, cs.FormatField) and inner.fmtstr[:1] == ">":
            fmt += inner.fmtstr[1:]
        elif isinstance(inner, cs.IfThenElse):
            fmt += f"{(inner.thensubcon if sub.name in wide else inner.elsesubcon).sizeof()}s"
        elif isinstance(inner, cs.Prefixed) and isinstance(inner.lengthfield, cs.FormatField):
            return fmt + inner.lengthfield.fmtstr[1:]
        else:
            raise TypeError(f"{sub.name or sub!r} is neither a fixed-size field nor a length prefix")
    return fmt


__all__ = ["head_format", "struct_unit"]
