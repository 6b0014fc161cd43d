"""A NameServer, a broker and the console in one trio run, on loopback ports the OS picks
(browser tests, tools/screenshots.py, tools/bench). ``threaded_console_cluster`` hosts it on a
thread for synchronous callers such as Playwright's sync API."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

import trio

from ..broker.controller import BrokerController
from ..namesrv.config import NamesrvConfig
from ..namesrv.server import NameServer
from ..testing import broker_test_config
from .app import ConsoleSettings
from .server import run_console

T = TypeVar("T")

BROKER_PROPS = {
    "autoCreateTopicEnable": "true",
    "traceTopicEnable": "true",
    "messageDelayLevel": " ".join(["100ms"] * 18),
}


@dataclasses.dataclass
class ConsoleCluster:
    namesrv: str
    broker: BrokerController
    url: str
    portal: Any = None

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``await fn(*args)`` on the cluster's trio thread (threaded use only)."""
        return self.portal.run(fn, *args)  # type: ignore[no-any-return]


@asynccontextmanager
async def console_cluster(store_dir: str | None = None, **settings: Any) -> AsyncIterator[ConsoleCluster]:
    with tempfile.TemporaryDirectory(prefix="rocketpy-console-") as tmp:
        root = store_dir or tmp
        ns_config = NamesrvConfig(listen_port=0, kv_config_path=f"{root}/kvConfig.json",
                                  config_store_path=f"{root}/namesrv.properties")
        async with trio.open_nursery() as nursery:
            ns = await nursery.start(NameServer(ns_config).run, "127.0.0.1", 0)
            broker = BrokerController(broker_test_config(f"{root}/broker-a", namesrvAddr=ns.address, **BROKER_PROPS))
            await nursery.start(broker.run, None)
            with trio.fail_after(10):
                while not ns.routes.broker_live_table:
                    await trio.sleep(0.02)
            url = await nursery.start(run_console, ConsoleSettings(namesrv=ns.address, **settings), "127.0.0.1:0")
            try:
                yield ConsoleCluster(ns.address, broker, url)
            finally:
                nursery.cancel_scope.cancel()


@contextmanager
def threaded_console_cluster(**settings: Any) -> Iterator[ConsoleCluster]:
    from ..client.facade import TrioPortal

    portal = TrioPortal()
    ready: concurrent.futures.Future[ConsoleCluster] = concurrent.futures.Future()
    stop = threading.Event()

    async def host() -> None:
        try:
            async with console_cluster(**settings) as c:
                c.portal = portal
                ready.set_result(c)
                while not stop.is_set():
                    await trio.sleep(0.05)
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    done = portal.submit(host)
    try:
        yield ready.result(30)
    finally:
        stop.set()
        try:
            done.result(15)
        finally:
            portal.close()
