"""The HA stream codec: struct readers agree with the construct definitions in any chunking."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketpy.codecs.errors import CodecError
from rocketpy.codecs.ha import (
    HA_OFFSET_REPORT,
    HA_TRANSFER,
    HaOffsetReader,
    HaTransfer,
    HaTransferReader,
    build_offset_report,
    build_transfer_header,
    iter_transfers,
)

transfers = st.lists(st.tuples(st.integers(0, (1 << 63) - 1), st.binary(max_size=300)), max_size=8)


@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=20), st.integers(1, 17))
def test_offset_reports_in_any_chunking(offsets: list[int], chunk: int) -> None:
    stream = b"".join(build_offset_report(o) for o in offsets)
    assert stream == b"".join(HA_OFFSET_REPORT.build({"max_offset": o}) for o in offsets)
    reader = HaOffsetReader()
    got: list[int] = []
    for i in range(0, len(stream), chunk):
        got += reader.feed(stream[i : i + chunk])
    assert got == offsets and reader.buffered == 0


@given(transfers, st.integers(1, 50))
def test_transfers_in_any_chunking(units: list[tuple[int, bytes]], chunk: int) -> None:
    stream = b"".join(build_transfer_header(o, len(d)) + d for o, d in units)
    assert stream == b"".join(HA_TRANSFER.build({"phy_offset": o, "body_size": len(d), "data": d}) for o, d in units)
    reader = HaTransferReader()
    got: list[HaTransfer] = []
    for i in range(0, len(stream), chunk):
        got += reader.feed(stream[i : i + chunk])
    expected = [HaTransfer(o, d) for o, d in units]
    assert got == expected == list(iter_transfers(stream))
    assert [t.is_heartbeat for t in got] == [not d for _, d in units]


def test_absurd_transfer_size_is_refused_before_buffering() -> None:
    reader = HaTransferReader(max_transfer=1024)
    with pytest.raises(CodecError):
        reader.feed(build_transfer_header(0, 1 << 30))
    with pytest.raises(CodecError):
        HaTransferReader().feed(build_transfer_header(0, -1))
