"""A cluster under load with something behind every rocketmq-exporter metric, for the /metrics tests.

``TLoad`` takes a message every 20 ms from ``PG_load``. ``CG_live`` consumes it and fails every message whose
number ends in 7, twice (``max_reconsume_times=1``): the first failure is sent back (SNDBCK_PUT_NUMS, the
retry topic), the second goes to ``%DLQ%CG_live``. ``CG_stopped`` consumed the first messages and stopped:
its lag grows with every send.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from rocketpy.client import ClientConfig, ConsumeFromWhere, Producer, PushConsumer, make_message
from rocketpy.client.push_consumer import ConsumeStatus
from rocketpy.console.testing import ConsoleCluster, console_cluster
from rocketpy.testing import wait_until

TOPIC = "TLoad"
LIVE = "CG_live"
STOPPED = "CG_stopped"


@dataclasses.dataclass
class Load:
    cluster: ConsoleCluster
    sent: int = 0
    consumed: int = 0
    failed: int = 0
    live: PushConsumer | None = None


def _config(namesrv: str) -> ClientConfig:
    return ClientConfig(namesrv_addr=namesrv, rebalance_interval=1.0, poll_name_server_interval=1.0,
                        persist_consumer_offset_interval=0.5, heartbeat_broker_interval=1.0)


def _consumer(namesrv: str, group: str, listener: Any, **kw: Any) -> PushConsumer:
    consumer = PushConsumer(group, listener, config=_config(namesrv),
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **kw)
    consumer.subscribe(TOPIC, "*")
    return consumer


@asynccontextmanager
async def loaded_cluster(**settings: Any) -> AsyncIterator[Load]:
    async with console_cluster(**settings) as c:
        load = Load(c)
        broker = c.broker
        async with Producer("PG_load", namesrv=c.namesrv, config=_config(c.namesrv)) as producer:

            async def send() -> None:
                await producer.send(make_message(TOPIC, str(load.sent).encode()))
                load.sent += 1

            for _ in range(20):
                await send()
            broker.stats_manager.sample(broker)  # the topic's stats items, from here on (the broker's every 10 s)
            stopped_seen: list[int] = []
            stopped = _consumer(c.namesrv, STOPPED, lambda msgs, ctx: stopped_seen.extend(1 for _ in msgs))
            async with stopped:
                await wait_until(lambda: len(stopped_seen) >= 20, timeout=20, tick=0.05)
                await trio.sleep(1.0)  # its offsets committed

            def listener(msgs: list[Any], ctx: Any) -> ConsumeStatus:
                for m in msgs:
                    if m.body.endswith(b"7"):
                        load.failed += 1
                        return ConsumeStatus.RECONSUME_LATER
                load.consumed += len(msgs)
                return ConsumeStatus.CONSUME_SUCCESS

            live = load.live = _consumer(c.namesrv, LIVE, listener, max_reconsume_times=1)
            async with live, trio.open_nursery() as nursery:

                async def keep_sending() -> None:
                    while True:
                        await send()
                        await trio.sleep(0.02)

                nursery.start_soon(keep_sending)
                # the dead letter of message 7: failed, sent back, delivered again 100 ms later, failed again
                await wait_until(lambda: load.failed >= 2 and load.consumed >= 20, timeout=30, tick=0.05)
                await wait_until(lambda: broker.store.get_max_offset_in_queue(f"%DLQ%{LIVE}", 0) > 0, timeout=30,
                                 tick=0.05)
                await trio.sleep(1.0)  # offsets committed, the DLQ topic registered with the NameServer
                broker.stats_manager.sample(broker)  # what the topic, the groups and the send-backs counted since
                broker.store_stats.latency.rotate()  # a minute's put times (Java shows none before the first)
                try:
                    yield load
                finally:
                    nursery.cancel_scope.cancel()


async def http_get(url: str, path: str, version: str = "1.1") -> tuple[int, str]:
    """(status, body) of one GET on a new connection (HTTP/1.0: a server that would chunk the body does not)."""
    host, _, port = url.removeprefix("http://").partition(":")
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(f"GET {path} HTTP/{version}\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = bytearray()
        while chunk := await stream.receive_some(65536):
            data += chunk
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode()
