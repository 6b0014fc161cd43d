"""Mixed DLedger broker groups: our brokers and the official Java 4.9.8 broker (``enableDLegerCommitLog=true``)
as members of one group behind our NameServer, with our client.

One rocketpy + two Java, and two rocketpy + one Java. Leaders are stopped (SIGKILL for Java, a stop for ours)
and started again, by the other implementation on the store the first one left (a Java broker recovers a
rocketpy DLedger store and the reverse), until each side has led and taken sends as the master (brokerId 0).
Afterwards every
acknowledged message is consumed from the last leader, and the three ledgers are byte-identical up to the
committed position. Runs when ROCKETMQ_JAVA_REF names the reference install; skips with the reason otherwise.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import trio

from rocketpy.broker.controller import BrokerController
from rocketpy.client import ClientConfig, Producer, make_message
from rocketpy.codecs.codes import SendStatus
from rocketpy.namesrv.server import NameServer
from rocketpy.store.dledger_ledger import DLedgerLedger
from rocketpy.testing import broker_test_config, free_broker_port, free_port, pull_queues

from .servers import JAVA_STORE_KEYS, java_broker

pytestmark = pytest.mark.timeout(420)
TOPIC = "DlMixTopic"
NAME = "broker-dl"


class Member:
    """One member of the group, ours (in this process) or Java's (a subprocess), startable again."""

    def __init__(self, node: int, java: bool, store: Path, port: int, peers: str, namesrv: str) -> None:
        self.node, self.java, self.store, self.port = node, java, store, port
        self.keys = {
            **JAVA_STORE_KEYS,
            "brokerName": NAME,
            "enableDLegerCommitLog": "true",
            "dLegerGroup": NAME,
            "dLegerPeers": peers,
            "dLegerSelfId": f"n{node}",
            "namesrvAddr": namesrv,
        }
        self.broker: BrokerController | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self.proc: trio.Process | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self, nursery: trio.Nursery, ref: Path) -> None:
        if self.java:
            stack = contextlib.AsyncExitStack()
            self.proc = await stack.enter_async_context(java_broker(ref, self.port, self.keys["namesrvAddr"],
                                                                    self.store, self.keys))
            self._stack = stack
        else:
            cfg = broker_test_config(str(self.store), listenPort=self.port, **self.keys)
            self.broker = BrokerController(cfg)
            await nursery.start(self.broker.run)

    async def stop(self) -> None:
        if self.java:
            assert self.proc is not None and self._stack is not None
            self.proc.kill()  # kill -9, as the fault test does
            await self.proc.wait()
            await self._stack.aclose()
            self.proc = self._stack = None
        else:
            assert self.broker is not None
            await self.broker.stop()
            self.broker = None

    @property
    def running(self) -> bool:
        return self.proc is not None or self.broker is not None

    def ledger_dir(self) -> Path:
        return self.store / f"dledger-n{self.node}"


def master_addr(ns: NameServer) -> str | None:
    group = ns.routes.broker_addr_table.get(NAME)
    return None if group is None else group.broker_addrs.get(0)


async def wait_for(pred, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    with trio.move_on_after(timeout):
        while not pred():
            await trio.sleep(0.2)
        return
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def ledger_data(path: Path, end: int) -> bytes:
    out = bytearray()
    for f in sorted((path / "data").iterdir()):
        out += f.read_bytes()
    return bytes(out[:end])


@pytest.mark.parametrize("ours", [1, 2], ids=["1-rocketpy-2-java", "2-rocketpy-1-java"])
async def test_mixed_group_fails_over_both_ways(ours: int, java_ref: Path, tmp_path: Path,
                                                 namesrv: NameServer) -> None:
    ports = [free_broker_port() for _ in range(3)]
    dl_ports = [free_port() for _ in range(3)]
    peers = ";".join(f"n{i}-127.0.0.1:{p}" for i, p in enumerate(dl_ports))
    members = [Member(i, i >= ours, tmp_path / f"n{i}", ports[i], peers, namesrv.address) for i in range(3)]
    config = ClientConfig(namesrv_addr=namesrv.address, poll_name_server_interval=0.5)
    sent: list[str] = []
    led = {True: 0, False: 0}  # sends taken by a Java leader, by ours
    switched: list[int] = []
    async with trio.open_nursery() as nursery:
        for m in members:
            await m.start(nursery, java_ref)
        async with Producer("DlMixPG", config=config) as producer:
            for cycle in range(6):
                await wait_for(lambda: master_addr(namesrv) in {m.addr for m in members if m.running}, 60,
                               "a leader registered as brokerId 0")
                leader = next(m for m in members if m.addr == master_addr(namesrv))
                async def send(body: str) -> None:
                    r = await producer.send(make_message(TOPIC, body, keys=body))
                    assert r.send_status == SendStatus.SEND_OK
                    sent.append(body)

                for i in range(10):
                    await send(f"c{cycle}-m{i}")
                # sent together: our leader pushes what a turn appended as one batched APPEND, which a Java
                # follower must take as DLedger 0.3.1.2's batch push
                async with trio.open_nursery() as burst:
                    for i in range(30):
                        burst.start_soon(send, f"c{cycle}-b{i}")
                led[leader.java] += 1
                if led[True] and led[False] and cycle >= 1:
                    break
                await leader.stop()
                await wait_for(lambda leader=leader: master_addr(namesrv) not in (None, leader.addr), 60,
                               "a new leader")
                # it comes back as the other implementation, on the store the first one left
                leader.java = not leader.java
                switched.append(leader.node)
                await leader.start(nursery, java_ref)
        assert led[True] and led[False], f"both sides should have led: {led}"
        assert switched, "a member should have been restarted by the other implementation"
        last = next(m for m in members if m.addr == master_addr(namesrv))
        got = await pull_queues(last.addr, TOPIC, 4)
        assert sorted(b.decode() for b in got.values()) == sorted(sent)
        await trio.sleep(3)  # the followers take the last entries
        for m in members:
            await m.stop()
        nursery.cancel_scope.cancel()
    # every member holds the same entries, byte for byte, as far as all of them got
    ends = [max((e.pos + e.entry_size for e in DLedgerLedger(m.ledger_dir()).entries()), default=0) for m in members]
    end = min(ends)
    assert end > 0
    first = ledger_data(members[0].ledger_dir(), end)
    for m in members[1:]:
        assert ledger_data(m.ledger_dir(), end) == first
