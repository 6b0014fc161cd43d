"""Issue 6: OUR client (``rocketpy.client``) and the third-party clients through ``rocketpy serve``.

* a C++ client or ali-ons produces, our push consumer receives;
* our producer sends (sync, async, oneway, batch, a compressed body, a delay level), the
  third-party push consumer receives;
* ali-ons and our push consumer share one clustering group: they split the queues and
  together receive each message exactly once.

Our client runs in the test's trio loop; the third-party clients run as drivers (see
``harness.py``). Topics are created first through UPDATE_AND_CREATE_TOPIC (ali-ons cannot
auto-create them); every consumer group is new and starts at offset 0.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import trio

from rocketpy.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumeStatus,
    MessageExt,
    Producer,
    PushConsumer,
    SendResult,
    SendStatus,
    make_message,
)
from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode

from .conftest import require_client
from .harness import KNOWN_SHUTDOWN_CRASHES, ClientEnv, DriverResult, run_driver, sample_messages, start_driver
from .servers import BrokerProcess, create_topic, invoke, wait_for_route

QUEUES = 4
PROPERTY_NAMES = ["compat_index", "compat_run"]
SEND_OK = {"cpp1": "OK", "cpp2": "OK", "node": "SEND_OK"}
#: the test broker's messageDelayLevel starts "1s" (servers.TEST_BROKER_CONF)
DELAY_LEVEL = 1


async def _create_topic(server: BrokerProcess, topic: str) -> None:
    response = await create_topic(server.broker_addr, topic, QUEUES)
    assert response.code == ResponseCode.SUCCESS, (response.code, response.remark, server.log_tail())
    await wait_for_route(server.namesrv_addr, topic)


def _norm_keys(keys: Any) -> str | None:
    if isinstance(keys, list):  # ali-ons gives KEYS split on spaces
        return " ".join(keys)
    return keys


def _client_config(server: BrokerProcess) -> ClientConfig:
    # rebalance every 2 s like the ali-ons driver, persist offsets every second
    return ClientConfig(namesrv_addr=server.namesrv_addr, rebalance_interval=2.0, persist_consumer_offset_interval=1.0)


class Received:
    """What our push consumer's listener was given, in order."""

    def __init__(self) -> None:
        self.messages: list[MessageExt] = []
        self._changed = trio.Event()

    async def listener(self, msgs: list[MessageExt], context: Any) -> ConsumeStatus:
        self.messages.extend(msgs)
        self._changed.set()
        self._changed = trio.Event()
        return ConsumeStatus.CONSUME_SUCCESS

    async def wait_for(self, n: int, timeout: float) -> None:
        """Until ``n`` messages arrived or ``timeout`` s passed (the assertions tell which)."""
        with trio.move_on_after(timeout):
            while len(self.messages) < n:
                await self._changed.wait()


@contextlib.asynccontextmanager
async def _our_consumer(server: BrokerProcess, topic: str, group: str) -> AsyncIterator[tuple[Received, PushConsumer]]:
    """Our clustering push consumer of a new group, from the first offset; stopped on exit."""
    got = Received()
    consumer = PushConsumer(group, got.listener, config=_client_config(server),
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)  # fmt: skip
    consumer.subscribe(topic, "*")
    async with consumer:
        yield got, consumer


def _check_produced(client: ClientEnv, out: DriverResult, n: int) -> None:
    assert out.result is not None, out.describe()
    assert not out.result.get("error") and not out.result.get("errors"), out.describe()
    assert [r.get("status") for r in out.result["results"]] == [SEND_OK[client.name]] * n, out.describe()
    if (client.name, "producer") not in KNOWN_SHUTDOWN_CRASHES:
        assert out.shutdown_ok, out.describe()


