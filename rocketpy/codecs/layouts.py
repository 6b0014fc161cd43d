"""Byte offsets and sizes of the fixed layouts, computed from their construct definitions.

The construct Structs (``frame.ROCKETMQ_HEADER``, ``message.MESSAGE_RECORD``,
``store_records.CONSUME_QUEUE_ENTRY`` / ``INDEX_HEADER`` / ``INDEX_ENTRY``) are where each layout is
written; everything that needs a layout's numbers without construct takes them from here:

* the compiled code, through ``rocketpy/_layouts.pxi`` (:func:`render_pxi`, written by
  ``tools/gen_layouts.py``; a test fails when it is stale);
* the Wireshark dissector ``codecs/rocketmq.lua`` (``sniffer.lua`` fills its template from :data:`LUA`);
* the struct formats beside the definitions come from ``units.struct_unit`` and ``units.head_format``.

A record's hosts are 4 or 16 bytes, so its offsets are given per segment: from the record's start up
to the born host, from the end of the born host up to the store host, and from the end of the store
host up to the body.
"""

from __future__ import annotations

from typing import Any

import construct as cs

from .frame import EXT_FIELD, FRAME_PREFIX, ROCKETMQ_HEADER
from .record import MESSAGE_MAGIC_CODE, MESSAGE_RECORD
from .store_records import CONSUME_QUEUE_ENTRY, INDEX_ENTRY, INDEX_HASH_SLOT_SIZE, INDEX_HEADER

__all__ = ["LUA", "PXI_CONSTANTS", "field_offsets", "record_segments", "render_pxi"]


def _strip(sub: Any) -> Any:
    """The construct under names, constants, adapters and string encodings."""
    while isinstance(sub, (cs.Renamed, cs.Const, cs.Adapter, cs.StringEncoded)):
        sub = sub.subcon
    return sub


def field_offsets(definition: cs.Struct) -> dict[str, int]:
    """Offset of each named field up to the first one whose size is not fixed, and ``"<end>"`` where
    the fixed part ends; a length-prefixed field counts as its prefix (its offset is the prefix's)."""
    out: dict[str, int] = {}
    pos = 0
    for sub in definition.subcons:
        inner = _strip(sub)
        if sub.name:
            out[sub.name] = pos
        if isinstance(inner, cs.FormatField):
            pos += inner.sizeof()
        elif isinstance(inner, cs.Prefixed):
            pos += _strip(inner.lengthfield).sizeof()
            break
        else:
            break
    out["<end>"] = pos
    return out


def record_segments() -> list[dict[str, int]]:
    """MESSAGE_RECORD's fixed-size fields by segment (see the module docstring): three dicts of
    field -> offset from the segment's start, each with ``"<end>"``; the last ends past the body's
    length prefix."""
    segments: list[dict[str, int]] = [{}]
    pos = 0
    for sub in MESSAGE_RECORD.subcons:
        inner = _strip(sub)
        if isinstance(inner, cs.FormatField):
            segments[-1][sub.name] = pos
            pos += inner.sizeof()
        elif isinstance(inner, cs.IfThenElse):  # a host: 4 or 16 bytes
            segments[-1][sub.name] = pos
            segments[-1]["<end>"] = pos
            segments.append({})
            pos = 0
        elif isinstance(inner, cs.Prefixed):  # the body: the first variable field
            segments[-1][sub.name] = pos
            segments[-1]["<end>"] = pos + _strip(inner.lengthfield).sizeof()
            break
    return segments


def _prefix_size(name: str) -> int:
    for sub in MESSAGE_RECORD.subcons:
        if sub.name == name:
            return int(_strip(_strip(sub).lengthfield).sizeof())
    raise KeyError(name)


def _record_fixed_len() -> int:
    """A record's size less its two hosts, body, topic and properties (CommitLog.calMsgLength's constant)."""
    return sum(s["<end>"] for s in record_segments()) + _prefix_size("topic") + _prefix_size("properties")


_SEGMENT_SUFFIX = ("AT", "AFTER_BORN_HOST", "AFTER_STORE_HOST")


