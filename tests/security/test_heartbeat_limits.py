"""Issue #46, item 3: a 14 MiB HEART_BEAT of 100,000 subscriptions stalled every other connection's sends.

Java 4.9.8 bounds only the frame (16 MiB) and takes such a heartbeat (decoded on its heartbeat thread
pool, so its other threads go on; ours decoded it on the event loop every connection's sends wait on).
Ours bound what one request may make the broker hold (heartbeatMaxBodySize, heartbeatMaxSubscriptions,
heartbeatMaxGroups, lockBatchMqMaxBodySize, checkClientConfigMaxBodySize, updateBrokerConfigMaxBodySize:
0 lifts one, as Java), answer a request over one SYSTEM_ERROR with one log line, and decode a big
heartbeat in steps between which the other connections are served.
"""

from __future__ import annotations

import json
import logging

import pytest
import trio
from security_helpers import invoke

from rocketpy.codecs import RemotingCommand, ResponseCode
from rocketpy.codecs.codes import RequestCode
from rocketpy.codecs.frame import FrameSplitter
from rocketpy.testing import broker_client, running_broker

_SUB = ('{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1700000000000,'
        '"tagsSet":[],"topic":"FloodTopic%07d"}')
_CONSUMER = ('{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"%s",'
             '"messageModel":"CLUSTERING","subscriptionDataSet":[%s],"unitMode":false}')


def heartbeat_body(subscriptions: int, group: str = "FLOOD", producers: int = 0) -> bytes:
    """A Java client's HeartbeatData: one consumer group subscribing to ``subscriptions`` topics (as the
    issue's, 147 bytes each) and ``producers`` producer groups."""
    subs = ",".join(_SUB % i for i in range(subscriptions))
    producer_groups = ",".join(f'{{"groupName":"PG{i}"}}' for i in range(producers))
    consumers = _CONSUMER % (group, subs)
    text = f'{{"clientID":"127.0.0.1@flood","consumerDataSet":[{consumers}],"producerDataSet":[{producer_groups}]}}'
    return text.encode()


def refusals(caplog: pytest.LogCaptureFixture, code: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if f"process request refused: code {code} " in r.getMessage()]


async def test_the_issues_heartbeat_is_refused_undecoded(tmp_path, caplog):
    """14 MiB, 100,000 subscriptions: Java 4.9.8 answers 0 (and registers them all); ours answer SYSTEM_ERROR
    naming heartbeatMaxBodySize (4 MiB), log one line, and register nothing."""
    body = heartbeat_body(100_000)
    assert len(body) > 13.9 * 1024 * 1024
    async with running_broker(str(tmp_path)) as broker, broker_client(broker.address) as c:
        with caplog.at_level(logging.WARNING, logger="rocketpy"):
            answer = await c.invoke(RequestCode.HEART_BEAT, None, body)
        assert answer.code == ResponseCode.SYSTEM_ERROR
        assert answer.remark == f"HEART_BEAT body of {len(body)} bytes is over heartbeatMaxBodySize=4194304"
        assert broker.consumers.get("FLOOD") is None
    assert len(refusals(caplog, RequestCode.HEART_BEAT)) == 1


@pytest.mark.parametrize(("subscriptions", "producers", "cause"), [
    (10_001, 0, "HEART_BEAT with 10001 subscriptions is over heartbeatMaxSubscriptions=10000"),
    (1, 1_000, "HEART_BEAT with 1001 groups is over heartbeatMaxGroups=1000"),
])
async def test_a_heartbeat_of_too_many_subscriptions_or_groups_registers_none(
        tmp_path, caplog, subscriptions, producers, cause):
    """Within the body size, more subscriptions or groups than the limits: Java 4.9.8 registers them all;
    ours refuse the whole heartbeat, before any is registered."""
    body = heartbeat_body(subscriptions, producers=producers)
    async with running_broker(str(tmp_path)) as broker, broker_client(broker.address) as c:
        with caplog.at_level(logging.WARNING, logger="rocketpy"):
            answer = await c.invoke(RequestCode.HEART_BEAT, None, body)
        assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, cause)
        assert broker.consumers.get("FLOOD") is None and not broker.producers.groups
    logged = refusals(caplog, RequestCode.HEART_BEAT)
    assert len(logged) == 1 and logged[0].endswith(f"answered SYSTEM_ERROR: {cause}")


