"""The official Java client (rocketmq-client 4.9.x) against our servers.

Its jars cannot be downloaded here: the tests run when ROCKETMQ_JAVA_CLASSPATH names them
(a ``:``-separated classpath, ``dir/*`` allowed, e.g. the ``lib/`` of a RocketMQ 4.9.8
binary distribution) and skip with that reason otherwise. clients/java/CompatClient.java
is compiled with javac against that classpath at test time (the ``java_classes`` fixture, conftest.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from rocketpy.codecs import MQVersion, RequestCode, ResponseCode
from rocketpy.codecs.bodies.route import TopicRouteData
from rocketpy.namesrv.server import NameServer

from .capture import RecordingProxy
from .harness import sample_messages
from .servers import BrokerProcess, create_topic, run_java, wait_for_route
from .stub_broker import StubBroker

N_MESSAGES = 4
QUEUES = 4


def _produce_args(namesrv: str, topic: str, run_id: str, prefix: str = "TagJ") -> list[str]:
    return ["produce", namesrv, topic, f"PG_{run_id}", str(N_MESSAGES), run_id, prefix]


def _expected(run_id: str, prefix: str = "TagJ") -> list[dict[str, Any]]:
    return sample_messages(prefix, N_MESSAGES, run_id=run_id)


async def test_java_route_lookup_via_stub(
    java_classes: str,
    namesrv: NameServer,
    start_stub: Callable[..., Awaitable[StubBroker]],
    start_proxy: Callable[[str], Awaitable[RecordingProxy]],
    client_home: Path,
    run_id: str,
) -> None:
    topic = f"CompatJava_{run_id}"
    stub = await start_stub(namesrv.address, topic, queues=QUEUES)
    proxy = await start_proxy(namesrv.address)
    out = await run_java(java_classes, _produce_args(proxy.address, topic, run_id), client_home)
    assert out.result is not None and not out.result.get("error"), out.describe()
    assert [r.get("status") for r in out.result["results"]] == ["SEND_OK"] * N_MESSAGES, out.describe()
    assert len(stub.sends) == N_MESSAGES
    for received, spec in zip(stub.sends, _expected(run_id)):
        assert received.body.decode("utf-8") == spec["body"]
        assert received.properties.get("TAGS") == spec["tags"]
        assert received.properties.get("KEYS") == spec["keys"]
    route_requests = [r for r in proxy.requests(RequestCode.GET_ROUTEINFO_BY_TOPIC)
                      if (r.ext_fields or {}).get("topic") == topic]
    assert route_requests
    for request in route_requests:
        answer = proxy.response_to(request)
        assert answer is not None and answer.command is not None
        assert answer.command.code == ResponseCode.SUCCESS
        body = answer.command.body or b""
        TopicRouteData.decode(body)
        if request.version >= MQVersion.V4_9_4:
            assert b'"brokerAddrs":{"0":"' in body, body  # standard JSON for 4.9.4+
        else:
            assert b'"brokerAddrs":{0:"' in body, body


async def test_java_produce_consume(
    java_classes: str, rocketpy_server: BrokerProcess, client_home: Path, run_id: str
) -> None:
    topic = f"CompatJavaRT_{run_id}"
    response = await create_topic(rocketpy_server.broker_addr, topic, QUEUES)
    assert response.code == ResponseCode.SUCCESS, (response.code, response.remark)
    await wait_for_route(rocketpy_server.namesrv_addr, topic)
    produced = await run_java(java_classes, _produce_args(rocketpy_server.namesrv_addr, topic, run_id),
                              client_home / "producer")
    assert produced.result is not None and not produced.result.get("error"), produced.describe()
    assert [r.get("status") for r in produced.result["results"]] == ["SEND_OK"] * N_MESSAGES, produced.describe()
    consumed = await run_java(
        java_classes,
        ["consume", rocketpy_server.namesrv_addr, topic, f"CG_{run_id}", str(N_MESSAGES), run_id, "*", "40"],
        client_home / "consumer",
    )
    assert consumed.result is not None and not consumed.result.get("error"), consumed.describe()
    got = {m["keys"]: m for m in consumed.result["messages"]}
    for spec in _expected(run_id):
        m = got.get(spec["keys"])
        assert m is not None, consumed.describe()
        assert m["body"] == spec["body"] and m["tags"] == spec["tags"], m
        for key, value in spec["properties"].items():
            assert m["properties"].get(key) == value, m
    assert len(consumed.result["messages"]) == N_MESSAGES
    assert consumed.shutdown_ok, consumed.describe()
