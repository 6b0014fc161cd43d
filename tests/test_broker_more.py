"""Broker edges: config parsing, relays to clients, reset offset, same-connection
request-reply, SYNC_FLUSH sends, bad input, the VIP port and the admin credential."""

from __future__ import annotations

import logging

import trio

from rocketpy.broker.config import BrokerConfig
from rocketpy.codecs import RemotingCommand, ResponseCode
from rocketpy.codecs.bodies import ResetOffsetBody
from rocketpy.codecs.codes import FlushDiskType, MessageConst, RequestCode
from rocketpy.codecs.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetMinOffsetRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketpy.remoting import Dispatcher
from rocketpy.testing import broker_client, free_port, running_broker, wait_until


def test_config_defaults_and_unknown_keys(caplog):
    with caplog.at_level(logging.WARNING, "rocketpy.broker"):
        cfg = BrokerConfig.from_properties(
            {
                "brokerName": "b1",
                "listenPort": "20911",
                "flushDiskType": "SYNC_FLUSH",
                "noSuchKey": "1",
                "transactionCheckInterval": "3000",
                "storePathRootDir": "/tmp/x",
                "mappedFileSizeCommitLog": "4194304",
            }
        )
    assert "noSuchKey" in caplog.text
    assert (cfg.broker_name, cfg.listen_port, cfg.vip_port) == ("b1", 20911, 20909)
    assert cfg.broker_cluster_name == "DefaultCluster" and cfg.default_topic_queue_nums == 8
    assert cfg.auto_create_topic_enable and cfg.long_polling_enable and cfg.register_name_server_period == 30000
    assert cfg.transaction_check_interval == 3000 and cfg.transaction_time_out == 6000
    assert cfg.store.flush_disk_type == FlushDiskType.SYNC_FLUSH
    assert cfg.store.mapped_file_size_commit_log == 4194304
    assert cfg.store.commit_log_dir == "/tmp/x/commitlog"
    text = cfg.properties_text()
    assert "brokerName=b1\n" in text and "noSuchKey" not in text


async def test_relays_to_consumer_and_reset_offset(tmp_path):
    seen: list[RemotingCommand] = []
    disp = Dispatcher()

    @disp.route(RequestCode.GET_CONSUMER_RUNNING_INFO, RequestCode.CONSUME_MESSAGE_DIRECTLY)
    def on_relay(ctx, request):
        seen.append(request)
        return request.response(ResponseCode.SUCCESS, body=b'{"ok":true}')

    @disp.route(RequestCode.RESET_CONSUMER_CLIENT_OFFSET)
    def on_reset(ctx, request):
        seen.append(request)
        return request.response(ResponseCode.SUCCESS)

    async with running_broker(str(tmp_path)) as broker:
        async with (
            broker_client(broker.address, dispatcher=disp, client_id="127.0.0.1@cons") as cons,
            broker_client(broker.address) as admin,
        ):
            await cons.heartbeat(consumer_groups={"RCG": ["TRel"]})
            r = await admin.send("TRel", b"m0", queue_id=0)
            await admin.send("TRel", b"m1", queue_id=0)
            r2 = await admin.invoke(
                RequestCode.GET_CONSUMER_RUNNING_INFO,
                GetConsumerRunningInfoRequestHeader(
                    consumer_group="RCG", client_id="127.0.0.1@cons", jstack_enable=False
                ),
            )
            assert r2.code == ResponseCode.SUCCESS and r2.body == b'{"ok":true}'
            r3 = await admin.invoke(
                RequestCode.CONSUME_MESSAGE_DIRECTLY,
                ConsumeMessageDirectlyResultRequestHeader(
                    consumer_group="RCG", client_id="127.0.0.1@cons", msg_id=r.ext_fields["msgId"]
                ),
            )
            assert r3.code == ResponseCode.SUCCESS
            relayed = seen[1]
            assert relayed.ext_fields["brokerName"] == "broker-a" and b"m0" in relayed.body
            r4 = await admin.invoke(
                RequestCode.GET_CONSUMER_RUNNING_INFO,
                GetConsumerRunningInfoRequestHeader(consumer_group="RCG", client_id="nobody"),
            )
            assert r4.code == ResponseCode.SYSTEM_ERROR and r4.remark == "The Consumer <RCG> <nobody> not online"
            for q in range(4):
                await admin.update_offset("RCG", "TRel", q, 2 if q == 0 else 0)
            r5 = await admin.invoke(
                RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
                ResetOffsetRequestHeader(topic="TRel", group="RCG", timestamp=0, is_force=True),
            )
            assert r5.code == ResponseCode.SUCCESS
            body = ResetOffsetBody.decode(r5.body)
            assert {mq.queue_id: off for mq, off in body.offset_table.items()}[0] == 0
            assert seen[-1].code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET
            r6 = await admin.invoke(RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(topic="TRel", queue_id=0))
            assert r6.ext_fields == {"offset": "0"}
            r7 = await admin.invoke(
                RequestCode.GET_EARLIEST_MSG_STORETIME, GetEarliestMsgStoretimeRequestHeader(topic="TRel", queue_id=0)
            )
            assert int(r7.ext_fields["timestamp"]) > 0


