"""protocol/PROTOCOL.md is generated from the codecs and must not go stale."""

from __future__ import annotations

from pathlib import Path

from rocketpy.codecs.reference import render

DOC = Path(__file__).resolve().parent.parent / "protocol" / "PROTOCOL.md"


def test_protocol_reference_is_current() -> None:
    assert DOC.read_text() == render(), "protocol/PROTOCOL.md is stale: run python tools/gen_protocol.py"


def test_reference_covers_every_code_and_header() -> None:
    from rocketpy.codecs.codes import RequestCode
    from rocketpy.codecs.headers.registry import HEADER_TYPES

    text = DOC.read_text()
    for code in RequestCode:
        assert f"| {int(code)} | {code.name} |" in text
    for cls in HEADER_TYPES:
        assert f"### {cls.__name__}\n" in text
