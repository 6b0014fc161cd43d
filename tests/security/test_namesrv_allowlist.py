"""Issue #46, item 5: the NameServer serves registrations and its admin codes only to the addresses of its
allow-lists (``registerAllowedAddresses``, ``adminAllowedAddresses``; default ``loopback,private``).

Java 4.9.8's NameServer has no such check (DefaultRequestProcessor answers every code from any address):
from anywhere on the network one REGISTER_BROKER files a broker of the attacker's address under an existing
broker name, and a client asking for the topic's route is sent there; PUT_KV_CONFIG, WIPE_WRITE_PERM_OF_BROKER
and DELETE_TOPIC_IN_NAMESRV rewrite the cluster the same way. compat_tests/test_security_java.py shows it
against the Java NameServer.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import trio

from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode
from rocketpy.codecs.bodies.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    body_crc32,
)
from rocketpy.codecs.headers.namesrv import (
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetRouteInfoRequestHeader,
    PutKVConfigRequestHeader,
    RegisterBrokerRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)
from rocketpy.javacompat.properties import ConfigError
from rocketpy.namesrv import NameServer, NamesrvConfig
from rocketpy.remoting import open_remoting_client
from rocketpy.remoting.dispatch import RequestContext

PUBLIC = "203.0.113.9:40001"  # TEST-NET-3: an address on no private network


def _config(tmp_path: Path, **props: str) -> NamesrvConfig:
    config = NamesrvConfig(
        listen_port=0,
        kv_config_path=str(tmp_path / "kvConfig.json"),
        config_store_path=str(tmp_path / "namesrv.properties"),
    )
    # as a -c file gives them (on today's main these keys are unknown, and ignored)
    config.apply(props, warn_unknown=False)
    return config


def register(addr: str = "10.0.0.5:10911", broker: str = "broker-a", topic: str = "T1") -> RemotingCommand:
    raw = RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
            topic_config_table={topic: TopicConfig(topic_name=topic, read_queue_nums=4, write_queue_nums=4, perm=6)},
            data_version=DataVersion(timestamp=1700000000000, counter=1),
        ),
        filter_server_list=[],
    ).encode()
    header = RegisterBrokerRequestHeader(
        broker_name=broker, broker_addr=addr, cluster_name="DefaultCluster",
        ha_server_addr=addr.rsplit(":", 1)[0] + ":10912", broker_id=0, compressed=False, body_crc32=body_crc32(raw),
    )  # fmt: skip
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header, raw)


class _Channel:
    """What the routes keep as a registered broker's connection (nothing is sent on it here)."""

    remote_addr = PUBLIC


async def _from(ns: NameServer, peer: str, request: RemotingCommand) -> RemotingCommand:
    """``request`` as the NameServer answers it for a connection from ``peer``."""
    ctx: RequestContext[Any] = RequestContext(_Channel(), peer, ns)  # type: ignore[arg-type]
    response = await ns.dispatcher.dispatch(ctx, request)
    assert response is not None
    return response


def _broker_addrs(ns: NameServer, topic: str) -> list[str]:
    body = ns.route_answer(topic, True)
    if body is None:
        return []
    return [a for b in json.loads(body)["brokerDatas"] for a in b["brokerAddrs"].values()]


async def test_a_forged_registration_from_a_public_address_is_refused(tmp_path, caplog):
    """Java: REGISTER_BROKER from any address answers SUCCESS, and the topic's route then names the forger's
    address (a second registration under the same name replaces the broker's address)."""
    ns = NameServer(_config(tmp_path))
    assert (await _from(ns, "10.0.0.5:50000", register("10.0.0.5:10911"))).code == ResponseCode.SUCCESS
    caplog.set_level(logging.WARNING, "rocketpy.namesrv")
    caplog.clear()
    forged = await _from(ns, PUBLIC, register("203.0.113.9:10911"))
    assert forged.code == ResponseCode.NO_PERMISSION
    assert forged.remark == (
        "REGISTER_BROKER is not allowed from 203.0.113.9: add the address to the NameServer's registerAllowedAddresses"
    )
    assert _broker_addrs(ns, "T1") == ["10.0.0.5:10911"]
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [f"REGISTER_BROKER from {PUBLIC} refused: not in registerAllowedAddresses"]
    unregister = RemotingCommand.request(
        RequestCode.UNREGISTER_BROKER,
        UnRegisterBrokerRequestHeader(broker_name="broker-a", broker_addr="10.0.0.5:10911",
                                      cluster_name="DefaultCluster", broker_id=0),
    )  # fmt: skip
    assert (await _from(ns, PUBLIC, unregister)).code == ResponseCode.NO_PERMISSION
    assert _broker_addrs(ns, "T1") == ["10.0.0.5:10911"]
    # reads stay open to every client
    route = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="T1"))
    assert (await _from(ns, PUBLIC, route)).code == ResponseCode.SUCCESS


