"""The allocation strategies agree with the Java 4.9.8 classes on a table of cases.

tests/data/allocate_cases.json holds the assignments the Java 4.9.8 strategies gave for
each case (recorded once, outside this repository); here the Python ones must match.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rocketpy.client.allocate import (
    AllocateAveragely,
    AllocateAveragelyByCircle,
    AllocateByConfig,
    AllocateByMachineRoom,
    AllocateConsistentHash,
    AllocateMachineRoomNearby,
    HashRing,
    md5_hash,
    mq_sort_key,
    mq_string,
    strategy_by_name,
)
from rocketpy.codecs.bodies import MessageQueue

CASES = json.loads((Path(__file__).parent / "data" / "allocate_cases.json").read_text())["cases"]


def make_strategy(case: dict):
    name, arg = case["strategy"], case["arg"]
    if name == "AVG":
        return AllocateAveragely()
    if name == "AVG_BY_CIRCLE":
        return AllocateAveragelyByCircle()
    if name == "CONSISTENT_HASH":
        return AllocateConsistentHash(int(arg)) if arg else AllocateConsistentHash()
    if name == "MACHINE_ROOM":
        return AllocateByMachineRoom(arg.split(","))
    if name == "MACHINE_ROOM_NEARBY":
        return AllocateMachineRoomNearby(
            AllocateAveragely(), lambda mq: mq.broker_name.split("-")[0], lambda cid: cid.split("-")[0]
        )
    raise AssertionError(name)


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['strategy']}-{len(c['cids'])}x{len(c['mqs'])}"
                                             for i, c in enumerate(CASES)])
def test_matches_java(case: dict) -> None:
    mqs = [MessageQueue(topic=t, broker_name=b, queue_id=q) for t, b, q in case["mqs"]]
    strategy = make_strategy(case)
    for cid, expected in case["expected"].items():
        got = strategy.allocate("G", cid, mqs, case["cids"])
        assert [mqs.index(mq) for mq in got] == expected, cid


def test_cases_cover_every_queue_once() -> None:
    # the Java results themselves: the group's shares partition the queues (AVG, circle, hash)
    for case in CASES:
        if case["strategy"] in ("AVG", "AVG_BY_CIRCLE", "CONSISTENT_HASH"):
            taken = sorted(i for cid in case["cids"] for i in case["expected"][cid])
            assert taken == list(range(len(case["mqs"]))) or len(case["mqs"]) < len(case["cids"])


def test_hash_and_keys() -> None:
    mq = MessageQueue(topic="T", broker_name="b", queue_id=3)
    assert mq_string(mq) == "MessageQueue [topic=T, brokerName=b, queueId=3]"
    assert md5_hash("") == 0xD41D8CD9
    ring = HashRing(["a", "b"], 0)
    assert ring.route("x") is None
    # java ordering is by UTF-16 code unit: U+FF5E sorts after U+1F600's high surrogate? no: before
    a = MessageQueue(topic="\uff5e", broker_name="b", queue_id=0)
    b = MessageQueue(topic="\U0001f600", broker_name="b", queue_id=0)
    assert sorted([a, b], key=mq_sort_key) == [b, a]


def test_errors_and_config() -> None:
    mqs = [MessageQueue(topic="T", broker_name="b", queue_id=0)]
    with pytest.raises(ValueError):
        AllocateAveragely().allocate("G", "", mqs, ["a"])
    with pytest.raises(ValueError):
        AllocateAveragely().allocate("G", "a", [], ["a"])
    with pytest.raises(ValueError):
        AllocateConsistentHash(-1)
    assert AllocateByConfig(mqs).allocate("G", "x", [], []) == mqs
    assert strategy_by_name("avg_by_circle").name == "AVG_BY_CIRCLE"
    with pytest.raises(ValueError):
        strategy_by_name("nope")
