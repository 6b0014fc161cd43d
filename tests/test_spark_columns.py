"""The columnar CommitLog decode against the construct decode, record for record (no Spark).

Random records are laid out as the broker lays them (``build_record``, the fast form of
``MESSAGE_RECORD``), then damaged; the columns must give exactly the rows of the
record-by-record walk, whole and in splits, with damaged stretches found by the same
resync walk.
"""

from __future__ import annotations

import os
import tempfile
import zlib

import pytest

pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install -e '.[spark]')")
pytest.importorskip("numpy", reason="numpy is not installed (pip install -e '.[spark]')")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rocketpy.codecs.codes import MessageSysFlag  # noqa: E402
from rocketpy.codecs.message import (  # noqa: E402
    body_crc,
    build_record,
    record_field_at,
    record_length,
)
from rocketpy.codecs.store_records import build_blank_record  # noqa: E402
from rocketpy.spark._columns import batches_to_rows  # noqa: E402
from rocketpy.spark._records import record_layouts  # noqa: E402

_BORN_V6 = int(MessageSysFlag.BORNHOST_V6_FLAG)
_STORE_V6 = int(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
_COMPRESSED = int(MessageSysFlag.COMPRESSED_FLAG)

from rocketpy.spark.commitlog import (  # noqa: E402
    COMMITLOG_COLUMNS,
    CommitLogOptions,
    commitlog_batches,
    commitlog_rows_batches,
)

INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
PROPS = st.one_of(
    st.dictionaries(
        st.sampled_from(["UNIQ_KEY", "KEYS", "TAGS", "a", "WAIT"]),
        st.text(st.characters(blacklist_characters="\x01\x02"), max_size=12),
        max_size=4,
    ).map(lambda d: "\x02".join(f"{k}\x01{v}" for k, v in d.items()).encode("utf-8", "surrogatepass")),
    st.binary(max_size=20),  # anything at all, invalid UTF-8 included
    # entries as they come: names given twice, empty names or values, no separator, spaces in KEYS
    st.lists(
        st.tuples(
            st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "", "x"]), st.sampled_from(["", "a", " b  c ", "é\x01d"])
        ),
        max_size=4,
    ).map(lambda es: "\x02".join(f"{k}\x01{v}" if k != "x" else v for k, v in es).encode()),
)


@st.composite
def records(draw):
    sys_flag = draw(st.integers(0, 0xFFFF))
    body = draw(st.one_of(st.binary(max_size=40), st.just(zlib.compress(b"hello" * 10))))
    topic = draw(st.one_of(st.sampled_from([b"T", b"TopicA", b"%RETRY%g"]), st.binary(max_size=30)))
    props = draw(PROPS)
    born = draw(st.binary(min_size=16, max_size=16)) if sys_flag & _BORN_V6 else draw(st.binary(min_size=4, max_size=4))
    if sys_flag & _STORE_V6:
        store = draw(st.one_of(st.binary(min_size=16, max_size=16), st.just(b"\0" * 10 + b"\xff\xff\x0a\0\0\x02")))
    else:
        store = draw(st.sampled_from([b"\x0a\0\0\x02", b"\x7f\0\0\x01"]))
    good_crc = draw(st.booleans())
    return dict(
        sys_flag=sys_flag,
        body=body,
        topic=topic,
        properties=props,
        born_host=born,
        store_host=store,
        body_crc=body_crc(body) if good_crc else draw(INT32),
        queue_id=draw(INT32),
        flag=draw(INT32),
        queue_offset=draw(INT64),
        born_timestamp=draw(st.one_of(st.integers(1_600_000_000_000, 1_800_000_000_000), INT64)),
        born_port=draw(INT32),
        store_timestamp=draw(st.one_of(st.integers(1_600_000_000_000, 1_800_000_000_000), INT64)),
        store_port=draw(INT32),
        reconsume_times=draw(INT32),
        prepared_transaction_offset=draw(INT64),
    )


