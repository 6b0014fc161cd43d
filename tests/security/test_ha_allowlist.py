"""Issue #46, item 5: the broker's HA port serves only the addresses of ``haAllowedAddresses`` (default
``loopback,slaves``: this host, and the other brokers the NameServers list under this broker name).

Java 4.9.8's HAService accepts every connection: a peer that sends an 8-byte offset report of 0 is streamed
the CommitLog from the start of its last file, every topic's messages, with or without ACL.
compat_tests/test_security_java.py reads the Java broker's CommitLog that way.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from rocketpy.codecs import RemotingCommand, ResponseCode
from rocketpy.codecs.codes import RequestCode
from rocketpy.codecs.ha import build_offset_report
from rocketpy.javacompat.properties import ConfigError
from rocketpy.namesrv import NameServer, NamesrvConfig
from rocketpy.testing import broker_client, free_broker_port, running_broker, wait_until

FAST_HA = {"haSendHeartbeatInterval": "200", "haHousekeepingInterval": "5000"}


async def read_as_a_slave(port: int, seconds: float = 3.0) -> bytes:
    """What the HA port sends a peer that reports offset 0, until it closes or ``seconds`` pass."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    got = bytearray()
    try:
        await stream.send_all(build_offset_report(0))
        with trio.move_on_after(seconds):
            while chunk := await stream.receive_some(65536):
                got += chunk
    except trio.BrokenResourceError:
        pass
    finally:
        await stream.aclose()
    return bytes(got)


async def test_the_ha_port_refuses_an_address_outside_the_list(tmp_path, caplog):
    """Java: the 8-byte report is answered with the CommitLog (here the message's body); here the connection is
    closed before anything is read or sent, with one log line."""
    async with running_broker(str(tmp_path / "m"), haAllowedAddresses="10.9.9.9,192.168.0.0/16", **FAST_HA) as master:
        async with broker_client(master.address) as c:
            assert (await c.send("Secret", b"the CommitLog's secret")).code == ResponseCode.SUCCESS
        caplog.set_level(logging.INFO, "rocketpy")
        caplog.clear()
        assert await read_as_a_slave(master.ha.service.port) == b""
        assert master.ha.service.connection_count == 0
        lines = [r.getMessage() for r in caplog.records if "HAService" in r.getMessage()]
        assert len(lines) == 1 and lines[0].startswith("HAService refused connection from 127.0.0.1: not in "
                                                       "haAllowedAddresses (10.9.9.9,192.168.0.0/16")  # fmt: skip


async def test_by_default_this_host_is_served(tmp_path):
    """The default keeps every single-host setup (and the tests' master/slave pairs on 127.0.0.1) working;
    ``*`` is Java's behaviour, anyone."""
    for extra in ({}, {"haAllowedAddresses": "*"}):
        async with running_broker(str(tmp_path / f"m{len(extra)}"), **FAST_HA, **extra) as master:
            async with broker_client(master.address) as c:
                assert (await c.send("Secret", b"the CommitLog's secret")).code == ResponseCode.SUCCESS
            assert b"the CommitLog's secret" in await read_as_a_slave(master.ha.service.port)


@asynccontextmanager
async def namesrv(tmp_path: Path) -> Any:
    cfg = NamesrvConfig(listen_port=0, kv_config_path=str(tmp_path / "kv.json"),
                        config_store_path=str(tmp_path / "ns.properties"))  # fmt: skip
    async with trio.open_nursery() as nursery:
        ns = await nursery.start(NameServer(cfg).run, "127.0.0.1", 0)
        try:
            yield ns
        finally:
            nursery.cancel_scope.cancel()


async def test_a_registered_slave_is_let_in(tmp_path, virtual_clock, caplog):
    """``slaves``: an address is let in once a NameServer lists a broker of this name there (the master asks
    again when an unknown address connects, at most every 5 s; a slave retries every 5 s). The master
    registers as 127.0.0.2 so that 127.0.0.1 is only its slave's address. Refused meanwhile, the slave retries
    every 5 s, not in a loop, and the master logs one line per host and minute."""
    caplog.set_level(logging.WARNING, "rocketpy.broker.ha")
    async with AsyncExitStack() as stack:
        ns = await stack.enter_async_context(namesrv(tmp_path))
        port = free_broker_port()
        master = await stack.enter_async_context(running_broker(
            str(tmp_path / "m"), listenPort=port, brokerIP1="127.0.0.2", brokerIP2="127.0.0.1", namesrvAddr=ns.address,
            haAllowedAddresses="slaves", **FAST_HA,
        ))  # fmt: skip
        await wait_until(lambda: master.outer.registrations > 0, timeout=10)
        async with broker_client(f"127.0.0.1:{port}") as c:  # it listens on 127.0.0.1 only
            for i in range(5):
                assert (await c.send("T", b"m%d" % i)).code == ResponseCode.SUCCESS
        assert await read_as_a_slave(master.ha.service.port) == b""  # nobody of broker-a on 127.0.0.1 yet
        slave = await stack.enter_async_context(running_broker(
            str(tmp_path / "s"), brokerRole="SLAVE", brokerId="1", namesrvAddr=ns.address, **FAST_HA,
        ))  # fmt: skip
        end = master.store.max_phy_offset
        await wait_until(lambda: slave.store.max_phy_offset == end, timeout=40, tick=0.2)
        assert master.ha.allow.fetches >= 2 and master.ha.service.connection_count == 1
        addrs = {str(a) for a in master.ha.allow.members}
        assert addrs == {"127.0.0.1"}
        assert slave.ha.client is not None and slave.ha.client.sessions <= 4
        assert sum("HAService refused" in r.getMessage() for r in caplog.records) == 1


async def test_the_list_is_not_changed_remotely(tmp_path):
    """UPDATE_BROKER_CONFIG may not open the HA port (``haAllowedAddresses=*`` is refused, NO_PERMISSION)."""
    async with running_broker(str(tmp_path / "m")) as broker:
        async with broker_client(broker.address) as c:
            resp = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=b"haAllowedAddresses=*\n")
            assert resp.code == ResponseCode.NO_PERMISSION
        assert broker.ha.allow.list.text == "loopback,slaves" and "haAllowedAddresses" not in broker.config.props
        cmd = RemotingCommand.request(RequestCode.GET_BROKER_CONFIG)
        async with broker_client(broker.address) as c:
            assert (await c.client.invoke(c.addr, cmd, 5.0)).code == ResponseCode.SUCCESS


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"haAllowedAddresses": "loopback,slave"}, "haAllowedAddresses: 'slave' is not an address allow-list entry"),
        ({"aclStrictAdmin": "flase"}, "aclStrictAdmin='flase' is not true or false"),
        ({"aclStrictReads": "no"}, "aclStrictReads='no' is not true or false"),
    ],
)
def test_a_broker_will_not_start_on_a_bad_setting(given, message):
    """`rocketpy broker -c` stops with one line (Java would read a typo of a boolean as false: here that would
    turn a check off)."""
    from rocketpy.broker.config_check import check_given

    with pytest.raises(ConfigError, match=message):
        check_given(given)
