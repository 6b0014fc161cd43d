"""JSON bodies: golden identity, config files, the compressed register body, fastjson's
writer quirks, and generated round trips for every body class."""

from __future__ import annotations

import dataclasses
import itertools
import math
import zlib
from typing import Any

import pytest
from golden import STORE_DUMP, STORE_DUMP_CRASHED
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketpy.codecs import fastjson
from rocketpy.codecs.bodies import (
    BODY_TYPES,
    REQUEST_BODIES,
    RESPONSE_BODIES,
    BrokerData,
    ClusterInfo,
    ConsumerFilterData,
    ConsumeStats,
    DataVersion,
    GetConsumerListByGroupResponseBody,
    GroupList,
    HeartbeatData,
    JsonBody,
    KVTable,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    OffsetSerializeWrapper,
    QueueData,
    RegisterBrokerBody,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
    UnlockBatchRequestBody,
    body_crc32,
    build_subscription,
    check_body_crc32,
    decode_config_file,
    encode_config_file,
    route_data_features,
)
from rocketpy.codecs.bodies.base import Codec
from rocketpy.codecs.codes import ConsumeType, MessageModel, MQVersion, RequestCode, TopicFilterType
from rocketpy.codecs.errors import CodecError

# ---------------------------------------------------------------------------
# Real bodies from protocol/golden/captures (official 4.9.8 Java client, broker, name server)
# ---------------------------------------------------------------------------

ROUTE_V4_9_4 = (
    b'{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultClu'
    b'ster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":7,"readQueueNums":8,"to'
    b'picSysFlag":0,"writeQueueNums":8}]}'
)

HEARTBEAT_PRODUCER = (
    b'{"clientID":"192.0.2.2@29680#2107662904668","consumerDataSet":[],"producerDataSet":[{"groupName":"Pr'
    b'oducerSync_PG_golden"},{"groupName":"CLIENT_INNER_PRODUCER"}]}'
)

HEARTBEAT_CONSUMER = (
    b'{"clientID":"192.0.2.2@bcast-1-golden","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_FIRST_OF'
    b'FSET","consumeType":"CONSUME_PASSIVELY","groupName":"Broadcast_CG_golden","messageModel":"BROADCASTI'
    b'NG","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":'
    b'"*","subVersion":1795299438630,"tagsSet":[],"topic":"Broadcast_T_golden"}],"unitMode":false}],"produ'
    b'cerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}'
)

CONSUMER_LIST = b'{"consumerIdList":["192.0.2.2@29680#2108318263039"]}'

LOCK_REQUEST = (
    b'{"clientId":"192.0.2.2@30084#2123467648005","consumerGroup":"Ordered_CG_golden","mqSet":[{"brokerNam'
    b'e":"broker-a","queueId":0,"topic":"Ordered_T_golden"}]}'
)

LOCK_RESPONSE = b'{"lockOKMQSet":[{"brokerName":"broker-a","queueId":0,"topic":"Ordered_T_golden"}]}'

UNLOCK_REQUEST = (
    b'{"clientId":"192.0.2.2@30084#2123467648005","consumerGroup":"Ordered_CG_golden","mqSet":[{"brokerNam'
    b'e":"broker-a","queueId":0,"topic":"Ordered_T_golden"},{"brokerName":"broker-a","queueId":1,"topic":"'
    b'Ordered_T_golden"},{"brokerName":"broker-a","queueId":2,"topic":"Ordered_T_golden"},{"brokerName":"b'
    b'roker-a","queueId":3,"topic":"Ordered_T_golden"},{"brokerName":"broker-a","queueId":0,"topic":"%RETR'
    b'Y%Ordered_CG_golden"}]}'
)

CLUSTER_INFO = (
    b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster'
    b'":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
)

KV_TABLE = (
    b'{"table":{"msgPutTotalTodayNow":"95","scheduleMessageOffset_1":"2,2","scheduleMessageOffset_2":"1,1"'
    b',"sendThreadPoolQueueHeadWaitTimeMills":"0","putMessageDistributeTime":"null","queryThreadPoolQueueH'
    b'eadWaitTimeMills":"0","remainHowManyDataToFlush":"0 B","msgGetTotalTodayNow":"100","queryThreadPoolQ'
    b'ueueSize":"0","bootTimestamp":"1795299407219","msgPutTotalYesterdayMorning":"0","msgGetTotalYesterda'
    b'yMorning":"0","pullThreadPoolQueueSize":"0","commitLogMinOffset":"0","pullThreadPoolQueueHeadWaitTim'
    b'eMills":"0","runtime":"[ 0 days, 0 hours, 0 minutes, 52 seconds ]","dispatchMaxBuffer":"0","brokerVe'
    b'rsion":"409","putTps":"0.2998800479808077  ","getMissTps":"0.2998800479808077  ","getTransferedTps":'
    b'"0.6997201119552179  ","EndTransactionQueueSize":"0","getTotalTps":"0.8996401439424231 0.0 0.0","con'
    b'sumeQueueDiskRatio":"0.22","pageCacheLockTimeMills":"0","commitLogDiskRatio":"0.22","getFoundTps":"0'
    b'.5997600959616154  ","EndTransactionThreadPoolQueueCapacity":"100000","putMessageFailedTimes":"0","c'
    b'ommitLogDiskRatio_/opt/rocketmq4/store-captures/commitlog":"0.22","putLatency999":"0.00","commitLogM'
    b'axOffset":"27511","getMessageEntireTimeMax":"1","msgPutTotalTodayMorning":"0","putMessageTimesTotal"'
    b':"95","putLatency99":"0.00","msgGetTotalTodayMorning":"0","brokerVersionDesc":"V4_9_8","sendThreadPo'
    b'olQueueSize":"0","startAcceptSendRequestTimeStamp":"0","putMessageEntireTimeMax":"16","earliestMessa'
    b'geTimeStamp":"-1","commitLogDirCapacity":"Total : 252.0 GiB, Free : 79.3 GiB.","remainTransientStore'
    b'BufferNumbs":"2147483647","queryThreadPoolQueueCapacity":"20000","putMessageAverageSize":"289.589473'
    b'68421053","dispatchBehindBytes":"0","putMessageSizeTotal":"27511","sendThreadPoolQueueCapacity":"100'
    b'00","pullThreadPoolQueueCapacity":"100000"}}'
)

