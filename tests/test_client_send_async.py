"""Asynchronous sends written straight on the broker's connection (no task per send): answers, retries, failures."""

from __future__ import annotations

import pytest
import trio
from clusters import make_topic, real_cluster

from rocketpy.client import ClientConfig, MQClientError, Producer, SendResult, SendStatus, make_message
from rocketpy.codecs import RequestCode
from rocketpy.testing import wait_until


async def test_async_sends_all_answered_and_stored() -> None:
    async with real_cluster(probe=True) as c:
        async with Producer("PGA", namesrv=c.namesrv) as p:
            await p.send(make_message("TopicAs", "warm"))  # the route and the connection are there
            plain: list[SendResult] = []
            awaited: list[SendResult] = []
            failed: list[BaseException] = []

            async def later(result: SendResult) -> None:
                await trio.sleep(0)
                awaited.append(result)

            futures = [p.send_async(make_message("TopicAs", f"m{i}"), plain.append if i % 2 else later, failed.append)
                       for i in range(100)]
            results = [await f.result() for f in futures]
            await wait_until(lambda: len(awaited) == 50, timeout=5)
        assert not failed and len(plain) == 50
        assert all(r.send_status == SendStatus.SEND_OK for r in results)
        assert len({r.msg_id for r in results}) == 100  # each its own UNIQ_KEY
        sent = c.probe.of(RequestCode.SEND_MESSAGE_V2)
        assert sorted(cmd.body for cmd in sent if cmd.body != b"warm") == sorted(f"m{i}".encode() for i in range(100))


async def test_async_send_retries_on_another_broker() -> None:
    async with real_cluster(("broker-a", "broker-b"), probe=True) as c:
        await make_topic(c, "TopicAr", 2)
        config = ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=1.0, poll_name_server_interval=1.0)
        async with Producer("PGA", config=config) as p:
            await p.send(make_message("TopicAr", "warm"))
            c.probes[0].fail_sends = 100
            failed: list[BaseException] = []
            futures = [p.send_async(make_message("TopicAr", f"r{i}"), on_exception=failed.append) for i in range(8)]
            results = [await f.result() for f in futures]
        assert not failed
        assert {r.message_queue.broker_name for r in results} == {"broker-b"}
        assert c.probes[0].fail_sends < 100  # some went to broker-a first, then on to broker-b


async def test_async_send_fails_after_retries() -> None:
    async with real_cluster(probe=True) as c:
        async with Producer("PGA", namesrv=c.namesrv) as p:
            await p.send(make_message("TopicAf", "warm"))
            c.probe.fail_sends = 10
            failed: list[BaseException] = []
            future = p.send_async(make_message("TopicAf", "x"), on_exception=failed.append)
            with pytest.raises(MQClientError, match="Send \\[3\\] times"):
                await future.result()
            assert len(failed) == 1 and isinstance(failed[0], MQClientError)
            assert c.probe.fail_sends == 7  # three attempts


def _frames(tb: object) -> int:
    n = 0
    while tb is not None:
        n, tb = n + 1, tb.tb_next  # type: ignore[attr-defined]
    return n


async def test_a_failed_send_raises_a_copy_to_each_waiter() -> None:
    # the stored exception raised again to each caller gathered all their frames in its __traceback__
    async with real_cluster(probe=True) as c:
        async with Producer("PGA", namesrv=c.namesrv) as p:
            await p.send(make_message("TopicAc", "warm"))
            c.probe.fail_sends = 10
            future = p.send_async(make_message("TopicAc", "x"))
            raised: list[MQClientError] = []

            async def wait() -> None:
                with pytest.raises(MQClientError) as info:
                    await future.result()
                raised.append(info.value)

            await wait()
            assert future.error is not None
            # what the caller keeps holds no frames (the failed send's, whose closures hold the future)
            assert _frames(future.error.__traceback__) == 0
            async with trio.open_nursery() as waiters:
                for _ in range(3):
                    waiters.start_soon(wait)
            await wait()
        assert len({id(e) for e in [future.error, *raised]}) == 6  # each waiter its own
        assert {(type(e), str(e), e.response_code) for e in raised} == {
            (type(future.error), str(future.error), future.error.response_code)  # type: ignore[attr-defined]
        }
        assert _frames(future.error.__traceback__) == 0