async def test_request_reply_on_one_connection(tmp_path):
    """One client instance that both asks and answers: the push must not wait behind its own send."""
    disp = Dispatcher()

    @disp.route(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT)
    def on_push(ctx, request):
        return request.response(ResponseCode.SUCCESS)

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address, dispatcher=disp, client_id="127.0.0.1@both") as c:
            await c.heartbeat(producer_groups=["BOTH"])
            props = {
                MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT: "127.0.0.1@both",
                MessageConst.PROPERTY_CORRELATION_ID: "c",
            }
            with trio.fail_after(2):
                r = await c.send(
                    "DefaultCluster_REPLY_TOPIC", b"r", props=props, code=RequestCode.SEND_REPLY_MESSAGE_V2
                )
            assert r.code == ResponseCode.SUCCESS


async def test_sync_flush_sends(tmp_path):
    async with running_broker(str(tmp_path), flushDiskType="SYNC_FLUSH") as broker:
        async with broker_client(broker.address) as c:
            results = []

            async def one(i):
                results.append(await c.send("TSync", b"s%d" % i, queue_id=i % 4))

            async with trio.open_nursery() as n:
                for i in range(50):
                    n.start_soon(one, i)
            assert all(r.code == ResponseCode.SUCCESS for r in results)
            assert broker.store.flushed_offset >= broker.store.max_phy_offset
            assert broker.store_services.group_commit.rounds < 50  # grouped
            r = await c.send_batch("TSync", [b"a", b"b"])
            assert r.code == ResponseCode.SUCCESS


async def test_bad_input_keeps_serving(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        host, port = broker.address.rsplit(":", 1)
        stream = await trio.open_tcp_stream(host, int(port))
        await stream.send_all(b"\x00\x00\x00\x08\x00\x00\x00\x50garbage!")  # header longer than the frame
        with trio.fail_after(5):
            assert await stream.receive_some(100) == b""  # closed
        async with broker_client(broker.address) as c:
            r = await c.invoke(RequestCode.HEART_BEAT, None, b"{not json")
            assert r.code == ResponseCode.SYSTEM_ERROR
            assert (await c.send("TOk", b"fine")).code == ResponseCode.SUCCESS


async def test_vip_port_and_admin_credential(tmp_path):
    port = free_port((-2, 0))
    async with running_broker(str(tmp_path), listenPort=port, vipChannelEnable="true", adminCredential="s3cret") as b:
        assert [s.port for s in b.servers] == [port, port - 2]
        async with broker_client(f"127.0.0.1:{port - 2}") as c:
            assert (await c.send("TVip", b"via vip")).code == ResponseCode.SUCCESS
            req = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, None, b"brokerPermission=4\n")
            req.ext_fields = {"adminCredential": "wrong"}
            assert (await c.client.invoke(c.addr, req)).code == ResponseCode.NO_PERMISSION
            req = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, None, b"shortPollingTimeMills=500\n")
            req.ext_fields = {"adminCredential": "s3cret"}
            assert (await c.client.invoke(c.addr, req)).code == ResponseCode.SUCCESS
            assert b.config.props["shortPollingTimeMills"] == "500"
            # a path is never changed remotely, credential or not
            req = RemotingCommand.request(
                RequestCode.UPDATE_BROKER_CONFIG, None, b"shortPollingTimeMills=700\nstorePathRootDir=/etc\n"
            )
            req.ext_fields = {"adminCredential": "s3cret"}
            assert (await c.client.invoke(c.addr, req)).code == ResponseCode.NO_PERMISSION
            assert b.config.props["storePathRootDir"] == str(tmp_path)
            assert b.config.props["shortPollingTimeMills"] == "500"