def _check_ours_received(got: list[MessageExt], topic: str, sent: list[dict[str, Any]], produced: DriverResult) -> None:
    """Every message of ``sent`` reached our listener once, intact, from where its send result said."""
    by_key: dict[str | None, list[MessageExt]] = {}
    for m in got:
        by_key.setdefault(m.keys_string, []).append(m)
    missing = [s["keys"] for s in sent if s["keys"] not in by_key]
    assert not missing, f"our consumer missed {missing}; got {sorted(by_key, key=str)}"
    assert sorted(map(str, by_key)) == sorted(s["keys"] for s in sent), f"strangers: {sorted(by_key, key=str)}"
    twice = {k: len(v) for k, v in by_key.items() if len(v) > 1}
    assert not twice, f"delivered more than once: {twice}"
    assert produced.result is not None
    for spec, send in zip(sent, produced.result["results"], strict=True):
        m = by_key[spec["keys"]][0]
        assert m.topic == topic, m
        # the listener sees the payload, inflated when the producer compressed it (Java's getBody())
        assert m.body.decode("utf-8") == spec["body"], (spec["keys"], m.sys_flag)
        assert not m.is_compressed, (spec["keys"], m.sys_flag)
        assert m.tags == spec["tags"], m.properties
        assert m.keys == [spec["keys"]], m.properties
        for key, value in spec["properties"].items():
            assert m.properties.get(key) == value, m.properties
        assert m.reconsume_times == 0, m
        # MessageClientExt.getMsgId: the UNIQ_KEY the C++ clients set, else (ali-ons) the offset msg id
        assert m.client_msg_id == send["msg_id"], (send, m.properties)
        assert m.queue_offset == int(send["offset"]), (send, m.queue_id, m.queue_offset)
        if "queue_id" in send:
            assert m.queue_id == int(send["queue_id"]), (send, m.queue_id)


async def test_third_party_producer_to_our_consumer(
    client: ClientEnv, rocketpy_server: BrokerProcess, client_home: Path, run_id: str
) -> None:
    """(a) The client's producer sends N messages (a >4 KiB compressed body, non-ASCII text,
    tags, keys, user properties); then our push consumer in a NEW clustering group receives
    all N from offset 0, intact, each exactly once."""
    topic = f"CompatPyIn_{client.name}_{run_id}"
    await _create_topic(rocketpy_server, topic)
    messages = sample_messages("TagI", 6, run_id=run_id, big=True)
    produced = await run_driver(
        client, "producer",
        {"namesrv": rocketpy_server.namesrv_addr, "topic": topic, "group": f"PG_{run_id}", "messages": messages},
        client_home / "producer", timeout=40,
    )  # fmt: skip
    _check_produced(client, produced, len(messages))
    with trio.fail_after(40):
        async with _our_consumer(rocketpy_server, topic, f"CG_{run_id}") as (got, consumer):
            await got.wait_for(len(messages), timeout=20)
            await trio.sleep(1.0)  # duplicates would show up now
            assert {mq.queue_id for mq in consumer.pq_table if mq.topic == topic} == set(range(QUEUES))
    _check_ours_received(got.messages, topic, messages, produced)


def _check_third_party_received(
    client: ClientEnv,
    out: DriverResult,
    topic: str,
    sent: list[dict[str, Any]],
    places: dict[str, tuple[int, int]],
) -> dict[str, dict[str, Any]]:
    """Every message of ``sent`` reached the client's listener once, intact; the ones in
    ``places`` (keys -> (queue id, queue offset)) from that place."""
    assert out.result is not None, out.describe()
    assert not out.result.get("error") and not out.result.get("errors"), out.describe()
    got = out.result["messages"]
    by_key: dict[str | None, list[dict[str, Any]]] = {}
    for m in got:
        by_key.setdefault(_norm_keys(m["keys"]), []).append(m)
    missing = [s["keys"] for s in sent if s["keys"] not in by_key]
    assert not missing, f"{client.name} consumer missed {missing}; " + out.describe()
    twice = {k: len(v) for k, v in by_key.items() if len(v) > 1}
    assert not twice, f"delivered more than once: {twice}"
    assert len(got) == len(sent), f"strangers: {sorted(by_key, key=str)}"
    for spec in sent:
        m = by_key[spec["keys"]][0]
        assert m["topic"] == topic, m
        assert m["body"] == spec["body"], (spec["keys"], m["body"][:200])
        assert m["tags"] == spec["tags"], m
        for key, value in spec["properties"].items():
            assert (m["properties"] or {}).get(key) == value, m
        assert int(m["reconsume_times"]) == 0, m
        if spec["keys"] in places:
            assert (int(m["queue_id"]), int(m["queue_offset"])) == places[spec["keys"]], (spec["keys"], m)
    if (client.name, "consumer") not in KNOWN_SHUTDOWN_CRASHES:
        assert out.shutdown_ok, out.describe()
    return {spec["keys"]: by_key[spec["keys"]][0] for spec in sent}


