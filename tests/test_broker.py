"""Broker over real sockets: send, pull, long polling, offsets, heartbeats, locks, admin."""

from __future__ import annotations

import trio

from rocketpy.codecs import RemotingCommand, ResponseCode, SerializeType
from rocketpy.codecs.bodies import (
    ConsumeStats,
    GetConsumerListByGroupResponseBody,
    KVTable,
    MessageQueue,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper,
    TopicStatsTable,
)
from rocketpy.codecs.codes import RequestCode
from rocketpy.codecs.headers import (
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    GetMaxOffsetRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryMessageRequestHeader,
    SearchOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketpy.codecs.message import decode_messages, decode_offset_msg_id
from rocketpy.remoting import Dispatcher
from rocketpy.testing import broker_client, running_broker, wait_until


async def test_send_pull_single_json_and_binary(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        for st in (SerializeType.JSON, SerializeType.ROCKETMQ):
            async with broker_client(broker.address, serialize_type=st) as c:
                r = await c.send("TSingle", b"hello " + st.name.encode(), tags="A", keys="k1 k2", queue_id=1)
                assert r.code == ResponseCode.SUCCESS and r.remark is None
                if st == SerializeType.JSON:
                    assert list(r.ext_fields) == ["queueId", "TRACE_ON", "MSG_REGION", "msgId", "queueOffset"]
                else:
                    assert list(r.ext_fields)[:3] == ["msgId", "queueId", "queueOffset"]
        async with broker_client(broker.address) as c:
            resp, msgs = await c.pull("G", "TSingle", 1, 0)
            assert resp.code == ResponseCode.SUCCESS and resp.remark == "FOUND"
            assert [m.body for m in msgs] == [b"hello JSON", b"hello ROCKETMQ"]
            assert msgs[0].tags == "A" and msgs[0].keys == ["k1", "k2"]
            assert msgs[0].properties["CLUSTER"] == "DefaultCluster"
            assert "WAIT" not in msgs[0].properties  # Java does not store WAIT=true
            assert resp.ext_fields["nextBeginOffset"] == "2"
            # past the end: not found (no suspend flag)
            resp, msgs = await c.pull("G", "TSingle", 1, 2)
            assert resp.code == ResponseCode.PULL_NOT_FOUND and msgs == []
            resp, _ = await c.pull("G", "TSingle", 1, 9)
            assert resp.code == ResponseCode.PULL_OFFSET_MOVED
            _, events = await c.pull("G", "OFFSET_MOVED_EVENT", 0, 0)
            assert events[0].tags == "G" and b'"offsetRequest":9' in events[0].body
            resp, _ = await c.pull("G", "TSingle", 99, 0)
            assert resp.code == ResponseCode.SYSTEM_ERROR and "queueId[99] is illegal" in resp.remark
            resp, _ = await c.pull("G", "NoSuchTopic", 0, 0)
            assert resp.code == ResponseCode.TOPIC_NOT_EXIST


async def test_batch_and_oneway(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            r = await c.send_batch("TBatch", [b"b%d" % i for i in range(10)], queue_id=2)
            assert r.code == ResponseCode.SUCCESS
            assert len(r.ext_fields["msgId"].split(",")) == 10 and r.ext_fields["queueOffset"] == "0"
            for i in range(5):
                await c.send("TBatch", b"o%d" % i, queue_id=2, oneway=True)
            await wait_until(lambda: broker.store.get_max_offset_in_queue("TBatch", 2) >= 15, timeout=5)
            resp, msgs = await c.pull("G", "TBatch", 2, 0, max_nums=32)
            assert [m.body for m in msgs] == [b"b%d" % i for i in range(10)] + [b"o%d" % i for i in range(5)]
            assert [m.queue_offset for m in msgs] == list(range(15))


async def test_send_errors(tmp_path):
    async with running_broker(str(tmp_path), autoCreateTopicEnable="false") as broker:
        async with broker_client(broker.address) as c:
            r = await c.send("NotCreated", b"x")
            assert r.code == ResponseCode.TOPIC_NOT_EXIST
            assert r.remark.startswith("topic[NotCreated] not exist, apply first please!")
            r = await c.send("bad topic!", b"x")
            assert r.code == ResponseCode.SYSTEM_ERROR and "illegal characters" in r.remark
            r = await c.send("SCHEDULE_TOPIC_XXXX", b"x")
            assert r.code == ResponseCode.NO_PERMISSION
            # missing required header field: SYSTEM_ERROR, connection keeps serving
            bad = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2)
            bad.ext_fields = {"a": "PG"}
            resp = await c.client.invoke(c.addr, bad)
            assert resp.code == ResponseCode.SYSTEM_ERROR
            resp = await c.invoke(9999)
            assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            assert resp.remark == " request type 9999 not supported"
            r = await c.send("NotCreated", b"x")
            assert r.code == ResponseCode.TOPIC_NOT_EXIST


async def test_long_polling_wakes_on_arrival_and_times_out(tmp_path, virtual_clock):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            await c.send("TLong", b"first", queue_id=0)
            got: list = []

            async def puller() -> None:
                got.append(await c.pull("G", "TLong", 0, 1, suspend_ms=10_000))

            async with trio.open_nursery() as n:
                n.start_soon(puller)
                await wait_until(lambda: broker.hold.held_count > 0, timeout=5)
                t0 = trio.current_time()
                await c.send("TLong", b"second", queue_id=0)
            assert trio.current_time() - t0 < 0.1  # virtual time: woken by the arrival, not by a timer
            resp, msgs = got[0]
            assert resp.code == ResponseCode.SUCCESS and [m.body for m in msgs] == [b"second"]
            # nothing arrives: answered PULL_NOT_FOUND once the suspend time is over
            t0 = trio.current_time()
            resp, _ = await c.pull("G", "TLong", 0, 2, suspend_ms=300)
            assert resp.code == ResponseCode.PULL_NOT_FOUND
            assert 0.3 <= trio.current_time() - t0 < 0.35
            # a tag that does not match keeps the pull held
            got.clear()
            async with trio.open_nursery() as n:

                async def tagged() -> None:
                    got.append(await c.pull("G", "TLong", 0, 2, suspend_ms=10_000, subscription="B"))

                n.start_soon(tagged)
                await wait_until(lambda: broker.hold.held_count > 0, timeout=5)
                await c.send("TLong", b"tag A", tags="A", queue_id=0)
                await trio.sleep(1)  # virtual: within the hold service's 5 s re-check (which answers it, as Java)
                assert not got
                await c.send("TLong", b"tag B", tags="B", queue_id=0)
            resp, msgs = got[0]
            assert [m.body for m in msgs] == [b"tag B"]


async def test_short_polling(tmp_path, virtual_clock):
    async with running_broker(str(tmp_path), longPollingEnable="false", shortPollingTimeMills="200") as broker:
        async with broker_client(broker.address) as c:
            await c.send("TShort", b"x")
            t0 = trio.current_time()
            resp, _ = await c.pull("G", "TShort", 0, 1, suspend_ms=15_000)
            assert resp.code == ResponseCode.PULL_NOT_FOUND
            # held for shortPollingTimeMills, not the 15 s the pull asked for (virtual time: exact)
            assert 0.2 <= trio.current_time() - t0 < 0.25


async def test_tag_filter(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            for tag in ("A", "B", "A", "C"):
                await c.send("TTag", tag.encode(), tags=tag)
            _, msgs = await c.pull("G", "TTag", 0, 0, subscription="A || C")
            assert [m.body for m in msgs] == [b"A", b"A", b"C"]
            resp, _ = await c.pull("G", "TTag", 0, 0, subscription="Z")
            assert resp.code == ResponseCode.PULL_RETRY_IMMEDIATELY
            req_sql = await c.invoke(RequestCode.PULL_MESSAGE, None)  # no header at all
            assert req_sql.code == ResponseCode.SYSTEM_ERROR


async def test_offsets_query_update_and_persist(tmp_path):
    store = str(tmp_path)
    async with running_broker(store) as broker:
        async with broker_client(broker.address) as c:
            await c.send("TOff", b"x", queue_id=0)
            r = await c.query_offset("G1", "TOff", 0)
            assert r.code == ResponseCode.SUCCESS and r.ext_fields == {"offset": "0"}  # new group, in memory
            r = await c.update_offset("G1", "TOff", 0, 1)
            assert r.code == ResponseCode.SUCCESS
            r = await c.query_offset("G1", "TOff", 0)
            assert r.ext_fields == {"offset": "1"}
            # a pull with the commit flag stores the consumer's offset too
            await c.pull("G2", "TOff", 0, 0, commit_offset=1)
            assert (await c.query_offset("G2", "TOff", 0)).ext_fields == {"offset": "1"}
    async with running_broker(store) as broker:
        async with broker_client(broker.address) as c:
            assert (await c.query_offset("G1", "TOff", 0)).ext_fields == {"offset": "1"}
            resp, msgs = await c.pull("G1", "TOff", 0, 0)
            assert [m.body for m in msgs] == [b"x"]


async def test_query_not_found_when_first_message_is_gone(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            await c.send("TGone", b"x")
            # pretend the first message left memory: Java answers QUERY_NOT_FOUND
            broker.store.check_in_disk_by_consume_offset = lambda *a: True  # type: ignore[method-assign]
            r = await c.query_offset("GNew", "TGone", 0)
            assert r.code == ResponseCode.QUERY_NOT_FOUND
            assert r.remark == "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"


async def test_heartbeat_consumer_list_and_notify(tmp_path):
    notified: list[str] = []
    disp = Dispatcher()

    @disp.route(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED)
    def on_notify(ctx, request):
        notified.append(request.ext_fields["consumerGroup"])

    async with running_broker(str(tmp_path)) as broker:
        async with (
            broker_client(broker.address, dispatcher=disp, client_id="127.0.0.1@c1") as c1,
            broker_client(broker.address, client_id="127.0.0.1@c2") as c2,
        ):
            r = await c1.heartbeat(consumer_groups={"CG": ["THb"]}, producer_groups=["PGHb"])
            assert r.code == ResponseCode.SUCCESS and r.ext_fields is None
            assert "%RETRY%CG" in broker.topics.table
            await c2.heartbeat(consumer_groups={"CG": ["THb"]})
            r = await c1.invoke(
                RequestCode.GET_CONSUMER_LIST_BY_GROUP, GetConsumerListByGroupRequestHeader(consumer_group="CG")
            )
            ids = GetConsumerListByGroupResponseBody.decode(r.body).consumer_id_list
            assert sorted(ids) == ["127.0.0.1@c1", "127.0.0.1@c2"] and r.ext_fields == {}
            await wait_until(lambda: "CG" in notified, timeout=5)
            r = await c1.invoke(
                RequestCode.GET_CONSUMER_LIST_BY_GROUP, GetConsumerListByGroupRequestHeader(consumer_group="Nobody")
            )
            assert r.code == ResponseCode.SYSTEM_ERROR and r.remark == "no consumer for this group, Nobody"
            # pull without the subscription flag uses the registered subscription
            _, _ = await c1.pull("CG", "THb", 0, 0)
            from rocketpy.codecs.headers import UnregisterClientRequestHeader

            r = await c2.invoke(
                RequestCode.UNREGISTER_CLIENT,
                UnregisterClientRequestHeader(client_id="127.0.0.1@c2", consumer_group="CG"),
            )
            assert r.code == ResponseCode.SUCCESS and r.ext_fields == {}
            assert broker.consumers.get("CG").client_ids == ["127.0.0.1@c1"]
        # connections closed: the group is gone
        await wait_until(lambda: broker.consumers.get("CG") is None, timeout=5)


async def test_locks(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address, client_id="a") as a, broker_client(broker.address, client_id="b") as b:
            mqs = [MessageQueue(topic="TOrd", broker_name="broker-a", queue_id=i) for i in range(3)]
            assert sorted(m.queue_id for m in await a.lock("OG", mqs[:2])) == [0, 1]
            assert [m.queue_id for m in await b.lock("OG", mqs)] == [2]
            assert sorted(m.queue_id for m in await a.lock("OG", mqs[:2])) == [0, 1]  # refresh
            await a.unlock("OG", mqs[:1])
            assert [m.queue_id for m in await b.lock("OG", mqs)] == [0, 2]
            # expiry: b's locks lapse after the max live time
            start = broker.locks.clock()
            broker.locks.clock = lambda: start + broker.locks.max_live_ms + 1
            assert sorted(m.queue_id for m in await a.lock("OG", mqs)) == [0, 1, 2]


async def test_lookups_and_admin(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            r = await c.invoke(
                RequestCode.UPDATE_AND_CREATE_TOPIC,
                CreateTopicRequestHeader(
                    topic="TAdm",
                    default_topic="TBW102",
                    read_queue_nums=3,
                    write_queue_nums=3,
                    perm=6,
                    topic_filter_type="SINGLE_TAG",
                    topic_sys_flag=0,
                    order=False,
                ),
            )
            assert r.code == ResponseCode.SUCCESS and r.remark == "not set any response code"
            sent = [await c.send("TAdm", b"m%d" % i, keys=f"key{i}", queue_id=1) for i in range(3)]
            r = await c.invoke(RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic="TAdm", queue_id=1))
            assert r.ext_fields == {"offset": "3"}
            r = await c.invoke(
                RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, SearchOffsetRequestHeader(topic="TAdm", queue_id=1, timestamp=0)
            )
            assert r.ext_fields == {"offset": "0"}
            _, _, off = decode_offset_msg_id(sent[1].ext_fields["msgId"])
            r = await c.invoke(RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=off))
            assert decode_messages(r.body)[0].body == b"m1"
            r = await c.invoke(
                RequestCode.QUERY_MESSAGE,
                QueryMessageRequestHeader(
                    topic="TAdm", key="key2", max_num=32, begin_timestamp=0, end_timestamp=2**63 - 1
                ),
            )
            assert r.code == ResponseCode.SUCCESS and decode_messages(r.body)[0].body == b"m2"
            r = await c.invoke(
                RequestCode.QUERY_MESSAGE,
                QueryMessageRequestHeader(
                    topic="TAdm", key="nope", max_num=32, begin_timestamp=0, end_timestamp=2**63 - 1
                ),
            )
            assert r.code == ResponseCode.QUERY_NOT_FOUND
            r = await c.invoke(RequestCode.GET_ALL_TOPIC_CONFIG)
            table = TopicConfigSerializeWrapper.decode(r.body).topic_config_table
            assert table["TAdm"].read_queue_nums == 3 and "TBW102" in table
            r = await c.invoke(RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic="TAdm"))
            stats = TopicStatsTable.decode(r.body)
            assert {mq.queue_id: o.max_offset for mq, o in stats.offset_table.items()} == {0: 0, 1: 3, 2: 0}
            await c.update_offset("CGAdm", "TAdm", 1, 2)
            r = await c.invoke(RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(consumer_group="CGAdm"))
            cs = ConsumeStats.decode(r.body)
            assert cs.total_diff() == 1
            body = SubscriptionGroupConfig(group_name="SG1", retry_max_times=3).encode()
            assert (await c.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)).code == 0
            r = await c.invoke(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
            assert SubscriptionGroupWrapper.decode(r.body).subscription_group_table["SG1"].retry_max_times == 3
            r = await c.invoke(
                RequestCode.DELETE_SUBSCRIPTIONGROUP, DeleteSubscriptionGroupRequestHeader(group_name="SG1")
            )
            assert r.code == 0 and "SG1" not in broker.groups.table
            r = await c.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
            assert KVTable.decode(r.body).table["brokerVersionDesc"] == "V4_9_8"
            r = await c.invoke(RequestCode.GET_BROKER_CONFIG)
            assert b"brokerName=broker-a\n" in r.body and "version" in r.ext_fields
            # as Java 4.9.8: any key but the black-listed ones, taking effect at once
            r = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, b"brokerPermission=4\nfileReservedTime=72\n")
            assert r.code == ResponseCode.SUCCESS
            assert broker.config.broker_permission == 4 and broker.config.props["brokerPermission"] == "4"
            assert broker.config.store.file_reserved_time == 72
            for body in (b"brokerConfigPath=/tmp/x.conf\n", b"rocketmqHome=/tmp\nbrokerPermission=6\n"):
                r = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, body)
                assert (r.code, r.remark) == (ResponseCode.NO_PERMISSION, "Can not update config in black list.")
            assert broker.config.broker_permission == 4  # refused as a whole
            r = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, b"fileReservedTime=soon\n")
            assert r.code == ResponseCode.SYSTEM_ERROR and broker.config.store.file_reserved_time == 72
            r = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, b"brokerPermission=6\n")
            assert r.code == ResponseCode.SUCCESS and broker.config.broker_permission == 6
            from rocketpy.codecs.headers import DeleteTopicRequestHeader

            r = await c.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic="TAdm"))
            assert r.code == 0 and "TAdm" not in broker.topics.table
            r = await c.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic="TBW102"))
            assert r.code == ResponseCode.SYSTEM_ERROR and "conflict with system topic" in r.remark


async def test_acl_fields_ignored(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            header = c.send_header("TAcl", {"WAIT": "true"})
            req = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header, b"x")
            req.ext_fields.update({"AccessKey": "ak", "Signature": "sig"})
            resp = await c.client.invoke(c.addr, req)
            assert resp.code == ResponseCode.SUCCESS
