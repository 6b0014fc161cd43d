"""Master/slave replication between our broker and the official Java 4.9.8 broker.

Runs when ROCKETMQ_JAVA_REF names the reference install (its ``bin/broker.sh``) and
ROCKETMQ_JAVA_CLASSPATH the Java client's jars; skips with the reason otherwise. Our
NameServer runs in-process; the Java brokers are subprocesses on free 127.0.0.1 ports,
stopped when the test ends.

* our SLAVE beside a Java SYNC_MASTER: sends are SEND_OK (our slave acknowledges), the
  CommitLogs are byte-identical, and the Java consumer reads everything from our slave
  after the Java master stops;
* a Java SLAVE beside our SYNC_MASTER: the same the other way round.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from rocketpy.client import ClientConfig, Producer, make_message
from rocketpy.codecs import RemotingCommand, RequestCode
from rocketpy.codecs.bodies import TopicConfigSerializeWrapper
from rocketpy.codecs.codes import SendStatus
from rocketpy.namesrv.server import NameServer
from rocketpy.remoting import open_remoting_client
from rocketpy.testing import free_broker_port

from .servers import JAVA_STORE_KEYS, java_broker, our_broker, run_java, stop_java

N = 20
HA = {"brokerName": "broker-ha"}  # master and slave: one broker name
pytestmark = pytest.mark.timeout(240)


async def wait_until(pred, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    with trio.move_on_after(timeout):
        while not await pred():
            await trio.sleep(0.1)
        return
    raise AssertionError(f"timed out waiting for {what}")


def read_commit_log(store: Path, end: int) -> bytes:
    with open(store / "commitlog" / "00000000000000000000", "rb") as f:
        return f.read(end)


def assert_same_consume_queues(a: Path, b: Path, topic: str) -> None:
    qa = sorted(p.name for p in (a / "consumequeue" / topic).iterdir())
    qb = sorted(p.name for p in (b / "consumequeue" / topic).iterdir())
    assert qa == qb and qa
    for q in qa:
        rel = Path("consumequeue") / topic / q / "00000000000000000000"
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


async def produce(namesrv: str, topic: str) -> None:
    async with Producer("HaPG", config=ClientConfig(namesrv_addr=namesrv)) as p:
        for i in range(N):
            r = await p.send(make_message(topic, f"ha message {i}", tags="TagHa", keys=f"k{i}"))
            assert r.send_status == SendStatus.SEND_OK, r


async def java_consume(classes: str, namesrv: str, topic: str, home: Path) -> list[str]:
    out = await run_java(classes, ["consume", namesrv, topic, "HaJavaCG", str(N), "-", "*", "60"], home)
    assert out.result is not None and not out.result.get("error"), out.describe()
    return sorted(m["body"] for m in out.result["messages"])


async def topic_on(addr: str, topic: str) -> bool:
    async with open_remoting_client() as client:
        answer = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG), 3.0)
    return answer.code == 0 and topic in TopicConfigSerializeWrapper.decode(answer.body).topic_config_table


async def test_our_slave_beside_java_sync_master(
    java_ref: Path, java_classes: str, namesrv: NameServer, nursery: trio.Nursery, tmp_path: Path
) -> None:
    topic = "HaJavaMaster"
    port = free_broker_port()
    java_store = tmp_path / "java-master"
    async with java_broker(java_ref, port, namesrv.address, java_store, {**HA, "brokerRole": "SYNC_MASTER"}) as proc:
        async with our_broker(
            nursery, tmp_path / "our-slave", **JAVA_STORE_KEYS, **HA, namesrvAddr=namesrv.address,
            brokerRole="SLAVE", brokerId="1",
        ) as slave:

            async def connected() -> bool:
                # the slave found the master through the NameServer; its first report is 5 s after connecting
                return slave.ha.client.connected

            await wait_until(connected, 30, "our slave connecting to the Java master")
            assert slave.ha.client.master_address == f"127.0.0.1:{port + 1}"
            await trio.sleep(6)  # the first report makes the Java master count the slave in sync
            await produce(namesrv.address, topic)  # SEND_OK: the Java SYNC_MASTER got our acknowledgements
            end = slave.store.max_phy_offset
            assert end > 0
            assert read_commit_log(tmp_path / "our-slave", end) == read_commit_log(java_store, end)
            assert_same_consume_queues(tmp_path / "our-slave", java_store, topic)

            async def synced() -> bool:
                return slave.topics.get(topic) is not None

            await wait_until(synced, 20, "SlaveSynchronize copying the topic")
            await stop_java(proc)
            bodies = await java_consume(java_classes, namesrv.address, topic, tmp_path / "home")
            assert bodies == sorted(f"ha message {i}" for i in range(N))


async def test_java_slave_beside_our_sync_master(
    java_ref: Path, java_classes: str, namesrv: NameServer, nursery: trio.Nursery, tmp_path: Path
) -> None:
    topic = "HaOurMaster"
    port = free_broker_port()
    java_port = free_broker_port()
    java_store = tmp_path / "java-slave"
    async with our_broker(
        nursery,
        tmp_path / "our-master",
        **JAVA_STORE_KEYS,
        **HA,
        namesrvAddr=namesrv.address,
        brokerRole="SYNC_MASTER",
        listenPort=port,
        vipChannelEnable="true",
    ) as master:
        master_stopped = False
        async with java_broker(
            java_ref, java_port, namesrv.address, java_store, {**HA, "brokerRole": "SLAVE", "brokerId": "1"}
        ) as _proc:

            async def slave_in_sync() -> bool:
                return any(c.slave_request_offset >= 0 for c in master.ha.service.connections)

            await wait_until(slave_in_sync, 30, "the Java slave connecting to our master")
            await produce(namesrv.address, topic)  # SEND_OK: the Java slave acknowledged every record
            end = master.store.max_phy_offset
            assert master.ha.service.push2slave_max_offset == end
            assert read_commit_log(java_store, end) == read_commit_log(tmp_path / "our-master", end)
            await trio.sleep(1.5)  # the Java slave's ReputMessageService runs every millisecond or so
            assert_same_consume_queues(java_store, tmp_path / "our-master", topic)

            async def synced() -> bool:
                return await topic_on(f"127.0.0.1:{java_port}", topic)

            await wait_until(synced, 20, "the Java slave's SlaveSynchronize copying the topic")
            await master.stop()
            master_stopped = True
            bodies = await java_consume(java_classes, namesrv.address, topic, tmp_path / "home")
            assert bodies == sorted(f"ha message {i}" for i in range(N))
        assert master_stopped