TOPIC_LIST = (
    b'{"topicList":["RMQ_SYS_TRANS_HALF_TOPIC","%RETRY%Transaction_CG_golden","%RETRY%LitePull_CGSub_golde'
    b'n","%RETRY%ProducerAsyncOneway_CG_golden","BenchmarkTest","TBW102","SELF_TEST_TOPIC","PushRetry_T_go'
    b'lden","SCHEDULE_TOPIC_XXXX","LitePull_TSub_golden","DefaultCluster_REPLY_TOPIC","broker-a","Ordered_'
    b'T_golden","%RETRY%Broadcast_CG_golden","Transaction_T_golden","%RETRY%PushRetry_CG_golden","%RETRY%P'
    b'roducerSync_CG_golden","Admin_T_golden","ProducerSync_T_golden","OFFSET_MOVED_EVENT","%RETRY%Ordered'
    b'_CG_golden","DefaultCluster","ProducerAsyncOneway_T_golden","%RETRY%Batch_CG_golden","LitePull_TAssi'
    b'gn_golden","Batch_T_golden","Broadcast_T_golden"]}'
)

CONSUME_STATS = (
    b'{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"Admin_T_golden"}:{"br'
    b'okerOffset":2,"consumerOffset":2,"lastTimestamp":1795299459644},{"brokerName":"broker-a","queueId":0'
    b',"topic":"%RETRY%Admin_CG_golden"}:{"brokerOffset":0,"consumerOffset":0,"lastTimestamp":0},{"brokerN'
    b'ame":"broker-a","queueId":2,"topic":"Admin_T_golden"}:{"brokerOffset":2,"consumerOffset":2,"lastTime'
    b'stamp":1795299459651},{"brokerName":"broker-a","queueId":1,"topic":"Admin_T_golden"}:{"brokerOffset"'
    b':2,"consumerOffset":2,"lastTimestamp":1795299459647}}}'
)

SUBSCRIPTION_GROUP = (
    b'{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,"groupN'
    b'ame":"Admin_CG_golden","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":3,"retryQueueNums":1,"w'
    b'hichBrokerWhenConsumeSlowly":1}'
)

GROUP_LIST = b'{"groupList":["ProducerSync_CG_golden"]}'

REGISTER_PLAIN = (
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":0,"timestamp":1795299'
    b'381280},"topicConfigTable":{"SCHEDULE_TOPIC_XXXX":{"order":false,"perm":6,"readQueueNums":18,"topicF'
    b'ilterType":"SINGLE_TAG","topicName":"SCHEDULE_TOPIC_XXXX","topicSysFlag":0,"writeQueueNums":18},"SEL'
    b'F_TEST_TOPIC":{"order":false,"perm":6,"readQueueNums":1,"topicFilterType":"SINGLE_TAG","topicName":"'
    b'SELF_TEST_TOPIC","topicSysFlag":0,"writeQueueNums":1},"DefaultCluster":{"order":false,"perm":7,"read'
    b'QueueNums":16,"topicFilterType":"SINGLE_TAG","topicName":"DefaultCluster","topicSysFlag":0,"writeQue'
    b'ueNums":16},"DefaultCluster_REPLY_TOPIC":{"order":false,"perm":6,"readQueueNums":1,"topicFilterType"'
    b':"SINGLE_TAG","topicName":"DefaultCluster_REPLY_TOPIC","topicSysFlag":0,"writeQueueNums":1},"broker-'
    b'a":{"order":false,"perm":7,"readQueueNums":1,"topicFilterType":"SINGLE_TAG","topicName":"broker-a","'
    b'topicSysFlag":0,"writeQueueNums":1},"TBW102":{"order":false,"perm":7,"readQueueNums":8,"topicFilterT'
    b'ype":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8},"BenchmarkTest":{"order"'
    b':false,"perm":6,"readQueueNums":1024,"topicFilterType":"SINGLE_TAG","topicName":"BenchmarkTest","top'
    b'icSysFlag":0,"writeQueueNums":1024},"OFFSET_MOVED_EVENT":{"order":false,"perm":6,"readQueueNums":1,"'
    b'topicFilterType":"SINGLE_TAG","topicName":"OFFSET_MOVED_EVENT","topicSysFlag":0,"writeQueueNums":1}}'
    b"}}"
)

