"""Asynchronous sends written straight on the broker's connection (no task per send): answers, retries, failures.

Each test runs once under trio and once under asyncio (issue #45), against probed brokers on their own thread."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import clusters
import loops
import pytest
from clusters import Cluster, make_topic
from loops import gather, name, run, wait_for

from rocketpy.client import ClientConfig, MQClientError, Producer, SendResult, SendStatus, make_message
from rocketpy.codecs import RequestCode

loop, probed, probed_two = loops.loop, clusters.probed, clusters.probed_two


def test_async_sends_all_answered_and_stored(loop: str, probed: Cluster) -> None:
    topic, group = name("TopicAs"), name("PGA")
    plain: list[SendResult] = []
    awaited: list[SendResult] = []
    failed: list[BaseException] = []

    async def main() -> list[SendResult]:
        async with Producer(group, namesrv=probed.namesrv) as p:
            await p.send(make_message(topic, "warm"))  # the route and the connection are there

            async def later(result: SendResult) -> None:
                await anyio.sleep(0)
                awaited.append(result)

            futures = [p.send_async(make_message(topic, f"m{i}"), plain.append if i % 2 else later, failed.append)
                       for i in range(100)]
            results = [await f.result() for f in futures]
            await wait_for(lambda: len(awaited) == 50, "callbacks awaited", seconds=5)
        return results

    results = run(loop, main)
    assert not failed and len(plain) == 50
    assert all(r.send_status == SendStatus.SEND_OK for r in results)
    assert len({r.msg_id for r in results}) == 100  # each its own UNIQ_KEY
    sent = [cmd for cmd in probed.probe.of(RequestCode.SEND_MESSAGE_V2) if cmd.ext_fields["a"] == group]
    assert sorted(cmd.body for cmd in sent if cmd.body != b"warm") == sorted(f"m{i}".encode() for i in range(100))


def test_async_send_retries_on_another_broker(loop: str, probed_two: Cluster) -> None:
    c, topic = probed_two, name("TopicAr")
    failed: list[BaseException] = []

    async def main() -> tuple[list[SendResult], int]:
        await make_topic(c, topic, 2)
        config = ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=1.0, poll_name_server_interval=1.0)
        async with Producer(name("PGA"), config=config) as p:
            await p.send(make_message(topic, "warm"))
            c.probes[0].fail_sends = 100
            try:
                futures = [p.send_async(make_message(topic, f"r{i}"), on_exception=failed.append) for i in range(8)]
                return [await f.result() for f in futures], c.probes[0].fail_sends
            finally:
                c.probes[0].fail_sends = 0

    results, left = run(loop, main)
    assert not failed
    assert {r.message_queue.broker_name for r in results} == {"broker-b"}
    assert left < 100  # some went to broker-a first, then on to broker-b


@asynccontextmanager
async def failing(probed: Cluster) -> AsyncIterator[tuple[Producer, str]]:
    """A producer with its route and connection, whose broker then fails the next ten sends (none after)."""
    topic = name("TopicAf")
    async with Producer(name("PGA"), namesrv=probed.namesrv) as p:
        await p.send(make_message(topic, "warm"))
        probed.probe.fail_sends = 10
        try:
            yield p, topic
        finally:
            probed.probe.fail_sends = 0


def test_async_send_fails_after_retries(loop: str, probed: Cluster) -> None:
    async def main() -> None:
        async with failing(probed) as (p, topic):
            failed: list[BaseException] = []
            future = p.send_async(make_message(topic, "x"), on_exception=failed.append)
            with pytest.raises(MQClientError, match="Send \\[3\\] times"):
                await future.result()
            assert len(failed) == 1 and isinstance(failed[0], MQClientError)
            assert probed.probe.fail_sends == 7  # three attempts

    run(loop, main)


def _frames(tb: object) -> int:
    n = 0
    while tb is not None:
        n, tb = n + 1, tb.tb_next  # type: ignore[attr-defined]
    return n


def test_a_failed_send_raises_a_copy_to_each_waiter(loop: str, probed: Cluster) -> None:
    # the stored exception raised again to each caller gathered all their frames in its __traceback__
    raised: list[MQClientError] = []

    async def main() -> BaseException:
        async with failing(probed) as (p, topic):
            future = p.send_async(make_message(topic, "x"))

            async def wait() -> None:
                with pytest.raises(MQClientError) as info:
                    await future.result()
                raised.append(info.value)

            await wait()
            assert future.error is not None
            # what the caller keeps holds no frames (the failed send's, whose closures hold the future)
            assert _frames(future.error.__traceback__) == 0
            await gather([wait() for _ in range(3)])
            await wait()
        return future.error

    error = run(loop, main)
    assert len({id(e) for e in [error, *raised]}) == 6  # each waiter its own
    assert {(type(e), str(e), e.response_code) for e in raised} == {
        (type(error), str(error), error.response_code)  # type: ignore[attr-defined]
    }
    assert _frames(error.__traceback__) == 0
