"""Issue 5: real third-party clients produce and consume through OUR broker (``rocketpy serve``).

Every test creates its topic first through the admin path (UPDATE_AND_CREATE_TOPIC, as
mqadmin updateTopic does: ali-ons cannot auto-create topics), then runs the clients'
drivers. Consumers use new groups: a new group starts at offset 0 because the broker
answers QUERY_CONSUMER_OFFSET with 0 while a queue's first message is still in memory.
Skipped with "broker not built yet" until ``rocketpy serve`` exists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from rocketpy.codecs import RequestCode, ResponseCode

from .conftest import require_client
from .harness import (
    EXPECTED_VERSION,
    KNOWN_SHUTDOWN_CRASHES,
    ClientEnv,
    DriverResult,
    run_driver,
    sample_messages,
    start_driver,
)
from .servers import BrokerProcess, create_topic, wait_for_route

N_MESSAGES = 6
QUEUES = 4
SEND_OK = {"cpp1": "OK", "cpp2": "OK", "node": "SEND_OK"}
PROPERTY_NAMES = ["compat_index", "compat_run"]


async def _create_topic(server: BrokerProcess, topic: str) -> None:
    response = await create_topic(server.broker_addr, topic, QUEUES)
    assert response.code == ResponseCode.SUCCESS, (response.code, response.remark, server.log_tail())
    await wait_for_route(server.namesrv_addr, topic)


def _check_produced(client: ClientEnv, out: DriverResult, n: int) -> None:
    assert out.result is not None, out.describe()
    assert not out.result.get("error"), out.describe()
    assert not out.result.get("errors"), out.describe()  # ali-ons 'error' events
    statuses = [s.get("status") for s in out.result["results"]]
    assert statuses == [SEND_OK[client.name]] * n, out.describe()
    assert all(s.get("msg_id") for s in out.result["results"]), out.describe()
    if (client.name, "producer") not in KNOWN_SHUTDOWN_CRASHES:
        assert out.shutdown_ok, out.describe()


def _norm_keys(keys: Any) -> str | None:
    if isinstance(keys, list):
        return " ".join(keys)
    return keys


def _check_consumed(
    client: ClientEnv,
    out: DriverResult,
    topic: str,
    sent: list[dict[str, Any]],
    produced: DriverResult | None = None,
) -> None:
    """Every message of ``sent`` arrived once, intact; with ``produced`` (the producer's run for
    exactly ``sent``), each message was pulled from the queue offset its send result named."""
    assert out.result is not None, out.describe()
    assert not out.result.get("error"), out.describe()
    assert not out.result.get("errors"), out.describe()  # ali-ons 'error' events
    got = out.result["messages"]
    by_key = {_norm_keys(m["keys"]): m for m in got}
    missing = [m["keys"] for m in sent if m["keys"] not in by_key]
    assert not missing, f"{client.name} consumer missed {missing}; " + out.describe()
    assert len(got) == len(sent), f"duplicates or strangers: {[m['keys'] for m in got]}"
    for spec in sent:
        m = by_key[spec["keys"]]
        assert m["topic"] == topic, m
        assert m["body"] == spec["body"], m
        assert m["tags"] == spec["tags"], m
        for key, value in spec["properties"].items():
            assert (m["properties"] or {}).get(key) == value, m
        assert 0 <= int(m["queue_id"]) < QUEUES, m
        assert m["msg_id"], m
    if (client.name, "consumer") not in KNOWN_SHUTDOWN_CRASHES:
        assert out.shutdown_ok, out.describe()
    if produced is not None and produced.result is not None:
        for spec, send in zip(sent, produced.result["results"]):
            m = by_key[spec["keys"]]
            assert int(m["queue_offset"]) == int(send["offset"]), (send, m)
            if "queue_id" in send:
                assert int(m["queue_id"]) == int(send["queue_id"]), (send, m)
        # per queue, a new group read from offset 0 without gaps
        offsets: dict[int, list[int]] = {}
        for m in got:
            offsets.setdefault(int(m["queue_id"]), []).append(int(m["queue_offset"]))
        for queue_id, seen in offsets.items():
            assert sorted(seen) == list(range(len(seen))), (queue_id, seen)


async def test_produce_then_consume(
    client: ClientEnv, rocketpy_server: BrokerProcess, client_home: Path, run_id: str
) -> None:
    """One client's producer sends N messages; then a NEW consumer group of the same client
    receives all N from offset 0 with bodies, tags, keys and properties intact."""
    topic = f"CompatRT_{client.name}_{run_id}"
    await _create_topic(rocketpy_server, topic)
    messages = sample_messages("TagB", N_MESSAGES, run_id=run_id, big=True)
    produced = await run_driver(
        client, "producer",
        {"namesrv": rocketpy_server.namesrv_addr, "topic": topic, "group": f"PG_{run_id}", "messages": messages},
        client_home / "producer", timeout=60,
    )  # fmt: skip
    _check_produced(client, produced, N_MESSAGES)
    consumed = await run_driver(
        client, "consumer",
        {"namesrv": rocketpy_server.namesrv_addr, "topic": topic, "group": f"CG_{run_id}", "expect": N_MESSAGES,
         "timeout": 40, "property_names": PROPERTY_NAMES},
        client_home / "consumer", timeout=70,
    )  # fmt: skip
    _check_consumed(client, consumed, topic, messages, produced)
    # the same client reports the same message ids on both sides
    assert {m["msg_id"] for m in consumed.result["messages"]} == {  # type: ignore[index]
        s["msg_id"] for s in produced.result["results"]  # type: ignore[index]
    }


async def test_tag_filter(client: ClientEnv, rocketpy_server: BrokerProcess, client_home: Path, run_id: str) -> None:
    """A consumer subscribed to one tag gets only the messages with that tag."""
    topic = f"CompatTag_{client.name}_{run_id}"
    await _create_topic(rocketpy_server, topic)
    messages = sample_messages("TagF", N_MESSAGES, run_id=run_id)
    produced = await run_driver(
        client, "producer",
        {"namesrv": rocketpy_server.namesrv_addr, "topic": topic, "group": f"PG_{run_id}", "messages": messages},
        client_home / "producer", timeout=60,
    )  # fmt: skip
    _check_produced(client, produced, N_MESSAGES)
    wanted = [m for m in messages if m["tags"] == "TagF1"]
    consumed = await run_driver(
        client, "consumer",
        {"namesrv": rocketpy_server.namesrv_addr, "topic": topic, "group": f"CG_{run_id}", "expect": len(wanted),
         "expression": "TagF1", "timeout": 40, "linger": 2, "property_names": PROPERTY_NAMES},
        client_home / "consumer", timeout=70,
    )  # fmt: skip
    _check_consumed(client, consumed, topic, wanted)


CROSS_PAIRS = [("cpp1", "node"), ("node", "cpp1"), ("cpp2", "node"), ("node", "cpp2"), ("cpp1", "cpp2")]


@pytest.mark.parametrize(("producer_name", "consumer_name"), CROSS_PAIRS, ids=[f"{p}-to-{c}" for p, c in CROSS_PAIRS])
async def test_cross_client(
    producer_name: str,
    consumer_name: str,
    rocketpy_server: BrokerProcess,
    client_home: Path,
    run_id: str,
) -> None:
    """One client produces while another client's push consumer, already running, receives."""
    producer, consumer = require_client(producer_name), require_client(consumer_name)
    topic = f"CompatX_{producer_name}_{consumer_name}_{run_id}"
    await _create_topic(rocketpy_server, topic)
    messages = sample_messages("TagX", N_MESSAGES, run_id=run_id, big=True)
    async with trio.open_nursery() as nursery:
        background = start_driver(
            nursery, consumer, "consumer",
            {"namesrv": rocketpy_server.namesrv_addr, "topic": topic, "group": f"CG_{run_id}",
             "expect": N_MESSAGES, "timeout": 45, "property_names": PROPERTY_NAMES},
            client_home / "consumer", timeout=75,
        )  # fmt: skip
        await trio.sleep(2)  # let the consumer subscribe and start its long polls
        produced = await run_driver(
            producer, "producer",
            {"namesrv": rocketpy_server.namesrv_addr, "topic": topic, "group": f"PG_{run_id}", "messages": messages},
            client_home / "producer", timeout=60,
        )  # fmt: skip
        _check_produced(producer, produced, N_MESSAGES)
        consumed = await background.wait()
    _check_consumed(consumer, consumed, topic, messages, produced)


