"""The steps a big heartbeat is decoded in (issue #46, item 3) give what the one-go decoders give:
fastjson_steps.loads_steps the value (or the CodecError) of fastjson.loads, heartbeat_steps the HeartbeatData
(or the CodecError) of HeartbeatData.decode, whatever the text and wherever the steps fall. ``SMALL`` is
made tiny here so that containers are walked as well as read at once by the C scanner."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketpy.broker.processors.client import heartbeat_steps
from rocketpy.clock import use_clock
from rocketpy.codecs import CodecError, fastjson, fastjson_steps
from rocketpy.codecs.bodies import HeartbeatData
from rocketpy.codecs.fastjson_steps import loads_steps, run_steps

KEYS = ["clientID", "consumerDataSet", "producerDataSet", "groupName", "consumeType", "messageModel",
        "consumeFromWhere", "subscriptionDataSet", "unitMode", "topic", "subString", "tagsSet", "codeSet",
        "subVersion", "expressionType", "classFilterMode", "other"]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False),
                    st.text(max_size=8), st.sampled_from(["CONSUME_PASSIVELY", "CLUSTERING", "TAG", "*"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.sampled_from(KEYS), inner, max_size=6)), max_leaves=40)


def heartbeat_like() -> st.SearchStrategy[object]:
    sub = st.fixed_dictionaries({"topic": st.text(max_size=6), "subString": st.just("*"),
                                 "tagsSet": st.lists(st.text(max_size=3), max_size=3),
                                 "codeSet": st.lists(st.integers(-5, 5), max_size=3),
                                 "subVersion": st.integers(0, 2**40)}, optional={"x": VALUES})
    consumer = st.fixed_dictionaries({"groupName": st.text(max_size=5),
                                      "subscriptionDataSet": st.lists(st.one_of(sub, VALUES), max_size=6)},
                                     optional={"consumeType": st.sampled_from(["CONSUME_PASSIVELY", "BAD"]),
                                               "unitMode": SCALARS})
    return st.fixed_dictionaries({"clientID": st.text(max_size=5),
                                  "consumerDataSet": st.lists(st.one_of(consumer, VALUES), max_size=4)},
                                 optional={"producerDataSet": VALUES})


def texts(values: st.SearchStrategy[object]) -> st.SearchStrategy[str]:
    """JSON of ``values``, now and then with fastjson's own syntax or a character changed."""
    dumped = st.tuples(values, st.sampled_from([None, 1])).map(lambda v: json.dumps(v[0], indent=v[1]))

    @st.composite
    def mutated(draw: st.DrawFn) -> str:
        text = draw(dumped)
        for _ in range(draw(st.integers(0, 2))):
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.sampled_from(["", "'", "{", "}", "[", ",", ":", "a", " ", '"', "NaN"])) + \
                text[at + draw(st.integers(0, 1)):]
        return text

    return st.one_of(dumped, mutated(), dumped.map(lambda t: t.replace('"groupName"', "groupName")),
                     dumped.map(lambda t: t.replace('"clientID"', "'clientID'")))


def outcome(parse):  # type: ignore[no-untyped-def]
    """The value (as repr shows it: 1, 1.0 and True apart) or CodecError."""
    try:
        value = parse()
    except CodecError:
        return "CodecError"
    return repr(value) + (value.encode().decode() if isinstance(value, HeartbeatData) else "")


@pytest.fixture(autouse=True)
def small_containers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastjson_steps, "SMALL", 24)


@settings(max_examples=400)
@given(text=texts(VALUES), every=st.integers(1, 50))
def test_loads_steps_reads_what_fastjson_loads_reads(text, every):
    assert outcome(lambda: run_steps(loads_steps(text, every))) == outcome(lambda: fastjson.loads(text))


@settings(max_examples=400)
@given(text=texts(heartbeat_like()))
def test_heartbeat_steps_decode_what_heartbeat_data_decodes(text):
    body = text.encode()
    with use_clock(lambda: 1_700_000_000_000):  # a subscription without subVersion takes the time
        assert outcome(lambda: run_steps(heartbeat_steps(body))) == outcome(lambda: HeartbeatData.decode(body))