REGISTER_PLAIN_CRC32 = 1775508210
REGISTER_COMPRESSED = bytes.fromhex(
    "78da63606050af564ace2fcd2b492d52b232d4512ac9cc4d2d2e49cc2d00f2cc2d4d8d2c2d8d2d4c8d8ccd6a19181838"
    "81582dd8d9c3d525d4c7353ec43fc0d3393e0208140c2d40c84c21d8d3cf1d24e3e80e54a919e41b181f1c191c1f12e4"
    "e8171cefe1e8e306d1a3600884688ab55d52d3124b734a9c734a8b814e890f720df089c4ad5cc529352f392337b1283b"
    "04e85a05430323130881a64ed9dfcd2dd83524ded73fccd525de35ccd52f049b71924945f9d9a945ba896049735449f1"
    "10a770a0d90a16408826a510ec0af2946b70086ea72aa2fa4cc1d00c84d00c628a8e050041db6542"
)
REGISTER_COMPRESSED_CRC32 = 2086385895

# The same route in the default dialect, as the name server answers clients older than V4_9_4.
ROUTE_LEGACY = (
    b'{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],'
    b'"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":7,"readQueueNums":8,"topicSysFlag":0,'
    b'"writeQueueNums":8}]}'
)

GOLDEN: list[tuple[type[JsonBody], bytes]] = [
    (HeartbeatData, HEARTBEAT_PRODUCER),
    (HeartbeatData, HEARTBEAT_CONSUMER),
    (GetConsumerListByGroupResponseBody, CONSUMER_LIST),
    (LockBatchRequestBody, LOCK_REQUEST),
    (LockBatchResponseBody, LOCK_RESPONSE),
    (UnlockBatchRequestBody, UNLOCK_REQUEST),
    (ClusterInfo, CLUSTER_INFO),
    (KVTable, KV_TABLE),
    (TopicList, TOPIC_LIST),
    (ConsumeStats, CONSUME_STATS),
    (SubscriptionGroupConfig, SUBSCRIPTION_GROUP),
    (GroupList, GROUP_LIST),
    (RegisterBrokerBody, REGISTER_PLAIN),
    (TopicRouteData, ROUTE_LEGACY),
]


@pytest.mark.parametrize(("cls", "body"), GOLDEN, ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(GOLDEN)])
def test_golden_identity(cls: type[JsonBody], body: bytes) -> None:
    assert cls.decode(body).encode() == body


def test_route_dialects() -> None:
    new = route_data_features(MQVersion.V4_9_8, None)
    old = route_data_features(MQVersion.V4_9_3, None)
    assert new == {"browser_compatible": True, "sort_map_keys": True}
    assert old == {}
    assert route_data_features(MQVersion.V4_9_3, True) == new
    assert route_data_features(MQVersion.V4_9_3, False) == old
    route = TopicRouteData.decode(ROUTE_V4_9_4)
    assert route.encode(**new) == ROUTE_V4_9_4
    assert route.encode(**old) == ROUTE_LEGACY
    assert TopicRouteData.decode(ROUTE_LEGACY) == route
    assert route.broker_datas is not None and route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911"}
    assert route.broker_datas[0].master_addr() == "127.0.0.1:10911"


def test_route_map_sort_field() -> None:
    route = TopicRouteData(
        queue_datas=[QueueData(broker_name="b", read_queue_nums=4, write_queue_nums=4, perm=6)],
        broker_datas=[BrokerData(cluster="c", broker_name="b", broker_addrs={1: "h:2", 0: "h:1"})],
        filter_server_table={"z": ["f1"], "a": []},
    )
    assert route.encode() == (
        b'{"brokerDatas":[{"brokerAddrs":{1:"h:2",0:"h:1"},"brokerName":"b","cluster":"c"}],'
        b'"filterServerTable":{"z":["f1"],"a":[]},'
        b'"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )
    assert route.encode(**route_data_features(MQVersion.V4_9_4, None)) == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"h:1","1":"h:2"},"brokerName":"b","cluster":"c"}],'
        b'"filterServerTable":{"a":[],"z":["f1"]},'
        b'"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )


def test_golden_values() -> None:
    hb = HeartbeatData.decode(HEARTBEAT_CONSUMER)
    consumer = hb.consumer_data_set[0]
    assert consumer.consume_type is ConsumeType.CONSUME_PASSIVELY
    assert consumer.message_model is MessageModel.BROADCASTING
    assert consumer.subscription_data_set[0].sub_string == "*"
    stats = ConsumeStats.decode(CONSUME_STATS)
    mq = MessageQueue(topic="Admin_T_golden", broker_name="broker-a", queue_id=2)
    assert stats.offset_table[mq].last_timestamp == 1795299459651
    assert stats.total_diff() == 0
    info = ClusterInfo.decode(CLUSTER_INFO)
    assert info.broker_addrs_of("DefaultCluster") == ["127.0.0.1:10911"]
    kv = KVTable.decode(KV_TABLE)
    assert kv.table["brokerVersionDesc"] == "V4_9_8"
    assert list(kv.table) == list(fastjson.loads(KV_TABLE)["table"])  # HashMap order kept


