"""The NameServer's cached GET_ROUTEINFO_BY_TOPIC answers equal freshly encoded ones after every
kind of route change: registration (new topics, same data version, slaves, filter servers),
unregistration, topic deletion (all or one cluster), write-permission changes, broker expiry,
connection loss, ORDER_TOPIC_CONFIG KV changes, config changes (orderMessageEnable, clusterTest)
and both route dialects (client version, acceptStandardJsonOnly)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from rocketpy.codecs import MQVersion, RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketpy.codecs.headers.namesrv import GetRouteInfoRequestHeader
from rocketpy.namesrv import NameServer, NamesrvConfig
from rocketpy.namesrv.kv_config import NAMESPACE_ORDER_TOPIC_CONFIG
from rocketpy.namesrv.processor import get_route_info_by_topic, route_body
from rocketpy.namesrv.route_info import RouteInfoManager
from rocketpy.remoting.dispatch import RequestContext, fix_response

TOPICS = ["T1", "T2", "T3", "%RETRY%G", "Unknown"]
CLUSTERS = ["C1", "C2"]
BROKERS = [("b1", "10.0.0.1:10911"), ("b1", "10.0.0.2:10911"), ("b2", "10.0.0.3:10911"), ("b3", "10.0.0.4:10911")]
#: (client version, acceptStandardJsonOnly): legacy dialect, standard by version, standard on request
DIALECTS = [(MQVersion.V4_9_3, None), (MQVersion.V4_9_3, False), (MQVersion.V4_9_4, None), (0, True)]


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


@pytest.fixture
def ns(tmp_path: Path) -> NameServer:
    config = NamesrvConfig(
        listen_port=0,
        kv_config_path=str(tmp_path / "kvConfig.json"),
        config_store_path=str(tmp_path / "namesrv.properties"),
    )
    return NameServer(config, routes=RouteInfoManager(clock=Clock()))


def request(
    topic: str, version: int, standard: bool | None, opaque: int = 7, stype: int = SerializeType.JSON
) -> RemotingCommand:
    header = GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=standard)
    return RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, header, version=version, opaque=opaque, serialize_type=stype
    )


def answer(ns: NameServer, topic: str, version: int, standard: bool | None) -> bytes:
    """The handler's answer (through the cache), as the frame it puts on the wire."""
    req = request(topic, version, standard)
    resp = get_route_info_by_topic(RequestContext(None, "127.0.0.1:1", ns), req)  # type: ignore[arg-type]
    assert resp is not None
    fix_response(req, resp)
    return resp.encode()


def fresh(ns: NameServer, topic: str, version: int, standard: bool | None, opaque: int = 7, stype: int = 0) -> bytes:
    """The same answer built from the route tables now, without any cache."""
    req = request(topic, version, standard, opaque, stype)
    std = (version >= MQVersion.V4_9_4 or bool(standard)) and not ns.config.cluster_test
    view = ns.routes.pickup_topic_route_data(topic)
    if view is None:
        resp = req.response(
            ResponseCode.TOPIC_NOT_EXIST,
            remark=f"No topic route info in name server for the topic: {topic}"
            "\nSee http://rocketmq.apache.org/docs/faq/ for further details.",
        )
    else:
        order = None
        if ns.config.order_message_enable or ns.config.cluster_test:
            order = ns.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
        resp = req.response(ResponseCode.SUCCESS, body=route_body(view, order, std))
    fix_response(req, resp)
    return resp.encode()


OPAQUES = [7, 123456, -5, 0, 2**31 - 1, -(2**31), 42]
#: per state in check_all: the first request makes the memo entry, the others hit it
CHECK_OPAQUES = [7, -5, 2**31 - 1]


def shortcut(ns: NameServer, topic: str, version: int, standard: bool | None, opaque: int, stype: int) -> bytes:
    """The remoting shortcut's answer to the request frame (it must answer every route lookup)."""
    frame = request(topic, version, standard, opaque, stype).encode()
    assert ns.route_shortcut.takes(frame)
    out = ns.route_shortcut.answer(None, frame)
    assert out is not None
    return out


