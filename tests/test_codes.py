"""Spot checks of the code tables against well-known RocketMQ 4.9.8 facts."""

from __future__ import annotations

import json

import pytest

from rocketpy.codecs.codes import (
    CURRENT_VERSION,
    CMResult,
    CompressionType,
    ConsumeFromWhere,
    ConsumeType,
    ExpressionType,
    LanguageCode,
    LocalTransactionState,
    MessageConst,
    MessageModel,
    MessageSysFlag,
    MessageType,
    MixAll,
    MQVersion,
    PermName,
    PullSysFlag,
    RemotingCommandFlag,
    RequestCode,
    RequestType,
    ResponseCode,
    SendStatus,
    SerializeType,
    SubscriptionSysFlag,
    TopicFilterType,
    TopicSysFlag,
    request_code_name,
    response_code_name,
    version_desc,
    version_of,
)


@pytest.mark.parametrize(
    ("member", "value"),
    [
        (RequestCode.SEND_MESSAGE, 10),
        (RequestCode.PULL_MESSAGE, 11),
        (RequestCode.QUERY_CONSUMER_OFFSET, 14),
        (RequestCode.UPDATE_CONSUMER_OFFSET, 15),
        (RequestCode.HEART_BEAT, 34),
        (RequestCode.UNREGISTER_CLIENT, 35),
        (RequestCode.CONSUMER_SEND_MSG_BACK, 36),
        (RequestCode.END_TRANSACTION, 37),
        (RequestCode.GET_CONSUMER_LIST_BY_GROUP, 38),
        (RequestCode.CHECK_TRANSACTION_STATE, 39),
        (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, 40),
        (RequestCode.LOCK_BATCH_MQ, 41),
        (RequestCode.UNLOCK_BATCH_MQ, 42),
        (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, 50),
        (RequestCode.REGISTER_BROKER, 103),
        (RequestCode.UNREGISTER_BROKER, 104),
        (RequestCode.GET_ROUTEINFO_BY_TOPIC, 105),
        (RequestCode.GET_BROKER_CLUSTER_INFO, 106),
        (RequestCode.GET_TOPICS_BY_CLUSTER, 224),
        (RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, 300),
        (RequestCode.CONSUME_MESSAGE_DIRECTLY, 309),
        (RequestCode.SEND_MESSAGE_V2, 310),
        (RequestCode.SEND_BATCH_MESSAGE, 320),
        (RequestCode.SEND_REPLY_MESSAGE_V2, 325),
        (RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, 326),
        (RequestCode.DELETE_EXPIRED_COMMITLOG, 329),
    ],
)
def test_request_codes(member: RequestCode, value: int) -> None:
    assert member == value


def test_request_code_table_shape() -> None:
    # 95 constants in RequestCode.java, no value shared by two names.
    assert len(RequestCode.__members__) == 95
    assert len(list(RequestCode)) == 95


@pytest.mark.parametrize(
    ("member", "value"),
    [
        (ResponseCode.SUCCESS, 0),
        (ResponseCode.SYSTEM_ERROR, 1),
        (ResponseCode.SYSTEM_BUSY, 2),
        (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, 3),
        (ResponseCode.TRANSACTION_FAILED, 4),
        (ResponseCode.FLUSH_DISK_TIMEOUT, 10),
        (ResponseCode.SLAVE_NOT_AVAILABLE, 11),
        (ResponseCode.FLUSH_SLAVE_TIMEOUT, 12),
        (ResponseCode.NO_PERMISSION, 16),
        (ResponseCode.TOPIC_NOT_EXIST, 17),
        (ResponseCode.PULL_NOT_FOUND, 19),
        (ResponseCode.PULL_RETRY_IMMEDIATELY, 20),
        (ResponseCode.PULL_OFFSET_MOVED, 21),
        (ResponseCode.QUERY_NOT_FOUND, 22),
        (ResponseCode.SUBSCRIPTION_NOT_LATEST, 25),
        (ResponseCode.TRANSACTION_STATE_UNKNOW, 202),
        (ResponseCode.CONSUMER_NOT_ONLINE, 206),
        (ResponseCode.NO_MESSAGE, 208),
        (ResponseCode.FLOW_CONTROL, 215),
    ],
)
def test_response_codes(member: ResponseCode, value: int) -> None:
    assert member == value


def test_response_code_table_shape() -> None:
    # 5 from RemotingSysResponseCode + 32 from ResponseCode, no aliases.
    assert len(ResponseCode.__members__) == 37
    assert len(list(ResponseCode)) == 37


