"""The client from a blocking script and from asyncio code (the cluster runs on its own trio thread)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from rocketpy.client import make_message
from rocketpy.client.facade import (
    AsyncioProducer,
    AsyncioPushConsumer,
    BlockingLitePullConsumer,
    BlockingProducer,
    BlockingPushConsumer,
)
from rocketpy.codecs.codes import ConsumeFromWhere, SendStatus
from rocketpy.pytest_plugin import Cluster


@pytest.fixture
def cluster(rocketmq_cluster: Cluster) -> Cluster:
    """rocketpy's own pytest plugin's cluster (the fixture users get)."""
    return rocketmq_cluster


def test_blocking_producer_and_consumers(cluster: Cluster) -> None:
    with BlockingProducer("PG", namesrv=cluster.namesrv) as p:
        results = [p.send(make_message("TopicBlk", f"m{i}")) for i in range(5)]
        assert all(r.send_status == SendStatus.SEND_OK for r in results)
        fut = p.send_async(make_message("TopicBlk", "async"))
        assert fut.result(5).send_status == SendStatus.SEND_OK
        p.send_oneway(make_message("TopicBlk", "oneway"))
    got: list[bytes] = []
    done = threading.Event()

    def listener(msgs, ctx):  # type: ignore[no-untyped-def]
        assert threading.current_thread() is not threading.main_thread()
        got.extend(m.body for m in msgs)
        if len(got) >= 7:
            done.set()

    consumer = BlockingPushConsumer("CGBlk", listener, namesrv=cluster.namesrv,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe("TopicBlk")
    with consumer:
        assert done.wait(10)
    assert sorted(got) == sorted([f"m{i}".encode() for i in range(5)] + [b"async", b"oneway"])
    lite = BlockingLitePullConsumer("CGBlkLite", namesrv=cluster.namesrv,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    lite.subscribe("TopicBlk")
    with lite:
        pulled: list[bytes] = []
        for _ in range(50):
            pulled += [m.body for m in lite.poll(0.5)]
            if len(pulled) >= 7:
                break
    assert len(pulled) == 7


def test_asyncio_producer_and_consumer(cluster: Cluster) -> None:
    async def main() -> list[bytes]:
        got: list[bytes] = []
        arrived = asyncio.Event()

        async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
            asyncio.get_running_loop()  # runs on this asyncio loop
            got.extend(m.body for m in msgs)
            if len(got) >= 3:
                arrived.set()

        async with AsyncioProducer("PGA", namesrv=cluster.namesrv) as p:
            results = await asyncio.gather(*(p.send(make_message("TopicAio", f"a{i}")) for i in range(3)))
            assert len({r.msg_id for r in results}) == 3
            consumer = AsyncioPushConsumer("CGA", listener, namesrv=cluster.namesrv,
                                           consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe("TopicAio")
            async with consumer:
                await asyncio.wait_for(arrived.wait(), 10)
        return got

    assert sorted(asyncio.run(main())) == [b"a0", b"a1", b"a2"]