def check_all(ns: NameServer, what: str) -> None:
    for topic in TOPICS:
        for version, standard in DIALECTS:
            assert answer(ns, topic, version, standard) == fresh(ns, topic, version, standard), (what, topic, version)
            # asked twice: the second comes from the cache
            assert answer(ns, topic, version, standard) == fresh(ns, topic, version, standard), (what, topic, version)
            for stype in (SerializeType.JSON, SerializeType.ROCKETMQ):
                # the first makes the memo entry, the others are answered from it
                for opaque in CHECK_OPAQUES:
                    expected = fresh(ns, topic, version, standard, opaque, stype)
                    got = shortcut(ns, topic, version, standard, opaque, stype)
                    assert got == expected, (what, topic, version, standard, opaque, stype)


def register(ns: NameServer, i: int, bid: int = 0, *, topics: dict[str, TC], counter: int, **kw: object) -> None:
    name, addr = BROKERS[i]
    ns.routes.register_broker(
        kw.get("cluster", "C1"),  # type: ignore[arg-type]
        addr,
        name,
        bid,
        addr + "-ha",
        topics,
        DV(1, counter),
        kw.get("filters"),  # type: ignore[arg-type]
        kw.get("channel"),
    )


def test_each_kind_of_change(ns: NameServer) -> None:
    chan = object()
    check_all(ns, "empty")
    register(ns, 0, topics={"T1": TC("T1")}, counter=1, channel=chan)
    check_all(ns, "first registration")
    register(ns, 0, topics={"T1": TC("T1", 8, 8), "T2": TC("T2")}, counter=1, channel=chan)
    check_all(ns, "same data version (topics not read)")
    register(ns, 0, topics={"T1": TC("T1", 8, 8), "T2": TC("T2")}, counter=2, channel=chan)
    check_all(ns, "new data version")
    register(ns, 1, 1, topics={"T3": TC("T3")}, counter=1)
    check_all(ns, "slave")
    register(ns, 2, topics={"T1": TC("T1", 2, 2, 4), "T3": TC("T3")}, counter=1, cluster="C2", filters=["f:1"])
    check_all(ns, "second broker, filter servers")
    register(ns, 2, topics={"T1": TC("T1", 2, 2, 4), "T3": TC("T3")}, counter=1, cluster="C2", filters=[])
    check_all(ns, "filter servers removed")
    ns.routes.wipe_write_perm_of_broker("b1")
    check_all(ns, "wipe write perm")
    ns.routes.add_write_perm_of_broker("b1")
    check_all(ns, "add write perm")
    ns.kv.put(NAMESPACE_ORDER_TOPIC_CONFIG, "T1", "b1:4;b2:2")
    check_all(ns, "order conf (disabled)")
    ns.update_config({"orderMessageEnable": "true"})
    check_all(ns, "orderMessageEnable")
    ns.kv.put(NAMESPACE_ORDER_TOPIC_CONFIG, "T1", "b1:8")
    check_all(ns, "order conf changed")
    ns.kv.delete(NAMESPACE_ORDER_TOPIC_CONFIG, "T1")
    check_all(ns, "order conf deleted")
    ns.config.cluster_test = True
    check_all(ns, "clusterTest")
    ns.config.cluster_test = False
    ns.update_config({"orderMessageEnable": "false"})
    check_all(ns, "config back")
    ns.routes.delete_topic("T3", "C2")
    check_all(ns, "delete topic in one cluster")
    ns.routes.delete_topic("T2")
    check_all(ns, "delete topic")
    ns.routes.unregister_broker("C1", BROKERS[1][1], "b1", 1)
    check_all(ns, "unregister slave")
    ns.routes.on_channel_destroy("x:1", chan)
    check_all(ns, "connection of b1's master closed")
    ns.routes.clock.now += 200_000  # type: ignore[attr-defined]
    ns.routes.scan_not_active_broker()
    check_all(ns, "every broker expired")
    assert ns.routes.pickup_topic_route_data("T1") is None


