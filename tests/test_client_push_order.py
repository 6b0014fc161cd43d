"""A push consumer consumes concurrently in pull order and commits the lowest offset still in flight.

As Java's ConsumeMessageConcurrentlyService and ProcessQueue: pulled batches go to the listener in the
order they were pulled (one FIFO, at most ``consume_concurrency`` at once), every queue of the topic is
served from the start, and the offset kept for the broker is at every moment the queue's lowest pulled
offset not yet consumed (one past the highest pulled when none is left), so a crash redelivers no more
than what was in flight.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable

import anyio
import loops
import pytest
import trio
from clusters import Cluster, committed_offsets, make_topic, real_cluster
from loops import name, run

from rocketpy.client import ClientConfig, ConsumeStatus, Producer, PushConsumer, make_message
from rocketpy.client.offset_store import OffsetStore
from rocketpy.client.process_queue import ProcessQueue
from rocketpy.codecs.bodies import MessageQueue
from rocketpy.codecs.codes import ConsumeFromWhere
from rocketpy.codecs.message import MessageExt
from rocketpy.testing import wait_until

QUEUES = 4
PER_QUEUE = 50


loop = loops.loop  # the tests that take it run once under trio and once under asyncio (issue #45)


async def _fill(c: Cluster, topic: str, queues: int, per_queue: int) -> None:
    async with Producer(name("PGO"), namesrv=c.namesrv) as p:
        for q in range(queues):
            mq = MessageQueue(topic=topic, broker_name="broker-a", queue_id=q)
            for i in range(0, per_queue, 20):
                await p.send_batch([make_message(topic, f"{q}:{j}") for j in range(i, min(i + 20, per_queue))],
                                   queue=mq)


def _config(c: Cluster) -> ClientConfig:
    return ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=1.0, persist_consumer_offset_interval=0.5)


class Watch:
    """The (queue, offset) of every message as the consumer's process queues took it from pull answers, and a
    check run after every change of a process queue or of the offsets kept."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.order: list[tuple[int, int]] = []
        self.filled: set[int] = set()  # id() of the process queues that held messages
        self.check: Callable[[], None] = lambda: None
        put, remove = ProcessQueue.put_messages, ProcessQueue.remove_messages
        update = OffsetStore.update_offset

        def putting(pq: ProcessQueue, msgs: Iterable[MessageExt]) -> bool:
            msgs = list(msgs)
            self.order += [(m.queue_id, m.queue_offset) for m in msgs]
            self.filled.add(id(pq))
            try:
                return put(pq, msgs)
            finally:
                self.check()

        def removing(pq: ProcessQueue, msgs: Iterable[MessageExt]) -> int:
            # checked before: the offset is kept right after the messages leave (checked then, below)
            self.check()
            return remove(pq, msgs)

        def updating(store: OffsetStore, mq: MessageQueue, offset: int, increase_only: bool = False) -> None:
            update(store, mq, offset, increase_only)
            self.check()

        monkeypatch.setattr(ProcessQueue, "put_messages", putting)
        monkeypatch.setattr(ProcessQueue, "remove_messages", removing)
        monkeypatch.setattr(OffsetStore, "update_offset", updating)


def _lowest_in_flight(pq: ProcessQueue) -> int:
    first = pq.first_offset()
    return pq.queue_offset_max + 1 if first is None else first