def test_code_names() -> None:
    assert request_code_name(310) == "SEND_MESSAGE_V2"
    assert request_code_name(RequestCode.HEART_BEAT) == "HEART_BEAT"
    assert request_code_name(9999) == "UNKNOWN(9999)"
    assert request_code_name(-1) == "UNKNOWN(-1)"
    assert response_code_name(0) == "SUCCESS"
    assert response_code_name(17) == "TOPIC_NOT_EXIST"
    assert response_code_name(16) == "NO_PERMISSION"
    assert response_code_name(300) == "UNKNOWN(300)"


def test_language_code() -> None:
    assert LanguageCode.JAVA == 0
    assert LanguageCode.CPP == 1
    assert LanguageCode.DOTNET == 2
    assert LanguageCode.PYTHON == 3
    assert LanguageCode.GO == 9
    assert LanguageCode.OMS == 11
    assert LanguageCode.RUST == 12
    assert LanguageCode["CPP"] is LanguageCode.CPP
    assert LanguageCode(1).name == "CPP"
    assert [m.value for m in LanguageCode] == list(range(13))


def test_serialize_and_flags() -> None:
    assert SerializeType.JSON == 0
    assert SerializeType.ROCKETMQ == 1
    assert RemotingCommandFlag.RESPONSE == 1
    assert RemotingCommandFlag.ONEWAY == 2
    assert RequestType.STREAM == 0
    assert MixAll.REQ_T == "ReqT"


def test_mq_version() -> None:
    assert MQVersion.V3_0_0_SNAPSHOT == 0
    assert MQVersion.V3_0_0_FINAL == 15
    assert MQVersion.V4_0_0 == 213
    assert MQVersion.V4_9_8 == 409
    assert MQVersion.HIGHER_VERSION == len(MQVersion) - 1
    assert list(MQVersion)[-2] is MQVersion.V5_9_9
    # Values are the Java ordinals: dense, no gaps, no aliases.
    assert [m.value for m in MQVersion] == list(range(len(MQVersion)))
    assert len(MQVersion.__members__) == len(MQVersion)
    assert CURRENT_VERSION is MQVersion.V4_9_8
    assert "CURRENT" not in MQVersion.__members__


def test_version_desc() -> None:
    assert version_desc(409) == "V4_9_8"
    assert version_desc(0) == "V3_0_0_SNAPSHOT"
    assert version_desc(MQVersion.HIGHER_VERSION) == "HIGHER_VERSION"
    assert version_desc(100_000) == "HIGHER_VERSION"
    assert version_of(100_000) is MQVersion.HIGHER_VERSION
    with pytest.raises(ValueError):
        version_desc(-1)


def test_perm_name() -> None:
    assert PermName.PERM_PRIORITY == 8
    assert PermName.PERM_READ == 4
    assert PermName.PERM_WRITE == 2
    assert PermName.PERM_INHERIT == 1
    assert PermName.perm_to_string(6) == "RW-"
    assert PermName.perm_to_string(7) == "RWX"
    assert PermName.perm_to_string(4) == "R--"
    assert PermName.perm_to_string(2) == "-W-"
    assert PermName.perm_to_string(0) == "---"
    # PRIORITY has no letter.
    assert PermName.perm_to_string(8 | 6) == "RW-"
    assert PermName.is_readable(6) and PermName.is_writeable(6)
    assert not PermName.is_inherited(6)
    assert PermName.is_inherited(1)


def test_message_sys_flag() -> None:
    f = MessageSysFlag
    assert f.COMPRESSED_FLAG == 1
    assert f.MULTI_TAGS_FLAG == 2
    assert f.TRANSACTION_NOT_TYPE == 0
    assert f.TRANSACTION_PREPARED_TYPE == 4
    assert f.TRANSACTION_COMMIT_TYPE == 8
    assert f.TRANSACTION_ROLLBACK_TYPE == 12
    assert f.BORNHOST_V6_FLAG == 16
    assert f.STOREHOSTADDRESS_V6_FLAG == 32
    assert f.NEED_UNWRAP_FLAG == 64
    assert f.INNER_BATCH_FLAG == 128
    assert f.COMPRESSION_ZLIB_TYPE == 0x300

    prepared = f.COMPRESSED_FLAG | f.TRANSACTION_PREPARED_TYPE | f.BORNHOST_V6_FLAG
    assert f.transaction_value(prepared) == f.TRANSACTION_PREPARED_TYPE
    committed = f.reset_transaction_value(prepared, f.TRANSACTION_COMMIT_TYPE)
    assert committed == 0x1 | 0x8 | 0x10
    assert f.transaction_value(committed) == f.TRANSACTION_COMMIT_TYPE
    assert f.reset_transaction_value(committed, f.TRANSACTION_NOT_TYPE) == 0x11
    assert f.transaction_value(f.TRANSACTION_ROLLBACK_TYPE) == 12
    assert f.clear_compressed_flag(prepared) == 0x14
    assert type(f.transaction_value(prepared)) is int