def test_registry_directions() -> None:
    assert REQUEST_BODIES[RequestCode.HEART_BEAT] is HeartbeatData
    assert REQUEST_BODIES[RequestCode.LOCK_BATCH_MQ] is LockBatchRequestBody
    assert RESPONSE_BODIES[RequestCode.LOCK_BATCH_MQ] is LockBatchResponseBody
    assert RESPONSE_BODIES[RequestCode.GET_ROUTEINFO_BY_TOPIC] is TopicRouteData
    assert RESPONSE_BODIES[RequestCode.REGISTER_BROKER] is KVTable
    assert RequestCode.SEND_MESSAGE not in REQUEST_BODIES
    assert set(REQUEST_BODIES.values()) | set(RESPONSE_BODIES.values()) <= set(BODY_TYPES)


# ---------------------------------------------------------------------------
# RegisterBrokerBody: plain and compressed, CRC32
# ---------------------------------------------------------------------------


def test_register_plain_crc() -> None:
    assert body_crc32(REGISTER_PLAIN) == REGISTER_PLAIN_CRC32
    assert check_body_crc32(REGISTER_PLAIN, REGISTER_PLAIN_CRC32)
    assert check_body_crc32(REGISTER_PLAIN, 0)  # 0: not checked
    assert not check_body_crc32(REGISTER_PLAIN + b" ", REGISTER_PLAIN_CRC32)
    assert body_crc32(None) == 0
    assert body_crc32(b"\xff" * 7) == zlib.crc32(b"\xff" * 7) & 0x7FFFFFFF
    body = RegisterBrokerBody.decode(REGISTER_PLAIN)
    table = body.topic_config_serialize_wrapper.topic_config_table  # type: ignore[union-attr]
    assert table["TBW102"].perm == 7 and table["TBW102"].read_queue_nums == 8


