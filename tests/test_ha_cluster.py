"""A master/slave pair of our brokers behind our NameServer, with our Python client:
the slave learns its master from REGISTER_BROKER, consumers move to the slave while the master
is down and back to the master afterwards."""

from __future__ import annotations

from collections import Counter
from contextlib import asynccontextmanager

import trio
from test_ha import FAST_HA, commit_log_bytes
from test_ha import wait_until as _wait_until

from rocketpy.broker.controller import BrokerController
from rocketpy.client import ClientConfig, ConsumeStatus, Producer, PushConsumer, make_message
from rocketpy.codecs.codes import ConsumeFromWhere, SendStatus
from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.namesrv.server import NameServer
from rocketpy.testing import broker_test_config, free_broker_port


async def wait_until(pred, timeout: float = 30.0, what: str = "condition") -> None:
    # checked every 0.1 s: on the virtual clock each check waits out the autojump threshold in real time
    await _wait_until(pred, timeout, what, tick=0.1)


@asynccontextmanager
async def namesrv(tmp_path):
    cfg = NamesrvConfig(
        listen_port=0,
        kv_config_path=str(tmp_path / "kv.json"),
        config_store_path=str(tmp_path / "ns.properties"),
    )
    cfg.listen_host = "127.0.0.1"
    async with trio.open_nursery() as nursery:
        ns = await nursery.start(NameServer(cfg).run)
        try:
            yield ns
        finally:
            nursery.cancel_scope.cancel()


class BrokerHandle:
    """A broker we can stop and start again on the same store and ports."""

    def __init__(self, nursery: trio.Nursery, store_dir: str, **props: object) -> None:
        self.nursery = nursery
        self.store_dir = store_dir
        self.props = props
        self.broker: BrokerController | None = None

    async def start(self) -> BrokerController:
        cfg = broker_test_config(self.store_dir, **self.props)
        self.broker = BrokerController(cfg)
        await self.nursery.start(self.broker.run)
        return self.broker

    async def stop(self) -> None:
        assert self.broker is not None
        await self.broker.stop()
        broker = self.broker
        await wait_until(lambda: broker.nursery is None and not broker.store.is_open, 10, "the broker stopped")


def client_config(ns: NameServer) -> ClientConfig:
    return ClientConfig(
        namesrv_addr=ns.address,
        rebalance_interval=1.0,
        persist_consumer_offset_interval=0.5,
        poll_name_server_interval=0.5,
    )


