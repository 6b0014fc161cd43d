"""The client's public API on both event loops: every test runs once under trio and once under asyncio (the
native asyncio driver, remoting.aio: no thread, no trio loop), against the pytest plugin's cluster.

The same test body runs on either loop because the client is written against anyio; each test asserts what a
user relies on (what was stored, consumed, committed, answered), not how the loop got there."""

from __future__ import annotations

from datetime import datetime, timedelta

import anyio
import loops
import pytest
from clusters import make_topic
from loops import drain, gather, name, run, wait_for

from rocketpy.client import (
    ConsumeFromWhere,
    Producer,
    PushConsumer,
    create_reply_message,
    make_message,
)
from rocketpy.client.transaction import TransactionProducer
from rocketpy.codecs.codes import LocalTransactionState, SendStatus
from rocketpy.pytest_plugin import Cluster

pytestmark = pytest.mark.timeout(120)

loop = loops.loop  # the fixture every test here takes: trio, then asyncio


def test_every_send_mode_stores_the_messages(loop: str, rocketmq_session_cluster: Cluster) -> None:
    topic = name("LoopSend")

    async def main() -> list[bytes]:
        async with Producer(name("PG"), namesrv=rocketmq_session_cluster.namesrv) as producer:
            first = await producer.send(make_message(topic, "sync"))
            assert first.send_status == SendStatus.SEND_OK
            many = await gather([producer.send(make_message(topic, f"c{i}")) for i in range(16)])
            assert {r.send_status for r in many} == {SendStatus.SEND_OK}
            assert len({r.msg_id for r in many}) == 16
            assert (await producer.send_async(make_message(topic, "async")).result()).send_status == SendStatus.SEND_OK
            await producer.send_oneway(make_message(topic, "oneway"))
            batch = await producer.send_batch([make_message(topic, f"b{i}") for i in range(3)])
            assert batch.send_status == SendStatus.SEND_OK
        return await drain(rocketmq_session_cluster, topic, 22)

    bodies = run(loop, main)
    assert sorted(bodies) == sorted([b"sync", b"async", b"oneway"] + [f"c{i}".encode() for i in range(16)]
                                    + [f"b{i}".encode() for i in range(3)])


