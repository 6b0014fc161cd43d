"""AdminBrokerProcessor's remaining codes over real sockets: every case of Java 4.9.8's
switch is served, and each new one answers like Java."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketpy.broker.stats import BROKER_PUT_NUMS, GROUP_GET_NUMS, GROUP_GET_SIZE, TOPIC_PUT_NUMS, StatsItem
from rocketpy.codecs import ResponseCode
from rocketpy.codecs.bodies import (
    BrokerStatsData,
    ConsumeStatsList,
    GetConsumerStatusBody,
    MessageQueue,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    TopicList,
)
from rocketpy.codecs.codes import MessageConst, MessageSysFlag, MixAll, RequestCode
from rocketpy.codecs.headers import (
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetAllProducerInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    ResumeCheckHalfMessageRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rocketpy.codecs.message import decode_messages
from rocketpy.remoting import Dispatcher
from rocketpy.testing import broker_client, now_ms, running_broker

#: every case of AdminBrokerProcessor.processRequest's switch in 4.9.8
ADMIN_SWITCH = [
    "UPDATE_AND_CREATE_TOPIC",
    "DELETE_TOPIC_IN_BROKER",
    "GET_ALL_TOPIC_CONFIG",
    "UPDATE_BROKER_CONFIG",
    "GET_BROKER_CONFIG",
    "SEARCH_OFFSET_BY_TIMESTAMP",
    "GET_MAX_OFFSET",
    "GET_MIN_OFFSET",
    "GET_EARLIEST_MSG_STORETIME",
    "GET_BROKER_RUNTIME_INFO",
    "LOCK_BATCH_MQ",
    "UNLOCK_BATCH_MQ",
    "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
    "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
    "DELETE_SUBSCRIPTIONGROUP",
    "GET_TOPIC_STATS_INFO",
    "GET_CONSUMER_CONNECTION_LIST",
    "GET_PRODUCER_CONNECTION_LIST",
    "GET_ALL_PRODUCER_INFO",
    "GET_CONSUME_STATS",
    "GET_ALL_CONSUMER_OFFSET",
    "GET_ALL_DELAY_OFFSET",
    "INVOKE_BROKER_TO_RESET_OFFSET",
    "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
    "QUERY_TOPIC_CONSUME_BY_WHO",
    "QUERY_CONSUME_TIME_SPAN",
    "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
    "CLEAN_EXPIRED_CONSUMEQUEUE",
    "DELETE_EXPIRED_COMMITLOG",
    "CLEAN_UNUSED_TOPIC",
    "GET_CONSUMER_RUNNING_INFO",
    "QUERY_CORRECTION_OFFSET",
    "CONSUME_MESSAGE_DIRECTLY",
    "CLONE_GROUP_OFFSET",
    "VIEW_BROKER_STATS_DATA",
    "GET_BROKER_CONSUME_STATS",
    "QUERY_CONSUME_QUEUE",
    "UPDATE_AND_CREATE_ACL_CONFIG",
    "DELETE_ACL_CONFIG",
    "GET_BROKER_CLUSTER_ACL_INFO",
    "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG",
    "RESUME_CHECK_HALF_MESSAGE",
]


async def test_every_admin_code_is_served(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        missing = [name for name in ADMIN_SWITCH if getattr(RequestCode, name) not in broker.dispatcher]
        assert missing == []


async def test_producer_info_time_span_correction_and_consume_stats(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address, client_id="127.0.0.1@adm") as c:
            await c.heartbeat(producer_groups=["PGA"])
            r = await c.invoke(RequestCode.GET_ALL_PRODUCER_INFO, GetAllProducerInfoRequestHeader())
            assert r.code == ResponseCode.SUCCESS
            (info,) = ProducerTableInfo.decode(r.body).data["PGA"]
            assert info.client_id == "127.0.0.1@adm" and info.remote_ip.startswith("/127.0.0.1:")

            for i in range(4):
                await c.send("TAdm", f"m{i}".encode(), queue_id=0)
            # GET_BROKER_CONSUME_STATS walks the subscription groups: heartbeats create them
            await c.heartbeat(consumer_groups={"GA": ["TAdm"], "GB": ["TAdm"], "GC": ["TAdm"]})
            await c.update_offset("GA", "TAdm", 0, 3)
            await c.update_offset("GB", "TAdm", 0, 1)
            await c.update_offset("GC", "TAdm", 0, 2)

            before = now_ms()
            r = await c.invoke(
                RequestCode.QUERY_CONSUME_TIME_SPAN, QueryConsumeTimeSpanRequestHeader(topic="TAdm", group="GA")
            )
            after = now_ms()
            spans = QueryConsumeTimeSpanBody.decode(r.body).consume_time_span_set
            assert len(spans) == broker.topics.get("TAdm").write_queue_nums
            q0 = spans[0]
            assert (
                q0.message_queue.queue_id == 0 and 0 < q0.min_time_stamp <= q0.consume_time_stamp <= q0.max_time_stamp
            )
            # one message left, the last one: the delay is how long it has waited since it was stored
            assert before - q0.max_time_stamp <= q0.delay_time <= after - q0.max_time_stamp
            # the empty queues, as Java answers them: no offset committed (-1) is below the max offset (0), and the
            # store time of offset -1 is -1, so the delay is the time now plus one
            assert len(spans) > 1 and all(before + 1 <= s.delay_time <= after + 1 for s in spans[1:])
            r = await c.invoke(
                RequestCode.QUERY_CONSUME_TIME_SPAN, QueryConsumeTimeSpanRequestHeader(topic="Nope", group="GA")
            )
            assert (r.code, r.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[Nope] not exist")

            r = await c.invoke(
                RequestCode.QUERY_CORRECTION_OFFSET,
                QueryCorrectionOffsetHeader(topic="TAdm", compare_group="GA", filter_groups="GB"),
            )
            assert QueryCorrectionOffsetBody.decode(r.body).correction_offsets == {0: 2}
            assert broker.offsets.query("GB", "TAdm", 0) == 1  # unlike Java, filtering does not delete offsets
            r = await c.invoke(
                RequestCode.QUERY_CORRECTION_OFFSET, QueryCorrectionOffsetHeader(topic="TAdm", compare_group="GC")
            )
            assert QueryCorrectionOffsetBody.decode(r.body).correction_offsets == {0: 1}

            r = await c.invoke(RequestCode.GET_BROKER_CONSUME_STATS, GetConsumeStatsInBrokerHeader(is_order=False))
            assert r.code == ResponseCode.SUCCESS
            body = ConsumeStatsList.decode(r.body)
            assert body.broker_addr == broker.broker_addr
            assert body.total_diff >= 1 + 3 + 2  # GA, GB, GC lag on queue 0
            by_group = {g: stats for entry in body.consume_stats_list for g, stats in entry.items()}
            (stats,) = by_group["GA"]
            mq = MessageQueue(topic="TAdm", broker_name="broker-a", queue_id=0)
            assert (stats.offset_table[mq].broker_offset, stats.offset_table[mq].consumer_offset) == (4, 3)
            r = await c.invoke(RequestCode.GET_BROKER_CONSUME_STATS, GetConsumeStatsInBrokerHeader(is_order=True))
            assert all(not v for e in ConsumeStatsList.decode(r.body).consume_stats_list for v in e.values())


async def test_consume_queue_system_topics_and_maintenance(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            for i in range(3):
                await c.send("TCq", f"m{i}".encode(), tags="TagA", queue_id=1)
            await c.heartbeat(consumer_groups={"GCq": ["TCq"]})
            r = await c.invoke(
                RequestCode.QUERY_CONSUME_QUEUE,
                QueryConsumeQueueRequestHeader(topic="TCq", queue_id=1, index=1, count=5, consumer_group="GCq"),
            )
            assert r.code == ResponseCode.SUCCESS
            body = QueryConsumeQueueResponseBody.decode(r.body)
            assert (body.min_queue_index, body.max_queue_index) == (0, 3)
            assert len(body.queue_data) == 2 and body.queue_data[0].physic_size > 0
            assert body.subscription_data.topic == "TCq" and body.filter_data == "null"
            r = await c.invoke(
                RequestCode.QUERY_CONSUME_QUEUE,
                QueryConsumeQueueRequestHeader(topic="TCq", queue_id=1, index=0, count=1, consumer_group="Other"),
            )
            assert QueryConsumeQueueResponseBody.decode(r.body).filter_data == "Other@TCq is not online!"
            r = await c.invoke(
                RequestCode.QUERY_CONSUME_QUEUE,
                QueryConsumeQueueRequestHeader(topic="TCq", queue_id=1, index=50, count=1),
            )
            assert (r.code, r.remark, r.body) == (ResponseCode.SUCCESS, "Index 50 of 1@TCq is not exist!", None)
            r = await c.invoke(
                RequestCode.QUERY_CONSUME_QUEUE,
                QueryConsumeQueueRequestHeader(topic="TNone", queue_id=0, index=0, count=1),
            )
            assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "0@TNone is not exist!")

            r = await c.invoke(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
            topics = set(TopicList.decode(r.body).topic_list)
            assert {"TBW102", MixAll.RMQ_SYS_SCHEDULE_TOPIC, "DefaultCluster", "broker-a"} <= topics

            for code in (
                RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
                RequestCode.DELETE_EXPIRED_COMMITLOG,
                RequestCode.CLEAN_UNUSED_TOPIC,
            ):
                r = await c.invoke(code)
                assert (r.code, r.remark) == (ResponseCode.SUCCESS, None)
            resp, msgs = await c.pull("G", "TCq", 1, 0)
            assert len(msgs) == 3  # nothing in use was cleaned


async def test_consumer_status_relay(tmp_path):
    asked = []
    disp = Dispatcher()
    mq = MessageQueue(topic="TSt", broker_name="broker-a", queue_id=0)

    @disp.route(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT)
    def on_status(ctx, request):
        asked.append(request.ext_fields)
        return request.response(ResponseCode.SUCCESS, body=GetConsumerStatusBody(message_queue_table={mq: 7}).encode())

    async with running_broker(str(tmp_path)) as broker:
        async with (
            broker_client(broker.address, dispatcher=disp, client_id="127.0.0.1@st") as cons,
            broker_client(broker.address) as admin,
        ):
            header = GetConsumerStatusRequestHeader(topic="TSt", group="GSt")
            r = await admin.invoke(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header)
            assert (r.code, r.remark) == (
                ResponseCode.SYSTEM_ERROR,
                "No Any Consumer online in the consumer group: [GSt]",
            )
            await cons.heartbeat(consumer_groups={"GSt": ["TSt"]})
            r = await admin.invoke(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header)
            assert r.code == ResponseCode.SUCCESS
            assert GetConsumerStatusBody.decode(r.body).consumer_table == {"127.0.0.1@st": {mq: 7}}
            assert asked[0]["topic"] == "TSt" and asked[0]["group"] == "GSt"
            header.client_addr = "someone-else"
            r = await admin.invoke(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, header)
            assert GetConsumerStatusBody.decode(r.body).consumer_table == {}


async def test_view_broker_stats(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            t0 = now_ms()
            broker.stats_manager.sample(broker, at_ms=t0)  # the broker's counters start at 0 here
            await c.send("TStat", b"m0", queue_id=0)
            broker.stats_manager.sample(broker, at_ms=t0 + 1)  # the topic is first seen: its baseline
            for i in range(1, 5):
                await c.send("TStat", f"m{i}".encode(), queue_id=0)
            await c.update_offset("GStat", "TStat", 0, 2)
            broker.stats_manager.sample(broker, at_ms=t0 + 10_001)
            cases = [
                (BROKER_PUT_NUMS, "DefaultCluster", 5),
                (TOPIC_PUT_NUMS, "TStat", 4),
                (GROUP_GET_NUMS, "TStat@GStat", 0),  # first seen in the last round
            ]
            for name, key, total in cases:
                r = await c.invoke(
                    RequestCode.VIEW_BROKER_STATS_DATA, ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key)
                )
                assert r.code == ResponseCode.SUCCESS, r.remark
                data = BrokerStatsData.decode(r.body)
                assert data.stats_minute.sum == total, name
                if total:
                    assert data.stats_minute.tps > 0 and data.stats_minute.avgpt == 1.0
            r = await c.invoke(
                RequestCode.VIEW_BROKER_STATS_DATA, ViewBrokerStatsDataRequestHeader(stats_name="X", stats_key="Y")
            )
            assert (r.code, r.remark) == (ResponseCode.SYSTEM_ERROR, "The stats <X> <Y> not exist")


async def test_stats_of_deleted_topics_and_groups_are_dropped(tmp_path):
    """A broker that sees many short-lived topics and groups keeps no stats items for the gone ones
    (Java's onTopicDeleted / onGroupDeleted): VIEW_BROKER_STATS_DATA then answers that they do not exist."""
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:

            async def view(name: str, key: str) -> int:
                header = ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key)
                return (await c.invoke(RequestCode.VIEW_BROKER_STATS_DATA, header)).code

            t0 = now_ms()
            broker.stats_manager.sample(broker, at_ms=t0)
            kept = len(broker.stats_manager)
            for i in range(3):
                await c.send(f"TGone{i}", b"m", queue_id=0)
                await c.update_offset(f"GGone{i}", f"TGone{i}", 0, 1)
            broker.stats_manager.sample(broker, at_ms=t0 + 10_001)
            assert await view(TOPIC_PUT_NUMS, "TGone1") == ResponseCode.SUCCESS
            assert await view(GROUP_GET_SIZE, "TGone1@GGone1") == ResponseCode.SUCCESS
            assert len(broker.stats_manager) == kept + 3 * 4
            for i in range(3):
                r = await c.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic=f"TGone{i}"))
                assert r.code == ResponseCode.SUCCESS
                header = DeleteSubscriptionGroupRequestHeader(group_name=f"GGone{i}", remove_offset=True)
                assert (await c.invoke(RequestCode.DELETE_SUBSCRIPTIONGROUP, header)).code == ResponseCode.SUCCESS
            broker.stats_manager.sample(broker, at_ms=t0 + 20_002)
            assert await view(TOPIC_PUT_NUMS, "TGone1") == ResponseCode.SYSTEM_ERROR
            assert await view(GROUP_GET_SIZE, "TGone1@GGone1") == ResponseCode.SYSTEM_ERROR
            assert len(broker.stats_manager) == kept
            assert await view(BROKER_PUT_NUMS, "DefaultCluster") == ResponseCode.SUCCESS


