"""The NameServer over real sockets (127.0.0.1, free ports), spoken to with our codecs."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from rocketpy.codecs import MQVersion, RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketpy.codecs.bodies.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    body_crc32,
)
from rocketpy.codecs.codes import TopicSysFlag
from rocketpy.codecs.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    RegisterBrokerRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)
from rocketpy.namesrv import NameServer, NamesrvConfig
from rocketpy.namesrv.processor import APPLY_TOPIC_TIP
from rocketpy.namesrv.route_info import RouteInfoManager
from rocketpy.remoting import RemotingClient, open_remoting_client
from rocketpy.remoting.connection import CommandReader
from rocketpy.testing import wait_until

CLUSTER = "DefaultCluster"


@pytest.fixture
def config(tmp_path: Path) -> NamesrvConfig:
    return NamesrvConfig(
        listen_port=0,
        kv_config_path=str(tmp_path / "kvConfig.json"),
        config_store_path=str(tmp_path / "namesrv.properties"),
    )


@pytest.fixture
async def ns(config: NamesrvConfig, nursery: trio.Nursery) -> AsyncIterator[NameServer]:
    server: NameServer = await nursery.start(NameServer(config).run)
    yield server
    nursery.cancel_scope.cancel()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    async with open_remoting_client() as c:
        yield c


def topics(*names: str, **kw: Any) -> dict[str, TopicConfig]:
    return {n: TopicConfig(topic_name=n, read_queue_nums=4, write_queue_nums=4, perm=6, **kw) for n in names}


def register_request(
    broker: str = "broker-a",
    addr: str = "127.0.0.1:10911",
    broker_id: int = 0,
    table: dict[str, TopicConfig] | None = None,
    *,
    counter: int = 1,
    compressed: bool = False,
    filter_servers: list[str] | None = None,
    cluster: str = CLUSTER,
    crc: int | None = None,
) -> RemotingCommand:
    body = RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
            topic_config_table=table if table is not None else topics("T1"),
            data_version=DataVersion(timestamp=1700000000000, counter=counter),
        ),
        filter_server_list=filter_servers or [],
    )
    raw = body.encode(compress=compressed)
    header = RegisterBrokerRequestHeader(
        broker_name=broker,
        broker_addr=addr,
        cluster_name=cluster,
        ha_server_addr=addr.rsplit(":", 1)[0] + ":10912",
        broker_id=broker_id,
        compressed=compressed,
        body_crc32=body_crc32(raw) if crc is None else crc,
    )
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header, raw)


def route_request(topic: str, *, version: int = MQVersion.V4_9_8, standard: bool | None = None) -> RemotingCommand:
    header = GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=standard)
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, header, version=version)


async def call(client: RemotingClient, ns: NameServer, request: RemotingCommand) -> RemotingCommand:
    return await client.invoke(ns.address, request, timeout=5)


async def route(client: RemotingClient, ns: NameServer, topic: str, **kw: Any) -> dict[str, Any] | None:
    resp = await call(client, ns, route_request(topic, **kw))
    if resp.code == ResponseCode.TOPIC_NOT_EXIST:
        return None
    assert resp.code == ResponseCode.SUCCESS, resp
    return json.loads(resp.body or b"")


# -- registration -----------------------------------------------------------------------


async def test_register_plain_and_route_standard_json(ns: NameServer, client: RemotingClient) -> None:
    resp = await call(client, ns, register_request(table=topics("T1", "T2")))
    assert resp.code == 0 and resp.ext_fields == {} and resp.body is None
    body = (await call(client, ns, route_request("T1"))).body
    assert body == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],'
        b'"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,'
        b'"topicSysFlag":0,"writeQueueNums":4}]}'
    )


async def test_route_legacy_dialect_for_old_clients(ns: NameServer, client: RemotingClient) -> None:
    await call(client, ns, register_request())
    old = (await call(client, ns, route_request("T1", version=MQVersion.V4_9_3))).body
    assert old is not None and b'"brokerAddrs":{0:"127.0.0.1:10911"}' in old
    asked = (await call(client, ns, route_request("T1", version=MQVersion.V4_9_3, standard=True))).body
    assert asked is not None and b'"brokerAddrs":{"0":"127.0.0.1:10911"}' in asked


async def test_unknown_topic_remark(ns: NameServer, client: RemotingClient) -> None:
    resp = await call(client, ns, route_request("nope"))
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark == "No topic route info in name server for the topic: nope" + APPLY_TOPIC_TIP
    assert resp.body is None


async def test_register_compressed(ns: NameServer, client: RemotingClient) -> None:
    req = register_request(table=topics("C1", topic_sys_flag=TopicSysFlag.FLAG_UNIT), compressed=True)
    assert req.body is not None and req.body[:1] != b"{"
    assert (await call(client, ns, req)).code == 0
    data = await route(client, ns, "C1")
    # the compressed form does not carry topicSysFlag
    assert data is not None and data["queueDatas"][0]["topicSysFlag"] == 0


async def test_register_crc_mismatch(ns: NameServer, client: RemotingClient) -> None:
    resp = await call(client, ns, register_request(crc=12345))
    assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark == "crc32 not match"
    assert await route(client, ns, "T1") is None


async def test_register_old_header_only_forms(ns: NameServer, client: RemotingClient) -> None:
    # before V3_0_11 the body is a bare TopicConfigSerializeWrapper
    wrapper = TopicConfigSerializeWrapper(topic_config_table=topics("OLD"), data_version=DataVersion(counter=3))
    header = RegisterBrokerRequestHeader(
        broker_name="broker-o", broker_addr="127.0.0.1:20911", cluster_name="Old", ha_server_addr="x:1", broker_id=0
    )
    req = RemotingCommand.request(RequestCode.REGISTER_BROKER, header, wrapper.encode(), version=MQVersion.V3_0_10)
    assert (await call(client, ns, req)).code == 0
    assert (await route(client, ns, "OLD"))["brokerDatas"][0]["brokerName"] == "broker-o"  # type: ignore[index]
    # and with no body at all: the broker is known, with no topics
    header.broker_name, header.broker_addr = "broker-n", "127.0.0.1:30911"
    req = RemotingCommand.request(RequestCode.REGISTER_BROKER, header, None, version=MQVersion.V3_0_10)
    assert (await call(client, ns, req)).code == 0
    assert "broker-n" in ns.routes.broker_addr_table


async def test_register_bad_body_is_system_error(ns: NameServer, client: RemotingClient) -> None:
    req = register_request()
    req.body = b"{not json"
    req.ext_fields["bodyCrc32"] = str(body_crc32(req.body))  # type: ignore[index]
    resp = await call(client, ns, req)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "Failed to decode RegisterBrokerBody" in (resp.remark or "")
    assert (await call(client, ns, register_request())).code == 0


async def test_slave_learns_master(ns: NameServer, client: RemotingClient) -> None:
    await call(client, ns, register_request(addr="127.0.0.1:10911"))
    resp = await call(client, ns, register_request(addr="127.0.0.1:11911", broker_id=1))
    assert resp.ext_fields == {"masterAddr": "127.0.0.1:10911", "haServerAddr": "127.0.0.1:10912"}
    data = await route(client, ns, "T1")
    assert data is not None
    assert data["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911", "1": "127.0.0.1:11911"}


async def test_filter_servers_in_route(ns: NameServer, client: RemotingClient) -> None:
    await call(client, ns, register_request(filter_servers=["127.0.0.1:30000"]))
    data = await route(client, ns, "T1")
    assert data is not None and data["filterServerTable"] == {"127.0.0.1:10911": ["127.0.0.1:30000"]}


async def test_query_data_version(ns: NameServer, client: RemotingClient) -> None:
    await call(client, ns, register_request(counter=7))
    header = QueryDataVersionRequestHeader(
        broker_name="broker-a", broker_addr="127.0.0.1:10911", cluster_name=CLUSTER, broker_id=0
    )
    same = DataVersion(timestamp=1700000000000, counter=7).encode()
    resp = await call(client, ns, RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, header, same))
    assert resp.ext_fields == {"changed": "false"} and resp.body == b'{"counter":7,"timestamp":1700000000000}'
    other = DataVersion(timestamp=1700000000000, counter=8).encode()
    resp = await call(client, ns, RemotingCommand.request(RequestCode.QUERY_DATA_VERSION, header, other))
    assert resp.ext_fields == {"changed": "true"}


# -- liveness -----------------------------------------------------------------------------


async def test_broker_expires_without_heartbeat(
    config: NamesrvConfig, nursery: trio.Nursery, virtual_clock: trio.testing.MockClock
) -> None:
    """Timers on trio's MockClock (autojump): the NameServer's clock is trio's, so a busy machine
    cannot stretch the heartbeat gaps past the expiry time, and waiting costs no wall time."""
    config.scan_not_active_broker_interval = 50
    config.broker_channel_expired_time = 600
    routes = RouteInfoManager(clock=lambda: int(trio.current_time() * 1000))
    ns: NameServer = await nursery.start(NameServer(config, routes=routes).run)
    async with open_remoting_client() as client, open_remoting_client() as broker:
        await call(broker, ns, register_request())
        assert await route(client, ns, "T1") is not None
        # heartbeats keep it alive past the expiry time
        for _ in range(6):
            await trio.sleep(0.15)
            await call(broker, ns, register_request())
        assert await route(client, ns, "T1") is not None

        # a broker that goes quiet leaves the routes, and the NameServer closes its connection
        b_addr = "127.0.0.1:20911"
        await call(broker, ns, register_request(addr=b_addr, broker="broker-b", table=topics("T2")))
        broker_conn = await broker.connection(ns.address)

        async def gone() -> bool:
            return await route(client, ns, "T2") is None

        start = trio.current_time()
        await wait_until(gone, timeout=5, tick=0.02)
        assert trio.current_time() - start >= 0.55
        await wait_until(lambda: broker_conn.closed, timeout=5, tick=0.02)
        # broker-a was on the same connection: it left with it
        assert await route(client, ns, "T1") is None
        # answers made stale go at the next scan, though no lookup comes
        assert ns.cached_route_answers > 0
        ns.routes.delete_topic("T1")
        await trio.sleep(0.1)
        assert ns.cached_route_answers == 0
    nursery.cancel_scope.cancel()


async def test_connection_close_drops_broker(ns: NameServer, client: RemotingClient) -> None:
    async with open_remoting_client() as broker:
        await call(broker, ns, register_request(table=topics("GONE")))
        assert await route(client, ns, "GONE") is not None

    async def gone() -> bool:
        return await route(client, ns, "GONE") is None

    await wait_until(gone, timeout=5, tick=0.02)
    assert ns.routes.broker_addr_table == {} and ns.routes.cluster_addr_table == {}


async def test_unregister_broker(ns: NameServer, client: RemotingClient) -> None:
    await call(client, ns, register_request())
    header = UnRegisterBrokerRequestHeader(
        broker_name="broker-a", broker_addr="127.0.0.1:10911", cluster_name=CLUSTER, broker_id=0
    )
    assert (await call(client, ns, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header))).code == 0
    assert await route(client, ns, "T1") is None


# -- KV config --------------------------------------------------------------------------------


def kv_request(code: int, header: Any) -> RemotingCommand:
    return RemotingCommand.request(code, header)


async def test_kv_config_roundtrip_and_persistence(
    config: NamesrvConfig, nursery: trio.Nursery, tmp_path: Path
) -> None:
    async with trio.open_nursery() as inner:
        ns: NameServer = await inner.start(NameServer(config).run)
        async with open_remoting_client() as client:
            for k, v in (("k1", "v1"), ("k2", "v2")):
                h = PutKVConfigRequestHeader(namespace="ns1", key=k, value=v)
                assert (await call(client, ns, kv_request(RequestCode.PUT_KV_CONFIG, h))).code == 0
            resp = await call(
                client, ns, kv_request(RequestCode.GET_KV_CONFIG, GetKVConfigRequestHeader(namespace="ns1", key="k1"))
            )
            assert resp.code == 0 and resp.ext_fields == {"value": "v1"}
            h = DeleteKVConfigRequestHeader(namespace="ns1", key="k2")
            assert (await call(client, ns, kv_request(RequestCode.DELETE_KV_CONFIG, h))).code == 0
        inner.cancel_scope.cancel()

    saved = (tmp_path / "kvConfig.json").read_text()
    assert saved == '{"configTable":{"ns1":{"k1":"v1"}}}'
    assert (tmp_path / "kvConfig.json.bak").exists()

    ns2: NameServer = await nursery.start(NameServer(config).run)
    async with open_remoting_client() as client:
        h1 = GetKVConfigRequestHeader(namespace="ns1", key="k1")
        resp = await call(client, ns2, kv_request(RequestCode.GET_KV_CONFIG, h1))
        assert resp.ext_fields == {"value": "v1"}
        h2 = GetKVConfigRequestHeader(namespace="ns1", key="k2")
        resp = await call(client, ns2, kv_request(RequestCode.GET_KV_CONFIG, h2))
        assert resp.code == ResponseCode.QUERY_NOT_FOUND and resp.ext_fields == {}
        assert resp.remark == "No config item, Namespace: ns1 Key: k2"
        h3 = GetKVListByNamespaceRequestHeader(namespace="ns1")
        resp = await call(client, ns2, kv_request(RequestCode.GET_KVLIST_BY_NAMESPACE, h3))
        assert resp.body == b'{"table":{"k1":"v1"}}'
        h4 = GetKVListByNamespaceRequestHeader(namespace="none")
        resp = await call(client, ns2, kv_request(RequestCode.GET_KVLIST_BY_NAMESPACE, h4))
        assert resp.code == ResponseCode.QUERY_NOT_FOUND and resp.remark == "No config item, Namespace: none"
        # a put without a key, as Java's lenient header decoding lets through
        bad = RemotingCommand(code=RequestCode.PUT_KV_CONFIG, ext_fields={"namespace": "x"})
        resp = await call(client, ns2, bad)
        assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark == "namespace or key is null"
    nursery.cancel_scope.cancel()


async def test_kv_and_config_files_written_off_the_event_loop(
    config: NamesrvConfig, nursery: trio.Nursery, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PUT_KV_CONFIG, DELETE_KV_CONFIG and UPDATE_NAMESRV_CONFIG answer once their file is written,
    and write it from a worker thread, never on the thread trio runs on."""
    import threading

    from rocketpy.namesrv import kv_config, server

    writes: list[tuple[str, bool]] = []
    real = kv_config.write_file_safely

    def recording(path: str, data: bytes) -> None:
        writes.append((os.path.basename(path), threading.current_thread() is threading.main_thread()))
        real(path, data)

    monkeypatch.setattr(kv_config, "write_file_safely", recording)
    monkeypatch.setattr(server, "write_file_safely", recording)
    ns: NameServer = await nursery.start(NameServer(config).run)
    async with open_remoting_client() as client:
        put = PutKVConfigRequestHeader(namespace="ns1", key="k", value="v")
        assert (await call(client, ns, kv_request(RequestCode.PUT_KV_CONFIG, put))).code == 0
        assert (tmp_path / "kvConfig.json").read_text() == '{"configTable":{"ns1":{"k":"v"}}}'
        delete = DeleteKVConfigRequestHeader(namespace="ns1", key="k")
        assert (await call(client, ns, kv_request(RequestCode.DELETE_KV_CONFIG, delete))).code == 0
        assert (tmp_path / "kvConfig.json").read_text() == '{"configTable":{"ns1":{}}}'
        update = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")
        assert (await call(client, ns, update)).code == 0
        assert "orderMessageEnable=true" in (tmp_path / "namesrv.properties").read_text()
    assert writes == [("kvConfig.json", False), ("kvConfig.json", False), ("namesrv.properties", False)]
    nursery.cancel_scope.cancel()