async def test_versions_reach_broker(
    client: ClientEnv, rocketpy_server: BrokerProcess, client_home: Path, run_id: str
) -> None:
    """The NameServer of ``rocketpy serve`` seen through a recording proxy: the client's version
    arrives and the route comes back in the legacy dialect these clients parse."""
    from .capture import RecordingProxy

    topic = f"CompatVer_{client.name}_{run_id}"
    await _create_topic(rocketpy_server, topic)
    # the route names the broker's own address, so the proxy fronts the NameServer only; the
    # broker's answers are checked through the client's success
    async with trio.open_nursery() as nursery:
        proxy = RecordingProxy(rocketpy_server.namesrv_addr)
        await nursery.start(proxy.run)
        produced = await run_driver(
            client, "producer",
            {"namesrv": proxy.address, "topic": topic, "group": f"PG_{run_id}",
             "messages": sample_messages("TagV", 2, run_id=run_id)},
            client_home, timeout=60,
        )  # fmt: skip
        nursery.cancel_scope.cancel()
    _check_produced(client, produced, 2)
    assert not proxy.errors(), proxy.errors()
    assert proxy.requests(), "the client never talked to the NameServer of rocketpy serve"
    assert all(r.version == EXPECTED_VERSION[client.name] for r in proxy.requests())
    route_requests = [r for r in proxy.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)
                      if (r.ext_fields or {}).get("topic") == topic]
    assert route_requests
    answer = proxy.response_to(route_requests[0])
    assert answer is not None and answer.command is not None
    assert answer.command.code == ResponseCode.SUCCESS
    assert b'"brokerAddrs":{0:"' + rocketpy_server.broker_addr.encode() in (answer.command.body or b"")


