"""Sans-IO parts of the client: fault strategy, routes, process queues, rebalance plans, offset files."""

from __future__ import annotations

from pathlib import Path

import trio
from hypothesis import given
from hypothesis import strategies as st

from rocketpy.client.allocate import AllocateAveragely
from rocketpy.client.fault import FaultStrategy, LatencyFaultTolerance, not_available_duration
from rocketpy.client.namespace import (
    queue_with_namespace,
    queue_without_namespace,
    strip_namespace,
    with_namespace,
    without_namespace,
)
from rocketpy.client.offset_store import LocalFileOffsetStore, ReadOffsetType
from rocketpy.client.process_queue import ProcessQueue
from rocketpy.client.producer import check_message, select_by_hash, wire_properties
from rocketpy.client.rebalance import allocate_for, plan
from rocketpy.client.route import QueueCounter, TopicPublishInfo, publish_info, subscribe_queues
from rocketpy.codecs.bodies import BrokerData, MessageQueue, QueueData, TopicRouteData
from rocketpy.codecs.message import Message, MessageExt


def route() -> TopicRouteData:
    return TopicRouteData(
        queue_datas=[QueueData(broker_name="b", read_queue_nums=2, write_queue_nums=2, perm=6),
                     QueueData(broker_name="a", read_queue_nums=3, write_queue_nums=1, perm=6),
                     QueueData(broker_name="c", read_queue_nums=1, write_queue_nums=1, perm=4)],
        broker_datas=[BrokerData(broker_name=n, broker_addrs={0: f"{n}:1"}) for n in "abc"])


def test_publish_and_subscribe_queues() -> None:
    info = publish_info("T", route())
    # sorted by broker name, writable brokers only
    assert [(q.broker_name, q.queue_id) for q in info.queues] == [("a", 0), ("b", 0), ("b", 1)]
    assert len(subscribe_queues("T", route())) == 6
    ordered = publish_info("T", TopicRouteData(order_topic_conf="b:2;a:1"))
    assert ordered.order_topic and [(q.broker_name, q.queue_id) for q in ordered.queues] == [("b", 0), ("b", 1),
                                                                                              ("a", 0)]


def test_select_avoids_last_broker() -> None:
    info = publish_info("T", route())
    info.counter = QueueCounter(0)
    for _ in range(10):
        assert info.select("b").broker_name == "a"


def test_fault_strategy_quarantine() -> None:
    now = [0]
    fs = FaultStrategy(True, clock=lambda: now[0])
    info = publish_info("T", route())
    fs.update("a", 30000, True)  # isolation: 10 minutes off
    assert all(fs.select(info, None).broker_name == "b" for _ in range(10))
    now[0] += 600_001
    assert {fs.select(info, None).broker_name for _ in range(10)} == {"a", "b"}
    assert not_available_duration(49) == 0 and not_available_duration(550) == 30000
    assert not_available_duration(15000) == 600000


def test_fault_pick_one_at_least_when_all_bad() -> None:
    lft = LatencyFaultTolerance(clock=lambda: 0)
    assert lft.pick_one_at_least() is None
    lft.update("a", 100, 1000)
    assert lft.pick_one_at_least() == "a"
    fs = FaultStrategy(True, clock=lambda: 0)
    info = publish_info("T", route())
    fs.update("a", 5000, True)
    fs.update("b", 5000, True)
    assert fs.select(info, None).broker_name in {"a", "b"}


def test_select_by_hash_matches_java() -> None:
    mqs = [MessageQueue(topic="T", broker_name="b", queue_id=i) for i in range(4)]
    # values from jshell: Math.abs("order-7".hashCode() % 4) == 0 (hash -1207111304),
    # Math.abs("zzzzzzzz".hashCode() % 4) == 0, Math.abs(Integer.valueOf(-7).hashCode() % 4) == 3
    assert select_by_hash(mqs, Message(), "order-7").queue_id == 0
    assert select_by_hash(mqs, Message(), "zzzzzzzz").queue_id == 0
    assert select_by_hash(mqs, Message(), -7).queue_id == 3


