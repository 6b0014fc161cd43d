"""Every frame the official Java 4.9.8 client and servers exchanged decodes and re-encodes identically."""

from __future__ import annotations

from collections import Counter

import pytest
from golden import PCAPS, frames, manifest

from rocketpy.codecs import RemotingCommand, SerializeType
from rocketpy.codecs.codes import request_code_name
from rocketpy.sniffer.pcap import pair_responses

ids = [p.stem for p in PCAPS]


def test_corpus_present() -> None:
    assert len(PCAPS) == 18


@pytest.mark.parametrize("pcap", PCAPS, ids=ids)
def test_every_frame_reencodes_identically(pcap) -> None:
    fr = frames(pcap)
    assert fr, "no frames found"
    for f in fr:
        assert f.error is None, f.error
        again = RemotingCommand.decode(f.raw)
        assert again == f.command
        assert f.command.encode() == f.raw


@pytest.mark.parametrize("pcap", PCAPS, ids=ids)
def test_traffic_matches_manifest(pcap) -> None:
    traffic = manifest(pcap)["traffic"]
    fr = frames(pcap)
    cmds = [f.command for f in fr]
    assert len(fr) == traffic["frames"]
    assert sum(not c.is_response for c in cmds) == traffic["requestFrames"]
    assert sum(c.is_response for c in cmds) == traffic["responseFrames"]

    requests = Counter(f"{c.code} {request_code_name(c.code)}" for c in cmds if not c.is_response)
    assert dict(requests) == traffic["requests"]
    oneway = Counter(f"{c.code} {request_code_name(c.code)}" for c in cmds if not c.is_response and c.is_oneway)
    assert dict(oneway) == traffic["onewayRequests"]
    kinds = Counter(
        f"{'response' if c.is_response else 'request'} {SerializeType(c.serialize_type).name}" for c in cmds
    )
    assert dict(kinds) == traffic["serializeTypesByKind"]
    from_server = Counter(f"{f.command.code} {request_code_name(f.command.code)}" for f in fr
                          if f.from_server and not f.command.is_response)
    assert dict(from_server) == traffic["serverToClientRequests"]

    pairs = pair_responses(fr)
    unpaired = [req for req, resp in pairs if req.command.is_response]
    assert len(unpaired) == traffic["unpairedResponses"]
    by_request: dict[str, Counter[str]] = {}
    for req, resp in pairs:
        if resp is not None:
            key = f"{req.command.code} {request_code_name(req.command.code)}"
            by_request.setdefault(key, Counter())[f"{resp.command.code} {resp.command.name}"] += 1
            assert resp.command.request_code == req.command.code
    assert {k: dict(v) for k, v in by_request.items()} == traffic["responsesByRequest"]
    langs = Counter(c.language.name for c in cmds if not c.is_response and not any(
        f.command is c and f.from_server for f in fr))
    assert set(langs) <= set(traffic["requestLanguages"])
