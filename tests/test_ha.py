"""Master/slave replication between two of our brokers over real sockets."""

from __future__ import annotations

import os
import signal
import socket
from contextlib import AsyncExitStack

import trio

from rocketpy import testing
from rocketpy.codecs import ResponseCode
from rocketpy.codecs.ha import build_offset_report
from rocketpy.testing import broker_client, free_broker_port, pull_queues, running_broker

FAST_HA = {"haSendHeartbeatInterval": "200", "haHousekeepingInterval": "5000"}


def commit_log_bytes(broker, end: int) -> bytes:
    store = broker.store
    out = bytearray()
    pos = 0
    while pos < end:
        mf = store.commitlog.mfq.find_by_offset(pos, pos == 0)
        assert mf is not None
        n = min(end - pos, mf.file_from_offset + mf.file_size - pos)
        out += mf.read(pos - mf.file_from_offset, n)
        pos += n
    return bytes(out)


async def wait_until(pred, timeout: float = 30.0, what: str = "condition", tick: float = 0.02) -> None:
    """rocketpy.testing.wait_until, failing with what was awaited."""
    try:
        await testing.wait_until(pred, timeout=timeout, tick=tick)
    except trio.TooSlowError:
        raise AssertionError(f"timed out waiting for {what}") from None


def ha_addr(master) -> str:
    return f"127.0.0.1:{master.ha.service.port}"


async def start_pair(stack: AsyncExitStack, tmp_path, role: str = "ASYNC_MASTER", **extra):
    port = free_broker_port()
    master = await stack.enter_async_context(
        running_broker(
            str(tmp_path / "m"), brokerRole=role, listenPort=port, vipChannelEnable="true", **FAST_HA, **extra
        )
    )
    assert master.ha.service.port == port + 1  # BrokerStartup: haListenPort = listenPort + 1
    slave = await stack.enter_async_context(
        running_broker(
            str(tmp_path / "s"), brokerRole="SLAVE", brokerId="1", haMasterAddress=ha_addr(master), **FAST_HA, **extra
        )
    )
    return master, slave


async def test_slave_replicates_byte_identical_and_serves_pulls(tmp_path):
    async with AsyncExitStack() as stack:
        master, slave = await start_pair(stack, tmp_path)
        async with broker_client(master.address) as c:
            for i in range(60):
                r = await c.send("THa", b"body-%d" % i + b"x" * (i * 37), tags="T", keys=f"k{i}", queue_id=i % 4)
                assert r.code == ResponseCode.SUCCESS
        end = master.store.max_phy_offset
        await wait_until(lambda: slave.store.max_phy_offset == end, what="slave catching up")
        assert commit_log_bytes(slave, end) == commit_log_bytes(master, end)
        # SlaveSynchronize (GET_ALL_TOPIC_CONFIG on the master's VIP port, the rest on listenPort)
        slave.ha.sync.master_addr = master.address
        await slave.ha.sync.sync_all()
        assert slave.topics.get("THa") is not None
        # the ConsumeQueue files built from the replicated bytes are the master's too
        for qid in range(4):
            rel = f"consumequeue/THa/{qid}/00000000000000000000"
            assert (tmp_path / "s" / rel).read_bytes() == (tmp_path / "m" / rel).read_bytes()
        await wait_until(lambda: master.ha.service.push2slave_max_offset == end, what="slave ack")
        async with broker_client(slave.address) as c:
            resp, msgs = await c.pull("G", "THa", 1, 0)
            assert resp.code == ResponseCode.SUCCESS
            assert [m.body[:8] for m in msgs][:2] == [b"body-1xx", b"body-5xx"]
            assert resp.ext_fields["suggestWhichBrokerId"] == "0"
            # the IndexFile was built from the replicated bytes too
            assert slave.store.query_message("THa", "k7", 32, 0, 2**62).messages
            # a slave refuses sends like Java's store (SERVICE_NOT_AVAILABLE)
            r = await c.send("THa", b"no", queue_id=0)
            assert r.code == ResponseCode.SERVICE_NOT_AVAILABLE