def test_register_compressed_round_trip() -> None:
    assert body_crc32(REGISTER_COMPRESSED) == REGISTER_COMPRESSED_CRC32
    body = RegisterBrokerBody.decode(REGISTER_COMPRESSED)
    assert body.compressed_form
    assert body.encode() == REGISTER_COMPRESSED
    assert RegisterBrokerBody.decode(REGISTER_COMPRESSED, compressed=True).encode(compress=True) == REGISTER_COMPRESSED
    wrapper = body.topic_config_serialize_wrapper
    assert wrapper is not None and wrapper.data_version is not None
    assert wrapper.data_version.counter == 1
    assert wrapper.topic_config_table["TBW102"].topic_filter_type is TopicFilterType.SINGLE_TAG
    assert body.filter_server_list == []
    # the same content, plain
    plain = body.encode(compress=False)
    assert plain.startswith(b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,')
    assert RegisterBrokerBody.decode(plain, compressed=False) == body


@pytest.mark.parametrize(
    "mutate",
    [
        lambda b: b[:-6],  # truncated stream
        lambda b: b[:2] + bytes([b[2] ^ 0xFF]) + b[3:],  # corrupted deflate data
        lambda b: b[:40],
        lambda b: zlib.compress(b"\x00\x00\x00\x05{}"),  # declared length beyond the data
        lambda b: zlib.compress(b"\xff\xff\xff\xff"),  # negative length
        lambda b: zlib.compress(b"\x00\x00\x00\x02{}\x00\x00\x00\x01\x00\x00\x00\x03a b\x00\x00\x00\x02[]"),
        lambda b: zlib.compress(b"\x00\x00\x00\x02{}\x00\x00\x00\x01\x00\x00\x00\x0ca 1 1 6 NOPE\x00\x00\x00\x02[]"),
        lambda b: zlib.compress(b"\x00\x00\x00\x02{}\x00\x00\x00\x00\x00\x00\x00\x02{}"),  # filter list not a list
    ],
)
def test_register_compressed_corrupt(mutate: Any) -> None:
    with pytest.raises(CodecError):
        RegisterBrokerBody.decode(mutate(REGISTER_COMPRESSED), compressed=True)


def test_topic_config_line() -> None:
    config = TopicConfig(topic_name="T", read_queue_nums=4, write_queue_nums=2, perm=6)
    assert config.to_line() == "T 4 2 6 SINGLE_TAG"
    assert TopicConfig.from_line("T 4 2 6 SINGLE_TAG") == config
    assert TopicConfig.from_line("T 4 2 6 MULTI_TAG ").topic_filter_type is TopicFilterType.MULTI_TAG
    # Integer.parseInt takes leading zeros, not a non-ASCII digit nor more digits than int() will read
    assert TopicConfig.from_line("T " + "0" * 5000 + "4 2 6 SINGLE_TAG") == config
    many = "9" * 5000
    for bad in ("T 4 2 6", "T x 2 6 SINGLE_TAG", "T 4 2 6 SINGLE_TAG x", "T 99999999999 2 6 SINGLE_TAG",
                f"T {many} 2 6 SINGLE_TAG", "T \u00b2 2 6 SINGLE_TAG"):
        with pytest.raises(CodecError):
            TopicConfig.from_line(bad)


def test_long_given_as_a_string_parses_like_java() -> None:
    """fastjson reads a quoted long (BrowserCompatible writes them so): Long.parseLong's rules."""
    assert DataVersion.decode(b'{"counter":"+0007","timestamp":"-5"}') == DataVersion(timestamp=-5, counter=7)
    for bad in ('"' + "9" * 5000 + '"', '"9223372036854775808"', '"\u00b2"', '"1e3"'):
        with pytest.raises(CodecError):
            DataVersion.decode(b'{"counter":%s,"timestamp":1}' % bad.encode())


# ---------------------------------------------------------------------------
# Broker config files (toJson(true): PrettyFormat)
# ---------------------------------------------------------------------------

CONFIG_FILES = sorted((STORE_DUMP / "config").glob("*.json*")) + sorted((STORE_DUMP_CRASHED / "config").glob("*.json*"))


@pytest.mark.parametrize("path", CONFIG_FILES, ids=[f"{p.parent.parent.name}/{p.name}" for p in CONFIG_FILES])
def test_config_file_identity(path: Any) -> None:
    data = path.read_bytes()
    doc = decode_config_file(path.name, data)
    assert encode_config_file(doc) == data
    # the compact form (what the slave-sync requests carry) parses back to the same document
    assert type(doc).decode(doc.encode()) == doc


def test_config_file_values() -> None:
    topics = decode_config_file("topics.json", (STORE_DUMP / "config" / "topics.json").read_bytes())
    assert isinstance(topics, TopicConfigSerializeWrapper)
    assert topics.topic_config_table["SCHEDULE_TOPIC_XXXX"].read_queue_nums == 18
    offsets = decode_config_file("consumerOffset.json", (STORE_DUMP / "config" / "consumerOffset.json").read_bytes())
    assert offsets.offset_table["Batch_T_golden@Batch_CG_golden"] == {0: 0, 1: 0, 2: 0, 3: 10}  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# fastjson writer details (from fastjson 1.2.69's serializers)
# ---------------------------------------------------------------------------


def test_pretty_format_shapes() -> None:
    dumps = fastjson.dumps
    assert dumps(fastjson.Bean(), pretty=True) == "{\n\t\n}"  # a bean always breaks the line
    assert dumps({}, pretty=True) == "{}"
    assert dumps([], pretty=True) == "[]"
    assert dumps({1: 2, 3: 4}, pretty=True) == "{1:2,3:4\n}"  # no break before non-string keys
    assert dumps({"a": [1, 2]}, pretty=True) == '{\n\t"a":[\n\t\t1,\n\t\t2\n\t]\n}'
    assert dumps({"a": fastjson.CompactArray([1, 2])}, pretty=True) == '{\n\t"a":[1,2]\n}'
    assert dumps(fastjson.Bean(a=fastjson.Bean(b=1)), pretty=True) == '{\n\t"a":{\n\t\t"b":1\n\t}\n}'
    assert dumps({"a": None}, pretty=True) == "{\n}"  # size counts the skipped null
    filt = ConsumerFilterData(consumer_group="g", topic="t", expression="a > 1", expression_type="SQL92", born_time=5)
    assert b'"dead":false' in filt.encode()
    assert b'"dead":true' in dataclasses.replace(filt, dead_time=5).encode()


def test_bean_map_keys() -> None:
    mq = MessageQueue(topic="t", broker_name="b", queue_id=1)
    wrapper = OffsetSerializeWrapper(offset_table={mq: 7})
    assert wrapper.encode() == b'{"offsetTable":{{"brokerName":"b","queueId":1,"topic":"t"}:7}}'
    assert wrapper.encode(pretty=True) == (
        b'{\n\t"offsetTable":{{\n\t\t\t"brokerName":"b",\n\t\t\t"queueId":1,\n\t\t\t"topic":"t"\n\t\t}:7\n\t}\n}'
    )
    as_string = wrapper.encode(non_string_keys_as_string=True)
    assert as_string == b'{"offsetTable":{"{\\"brokerName\\":\\"b\\",\\"queueId\\":1,\\"topic\\":\\"t\\"}":7}}'
    for data in (wrapper.encode(), wrapper.encode(pretty=True), as_string):
        assert OffsetSerializeWrapper.decode(data) == wrapper


@pytest.mark.parametrize(
    ("text", "default", "browser"),
    [
        ("a/b", '"a/b"', '"a\\/b"'),
        ('q"\\', '"q\\"\\\\"', '"q\\"\\\\"'),
        ("\b\t\n\f\r", '"\\b\\t\\n\\f\\r"', '"\\b\\t\\n\\f\\r"'),
        ("\x00\x01\x0b\x1f", '"\\u0000\\u0001\\u000B\\u001F"', '"\\u0000\\u0001\\u000B\\u001F"'),
        ("\x7f\x85\x9f\xa0", '"\\u007F\\u0085\\u009F\xa0"', '"\\u007F\\u0085\\u009F\\u00A0"'),
        ("\u2028\u2029", '"\\u2028\\u2029"', '"\\u2028\\u2029"'),
        ("é日本", '"é日本"', '"\\u00E9\\u65E5\\u672C"'),
        ("\U0001f600", '"\U0001f600"', '"\\uD83D\\uDE00"'),
    ],
)
def test_string_escapes(text: str, default: str, browser: str) -> None:
    assert fastjson.quote(text) == default
    assert fastjson.quote(text, browser_compatible=True) == browser
    assert fastjson.loads(default) == text
    assert fastjson.loads(browser) == text


def test_big_longs_and_doubles() -> None:
    version = DataVersion(timestamp=2**60, counter=1)
    assert version.encode() == b'{"counter":1,"timestamp":1152921504606846976}'
    assert version.encode(browser_compatible=True) == b'{"counter":1,"timestamp":"1152921504606846976"}'
    assert DataVersion.decode(version.encode(browser_compatible=True)) == version
    cases = [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (12345678.9, "1.23456789E7"),
        (0.2998800479808077, "0.2998800479808077"),
        (5e-324, "4.9E-324"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (math.nan, "null"),
        (math.inf, "null"),
    ]
    for value, text in cases:
        assert fastjson.java_double(value) == text
        if text != "null":
            assert float(text) == value or value == 5e-324


def test_build_subscription() -> None:
    sub = build_subscription("T", "TagA || TagB||TagA")
    assert sub.tags_set == ["TagA", "TagB"]
    assert sub.code_set == [2598919, 2598920]
    assert build_subscription("T", "").sub_string == "*"
    assert build_subscription("T", "a > 1", "SQL92").tags_set == []


# ---------------------------------------------------------------------------
# Generated round trips for every class, driven by the declared property codecs
# ---------------------------------------------------------------------------

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
_JS_SAFE = 2**53 - 1
_ANY = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-_JS_SAFE, _JS_SAFE)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner.filter(lambda v: v is not None), max_size=3)
    ),
    max_leaves=6,
)


