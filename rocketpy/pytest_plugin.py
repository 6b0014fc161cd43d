"""pytest fixtures for code that uses RocketMQ: a real NameServer and broker in the test process.

Installed with rocketpy (the ``pytest11`` entry point ``rocketpy``), so a project's tests ask for them by name:

- ``rocketmq_cluster``: a NameServer and a broker (rocketpy's own, the Java servers' protocol) on free
  127.0.0.1 ports with a temporary store, started for the test and stopped after it. It runs on a trio loop of
  its own thread, so the test may be a plain blocking function, an asyncio test (``asyncio.run``,
  pytest-asyncio, anyio) or a trio test alike. It has ``namesrv`` (``host:port``, what a client is given),
  ``broker_addr`` and ``brokers`` (the broker objects, for assertions on what they hold).
- ``rocketmq_namesrv``: just ``rocketmq_cluster.namesrv``.
- ``rocketmq_session_cluster``: one cluster for the whole session (faster; tests then share topics and groups).

``@pytest.mark.rocketmq(broker_names=("broker-a", "broker-b"), namesrv_props={...}, **props)`` sets the brokers,
the NameServer's keys and the broker.conf keys (``props``) of ``rocketmq_cluster`` for one test. Topics are created
on first use (``autoCreateTopicEnable``).

Nothing is imported from the servers until a fixture is used: the plugin costs unrelated test suites nothing.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .broker.controller import BrokerController

__all__ = ["FAST_BROKER", "Cluster", "real_cluster", "threaded_cluster"]

#: broker settings that keep tests quick: short delay levels and transaction checks, topics made on first send
FAST_BROKER = {
    "messageDelayLevel": " ".join(["100ms"] * 18),
    "transactionCheckInterval": "300",
    "transactionTimeOut": "300",
    "autoCreateTopicEnable": "true",
}


@dataclasses.dataclass
class Cluster:
    """A running NameServer and its brokers."""

    namesrv: str
    brokers: list[BrokerController]
    #: what ``prepare`` returned for each broker (see :func:`real_cluster`)
    extras: list[Any] = dataclasses.field(default_factory=list)

    @property
    def broker(self) -> BrokerController:
        return self.brokers[0]

    @property
    def broker_addr(self) -> str:
        return self.brokers[0].broker_addr


@asynccontextmanager
async def real_cluster(broker_names: tuple[str, ...] = ("broker-a",), *,
                       prepare: Callable[[BrokerController], Any] | None = None,
                       namesrv_props: dict[str, str] | None = None,
                       **props: Any) -> AsyncIterator[Cluster]:
    """Our NameServer and broker(s) on 127.0.0.1 ports the OS picks, stores in a temporary directory, in the
    running trio loop; ``props`` are broker.conf keys, ``namesrv_props`` namesrv.properties keys (the tls.*
    settings among them), ``prepare`` is called on each broker before it starts. Everything stops on exit."""
    import trio

    from .broker.controller import BrokerController
    from .namesrv.config import NamesrvConfig
    from .namesrv.server import NameServer
    from .testing import broker_test_config, wait_until

    with tempfile.TemporaryDirectory(prefix="rocketpy-cluster-") as tmp:
        config = NamesrvConfig(listen_port=0, kv_config_path=f"{tmp}/kvConfig.json",
                               config_store_path=f"{tmp}/namesrv.properties")
        config.apply(namesrv_props or {})
        async with trio.open_nursery() as nursery:
            ns = await nursery.start(NameServer(config).run, "127.0.0.1", 0)
            brokers, extras = [], []
            for name in broker_names:
                settings = {**FAST_BROKER, "brokerName": name, "namesrvAddr": ns.address, **props}
                broker = BrokerController(broker_test_config(f"{tmp}/{name}", **settings))
                if prepare is not None:
                    extras.append(prepare(broker))
                brokers.append(await nursery.start(broker.run, None))
            await wait_until(lambda: len(ns.routes.broker_live_table) >= len(brokers), timeout=10, tick=0.02)
            try:
                yield Cluster(ns.address, brokers, extras)
            finally:
                nursery.cancel_scope.cancel()


@contextmanager
def threaded_cluster(**opts: Any) -> Iterator[Cluster]:
    """:func:`real_cluster` served by a trio loop on its own thread, for code that runs its own event loop
    (blocking scripts, asyncio, a trio test of its own, subprocesses)."""
    import trio

    from .client.facade import TrioPortal

    portal = TrioPortal()
    ready: concurrent.futures.Future[tuple[Cluster, trio.Event]] = concurrent.futures.Future()

    async def host() -> None:
        stop = trio.Event()
        try:
            async with real_cluster(**opts) as c:
                ready.set_result((c, stop))
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    async def set_event(event: trio.Event) -> None:
        event.set()

    done = portal.submit(host)
    try:
        cluster, stop = ready.result(30)
        try:
            yield cluster
        finally:
            portal.run(set_event, stop)  # the cluster's own loop ends it: no polling between threads
            done.result(10)
    finally:
        portal.close()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rocketmq(broker_names=..., **props): the brokers and broker.conf keys "
                                       "of the rocketmq_cluster fixture")


@pytest.fixture
def rocketmq_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A NameServer and broker for this test (see the module's text)."""
    marker = request.node.get_closest_marker("rocketmq")
    opts: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    with threaded_cluster(**opts) as cluster:
        yield cluster


@pytest.fixture
def rocketmq_namesrv(rocketmq_cluster: Cluster) -> str:
    """The NameServer address (``host:port``) of this test's cluster."""
    return rocketmq_cluster.namesrv


@pytest.fixture(scope="session")
def rocketmq_session_cluster() -> Iterator[Cluster]:
    """One NameServer and broker for the whole test session."""
    with threaded_cluster() as cluster:
        yield cluster