async def test_slave_takes_over_reads_and_master_resumes(tmp_path, virtual_clock):
    async with namesrv(tmp_path) as ns, trio.open_nursery() as nursery:
        port = free_broker_port()
        common = dict(namesrvAddr=ns.address, vipChannelEnable="true", brokerName="broker-ha", **FAST_HA)
        master_h = BrokerHandle(nursery, str(tmp_path / "m"), brokerRole="SYNC_MASTER", listenPort=port, **common)
        master = await master_h.start()
        slave_h = BrokerHandle(nursery, str(tmp_path / "s"), brokerRole="SLAVE", brokerId="1", **common)
        slave = await slave_h.start()
        # the slave learned its master's HA and broker addresses from the NameServer
        await wait_until(lambda: slave.ha.client.connected, what="slave HA connection")
        assert slave.ha.client.master_address == f"127.0.0.1:{port + 1}"
        assert slave.ha.sync.master_addr == master.address
        await wait_until(
            lambda: (
                master.ha.service.connection_count == 1
                and (master.ha.service.push2slave_max_offset >= master.store.max_phy_offset)
            )
        )

        async with Producer("PG", config=client_config(ns)) as p:
            for i in range(20):
                r = await p.send(make_message("HaTopic", f"m{i}", tags="A", keys=f"k{i}"))
                assert r.send_status == SendStatus.SEND_OK
        # the route carries both members
        route = ns.routes.pickup_topic_route_data("HaTopic")
        assert route.broker_datas[0][2] == {0: master.address, 1: slave.address}

        seen1: Counter[bytes] = Counter()

        async def listener1(msgs, ctx):  # type: ignore[no-untyped-def]
            seen1.update(m.body for m in msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        c1 = PushConsumer("HaCG1", listener1, config=client_config(ns))
        c1.subscribe("HaTopic", "*")
        c1.consume_from_where = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        async with c1:
            await wait_until(lambda: sum(seen1.values()) >= 20, timeout=20, what="HaCG1 on the master")
            await wait_until(
                lambda: sum(master.offsets.offsets_of("HaCG1", "HaTopic").values()) == 20, what="offsets on master"
            )
        assert set(seen1) == {f"m{i}".encode() for i in range(20)}
        # SlaveSynchronize copies topics and offsets (first cycle 3 s after start, then every 10 s)
        await wait_until(
            lambda: sum(slave.offsets.offsets_of("HaCG1", "HaTopic").values()) == 20,
            timeout=15,
            what="offsets synced to the slave",
        )
        assert slave.topics.get("HaTopic") is not None
        end = master.store.max_phy_offset
        assert commit_log_bytes(slave, end) == commit_log_bytes(master, end)

        # the master goes away: a new group reads everything from the slave
        await master_h.stop()
        seen2: Counter[bytes] = Counter()

        async def listener2(msgs, ctx):  # type: ignore[no-untyped-def]
            seen2.update(m.body for m in msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        c2 = PushConsumer("HaCG2", listener2, config=client_config(ns))
        c2.subscribe("HaTopic", "*")
        c2.consume_from_where = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        async with c2:
            await wait_until(lambda: sum(seen2.values()) >= 20, timeout=20, what="HaCG2 on the slave")
            # offsets go to the slave while there is no master
            await wait_until(
                lambda: sum(slave.offsets.offsets_of("HaCG2", "HaTopic").values()) == 20, what="offsets on slave"
            )
            # HaCG1 again: it resumes at the synced offsets and gets nothing new
            c1b = PushConsumer("HaCG1", listener1, config=client_config(ns))
            c1b.subscribe("HaTopic", "*")
            async with c1b:
                await trio.sleep(2)  # virtual: two rebalances, many pulls
            assert sum(seen1.values()) == 20

            # the master is back: consumption resumes there without re-reading
            master = await master_h.start()
            await wait_until(
                lambda: (
                    slave.ha.client.connected
                    and (master.ha.service.push2slave_max_offset >= master.store.max_phy_offset)
                ),
                timeout=15,
            )
            async with Producer("PG", config=client_config(ns)) as p:
                for i in range(20, 25):
                    r = await p.send(make_message("HaTopic", f"m{i}", tags="A"))
                    assert r.send_status == SendStatus.SEND_OK
            await wait_until(lambda: sum(seen2.values()) >= 25, timeout=20, what="HaCG2 after the master returns")
            await wait_until(
                lambda: sum(master.offsets.offsets_of("HaCG2", "HaTopic").values()) == 25,
                timeout=10,
                what="HaCG2 offsets committed to the master again",
            )
        assert set(seen2) == {f"m{i}".encode() for i in range(25)}
        assert max(seen2.values()) == 1  # nothing read twice
        await slave_h.stop()
        await master_h.stop()
        nursery.cancel_scope.cancel()


async def test_pull_suggestions_send_a_slow_consumer_to_the_slave(tmp_path):
    """slaveReadEnable with accessMessageInMemoryMaxRatio=0: every pull that is not at the very end
    suggests whichBrokerWhenConsumeSlowly (1); the client follows, and commits offsets to the master."""
    async with namesrv(tmp_path) as ns, trio.open_nursery() as nursery:
        port = free_broker_port()
        common = dict(
            namesrvAddr=ns.address,
            vipChannelEnable="true",
            brokerName="broker-ha",
            slaveReadEnable="true",
            accessMessageInMemoryMaxRatio="0",
            **FAST_HA,
        )
        master_h = BrokerHandle(nursery, str(tmp_path / "m"), brokerRole="ASYNC_MASTER", listenPort=port, **common)
        master = await master_h.start()
        slave_h = BrokerHandle(nursery, str(tmp_path / "s"), brokerRole="SLAVE", brokerId="1", **common)
        slave = await slave_h.start()
        await wait_until(lambda: slave.ha.client.connected, what="slave HA connection")
        async with Producer("PG", config=client_config(ns)) as p:
            for i in range(40):
                r = await p.send(make_message("SlowTopic", f"m{i}"))
                assert r.send_status == SendStatus.SEND_OK
        await wait_until(lambda: slave.store.max_phy_offset == master.store.max_phy_offset)
        slave.ha.sync.master_addr = master.address
        await slave.ha.sync.sync_all()

        from rocketpy.testing import broker_client

        async with broker_client(master.address) as c:
            resp, msgs = await c.pull("SlowCG", "SlowTopic", 0, 0, max_nums=1)
            assert msgs and resp.ext_fields["suggestWhichBrokerId"] == "1"
            last = int(resp.ext_fields["maxOffset"]) - 1
            resp, msgs = await c.pull("SlowCG", "SlowTopic", 0, last)
            # even at the queue's end: Java compares the CommitLog's end with the START of the last record read
            assert msgs and resp.ext_fields["suggestWhichBrokerId"] == "1"
        async with broker_client(slave.address) as c:
            resp, msgs = await c.pull("SlowCG", "SlowTopic", 0, 0, max_nums=1)
            assert msgs and resp.ext_fields["suggestWhichBrokerId"] == "1"

        seen: Counter[bytes] = Counter()

        async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
            seen.update(m.body for m in msgs)
            return ConsumeStatus.CONSUME_SUCCESS

        before = slave.stats["get"]
        consumer = PushConsumer("SlowCG", listener, config=client_config(ns))
        consumer.subscribe("SlowTopic", "*")
        consumer.consume_from_where = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        async with consumer:
            await wait_until(lambda: sum(seen.values()) >= 40, timeout=20, what="consuming")
            # offsets are committed to the master, never by the slave's pulls
            await wait_until(lambda: sum(master.offsets.offsets_of("SlowCG", "SlowTopic").values()) == 40)
        assert slave.stats["get"] > before  # the slave served pulls
        assert max(seen.values()) == 1
        await slave_h.stop()
        await master_h.stop()
        nursery.cancel_scope.cancel()


MASTER_PROC_CONF = """\
brokerName = broker-ha
brokerIP1 = 127.0.0.1
brokerIP2 = 127.0.0.1
listenPort = {port}
listenHost = 127.0.0.1
brokerRole = SYNC_MASTER
namesrvAddr = {namesrv}
mappedFileSizeCommitLog = 4194304
mappedFileSizeConsumeQueue = 60000
maxHashSlotNum = 1000
maxIndexNum = 4000
haSendHeartbeatInterval = 200
storePathRootDir = {store}
"""


async def test_kill_9_master_consumer_moves_to_slave_and_back(tmp_path):
    """The master process is SIGKILLed mid-consumption: the group goes on from the slave, then the
    restarted master; every acknowledged message is consumed, none twice past a committed offset."""
    import os
    import signal

    from test_broker_crash import _start

    async with namesrv(tmp_path) as ns, trio.open_nursery() as nursery:
        port = free_broker_port()
        conf = tmp_path / "master.conf"
        conf.write_text(MASTER_PROC_CONF.format(port=port, namesrv=ns.address, store=tmp_path / "m"))
        proc, _ = await _start(str(conf))
        try:
            # the master registers just after it serves: a slave registering before it would learn no
            # master until its next registration, 10 s on (a loaded CI machine got there)
            def master_registered() -> bool:
                group = ns.routes.broker_addr_table.get("broker-ha")
                return group is not None and 0 in group.broker_addrs

            await wait_until(master_registered, what="master registered")
            slave_h = BrokerHandle(
                nursery,
                str(tmp_path / "s"),
                brokerRole="SLAVE",
                brokerId="1",
                namesrvAddr=ns.address,
                brokerName="broker-ha",
                mappedFileSizeCommitLog="4194304",
                **FAST_HA,
            )
            slave = await slave_h.start()
            await wait_until(lambda: slave.ha.client.connected, what="slave HA connection")
            await trio.sleep(0.5)  # first report after haSendHeartbeatInterval
            sent: list[bytes] = []
            async with Producer("PG", config=client_config(ns)) as p:
                for i in range(30):
                    r = await p.send(make_message("KillTopic", f"k{i}"))
                    assert r.send_status == SendStatus.SEND_OK
                    sent.append(f"k{i}".encode())
            await wait_until(lambda: slave.topics.get("KillTopic") is not None, timeout=15, what="topic synced")

            seen: Counter[bytes] = Counter()
            gate = trio.Event()

            async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
                for m in msgs:
                    seen[m.body] += 1
                    if sum(seen.values()) >= 10:
                        await gate.wait()  # hold the rest until the master is dead
                return ConsumeStatus.CONSUME_SUCCESS

            consumer = PushConsumer("KillCG", listener, config=client_config(ns))
            consumer.subscribe("KillTopic", "*")
            consumer.consume_from_where = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            async with consumer:
                await wait_until(lambda: sum(seen.values()) >= 10, timeout=20, what="first messages")
                os.kill(proc.pid, signal.SIGKILL)
                with trio.fail_after(10):
                    await proc.wait()
                gate.set()
                # everything comes, from the slave (the master is dead)
                await wait_until(lambda: set(seen) == set(sent), timeout=30, what="all messages via the slave")
                await wait_until(
                    lambda: sum(slave.offsets.offsets_of("KillCG", "KillTopic").values()) == 30,
                    timeout=15,
                    what="offsets committed to the slave",
                )
                # the master comes back on the same store
                proc, _ = await _start(str(conf))
                await wait_until(lambda: slave.ha.client.connected, timeout=15, what="slave reconnecting")
                await trio.sleep(0.5)
                async with Producer("PG", config=client_config(ns)) as p:
                    for i in range(30, 35):
                        r = await p.send(make_message("KillTopic", f"k{i}"))
                        assert r.send_status == SendStatus.SEND_OK
                        sent.append(f"k{i}".encode())
                await wait_until(lambda: set(seen) == set(sent), timeout=30, what="new messages via the master")
                await trio.sleep(1.5)  # a few persist rounds
            # nothing committed was read again; the restarted master did not hand out old messages anew
            assert max(seen.values()) == 1, {k: v for k, v in seen.items() if v > 1}
            await slave_h.stop()
        finally:
            if proc.returncode is None:
                proc.send_signal(signal.SIGTERM)
                with trio.move_on_after(15):
                    await proc.wait()
            nursery.cancel_scope.cancel()