def value_strategy(codec: Codec[Any]) -> st.SearchStrategy[Any]:
    kind = codec.kind
    if kind == "str":
        return _TEXT
    if kind == "int":
        return st.integers(-(2**31), 2**31 - 1)
    if kind == "long":
        return st.integers(-(2**63), 2**63 - 1)
    if kind == "bool":
        return st.booleans()
    if kind == "double":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "enum":
        return st.sampled_from(list(codec.args[0]))
    if kind in ("list", "set", "array"):
        return st.lists(st.none() | value_strategy(codec.args[0]), max_size=3)
    if kind == "map":
        values = value_strategy(codec.args[1]).filter(lambda v: v is not None)  # null map values are not written
        return st.dictionaries(value_strategy(codec.args[0]), values, max_size=3)
    if kind == "obj":
        return st.deferred(lambda: body_strategy(codec.args[0]()))
    return _ANY


def body_strategy(cls: type[JsonBody]) -> st.SearchStrategy[JsonBody]:
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kwargs = {}
    for spec in cls.props:
        f = fields[spec.attr]
        value = value_strategy(spec.codec)
        nullable = f.default is None and f.default_factory is dataclasses.MISSING and spec.computed is None
        kwargs[spec.attr] = st.none() | value if nullable else value
    return st.builds(cls, **kwargs)


FEATURES = [
    {},
    {"browser_compatible": True, "sort_map_keys": True},
    {"non_string_keys_as_string": True},
    {"pretty": True},
]


@pytest.mark.parametrize("cls", BODY_TYPES, ids=[c.__name__ for c in BODY_TYPES])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_generated_round_trip(cls: type[JsonBody], data: st.DataObject) -> None:
    body = data.draw(body_strategy(cls))
    for features in FEATURES:
        encoded = body.encode(**features)
        assert cls.decode(encoded) == body, features


_LINE_TOPIC = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc")), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    configs=st.lists(
        st.builds(
            TopicConfig,
            topic_name=_LINE_TOPIC,
            read_queue_nums=st.integers(-(2**31), 2**31 - 1),
            write_queue_nums=st.integers(0, 64),
            perm=st.integers(0, 7),
            topic_filter_type=st.sampled_from(list(TopicFilterType)),
        ),
        max_size=5,
    ),
    version=st.builds(DataVersion, timestamp=st.integers(0, 2**62), counter=st.integers(0, 2**40)),
    servers=st.lists(_TEXT, max_size=3),
)
def test_generated_compressed_register(configs: list[TopicConfig], version: DataVersion, servers: list[str]) -> None:
    table = {c.topic_name: c for c in configs}
    body = RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(topic_config_table=table, data_version=version),
        filter_server_list=servers,
    )
    data = body.encode(compress=True)
    again = RegisterBrokerBody.decode(data)
    assert again == body and again.compressed_form
    assert again.encode() == data


# ---------------------------------------------------------------------------
# Bad input raises CodecError and nothing else
# ---------------------------------------------------------------------------

_SEEDS = [body for _, body in GOLDEN] + [ROUTE_V4_9_4, REGISTER_COMPRESSED]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(draw(st.sampled_from(_SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.integers(0, 3))
        pos = draw(st.integers(0, len(data)))
        if op == 0 and pos < len(data):
            data[pos] = draw(st.integers(0, 255))
        elif op == 1:
            data[pos:pos] = draw(
                st.sampled_from([b"{", b"}", b"[", b"]", b'"', b",", b":", b"null", b"1e999", b"-", b"9" * 30])
            )
        elif op == 2:
            del data[pos : pos + draw(st.integers(1, 8))]
        else:
            data = data[:pos]
    return bytes(data)


def _decode_all(data: bytes) -> None:
    for cls in BODY_TYPES:
        try:
            cls.decode(data)
        except CodecError:
            pass


@settings(max_examples=300, deadline=None)
@given(data=mutated())
def test_mutated_bodies_raise_codec_error_only(data: bytes) -> None:
    _decode_all(data)


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=64) | st.text(max_size=32).map(lambda s: s.encode("utf-8", "surrogatepass")))
def test_random_bytes_raise_codec_error_only(data: bytes) -> None:
    _decode_all(data)


