"""One client instance per trio run and client config (MQClientManager), reference-counted."""

from __future__ import annotations

import pytest
import trio
from clusters import consumer_ids, make_topic, producer_ids, real_cluster

from rocketpy.client import ClientConfig, ConsumeStatus, Producer, PushConsumer
from rocketpy.client.errors import MQClientError
from rocketpy.client.instance import ClientInstance
from rocketpy.codecs import RequestCode
from rocketpy.codecs.codes import MixAll
from rocketpy.testing import wait_until


def instance_tasks() -> list[trio.lowlevel.Task]:
    """System tasks hosting shared client instances."""
    root = trio.lowlevel.current_root_task()
    return [t for n in root.child_nurseries for t in n.child_tasks if t.name.startswith("rocketpy client instance")]


async def wait_for(pred, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    await wait_until(pred, timeout=timeout, tick=0.02)


async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
    return ConsumeStatus.CONSUME_SUCCESS


def test_producers_and_consumer_share_one_instance() -> None:
    async def main() -> None:
        async with real_cluster(probe=True) as c:
            broker, probe = c.broker, c.probe
            p1 = Producer("PG1", namesrv=c.namesrv)
            p2 = Producer("PG2", namesrv=c.namesrv)
            consumer = PushConsumer("CG1", listener, namesrv=c.namesrv)
            consumer.subscribe("TopicShared")
            await make_topic(c, "TopicShared", 4)
            async with p1, p2:
                async with consumer:
                    assert p1.client is p2.client is consumer.client
                    inst = p1.client
                    assert len(instance_tasks()) == 1
                    await inst.send_heartbeat_to_all_brokers()
                    cid = inst.client_id
                    # one heartbeat names both producer groups and the consumer group
                    beats = probe.of(RequestCode.HEART_BEAT)
                    assert beats
                    from rocketpy.codecs.bodies import HeartbeatData

                    last = HeartbeatData.decode(beats[-1].body or b"{}")
                    assert last.client_id == cid
                    assert {"PG1", "PG2"} <= {p.group_name for p in last.producer_data_set}
                    assert [d.group_name for d in last.consumer_data_set] == ["CG1"]
                    # one connection per broker address
                    assert set(inst.remoting._pool) == {c.namesrv, c.broker_addr}  # type: ignore[union-attr]
                    conns = {ch for g in ("PG1", "PG2") for ch in broker.producers.groups[g]}
                    conns |= set(broker.consumers.groups["CG1"].channels)
                    assert len(conns) == 1
                    assert cid in producer_ids(broker, "PG1") and cid in producer_ids(broker, "PG2")
                    # leaving one producer unregisters only its group
                    n = len(probe.of(RequestCode.UNREGISTER_CLIENT))
                    await p1.shutdown()
                    unreg = probe.of(RequestCode.UNREGISTER_CLIENT)[n:]
                    assert [(r.ext_fields or {}).get("producerGroup") for r in unreg] == ["PG1"]
                    assert all(not (r.ext_fields or {}).get("consumerGroup") for r in unreg)
                    assert cid not in producer_ids(broker, "PG1") and cid in producer_ids(broker, "PG2")
                    assert cid in consumer_ids(broker, "CG1")
                    assert inst.running and "PG1" not in inst.producers
                    # the consumer leaves: only its group goes
                    await consumer.shutdown()
                    assert cid not in consumer_ids(broker, "CG1") and cid in producer_ids(broker, "PG2")
                    assert inst.running and len(instance_tasks()) == 1
                # consumer left, p2 still holds the instance
                assert inst.running
            # everyone left: the instance and its system task are gone
            assert not inst.running
            assert instance_tasks() == []
            # the last unregisters are oneway: give the broker's side a moment to read them (bounded)
            inner = MixAll.CLIENT_INNER_PRODUCER_GROUP
            await wait_until(lambda: cid not in producer_ids(broker, "PG2") | producer_ids(broker, inner))

    trio.run(main)


def test_different_instance_name_or_group_clash_gives_another_instance() -> None:
    async def main() -> None:
        async with real_cluster() as c:
            a = Producer("PGA", namesrv=c.namesrv)
            b = Producer("PGB", config=ClientConfig(namesrv_addr=c.namesrv, instance_name="other"))
            same_group = Producer("PGA", namesrv=c.namesrv)  # default name: a group never shares an instance
            async with a, b, same_group:
                assert a.client is not b.client and a.client is not same_group.client
                assert a.client.client_id != b.client.client_id != same_group.client.client_id
                assert b.client.client_id.endswith("@other")
                assert len(instance_tasks()) == 3
                assert a.client.remoting is not b.client.remoting
                # an explicit name is the client id: the same group twice on it is refused, as in Java
                with pytest.raises(MQClientError):
                    async with Producer("PGB", config=ClientConfig(namesrv_addr=c.namesrv, instance_name="other")):
                        pass
                assert len(instance_tasks()) == 3 and b.client.running
                # a different name-server list is another instance
                other_ns = Producer("PGA", namesrv=f"{c.namesrv};127.0.0.1:1")
                async with other_ns:
                    assert other_ns.client is not a.client
            assert instance_tasks() == []

    trio.run(main)


def test_explicit_client_is_not_shared_and_cancellation_stops_all() -> None:
    async def main() -> None:
        async with real_cluster() as c:
            async with ClientInstance(ClientConfig(namesrv_addr=c.namesrv)) as mine:
                async with Producer("PGX", client=mine) as p, Producer("PGY", namesrv=c.namesrv) as q:
                    assert p.client is mine and q.client is not mine
                    assert mine.hosted is None and instance_tasks() != []
            assert instance_tasks() == []
            # cancelled while clients are open: the shared instance still stops
            with trio.move_on_after(0.5):
                async with Producer("PGZ", namesrv=c.namesrv) as z:
                    await trio.sleep_forever()
            assert not z.client.running and instance_tasks() == []

    trio.run(main)


def test_instance_outlives_its_first_opener() -> None:
    """The first opener's scope may end while others still use the instance."""

    async def main() -> None:
        async with real_cluster() as c:
            first = Producer("PG1", namesrv=c.namesrv)
            second = Producer("PG2", namesrv=c.namesrv)
            opened = trio.Event()
            leave = trio.Event()

            async def first_user() -> None:
                async with first:
                    opened.set()
                    await leave.wait()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(first_user)
                await opened.wait()
                async with second:
                    assert second.client is first.client
                    leave.set()
                    await wait_for(lambda: not first.started)
                    assert second.client.running and second.client.nursery is not None
                    await second.client.update_topic_route(MixAll.AUTO_CREATE_TOPIC_KEY_TOPIC)
            assert instance_tasks() == []

    trio.run(main)
