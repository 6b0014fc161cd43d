"""Typed CommandCustomHeader classes: Java field typing, the code registry, and captured traffic."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rocketpy.codecs.headers as headers
from rocketpy.codecs.codes import MessageSysFlag, RequestCode, TopicFilterType
from rocketpy.codecs.errors import CodecError, MissingField
from rocketpy.codecs.headers import (
    HEADER_TYPES,
    REQUEST_HEADERS,
    RESPONSE_HEADERS,
    CommandHeader,
    CreateTopicRequestHeader,
    EndTransactionRequestHeader,
    FieldSpec,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    RpcRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    header_class,
)

INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)

#: Fields whose Java checkFields() only accepts some values.
CONSTRAINED: dict[tuple[str, str], list[Any]] = {
    ("CreateTopicRequestHeader", "topic_filter_type"): [t.value for t in TopicFilterType],
    ("EndTransactionRequestHeader", "commit_or_rollback"): [
        int(MessageSysFlag.TRANSACTION_NOT_TYPE),
        int(MessageSysFlag.TRANSACTION_COMMIT_TYPE),
        int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE),
    ],
    ("CheckTransactionStateResponseHeader", "commit_or_rollback"): [
        int(MessageSysFlag.TRANSACTION_COMMIT_TYPE),
        int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE),
    ],
}

NUMERIC = ("int", "Integer", "long", "Long", "double", "Double")


def _kind_strategy(kind: str) -> st.SearchStrategy[Any]:
    k = kind.lower()
    if k == "string":
        return st.text()
    if k in ("int", "integer"):
        return st.integers(*INT32)
    if k == "long":
        return st.integers(*INT64)
    if k == "boolean":
        return st.booleans()
    if k == "double":
        return st.floats(allow_nan=False, allow_infinity=False)
    raise AssertionError(kind)


def field_strategy(cls: type[CommandHeader], spec: FieldSpec) -> st.SearchStrategy[Any]:
    allowed = CONSTRAINED.get((cls.__name__, spec.attr))
    base = st.sampled_from(allowed) if allowed else _kind_strategy(spec.kind)
    if spec.primitive or spec.required:
        return base
    return st.none() | base


def header_strategy(cls: type[CommandHeader]) -> st.SearchStrategy[CommandHeader]:
    return st.builds(cls, **{spec.attr: field_strategy(cls, spec) for spec in cls.fields_spec})


def example(cls: type[CommandHeader]) -> CommandHeader:
    """A header with every field set to a simple valid value."""
    plain = {"string": "x", "int": 7, "integer": 7, "long": 7, "boolean": True, "double": 1.5}
    values = {}
    for spec in cls.fields_spec:
        allowed = CONSTRAINED.get((cls.__name__, spec.attr))
        values[spec.attr] = allowed[-1] if allowed else plain[spec.kind.lower()]
    return cls(**values)


def after_wire(h: CommandHeader) -> CommandHeader:
    """What a receiver sees: a null field is not sent, so it reads back as the Java initializer."""
    defaults = {f.name: f.default for f in dataclasses.fields(h)}  # type: ignore[arg-type]
    return dataclasses.replace(h, **{k: v for k, v in defaults.items() if getattr(h, k) is None})


def _ids(items: list[Any]) -> list[str]:
    return [getattr(i, "__name__", None) or f"{i[0].__name__}.{i[1].java_name}" for i in items]


# -- the class table ------------------------------------------------------------


def test_header_types_complete_and_consistent() -> None:
    assert len(HEADER_TYPES) == 79
    assert len(set(HEADER_TYPES)) == len(HEADER_TYPES)
    assert len({c.java_class for c in HEADER_TYPES}) == len(HEADER_TYPES)
    for cls in HEADER_TYPES:
        assert issubclass(cls, CommandHeader)
        assert cls.java_class.startswith("org.apache.rocketmq.common.protocol.header.")
        assert cls.java_class.rsplit(".", 1)[1] == cls.__name__
        assert cls.__name__ in headers.__all__
        names = [s.java_name for s in cls.fields_spec]
        assert len(set(names)) == len(names), cls
    fast = {c.__name__ for c in HEADER_TYPES if c.fast_codes}
    assert fast == {
        "SendMessageRequestHeaderV2",
        "SendMessageResponseHeader",
        "PullMessageRequestHeader",
        "PullMessageResponseHeader",
    }
    rpc = {c.__name__ for c in HEADER_TYPES if issubclass(c, RpcRequestHeader)}
    assert len(rpc) == 12
    for name in rpc:
        assert getattr(headers, name).fields_spec[-1].java_name == "bname"
    assert RpcRequestHeader not in HEADER_TYPES


def test_java_field_facts() -> None:
    """Wire names that are not plain camelCase, and Java field initializers."""
    spec = {s.attr: s for s in headers.UnregisterClientRequestHeader.fields_spec}
    assert spec["client_id"].java_name == "clientID" and spec["client_id"].required
    spec = {s.attr: s for s in headers.RegisterMessageFilterClassRequestHeader.fields_spec}
    assert spec["class_crc"].java_name == "classCRC"
    assert [s.java_name for s in SendMessageRequestHeaderV2.fields_spec] == [*"abcdefghijklmn", "bname"]
    assert RegisterBrokerRequestHeader().body_crc32 == 0
    assert RegisterBrokerRequestHeader().compressed is False
    assert CreateTopicRequestHeader().order is False
    assert EndTransactionRequestHeader().from_transaction_check is False
    assert SendMessageRequestHeader().unit_mode is False and SendMessageRequestHeader().batch is False
    assert GetRouteInfoRequestHeader().accept_standard_json_only is None
    assert headers.ResetOffsetRequestHeader.fields_spec[3].java_name == "isForce"
    assert headers.GetConsumeStatsInBrokerHeader.fields_spec[0].java_name == "isOrder"
    assert headers.GetConsumeStatsInBrokerHeader.fields_spec[0].required


# -- round trips ----------------------------------------------------------------


@pytest.mark.parametrize("cls", HEADER_TYPES, ids=_ids(list(HEADER_TYPES)))
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_round_trip(cls: type[CommandHeader], data: st.DataObject) -> None:
    h = data.draw(header_strategy(cls))
    ext = h.to_ext_fields()
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in ext.items())
    assert set(ext) == {s.java_name for s in cls.fields_spec if getattr(h, s.attr) is not None}
    expected = after_wire(h)
    assert cls.from_ext_fields(ext) == expected

    fast = h.to_ext_fields(fast_order=True)
    if cls is SendMessageRequestHeaderV2:
        expected = dataclasses.replace(expected, bname=None)  # Java's fast encoder skips the inherited field
        assert "bname" not in fast
    assert cls.from_ext_fields(fast) == expected
    if cls.fast_codes:
        declared = [s.java_name for s in cls.fields_spec]
        assert list(fast) == [n for n in declared if n in fast]
    else:
        assert list(fast) == list(ext)


@pytest.mark.parametrize("cls", HEADER_TYPES, ids=_ids(list(HEADER_TYPES)))
def test_empty_header(cls: type[CommandHeader]) -> None:
    if any(s.required for s in cls.fields_spec):
        with pytest.raises(MissingField):
            cls.from_ext_fields({})
    else:
        assert cls.from_ext_fields(None) == cls()


REQUIRED = [(cls, s) for cls in HEADER_TYPES for s in cls.fields_spec if s.required]
NUMBERS = [(cls, s) for cls in HEADER_TYPES for s in cls.fields_spec if s.kind in NUMERIC]


@pytest.mark.parametrize(("cls", "spec"), REQUIRED, ids=_ids(REQUIRED))
def test_missing_required_field(cls: type[CommandHeader], spec: FieldSpec) -> None:
    ext = example(cls).to_ext_fields()
    del ext[spec.java_name]
    with pytest.raises(MissingField) as err:
        cls.from_ext_fields(ext)
    assert err.value.field == spec.java_name
    assert err.value.header == cls.__name__
    assert f"<{spec.java_name}>" in str(err.value)


@pytest.mark.parametrize(("cls", "spec"), NUMBERS, ids=_ids(NUMBERS))
def test_bad_number(cls: type[CommandHeader], spec: FieldSpec) -> None:
    ext = example(cls).to_ext_fields()
    bad = ["12abc", "", " 1", "0x10"]
    if spec.kind.lower() in ("int", "integer"):
        bad += ["2147483648", "-2147483649", "1.0"]
    elif spec.kind.lower() == "long":
        bad += ["9223372036854775808", "1e3"]
    if spec.kind.lower() != "double":
        # int() refuses over 4300 digits with a ValueError of its own (found by fuzzing); a
        # non-ASCII digit is no Java digit either
        bad += ["9" * 5000, "\u00b2"]
    for text in bad:
        ext[spec.java_name] = text
        with pytest.raises(CodecError, match=f"<{spec.java_name}>"):
            cls.from_ext_fields(ext)


def test_numbers_parse_like_java() -> None:
    base = {"topic": "T", "queueId": "+3", "timestamp": "-0"}
    h = headers.SearchOffsetRequestHeader.from_ext_fields(base)
    assert (h.queue_id, h.timestamp) == (3, 0)
    h = headers.SearchOffsetRequestHeader.from_ext_fields({**base, "timestamp": str(INT64[0])})
    assert h.timestamp == INT64[0]
    # Long.parseLong takes any number of leading zeros
    h = headers.SearchOffsetRequestHeader.from_ext_fields({**base, "timestamp": "-" + "0" * 5000 + "42"})
    assert h.timestamp == -42


@pytest.mark.parametrize(
    ("text", "value"),
    [("true", True), ("TRUE", True), ("True", True), ("false", False), ("yes", False), ("1", False), ("", False)],
)
def test_boolean_parses_like_java(text: str, value: bool) -> None:
    assert GetRouteInfoRequestHeader.from_ext_fields({"topic": "T", "acceptStandardJsonOnly": text}) == (
        GetRouteInfoRequestHeader(topic="T", accept_standard_json_only=value)
    )
    ext = example(RegisterBrokerRequestHeader).to_ext_fields()
    assert RegisterBrokerRequestHeader.from_ext_fields({**ext, "compressed": text}).compressed is value


def test_check_fields() -> None:
    ext = example(EndTransactionRequestHeader).to_ext_fields()
    ext["commitOrRollback"] = str(int(MessageSysFlag.TRANSACTION_PREPARED_TYPE))
    with pytest.raises(CodecError, match="commitOrRollback"):
        EndTransactionRequestHeader.from_ext_fields(ext)
    ext = example(headers.CheckTransactionStateResponseHeader).to_ext_fields()
    ext["commitOrRollback"] = "0"
    with pytest.raises(CodecError, match="commitOrRollback"):
        headers.CheckTransactionStateResponseHeader.from_ext_fields(ext)
    ext = example(CreateTopicRequestHeader).to_ext_fields()
    ext["topicFilterType"] = "single_tag"
    with pytest.raises(CodecError, match="topicFilterType"):
        CreateTopicRequestHeader.from_ext_fields(ext)


# -- V1 <-> V2 -----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(v1=header_strategy(SendMessageRequestHeader), v2=header_strategy(SendMessageRequestHeaderV2))
def test_send_header_v1_v2(v1: SendMessageRequestHeader, v2: SendMessageRequestHeaderV2) -> None:
    short = SendMessageRequestHeaderV2.from_v1(v1)
    assert short.broker_name == v1.bname and short.bname is None
    assert short.max_reconsume_times == v1.max_reconsume_times
    assert short.to_v1() == v1
    assert SendMessageRequestHeaderV2.from_v1(v2.to_v1()) == dataclasses.replace(v2, bname=None)
    # the same content, whichever header form travels
    fields_v1 = v1.to_ext_fields()
    fields_v2 = short.to_ext_fields()
    assert fields_v1.get("producerGroup") == fields_v2.get("a")
    assert fields_v1.get("bname") == fields_v2.get("n")


# -- the registry ---------------------------------------------------------------


def test_registry_shape() -> None:
    for table in (REQUEST_HEADERS, RESPONSE_HEADERS):
        for code, cls in table.items():
            assert isinstance(code, RequestCode)
            assert cls in HEADER_TYPES
    assert header_class(RequestCode.SEND_MESSAGE_V2, False) is SendMessageRequestHeaderV2
    assert header_class(RequestCode.SEND_MESSAGE_V2, True) is headers.SendMessageResponseHeader
    assert header_class(RequestCode.SEND_BATCH_MESSAGE, False) is SendMessageRequestHeaderV2
    assert header_class(RequestCode.SEND_MESSAGE, False) is SendMessageRequestHeader
    assert header_class(RequestCode.PULL_MESSAGE, False) is PullMessageRequestHeader
    assert header_class(RequestCode.PULL_MESSAGE, True) is PullMessageResponseHeader
    assert header_class(RequestCode.REGISTER_BROKER, False) is RegisterBrokerRequestHeader
    assert header_class(RequestCode.REGISTER_BROKER, True) is RegisterBrokerResponseHeader
    assert header_class(RequestCode.GET_ROUTEINFO_BY_TOPIC, False) is GetRouteInfoRequestHeader
    assert header_class(RequestCode.GET_ROUTEINFO_BY_TOPIC, True) is None
    assert header_class(RequestCode.HEART_BEAT, False) is None
    assert header_class(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, False) is headers.ResetOffsetRequestHeader
    assert header_class(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, False) is headers.ReplyMessageRequestHeader


SEND_V2_PROPERTIES = (
    "UNIQ_KEY\x01240E000000000000000000000000000118B4AAC208643D00000\x02WAIT\x01true\x02TAGS\x01TagA\x02"
)


def test_send_message_v2_from_traffic() -> None:
    ext = {
        "a": "ProducerSync_PG_golden",
        "b": "ProducerSync_T_golden",
        "c": "TBW102",
        "d": "4",
        "e": "3",
        "f": "0",
        "g": "1795299411940",
        "h": "0",
        "i": SEND_V2_PROPERTIES,
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-a",
    }
    h = header_class(RequestCode.SEND_MESSAGE_V2, False).from_ext_fields(ext)
    assert h == SendMessageRequestHeaderV2(
        producer_group="ProducerSync_PG_golden",
        topic="ProducerSync_T_golden",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=3,
        sys_flag=0,
        born_timestamp=1795299411940,
        flag=0,
        properties=SEND_V2_PROPERTIES,
        reconsume_times=0,
        unit_mode=False,
        max_reconsume_times=None,
        batch=False,
        broker_name="broker-a",
    )
    assert list(h.to_ext_fields().items()) == list(ext.items())
    assert list(h.to_ext_fields(fast_order=True).items()) == list(ext.items())
    v1 = h.to_v1()
    assert (v1.producer_group, v1.queue_id, v1.bname, v1.max_reconsume_times) == (
        "ProducerSync_PG_golden",
        3,
        "broker-a",
        None,
    )


def test_register_broker_from_traffic() -> None:
    ext = {
        "brokerId": "0",
        "bodyCrc32": "189478024",
        "clusterName": "DefaultCluster",
        "brokerAddr": "127.0.0.1:10911",
        "haServerAddr": "127.0.0.1:10912",
        "compressed": "false",
        "brokerName": "broker-a",
    }
    h = header_class(RequestCode.REGISTER_BROKER, False).from_ext_fields(ext)
    assert h == RegisterBrokerRequestHeader(
        broker_name="broker-a",
        broker_addr="127.0.0.1:10911",
        cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.1:10912",
        broker_id=0,
        compressed=False,
        body_crc32=189478024,
    )
    assert list(h.to_ext_fields().items()) == list(ext.items())  # java.util.HashMap order


def test_inherited_bname_order() -> None:
    """``bname`` is declared by RpcRequestHeader, which moves it inside its HashMap bucket."""
    h = headers.UpdateConsumerOffsetRequestHeader(
        consumer_group="G", topic="T", queue_id=1, commit_offset=5, bname="broker-a"
    )
    assert list(h.to_ext_fields()) == ["queueId", "bname", "commitOffset", "topic", "consumerGroup"]
    pull = example(PullMessageRequestHeader)
    assert list(pull.to_ext_fields(fast_order=True))[-1] == "bname"


# -- captured traffic -----------------------------------------------------------


def _golden_frames() -> list[Any]:
    from golden import PCAPS, frames  # the corpus is part of the repository: no reason to skip

    return [f for p in PCAPS for f in frames(p) if f.command is not None]


def test_captured_headers() -> None:
    """Every header Java sent in the reference captures decodes, and re-encodes to the same fields in the same order."""
    frames = _golden_frames()
    assert frames
    seen: set[str] = set()
    for f in frames:
        cmd = f.command
        code = cmd.request_code if cmd.is_response else cmd.code
        cls = (RESPONSE_HEADERS if cmd.is_response else REQUEST_HEADERS).get(code)
        if cls is None:
            continue
        ext = cmd.ext_fields or {}
        if cmd.is_response and cmd.code != 0 and not ext:
            continue  # an error reply without the typed header's fields
        h = cls.from_ext_fields(ext)
        seen.add(cls.__name__)
        out = h.to_ext_fields(fast_order=cmd.serialize_type == 1)
        assert {k: v for k, v in ext.items() if k in out} == out
        if set(ext) == set(out):
            assert list(ext) == list(out), (cls.__name__, list(ext), list(out))
    assert {
        "SendMessageRequestHeaderV2",
        "SendMessageResponseHeader",
        "PullMessageRequestHeader",
        "PullMessageResponseHeader",
        "RegisterBrokerRequestHeader",
        "UpdateConsumerOffsetRequestHeader",
        "ConsumerSendMsgBackRequestHeader",
        "EndTransactionRequestHeader",
        "CheckTransactionStateRequestHeader",
        "ReplyMessageRequestHeader",
    } <= seen
