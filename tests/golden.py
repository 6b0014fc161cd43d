"""Paths to the vendored reference corpus (see protocol/golden/README.md)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent.parent / "protocol" / "golden"
CAPTURES = GOLDEN / "captures"
STORE_DUMP = GOLDEN / "store-dump"
STORE_DUMP_CRASHED = GOLDEN / "store-dump-crashed"
STORE_DUMP_DLEDGER = GOLDEN / "store-dump-dledger"

PCAPS = sorted(CAPTURES.glob("*.pcap"))


@cache
def manifest(pcap: Path) -> dict:
    return json.loads(pcap.with_suffix(".json").read_text())


@cache
def frames(pcap: Path) -> list:
    from rocketpy.sniffer.pcap import pair_responses, read_pcap

    result = read_pcap(str(pcap))
    pair_responses(result)  # sets request_code on responses
    return result
