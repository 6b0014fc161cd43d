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


# -- recognising an HA connection by its first bytes ------------------------------------------


def test_verdicts_on_the_captured_start() -> None:
    from rocketpy.codecs.ha import looks_like_ha, reports_verdict, transfers_verdict

    report0 = build_offset_report(0)
    heartbeat0 = build_transfer_header(0, 0)
    assert reports_verdict(b"") is None and reports_verdict(report0[:7]) is None
    assert reports_verdict(report0 + build_offset_report(290)) is True
    assert reports_verdict(build_offset_report(290) + report0) is False  # offsets never go back
    assert transfers_verdict(heartbeat0) == (None, 0)
    chained = heartbeat0 + build_transfer_header(0, 3) + b"abc" + build_transfer_header(3, 0)
    assert transfers_verdict(chained) == (True, 0)
    assert transfers_verdict(build_transfer_header(0, 3) + b"abc" + build_transfer_header(4, 0))[0] is False
    # the capture's start: the slave reports 0, the master answers with a heartbeat at offset 0
    assert looks_like_ha(report0, b"") is None
    assert looks_like_ha(report0, heartbeat0) is True
    assert looks_like_ha(build_offset_report(5656), build_transfer_header(5656, 0)) is True
    assert looks_like_ha(build_offset_report(5656), build_transfer_header(0, 0)) is False
    assert looks_like_ha(report0, build_transfer_header(1 << 30, 0)) is True  # a mapped file's start
    assert looks_like_ha(report0, b"", final=True) is True
    # segments that do not begin on unit boundaries (joined mid-stream out of step)
    assert looks_like_ha(report0 * 3, heartbeat0 * 3, cuts_to_master=[0, 5]) is False
    assert looks_like_ha(report0 * 3, heartbeat0 * 3, cuts_to_slave=[0, 12, 24]) is True
    assert looks_like_ha(report0 * 3, heartbeat0 * 3, cuts_to_slave=[0, 7]) is False


@pytest.mark.parametrize(
    "data",
    [
        b"GET / HTTP/1.1\r\nHost: example\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        bytes.fromhex("16030100f4010000f00303") + bytes(200),
        b"\x00\x00\x00\x88\x00\x00\x00\x5f{" + b"x" * 200,  # a RemotingCommand frame start
    ],
)
def test_other_protocols_are_not_ha(data: bytes) -> None:
    from rocketpy.codecs.ha import looks_like_ha

    assert looks_like_ha(data, b"", final=True) is False
    assert looks_like_ha(b"", data, final=True) is False


@given(st.binary(min_size=24, max_size=400), st.binary(min_size=24, max_size=400))
def test_random_bytes_are_rarely_ha(a: bytes, b: bytes) -> None:
    from rocketpy.codecs.ha import looks_like_ha

    # random bytes with a set top bit in the first byte read as offsets no CommitLog reaches
    a, b = bytes([a[0] | 0x80]) + a[1:], bytes([b[0] | 0x80]) + b[1:]
    assert not looks_like_ha(a, b, final=True)
    assert not looks_like_ha(b, a, final=True)