def _lay_out(recs: list[dict], base: int) -> bytearray:
    out = bytearray()
    for r in recs:
        size = record_length(r["sys_flag"], len(r["body"]), len(r["topic"]), len(r["properties"]))
        out += build_record(total_size=size, physical_offset=base + len(out), **r)
    return out


DAMAGE = st.lists(
    st.tuples(st.sampled_from(["flip", "zero", "size", "magic"]), st.floats(0, 1), st.integers(1, 200)), max_size=3
)


def _damage(data: bytearray, ops) -> None:
    for kind, where, n in ops:
        at = int(where * (len(data) - 1))
        if kind == "flip":
            data[at] ^= 0x5A
        elif kind == "zero":
            data[at : at + n] = bytes(len(data[at : at + n]))
        elif kind == "size":
            data[at : at + 4] = n.to_bytes(4, "big")[: len(data[at : at + 4])]
        else:
            data[at : at + 4] = b"\xda\xa3\x20\xa7"[: len(data[at : at + 4])]


def _write(data: bytes) -> str:
    fd, path = tempfile.mkstemp(prefix="commitlog-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(records(), min_size=1, max_size=12),
    DAMAGE,
    st.sampled_from([0, 1 << 30]),
    st.booleans(),
    st.integers(0, 80),
    st.sampled_from([(True, True, False), (False, False, True), (True, False, True)]),
)
def test_columns_give_the_rows_of_the_construct_walk(recs, damage, base, blank, tail, flags):
    check_crc, include_body, decompress = flags
    data = _lay_out(recs, base)
    if blank:
        data += build_blank_record(tail + 8) + bytes(tail)
    else:
        data += bytes(tail)
    _damage(data, damage)
    path = _write(bytes(data))
    try:
        opts = CommitLogOptions(check_crc=check_crc, include_body=include_body, decompress=decompress)
        expected = list(batches_to_rows(commitlog_rows_batches(path, base, opts)))
        # small chunks, so chunk edges fall between records too
        assert list(batches_to_rows(commitlog_batches(path, base, opts, max_rows=3))) == expected
        for split in (97, 256):
            rows = []
            for start in range(0, len(data), split):
                end = start + split if start + split < len(data) else None
                rows += batches_to_rows(commitlog_batches(path, base, opts, start=start, end=end, max_rows=5))
            assert rows == expected, split
    finally:
        os.unlink(path)


def test_projection_builds_only_the_columns_asked_for(tmp_path):
    recs = [
        dict(
            sys_flag=_COMPRESSED if i % 2 else 0,
            body=zlib.compress(b"x" * i) if i % 2 else b"y" * i,
            topic=b"T",
            properties=b"KEYS\x01a b\x02TAGS\x01t",
            born_host=b"\x7f\0\0\x01",
            store_host=b"\x0a\0\0\x02",
            body_crc=0,
            queue_id=1,
            flag=0,
            queue_offset=i,
            born_timestamp=1,
            born_port=1,
            store_timestamp=2,
            store_port=10911,
            reconsume_times=0,
            prepared_transaction_offset=0,
        )
        for i in range(5)
    ]
    path = tmp_path / "00000000000000000000"
    path.write_bytes(bytes(_lay_out(recs, 0)))
    full = list(batches_to_rows(commitlog_rows_batches(str(path), 0, CommitLogOptions(decompress=True))))
    wanted = [("keys", "strings"), ("commit_log_offset", "long"), ("body_size", "int"), ("msg_id", "string")]
    batches = list(commitlog_batches(str(path), 0, CommitLogOptions(decompress=True), columns=wanted))
    assert [f.name for f in batches[0].schema] == [n for n, _ in wanted]
    assert list(batches_to_rows(batches)) == [{n: r[n] for n, _ in wanted} for r in full]
    assert [r["body_size"] for r in full] == [len(b"y" * i) if i % 2 == 0 else i for i in range(5)]


