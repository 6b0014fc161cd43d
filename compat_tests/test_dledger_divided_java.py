"""The divided CommitLog across implementations: a store that ran plain becomes a DLedger member
(``enableDLegerCommitLog=true``, a group of one) and the other implementation recovers it.

Ours first: our plain broker takes messages, our DLedger broker seals its CommitLog and takes more above the
divided offset, then the official Java 4.9.8 broker starts on that store: it serves every message, old and
new, and takes sends of its own. Java's first: the same with the roles swapped, our broker recovering the
divided store Java wrote. Runs when ROCKETMQ_JAVA_REF names the reference install; skips otherwise.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from rocketpy.broker.controller import BrokerController
from rocketpy.client import ClientConfig, Producer, make_message
from rocketpy.codecs.codes import SendStatus
from rocketpy.namesrv.server import NameServer
from rocketpy.testing import broker_test_config, free_broker_port, free_port, pull_queues

from .servers import JAVA_STORE_KEYS, java_broker

pytestmark = pytest.mark.timeout(300)
TOPIC = "DlDividedTopic"
NAME = "broker-dv"


def master_addr(ns: NameServer) -> str | None:
    group = ns.routes.broker_addr_table.get(NAME)
    return None if group is None else group.broker_addrs.get(0)


async def wait_for(pred, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    with trio.move_on_after(timeout):
        while not pred():
            await trio.sleep(0.2)
        return
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@asynccontextmanager
async def broker(java: bool, dledger: bool, ref: Path, store: Path, port: int, ns: NameServer,
                 nursery: trio.Nursery) -> AsyncIterator[str]:
    """Ours or Java's broker on ``store``, plain or a DLedger group of one, until it is the registered master;
    stopped cleanly (Java: SIGTERM) on exit. Yields its address."""
    keys = {**JAVA_STORE_KEYS, "brokerName": NAME, "namesrvAddr": ns.address}
    if dledger:
        keys.update(enableDLegerCommitLog="true", dLegerGroup=NAME, dLegerPeers=f"n0-127.0.0.1:{free_port()}",
                    dLegerSelfId="n0")
    addr = f"127.0.0.1:{port}"
    if java:
        async with java_broker(ref, port, ns.address, store, keys):
            await wait_for(lambda: master_addr(ns) == addr, 60, "the Java broker registered as master")
            yield addr
    else:
        ours = BrokerController(broker_test_config(str(store), listenPort=port, **keys))
        await nursery.start(ours.run)
        try:
            await wait_for(lambda: master_addr(ns) == addr, 60, "our broker registered as master")
            yield addr
        finally:
            await ours.stop()
            await wait_for(lambda: ours.nursery is None and not ours.store.is_open, 30, "our broker stopped")
    await wait_for(lambda: master_addr(ns) != addr, 30, "the broker unregistered")


async def send(ns: NameServer, bodies: list[str]) -> None:
    config = ClientConfig(namesrv_addr=ns.address, poll_name_server_interval=0.5)
    async with Producer("DlDividedPG", config=config) as producer:
        for body in bodies:
            r = await producer.send(make_message(TOPIC, body, keys=body))
            assert r.send_status == SendStatus.SEND_OK, r


async def stored(addr: str) -> list[str]:
    return sorted(b.decode() for b in (await pull_queues(addr, TOPIC, 4)).values())


@pytest.mark.parametrize("first", ["rocketpy", "java"])
async def test_the_other_implementation_recovers_a_divided_store(first: str, java_ref: Path, tmp_path: Path,
                                                                   namesrv: NameServer, nursery: trio.Nursery) -> None:
    java_first = first == "java"
    store = tmp_path / "store"
    port = free_broker_port()
    old = [f"old{i}" for i in range(20)]
    new = [f"new{i}" for i in range(10)]
    more = [f"more{i}" for i in range(5)]
    async with broker(java_first, False, java_ref, store, port, namesrv, nursery):
        await send(namesrv, old)
    async with broker(java_first, True, java_ref, store, port, namesrv, nursery) as addr:
        assert await stored(addr) == sorted(old)
        await send(namesrv, new)
    first_file = sorted((store / "dledger-n0" / "data").iterdir())[0].name
    assert int(first_file) > 0  # the ledger starts where the old CommitLog ends
    async with broker(not java_first, True, java_ref, store, port, namesrv, nursery) as addr:
        assert await stored(addr) == sorted(old + new)
        await send(namesrv, more)
        assert await stored(addr) == sorted(old + new + more)
    assert sorted((store / "dledger-n0" / "data").iterdir())[0].name == first_file