async def _produce(client: ClientEnv, server: BrokerProcess, topic: str, messages: list[dict[str, Any]],
                   home: Path) -> DriverResult:
    out = await run_driver(
        client, "producer",
        {"namesrv": server.namesrv_addr, "topic": topic, "group": f"PG_{topic}", "messages": messages},
        home, timeout=60,
    )  # fmt: skip
    _check_produced(client, out, len(messages))
    return out


async def _consume(client: ClientEnv, server: BrokerProcess, topic: str, group: str, expect: int, home: Path,
                   **extra: Any) -> DriverResult:
    args = {"namesrv": server.namesrv_addr, "topic": topic, "group": group, "expect": expect, "timeout": 40,
            "property_names": PROPERTY_NAMES}  # fmt: skip
    args.update(extra)
    return await run_driver(client, "consumer", args, home, timeout=70)


async def test_resume_from_committed_offset(
    client: ClientEnv, rocketpy_server: BrokerProcess, client_home: Path, run_id: str
) -> None:
    """A group that consumed N messages and left comes back to only the messages sent since:
    the offsets it committed (UPDATE_CONSUMER_OFFSET, or commitOffset in its pulls) were kept."""
    topic = f"CompatResume_{client.name}_{run_id}"
    group = f"CG_{run_id}"
    await _create_topic(rocketpy_server, topic)
    first = sample_messages("TagR", 3, run_id=run_id + "a")
    second = sample_messages("TagR", 3, run_id=run_id + "b")
    await _produce(client, rocketpy_server, topic, first, client_home / "p1")
    # linger past the C++ clients' 5 s offset persist period: rocketmq-python-cvs crashes in
    # shutdown (see KNOWN_SHUTDOWN_CRASHES) before its final persist
    linger = 6.0 if (client.name, "consumer") in KNOWN_SHUTDOWN_CRASHES else 0.5
    out1 = await _consume(client, rocketpy_server, topic, group, 3, client_home / "c1", linger=linger)
    _check_consumed(client, out1, topic, first)
    await _produce(client, rocketpy_server, topic, second, client_home / "p2")
    out2 = await _consume(client, rocketpy_server, topic, group, 3, client_home / "c2", linger=2)
    _check_consumed(client, out2, topic, second)


async def test_consumer_retry(
    client: ClientEnv, rocketpy_server: BrokerProcess, client_home: Path, run_id: str
) -> None:
    """A consumer that fails a message's first delivery gets it again: the client sends it back
    (CONSUMER_SEND_MSG_BACK), the broker schedules it on %RETRY%<group> and redelivers it
    with reconsumeTimes 1, body and properties intact."""
    topic = f"CompatRetry_{client.name}_{run_id}"
    group = f"CG_{run_id}"
    await _create_topic(rocketpy_server, topic)
    # the broker would create %RETRY%<group> at the first heartbeat, but the C++ clients only
    # see it at their next 10 s rebalance: create it up front to keep the test short
    await _create_topic(rocketpy_server, f"%RETRY%{group}")
    messages = sample_messages("TagY", 2, run_id=run_id)
    await _produce(client, rocketpy_server, topic, messages, client_home / "p")
    out = await _consume(client, rocketpy_server, topic, group, 2, client_home / "c", fail_first=True, linger=1)
    assert out.result is not None and not out.result.get("error"), out.describe()
    attempts = out.result["attempts"]
    got = out.result["messages"]
    assert sorted(m["keys"] for m in got) == sorted(m["keys"] for m in messages), out.describe()
    for spec in messages:
        tries = [a for a in attempts if a.get("keys") == spec["keys"]]
        assert len(tries) == 2, (spec["keys"], tries)
        assert [int(t["reconsume_times"]) for t in tries] == [0, 1], tries
        redelivered = tries[1]
        assert redelivered["topic"] == topic, redelivered  # the client restores it from RETRY_TOPIC
        assert redelivered["body"] == spec["body"] and redelivered["tags"] == spec["tags"], redelivered
        for key, value in spec["properties"].items():
            assert (redelivered["properties"] or {}).get(key) == value, redelivered


