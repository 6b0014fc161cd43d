"""Issue 3: real third-party clients look routes up in OUR NameServer.

A stub broker registers the test topic with our NameServer; each client's producer
starts against the NameServer (through a recording proxy) and sends to the topic. The
send can only reach the stub through the route our NameServer returned, so a send OK
proves the route was right. The proxy shows what the client sent (its version) and
what the NameServer answered (the legacy fastjson dialect these old clients expect).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rocketpy.codecs import RequestCode, ResponseCode
from rocketpy.codecs.bodies.route import TopicRouteData
from rocketpy.namesrv.server import NameServer

from .capture import RecordingProxy
from .harness import (
    EXPECTED_LANGUAGE,
    EXPECTED_VERSION,
    KNOWN_SHUTDOWN_CRASHES,
    ClientEnv,
    run_driver,
    sample_messages,
)
from .stub_broker import StubBroker

N_MESSAGES = 5
QUEUES = 4
SEND_OK = {"cpp1": "OK", "cpp2": "OK", "node": "SEND_OK"}


def _language(cmd: object) -> str:
    lang = getattr(cmd, "language", None)
    return getattr(lang, "name", str(lang))


async def _produce_through_stub(
    client: ClientEnv,
    namesrv: NameServer,
    start_stub: Callable[..., Awaitable[StubBroker]],
    start_proxy: Callable[[str], Awaitable[RecordingProxy]],
    client_home: Path,
    run_id: str,
    **driver_args: object,
) -> tuple[StubBroker, RecordingProxy, dict[str, Any], list[dict[str, Any]]]:
    topic = f"CompatRoute_{client.name}_{run_id}"
    stub = await start_stub(namesrv.address, topic, queues=QUEUES)
    proxy = await start_proxy(namesrv.address)
    messages = sample_messages("TagR", N_MESSAGES, run_id=run_id)
    args = {"namesrv": proxy.address, "topic": topic, "group": f"PG_{run_id}", "messages": messages}
    args.update(driver_args)
    out = await run_driver(client, "producer", args, client_home, timeout=60)
    assert out.result is not None, out.describe()
    assert not out.result.get("error"), out.describe()
    assert not out.result.get("errors"), out.describe()  # ali-ons 'error' events
    return stub, proxy, out.result, messages


async def test_route_lookup_and_send(
    client: ClientEnv,
    namesrv: NameServer,
    start_stub: Callable[..., Awaitable[StubBroker]],
    start_proxy: Callable[[str], Awaitable[RecordingProxy]],
    client_home: Path,
    run_id: str,
) -> None:
    stub, proxy, result, messages = await _produce_through_stub(
        client, namesrv, start_stub, start_proxy, client_home, run_id
    )
    topic = stub.topic

    # the client got a route from our NameServer and sent every message to the stub it names
    sends = result["results"]
    assert len(sends) == N_MESSAGES, result
    assert all(s.get("status") == SEND_OK[client.name] for s in sends), sends
    assert all(s.get("msg_id") for s in sends), sends
    for s in sends:
        if "queue_id" in s:
            assert 0 <= s["queue_id"] < QUEUES, s
    assert len(stub.sends) == N_MESSAGES, [r.code for r in stub.requests]
    for received, sent in zip(stub.sends, messages):
        assert received.topic == topic
        assert received.queue_id is not None and 0 <= received.queue_id < QUEUES
        assert received.version == EXPECTED_VERSION[client.name], received
        assert received.language == EXPECTED_LANGUAGE[client.name], received
        assert received.body.decode("utf-8") == sent["body"]
        assert received.properties.get("TAGS") == sent["tags"]
        assert received.properties.get("KEYS") == sent["keys"]
        for key, value in sent["properties"].items():
            assert received.properties.get(key) == value, received.properties

    # what went through the NameServer: the client's version, and answers it could parse
    assert not proxy.errors(), proxy.errors()
    route_requests = [r for r in proxy.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)
                      if (r.ext_fields or {}).get("topic") == topic]
    assert route_requests, f"{client.name} never asked our NameServer for {topic}"
    for request in proxy.requests():
        assert request.version == EXPECTED_VERSION[client.name], (request.code, request.version)
    for request in route_requests:
        answer = proxy.response_to(request)
        assert answer is not None and answer.command is not None, "no answer to GET_ROUTEINFO_BY_TOPIC"
        assert answer.command.code == ResponseCode.SUCCESS, (answer.command.code, answer.command.remark)
        body = answer.command.body or b""
        # versions before V4_9_4 get fastjson's default dialect: bare integer map keys
        assert b'"brokerAddrs":{0:"' in body, body
        route = TopicRouteData.decode(body)
        assert route.broker_datas and route.broker_datas[0].broker_addrs == {0: stub.address}, body
        assert route.queue_datas and route.queue_datas[0].write_queue_nums == QUEUES, body
        # the JSON header itself is standard JSON the client parsed
        assert answer.raw[8:9] == b"{"


async def test_unknown_topic_is_topic_not_exist(
    client: ClientEnv,
    namesrv: NameServer,
    start_stub: Callable[..., Awaitable[StubBroker]],
    start_proxy: Callable[[str], Awaitable[RecordingProxy]],
    client_home: Path,
    run_id: str,
) -> None:
    """A topic nobody registered: the NameServer answers TOPIC_NOT_EXIST and the send fails
    cleanly (the stub registered TBW102, so a client may fall back to the default route)."""
    stub = await start_stub(namesrv.address, f"Other_{run_id}", queues=QUEUES, extra_topics=())
    proxy = await start_proxy(namesrv.address)
    topic = f"CompatMissing_{client.name}_{run_id}"
    args = {
        "namesrv": proxy.address, "topic": topic, "group": f"PG_{run_id}",
        "messages": sample_messages("TagM", 1, run_id=run_id), "send_timeout_ms": 2000,
    }  # fmt: skip
    out = await run_driver(client, "producer", args, client_home, timeout=60)
    assert out.result is not None, out.describe()
    sends = out.result.get("results") or []
    assert not any(s.get("status") for s in sends), out.describe()
    assert not stub.sends
    route_requests = [r for r in proxy.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)
                      if (r.ext_fields or {}).get("topic") == topic]
    assert route_requests, out.describe()
    for request in route_requests:
        answer = proxy.response_to(request)
        assert answer is not None and answer.command is not None
        assert answer.command.code == ResponseCode.TOPIC_NOT_EXIST, (answer.command.code, answer.command.remark)
        assert answer.command.remark and topic in answer.command.remark


async def test_node_signed_requests_accepted_with_acl_off(
    node: ClientEnv,
    namesrv: NameServer,
    start_stub: Callable[..., Awaitable[StubBroker]],
    start_proxy: Callable[[str], Awaitable[RecordingProxy]],
    client_home: Path,
    run_id: str,
) -> None:
    """ali-ons with access keys adds AccessKey/Signature/OnsChannel to every request; with
    ACL off our NameServer must ignore them."""
    stub, proxy, result, _ = await _produce_through_stub(
        node, namesrv, start_stub, start_proxy, client_home, run_id, access_key="compat-ak", secret_key="compat-sk"
    )
    assert all(s.get("status") == "SEND_OK" for s in result["results"]), result
    route_requests = proxy.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)
    assert route_requests
    assert all("Signature" in (r.ext_fields or {}) and "AccessKey" in (r.ext_fields or {}) for r in route_requests)
    assert len(stub.sends) == N_MESSAGES


async def test_push_consumer_finds_route(
    client: ClientEnv,
    namesrv: NameServer,
    start_stub: Callable[..., Awaitable[StubBroker]],
    start_proxy: Callable[[str], Awaitable[RecordingProxy]],
    client_home: Path,
    run_id: str,
) -> None:
    """A push consumer asks our NameServer for its topic's route, then heartbeats and pulls at the stub."""
    topic = f"CompatSub_{client.name}_{run_id}"
    group = f"CG_{run_id}"
    stub = await start_stub(namesrv.address, topic, queues=QUEUES)
    proxy = await start_proxy(namesrv.address)
    args = {"namesrv": proxy.address, "topic": topic, "group": group, "expect": 1, "timeout": 3}
    out = await run_driver(client, "consumer", args, client_home, timeout=60)
    assert out.result is not None and out.result.get("started"), out.describe()
    assert not out.result.get("error"), out.describe()
    if (client.name, "consumer") not in KNOWN_SHUTDOWN_CRASHES:
        assert out.shutdown_ok, out.describe()
    route_requests = [r for r in proxy.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)
                      if (r.ext_fields or {}).get("topic") == topic]
    assert route_requests, out.describe()
    for request in route_requests:
        answer = proxy.response_to(request)
        assert answer is not None and answer.command is not None
        assert answer.command.code == ResponseCode.SUCCESS
    codes = {r.code for r in stub.requests}
    assert RequestCode.HEART_BEAT in codes, codes
    assert stub.consumers.get(group), stub.consumers
    assert RequestCode.PULL_MESSAGE in codes, codes  # the route's queues were assigned and pulled
    pulled = {int((r.ext_fields or {})["queueId"]) for r in stub.requests if r.code == RequestCode.PULL_MESSAGE}
    assert pulled == set(range(QUEUES)), pulled
    assert all(r.version == EXPECTED_VERSION[client.name] for r in stub.requests)