async def _send_every_way(producer: Producer, topic: str, specs: list[dict[str, Any]]) -> dict[str, SendResult]:
    """Each spec sent as its ``mode`` says: sync, async, oneway, batch (all batch specs in one
    SEND_BATCH_MESSAGE) or delay (sync with DELAY_LEVEL). Returns the send results by keys."""

    def build(spec: dict[str, Any]) -> Any:
        return make_message(topic, spec["body"], tags=spec["tags"], keys=spec["keys"],
                            properties=spec["properties"], delay_level=spec.get("delay_level"))  # fmt: skip

    results: dict[str, SendResult] = {}
    for spec in specs:
        mode = spec["mode"]
        if mode in ("sync", "delay"):
            results[spec["keys"]] = await producer.send(build(spec))
        elif mode == "async":
            future = producer.send_async(build(spec))
            results[spec["keys"]] = await future.result()
        elif mode == "oneway":
            await producer.send_oneway(build(spec))
    batch = [s for s in specs if s["mode"] == "batch"]
    if batch:
        sent = await producer.send_batch([build(s) for s in batch])
        assert sent.msg_id is not None and len(sent.msg_id.split(",")) == len(batch), sent
        for i, spec in enumerate(batch):
            # the batch's members sit one after another in one queue from the answered offset
            results[spec["keys"]] = SendResult(sent.send_status, sent.msg_id.split(",")[i], sent.message_queue,
                                               sent.queue_offset + i)  # fmt: skip
    for keys, result in results.items():
        assert result.send_status == SendStatus.SEND_OK, (keys, result)
    return results


async def test_our_producer_to_third_party_consumer(
    client: ClientEnv, rocketpy_server: BrokerProcess, client_home: Path, run_id: str
) -> None:
    """(b) Our producer sends sync, async, oneway, batch and delayed messages (one with a body
    it compresses); then the client's push consumer in a NEW group receives each once, intact."""
    topic = f"CompatPyOut_{client.name}_{run_id}"
    await _create_topic(rocketpy_server, topic)
    specs = sample_messages("TagO", 9, run_id=run_id, big=True)
    modes = ["sync", "async", "oneway", "batch", "batch", "delay", "sync", "sync", "sync"]  # the last one is big
    for spec, mode in zip(specs, modes, strict=True):
        spec["mode"] = mode
    specs[modes.index("delay")]["delay_level"] = DELAY_LEVEL
    with trio.fail_after(20):
        async with Producer(f"PG_{run_id}", config=_client_config(rocketpy_server)) as producer:
            results = await _send_every_way(producer, topic, specs)
    # a delayed message is stored again under its own topic when it is due: another offset
    places = {keys: (r.message_queue.queue_id, r.queue_offset) for keys, r in results.items()
              if keys != specs[modes.index("delay")]["keys"]}  # fmt: skip
    sent = [{k: v for k, v in s.items() if k not in ("mode", "delay_level")} for s in specs]
    consumed = await run_driver(
        client, "consumer",
        {"namesrv": rocketpy_server.namesrv_addr, "topic": topic, "group": f"CG_{run_id}", "expect": len(specs),
         "timeout": 25, "linger": 1, "property_names": [*PROPERTY_NAMES, "UNIQ_KEY"]},
        client_home / "consumer", timeout=45,
    )  # fmt: skip
    by_key = _check_third_party_received(client, consumed, topic, sent, places)
    delayed = by_key[specs[modes.index("delay")]["keys"]]
    waited = int(delayed["store_timestamp"]) - int(delayed["born_timestamp"])
    assert waited >= 900, f"the level {DELAY_LEVEL} message was stored {waited} ms after its birth: {delayed}"
    # the UNIQ_KEY our producer gave each message (SendResult.msgId) is what the consumer sees
    for keys, result in results.items():
        assert by_key[keys]["properties"].get("UNIQ_KEY") == result.msg_id, (keys, result, by_key[keys])


async def _consumer_ids(server: BrokerProcess, group: str) -> list[str]:
    from rocketpy.codecs.bodies import GetConsumerListByGroupResponseBody
    from rocketpy.codecs.headers import GetConsumerListByGroupRequestHeader

    request = RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                                      GetConsumerListByGroupRequestHeader(consumer_group=group))  # fmt: skip
    response = await invoke(server.broker_addr, request)
    if response.code != ResponseCode.SUCCESS or not response.body:
        return []
    return list(GetConsumerListByGroupResponseBody.decode(response.body).consumer_id_list or [])


