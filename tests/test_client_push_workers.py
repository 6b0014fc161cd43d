"""The push consumer's workers: blocking listeners run on threads, at most consume_concurrency at once."""

from __future__ import annotations

import threading
import time

from clusters import committed_offsets, make_topic, real_cluster

from rocketpy.client import ClientConfig, ConsumeStatus, Producer, PushConsumer, make_message
from rocketpy.codecs.codes import ConsumeFromWhere
from rocketpy.testing import wait_until


async def test_blocking_listener_runs_concurrently_within_the_bound() -> None:
    async with real_cluster() as c:
        await make_topic(c, "TopicW", 4)
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

        async with Producer("PGW", namesrv=c.namesrv) as p:
            for i in range(40):
                await p.send(make_message("TopicW", f"m{i}"))
        config = ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=1.0, persist_consumer_offset_interval=0.5)
        consumer = PushConsumer("CGW", listener, config=config, consume_concurrency=3,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("TopicW")
        async with consumer:
            await wait_until(lambda: len(seen) >= 41, timeout=30, tick=0.02)
            await wait_until(lambda: sum(committed_offsets(c.broker, "CGW", "TopicW").values()) == 40, timeout=10)
        assert sorted(seen) == sorted([f"m{i}".encode() for i in range(40)] + [b"m7"])  # m7 twice, no other repeat
        assert peak == 3  # concurrent, and never more than consume_concurrency
        assert threading.get_ident() not in threads  # off the trio thread