def test_stats_item_holds_a_hostile_sum():
    """Offsets are Java longs, their sum is not: it is capped at Long.MAX_VALUE, never an error."""
    item = StatsItem(0, baseline=0)
    item.observe(2 * ((1 << 63) - 1), 10_000)
    assert item.in_minute().sum == (1 << 63) - 1


def test_stats_item_windows():
    item = StatsItem(0, baseline=100)
    for k in range(1, 10):
        item.observe(100 + 10 * k, k * 10_000)
    minute = item.in_minute()
    assert minute.sum == 60 and minute.tps == pytest.approx(1.0)  # last 7 samples span 60 s
    assert item.in_hour().sum == 0 and item.in_day().sum == 0


def _windows_by_the_book(start: int, baseline: int, observed: list[tuple[int, int]]) -> list[tuple[int, float, float]]:
    """Java's sampling, spelled out: every round a minute sample (last 7 kept), an hour sample 10 min after
    the last (7 kept), a day sample an hour after the last (25 kept), each list seeded 1 period before the
    start with 0; a window is its last sample minus its first; each counted unit is one call."""
    minute, hour, day = [(start - 10_000, 0)], [(start - 600_000, 0)], [(start - 3_600_000, 0)]
    last_hour = last_day = start
    for at, total in observed:
        value = min(max(0, total - baseline), (1 << 63) - 1)
        minute = (minute + [(at, value)])[-7:]
        if at - last_hour >= 600_000:
            hour, last_hour = (hour + [(at, value)])[-7:], at
        if at - last_day >= 3_600_000:
            day, last_day = (day + [(at, value)])[-25:], at
    out = []
    for samples in (minute, hour, day):
        total, span = samples[-1][1] - samples[0][1], samples[-1][0] - samples[0][0]
        out.append((total, total * 1000.0 / span if span else math.nan, 1.0 if total > 0 else 0.0))
    return out