def test_compression_type() -> None:
    f = MessageSysFlag
    assert f.compression_type(f.COMPRESSED_FLAG) is CompressionType.ZLIB  # pre-4.9.5
    assert f.compression_type(f.COMPRESSION_LZ4_TYPE | 1) is CompressionType.LZ4
    assert f.compression_type(f.COMPRESSION_ZSTD_TYPE) is CompressionType.ZSTD
    assert f.compression_type(f.COMPRESSION_ZLIB_TYPE) is CompressionType.ZLIB
    assert CompressionType.ZSTD.compression_flag == f.COMPRESSION_ZSTD_TYPE
    with pytest.raises(ValueError):
        f.compression_type(0x400)


def test_pull_sys_flag() -> None:
    p = PullSysFlag
    assert p.FLAG_COMMIT_OFFSET == 1
    assert p.FLAG_SUSPEND == 2
    assert p.FLAG_SUBSCRIPTION == 4
    assert p.FLAG_CLASS_FILTER == 8
    assert p.FLAG_LITE_PULL_MESSAGE == 16
    flag = p.build_sys_flag(True, True, True, False)
    assert flag == 7
    assert p.build_sys_flag(False, True, False, False, lite_pull=True) == 18
    assert p.clear_commit_offset_flag(flag) == 6
    assert p.has_commit_offset_flag(flag)
    assert not p.has_commit_offset_flag(p.clear_commit_offset_flag(flag))
    assert p.has_suspend_flag(flag) and p.has_subscription_flag(flag)
    assert not p.has_class_filter_flag(flag)
    assert not p.has_lite_pull_flag(flag)
    assert p.has_lite_pull_flag(16)
    # Bits above the known ones survive, as with Java's int arithmetic.
    assert p.clear_commit_offset_flag(0x101) == 0x100


def test_topic_and_subscription_sys_flag() -> None:
    t = TopicSysFlag
    assert t.FLAG_UNIT == 1 and t.FLAG_UNIT_SUB == 2
    assert t.build_sys_flag(True, True) == 3
    assert t.build_sys_flag(False, True) == 2
    assert t.set_unit_flag(0) == 1
    assert t.clear_unit_flag(3) == 2
    assert t.set_unit_sub_flag(1) == 3
    assert t.clear_unit_sub_flag(3) == 1
    assert t.has_unit_flag(1) and not t.has_unit_flag(2)
    assert t.has_unit_sub_flag(2) and not t.has_unit_sub_flag(1)
    s = SubscriptionSysFlag
    assert s.build_sys_flag(True) == 1 and s.build_sys_flag(False) == 0
    assert s.has_unit_flag(s.set_unit_flag(0))
    assert s.clear_unit_flag(1) == 0


def test_name_enums_serialize_by_name() -> None:
    assert ConsumeType.CONSUME_PASSIVELY.value == "CONSUME_PASSIVELY"
    assert str(MessageModel.CLUSTERING) == "CLUSTERING"
    assert f"{ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET}" == "CONSUME_FROM_FIRST_OFFSET"
    body = {"consumeType": ConsumeType.CONSUME_ACTIVELY, "f": TopicFilterType.SINGLE_TAG}
    assert json.dumps(body) == '{"consumeType": "CONSUME_ACTIVELY", "f": "SINGLE_TAG"}'
    assert ConsumeType("CONSUME_PASSIVELY") is ConsumeType.CONSUME_PASSIVELY
    assert [m.name for m in ConsumeFromWhere] == [
        "CONSUME_FROM_LAST_OFFSET",
        "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
        "CONSUME_FROM_MIN_OFFSET",
        "CONSUME_FROM_MAX_OFFSET",
        "CONSUME_FROM_FIRST_OFFSET",
        "CONSUME_FROM_TIMESTAMP",
    ]
    assert [m.value for m in LocalTransactionState] == [
        "COMMIT_MESSAGE",
        "ROLLBACK_MESSAGE",
        "UNKNOW",
    ]
    assert [m.value for m in SendStatus] == [
        "SEND_OK",
        "FLUSH_DISK_TIMEOUT",
        "FLUSH_SLAVE_TIMEOUT",
        "SLAVE_NOT_AVAILABLE",
    ]
    assert CMResult.CR_SUCCESS == "CR_SUCCESS"
    assert MessageType.Trans_Msg_Half == 1
    assert ExpressionType.TAG == "TAG" and ExpressionType.SQL92 == "SQL92"
    assert ExpressionType.is_tag_type(None) and ExpressionType.is_tag_type("")
    assert not ExpressionType.is_tag_type("SQL92")