async def test_route_with_two_brokers(
    client: ClientEnv,
    namesrv: NameServer,
    start_stub: Callable[..., Awaitable[StubBroker]],
    start_proxy: Callable[[str], Awaitable[RecordingProxy]],
    client_home: Path,
    run_id: str,
) -> None:
    """Two brokers serve the topic: the route lists both and the client's sends reach both."""
    topic = f"CompatTwo_{client.name}_{run_id}"
    stubs = [
        await start_stub(namesrv.address, topic, queues=QUEUES, broker_name=f"compat-stub-{i}")
        for i in range(2)
    ]
    proxy = await start_proxy(namesrv.address)
    n = 2 * QUEUES
    args = {"namesrv": proxy.address, "topic": topic, "group": f"PG_{run_id}",
            "messages": sample_messages("TagT", n, run_id=run_id)}
    out = await run_driver(client, "producer", args, client_home, timeout=60)
    assert out.result is not None and not out.result.get("error"), out.describe()
    assert [s.get("status") for s in out.result["results"]] == [SEND_OK[client.name]] * n, out.describe()
    assert all(stub.sends for stub in stubs), [len(stub.sends) for stub in stubs]
    assert sum(len(stub.sends) for stub in stubs) == n
    route_requests = [r for r in proxy.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)
                      if (r.ext_fields or {}).get("topic") == topic]
    answer = proxy.response_to(route_requests[0])
    assert answer is not None and answer.command is not None and answer.command.body
    route = TopicRouteData.decode(answer.command.body)
    assert {b.broker_name for b in route.broker_datas or []} == {"compat-stub-0", "compat-stub-1"}
    assert {q.broker_name for q in route.queue_datas or []} == {"compat-stub-0", "compat-stub-1"}