@pytest.mark.parametrize(
    ("code", "header", "body"),
    [
        (RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader(namespace="ORDER_TOPIC_CONFIG", key="T1", value="x:1"),
         None),
        (RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader(namespace="NS", key="k"), None),
        (RequestCode.WIPE_WRITE_PERM_OF_BROKER, WipeWritePermOfBrokerRequestHeader(broker_name="broker-a"), None),
        (RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic="T1"), None),
        (RequestCode.UPDATE_NAMESRV_CONFIG, None, b"orderMessageEnable=true\n"),
    ],
)
async def test_admin_codes_from_a_public_address_are_refused(tmp_path, code, header, body):
    """Java: each answers SUCCESS from any address (KV written, routes' write permission wiped, the topic gone,
    the config changed and saved)."""
    ns = NameServer(_config(tmp_path))
    ns.kv.put("NS", "k", "v")
    assert (await _from(ns, "192.168.1.7:50000", register())).code == ResponseCode.SUCCESS
    before = (ns.route_answer("T1", True), ns.kv.get("NS", "k"), ns.kv.get("ORDER_TOPIC_CONFIG", "T1"),
              ns.config.to_properties())  # fmt: skip
    resp = await _from(ns, PUBLIC, RemotingCommand.request(code, header, body))
    assert resp.code == ResponseCode.NO_PERMISSION
    assert "adminAllowedAddresses" in (resp.remark or "")
    after = (ns.route_answer("T1", True), ns.kv.get("NS", "k"), ns.kv.get("ORDER_TOPIC_CONFIG", "T1"),
             ns.config.to_properties())  # fmt: skip
    assert after == before
    assert not (tmp_path / "kvConfig.json").exists() and not (tmp_path / "namesrv.properties").exists()
    # the same request from the deployment's own network is served
    assert (await _from(ns, "172.18.0.4:50000", RemotingCommand.request(code, header, body))).code == 0


async def test_the_lists_are_not_changed_remotely(tmp_path):
    """Java has no such keys; here UPDATE_NAMESRV_CONFIG may not widen them (black-listed, NO_PERMISSION), even
    from an address it may otherwise update the config from."""
    ns = NameServer(_config(tmp_path))
    for key in ("registerAllowedAddresses", "adminAllowedAddresses"):
        update = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=f"{key}=*\n".encode())
        resp = await _from(ns, "127.0.0.1:50000", update)
        assert resp.code == ResponseCode.NO_PERMISSION and resp.remark == "Can not update config in black list."
    assert ns.config.register_allowed_addresses == ns.config.admin_allowed_addresses == "loopback,private"