async def test_a_limit_of_zero_takes_what_java_takes(tmp_path):
    """heartbeatMaxSubscriptions=0 (and the others): no limit, as Java."""
    body = heartbeat_body(10_001, producers=1_000)
    async with running_broker(str(tmp_path), heartbeatMaxSubscriptions=0, heartbeatMaxGroups=0) as broker:
        async with broker_client(broker.address) as c:  # (a client's groups go with its connection)
            assert (await c.invoke(RequestCode.HEART_BEAT, None, body)).code == ResponseCode.SUCCESS
            group = broker.consumers.get("FLOOD")
            assert group is not None and len(group.subscriptions) == 10_001
            assert len(broker.producers.groups) == 1_000


@pytest.mark.parametrize(("code", "key", "body"), [
    (RequestCode.LOCK_BATCH_MQ, "lockBatchMqMaxBodySize",
     json.dumps({"consumerGroup": "G", "clientId": "c", "mqSet": [{"brokerName": "b" * 200, "queueId": i,
                                                                    "topic": "T"} for i in range(5000)]})),
    (RequestCode.UNLOCK_BATCH_MQ, "lockBatchMqMaxBodySize",
     json.dumps({"consumerGroup": "G", "clientId": "c", "mqSet": [{"brokerName": "b" * 200, "queueId": i,
                                                                    "topic": "T"} for i in range(5000)]})),
    (RequestCode.CHECK_CLIENT_CONFIG, "checkClientConfigMaxBodySize",
     json.dumps({"clientId": "c", "group": "G", "subscriptionData": {"topic": "T", "subString": "a" * 70_000}})),
    (RequestCode.UPDATE_BROKER_CONFIG, "updateBrokerConfigMaxBodySize", "fileReservedTime=72\n" * 4000),
])
async def test_bodies_over_their_codes_limit_are_refused(tmp_path, caplog, code, key, body):
    """Each code's body limit (Java 4.9.8: none below the 16 MiB frame): SYSTEM_ERROR naming the key, one
    log line."""
    async with running_broker(str(tmp_path)) as broker:
        with caplog.at_level(logging.WARNING, logger="rocketpy"):
            answer = await invoke(broker.address, code, body.encode())
        assert answer.code == ResponseCode.SYSTEM_ERROR and f"is over {key}=" in (answer.remark or "")
        assert broker.configuration.data_version.counter == 0
    assert len(refusals(caplog, code)) == 1


@pytest.mark.timeout(120)
async def test_sends_are_answered_while_a_big_heartbeat_is_decoded(tmp_path):
    """A heartbeat of 9,000 subscriptions (1.3 MiB, within the limits) takes a few hundred ms to decode and
    register. Its frame is sent but for its last byte; sends on a second connection go on meanwhile; then
    the last byte. Before issue #46 the decode ran on the event loop in one go, so no send was answered from
    the moment the frame was whole until the heartbeat was registered (one or two at most, answered before
    the broker read that byte); now the decode yields, and the sends keep being answered. (Java decodes
    heartbeats on a thread pool of their own: its sends are not held either.)"""
    frame = RemotingCommand.request(RequestCode.HEART_BEAT, None, heartbeat_body(9_000)).encode()
    events: list[str] = []
    async with running_broker(str(tmp_path)) as broker:
        register = broker.consumers.register

        def registering(group, *args, **kwargs):  # type: ignore[no-untyped-def]
            events.append(f"registered {group}")
            return register(group, *args, **kwargs)

        broker.consumers.register = registering  # type: ignore[method-assign]
        host, _, port = broker.address.rpartition(":")
        async with broker_client(broker.address) as c, await trio.open_tcp_stream(host, int(port)) as stream:
            assert (await c.send("FloodCheckTopic", b"first")).code == ResponseCode.SUCCESS  # type: ignore[union-attr]
            await stream.send_all(frame[:-1])
            for _ in range(20):  # the broker has read all that came of the frame by now
                await c.send("FloodCheckTopic", b"x")
            stop = trio.Event()

            async def sends() -> None:
                while not stop.is_set():
                    answer = await c.send("FloodCheckTopic", b"y")
                    assert answer is not None and answer.code == ResponseCode.SUCCESS
                    events.append("send answered")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(sends)
                while events.count("send answered") < 3:
                    await trio.sleep(0)
                events.append("last byte")
                await stream.send_all(frame[-1:])
                frames = FrameSplitter()
                answer = None
                while answer is None:
                    frames.feed(await stream.receive_some())
                    answer = frames.next_frame()
                stop.set()
            assert RemotingCommand.decode(answer).code == ResponseCode.SUCCESS
    during = events[events.index("last byte"): events.index("registered FLOOD")]
    assert during.count("send answered") >= 5, events