async def test_clustering_group_shared_by_node_and_ours(
    rocketpy_server: BrokerProcess, client_home: Path, run_id: str
) -> None:
    """(c) ali-ons and our push consumer in ONE clustering group split the topic's queues
    (AllocateMessageQueueAveragely on both sides, same sorted client ids and queues): each
    gets half, and together they receive every message exactly once."""
    node = require_client("node")
    topic = f"CompatPyShare_{run_id}"
    group = f"CG_{run_id}"
    await _create_topic(rocketpy_server, topic)
    n = 8  # round robin over 4 queues: 2 a queue
    specs = sample_messages("TagS", n, run_id=run_id)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            js = start_driver(
                nursery, node, "consumer",
                {"namesrv": rocketpy_server.namesrv_addr, "topic": topic, "group": group, "expect": n // 2,
                 "timeout": 25, "linger": 2, "property_names": PROPERTY_NAMES},
                client_home / "c-node", timeout=45,
            )  # fmt: skip
            with trio.fail_after(20):
                while not await _consumer_ids(rocketpy_server, group):
                    await trio.sleep(0.2)
            async with _our_consumer(rocketpy_server, topic, group) as (got, consumer):
                # the broker tells ali-ons about us (NOTIFY_CONSUMER_IDS_CHANGED) and it rebalances
                # within its 2 s interval; we wait until our half is ours
                with trio.fail_after(15):
                    while (
                        len(await _consumer_ids(rocketpy_server, group)) < 2
                        or len([mq for mq in consumer.pq_table if mq.topic == topic]) != QUEUES // 2
                    ):
                        await trio.sleep(0.2)
                await trio.sleep(3)  # ali-ons has dropped the queues it gave us and pulls its own
                async with Producer(f"PG_{run_id}", config=_client_config(rocketpy_server)) as producer:
                    results = [
                        await producer.send(
                            make_message(topic, s["body"], tags=s["tags"], keys=s["keys"], properties=s["properties"])
                        )
                        for s in specs
                    ]
                ours_queues = {mq.queue_id for mq in consumer.pq_table if mq.topic == topic}
                await got.wait_for(n // 2, timeout=15)
                js_out = await js.wait()
                # ali-ons has left (committing its offsets): we take over its queues from the offsets
                # it committed, and get nothing again
                with trio.fail_after(15):
                    while len([mq for mq in consumer.pq_table if mq.topic == topic]) != QUEUES:
                        await trio.sleep(0.2)
                await trio.sleep(1.5)
    assert js_out.result is not None and not js_out.result.get("error"), js_out.describe()
    assert not js_out.result.get("errors"), js_out.describe()
    js_msgs = js_out.result["messages"]
    ours_keys = [m.keys_string for m in got.messages]
    js_keys = [_norm_keys(m["keys"]) for m in js_msgs]
    assert sorted(map(str, ours_keys + js_keys)) == sorted(s["keys"] for s in specs), (ours_keys, js_keys)
    assert ours_keys and js_keys, f"one consumer got every queue: ours {ours_keys}, ali-ons {js_keys}"
    js_queues = {int(m["queue_id"]) for m in js_msgs}
    assert not ours_queues & js_queues, (ours_queues, js_queues)
    assert {m.queue_id for m in got.messages} <= ours_queues, ours_queues
    place = {s["keys"]: (r.message_queue.queue_id, r.queue_offset) for s, r in zip(specs, results, strict=True)}
    by_key = {m.keys_string: m for m in got.messages}
    for spec in specs:
        if spec["keys"] in by_key:
            m = by_key[spec["keys"]]
            assert m.decompressed_body().decode() == spec["body"] and m.tags == spec["tags"], m
            assert (m.queue_id, m.queue_offset) == place[spec["keys"]], m
    for m in js_msgs:
        spec = next(s for s in specs if s["keys"] == _norm_keys(m["keys"]))
        assert m["body"] == spec["body"] and m["tags"] == spec["tags"], m
        assert (int(m["queue_id"]), int(m["queue_offset"])) == place[spec["keys"]], m
        assert m["properties"].get("compat_run") == run_id, m