async def test_more_admin_views_and_sql92(tmp_path):
    from rocketpy.codecs.bodies import (
        CheckClientRequestBody,
        ConsumerConnection,
        ConsumerOffsetSerializeWrapper,
        DelayOffsetSerializeWrapper,
        GroupList,
        ProducerConnection,
        build_subscription,
    )
    from rocketpy.codecs.headers import (
        GetConsumerConnectionListRequestHeader,
        GetProducerConnectionListRequestHeader,
        QueryTopicConsumeByWhoRequestHeader,
    )

    async with running_broker(str(tmp_path), messageDelayLevel="100ms 200ms") as broker:
        async with broker_client(broker.address, client_id="127.0.0.1@v") as c:
            await c.heartbeat(consumer_groups={"VG": ["TView"]}, producer_groups=["VPG"])
            await c.send("TView", b"x", props={"DELAY": "1"})
            await c.update_offset("VG", "TView", 0, 0)
            r = await c.invoke(
                RequestCode.GET_CONSUMER_CONNECTION_LIST, GetConsumerConnectionListRequestHeader(consumer_group="VG")
            )
            conn = ConsumerConnection.decode(r.body)
            assert [x.client_id for x in conn.connection_set] == ["127.0.0.1@v"] and "TView" in conn.subscription_table
            r = await c.invoke(
                RequestCode.GET_PRODUCER_CONNECTION_LIST, GetProducerConnectionListRequestHeader(producer_group="VPG")
            )
            assert ProducerConnection.decode(r.body).connection_set[0].client_id == "127.0.0.1@v"
            r = await c.invoke(
                RequestCode.GET_PRODUCER_CONNECTION_LIST, GetProducerConnectionListRequestHeader(producer_group="none")
            )
            assert r.code == ResponseCode.SYSTEM_ERROR and r.remark == "the producer group[none] not exist"
            r = await c.invoke(
                RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, QueryTopicConsumeByWhoRequestHeader(topic="TView")
            )
            assert GroupList.decode(r.body).group_list == ["VG"]
            from rocketpy.codecs.headers import CloneGroupOffsetRequestHeader

            r = await c.invoke(
                RequestCode.CLONE_GROUP_OFFSET,
                CloneGroupOffsetRequestHeader(src_group="VG", dest_group="VG2", offline=True),
            )
            assert r.code == ResponseCode.SUCCESS
            r = await c.invoke(RequestCode.GET_ALL_CONSUMER_OFFSET)
            table = ConsumerOffsetSerializeWrapper.decode(r.body).offset_table
            assert table["TView@VG"] == table["TView@VG2"] == {0: 0}
            await wait_until(lambda: broker.schedule.offsets, timeout=5)
            r = await c.invoke(RequestCode.GET_ALL_DELAY_OFFSET)
            assert DelayOffsetSerializeWrapper.decode(r.body).offset_table == {1: 1}
            resp, _ = await c.pull("VG", "TView", 0, 0, subscription="a > 1", expression_type="SQL92")
            assert resp.code == ResponseCode.SYSTEM_ERROR
            assert resp.remark == "The broker does not support consumer to filter message by SQL92"
            body = CheckClientRequestBody(
                client_id="x", group="VG", subscription_data=build_subscription("TView", "a > 1", "SQL92")
            )
            r = await c.invoke(RequestCode.CHECK_CLIENT_CONFIG, None, body.encode())
            assert r.code == ResponseCode.SYSTEM_ERROR


def test_batch_body_error_walks_entries_as_java_does() -> None:
    """SEND_BATCH_MESSAGE bodies are checked with BATCH_ENTRY's fields, read in sequence like Java's encoder."""
    from rocketpy.broker.processors.send import batch_body_error
    from rocketpy.codecs.message import Message, encode_batch

    good = encode_batch([Message(topic="T", body=b"abc", properties={"a": "b"}), Message(topic="T", body=b"x")])
    assert batch_body_error(good) is None
    assert batch_body_error(good[:10]) == "entry at 0 is truncated"
    assert batch_body_error(good[:-1]) == "entry at 28: properties runs past the batch"
    negative = bytearray(good)
    negative[16:20] = b"\xff\xff\xff\xff"  # body length -1
    assert batch_body_error(bytes(negative)) == "entry at 0: body runs past the batch"