@pytest.mark.parametrize("name", ["cpp1", "cpp2"])
async def test_cpp_oneway_send(name: str, rocketpy_server: BrokerProcess, client_home: Path, run_id: str) -> None:
    """Oneway sends (flag bit 1, no answer expected) from the C++ clients are stored and consumed."""
    client = require_client(name)
    topic = f"CompatOneway_{name}_{run_id}"
    await _create_topic(rocketpy_server, topic)
    messages = sample_messages("TagO", 4, run_id=run_id)
    out = await run_driver(
        client, "producer",
        {"namesrv": rocketpy_server.namesrv_addr, "topic": topic, "group": f"PG_{run_id}", "messages": messages,
         "mode": "oneway"},
        client_home / "p", timeout=60,
    )  # fmt: skip
    assert out.result is not None and not out.result.get("error"), out.describe()
    assert [r.get("status") for r in out.result["results"]] == ["ONEWAY"] * len(messages), out.describe()
    assert out.shutdown_ok, out.describe()
    consumed = await _consume(client, rocketpy_server, topic, f"CG_{run_id}", len(messages), client_home / "c")
    _check_consumed(client, consumed, topic, messages)


@pytest.mark.parametrize("name", ["cpp1", "cpp2"])
async def test_cpp_batch_is_one_message_as_on_java(
    name: str, rocketpy_server: BrokerProcess, client_home: Path, run_id: str
) -> None:
    """The C++ clients send a batch as SEND_MESSAGE (1.x) / SEND_MESSAGE_V2 (2.1.0) with
    ``batch``/``m`` = "1". Java 4.9.8 reads that boolean with Boolean.parseBoolean("1") = false,
    so it stores ONE message whose body is the whole MessageBatch encoding (no TAGS, no KEYS).
    Our broker must do the same: these clients see the same thing on a Java broker."""
    client = require_client(name)
    topic = f"CompatBatch_{name}_{run_id}"
    await _create_topic(rocketpy_server, topic)
    messages = sample_messages("TagK", 3, run_id=run_id)
    out = await run_driver(
        client, "producer",
        {"namesrv": rocketpy_server.namesrv_addr, "topic": topic, "group": f"PG_{run_id}", "messages": messages,
         "mode": "batch"},
        client_home / "p", timeout=60,
    )  # fmt: skip
    assert out.result is not None and not out.result.get("error"), out.describe()
    assert [r.get("status") for r in out.result["results"]] == ["OK"], out.describe()
    consumed = await _consume(client, rocketpy_server, topic, f"CG_{run_id}", 1, client_home / "c", linger=2)
    assert consumed.result is not None and not consumed.result.get("error"), consumed.describe()
    got = consumed.result["messages"]
    assert len(got) == 1, consumed.describe()
    assert not got[0]["tags"] and not got[0]["keys"], got[0]
    # the C++ API reads the body as a C string: the batch encoding starts with a 0 byte
    assert got[0]["body"] == "", got[0]