@settings(max_examples=150, deadline=None)
@given(value=_ANY)
def test_wrong_shapes_raise_codec_error_only(value: Any) -> None:
    data = fastjson.dump_bytes({"offsetTable": value, "table": value, "topicList": value, "mqSet": value, "x": value})
    _decode_all(data)


def test_compressed_register_body_refuses_a_decompression_bomb(monkeypatch) -> None:
    import zlib

    from rocketpy.codecs import CodecError
    from rocketpy.codecs.bodies import register

    monkeypatch.setattr(register, "MAX_INFLATED_REGISTER_BODY", 1024)
    bomb = zlib.compress(b"\0" * 10_000, 9)
    with pytest.raises(CodecError, match="inflates past"):
        register.RegisterBrokerBody.decode_compressed(bomb)


def test_fastjson_dumps_leaves_nothing_to_the_cyclic_collector() -> None:
    """Every body the servers write goes through dumps: its nested writers, which call each other, must
    not leave a reference cycle per call (the fuzzer's broker had dozens of them waiting for the gc)."""
    import gc

    value = fastjson.Bean(topic="T", queues=[1, 2], table={"k": fastjson.Bean(a=None, b=[True, 1.5])}, tags={"x"})
    gc.collect()
    gc.disable()
    try:
        for pretty in (False, True):
            for _ in range(50):
                assert fastjson.dumps(value, pretty=pretty, sort_map_keys=True).startswith("{")
        with pytest.raises(TypeError):
            fastjson.dumps({"bad": object()})
        assert gc.collect() == 0
    finally:
        gc.enable()


@pytest.mark.parametrize(("cls", "body"), GOLDEN, ids=[f"{c.__name__}-{i}" for i, (c, _) in enumerate(GOLDEN)])
def test_a_writer_that_joins_its_pieces_early_writes_the_same(cls: type[JsonBody], body: bytes,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastjson, "SPILL_PARTS", 3)
    assert cls.decode(body).encode() == body


def test_a_big_body_is_written_without_holding_all_its_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    # a consume stats body of every group on every topic is hundreds of thousands of short strings: held
    # to the end, they would take pymalloc pools that later objects keep resident
    held: list[int] = []
    real_write = fastjson._Writer.write

    def write(self, v, level):  # type: ignore[no-untyped-def]
        held.append(len(self.parts))
        real_write(self, v, level)

    value = {f"group{g}": fastjson.Bean(offsets={f"q{q}": q * g for q in range(50)}) for g in range(400)}
    plain = fastjson.dumps(value)
    monkeypatch.setattr(fastjson._Writer, "write", write)
    assert fastjson.dumps(value) == plain
    assert len(plain) > 200_000 and max(held) < fastjson.SPILL_PARTS + 8  # a key and its colon come between two


def test_a_streamed_list_is_written_as_the_whole_body_would_be() -> None:
    from rocketpy.codecs.bodies import ConsumeStats, ConsumeStatsList, MessageQueue, OffsetWrapper

    def stats(group: int) -> dict[str, list[ConsumeStats]]:
        table = {MessageQueue(topic=f"T{t}", broker_name="b", queue_id=q): OffsetWrapper(broker_offset=q + t,
                                                                                     consumer_offset=q)
                 for t in range(3) for q in range(4)}
        return {f"g{group}": [ConsumeStats(offset_table=table, consume_tps=0.5)]}

    whole = ConsumeStatsList(consume_stats_list=[stats(g) for g in range(5)], broker_addr="1.2.3.4:10911",
                             total_diff=60)
    streamed = ConsumeStatsList(broker_addr="1.2.3.4:10911")

    def groups():  # type: ignore[no-untyped-def]
        for g in range(5):
            item = stats(g)
            streamed.total_diff += sum(s.total_diff() for s in item[f"g{g}"])
            yield item

    for features in ({}, {"browser_compatible": True}):
        streamed.total_diff = 0
        assert streamed.encode_streamed("consume_stats_list", groups(), **features) == whole.encode(**features)
    with pytest.raises(TypeError):
        streamed.encode_streamed("broker_addr", iter(()))
    with pytest.raises(AttributeError):
        streamed.encode_streamed("no_such_list", iter(()))
    streamed.total_diff = 0
    assert streamed.encode_streamed("consume_stats_list", groups(), pretty=True) == whole.encode(pretty=True)


_COLLECTIONS = ("list", "set", "array", "map")
_ALL_FEATURES = [dict(zip(("browser_compatible", "non_string_keys_as_string", "sort_map_keys", "pretty"), bits))
                 for bits in itertools.product((False, True), repeat=4)]


def _collection_paths(doc: JsonBody) -> list[tuple[str, ...]]:
    """The non-null list and map properties of ``doc`` and of the beans its properties hold, as paths."""
    paths: list[tuple[str, ...]] = []
    for spec in doc.props:
        value = getattr(doc, spec.attr)
        if value is None:
            continue
        if spec.codec.kind in _COLLECTIONS:
            paths.append((spec.attr,))
        elif spec.codec.kind == "obj" and isinstance(value, JsonBody):
            paths.extend((spec.attr, *p) for p in _collection_paths(value) if len(p) == 1)
    return paths