async def test_over_sockets_an_address_outside_the_list_cannot_register(tmp_path, nursery):
    """A NameServer listed for 10.0.0.0/8 only refuses a broker connecting from 127.0.0.1, which a client's
    route lookup never sees; ``*`` is Java's behaviour (anyone)."""
    server: NameServer = await nursery.start(
        NameServer(_config(tmp_path, registerAllowedAddresses="10.0.0.0/8", adminAllowedAddresses="10.0.0.0/8")).run
    )
    open_ns: NameServer = await nursery.start(
        NameServer(_config(tmp_path / "open", registerAllowedAddresses="*", adminAllowedAddresses="*")).run
    )
    async with open_remoting_client() as client:
        resp = await client.invoke(server.address, register("127.0.0.1:10911"), 5.0)
        assert resp.code == ResponseCode.NO_PERMISSION
        route = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="T1"))
        assert (await client.invoke(server.address, route, 5.0)).code == ResponseCode.TOPIC_NOT_EXIST
        assert (await client.invoke(open_ns.address, register("127.0.0.1:10911"), 5.0)).code == ResponseCode.SUCCESS
        wipe = RemotingCommand.request(
            RequestCode.WIPE_WRITE_PERM_OF_BROKER, WipeWritePermOfBrokerRequestHeader(broker_name="broker-a")
        )
        assert (await client.invoke(open_ns.address, wipe, 5.0)).code == ResponseCode.SUCCESS


async def test_defaults_of_the_deployments(tmp_path):
    """mqnamesrv / rocketpy namesrv / compose: loopback and the private ranges (a broker in another container or
    on another host of the LAN registers); ``rocketpy serve``: loopback, and the address of --host."""
    from argparse import Namespace

    from rocketpy.allowlist import AllowList
    from rocketpy.broker.cli import serve_configs

    default = AllowList.parse(NamesrvConfig().register_allowed_addresses)
    for host in ("127.0.0.1", "::1", "10.1.2.3", "172.17.0.2", "192.168.10.4", "100.64.3.3", "fd12::1",
                 "::ffff:10.0.0.7"):  # fmt: skip
        assert default.allows(host), host
    for host in ("203.0.113.9", "8.8.8.8", "2001:db8::1", "172.32.0.1", "", "stream-7f"):
        assert not default.allows(host), host

    def serve(host: str) -> AllowList:
        args = Namespace(host=host, namesrv_port=9876, broker_port=10911, store=str(tmp_path / "store"),
                         config=None, no_vip=False)  # fmt: skip
        ns, _ = serve_configs(args)
        assert ns.register_allowed_addresses == ns.admin_allowed_addresses
        return AllowList.parse(ns.register_allowed_addresses)

    assert serve("127.0.0.1").allows("127.0.0.1") and not serve("127.0.0.1").allows("10.1.2.3")
    assert not serve("0.0.0.0").allows("192.168.1.1")
    assert serve("10.9.8.7").allows("10.9.8.7") and not serve("10.9.8.7").allows("10.9.8.6")


def test_list_syntax_and_bad_entries(tmp_path):
    """A list that does not parse stops `rocketpy namesrv -c` with one line naming the entry."""
    from rocketpy.allowlist import AllowList, host_of

    listed = AllowList.parse("10.0.0.0/8; 192.168.1.5 ,fd00::/8")
    assert listed.allows("10.200.0.1") and listed.allows("192.168.1.5") and listed.allows("fd00::3")
    assert not listed.allows("192.168.1.6") and not listed.allows("127.0.0.1")
    assert AllowList.parse("*").allows("8.8.8.8")
    assert host_of("::1:5555") == "::1" and host_of("[::1]:5555") == "::1" and host_of("1.2.3.4:5") == "1.2.3.4"
    with pytest.raises(ValueError, match="'10.0.0.300' is not an address allow-list entry"):
        AllowList.parse("loopback,10.0.0.300")
    path = tmp_path / "namesrv.properties"
    path.write_text("registerAllowedAddresses=loopback,brokers.example\n")
    with pytest.raises(ConfigError, match="registerAllowedAddresses: 'brokers.example' is not"):
        NamesrvConfig.from_file(path, strict=True)


async def test_java_brokers_register_under_the_default_list(tmp_path, nursery):
    """What README's deployments run: a broker on this host (loopback) registers with a default NameServer
    (compat_tests/test_namesrv_compat.py does it with the Java broker)."""
    from rocketpy.testing import running_broker

    server: NameServer = await nursery.start(NameServer(_config(tmp_path)).run)
    async with running_broker(str(tmp_path / "store"), namesrvAddr=server.address) as broker:
        with trio.fail_after(10):
            while broker.outer.registrations == 0:
                await trio.sleep(0.05)
        assert _broker_addrs(server, "TBW102") == [broker.broker_addr]