def test_wire_properties_order_and_validation() -> None:
    props = {"TAGS": "TagA", "KEYS": "k", "WAIT": "true", "scenario": "x", "index": "0", "UNIQ_KEY": "U"}
    assert wire_properties(props).split("\x02")[0] == "scenario\x01x"
    for bad, text in ((Message(topic="", body=b"x"), "blank"), (Message(topic="T", body=b""), "zero"),
                      (Message(topic="a b", body=b"x"), "illegal"), (Message(topic="T", body=b"x" * 5), "over"),
                      # TopicValidator takes every character in turn: a regex's $ would let a last newline by
                      (Message(topic="T\n", body=b"x"), "illegal")):
        try:
            check_message(bad, max_size=4)
        except Exception as exc:
            assert text in str(exc)
        else:
            raise AssertionError(text)


def msg(off: int, body: bytes = b"x") -> MessageExt:
    return MessageExt(topic="T", body=body, queue_offset=off)


def test_process_queue_offsets() -> None:
    pq = ProcessQueue()
    assert pq.put_messages([msg(5), msg(6), msg(7)]) is True
    assert pq.msg_count == 3 and pq.msg_size == 3 and pq.max_span() == 2
    assert pq.remove_messages([msg(6)]) == 5  # 5 still pending: commit stops there
    assert pq.remove_messages([msg(5)]) == 7
    assert pq.remove_messages([msg(7)]) == 8 and pq.empty
    assert pq.remove_messages([msg(9)]) == -1


def test_process_queue_orderly() -> None:
    pq = ProcessQueue()
    pq.put_messages([msg(i) for i in range(5)])
    taken = pq.take_messages(2)
    assert [m.queue_offset for m in taken] == [0, 1]
    pq.make_message_to_consume_again(taken)
    assert [m.queue_offset for m in pq.take_messages(3)] == [0, 1, 2]
    assert pq.commit() == 3 and pq.msg_count == 2
    pq.take_messages(5)
    assert pq.take_messages(1) == [] and pq.consuming is False


def test_rebalance_plan() -> None:
    mqs = [MessageQueue(topic="T", broker_name="b", queue_id=i) for i in range(4)]
    mine = allocate_for(AllocateAveragely(), "CLUSTERING", "G", "c2", reversed(mqs), ["c2", "c1"])
    assert [q.queue_id for q in mine] == [2, 3]
    p = plan("T", [mqs[0], mqs[2]], mine)
    assert p.to_add == [mqs[3]] and p.to_remove == [mqs[0]] and p.changed
    assert allocate_for(AllocateAveragely(), "BROADCASTING", "G", "c2", mqs, []) == mqs