def _constants() -> dict[str, int]:
    c: dict[str, int] = {}
    c["FRAME_PREFIX_SIZE"] = FRAME_PREFIX.sizeof()
    # the ROCKETMQ binary header: the fixed fields, then the remark's length and the ext fields' length
    head = field_offsets(ROCKETMQ_HEADER)
    for name in ("code", "language", "version", "opaque", "flag"):
        c[f"BIN_{name.upper()}_AT"] = head[name]
    c["BIN_REMARK_LEN_AT"] = head["remark"]
    c["BIN_REMARK_AT"] = head["<end>"]
    ext_prefix = next(_strip(s).lengthfield for s in ROCKETMQ_HEADER.subcons if s.name == "ext_fields")
    c["BIN_EXT_LEN_SIZE"] = _strip(ext_prefix).sizeof()
    c["BIN_HEADER_MIN"] = head["<end>"] + c["BIN_EXT_LEN_SIZE"]  # remark and ext fields empty
    ext = [_strip(_strip(s).lengthfield).sizeof() for s in EXT_FIELD.subcons]
    c["EXT_KEY_LEN_SIZE"], c["EXT_VALUE_LEN_SIZE"] = ext
    # the CommitLog record
    for suffix, segment in zip(_SEGMENT_SUFFIX, record_segments()):
        for name, at in segment.items():
            if name == "<end>":
                continue
            key = "BODY_LEN" if name == "body" else name.upper()
            c[f"REC_{key}_{suffix}"] = at
        c[f"REC_SEGMENT{_SEGMENT_SUFFIX.index(suffix)}_END"] = segment["<end>"]
    c["REC_TOPIC_LEN_SIZE"] = _prefix_size("topic")
    c["REC_PROPERTIES_LEN_SIZE"] = _prefix_size("properties")
    c["REC_FIXED_LEN"] = _record_fixed_len()
    host = _strip(next(s for s in MESSAGE_RECORD.subcons if s.name == "born_host"))
    c["REC_HOST_V4_SIZE"], c["REC_HOST_V6_SIZE"] = host.elsesubcon.sizeof(), host.thensubcon.sizeof()
    c["REC_PORT_SIZE"] = _strip(next(s for s in MESSAGE_RECORD.subcons if s.name == "born_port")).sizeof()
    # the ConsumeQueue unit and the IndexFile
    for prefix, definition in (("CQ", CONSUME_QUEUE_ENTRY), ("INDEX_HEADER", INDEX_HEADER), ("INDEX", INDEX_ENTRY)):
        for name, at in field_offsets(definition).items():
            if name != "<end>":
                c[f"{prefix}_{name.upper()}_AT"] = at
    c["CQ_UNIT_SIZE"] = CONSUME_QUEUE_ENTRY.sizeof()
    c["INDEX_HEADER_SIZE"] = INDEX_HEADER.sizeof()
    c["INDEX_HASH_SLOT_SIZE"] = INDEX_HASH_SLOT_SIZE
    c["INDEX_ENTRY_SIZE"] = INDEX_ENTRY.sizeof()
    return c


#: every layout number the compiled code uses, by name
PXI_CONSTANTS: dict[str, int] = _constants()
assert PXI_CONSTANTS["REC_FIXED_LEN"] == 83 and PXI_CONSTANTS["BIN_HEADER_MIN"] == 21

#: what the Lua template's @NAME@ placeholders stand for (sniffer.lua)
LUA: dict[str, int] = {
    **PXI_CONSTANTS,
    "MESSAGE_MAGIC": MESSAGE_MAGIC_CODE & 0xFFFFFFFF,
    # a frame's fixed header fields, counted from the frame's start
    **{f"FRAME_{k}": PXI_CONSTANTS["FRAME_PREFIX_SIZE"] + v for k, v in PXI_CONSTANTS.items() if k.startswith("BIN_")
       and k.endswith("_AT")},
    "FRAME_BIN_HEADER_MIN": PXI_CONSTANTS["FRAME_PREFIX_SIZE"] + PXI_CONSTANTS["BIN_HEADER_MIN"],
    # a host and its port, IPv4 or IPv6
    "REC_HOST_V4_AND_PORT": PXI_CONSTANTS["REC_HOST_V4_SIZE"] + PXI_CONSTANTS["REC_PORT_SIZE"],
    "REC_HOST_V6_AND_PORT": PXI_CONSTANTS["REC_HOST_V6_SIZE"] + PXI_CONSTANTS["REC_PORT_SIZE"],
}


def render_pxi() -> str:
    """rocketpy/_layouts.pxi: the constants as a Cython enum (compile-time ints)."""
    lines = [
        "# Generated by `python tools/gen_layouts.py` from rocketpy.codecs.layouts (the construct definitions);",
        "# do not edit by hand. tests/test_layouts.py fails when this file is stale.",
        "",
        f"cdef int32_t MESSAGE_MAGIC_CODE = {MESSAGE_MAGIC_CODE}",
        "",
        "cdef enum:",
    ]
    lines += [f"    {name} = {value}" for name, value in PXI_CONSTANTS.items()]
    return "\n".join(lines) + "\n"
