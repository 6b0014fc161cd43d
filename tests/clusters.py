"""Our NameServer and real brokers (rocketpy.broker) in-process, for the client, CLI and example tests.

A test that needs to see what the client sent, or to make a broker misbehave, asks for a
:class:`BrokerProbe` (``real_cluster(probe=True)``): a before-hook on each broker's dispatcher that
records every request and answers the sends it is told to fail with SYSTEM_ERROR, as a busy or broken
broker would. The hook turns the send fast lane off (as ACL does), so only probed clusters lose it.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import trio

from rocketpy.broker.controller import BrokerController
from rocketpy.codecs import RemotingCommand, RequestCode
from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.namesrv.server import NameServer
from rocketpy.remoting import RequestContext
from rocketpy.testing import broker_test_config, wait_until

#: broker settings that keep tests quick: short delay levels and transaction checks
FAST_BROKER = {
    "messageDelayLevel": " ".join(["100ms"] * 18),
    "transactionCheckInterval": "300",
    "transactionTimeOut": "300",
    "autoCreateTopicEnable": "true",
}

SEND_CODES = frozenset({RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE})


class InjectedFault(Exception):
    """Raised by a probe to refuse a request (the dispatcher answers SYSTEM_ERROR)."""


class BrokerProbe:
    """Every request one broker received, in order; ``fail_sends`` sends answered with SYSTEM_ERROR."""

    def __init__(self) -> None:
        self.requests: list[RemotingCommand] = []
        self.fail_sends = 0

    def __call__(self, ctx: RequestContext, request: RemotingCommand) -> None:
        self.requests.append(request)
        if self.fail_sends > 0 and request.code in SEND_CODES:
            self.fail_sends -= 1
            raise InjectedFault("the test told this broker to fail sends")

    def of(self, code: int) -> list[RemotingCommand]:
        return [r for r in self.requests if r.code == code]


@dataclasses.dataclass
class Cluster:
    namesrv: str
    brokers: list[BrokerController]
    probes: list[BrokerProbe]

    @property
    def broker(self) -> BrokerController:
        return self.brokers[0]

    @property
    def broker_addr(self) -> str:
        return self.brokers[0].broker_addr

    @property
    def probe(self) -> BrokerProbe:
        """The first broker's probe (the cluster was opened with ``probe=True``)."""
        return self.probes[0]


@asynccontextmanager
async def real_cluster(broker_names: tuple[str, ...] = ("broker-a",), *, probe: bool = False,
                       **props: Any) -> AsyncIterator[Cluster]:
    """Our NameServer and broker(s) on 127.0.0.1 ports the OS picks, stores in a temporary directory;
    ``props`` are broker.conf keys. Everything stops on exit."""
    with tempfile.TemporaryDirectory(prefix="rocketpy-cluster-") as tmp:
        config = NamesrvConfig(listen_port=0, kv_config_path=f"{tmp}/kvConfig.json",
                               config_store_path=f"{tmp}/namesrv.properties")
        async with trio.open_nursery() as nursery:
            ns = await nursery.start(NameServer(config).run, "127.0.0.1", 0)
            brokers, probes = [], []
            for name in broker_names:
                settings = {**FAST_BROKER, "brokerName": name, "namesrvAddr": ns.address, **props}
                broker = BrokerController(broker_test_config(f"{tmp}/{name}", **settings))
                if probe:
                    probes.append(BrokerProbe())
                    broker.dispatcher.add_before_hook(probes[-1])
                brokers.append(await nursery.start(broker.run, None))
            await wait_until(lambda: len(ns.routes.broker_live_table) >= len(brokers), timeout=10, tick=0.02)
            try:
                yield Cluster(ns.address, brokers, probes)
            finally:
                nursery.cancel_scope.cancel()


@contextmanager
def threaded_cluster(**opts: Any) -> Iterator[Cluster]:
    """:func:`real_cluster` served by a trio loop on its own thread, for code that runs its own event loop
    (blocking scripts, asyncio, the CLI, examples in subprocesses)."""
    import concurrent.futures

    from rocketpy.client.facade import TrioPortal

    portal = TrioPortal()
    ready: concurrent.futures.Future[tuple[Cluster, trio.Event]] = concurrent.futures.Future()

    async def host() -> None:
        stop = trio.Event()
        async with real_cluster(**opts) as c:
            ready.set_result((c, stop))
            await stop.wait()

    async def set_event(event: trio.Event) -> None:
        event.set()

    done = portal.submit(host)
    try:
        cluster, stop = ready.result(10)
        try:
            yield cluster
        finally:
            portal.run(set_event, stop)  # the cluster's own loop ends it: no polling between threads
            done.result(10)
    finally:
        portal.close()


async def make_topic(c: Cluster, topic: str, queues: int) -> None:
    """Create ``topic`` on every master through the admin API and wait until the NameServer routes it."""
    from rocketpy.client.admin import Admin
    from rocketpy.codecs.bodies import TopicConfig

    async with Admin(c.namesrv) as admin:
        for addr in await admin.master_addrs("DefaultCluster"):
            await admin.create_topic(addr, TopicConfig(topic_name=topic, read_queue_nums=queues,
                                                       write_queue_nums=queues, perm=6))

        async def routed() -> bool:
            route = await admin.client.fetch_route(topic)
            return route is not None and len(route.queue_datas or []) == len(c.brokers)

        await wait_until(routed, timeout=10, tick=0.05)


def committed_offsets(broker: BrokerController, group: str, topic: str) -> dict[int, int]:
    """The consumer offsets the broker holds for ``group`` on ``topic``: queue id -> offset."""
    return dict(broker.offsets.table.get(f"{topic}@{group}", {}))


def producer_ids(broker: BrokerController, group: str) -> set[str]:
    return {info.client_id for info in broker.producers.groups.get(group, {}).values()}


def consumer_ids(broker: BrokerController, group: str) -> set[str]:
    info = broker.consumers.get(group)
    return set(info.client_ids) if info is not None else set()


__all__ = ["FAST_BROKER", "BrokerProbe", "Cluster", "committed_offsets", "consumer_ids", "make_topic", "producer_ids",
           "real_cluster", "threaded_cluster"]
