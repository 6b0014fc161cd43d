"""Our NameServer and real brokers (rocketpy.broker) in-process, for the client, CLI and example tests: the
clusters of rocketpy's pytest plugin (rocketpy.pytest_plugin, which users get too), with probes.

A test that needs to see what the client sent, or to make a broker misbehave, asks for a
:class:`BrokerProbe` (``real_cluster(probe=True)``): a before-hook on each broker's dispatcher that
records every request and answers the sends it is told to fail with SYSTEM_ERROR, as a busy or broken
broker would. The hook turns the send fast lane off (as ACL does), so only probed clusters lose it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import pytest

from rocketpy import pytest_plugin as plugin
from rocketpy.broker.controller import BrokerController
from rocketpy.codecs import RemotingCommand, RequestCode
from rocketpy.pytest_plugin import FAST_BROKER
from rocketpy.remoting import RequestContext

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


class Cluster(plugin.Cluster):
    """The plugin's cluster, with the brokers' probes when opened with ``probe=True``."""

    @property
    def probes(self) -> list[BrokerProbe]:
        return self.extras

    @property
    def probe(self) -> BrokerProbe:
        """The first broker's probe (the cluster was opened with ``probe=True``)."""
        return self.probes[0]


def _probed(broker: BrokerController) -> BrokerProbe:
    probe = BrokerProbe()
    broker.dispatcher.add_before_hook(probe)
    return probe


def _options(probe: bool, opts: dict[str, Any]) -> dict[str, Any]:
    return {**opts, "prepare": _probed} if probe else opts


@asynccontextmanager
async def real_cluster(broker_names: tuple[str, ...] = ("broker-a",), *, probe: bool = False,
                       **props: Any) -> AsyncIterator[Cluster]:
    """The plugin's real_cluster (rocketpy.pytest_plugin), a :class:`BrokerProbe` on each broker with ``probe``."""
    async with plugin.real_cluster(broker_names, **_options(probe, props)) as c:
        yield Cluster(c.namesrv, c.brokers, c.extras)


@contextmanager
def threaded_cluster(*, probe: bool = False, **opts: Any) -> Iterator[Cluster]:
    """The plugin's threaded_cluster (what the ``rocketmq_cluster`` fixture runs), probed with ``probe``."""
    with plugin.threaded_cluster(**_options(probe, opts)) as c:
        yield Cluster(c.namesrv, c.brokers, c.extras)


@pytest.fixture(scope="module")
def probed() -> Iterator[Cluster]:
    """One probed broker on its own thread, for the tests that run on both loops (each test that sets
    ``fail_sends`` leaves it at 0); a module takes it with ``probed = clusters.probed``."""
    with threaded_cluster(probe=True) as c:
        yield c


@pytest.fixture(scope="module")
def probed_two() -> Iterator[Cluster]:
    """Two probed brokers (broker-a, broker-b) on their own thread."""
    with threaded_cluster(probe=True, broker_names=("broker-a", "broker-b")) as c:
        yield c


async def make_topic(c: Cluster, topic: str, queues: int) -> None:
    """Create ``topic`` on every master through the admin API and wait until the NameServer routes it (on trio
    or asyncio, whichever runs it)."""
    from rocketpy.client.admin import Admin
    from rocketpy.codecs.bodies import TopicConfig

    async with Admin(c.namesrv) as admin:
        for addr in await admin.master_addrs("DefaultCluster"):
            await admin.create_topic(addr, TopicConfig(topic_name=topic, read_queue_nums=queues,
                                                       write_queue_nums=queues, perm=6))

        with anyio.fail_after(10):
            while True:
                route = await admin.client.fetch_route(topic)
                if route is not None and len(route.queue_datas or []) == len(c.brokers):
                    return
                await anyio.sleep(0.05)


def committed_offsets(broker: BrokerController, group: str, topic: str) -> dict[int, int]:
    """The consumer offsets the broker holds for ``group`` on ``topic``: queue id -> offset."""
    return dict(broker.offsets.table.get(f"{topic}@{group}", {}))


def producer_ids(broker: BrokerController, group: str) -> set[str]:
    return {info.client_id for info in broker.producers.groups.get(group, {}).values()}


def consumer_ids(broker: BrokerController, group: str) -> set[str]:
    info = broker.consumers.get(group)
    return set(info.client_ids) if info is not None else set()


__all__ = ["FAST_BROKER", "BrokerProbe", "Cluster", "committed_offsets", "consumer_ids", "make_topic", "probed",
           "probed_two", "producer_ids", "real_cluster", "threaded_cluster"]