async def test_kv_and_config_writes_intern_no_names(
    config: NamesrvConfig, nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A KV or config write makes its ``.tmp`` and ``.bak`` names without pathlib, which interns each name
    it parses: names made for one write and dropped after it left a slot each in CPython's interned
    table, which doubled (0.9 MiB, for good) under the PUT_KV_CONFIG requests of a 30-minute fuzz run."""
    interned: list[str] = []
    real = sys.intern

    def counting(name: str) -> str:
        if name.endswith((".tmp", ".bak", ".json", ".properties")):  # (whatever else runs may intern too)
            interned.append(name)
        return real(name)

    ns: NameServer = await nursery.start(NameServer(config).run)
    monkeypatch.setattr(sys, "intern", counting)
    async with open_remoting_client() as client:
        put = PutKVConfigRequestHeader(namespace="ns1", key="k", value="v")
        assert (await call(client, ns, kv_request(RequestCode.PUT_KV_CONFIG, put))).code == 0
        delete = DeleteKVConfigRequestHeader(namespace="ns1", key="k")
        assert (await call(client, ns, kv_request(RequestCode.DELETE_KV_CONFIG, delete))).code == 0
        update = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")
        assert (await call(client, ns, update)).code == 0
    monkeypatch.undo()
    assert os.path.exists(config.kv_config_path + ".bak") and os.path.exists(config.config_store_path)
    assert interned == []
    nursery.cancel_scope.cancel()


async def test_order_topic_conf(config: NamesrvConfig, nursery: trio.Nursery) -> None:
    config.order_message_enable = True
    ns: NameServer = await nursery.start(NameServer(config).run)
    async with open_remoting_client() as client:
        h = PutKVConfigRequestHeader(namespace="ORDER_TOPIC_CONFIG", key="T1", value="broker-a:4")
        await call(client, ns, kv_request(RequestCode.PUT_KV_CONFIG, h))
        resp = await call(client, ns, register_request())
        assert resp.body == b'{"table":{"T1":"broker-a:4"}}'
        data = await route(client, ns, "T1")
        assert data is not None and data["orderTopicConf"] == "broker-a:4"
    nursery.cancel_scope.cancel()


# -- topics, clusters, permissions ---------------------------------------------------------------


async def test_cluster_info_and_topic_lists(ns: NameServer, client: RemotingClient) -> None:
    unit = topics("U1", topic_sys_flag=TopicSysFlag.FLAG_UNIT)
    sub = topics("S1", topic_sys_flag=TopicSysFlag.FLAG_UNIT_SUB)
    both = topics("B1", topic_sys_flag=TopicSysFlag.FLAG_UNIT | TopicSysFlag.FLAG_UNIT_SUB)
    await call(client, ns, register_request(table={**topics("T1"), **unit, **sub, **both}))
    await call(client, ns, register_request("broker-b", "127.0.0.1:20911", table=topics("T1", "T2"), cluster="C2"))

    resp = await call(client, ns, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
    assert b'"brokerAddrs":{0:"127.0.0.1:10911"}' in (resp.body or b"")
    info = json.loads((resp.body or b"").replace(b"{0:", b'{"0":'))
    assert info["clusterAddrTable"] == {"DefaultCluster": ["broker-a"], "C2": ["broker-b"]}

    async def topic_list(code: int, header: Any = None) -> tuple[set[str], str | None]:
        body = json.loads((await call(client, ns, RemotingCommand.request(code, header))).body or b"")
        return set(body["topicList"]), body.get("brokerAddr")

    assert (await topic_list(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))[0] == {"T1", "T2", "U1", "S1", "B1"}
    by_cluster = await topic_list(RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster="C2"))
    assert by_cluster == ({"T1", "T2"}, None)
    none = await topic_list(RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster="none"))
    assert none == (set(), None)
    names, addr = await topic_list(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)
    assert names == {"DefaultCluster", "broker-a", "C2", "broker-b"} and addr in ("127.0.0.1:10911", "127.0.0.1:20911")
    assert (await topic_list(RequestCode.GET_UNIT_TOPIC_LIST))[0] == {"U1", "B1"}
    assert (await topic_list(RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST))[0] == {"S1", "B1"}
    assert (await topic_list(RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST))[0] == {"S1"}

    # delete T1 from one cluster only, then T2 everywhere
    h = DeleteTopicFromNamesrvRequestHeader(topic="T1", cluster_name="C2")
    await call(client, ns, RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, h))
    data = await route(client, ns, "T1")
    assert data is not None and [q["brokerName"] for q in data["queueDatas"]] == ["broker-a"]
    h = DeleteTopicFromNamesrvRequestHeader(topic="T2")
    await call(client, ns, RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, h))
    assert await route(client, ns, "T2") is None


async def test_write_perm(ns: NameServer, client: RemotingClient) -> None:
    await call(client, ns, register_request(table=topics("T1", "T2")))
    wipe = WipeWritePermOfBrokerRequestHeader(broker_name="broker-a")
    resp = await call(client, ns, RemotingCommand.request(RequestCode.WIPE_WRITE_PERM_OF_BROKER, wipe))
    assert resp.ext_fields == {"wipeTopicCount": "2"}
    assert (await route(client, ns, "T1"))["queueDatas"][0]["perm"] == 4  # type: ignore[index]
    add = AddWritePermOfBrokerRequestHeader(broker_name="broker-a")
    resp = await call(client, ns, RemotingCommand.request(RequestCode.ADD_WRITE_PERM_OF_BROKER, add))
    assert resp.ext_fields == {"addTopicCount": "2"}
    assert (await route(client, ns, "T1"))["queueDatas"][0]["perm"] == 6  # type: ignore[index]


# -- configuration ---------------------------------------------------------------------------------


async def test_namesrv_config_get_update(ns: NameServer, client: RemotingClient, tmp_path: Path) -> None:
    resp = await call(client, ns, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG))
    text = (resp.body or b"").decode()
    assert "orderMessageEnable=false\n" in text and "productEnvName=center\n" in text

    update = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")
    assert (await call(client, ns, update)).code == 0
    assert ns.config.order_message_enable is True
    assert "orderMessageEnable=true" in (tmp_path / "namesrv.properties").read_text()

    black = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/etc/passwd\n")
    resp = await call(client, ns, black)
    assert resp.code == ResponseCode.NO_PERMISSION and resp.remark == "Can not update config in black list."
    bad = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"a=\\uZZZZ\n")
    resp = await call(client, ns, bad)
    assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark == "string2Properties error"


# -- robustness --------------------------------------------------------------------------------------


async def test_unknown_code_and_bad_frames(ns: NameServer, client: RemotingClient) -> None:
    resp = await call(client, ns, RemotingCommand.request(4321))
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 4321 not supported"

    for garbage in (struct.pack(">i", -1) + b"xxxx", struct.pack(">ii", 12, 8) + b"{bad json}", b"\x7f\xff\xff\xff"):
        stream = await trio.open_tcp_stream("127.0.0.1", ns.port)
        await stream.send_all(garbage)
        with trio.fail_after(5):
            assert await stream.receive_some() == b""
        await stream.aclose()

    # a missing required header field: Java decodes leniently and answers anyway
    resp = await call(client, ns, RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, ext_fields={}))
    assert resp.code == ResponseCode.TOPIC_NOT_EXIST
    assert resp.remark == "No topic route info in name server for the topic: null" + APPLY_TOPIC_TIP
    assert (await call(client, ns, register_request())).code == 0


async def test_pipelined_requests_in_binary_headers(ns: NameServer) -> None:
    await_ready = await trio.open_tcp_stream("127.0.0.1", ns.port)
    frames = b"".join(
        RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC,
            GetRouteInfoRequestHeader(topic=f"t{i}"),
            opaque=i,
            serialize_type=SerializeType.ROCKETMQ,
        ).encode()
        for i in range(20)
    )
    await await_ready.send_all(frames)
    reader = CommandReader()
    got: list[RemotingCommand] = []
    with trio.fail_after(5):
        while len(got) < 20:
            got += reader.feed(await await_ready.receive_some())
    assert [c.opaque for c in got] == list(range(20))
    assert {c.serialize_type for c in got} == {SerializeType.ROCKETMQ}
    assert all(c.code == ResponseCode.TOPIC_NOT_EXIST for c in got)
    await await_ready.aclose()


# -- the command line ------------------------------------------------------------------------------------


def test_cli_print_config(tmp_path: Path) -> None:
    conf = tmp_path / "ns.conf"
    conf.write_text("listenPort=19876\norderMessageEnable=true\nnoSuchKey=1\n")
    out = subprocess.run(
        [sys.executable, "-m", "rocketpy.namesrv.cli", "-c", str(conf), "-p"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = set(out.stdout.splitlines())
    assert {"listenPort=19876", "orderMessageEnable=true", "noSuchKey=1", f"configStorePath={conf}"} <= lines
    assert "noSuchKey" in out.stderr  # unknown keys are warned about


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_cli_serves_and_stops_on_sigterm(tmp_path: Path) -> None:
    conf = tmp_path / "ns.conf"
    conf.write_text(f"kvConfigPath={tmp_path / 'kv.json'}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rocketpy.namesrv.cli", "-c", str(conf), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "boot success" in line, line + (proc.stderr.read() if proc.stderr else "")
        addr = line.rsplit(" ", 1)[-1].strip()

        async def ask() -> RemotingCommand:
            async with open_remoting_client() as client:
                return await client.invoke(addr, route_request("x"), timeout=5)

        assert trio.run(ask).code == ResponseCode.TOPIC_NOT_EXIST
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