def _streamable() -> list[tuple[type[JsonBody], bytes, tuple[str, ...]]]:
    """The golden bodies with a list or map property (of their own or of a bean they hold), and its path."""
    return [(cls, body, path) for cls, body in GOLDEN for path in _collection_paths(cls.decode(body))]


def _with(doc: JsonBody, path: tuple[str, ...], value: Any, extra: dict[str, Any]) -> JsonBody:
    """A copy of ``doc`` whose property at ``path`` is ``value``, with ``extra`` (unknown properties) kept
    by every bean on the path; ``doc`` is left as it is."""
    import copy

    out = copy.copy(doc)
    out.extra = {**doc.extra, **extra}
    if len(path) == 1:
        setattr(out, path[0], value)
    else:
        setattr(out, path[0], _with(getattr(doc, path[0]), path[1:], value, extra))
    return out


def _leaf(doc: JsonBody, path: tuple[str, ...]) -> tuple[JsonBody, Any]:
    for name in path[:-1]:
        doc = getattr(doc, name)
    return doc, getattr(doc, path[-1])


@pytest.mark.parametrize(("cls", "body", "path"), _streamable(), ids=lambda v: getattr(v, "__name__", None))
def test_encode_streamed_is_encode_for_every_feature_null_value_and_kept_property(
    cls: type[JsonBody], body: bytes, path: tuple[str, ...]
) -> None:
    # whatever the list or map holds (null items and values too), however deep its bean, and whatever unknown
    # properties the beans kept, the streamed writing is the whole one, byte for byte, under every feature
    whole = cls.decode(body)
    owner, items = _leaf(whole, path)
    spec = owner._spec(path[-1])
    kept = {"aUnknown": [1, {"x": None}], "zzUnknown": "kept"}
    if spec.codec.kind == "map":
        nulled = {k: None if i % 2 == 0 else v for i, (k, v) in enumerate(items.items())}
        if spec.codec.args[0].kind == "str":
            nulled["aNullValue"] = None
        variants = [(items, {}), (nulled, {}), (items, kept)]
        empty: Any = {}
    else:
        variants = [(items, {}), ([None, *items, None], {}), (items, kept)]
        empty = []
    for listed, extra in variants:
        full, streamed = _with(whole, path, listed, extra), _with(whole, path, empty, extra)
        for features in _ALL_FEATURES:
            expected = full.encode(**features)
            given_as = [iter(listed)] if spec.codec.kind != "map" else [listed, iter(list(listed.items()))]
            for source in given_as:
                assert streamed.encode_streamed(path, source, **features) == expected, features
    streamed = _with(whole, path, empty, {})
    assert streamed.encode_streamed(path, items) == body  # the property's own place, not appended
    assert _leaf(streamed, path)[1] == empty  # the body itself is left as it was


_GOLDEN_CONFIG_FILES = sorted(p for p in STORE_DUMP.parent.glob("store-dump*/**/config/*.json*"))


@pytest.mark.skipif(not _GOLDEN_CONFIG_FILES, reason="no golden config files vendored under protocol/golden")
def test_encode_streamed_writes_the_golden_config_files() -> None:
    # the broker writes its config files streamed: the bytes are those Java wrote, wherever encode matches them
    compared = 0
    for path in _GOLDEN_CONFIG_FILES:
        data = path.read_bytes()
        doc = decode_config_file(path.name, data)
        if encode_config_file(doc) != data:
            continue
        for attrs in _collection_paths(doc):
            _, items = _leaf(doc, attrs)
            streamed = _with(doc, attrs, type(items)(), {})
            assert streamed.encode_streamed(attrs, items, pretty=True) == data, (path, attrs)
            compared += 1
    assert compared >= 30


def test_register_body_written_from_a_given_topic_table_is_the_whole_one() -> None:
    # the broker registers its live table without copying it into the body: same bytes, either form
    for data, compressed in ((REGISTER_PLAIN, False), (REGISTER_COMPRESSED, True)):
        whole = RegisterBrokerBody.decode(data, compressed)
        wrapper = whole.topic_config_serialize_wrapper
        assert wrapper is not None and len(wrapper.topic_config_table) > 3
        empty = RegisterBrokerBody(
            topic_config_serialize_wrapper=TopicConfigSerializeWrapper(topic_config_table={},
                                                                       data_version=wrapper.data_version),
            filter_server_list=whole.filter_server_list,
        )
        assert empty.encode_with_topics(wrapper.topic_config_table, compressed) == data
        with pytest.raises(ValueError):  # a table of its own would be dropped silently
            whole.encode_with_topics(wrapper.topic_config_table, compressed)


def test_a_long_document_as_bytes_is_its_text_encoded() -> None:
    # dump_bytes writes each joined run of pieces to its buffer as UTF-8: the same bytes as the whole text's,
    # a lone surrogate as '?' (Java's String.getBytes) wherever the runs are cut
    value = {f"k{i}\u00e9": [f"v\ud800{i}", "\u2028/\U0001f600", i * 1.5, None] for i in range(3000)}
    for features in _ALL_FEATURES:
        text = fastjson.dumps(value, **features)
        assert len(text) > 100_000
        assert fastjson.dump_bytes(value, **features) == text.encode("utf-8", errors="replace"), features
