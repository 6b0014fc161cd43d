"""Fast ``struct`` forms of fixed-size layouts, derived from their construct definitions.

Hot loops (ConsumeQueue walks, IndexFile lookups, frame prefixes) read fixed-size units with
``struct`` rather than construct; deriving the format from the Struct keeps the construct
definition the only place the layout is written.
"""

from __future__ import annotations

import struct

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


__all__ = ["struct_unit"]
