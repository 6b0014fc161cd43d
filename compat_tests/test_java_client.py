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

import trio

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


async def test_java_and_python_clients_name_a_namespace_alike(
    java_classes: str, rocketpy_server: BrokerProcess, client_home: Path, run_id: str
) -> None:
    """Java's DefaultMQProducer(namespace, group) and ours with ClientConfig(namespace=...) meet on one topic,
    ``<namespace>%<topic>`` on the broker (created under that name only: no auto-creation helps a wrong one),
    and each side's consumer sees the other's messages under the user's topic, with INSTANCE_ID set."""
    from rocketpy.client import ClientConfig, ConsumeFromWhere, Producer, PushConsumer, make_message

    namespace, topic = f"MQ_INST_{run_id}", f"CompatJavaNs_{run_id}"
    response = await create_topic(rocketpy_server.broker_addr, f"{namespace}%{topic}", QUEUES)
    assert response.code == ResponseCode.SUCCESS, (response.code, response.remark)
    await wait_for_route(rocketpy_server.namesrv_addr, f"{namespace}%{topic}")
    produced = await run_java(java_classes, [*_produce_args(rocketpy_server.namesrv_addr, topic, run_id), namespace],
                              client_home / "producer")
    assert produced.result is not None and not produced.result.get("error"), produced.describe()
    results = produced.result["results"]
    assert [(r.get("status"), r.get("topic"), r.get("msg_topic")) for r in results] == \
        [("SEND_OK", topic, topic)] * N_MESSAGES, produced.describe()

    config = ClientConfig(namesrv_addr=rocketpy_server.namesrv_addr, namespace=namespace, rebalance_interval=1.0)
    got: list[Any] = []
    consumer = PushConsumer(f"CGPy_{run_id}", lambda msgs, ctx: got.extend(msgs), config=config,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic)
    async with consumer:
        with trio.fail_after(30):
            while len(got) < N_MESSAGES:
                await trio.sleep(0.05)
    assert sorted(m.keys_string for m in got) == sorted(spec["keys"] for spec in _expected(run_id))
    assert {(m.topic, m.properties.get("INSTANCE_ID")) for m in got} == {(topic, namespace)}

    async with Producer(f"PGPy_{run_id}", config=config) as producer:
        for i in range(N_MESSAGES):
            result = await producer.send(make_message(topic, f"py {i}", keys=f"py-{run_id}-{i}"))
            assert result.message_queue.topic == topic
    consumed = await run_java(java_classes, ["consume", rocketpy_server.namesrv_addr, topic, f"CGJ_{run_id}",
                                             str(2 * N_MESSAGES), run_id, "*", "40", namespace],
                              client_home / "consumer")
    assert consumed.result is not None and not consumed.result.get("error"), consumed.describe()
    mine = [m for m in consumed.result["messages"] if m["keys"].startswith("py-")]
    assert sorted(m["keys"] for m in mine) == sorted(f"py-{run_id}-{i}" for i in range(N_MESSAGES))
    assert {(m["topic"], m["properties"].get("INSTANCE_ID")) for m in mine} == {(topic, namespace)}