async def test_delay_level(client: ClientEnv, rocketpy_server: BrokerProcess, client_home: Path, run_id: str) -> None:
    """A message with a delay level goes through SCHEDULE_TOPIC_XXXX and reaches the consumer
    after its delay (1 s for level 3 on the test broker) under its own topic, with REAL_TOPIC
    and (as from a Java broker) DELAY still among its properties; a plain one does not wait."""
    topic = f"CompatDelay_{client.name}_{run_id}"
    await _create_topic(rocketpy_server, topic)
    messages = sample_messages("TagD", 2, run_id=run_id)
    messages[0]["delay_level"] = 3
    await _produce(client, rocketpy_server, topic, messages, client_home / "p")
    consumed = await _consume(client, rocketpy_server, topic, f"CG_{run_id}", 2, client_home / "c",
                              property_names=[*PROPERTY_NAMES, "DELAY", "REAL_TOPIC"])  # fmt: skip
    _check_consumed(client, consumed, topic, messages)
    assert consumed.result is not None
    by_key = {_norm_keys(m["keys"]): m for m in consumed.result["messages"]}
    delayed, plain = by_key[messages[0]["keys"]], by_key[messages[1]["keys"]]
    waited = int(delayed["store_timestamp"]) - int(delayed["born_timestamp"])
    assert waited >= 900, f"delayed message stored {waited} ms after its birth: {delayed}"
    assert int(plain["store_timestamp"]) - int(plain["born_timestamp"]) < 900, plain
    assert delayed["properties"].get("REAL_TOPIC") == topic, delayed
    # Java 4.9.8's ScheduleMessageService.messageTimeup writes the properties string before it
    # clears DELAY from the map, so the stored message (and what consumers see) keeps DELAY
    assert delayed["properties"].get("DELAY") == "3", delayed


async def _two_consumers(
    server: BrokerProcess, topic: str, group: str, messages: list[dict[str, Any]], home: Path, *,
    broadcast: bool, timeout: float,
) -> tuple[DriverResult, DriverResult]:
    """A cpp1 and an ali-ons push consumer in ONE group, both running before cpp1 produces."""
    cpp, js = require_client("cpp1"), require_client("node")
    args = {"namesrv": server.namesrv_addr, "topic": topic, "group": group, "timeout": timeout,
            "property_names": PROPERTY_NAMES, "broadcast": broadcast, "linger": 1,
            "expect": len(messages)}  # fmt: skip
    async with trio.open_nursery() as nursery:
        first = start_driver(nursery, cpp, "consumer", args, home / "c-cpp1", timeout=timeout + 30)
        second = start_driver(nursery, js, "consumer", args, home / "c-node", timeout=timeout + 30)
        await trio.sleep(4)  # both subscribed; the broker told each about the other (NOTIFY_CONSUMER_IDS_CHANGED)
        await _produce(cpp, server, topic, messages, home / "p")
        return await first.wait(), await second.wait()


async def test_broadcast_group_cpp1_and_node(rocketpy_server: BrokerProcess, client_home: Path, run_id: str) -> None:
    """Two BROADCASTING consumers of one group (C++ and ali-ons, offsets kept locally, starting
    at GET_MAX_OFFSET): each receives every message."""
    topic = f"CompatBcast_{run_id}"
    await _create_topic(rocketpy_server, topic)
    messages = sample_messages("TagC", 4, run_id=run_id)
    cpp_out, js_out = await _two_consumers(rocketpy_server, topic, f"CG_{run_id}", messages, client_home,
                                           broadcast=True, timeout=25)  # fmt: skip
    _check_consumed(require_client("cpp1"), cpp_out, topic, messages)
    _check_consumed(require_client("node"), js_out, topic, messages)


async def test_clustering_group_shared_by_cpp1_and_node(
    rocketpy_server: BrokerProcess, client_home: Path, run_id: str
) -> None:
    """Two CLUSTERING consumers of one group (C++ and ali-ons) split the queues between them
    (GET_CONSUMER_LIST_BY_GROUP, allocate averagely): every message arrives exactly once."""
    topic = f"CompatShare_{run_id}"
    await _create_topic(rocketpy_server, topic)
    messages = sample_messages("TagS", 8, run_id=run_id)
    cpp_out, js_out = await _two_consumers(rocketpy_server, topic, f"CG_{run_id}", messages, client_home,
                                           broadcast=False, timeout=10)  # fmt: skip
    got: list[dict[str, Any]] = []
    for out in (cpp_out, js_out):
        assert out.result is not None and not out.result.get("error"), out.describe()
        got.extend(out.result["messages"])
    keys = sorted(_norm_keys(m["keys"]) or "" for m in got)
    assert keys == sorted(m["keys"] for m in messages), (cpp_out.describe(), js_out.describe())
    assert cpp_out.result and js_out.result
    assert cpp_out.result["messages"] and js_out.result["messages"], "one consumer got every queue"
    cpp_queues = {m["queue_id"] for m in cpp_out.result["messages"]}
    js_queues = {m["queue_id"] for m in js_out.result["messages"]}
    assert not cpp_queues & js_queues, (cpp_queues, js_queues)
