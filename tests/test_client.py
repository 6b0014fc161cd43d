"""The Python client against our NameServer and real broker: sends, consumers, transactions, request-reply.

Every test runs once under trio and once under asyncio (the ``loop`` fixture of tests/loops.py), against
brokers on a thread of their own (the session cluster, or a module's probed one). What the client sent is read
from the broker's probe (tests/clusters.py); the broker's view (offsets, locks, connections) from the broker
itself. The orderly and broadcasting consumers are in tests/test_client_loops_features.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import anyio
import clusters
import loops
import pytest
from clusters import Cluster, committed_offsets, make_topic, threaded_cluster
from loops import name, run

from rocketpy.client import (
    ClientConfig,
    ConsumeStatus,
    LitePullConsumer,
    Producer,
    PushConsumer,
    TransactionProducer,
    create_reply_message,
    make_message,
    select_by_hash,
)
from rocketpy.client.admin import Admin
from rocketpy.codecs import RequestCode
from rocketpy.codecs.bodies import MessageQueue
from rocketpy.codecs.codes import ConsumeFromWhere, LocalTransactionState, SendStatus
from rocketpy.codecs.message import MessageExt, decompress_body


def fast(c: Cluster, **kw: object) -> ClientConfig:
    """Client settings that make tests quick: frequent rebalance and offset persistence."""
    return ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=1.0, persist_consumer_offset_interval=0.5,
                        poll_name_server_interval=1.0, **kw)  # type: ignore[arg-type]


loop = loops.loop  # every test here takes it: it runs once under trio and once under asyncio (issue #45)


@pytest.fixture(scope="module")
def probed_small() -> Iterator[Cluster]:
    """A probed broker that takes bodies of 1 KiB at most."""
    with threaded_cluster(probe=True, maxMessageSize="1024") as c:
        yield c


probed, probed_two = clusters.probed, clusters.probed_two


async def stored(c: Cluster, topic: str) -> list[MessageExt]:
    """Every message the brokers hold in ``topic``, queue by queue."""
    out: list[MessageExt] = []
    async with Admin(c.namesrv) as admin:
        for mq, (lo, hi) in sorted((await admin.queue_bounds(topic)).items(), key=lambda kv: kv[0].queue_id):
            offset = lo
            while offset < hi:
                msgs, nxt = await admin.pull(mq, offset)
                if nxt <= offset:
                    break
                out += msgs
                offset = nxt
    return out


def test_send_modes_and_wire_format(loop: str, probed: Cluster) -> None:
    c, topic, group = probed, name("TopicA"), name("PG")
    messages: list[MessageExt] = []

    async def main() -> None:
        async with Producer(group, namesrv=c.namesrv) as p:
            r = await p.send(make_message(topic, "hello", tags="TagA", keys=["k1", "k2"],
                                          properties={"color": "red"}))
            assert r.send_status == SendStatus.SEND_OK and r.msg_id and len(r.msg_id) == 32
            big = make_message(topic, b"x" * 5000)
            r2 = await p.send(big)
            await p.send_oneway(make_message(topic, "oneway"))
            got = []
            fut = p.send_async(make_message(topic, "async"), on_success=got.append)
            r3 = await fut.result()
            assert got == [r3]
            rb = await p.send_batch([make_message(topic, f"b{i}", tags="B") for i in range(3)])
            assert len(rb.msg_id.split(",")) == 3
        with anyio.fail_after(10):
            while len(messages) < 7:
                await anyio.sleep(0.05)
                messages[:] = await stored(c, topic)
        sends = [s for s in c.probe.of(RequestCode.SEND_MESSAGE_V2) if s.ext_fields["a"] == group]
        first = sends[0].ext_fields
        # the V2 short header, properties in Java HashMap order, WAIT and UNIQ_KEY added, as Java sends them
        assert first["b"] == topic and first["c"] == "TBW102" and first["d"] == "4"
        assert first["i"].split("\x02")[0].split("\x01")[0] in {"KEYS", "color", "UNIQ_KEY", "WAIT", "TAGS"}
        assert "KEYS\x01k1 k2" in first["i"] and f"UNIQ_KEY\x01{r.msg_id}" in first["i"]
        assert len(messages) == 7
        big_stored = next(m for m in messages if m.msg_id == r2.offset_msg_id)
        assert big_stored.sys_flag == 0x301 and decompress_body(big_stored.body) == b"x" * 5000
        assert any(b.ext_fields["a"] == group for b in c.probe.of(RequestCode.SEND_BATCH_MESSAGE))

    run(loop, main)


def test_ordered_send_by_hash(loop: str, rocketmq_session_cluster: Cluster) -> None:
    c, topic = rocketmq_session_cluster, name("TopicO")

    async def main() -> list[int]:
        await make_topic(c, topic, 4)
        async with Producer(name("PG"), namesrv=c.namesrv) as p:
            return [(await p.send(make_message(topic, f"o{i}"), selector=select_by_hash, arg=i % 3))
                    .message_queue.queue_id for i in range(9)]

    # Java: abs(Integer.hashCode() % 4); order id 0,1,2 -> queues 0,1,2
    assert run(loop, main) == [0, 1, 2] * 3


def test_retry_on_another_broker_after_failure(loop: str, probed_two: Cluster) -> None:
    c, topic = probed_two, name("TopicR")

    async def main() -> None:
        await make_topic(c, topic, 2)
        async with Producer(name("PG"), client=None, config=fast(c), send_latency_fault_enable=True) as p:
            await p.send(make_message(topic, "warm"))
            c.probes[0].fail_sends = 100
            try:
                results = [await p.send(make_message(topic, f"r{i}")) for i in range(6)]
                assert {r.message_queue.broker_name for r in results} == {"broker-b"}
                # the failed broker is in quarantine: later sends do not even try it
                tried_a = c.probes[0].fail_sends
                for i in range(4):
                    await p.send(make_message(topic, f"s{i}"))
                assert c.probes[0].fail_sends == tried_a
            finally:
                c.probes[0].fail_sends = 0

    run(loop, main)


def test_send_fails_after_retries(loop: str, probed: Cluster) -> None:
    from rocketpy.client import MQClientError

    async def main() -> None:
        probed.probe.fail_sends = 10
        try:
            async with Producer(name("PG"), namesrv=probed.namesrv) as p:
                with pytest.raises(MQClientError, match="Send \\[3\\] times"):
                    await p.send(make_message(name("TopicF"), "x"))
            assert probed.probe.fail_sends == 7  # three attempts, no more
        finally:
            probed.probe.fail_sends = 0

    run(loop, main)


def test_send_failure_lines_say_what_comes_next(loop: str, probed_small: Cluster,
                                                caplog: pytest.LogCaptureFixture) -> None:
    """DefaultMQProducerImpl's words for a failed attempt: "resend at once" when one is left (the only broker
    again: it said "retry on another broker"), "throw exception" for a code no send is retried after, whose
    remark names the broker's maxMessageSize as Java's does (it said "128k")."""
    import logging

    from rocketpy.client import MQBrokerError

    c, topic = probed_small, name("TopicL")

    async def main() -> None:
        async with Producer(name("PG"), namesrv=c.namesrv) as p:
            await p.send(make_message(topic, "warm"))
            c.probe.fail_sends = 1
            with caplog.at_level(logging.WARNING, logger="rocketpy.client"):
                result = await p.send(make_message(topic, "x"))
            assert result.message_queue.broker_name == "broker-a"
            lines = [r.getMessage() for r in caplog.records if r.name == "rocketpy.client"]
            assert len(lines) == 1 and lines[0].startswith("sendKernelImpl exception, resend at once, InvokeID: ")
            assert f", Broker: MessageQueue [topic={topic}, brokerName=broker-a, queueId=" in lines[0]
            assert "another broker" not in caplog.text
            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="rocketpy.client"):
                with pytest.raises(MQBrokerError) as refused:
                    await p.send(make_message(topic, b"x" * 2000))
            assert refused.value.response_code == 13
            assert ("DESC: the message is illegal, maybe msg body or properties length not matched. msg body length "
                    "limit 1024B, msg properties length limit 32KB.") in str(refused.value)
            lines = [r.getMessage() for r in caplog.records if r.name == "rocketpy.client"]
            assert len(lines) == 1 and lines[0].startswith("sendKernelImpl exception, throw exception, InvokeID: ")

    run(loop, main)


def test_push_consumer_with_retry(loop: str, probed: Cluster) -> None:
    c, topic, group = probed, name("TopicP"), name("CG")
    seen: list[tuple[bytes, int]] = []

    async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
        for m in msgs:
            seen.append((m.body, m.reconsume_times))
            assert m.topic == topic
            if m.body == b"m3" and m.reconsume_times < 2:
                return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    async def main() -> None:
        await make_topic(c, topic, 4)
        async with Producer(name("PG"), namesrv=c.namesrv) as p:
            for i in range(8):
                await p.send(make_message(topic, f"m{i}", tags="TagA" if i % 4 else "TagB"))
            consumer = PushConsumer(group, listener, config=fast(c),
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe(topic, "TagA")
            async with consumer:
                await loops.wait_for(lambda: len(seen) >= 8, "consumed and redelivered")

    run(loop, main)
    bodies = Counter(b for b, _ in seen)
    assert set(bodies) == {b"m1", b"m2", b"m3", b"m5", b"m6", b"m7"}
    assert bodies[b"m3"] == 3 and sorted(t for b, t in seen if b == b"m3") == [0, 1, 2]
    back = [r for r in c.probe.of(RequestCode.CONSUMER_SEND_MSG_BACK) if r.ext_fields["group"] == group]
    assert len(back) == 2 and back[0].ext_fields["delayLevel"] == "0"
    # offsets committed to the broker for every queue of the topic
    assert sum(committed_offsets(c.broker, group, topic).values()) == 8


def test_a_rebalance_under_way_ends_before_the_shutdown_unregisters(  # type: ignore[no-untyped-def]
        loop: str, rocketmq_session_cluster: Cluster, caplog, monkeypatch) -> None:
    """Ctrl-C two seconds into examples/push_consumer_retry.py: its first rebalance asked for the group's
    consumers after the shutdown had unregistered it, and the broker's answer ("no consumer for this group")
    made two warnings of a normal shutdown. The shutdown now lets the rebalance under way end first."""
    c, topic, group = rocketmq_session_cluster, name("TopicStopRb"), name("CGStopRb")

    async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
        pass

    consumer = PushConsumer(group, listener, config=fast(c))
    consumer.subscribe(topic)

    async def main() -> None:
        await make_topic(c, topic, 4)
        await consumer.start()
        await loops.wait_for(lambda: sum(mq.topic == topic for mq in consumer.pq_table) == 4, "queues taken")
        client = consumer.client
        real_find = client.find_consumer_ids
        asked, answer = anyio.Event(), anyio.Event()

        async def slow_find(topic: str, group: str) -> list[str]:  # a broker slow to answer
            asked.set()
            await answer.wait()
            return await real_find(topic, group)

        monkeypatch.setattr(client, "find_consumer_ids", slow_find)
        caplog.set_level("WARNING", logger="rocketpy.client")
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(consumer.do_rebalance)
            await asked.wait()
            tasks.start_soon(consumer.shutdown)
            # the shutdown has unregistered the group (as it did), or waits for the rebalance (as it does now)
            await loops.wait_for(lambda: group not in client.consumers
                                 or consumer._rebalance_lock.statistics().tasks_waiting > 0, "shutdown under way")
            answer.set()

    run(loop, main)
    assert not consumer.running
    assert "no consumer for this group" not in caplog.text and "consumer id list failed" not in caplog.text, \
        caplog.text


def test_rebalance_join_and_leave_no_loss_no_dup(loop: str, rocketmq_session_cluster: Cluster) -> None:
    c, topic, group = rocketmq_session_cluster, name("TopicRb"), name("CGR")
    got: dict[str, list[bytes]] = {"A": [], "B": []}

    def listener_for(who):  # type: ignore[no-untyped-def]
        async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
            got[who].extend(m.body for m in msgs)
        return listener

    def total() -> int:
        return len(got["A"]) + len(got["B"])

    def committed() -> int:
        return sum(committed_offsets(c.broker, group, topic).values())

    async def settle(consumers) -> None:  # type: ignore[no-untyped-def]
        # the group agrees on a split: every queue owned exactly once
        def split_ok() -> bool:
            owned = [mq for cons in consumers for mq in cons.pq_table if mq.topic == topic]
            return len(owned) == 8 and len(set(owned)) == 8
        await loops.wait_for(split_ok, "split agreed")
        await anyio.sleep(0.3)  # and it holds

    async def main() -> None:
        await make_topic(c, topic, 8)
        async with Producer(name("PG"), namesrv=c.namesrv) as p:
            async def send(n: int, start: int) -> None:
                for i in range(start, start + n):
                    await p.send(make_message(topic, f"x{i}"))

            a = PushConsumer(group, listener_for("A"), config=fast(c))
            a.subscribe(topic)
            async with a:
                await settle([a])
                await send(40, 0)
                await loops.wait_for(lambda: total() == 40, "40 consumed")
                # the offsets reach the broker before the split changes (else the new owner starts over)
                await loops.wait_for(lambda: committed() == 40, "40 committed")
                b = PushConsumer(group, listener_for("B"), config=fast(c))
                b.subscribe(topic)
                async with b:
                    await settle([a, b])
                    assert len(a.pq_table) and len(b.pq_table)
                    await send(40, 40)
                    await loops.wait_for(lambda: total() == 80, "80 consumed")
                    assert got["B"], "the new consumer got its share"
                    await loops.wait_for(lambda: committed() == 80, "80 committed")
                # b left: a takes every queue back
                await settle([a])
                await send(40, 80)
                await loops.wait_for(lambda: total() == 120, "120 consumed")

    run(loop, main)
    everything = got["A"] + got["B"]
    assert len(everything) == 120 and len(set(everything)) == 120


def test_lite_pull_assign_seek_commit(loop: str, probed: Cluster) -> None:
    """The wire side of tests/test_client_loops_features.py's assign/seek/commit test: a lite consumer's pulls
    carry Java's lite-pull flag (sysFlag 22: suspend, subscription, lite pull)."""
    c, topic, group = probed, name("TopicLp"), name("CGL")

    async def main() -> None:
        await make_topic(c, topic, 1)
        async with Producer(name("PG"), namesrv=c.namesrv) as p:
            for i in range(10):
                await p.send(make_message(topic, f"l{i}"))
        mq = MessageQueue(topic=topic, broker_name="broker-a", queue_id=0)
        async with LitePullConsumer(group, config=fast(c), auto_commit=False,
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET") as lp:
            await lp.assign([mq])
            got: list[bytes] = []
            while len(got) < 10:
                got += [m.body for m in await lp.poll(2.0)]
            assert got == [f"l{i}".encode() for i in range(10)]
            await lp.seek(mq, 7)
            again = await lp.poll(2.0)
            assert [m.body for m in again][:1] == [b"l7"]
            await lp.commit()
            assert await lp.committed(mq) == again[-1].queue_offset + 1

    run(loop, main)
    pulls = [r for r in c.probe.of(RequestCode.PULL_MESSAGE) if r.ext_fields["consumerGroup"] == group]
    assert pulls[0].ext_fields["sysFlag"] == "22"


def test_lite_pull_subscribe(loop: str, rocketmq_session_cluster: Cluster) -> None:
    c, topic, group = rocketmq_session_cluster, name("TopicLs"), name("CGLS")
    got: list[bytes] = []

    async def main() -> None:
        await make_topic(c, topic, 2)
        async with Producer(name("PG"), namesrv=c.namesrv) as p:
            for i in range(6):
                await p.send(make_message(topic, f"s{i}", tags="T"))
        lp = LitePullConsumer(group, config=fast(c), consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        lp.subscribe(topic, "T")
        async with lp:
            with anyio.fail_after(10):
                while len(got) < 6:
                    got.extend(m.body for m in await lp.poll(1.0))

    run(loop, main)
    assert sorted(got) == [f"s{i}".encode() for i in range(6)]
    assert sum(committed_offsets(c.broker, group, topic).values()) == 6


def test_transactions_commit_rollback_and_check(loop: str, probed: Cluster) -> None:
    c, topic, group = probed, name("TopicTx"), name("TPG")
    checks: list[str] = []
    got: list[bytes] = []

    def execute(msg, arg):  # type: ignore[no-untyped-def]
        return arg

    def check(msg):  # type: ignore[no-untyped-def]
        checks.append(msg.properties["KEYS"])
        return LocalTransactionState.COMMIT_MESSAGE

    async def collect(msgs, ctx):  # type: ignore[no-untyped-def]
        got.extend(m.body for m in msgs)

    async def main() -> list[MessageExt]:
        await make_topic(c, topic, 4)
        async with TransactionProducer(group, execute, check, namesrv=c.namesrv) as tp:
            for state in ("COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"):
                r, st = await tp.send_in_transaction(make_message(topic, state, keys=f"tx-{state}"), state)
                assert r.send_status == SendStatus.SEND_OK and st == state
            await loops.wait_for(lambda: checks == ["tx-UNKNOW"], "checked")
            consumer = PushConsumer(name("CGTx"), collect, config=fast(c),
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe(topic)
            async with consumer:
                await loops.wait_for(lambda: len(got) >= 2, "consumed")
                await anyio.sleep(0.7)  # two check passes (300 ms): the rolled back one does not come later either
        return await stored(c, topic)

    in_store = run(loop, main)
    # consumers see the committed and the checked-then-committed message, never the rolled back one
    assert sorted(got) == [b"COMMIT_MESSAGE", b"UNKNOW"]
    assert sorted(m.body for m in in_store) == [b"COMMIT_MESSAGE", b"UNKNOW"]
    assert checks == ["tx-UNKNOW"]
    ends = [r.ext_fields for r in c.probe.of(RequestCode.END_TRANSACTION) if r.ext_fields["producerGroup"] == group]
    assert [e["commitOrRollback"] for e in ends] == ["8", "12", "0", "8"]
    assert [e["fromTransactionCheck"] for e in ends] == ["false", "false", "false", "true"]


def test_request_reply(loop: str, probed: Cluster) -> None:
    c, topic, group = probed, name("TopicReq"), name("RPG")

    async def main() -> bytes:
        await make_topic(c, topic, 1)
        async with Producer(name("PG"), namesrv=c.namesrv) as requester, \
                Producer(group, namesrv=c.namesrv) as responder:
            async def serve(msgs, ctx):  # type: ignore[no-untyped-def]
                for m in msgs:
                    await responder.send(create_reply_message(m, b"pong:" + m.body))

            consumer = PushConsumer(name("CGReq"), serve, config=fast(c))
            consumer.subscribe(topic)
            async with consumer:
                return (await requester.request(make_message(topic, "ping"), timeout=5.0)).body

    assert run(loop, main) == b"pong:ping"
    assert any(r.ext_fields["a"] == group for r in c.probe.of(RequestCode.SEND_REPLY_MESSAGE_V2))


def test_request_timeout(loop: str, rocketmq_session_cluster: Cluster) -> None:
    from rocketpy.client import RequestTimeoutError

    async def main() -> None:
        async with Producer(name("PG"), namesrv=rocketmq_session_cluster.namesrv) as p:
            with pytest.raises(RequestTimeoutError):
                await p.request(make_message(name("TopicNobody"), "ping"), timeout=0.3)

    run(loop, main)


def test_broker_initiated_requests(loop: str, rocketmq_session_cluster: Cluster) -> None:
    """GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY and RESET_CONSUMER_CLIENT_OFFSET, relayed by the
    broker from an admin, reach the consumer."""
    c, topic, group = rocketmq_session_cluster, name("TopicBi"), name("CGBi")
    seen: list[bytes] = []

    async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
        seen.extend(m.body for m in msgs)

    async def main() -> None:
        await make_topic(c, topic, 2)
        async with Producer(name("PG"), namesrv=c.namesrv) as p, Admin(c.namesrv) as admin:
            sent = [await p.send(make_message(topic, f"bi{i}")) for i in range(4)]
            consumer = PushConsumer(group, listener, config=fast(c),
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe(topic)
            async with consumer:
                await loops.wait_for(lambda: len(seen) == 4, "consumed")
                # the retry topic's queue is rebalanced in on its own schedule: wait for it, not for luck
                await loops.wait_for(lambda: any(mq.topic == f"%RETRY%{group}" for mq in consumer.pq_table),
                                     "retry queue taken")
                client_id = consumer.client.client_id
                info = await admin.consumer_running_info(group, client_id)
                assert info.properties["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
                assert {mq.topic for mq in info.mq_table} == {topic, f"%RETRY%{group}"}
                result = await admin.consume_message_directly(group, client_id, sent[0].offset_msg_id or "")
                assert str(result.consume_result) == "CR_SUCCESS" and len(seen) == 5 and seen[-1] == b"bi0"
                # reset to the start: everything is consumed again (as Java's, the broker resets only a group
                # with an offset on every queue)
                await loops.wait_for(lambda: len(committed_offsets(c.broker, group, topic)) == 2, "committed")
                table = await admin.reset_offset_by_time(group, topic, 0)
                assert sorted(table.values()) == [0, 0]
                await loops.wait_for(lambda: len(seen) == 9, "consumed again")

    run(loop, main)


def _tasks() -> set[int]:
    return {t.id for t in anyio.get_running_tasks()}  # every task of the run, trio's system tasks too


@pytest.mark.parametrize("kind", ["lite_pull", "push"])
def test_consumer_started_inside_a_timeout_shuts_down_outside_it(loop: str, kind: str,
                                                                rocketmq_session_cluster: Cluster) -> None:
    """start() under move_on_after and shutdown() after it: the consumer's tasks are hosted, so the loop's
    cancel-scope stack stays intact, the consumer still pulls in between, and shutdown ends them."""
    c, topic, group = rocketmq_session_cluster, name("TopicScope"), name("CGScope")

    async def main() -> None:
        await make_topic(c, topic, 1)
        async with Producer(name("PG"), namesrv=c.namesrv) as p:
            for i in range(3):
                await p.send(make_message(topic, f"m{i}"))
        before = _tasks()
        got: list[bytes] = []
        consumer: LitePullConsumer | PushConsumer
        if kind == "lite_pull":
            consumer = LitePullConsumer(group, config=fast(c),
                                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        else:
            async def listener(msgs, _ctx):  # type: ignore[no-untyped-def]
                got.extend(m.body for m in msgs)
                return ConsumeStatus.CONSUME_SUCCESS

            consumer = PushConsumer(group, listener, config=fast(c),
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe(topic, "*")
        with anyio.move_on_after(30):
            await consumer.start()
        assert consumer.nursery is not None and _tasks() - before
        if isinstance(consumer, LitePullConsumer):
            with anyio.fail_after(15):
                while len(got) < 3:
                    got += [m.body for m in await consumer.poll(1.0)]
        else:
            await loops.wait_for(lambda: len(got) >= 3, "consumed", seconds=15)
        assert sorted(got) == [b"m0", b"m1", b"m2"]
        await consumer.shutdown()
        assert not consumer.running
        assert not _tasks() - before  # the hosted tasks ended with the shutdown
        # the surrounding scopes still work: a cancel scope opened now is honoured
        with anyio.move_on_after(0.01) as scope:
            await anyio.sleep_forever()
        assert scope.cancelled_caught

    run(loop, main)


def test_client_instance_started_inside_a_timeout_closes_outside_it(loop: str,
                                                                    rocketmq_session_cluster: Cluster) -> None:
    from rocketpy.client.instance import ClientInstance

    async def main() -> None:
        before = _tasks()
        instance = ClientInstance(fast(rocketmq_session_cluster))
        with anyio.move_on_after(30):
            await instance.start()
        assert instance.running and instance.nursery is not None and _tasks() - before
        await instance.aclose()
        assert not instance.running and not _tasks() - before

    run(loop, main)
