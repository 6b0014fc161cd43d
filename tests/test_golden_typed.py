"""Typed headers and bodies of every golden frame decode, and re-encode to the bytes Java sent."""

from __future__ import annotations

import pytest
from golden import PCAPS, frames, manifest

from rocketpy.codecs import RequestCode
from rocketpy.codecs.bodies.base import JsonBody
from rocketpy.codecs.bodies.registry import route_data_features
from rocketpy.codecs.headers.registry import header_class
from rocketpy.codecs.message import Message, MessageExt
from rocketpy.codecs.payload import sent_message
from rocketpy.sniffer.pcap import pair_responses

ids = [p.stem for p in PCAPS]
SEND_CODES = (
    RequestCode.SEND_MESSAGE,
    RequestCode.SEND_MESSAGE_V2,
    RequestCode.SEND_BATCH_MESSAGE,
    RequestCode.SEND_REPLY_MESSAGE,
    RequestCode.SEND_REPLY_MESSAGE_V2,
)


def _requests_by_response(pcap):
    return {id(resp.command): req.command for req, resp in pair_responses(frames(pcap)) if resp is not None}


@pytest.mark.parametrize("pcap", PCAPS, ids=ids)
def test_typed_headers_round_trip(pcap) -> None:
    decoded = 0
    for f in frames(pcap):
        cmd = f.command
        code = cmd.request_code if cmd.is_response else cmd.code
        if code is None or header_class(code, cmd.is_response) is None:
            continue
        if cmd.is_response and cmd.code != 0:
            continue  # error responses carry no typed header
        header = cmd.header
        decoded += 1
        again = header.to_ext_fields()
        for key, value in again.items():
            assert cmd.ext_fields[key] == value, (type(header).__name__, key)
    assert decoded > 0


@pytest.mark.parametrize("pcap", PCAPS, ids=ids)
def test_typed_bodies_round_trip(pcap) -> None:
    requests = _requests_by_response(pcap)
    typed = 0
    for f in frames(pcap):
        cmd = f.command
        if not cmd.body:
            continue
        body = cmd.decode_body()
        if isinstance(body, JsonBody):
            typed += 1
            features = {}
            if cmd.is_response and cmd.request_code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
                req = requests[id(cmd)]
                accept = (req.ext_fields or {}).get("acceptStandardJsonOnly")
                features = route_data_features(req.version, None if accept is None else accept == "true")
            assert body.encode(**features) == cmd.body, (cmd.name, cmd.request_code)
        elif isinstance(body, list):
            typed += 1
            assert all(isinstance(m, (Message, MessageExt)) for m in body)
    if any(f.command.body for f in frames(pcap)):
        assert typed > 0


@pytest.mark.parametrize("pcap", PCAPS, ids=ids)
def test_produced_messages_are_on_the_wire(pcap) -> None:
    """Every message the manifest says was produced travels in a SEND request with its properties."""
    sent: list[tuple[str, object]] = []
    for f in frames(pcap):
        cmd = f.command
        if cmd.is_response or cmd.code not in SEND_CODES:
            continue
        if cmd.code == RequestCode.SEND_BATCH_MESSAGE:
            sent.extend((cmd.header.topic, m) for m in cmd.decode_body())
        else:  # one message: what the producer sent, inflated if it compressed the body
            msg = sent_message(cmd, decompress=True)
            sent.append((msg.topic, msg))
    by_uniq = {m.properties.get("UNIQ_KEY"): (t, m) for t, m in sent}
    for p in manifest(pcap).get("produced", []):
        if p.get("sendStatus") not in (None, "SEND_OK") or not p.get("uniqKey"):
            continue
        topic, msg = by_uniq[p["uniqKey"]]
        assert topic == p["topic"]
        if p.get("tags"):
            assert msg.properties.get("TAGS") == p["tags"]
        if p.get("keys"):
            assert msg.properties.get("KEYS") == p["keys"]
        for k, v in (p.get("userProperties") or {}).items():
            assert msg.properties.get(k) == v
        assert len(msg.body) == p["bodyLength"]
        if p.get("bodyEncoding") == "utf8":
            assert msg.body.decode() == p["body"]