async def test_local_offset_store_file(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("10.0.0.1@x", "G", tmp_path)
    mq = MessageQueue(topic="T", broker_name="b", queue_id=1)
    store.update_offset(mq, 7)
    store.update_offset(mq, 5, increase_only=True)
    await store.persist_all([mq])
    store.update_offset(mq, 9)
    await store.persist_all([mq])
    path = tmp_path / "10.0.0.1@x" / "G" / "offsets.json"
    assert path.exists() and Path(str(path) + ".bak").exists()
    again = LocalFileOffsetStore("10.0.0.1@x", "G", tmp_path)
    await again.load()
    assert await again.read_offset(mq, ReadOffsetType.READ_FROM_MEMORY) == 9
    path.write_text("")  # a torn write: the .bak copy is used
    third = LocalFileOffsetStore("10.0.0.1@x", "G", tmp_path)
    assert await third.read_offset(mq, ReadOffsetType.READ_FROM_STORE) == 7
    await trio.sleep(0)


def test_topic_publish_info_empty() -> None:
    assert not TopicPublishInfo().ok


def test_pulled_bodies_arrive_inflated_like_java_getbody() -> None:
    from rocketpy.client.api import decode_pulled
    from rocketpy.codecs.codes import MessageSysFlag
    from rocketpy.codecs.message import MessageExt, compress_body, encode_message

    payload = ("line of a big body\n" * 400).encode()
    stored = MessageExt(topic="T", body=compress_body(payload), sys_flag=int(MessageSysFlag.COMPRESSED_FLAG),
                        properties={"TAGS": "A"}, born_host="127.0.0.1:1", store_host="127.0.0.1:10911")
    plain = MessageExt(topic="T", body=b"small", properties={"TAGS": "B"},
                       born_host="127.0.0.1:1", store_host="127.0.0.1:10911")
    big, small = decode_pulled(encode_message(stored) + encode_message(plain), None)
    assert big.body == payload and not big.sys_flag & MessageSysFlag.COMPRESSED_FLAG
    assert big.decompressed_body() == payload
    assert small.body == b"small"
    assert [m.tags for m in decode_pulled(encode_message(stored) + encode_message(plain), ["B"])] == ["B"]


def test_make_message_bodies_and_what_it_refuses() -> None:
    import pytest

    from rocketpy.client import Admin, make_message

    assert make_message("T", "héllo").body == "héllo".encode()
    assert make_message("T", b"\x00\xff").body == b"\x00\xff"
    assert make_message("T", bytearray(b"ab")).body == b"ab" and make_message("T", memoryview(b"cd")).body == b"cd"
    with pytest.raises(TypeError, match="body must be bytes or str .* not dict"):
        make_message("T", {"a": 1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="topic must be a non-empty str"):
        make_message("", b"x")
    assert Admin.__module__ == "rocketpy.client.admin"


@given(st.lists(st.integers(0, 60), max_size=40), st.data())
def test_process_queue_remove_keeps_count_size_and_commit_offset(offsets: list[int], data: st.DataObject) -> None:
    pq = ProcessQueue()
    half = len(offsets) // 2  # two pulls, the second one's offsets in any order, some seen before
    pq.put_messages([msg(o, b"x" * (o % 7)) for o in offsets[:half]])
    pq.put_messages([msg(o, b"x" * (o % 7)) for o in offsets[half:]])
    held = {o: o % 7 for o in offsets}
    assert (pq.msg_count, pq.msg_size) == (len(held), sum(held.values()))
    while held:
        gone = data.draw(st.lists(st.sampled_from(sorted(held)), min_size=1, max_size=5))
        gone += [99] * data.draw(st.integers(0, 1))  # never held: ignored
        answer = pq.remove_messages([msg(o) for o in gone])
        for o in gone:
            held.pop(o, None)
        # the offset safe to commit: the smallest one still held, else one past the largest ever held
        assert answer == (min(held) if held else max(offsets) + 1)
        assert (pq.msg_count, pq.msg_size) == (len(held), sum(held.values()))
        assert pq.first_offset() == (min(held) if held else None)
        assert pq.max_span() == (max(held) - min(held) if held else 0)


def test_namespace_names_as_java_namespace_util() -> None:
    # NamespaceUtilTest's cases (Java 4.9.8)
    ns, other = "MQ_INST_XXX", "MQ_INST_XXX1"
    assert with_namespace(ns, "TOPIC_XXX") == "MQ_INST_XXX%TOPIC_XXX"
    assert with_namespace(ns, "MQ_INST_XXX%TOPIC_XXX") == "MQ_INST_XXX%TOPIC_XXX"  # already in it
    assert with_namespace(ns, "%RETRY%GID_XXX") == "%RETRY%MQ_INST_XXX%GID_XXX"
    assert with_namespace(ns, "%RETRY%MQ_INST_XXX%GID_XXX") == "%RETRY%MQ_INST_XXX%GID_XXX"
    assert with_namespace(ns, "%DLQ%GID_XXX") == "%DLQ%MQ_INST_XXX%GID_XXX"
    for system in ("rmq_sys_topic", "TBW102", "RMQ_SYS_TRACE_TOPIC", "CID_RMQ_SYS_TRANS", "SCHEDULE_TOPIC_XXXX"):
        assert with_namespace(ns, system) == system
    assert with_namespace(None, "TOPIC_XXX") == with_namespace("", "TOPIC_XXX") == "TOPIC_XXX"
    assert without_namespace("MQ_INST_XXX%TOPIC_XXX", ns) == strip_namespace("MQ_INST_XXX%TOPIC_XXX") == "TOPIC_XXX"
    assert without_namespace("%RETRY%MQ_INST_XXX%GID_XXX", ns) == "%RETRY%GID_XXX"
    assert strip_namespace("%RETRY%MQ_INST_XXX%GID_XXX") == "%RETRY%GID_XXX"
    assert without_namespace("%RETRY%MQ_INST_XXX%GID_XXX", other) == "%RETRY%MQ_INST_XXX%GID_XXX"  # not its own
    assert without_namespace("TOPIC_XXX", ns) == strip_namespace("TOPIC_XXX") == "TOPIC_XXX"
    mq = MessageQueue(topic="T", broker_name="b", queue_id=3)
    wrapped = queue_with_namespace(ns, mq)
    assert (wrapped.topic, wrapped.broker_name, wrapped.queue_id) == ("MQ_INST_XXX%T", "b", 3) and mq.topic == "T"
    assert queue_without_namespace(ns, wrapped) == mq and queue_with_namespace(None, mq) is mq