async def test_sync_master_waits_for_slave(tmp_path):
    async with running_broker(str(tmp_path / "m"), brokerRole="SYNC_MASTER", **FAST_HA) as master:
        async with broker_client(master.address) as c:
            # no slave: stored, but answered SLAVE_NOT_AVAILABLE
            r = await c.send("TSync", b"alone", queue_id=0)
            assert r.code == ResponseCode.SLAVE_NOT_AVAILABLE and r.ext_fields["msgId"]
            # a producer that does not wait (WAIT=false) is answered at once
            r = await c.send("TSync", b"nowait", queue_id=0, props={"WAIT": "false"})
            assert r.code == ResponseCode.SUCCESS
            r = await c.send_batch("TSync", [b"b1", b"b2"], queue_id=1)
            assert r.code == ResponseCode.SLAVE_NOT_AVAILABLE
        async with running_broker(
            str(tmp_path / "s"), brokerRole="SLAVE", brokerId="1", haMasterAddress=ha_addr(master), **FAST_HA
        ) as slave:
            await wait_until(lambda: master.ha.service.push2slave_max_offset == master.store.max_phy_offset)
            async with broker_client(master.address) as c:
                for i in range(20):
                    r = await c.send("TSync", b"m%d" % i, queue_id=i % 2)
                    assert r.code == ResponseCode.SUCCESS
                    # answered only once the slave had the record
                    assert slave.store.max_phy_offset == master.store.max_phy_offset
                    assert master.ha.service.push2slave_max_offset == master.store.max_phy_offset
                r = await c.send_batch("TSync", [b"b3", b"b4"], queue_id=1)
                assert r.code == ResponseCode.SUCCESS
                assert slave.store.max_phy_offset == master.store.max_phy_offset


async def test_sync_master_flush_slave_timeout(tmp_path):
    """A slave that reports once and never acknowledges: FLUSH_SLAVE_TIMEOUT after slaveTimeout."""
    async with running_broker(str(tmp_path / "m"), brokerRole="SYNC_MASTER", slaveTimeout="300", **FAST_HA) as master:
        async with broker_client(master.address) as c:
            r = await c.send("TSync", b"first", queue_id=0)
            assert r.code == ResponseCode.SLAVE_NOT_AVAILABLE
            with socket.create_connection(("127.0.0.1", master.ha.service.port)) as s:
                s.sendall(build_offset_report(master.store.max_phy_offset))
                await wait_until(lambda: master.ha.service.push2slave_max_offset == master.store.max_phy_offset)
                t0 = trio.current_time()
                r = await c.send("TSync", b"second", queue_id=0)
                assert r.code == ResponseCode.FLUSH_SLAVE_TIMEOUT
                assert 0.25 < trio.current_time() - t0 < 3
            # the fake slave is gone: no slave in sync any more
            await wait_until(lambda: master.ha.service.connection_count == 0)
            r = await c.send("TSync", b"third", queue_id=0)
            assert r.code == ResponseCode.SLAVE_NOT_AVAILABLE


MASTER_CONF = """\
brokerName = broker-a
brokerIP1 = 127.0.0.1
brokerIP2 = 127.0.0.1
listenPort = {port}
listenHost = 127.0.0.1
brokerRole = SYNC_MASTER
flushDiskType = ASYNC_FLUSH
mappedFileSizeCommitLog = 1048576
mappedFileSizeConsumeQueue = 60000
maxHashSlotNum = 1000
maxIndexNum = 4000
haSendHeartbeatInterval = 200
storePathRootDir = {store}
"""


async def test_kill_9_sync_master_under_load_loses_no_acknowledged_message(tmp_path):
    from test_broker_crash import _start, _stop

    port = free_broker_port()
    conf = tmp_path / "master.conf"
    conf.write_text(MASTER_CONF.format(port=port, store=tmp_path / "m"))
    proc, addr = await _start(str(conf))
    acked: dict[tuple[int, int], bytes] = {}
    try:
        async with running_broker(
            str(tmp_path / "s"), brokerRole="SLAVE", brokerId="1", haMasterAddress=f"127.0.0.1:{port + 1}", **FAST_HA
        ) as slave:
            async with broker_client(addr) as c:
                # the topic exists on the master; the slave copies it (SlaveSynchronize)
                r = await c.send("TKill", b"first", queue_id=0)
                assert r.code in (ResponseCode.SUCCESS, ResponseCode.SLAVE_NOT_AVAILABLE)
                await wait_until(lambda: slave.store.max_phy_offset > 0, what="slave connected")
                slave.ha.sync.master_addr = addr
                await slave.ha.sync.sync_all()
                assert slave.topics.get("TKill") is not None

                async def sender(n: int) -> None:
                    i = 0
                    while True:
                        body = b"s%d-%d" % (n, i)
                        try:
                            r = await c.send("TKill", body, queue_id=n % 4)
                        except Exception:
                            return
                        if r.code == ResponseCode.SUCCESS:
                            acked[(n % 4, int(r.ext_fields["queueOffset"]))] = body
                        i += 1

                async with trio.open_nursery() as nursery:
                    for n in range(8):
                        nursery.start_soon(sender, n)
                    await wait_until(lambda: len(acked) >= 300, timeout=30, what="acknowledged sends")
                    os.kill(proc.pid, signal.SIGKILL)
                    with trio.fail_after(10):
                        await proc.wait()
                    await trio.sleep(0.5)
                    nursery.cancel_scope.cancel()
            assert len(acked) > 50
            got = await pull_queues(slave.address, "TKill", 4)
            missing = {k: v for k, v in acked.items() if got.get(k) != v}
            assert not missing, f"{len(missing)} of {len(acked)} acknowledged messages missing on the slave"
    finally:
        if proc.returncode is None:
            await _stop(proc, signal.SIGKILL)