def test_message_const() -> None:
    m = MessageConst
    assert m.PROPERTY_KEYS == "KEYS"
    assert m.PROPERTY_TAGS == "TAGS"
    assert m.PROPERTY_WAIT_STORE_MSG_OK == "WAIT"
    assert m.PROPERTY_DELAY_TIME_LEVEL == "DELAY"
    assert m.PROPERTY_REAL_QUEUE_ID == "REAL_QID"
    assert m.PROPERTY_TRANSACTION_PREPARED == "TRAN_MSG"
    assert m.PROPERTY_PRODUCER_GROUP == "PGROUP"
    assert m.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX == "UNIQ_KEY"
    assert m.PROPERTY_CONSUME_START_TIMESTAMP == "CONSUME_START_TIME"
    assert m.PROPERTY_MESSAGE_REPLY_TO_CLIENT == "REPLY_TO_CLIENT"
    assert m.KEY_SEPARATOR == " "
    assert isinstance(m.SYSTEM_PROPERTIES, frozenset)
    assert len(m.SYSTEM_PROPERTIES) == 31
    assert {"KEYS", "TAGS", "UNIQ_KEY", "TRACE_ON", "MSG_REGION"} <= m.SYSTEM_PROPERTIES
    # Java leaves these out of STRING_HASH_SET.
    assert "INNER_MULTI_DISPATCH" not in m.SYSTEM_PROPERTIES
    assert "TRAN_PREPARED_QUEUE_OFFSET" not in m.SYSTEM_PROPERTIES


def test_mix_all_constants() -> None:
    assert MixAll.AUTO_CREATE_TOPIC_KEY_TOPIC == MixAll.DEFAULT_TOPIC == "TBW102"
    assert MixAll.BENCHMARK_TOPIC == "BenchmarkTest"
    assert MixAll.SCHEDULE_TOPIC == "SCHEDULE_TOPIC_XXXX"
    assert MixAll.RMQ_SYS_TRANS_HALF_TOPIC == "RMQ_SYS_TRANS_HALF_TOPIC"
    assert MixAll.RMQ_SYS_TRANS_OP_HALF_TOPIC == "RMQ_SYS_TRANS_OP_HALF_TOPIC"
    assert MixAll.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC == "TRANS_CHECK_MAX_TIME_TOPIC"
    assert MixAll.RMQ_SYS_TRACE_TOPIC == "RMQ_SYS_TRACE_TOPIC"
    assert MixAll.CID_SYS_RMQ_TRANS == "CID_RMQ_SYS_TRANS"
    assert MixAll.DEFAULT_PRODUCER_GROUP == "DEFAULT_PRODUCER"
    assert MixAll.CLIENT_INNER_PRODUCER_GROUP == "CLIENT_INNER_PRODUCER"
    assert MixAll.TOOLS_CONSUMER_GROUP == "TOOLS_CONSUMER"
    assert MixAll.MONITOR_CONSUMER_GROUP == "__MONITOR_CONSUMER"
    assert MixAll.MASTER_ID == 0
    assert MixAll.DEFAULT_MESSAGE_DELAY_LEVEL.split()[0] == "1s"
    assert len(MixAll.DEFAULT_MESSAGE_DELAY_LEVEL.split()) == 18


def test_mix_all_helpers() -> None:
    assert MixAll.get_retry_topic("cg") == "%RETRY%cg"
    assert MixAll.get_dlq_topic("cg") == "%DLQ%cg"
    assert MixAll.get_reply_topic("DefaultCluster") == "DefaultCluster_REPLY_TOPIC"
    assert MixAll.is_sys_consumer_group("CID_RMQ_SYS_TRANS")
    assert not MixAll.is_sys_consumer_group("my_group")
    assert MixAll.is_system_topic("TBW102")
    assert MixAll.is_system_topic("SCHEDULE_TOPIC_XXXX")
    assert MixAll.is_system_topic("rmq_sys_anything")
    assert not MixAll.is_system_topic("%RETRY%cg")
    assert MixAll.is_not_allowed_send_topic("RMQ_SYS_TRANS_HALF_TOPIC")
    assert not MixAll.is_not_allowed_send_topic("TBW102")
    assert not MixAll.is_topic_or_group_illegal("%RETRY%cg|a-b_C9")
    assert MixAll.is_topic_or_group_illegal("a.b")
    assert MixAll.is_topic_or_group_illegal("é")
    assert not MixAll.is_topic_or_group_illegal("")
    assert MixAll.is_lmq("%LMQ%x") and not MixAll.is_lmq(None)
    assert MixAll.broker_vip_channel(True, "10.0.0.1:10911") == "10.0.0.1:10909"
    assert MixAll.broker_vip_channel(False, "10.0.0.1:10911") == "10.0.0.1:10911"
    assert MixAll.delay_level_to_queue_id(3) == 2
    assert MixAll.queue_id_to_delay_level(2) == 3
