"""The push consumer's workers: blocking listeners run on threads, at most consume_concurrency at once, on trio
and on asyncio alike (issue #45)."""

from __future__ import annotations

import threading
import time

import loops
from clusters import Cluster, committed_offsets, make_topic
from loops import name, run, wait_for

from rocketpy.client import ClientConfig, ConsumeStatus, Producer, PushConsumer, make_message
from rocketpy.codecs.codes import ConsumeFromWhere

loop = loops.loop


def test_blocking_listener_runs_concurrently_within_the_bound(loop: str, rocketmq_session_cluster: Cluster) -> None:
    c, topic, group = rocketmq_session_cluster, name("TopicW"), name("CGW")
    lock = threading.Lock()
    running = peak = 0
    seen: list[bytes] = []
    threads: set[int] = set()
    failed_once: set[bytes] = set()

    def listener(msgs, ctx):  # type: ignore[no-untyped-def]
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            threads.add(threading.get_ident())
        try:
            time.sleep(0.02)  # a listener that blocks, as Java consume threads may
            with lock:
                seen.extend(m.body for m in msgs)
            body = msgs[0].body
            if body == b"m7" and body not in failed_once:
                failed_once.add(body)
                raise RuntimeError("once")  # redelivered through the broker's retry topic
            return ConsumeStatus.CONSUME_SUCCESS
        finally:
            with lock:
                running -= 1

    async def main() -> None:
        await make_topic(c, topic, 4)
        async with Producer(name("PGW"), namesrv=c.namesrv) as p:
            for i in range(40):
                await p.send(make_message(topic, f"m{i}"))
        config = ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=1.0, persist_consumer_offset_interval=0.5)
        consumer = PushConsumer(group, listener, config=config, consume_concurrency=3,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe(topic)
        async with consumer:
            await wait_for(lambda: len(seen) >= 41, "consumed and redelivered", seconds=30)
            await wait_for(lambda: sum(committed_offsets(c.broker, group, topic).values()) == 40, "committed")

    run(loop, main)
    assert sorted(seen) == sorted([f"m{i}".encode() for i in range(40)] + [b"m7"])  # m7 twice, no other repeat
    assert peak == 3  # concurrent, and never more than consume_concurrency
    assert threading.get_ident() not in threads  # off the event loop's thread