def test_a_push_consumer_consumes_every_message_and_commits_its_offsets(loop: str,
                                                                       rocketmq_session_cluster: Cluster) -> None:
    topic, group = name("LoopPush"), name("CGPush")
    namesrv = rocketmq_session_cluster.namesrv

    async def main() -> tuple[list[bytes], int]:
        async with Producer(name("PG"), namesrv=namesrv) as producer:
            for i in range(12):
                await producer.send(make_message(topic, f"p{i}"))
        got: list[bytes] = []

        async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
            await anyio.sleep(0)  # a coroutine listener runs on the consumer's own loop
            got.extend(m.body for m in msgs)

        consumer = PushConsumer(group, listener, namesrv=namesrv,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe(topic)
        async with consumer:
            await wait_for(lambda: len(got) >= 12, "consumed")
        committed = sum(rocketmq_session_cluster.broker.offsets.table.get(f"{topic}@{group}", {}).values())
        return got, committed

    got, committed = run(loop, main)
    assert sorted(got) == sorted(f"p{i}".encode() for i in range(12))
    assert committed == 12  # shutdown persisted the offset after the last message of every queue


def test_a_transaction_left_unknown_is_committed_by_the_brokers_check(loop: str,
                                                                     rocketmq_session_cluster: Cluster) -> None:
    topic = name("LoopTx")
    checked: list[bytes] = []

    def check(msg):  # type: ignore[no-untyped-def]
        checked.append(msg.body)
        return LocalTransactionState.COMMIT_MESSAGE

    async def main() -> list[bytes]:
        async with TransactionProducer(name("TPG"), lambda m, a: LocalTransactionState.UNKNOW, check,
                                       namesrv=rocketmq_session_cluster.namesrv) as producer:
            result, state = await producer.send_in_transaction(make_message(topic, "half"))
            assert result.send_status == SendStatus.SEND_OK and state == LocalTransactionState.UNKNOW
            # the broker asks back over this client's own connection (CHECK_TRANSACTION_STATE)
            await wait_for(lambda: bool(checked), "checked")
        return await drain(rocketmq_session_cluster, topic, 1)

    assert run(loop, main) == [b"half"] and checked == [b"half"]


def test_request_reply_gets_the_consumers_answer(loop: str, rocketmq_session_cluster: Cluster) -> None:
    topic = name("LoopReq")
    namesrv = rocketmq_session_cluster.namesrv

    async def main() -> bytes:
        async with Producer(name("Req"), namesrv=namesrv) as requester, \
                Producer(name("Resp"), namesrv=namesrv) as responder:

            async def answer(msgs, ctx):  # type: ignore[no-untyped-def]
                for msg in msgs:
                    if "REPLY_TO_CLIENT" in msg.properties:
                        await responder.send(create_reply_message(msg, b"pong: " + msg.body))

            await requester.send(make_message(topic, "warm up"))
            consumer = PushConsumer(name("CGReq"), answer, namesrv=namesrv,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
            consumer.subscribe(topic)
            async with consumer:
                await wait_for(lambda: bool(consumer.pq_table), "queues taken")
                await anyio.sleep(0.5)
                reply = await requester.request(make_message(topic, "ping"), timeout=10.0)
        return reply.body

    assert run(loop, main) == b"pong: ping"


def test_a_cancelled_send_leaves_nothing_behind(loop: str, rocketmq_session_cluster: Cluster,
                                               caplog: pytest.LogCaptureFixture) -> None:
    topic = name("LoopCancel")

    async def main() -> SendStatus:
        async with Producer(name("PG"), namesrv=rocketmq_session_cluster.namesrv) as producer:
            await producer.send(make_message(topic, "route"))
            for _ in range(5):
                with anyio.move_on_after(0.0005):  # given up while its answer is on the way
                    await producer.send(make_message(topic, "cancelled"))
            status = (await producer.send(make_message(topic, "after"))).send_status
            remoting = producer.client.remoting
            assert remoting is not None
            # the waits given up are gone (the instance's own heartbeats may be in flight a moment)
            await wait_for(lambda: remoting.pending_requests() == 0, "no waits left", seconds=2)
            await anyio.sleep(0.2)  # the late answers arrive meanwhile
            return status

    with caplog.at_level("WARNING", logger="rocketpy.remoting"):
        assert run(loop, main) == SendStatus.SEND_OK
    assert "matches no request" not in caplog.text  # the late answers of given-up sends are expected


def test_consume_from_where_for_a_new_group_and_a_group_with_offsets(loop: str,
                                                                    rocketmq_session_cluster: Cluster) -> None:
    """RebalancePushImpl.computePullFromWhere as a user sees it: a group's committed offset wins whatever the
    setting, and a new group starts at 0 whatever its setting while the queue's first message is still in memory
    (Java's broker answers offset 0 then, not "no offset", so the last offset and a timestamp past the last
    message do not apply: ConsumerManageProcessor.queryConsumerOffset)."""
    c, topic = rocketmq_session_cluster, name("LoopWhere")

    async def consume(group: str, where: ConsumeFromWhere, count: int, **kw: str) -> list[bytes]:
        got: list[bytes] = []

        async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
            got.extend(m.body for m in msgs)

        consumer = PushConsumer(group, listener, namesrv=c.namesrv, consume_from_where=where, **kw)
        consumer.subscribe(topic)
        async with consumer:
            await wait_for(lambda: any(mq.topic == topic for mq in consumer.pq_table), "queue taken")
            await wait_for(lambda: len(got) >= count, f"{count} consumed")
            await anyio.sleep(0.3)  # and no more come
        return got

    async def send(*bodies: str) -> None:
        async with Producer(name("PG"), namesrv=c.namesrv) as producer:
            for body in bodies:
                await producer.send(make_message(topic, body))

    async def main() -> None:
        await make_topic(c, topic, 1)
        await send("a", "b", "c")
        first, last, later = name("CGFirst"), name("CGLast"), name("CGLater")
        assert await consume(first, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, 3) == [b"a", b"b", b"c"]
        assert await consume(last, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, 3) == [b"a", b"b", b"c"]
        future = datetime.now() + timedelta(hours=1)
        assert await consume(later, ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, 3,
                             consume_timestamp=future.strftime("%Y%m%d%H%M%S")) == [b"a", b"b", b"c"]
        await send("d", "e")
        # each group resumes from its committed offset: the new messages only, none again, none lost
        for group, where in [(first, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET),
                             (last, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET),
                             (later, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)]:
            assert await consume(group, where, 2) == [b"d", b"e"], group

    run(loop, main)
