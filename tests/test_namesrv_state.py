"""NameServer state without sockets: routing tables, KV store, config, properties text."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from rocketpy.javacompat import properties
from rocketpy.javacompat.hashmap import JavaHashMap, hashmap_order
from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.namesrv.kv_config import KVConfigError, KVConfigManager
from rocketpy.namesrv.route_info import RouteInfoManager


@dataclasses.dataclass
class TC:
    topic_name: str
    read_queue_nums: int = 4
    write_queue_nums: int = 4
    perm: int = 6
    topic_sys_flag: int = 0


@dataclasses.dataclass
class DV:
    timestamp: int
    counter: int


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def table(*names: str, **kw: int) -> dict[str, TC]:
    return {n: TC(n, **kw) for n in names}


def reg(
    rim: RouteInfoManager,
    name: str = "b",
    addr: str = "a:1",
    bid: int = 0,
    topics: dict[str, TC] | None = None,
    version: int = 1,
    channel: object = None,
    cluster: str = "C",
    filters: list[str] | None = None,
):
    return rim.register_broker(
        cluster, addr, name, bid, addr + "-ha", topics if topics is not None else table("T"), DV(1, version),
        filters, channel,
    )  # fmt: skip


def test_topics_follow_data_version() -> None:
    rim = RouteInfoManager()
    reg(rim, topics=table("T1"), version=1)
    reg(rim, topics=table("T1", "T2"), version=1)  # same version: nothing new is read
    assert set(rim.topic_queue_table) == {"T1"}
    reg(rim, topics=table("T1", "T2"), version=2)
    assert set(rim.topic_queue_table) == {"T1", "T2"}


def test_an_unchanged_topic_keeps_its_entry_across_registrations() -> None:
    # memory: a broker whose version moved (any topic made or deleted) sends all its topics every 30 s;
    # an equal entry made anew each time was a block allocated at a random time and kept (fuzz runs)
    rim = RouteInfoManager()
    reg(rim, topics=table("T1", "T2"), version=1)
    kept = rim.topic_queue_table["T1"]["b"]
    reg(rim, topics={**table("T1"), **table("T2", perm=4)}, version=2)
    assert rim.topic_queue_table["T1"]["b"] is kept
    assert rim.topic_queue_table["T2"]["b"].perm == 4


def test_slave_topics_ignored_and_master_result() -> None:
    rim = RouteInfoManager()
    result = reg(rim, addr="s:1", bid=1, topics=table("S"))
    assert result.master_addr is None and "S" not in rim.topic_queue_table
    reg(rim, addr="m:1", bid=0)
    result = reg(rim, addr="s:1", bid=1)
    assert (result.master_addr, result.ha_server_addr) == ("m:1", "m:1-ha")


def test_slave_promoted_keeps_one_entry_per_address() -> None:
    rim = RouteInfoManager()
    reg(rim, addr="x:1", bid=1)
    reg(rim, addr="x:1", bid=0, version=2)
    assert dict(rim.broker_addr_table["b"].broker_addrs) == {0: "x:1"}


def test_channel_destroy_by_channel_and_by_address() -> None:
    rim = RouteInfoManager()
    chan_a, chan_b = object(), object()
    reg(rim, "ba", "a:1", channel=chan_a, topics=table("TA", "SHARED"))
    reg(rim, "bb", "b:1", channel=chan_b, topics=table("TB", "SHARED"), cluster="C2")
    rim.on_channel_destroy("peer:999", chan_a)
    assert set(rim.topic_queue_table) == {"TB", "SHARED"}
    assert set(rim.cluster_addr_table) == {"C2"}
    # an unknown channel falls back to the remote address, which may be a broker's
    rim.on_channel_destroy("b:1", object())
    assert rim.topic_queue_table == {} and rim.broker_addr_table == {} and rim.broker_live_table == {}


def test_scan_expires_silent_brokers() -> None:
    clock = Clock()
    rim = RouteInfoManager(clock)
    reg(rim, "b1", "a:1", channel="c1")
    clock.now += 60_000
    reg(rim, "b2", "a:2", channel="c2", topics=table("T2"))
    clock.now += 70_000
    assert rim.scan_not_active_broker(120_000) == [("a:1", "c1")]
    assert set(rim.broker_live_table) == {"a:2"} and set(rim.topic_queue_table) == {"T2"}
    rim.update_broker_info_update_timestamp("a:2")  # an unchanged QUERY_DATA_VERSION counts as a heartbeat
    clock.now += 100_000
    assert rim.scan_not_active_broker(120_000) == []


def test_brokers_sharing_a_connection() -> None:
    clock = Clock()
    rim = RouteInfoManager(clock)
    chan = object()
    reg(rim, "b1", "a:1", channel=chan, topics=table("T1"))
    clock.now += 60_000
    reg(rim, "b2", "a:2", channel=chan, topics=table("T2"))
    clock.now += 70_000
    # the expired broker leaves, not the other one on its connection (Java would pick by channel)
    assert rim.scan_not_active_broker(120_000) == [("a:1", chan)]
    assert set(rim.topic_queue_table) == {"T2"}
    reg(rim, "b1", "a:1", channel=chan, topics=table("T1"))
    rim.on_channel_destroy("peer:1", chan)
    assert rim.topic_queue_table == {} and rim.broker_addr_table == {}


def test_unregister_last_member_removes_name_cluster_topics() -> None:
    rim = RouteInfoManager()
    reg(rim, addr="m:1", bid=0)
    reg(rim, addr="s:1", bid=1)
    rim.unregister_broker("C", "m:1", "b", 0)
    assert "T" in rim.topic_queue_table
    rim.unregister_broker("C", "s:1", "b", 1)
    assert rim.topic_queue_table == {} and rim.cluster_addr_table == {}


def test_route_view_and_filter_servers() -> None:
    rim = RouteInfoManager()
    reg(rim, "b1", "a:1", topics=table("T"), filters=["f:1"])
    reg(rim, "b2", "a:2", topics=table("T"))
    view = rim.pickup_topic_route_data("T")
    assert view is not None
    assert [q.broker_name for q in view.queue_datas] == hashmap_order(["b1", "b2"])
    assert view.filter_server_table == {"a:1": ["f:1"]}
    reg(rim, "b1", "a:1", topics=table("T"), filters=[], version=2)
    assert rim.pickup_topic_route_data("T").filter_server_table == {}  # type: ignore[union-attr]
    assert rim.pickup_topic_route_data("missing") is None


def test_delete_topic_in_cluster() -> None:
    rim = RouteInfoManager()
    reg(rim, "b1", "a:1", topics=table("T"))
    reg(rim, "b2", "a:2", topics=table("T"), cluster="C2")
    rim.delete_topic("T", "C2")
    assert list(rim.topic_queue_table["T"]) == ["b1"]
    rim.delete_topic("T", "nope")
    rim.delete_topic("T", "C")
    assert "T" not in rim.topic_queue_table


def test_java_hash_map_capacity_never_shrinks() -> None:
    m: JavaHashMap[str, int] = JavaHashMap()
    for i in range(13):
        m[f"k{i}"] = i
    assert m.capacity == 32
    for i in range(12):
        del m[f"k{i}"]
    assert m.capacity == 32
    assert m.java_keys() == hashmap_order(["k12"], 32)


# -- KV store -----------------------------------------------------------------------------------


def test_kv_reads_java_file(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    # Java writes compact JSON; a hand-edited pretty file reads too
    path.write_text('{\n  "configTable": {"ORDER_TOPIC_CONFIG": {"T": "b:4"}, "n2": {}}\n}')
    kv = KVConfigManager(path)
    kv.load()
    assert kv.get("ORDER_TOPIC_CONFIG", "T") == "b:4"
    assert kv.list_namespace("n2") == b'{"table":{}}'
    kv.put("n2", "k", "v")
    kv.persist()
    parts = {"n2": '"n2":{"k":"v"}', "ORDER_TOPIC_CONFIG": '"ORDER_TOPIC_CONFIG":{"T":"b:4"}'}
    expected = '{"configTable":{' + ",".join(parts[k] for k in hashmap_order(parts)) + "}}"
    assert path.read_text() == expected
    assert path.with_name("kvConfig.json.bak").exists() and not path.with_name("kvConfig.json.tmp").exists()


def test_kv_broken_file_refused(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_text("{broken")
    with pytest.raises(KVConfigError):
        KVConfigManager(path).load()


# -- config and properties ----------------------------------------------------------------------------


def test_properties_format() -> None:
    text = "# comment\n! also\na=1\n b : 2 \nc 3\nd\\=x=4\ne=multi\\\n   line\nf\ng=\\u0041\\tz\n"
    assert properties.loads(text) == {"a": "1", "b": "2 ", "c": "3", "d=x": "4", "e": "multiline", "f": "", "g": "A\tz"}
    with pytest.raises(properties.PropertiesError):
        properties.loads("a=\\u12")
    assert properties.dumps({"a": "1", "b": "x y"}) == "a=1\nb=x y\n"


def test_config_files_read_as_java_does(tmp_path: Path) -> None:
    """Properties.load(InputStream): ISO-8859-1 bytes, other characters as \\u escapes; the NameServer,
    the broker and the broker CLI read their files alike."""
    from rocketpy.broker.cli import _given
    from rocketpy.broker.config import BrokerConfig

    conf = tmp_path / "x.conf"
    conf.write_bytes(b"brokerName=caf\xe9-\\u4e2d\nbrokerClusterName=\xc3\xa9\nrocketmqHome=/h\\u00e9\n")
    # Java reads UTF-8 bytes of a non-ASCII character as two Latin-1 characters
    assert properties.load_file(conf) == {"brokerName": "caf\u00e9-\u4e2d", "brokerClusterName": "\u00c3\u00a9",
                                          "rocketmqHome": "/h\u00e9"}
    assert _given(str(conf)) == properties.load_file(conf)
    broker = BrokerConfig.load(str(conf))
    assert (broker.broker_name, broker.broker_cluster_name) == ("caf\u00e9-\u4e2d", "\u00c3\u00a9")
    assert NamesrvConfig.from_file(conf).rocketmq_home == "/h\u00e9"


def test_config_keys(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    conf = tmp_path / "namesrv.conf"
    conf.write_text(
        "listenPort=10000\norderMessageEnable=TRUE\nscanNotActiveBrokerInterval=500\n"
        "serverWorkerThreads=lots\nmysteryKey=1\n"
    )
    with caplog.at_level(logging.WARNING, "rocketpy.namesrv"):
        cfg = NamesrvConfig.from_file(conf)
    assert cfg.listen_port == 10000 and cfg.order_message_enable is True
    assert cfg.scan_not_active_broker_interval == 500
    assert cfg.server_worker_threads == 8  # unparsable: kept, like Java
    assert cfg.config_store_path == str(conf)
    assert "mysteryKey" in caplog.text and "serverWorkerThreads" in caplog.text
    props = cfg.to_properties()
    assert props["mysteryKey"] == "1" and props["listenPort"] == "10000"
    assert {"rocketmqHome", "kvConfigPath", "configBlackList"} <= cfg.black_list()
