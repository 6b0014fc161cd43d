"""The Python client as a Java client's user expects it: Java's names in snake_case, one type for keys, and
the language it reports to the broker."""

from __future__ import annotations

import trio
from clusters import make_topic, real_cluster

from rocketpy.client import Producer, PushConsumer, make_message
from rocketpy.client.admin import Admin
from rocketpy.codecs import RequestCode
from rocketpy.codecs.codes import LanguageCode
from rocketpy.testing import wait_until


async def test_register_message_listener_keys_and_language() -> None:
    got: list = []

    async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
        got.extend(msgs)

    async with real_cluster(probe=True) as c:
        await make_topic(c, "TNames", 1)
        consumer = PushConsumer("CGNames", namesrv=c.namesrv)
        consumer.register_message_listener(listener)  # DefaultMQPushConsumer.registerMessageListener
        consumer.subscribe("TNames", "*")
        async with Producer("PGNames", namesrv=c.namesrv) as producer, consumer:
            await producer.send(make_message("TNames", b"one", keys="k0"))
            await producer.send(make_message("TNames", b"two", keys=["k1", "k2"]))
            with trio.fail_after(20):
                await wait_until(lambda: len(got) == 2, timeout=20, tick=0.05)
            # keys in as a string (Java's setKeys(String)) or a list: out as a list either way
            assert sorted(m.keys for m in got) == [["k0"], ["k1", "k2"]]
            # the heartbeat says PYTHON (LanguageCode 3), as the broker lists the client
            beats = c.probe.of(RequestCode.HEART_BEAT)
            assert beats and all(b.language == LanguageCode.PYTHON for b in beats)
            async with Admin(c.namesrv) as admin:
                conn = await admin.consumer_connection("CGNames")
            assert [x.language for x in conn.connection_set] == [LanguageCode.PYTHON]


def test_java_names_are_the_same_methods() -> None:
    from rocketpy.client import LitePullConsumer

    assert PushConsumer.register_message_listener is PushConsumer.register_listener
    assert LitePullConsumer.commit_sync is LitePullConsumer.commit
    assert LitePullConsumer.fetch_message_queues is LitePullConsumer.fetch_queues