async def test_garbage_on_the_ha_port_closes_that_connection_only(tmp_path, caplog):
    async with running_broker(str(tmp_path / "m"), brokerRole="SYNC_MASTER", slaveTimeout="300", **FAST_HA) as master:
        service = master.ha.service
        async with broker_client(master.address) as c:
            assert (await c.send("TG", b"x", queue_id=0)).code == ResponseCode.SLAVE_NOT_AVAILABLE
            stream = await trio.open_tcp_stream("127.0.0.1", service.port)
            await stream.send_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            with trio.fail_after(20):
                while await stream.receive_some(65536):
                    pass
            await stream.aclose()
            await wait_until(lambda: service.connection_count == 0)
            assert any("greater than local commitLog offset" in r.getMessage() for r in caplog.records)
            # a peer that connects and says nothing is dropped by housekeeping; the broker keeps serving
            idle = await trio.open_tcp_stream("127.0.0.1", service.port)
            await wait_until(lambda: service.connection_count == 1)
            # Java's isSlaveOK only counts connections: the send waits for an acknowledgement in vain
            assert (await c.send("TG", b"y", queue_id=0)).code == ResponseCode.FLUSH_SLAVE_TIMEOUT
            await idle.aclose()
            await wait_until(lambda: service.connection_count == 0)


def test_role_config_rules_and_examples(tmp_path):
    from pathlib import Path

    import pytest

    from rocketpy.broker.config import BrokerConfig
    from rocketpy.javacompat.properties import ConfigError

    examples = Path(__file__).resolve().parent.parent / "examples" / "ha"
    master = BrokerConfig.load(str(examples / "master.conf"), strict=True)
    slave = BrokerConfig.load(str(examples / "slave.conf"), strict=True)
    assert (master.broker_id, master.store.broker_role.value) == (0, "SYNC_MASTER")
    assert (slave.broker_id, slave.store.broker_role.value, slave.slave_read_enable) == (1, "SLAVE", True)
    assert master.store.mapped_file_size_commit_log == slave.store.mapped_file_size_commit_log
    # BrokerStartup: a master is brokerId 0 whatever the file says; a slave needs brokerId > 0
    assert BrokerConfig.from_properties({"brokerRole": "ASYNC_MASTER", "brokerId": "3"}).broker_id == 0
    with pytest.raises(ConfigError, match="brokerId must be > 0"):
        BrokerConfig.from_properties({"brokerRole": "SLAVE", "brokerId": "0"}, strict=True)


async def test_slave_pull_offset_moved_becomes_retry_immediately(tmp_path):
    """PullMessageProcessor on a slave without offsetCheckInSlave: no offset correction."""
    async with AsyncExitStack() as stack:
        master, slave = await start_pair(stack, tmp_path)
        async with broker_client(master.address) as c:
            for i in range(3):
                assert (await c.send("TMoved", b"m%d" % i, queue_id=0)).code == ResponseCode.SUCCESS
            resp, _ = await c.pull("G", "TMoved", 0, 50)
            assert resp.code == ResponseCode.PULL_OFFSET_MOVED
        await wait_until(lambda: slave.store.max_phy_offset == master.store.max_phy_offset)
        slave.ha.sync.master_addr = master.address
        await slave.ha.sync.sync_all()
        async with broker_client(slave.address) as c:
            resp, msgs = await c.pull("G", "TMoved", 0, 50)
            assert resp.code == ResponseCode.PULL_RETRY_IMMEDIATELY and not msgs
            # nextOffsetCorrection on a slave keeps the requested offset
            assert resp.ext_fields["suggestWhichBrokerId"] == "0" and resp.ext_fields["nextBeginOffset"] == "50"
            resp, msgs = await c.pull("G", "TMoved", 0, 1)
            assert resp.code == ResponseCode.SUCCESS and [m.body for m in msgs] == [b"m1", b"m2"]
        # the master's one OFFSET_MOVED_EVENT (replicated), none from the slave
        assert master.store.get_max_offset_in_queue("OFFSET_MOVED_EVENT", 0) == 1
        assert slave.store.get_max_offset_in_queue("OFFSET_MOVED_EVENT", 0) == 1