@given(st.integers(0, 10**13), st.integers(0, 10**12),
       st.lists(st.tuples(st.integers(0, 3_000_000), st.integers(-10**6, 10**13)), max_size=50))
def test_stats_item_windows_as_java_samples(start, baseline, steps):
    """Sum, TPS and average of the minute, hour and day windows over any series of totals: resets below
    the baseline, zero, rounds at one instant (span 0: NaN TPS; Java's double division would give
    +-Infinity for a non-zero sum, a window only a clock standing still for 7 rounds reaches)."""
    item, at, observed = StatsItem(start, baseline), start, []
    for step, total in steps:
        at += step
        observed.append((at, total))
        item.observe(total, at)
    got = [(s.sum, s.tps, s.avgpt) for s in (item.in_minute(), item.in_hour(), item.in_day())]
    want = _windows_by_the_book(start, baseline, observed)
    assert [(g[0], g[2]) for g in got] == [(w[0], w[2]) for w in want]
    assert all(g[1] == w[1] or (math.isnan(g[1]) and math.isnan(w[1])) for g, w in zip(got, want))


async def test_resume_check_half_message(tmp_path):
    prepared = int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)
    props = {MessageConst.PROPERTY_TRANSACTION_PREPARED: "true", MessageConst.PROPERTY_PRODUCER_GROUP: "TXR"}
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            r = await c.send("TTxR", b"half", props=props, sys_flag=prepared, group="TXR")
            assert r.code == ResponseCode.SUCCESS
            before = broker.store.get_max_offset_in_queue(MixAll.RMQ_SYS_TRANS_HALF_TOPIC, 0)
            r2 = await c.invoke(
                RequestCode.RESUME_CHECK_HALF_MESSAGE, ResumeCheckHalfMessageRequestHeader(msg_id=r.ext_fields["msgId"])
            )
            assert (r2.code, r2.remark) == (ResponseCode.SUCCESS, None)
            assert broker.store.get_max_offset_in_queue(MixAll.RMQ_SYS_TRANS_HALF_TOPIC, 0) == before + 1
            got = broker.store.get_message(MixAll.RMQ_SYS_TRANS_HALF_TOPIC, 0, before, 1)
            msgs = decode_messages(got.body())
            assert msgs[0].body == b"half" and msgs[0].properties[MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES] == "0"
            r3 = await c.invoke(
                RequestCode.RESUME_CHECK_HALF_MESSAGE, ResumeCheckHalfMessageRequestHeader(msg_id="XYZ")
            )
            assert (r3.code, r3.remark) == (
                ResponseCode.SYSTEM_ERROR,
                "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC.",
            )