async def test_slow_listener_consumes_in_pull_order_and_commits_the_lowest_in_flight(  # type: ignore[no-untyped-def]
        virtual_clock, monkeypatch) -> None:
    async with real_cluster() as c:
        await make_topic(c, "TopicPO", QUEUES)
        await _fill(c, "TopicPO", QUEUES, PER_QUEUE)
        watch = Watch(monkeypatch)
        started: list[tuple[int, int]] = []
        checks = 0
        wrong: list[tuple[int, ...]] = []  # (queue, offset kept, lowest in flight) whenever they differ
        ahead: list[tuple[int, int, int]] = []  # the broker's offset past the lowest in flight

        def check() -> None:
            nonlocal checks
            assert consumer.offset_store is not None
            checks += 1
            broker = committed_offsets(c.broker, "CGPO", "TopicPO")
            for mq, pq in list(consumer.pq_table.items()):
                if mq.topic != "TopicPO" or id(pq) not in watch.filled:  # before its first answer: nothing held
                    continue
                kept = consumer.offset_store.memory_offset(mq)
                lowest = _lowest_in_flight(pq)
                if kept >= 0 and kept != lowest:  # -1: nothing consumed from the queue yet
                    wrong.append((mq.queue_id, kept, lowest, pq.msg_count))
                if broker.get(mq.queue_id, 0) > lowest:
                    ahead.append((mq.queue_id, broker[mq.queue_id], lowest))

        async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
            check()
            started.extend((m.queue_id, m.queue_offset) for m in msgs)
            await trio.sleep(0.5)  # a slow listener: 16 at once, 32 messages a second

        consumer = PushConsumer("CGPO", listener, config=_config(c), consume_concurrency=16, pull_batch_size=8,
                                pull_threshold_for_queue=16,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("TopicPO")
        watch.check = check
        async with consumer:
            await wait_until(lambda: len(started) >= 2 * QUEUES * 8, timeout=30)
            # every queue served from the start: each queue's first answer among the first two rounds of pulls
            assert {q for q, _o in started[:2 * QUEUES * 8]} == set(range(QUEUES))
            await trio.sleep(2)
            # the broker follows (the commit offset rides on pulls and the 0.5 s persist): every queue moved
            moved = committed_offsets(c.broker, "CGPO", "TopicPO")
            assert all(moved.get(q, 0) > 0 for q in range(QUEUES)), moved
            # the flow control (16 held, a batch of 8 more) keeps every queue's share as they refill
            counts = Counter(q for q, _o in started)
            assert max(counts.values()) - min(counts.values()) <= 16 + 8, counts
            await wait_until(lambda: len(started) >= QUEUES * PER_QUEUE, timeout=60, tick=0.1)
            await wait_until(lambda: committed_offsets(c.broker, "CGPO", "TopicPO") ==
                             {q: PER_QUEUE for q in range(QUEUES)}, timeout=10)
        # in pull order: the listener started the messages exactly as the pull answers brought them
        assert started == watch.order
        assert sorted(started) == [(q, o) for q in range(QUEUES) for o in range(PER_QUEUE)]
        assert checks > 3 * QUEUES * PER_QUEUE  # every put, removal and kept offset, and every listener call
        assert wrong == []
        assert ahead == []


def test_batches_of_consume_batch_size_in_pull_order(loop: str, rocketmq_session_cluster: Cluster,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    c, topic, group = rocketmq_session_cluster, name("TopicPB"), name("CGPB")
    batches: list[list[tuple[int, int]]] = []
    watch = Watch(monkeypatch)

    async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
        batches.append([(m.queue_id, m.queue_offset) for m in msgs])
        await anyio.sleep(0.05)  # slow enough that requests wait their turn in the FIFO

    async def main() -> None:
        await make_topic(c, topic, 2)
        await _fill(c, topic, 2, 60)
        consumer = PushConsumer(group, listener, config=_config(c), consume_concurrency=3, pull_batch_size=10,
                                consume_batch_size=4, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe(topic)
        async with consumer:
            await loops.wait_for(lambda: sum(map(len, batches)) >= 120, "consumed", seconds=60)
            await loops.wait_for(lambda: committed_offsets(c.broker, group, topic) == {0: 60, 1: 60}, "committed")

    run(loop, main)
    assert [m for b in batches for m in b] == watch.order
    # a pull answer of 10 cut into requests of 4, 4 and 2 messages of one queue
    assert sorted(Counter(map(len, batches)).items()) == [(2, 12), (4, 24)]
    assert all(len({q for q, _o in b}) == 1 for b in batches)


def test_ack_index_redelivers_the_rest_of_a_batch(loop: str, rocketmq_session_cluster: Cluster) -> None:
    c, topic, group = rocketmq_session_cluster, name("TopicPK"), name("CGPK")
    seen: list[bytes] = []
    partial = True

    async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
        nonlocal partial
        seen.extend(m.body for m in msgs)
        if partial and len(msgs) == 3:
            partial = False
            ctx.ack_index = 0  # only the first of the three: the other two come again, through the retry topic
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, listener, config=_config(c), consume_batch_size=3,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic)

    async def main() -> None:
        await make_topic(c, topic, 1)
        await _fill(c, topic, 1, 6)
        async with consumer:
            await loops.wait_for(lambda: len(seen) >= 8, "consumed and redelivered", seconds=60)
            await loops.wait_for(lambda: committed_offsets(c.broker, group, topic) == {0: 6}, "committed")

    run(loop, main)
    assert sorted(seen) == sorted([f"0:{i}".encode() for i in range(6)] + [b"0:1", b"0:2"])
    assert consumer.consumed_failed == 2


def test_blocking_listener_takes_the_requests_in_pull_order(loop: str, rocketmq_session_cluster: Cluster) -> None:
    c, topic, group = rocketmq_session_cluster, name("TopicPT"), name("CGPT")
    lock = threading.Lock()
    started: list[int] = []

    def listener(msgs, ctx):  # type: ignore[no-untyped-def]
        with lock:
            started.extend(m.queue_offset for m in msgs)
        time.sleep(0.02)  # slow: one request a trip to a worker thread, as a Java consume thread takes one

    async def main() -> None:
        await make_topic(c, topic, 1)
        await _fill(c, topic, 1, 80)
        consumer = PushConsumer(group, listener, config=_config(c), consume_concurrency=4, pull_batch_size=32,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe(topic)
        async with consumer:
            await loops.wait_for(lambda: len(started) >= 80, "consumed", seconds=30)
            await loops.wait_for(lambda: committed_offsets(c.broker, group, topic) == {0: 80}, "committed")

    run(loop, main)
    assert sorted(started) == list(range(80))
    # four threads take the head of the FIFO in turn: a message starts at most three places early or late
    assert all(abs(offset - i) < 4 for i, offset in enumerate(started)), started
