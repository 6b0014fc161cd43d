"""Layout numbers are stated once: the compiled code's constants and the dissector's offsets come from
the construct definitions, and the generated files must not go stale."""

from __future__ import annotations

import struct
from pathlib import Path

from rocketpy.codecs import layouts
from rocketpy.codecs.frame import ROCKETMQ_HEADER, ROCKETMQ_HEADER_MIN
from rocketpy.codecs.message import MESSAGE_RECORD, build_record, record_field_at, record_length
from rocketpy.codecs.store_records import CONSUME_QUEUE_ENTRY, INDEX_ENTRY, INDEX_HEADER

PXI = Path(__file__).resolve().parent.parent / "rocketpy" / "_layouts.pxi"


def test_pxi_is_current() -> None:
    assert PXI.read_text() == layouts.render_pxi(), "rocketpy/_layouts.pxi is stale: run python tools/gen_layouts.py"


def test_binary_header_offsets_match_a_built_header() -> None:
    c = layouts.PXI_CONSTANTS
    raw = ROCKETMQ_HEADER.build(
        {"code": 0x0102, "language": 3, "version": 0x0405, "opaque": 0x06070809, "flag": 0x0A0B0C0D,
         "remark": "r", "ext_fields": []}
    )
    assert struct.unpack_from(">h", raw, c["BIN_CODE_AT"])[0] == 0x0102
    assert raw[c["BIN_LANGUAGE_AT"]] == 3
    assert struct.unpack_from(">h", raw, c["BIN_VERSION_AT"])[0] == 0x0405
    assert struct.unpack_from(">i", raw, c["BIN_OPAQUE_AT"])[0] == 0x06070809
    assert struct.unpack_from(">i", raw, c["BIN_FLAG_AT"])[0] == 0x0A0B0C0D
    assert struct.unpack_from(">i", raw, c["BIN_REMARK_LEN_AT"])[0] == 1
    assert raw[c["BIN_REMARK_AT"] : c["BIN_REMARK_AT"] + 1] == b"r"
    assert c["BIN_HEADER_MIN"] == ROCKETMQ_HEADER_MIN == len(raw) - 1


def test_record_offsets_match_a_built_record() -> None:
    c = layouts.PXI_CONSTANTS
    for sys_flag, (bl, sl) in ((0, (4, 4)), (0x10, (16, 4)), (0x20, (4, 16)), (0x30, (16, 16))):
        rec = build_record(
            record_length(sys_flag, 3, 2, 1), 11, 12, 13, 14, 15, sys_flag, 16, bytes(bl), 17, 18, bytes(sl), 19,
            20, 21, b"bod", b"tp", b"p",
        )
        assert len(rec) == c["REC_FIXED_LEN"] + bl + sl + 3 + 2 + 1
        parsed = MESSAGE_RECORD.parse(rec)
        after_born = c["REC_BORN_HOST_AT"] + bl
        after_store = after_born + c["REC_STORE_HOST_AFTER_BORN_HOST"] + sl
        assert struct.unpack_from(">i", rec, c["REC_QUEUE_ID_AT"])[0] == parsed.queue_id
        assert struct.unpack_from(">q", rec, c["REC_PHYSICAL_OFFSET_AT"])[0] == parsed.physical_offset
        assert struct.unpack_from(">i", rec, after_born + c["REC_BORN_PORT_AFTER_BORN_HOST"])[0] == parsed.born_port
        assert struct.unpack_from(">q", rec, after_born + c["REC_STORE_TIMESTAMP_AFTER_BORN_HOST"])[0] == 18
        assert after_born + c["REC_STORE_TIMESTAMP_AFTER_BORN_HOST"] == record_field_at("store_timestamp", sys_flag)
        assert struct.unpack_from(">i", rec, after_store + c["REC_STORE_PORT_AFTER_STORE_HOST"])[0] == 19
        assert struct.unpack_from(">i", rec, after_store + c["REC_BODY_LEN_AFTER_STORE_HOST"])[0] == 3
        assert rec[after_store + c["REC_SEGMENT2_END"] :][:3] == b"bod"


def test_store_unit_offsets_match_built_units() -> None:
    c = layouts.PXI_CONSTANTS
    unit = CONSUME_QUEUE_ENTRY.build({"commit_log_offset": 1, "size": 2, "tags_code": 3})
    assert len(unit) == c["CQ_UNIT_SIZE"]
    assert struct.unpack_from(">i", unit, c["CQ_SIZE_AT"])[0] == 2
    assert struct.unpack_from(">q", unit, c["CQ_TAGS_CODE_AT"])[0] == 3
    entry = INDEX_ENTRY.build({"key_hash": 1, "phy_offset": 2, "time_diff": 3, "prev_index": 4})
    assert struct.unpack_from(">i", entry, c["INDEX_PREV_INDEX_AT"])[0] == 4
    header = INDEX_HEADER.build(dict.fromkeys(("begin_timestamp", "end_timestamp", "begin_phy_offset",
                                               "end_phy_offset", "hash_slot_count"), 0) | {"index_count": 9})
    assert struct.unpack_from(">i", header, c["INDEX_HEADER_INDEX_COUNT_AT"])[0] == 9
    assert len(header) == c["INDEX_HEADER_SIZE"]
