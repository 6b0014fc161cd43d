"""resetOffsetByTime -c (mqadmin's --cplus): the consumers are told their new offsets in the C++ client's layout."""

from __future__ import annotations

import pytest
import trio
from clusters import real_cluster

from rocketpy.client.admin import Admin
from rocketpy.codecs.bodies import MessageQueue, ResetOffsetBody, ResetOffsetBodyForC, TopicConfig
from rocketpy.codecs.codes import RequestCode
from rocketpy.remoting.dispatch import Dispatcher
from rocketpy.testing import broker_client


@pytest.mark.parametrize("cpp", [False, True])
async def test_reset_offset_tells_the_clients_in_their_layout(cpp: bool) -> None:
    pushed: list[bytes] = []
    got = trio.Event()

    async def reset(ctx: object, request: object) -> None:
        pushed.append(request.body or b"")  # type: ignore[attr-defined]
        got.set()

    d = Dispatcher({RequestCode.RESET_CONSUMER_CLIENT_OFFSET: reset})
    with trio.fail_after(30):
        async with real_cluster() as c, Admin(c.namesrv) as admin:
            addr = c.broker_addr
            await admin.create_topic(addr, TopicConfig(topic_name="CppTopic", read_queue_nums=1, write_queue_nums=1,
                                                       perm=6))
            async with broker_client(addr, dispatcher=d, client_id="127.0.0.1@cpp") as bc:
                for i in range(3):
                    await bc.send("CppTopic", b"m%d" % i)
                await bc.heartbeat(consumer_groups={"CppGroup": ["CppTopic"]})
                await bc.update_offset("CppGroup", "CppTopic", 0, 1)
                table = await admin.reset_offset_by_time("CppGroup", "CppTopic", -1, True, cpp=cpp)
                mq = MessageQueue(topic="CppTopic", broker_name="broker-a", queue_id=0)
                assert table == {mq: 3}
                await got.wait()
    if cpp:
        body = ResetOffsetBodyForC.decode(pushed[0])
        assert [(q.topic, q.broker_name, q.queue_id, q.offset) for q in body.offset_table or []] == [
            ("CppTopic", "broker-a", 0, 3)]
    else:
        assert ResetOffsetBody.decode(pushed[0]).offset_table == {mq: 3}