def test_layouts_come_from_the_record_declaration():
    layouts = record_layouts()
    for v, lay in enumerate(layouts):
        flags = (_BORN_V6 if v & 1 else 0) | (_STORE_V6 if v & 2 else 0)
        assert lay.fields["store_timestamp"][0] == record_field_at("store_timestamp", flags)
        assert lay.fields["born_host"][1] == (16 if v & 1 else 4)
        assert lay.fields["store_host"][1] == (16 if v & 2 else 4)
        assert lay.body_at == record_field_at("body", flags)
    assert {name for name, _ in COMMITLOG_COLUMNS} >= {"queue_offset", "prepared_transaction_offset"}


@settings(max_examples=200, deadline=None)
@given(st.lists(PROPS, max_size=8))
def test_property_columns_in_bulk_are_the_codecs(props):
    import numpy as np

    from rocketpy.spark._properties import property_columns, property_columns_by_row

    data = b"".join(props)
    u8 = np.frombuffer(data, dtype=np.uint8) if data else np.zeros(1, np.uint8)
    lengths = np.array([len(p) for p in props], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64) if props else lengths
    bulk = property_columns(u8, starts, lengths)
    expected = property_columns_by_row(props)
    if bulk is not None:
        assert {k: v.to_pylist() for k, v in bulk.items()} == {k: v.to_pylist() for k, v in expected.items()}


@pytest.mark.parametrize("variant", range(4))
def test_record_layout_positions_are_the_construct_definitions(variant):
    """The columnar walk's byte positions (fixed fields, the body's, topic's and properties'
    length prefixes, the smallest record) hold what MESSAGE_RECORD builds there."""
    import struct

    from rocketpy.codecs.message import MESSAGE_MAGIC_CODE, MESSAGE_RECORD
    from rocketpy.spark import _records

    layout = record_layouts()[variant]
    sys_flag = (0x10 if variant & 1 else 0) | (0x20 if variant & 2 else 0)
    born, store = (
        (bytes(range(1, 17)) if variant & 1 else b"\x0a\0\0\x01"),
        (bytes(range(17, 33)) if variant & 2 else b"\x0a\0\0\x02"),
    )
    ints = {
        "body_crc": 11, "queue_id": 12, "flag": 13, "queue_offset": 14, "physical_offset": 15,
        "born_timestamp": 16, "born_port": 17, "store_timestamp": 18, "store_port": 19,
        "reconsume_times": 20, "prepared_transaction_offset": 21,
    }  # fmt: skip
    body, topic, props = b"the body", b"Layout_T", b"KEYS\x01k\x02"
    values = dict(ints, magic_code=MESSAGE_MAGIC_CODE, sys_flag=sys_flag, born_host=born, store_host=store)
    size = layout.min_size + len(body) + len(topic) + len(props)
    raw = MESSAGE_RECORD.build(dict(values, total_size=size, body=body, topic=topic, properties=props))
    assert len(raw) == size
    for name, (at, width) in layout.fields.items():
        want = values.get(name, size)
        got = raw[at : at + width]
        assert got == (want if isinstance(want, bytes) else want.to_bytes(width, "big", signed=True)), name
    prefix = _records._PREFIX
    assert raw[layout.body_at : layout.head] == struct.pack(">i", len(body))
    assert raw[layout.head : layout.head + len(body)] == body
    topic_at = layout.head + len(body)
    assert raw[topic_at : topic_at + prefix["topic"]] == bytes([len(topic)])
    props_at = topic_at + prefix["topic"] + len(topic)
    assert raw[props_at : props_at + prefix["properties"]] == struct.pack(">h", len(props))
    assert raw[props_at + prefix["properties"] :] == props
    empty = MESSAGE_RECORD.build(dict(values, total_size=layout.min_size, body=b"", topic=b"", properties=b""))
    assert len(empty) == layout.min_size
    assert _records._SIZE_MAGIC_LEN == 8 and _records._MIN_RECORD == record_layouts()[0].min_size