@pytest.mark.parametrize("seed", range(6))
def test_random_changes(ns: NameServer, seed: int) -> None:
    rnd = random.Random(seed)
    channels = [object(), object(), None]
    counters = [1] * len(BROKERS)

    def topic_table() -> dict[str, TC]:
        names = rnd.sample(TOPICS[:4], rnd.randint(0, 4))
        return {n: TC(n, rnd.choice([1, 4, 8]), rnd.choice([1, 4, 8]), rnd.choice([2, 4, 6])) for n in names}

    for step in range(40):
        op = rnd.randrange(11)
        i = rnd.randrange(len(BROKERS))
        name, addr = BROKERS[i]
        if op <= 2:  # registration, sometimes with a new data version
            if rnd.random() < 0.6:
                counters[i] += 1
            ns.routes.clock.now += rnd.randint(0, 60_000)  # type: ignore[attr-defined]
            filters = rnd.choice([None, [], [f"f:{i}"]])
            register(
                ns, i, rnd.choice([0, 0, 1]), topics=topic_table(), counter=counters[i],
                cluster=rnd.choice(CLUSTERS), filters=filters, channel=rnd.choice(channels),
            )  # fmt: skip
        elif op == 3:
            ns.routes.unregister_broker(rnd.choice(CLUSTERS), addr, name, rnd.choice([0, 1]))
        elif op == 4:
            ns.routes.delete_topic(rnd.choice(TOPICS), rnd.choice([None, *CLUSTERS]))
        elif op == 5:
            if rnd.random() < 0.5:
                ns.routes.wipe_write_perm_of_broker(name)
            else:
                ns.routes.add_write_perm_of_broker(name)
        elif op == 6:
            ns.routes.clock.now += rnd.randint(0, 150_000)  # type: ignore[attr-defined]
            ns.routes.scan_not_active_broker()
        elif op == 7:
            ns.routes.on_channel_destroy(rnd.choice([addr, None]), rnd.choice(channels))
        elif op == 8:
            topic = rnd.choice(TOPICS)
            if rnd.random() < 0.7:
                ns.kv.put(NAMESPACE_ORDER_TOPIC_CONFIG, topic, f"{name}:{rnd.randint(1, 8)}")
            else:
                ns.kv.delete(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
        elif op == 9:
            ns.update_config({"orderMessageEnable": rnd.choice(["true", "false"])})
        else:
            ns.config.cluster_test = rnd.random() < 0.3
        check_all(ns, f"seed {seed} step {step} op {op}")


def test_shortcut_memo_is_used_and_declines_the_unusual(ns: NameServer) -> None:
    register(ns, 0, topics={"T1": TC("T1")}, counter=1)
    sc = ns.route_shortcut
    before = sc.hits
    for opaque in OPAQUES:
        shortcut(ns, "T1", MQVersion.V4_9_8, None, opaque, SerializeType.JSON)
        shortcut(ns, "T1", MQVersion.V4_9_8, None, opaque, SerializeType.ROCKETMQ)
    assert sc.hits == before + 2 * (len(OPAQUES) - 1)
    # oneway, other codes, responses, bad frames: left to the dispatcher
    oneway = request("T1", MQVersion.V4_9_8, None)
    oneway.flag |= 2
    assert sc.answer(None, oneway.encode()) is None
    other = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, None, opaque=3)
    assert sc.answer(None, other.encode()) is None
    assert sc.answer(None, other.response(ResponseCode.SUCCESS).encode()) is None
    assert sc.answer(None, b"\x00\x00\x00\x04\x00\x00\x00\x09") is None
    # the opaque key twice (an extFields entry named opaque): decoded the ordinary way
    twice = request("T1", MQVersion.V4_9_8, None, opaque=9)
    twice.ext_fields = {**(twice.ext_fields or {}), "opaque": "1"}
    frame = twice.encode()
    assert frame.count(b'"opaque":') == 2
    assert sc.answer(None, frame) is None
    # a JSON opaque written unlike str(int) is left alone
    odd = request("T1", MQVersion.V4_9_8, None, opaque=9).encode().replace(b'"opaque":9', b'"opaque":09')
    odd = odd[:4] + (int.from_bytes(odd[4:8], "big") + 1).to_bytes(4, "big") + odd[8:]
    odd = (len(odd) - 4).to_bytes(4, "big") + odd[4:]
    assert sc.answer(None, odd) is None
    # a hook on the dispatcher (an RPC hook may refuse requests): no shortcut at all
    ns.dispatcher.add_before_hook(lambda ctx, req: None)
    assert sc.answer(None, request("T1", MQVersion.V4_9_8, None).encode()) is None