async def test_consume_stats_carry_the_groups_consume_tps(tmp_path):
    # Java's consumeTps: tpsGroupGetNums(group, topic) over the minute's samples (mqadmin consumerProgress's
    # "Consume TPS"), per topic in GET_BROKER_CONSUME_STATS, summed over the topics in GET_CONSUME_STATS
    from rocketpy.codecs.bodies import ConsumeStats
    from rocketpy.codecs.headers import GetConsumeStatsRequestHeader

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            for topic in ("TTps", "TTps2"):
                for i in range(6):
                    await c.send(topic, f"m{i}".encode(), queue_id=0)
            await c.heartbeat(consumer_groups={"GTps": ["TTps", "TTps2"]})
            t0 = now_ms()
            for topic in ("TTps", "TTps2"):
                await c.update_offset("GTps", topic, 0, 1)
            broker.stats_manager.sample(broker, at_ms=t0)  # first seen: the baseline
            await c.update_offset("GTps", "TTps", 0, 5)
            await c.update_offset("GTps", "TTps2", 0, 3)
            broker.stats_manager.sample(broker, at_ms=t0 + 10_000)
            tps = {t: broker.stats_manager.get(GROUP_GET_NUMS, f"{t}@GTps").in_minute().tps for t in ("TTps", "TTps2")}
            assert tps["TTps"] > tps["TTps2"] > 0

            r = await c.invoke(RequestCode.GET_BROKER_CONSUME_STATS, GetConsumeStatsInBrokerHeader(is_order=False))
            body = ConsumeStatsList.decode(r.body)
            (per_topic,) = [stats for entry in body.consume_stats_list for g, stats in entry.items() if g == "GTps"]
            assert sorted(s.consume_tps for s in per_topic) == sorted(tps.values())
            r = await c.invoke(RequestCode.GET_CONSUME_STATS, GetConsumeStatsRequestHeader(consumer_group="GTps"))
            assert ConsumeStats.decode(r.body).consume_tps == pytest.approx(sum(tps.values()))
            assert broker.stats_manager.tps_group_get_nums("GNone", "TTps") == 0.0  # not sampled: Java's empty snapshot