def test_remoting_fast_path_keeps_frame_order() -> None:
    """CommandReader hands out the frames the fast path takes undecoded, in place; encode_batch writes the
    fast path's answers as they are."""
    from rocketpy.namesrv.fastpath import RouteShortcut
    from rocketpy.remoting.connection import CommandReader, LaneFrame, encode_batch

    a = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="A"), opaque=1)
    b = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO, None, opaque=2)
    reader = CommandReader(takes=RouteShortcut.takes)
    got = reader.feed(a.encode() + b.encode() + a.encode())
    assert type(got[0]) is LaneFrame and got[0] == a.encode() and got[2] == a.encode()
    assert isinstance(got[1], RemotingCommand) and got[1].opaque == 2
    resp = b.response(ResponseCode.SUCCESS)
    assert encode_batch([b"ANSWER", resp, b"X"]) == b"ANSWER" + resp.encode() + b"X"


def test_answers_made_stale_are_dropped_without_another_lookup(ns: NameServer) -> None:
    # memory finding: after a run that deleted its topics, the NameServer kept thousands of answers
    # for them until the next route lookup, which may never come
    register(ns, 0, topics={t: TC(t) for t in ("T1", "T2")}, counter=1)
    for topic in ("T1", "T2", "Unknown"):
        answer(ns, topic, MQVersion.V4_9_8, None)
        shortcut(ns, topic, MQVersion.V4_9_8, None, 7, SerializeType.ROCKETMQ)
    assert ns.cached_route_answers == 6
    ns.forget_stale_answers()  # nothing changed: all kept
    assert ns.cached_route_answers == 6
    ns.routes.delete_topic("T2")
    ns.forget_stale_answers()  # the NameServer's periodic scan calls it
    assert ns.cached_route_answers == 0
    assert shortcut(ns, "T1", MQVersion.V4_9_8, None, 8, SerializeType.ROCKETMQ) == fresh(
        ns, "T1", MQVersion.V4_9_8, None, 8, SerializeType.ROCKETMQ
    )


def test_padded_lookups_are_answered_but_not_kept(ns: NameServer) -> None:
    # memory finding: the shortcut's memo is keyed by the whole frame and the route cache by the topic, so
    # lookups padded with a body, a long remark or a long topic were each kept (10 KB apiece here, up to
    # 4,096 frames of 16 MB)
    register(ns, 0, topics={"T1": TC("T1")}, counter=1)
    before = ns.cached_route_answers
    for i in range(20):
        padded = [request("T1", MQVersion.V4_9_8, None, opaque=i), request("T1", MQVersion.V4_9_8, None, opaque=i),
                  request("X" * 10_000 + str(i), MQVersion.V4_9_8, None, opaque=i)]
        padded[0].body = bytes(10_000) + str(i).encode()
        padded[1].remark = "r" * 10_000 + str(i)
        for req in padded:
            for stype in (SerializeType.JSON, SerializeType.ROCKETMQ):
                req.serialize_type = stype
                frame = req.encode()
                assert ns.route_shortcut.answer(None, frame) is None  # the dispatcher answers it
                resp = get_route_info_by_topic(RequestContext(None, "127.0.0.1:1", ns), req)  # type: ignore[arg-type]
                assert resp is not None and resp.code == (
                    ResponseCode.SUCCESS if req.ext_fields and req.ext_fields.get("topic") == "T1"
                    else ResponseCode.TOPIC_NOT_EXIST)
    assert ns.cached_route_answers == before + 1  # T1's answer, once
    # the usual lookups are still kept
    shortcut(ns, "T1", MQVersion.V4_9_8, None, 1, SerializeType.JSON)
    assert ns.route_shortcut.memo_size == 1
