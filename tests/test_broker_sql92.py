"""SQL92 selectors: the parser (round trips of generated trees), Java 4.9.8's evaluation
semantics, compile errors, and filtering on a running broker (PULL, HEART_BEAT, CHECK_CLIENT_CONFIG)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketpy.broker.filter import ConsumerFilterManager, check_client_config
from rocketpy.broker.sql92 import (
    FALSE,
    KEYWORDS,
    NULL,
    TRUE,
    And,
    BoolCast,
    Compare,
    Const,
    EqualChain,
    EvalError,
    In,
    JInt,
    JLong,
    Neg,
    Not,
    Or,
    Prop,
    SelectorError,
    evaluate,
    java_compare,
    java_double_of,
    matches,
    parse,
    record_properties,
)
from rocketpy.broker.sql92.values import java_equals
from rocketpy.codecs import ResponseCode
from rocketpy.codecs.bodies import (
    CheckClientRequestBody,
    ConsumerData,
    HeartbeatData,
    SubscriptionData,
)
from rocketpy.codecs.codes import ConsumeFromWhere, ConsumeType, MessageModel, RequestCode
from rocketpy.codecs.headers import PullMessageRequestHeader
from rocketpy.codecs.message import MessageExt, decode_messages, encode_message
from rocketpy.testing import broker_client, now_ms, running_broker

# ---------------------------------------------------------------------------
# Java semantics, case by case
# ---------------------------------------------------------------------------

# (selector, properties, Java's value of the selector: True / False / None, or EvalError)
CASES = [
    ("a = 1", {"a": "1"}, True),
    ("a = 1", {"a": "01"}, True),  # Integer.valueOf("01")
    ("a = 1", {"a": "1.0"}, EvalError),  # Integer.valueOf("1.0") throws
    ("a = 1.0", {"a": "1"}, True),  # Double.valueOf
    ("a = 1", {}, None),
    ("a = 'x'", {"a": "x"}, True),
    ("a = 'x'", {"a": "X"}, False),
    ("a <> 'x'", {"a": "y"}, True),
    ("a <> 'x'", {}, None),
    ("a = b", {"a": "1"}, False),  # only b missing: FALSE ...
    ("a = b", {"b": "1"}, None),  # ... only a missing: NULL
    ("a <> b", {"a": "1"}, True),
    ("a > 5", {"a": "10"}, True),
    ("a > 5", {"a": "abc"}, EvalError),
    ("a > 5", {"a": " 10"}, EvalError),  # Integer.valueOf does not trim
    ("a > 5.0", {"a": " 10 "}, True),  # Double.valueOf does
    ("a > 5", {"a": "3000000000"}, EvalError),  # not an Integer
    ("a > 2147483648", {"a": "3000000000"}, True),  # a Long literal: Long.valueOf
    ("a > b", {"a": "10", "b": "9.5"}, True),  # two strings ordered as doubles
    ("a > b", {"a": "x", "b": "y"}, EvalError),
    ("a >= 1 AND a <= 3", {"a": "3"}, True),
    ("a BETWEEN 1 AND 3", {"a": "2"}, True),
    ("a BETWEEN 1 AND 3", {"a": "4"}, False),
    ("a NOT BETWEEN 1 AND 3", {"a": "4"}, True),
    ("a NOT BETWEEN 1 AND 3", {}, None),
    ("a IN ('x', 'y')", {"a": "y"}, True),
    ("a IN ('x', 'y')", {"a": "z"}, False),
    ("a NOT IN ('x', 'y')", {"a": "z"}, True),
    ("a NOT IN ('x')", {}, None),
    ("a IS NULL", {}, True),
    ("a IS NULL", {"a": "1"}, False),
    ("a IS NOT NULL", {"a": "1"}, True),
    ("a = TRUE", {"a": "True"}, True),  # Boolean.valueOf
    ("a = FALSE", {"a": "anything"}, True),
    ("TRUE = a", {"a": "true"}, EvalError),  # Java casts the Boolean to String
    ("a", {"a": "true"}, False),  # a bare property is a Boolean cast: FALSE for strings
    ("a", {}, None),
    ("NOT a", {"a": "x"}, True),
    ("NOT (a = 1)", {}, None),
    ("a = 1 OR b = 1", {"b": "1"}, True),  # NULL OR TRUE
    ("a = 1 AND b = 1", {"b": "2"}, False),  # NULL AND FALSE
    ("a = 1 AND b = 1", {"b": "1"}, None),  # NULL AND TRUE
    ("a = 1 OR b = 1", {"b": "2"}, None),
    ("b = 1 OR a > 5", {"b": "1", "a": "x"}, True),  # short circuit: the bad side is not evaluated
    ("a > 5 OR b = 1", {"b": "1", "a": "x"}, EvalError),
    ("-a = -1", {"a": "1"}, None),  # negating a string gives NULL
    ("a = -1", {"a": "-1"}, True),
    ("a = 10L", {"a": "10"}, True),
    ("a > .5", {"a": "0.75"}, True),
    ("a > 1E2", {"a": "101"}, True),
    ("TAGS = 'TagA' AND KEYS IN ('k1')", {"TAGS": "TagA", "KEYS": "k1"}, True),
    ("a = 1 b = 2", {"a": "1"}, True),  # the parser stops after one expression
    ("a = 1 -- comment\n", {"a": "1"}, True),
    ("/* c */ a = 1", {"a": "1"}, True),
    ("a = 'it''s'", {"a": "it's"}, True),
    ("NULL", {}, None),
    ("TRUE", {}, True),
    ("a = NaN", {"a": "1", "NaN": "NaN"}, False),  # NaN is an identifier; Double.valueOf("NaN")
    ("x = 1.5", {"x": "1.5f"}, True),  # Double.valueOf takes a float suffix
    ("x = 1", {"x": "+1"}, True),
    ("isTrue IS NOT NULL AND isTrue", {"isTrue": "true"}, False),
    ("(a = 1) = TRUE", {"a": "1"}, True),
    ("a LIKE 'x%'", {"a": "xy"}, False),  # no LIKE in 4.9.8: this is just "a", the rest is ignored
]


@pytest.mark.parametrize(("text", "props", "expected"), CASES)
def test_java_semantics(text, props, expected):
    expr = parse(text)
    if expected is EvalError:
        with pytest.raises(EvalError):
            evaluate(expr, props)
        assert matches(expr, props) is False
    else:
        assert evaluate(expr, props) is expected
        assert matches(expr, props) is (expected is True)


# (selector, the Java exception class of the cause, a piece of its message)
BAD = [
    ("", "ParseException", 'Encountered "<EOF>"'),
    ("a =", "ParseException", "<EOF>"),
    ("a > 0.0", "RuntimeException", "0.0 is less than 4.9E-324"),
    ("1", "ParseException", "Expression will not result in a boolean value: 1"),
    ("'x'", "ParseException", "will not result in a boolean value: 'x'"),
    ("a > 'x'", "RuntimeException", "Value ''x'' cannot be compared."),
    ("a > TRUE", "RuntimeException", "Value 'TRUE' cannot be compared."),
    ("a = NULL", "RuntimeException", "'NULL' cannot be compared."),
    ("TRUE = 1", "RuntimeException", "'TRUE' cannot be compared with '1'"),
    ("a BETWEEN 3 AND 1", "RuntimeException", "left value(3) must less than or equal to right value(1)"),
    ("a BETWEEN NULL AND 1", "RuntimeException", "values can not be null"),
    ("1 IN ('x')", "RuntimeException", "Expected a property for In expression, got: 1"),
    ("a IN (1)", "ParseException", "STRING_LITERAL"),
    ("a IN ()", "ParseException", "Encountered"),
    ("a = 99999999999999999999", "NumberFormatException", 'For input string: "99999999999999999999"'),
    ("a = 1e999", "RuntimeException", "is greater than"),
    ("a # 1", "TokenMgrError", 'Encountered: "#" (35)'),
    ("a != 1", "TokenMgrError", "Lexical error at line 1, column 3"),
    ("a = 'open", "TokenMgrError", "<EOF>"),
    ("a = 1 /* open", "TokenMgrError", "Lexical error"),
    ("a IS 1", "ParseException", "NOT"),
    ("a NOT 1", "ParseException", "Encountered"),
    ("(a = 1", "ParseException", "<EOF>"),
    ("(a > 1) > 2", "RuntimeException", "Value '(a > 1)' cannot be compared."),
]


@pytest.mark.parametrize(("text", "java_class", "piece"), BAD)
def test_compile_errors(text, java_class, piece):
    with pytest.raises(SelectorError) as info:
        parse(text)
    assert info.value.java_class.endswith(java_class)
    assert piece in info.value.java_message


def test_java_compare_conversions():
    assert java_compare(JInt(1), JLong(1)) == 0
    assert java_compare(JLong(2), JInt(1)) == 1
    assert java_compare(JInt(1), 1.5) == -1
    assert java_compare("2", JInt(10)) == -1
    assert java_compare(JInt(1), True) == -1  # no conversion: -1
    assert java_compare(math.nan, 1.0) == 1 and java_compare(math.nan, math.nan) == 0
    assert java_compare(-0.0, 0.0) == -1
    assert java_double_of(" 1.5d ") == 1.5 and java_double_of("-Infinity") == -math.inf
    assert math.isnan(java_double_of("NaN")) and java_double_of("0x1p3") == 8.0
    for bad in ("inf", "nan", "1_0", "", "e5", "1e"):
        with pytest.raises(EvalError):
            java_double_of(bad)


def test_record_properties_reads_stored_records():
    for v6 in (False, True):
        msg = MessageExt(
            topic="T",
            body=b"payload",
            properties={"TAGS": "TagA", "k": "v", "n": "42"},
            born_host="[::1]:1234" if v6 else "127.0.0.1:1234",
            store_host="[::1]:10911" if v6 else "127.0.0.1:10911",
            sys_flag=(0x10 | 0x20) if v6 else 0,
        )
        assert record_properties(encode_message(msg)) == {"TAGS": "TagA", "k": "v", "n": "42"}


# ---------------------------------------------------------------------------
# Generated trees: render, parse back, compare
# ---------------------------------------------------------------------------

_names = st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$]{0,6}", fullmatch=True).filter(lambda s: s.upper() not in KEYWORDS)
_props = _names.map(Prop)
_numbers = st.one_of(
    st.integers(0, 2**31 - 1).map(lambda n: Const("int", JInt(n))),
    st.integers(2**31, 2**63 - 1).map(lambda n: Const("long", JLong(n))),
    st.floats(min_value=5e-324, allow_infinity=False, allow_nan=False).map(lambda f: Const("double", f)),
)
_strings = st.text(max_size=6).map(lambda s: Const("string", s))
_ordered = st.recursive(st.one_of(_props, _numbers), lambda inner: inner.map(Neg), max_leaves=3)
_values = st.one_of(_ordered, _strings, _strings.map(Neg))


def _operand(e):
    # what the parser can put under "=": anything but a Boolean cast (made only by AND/OR/NOT) and NULL
    return not isinstance(e, BoolCast) and e != NULL


def _booleans(children):
    return st.one_of(
        st.tuples(st.sampled_from([">", ">=", "<", "<="]), _ordered, _ordered).map(lambda t: Compare(*t)),
        st.tuples(_values, _values).map(lambda t: Compare("=", *t)),
        st.tuples(children.filter(_operand), st.sampled_from([TRUE, FALSE])).map(lambda t: Compare("=", *t)),
        st.one_of(_values, children.filter(_operand)).map(lambda v: Compare("=", v, NULL)),
        st.tuples(_props, st.lists(st.text(max_size=4), min_size=1, max_size=3), st.booleans()).map(
            lambda t: In(t[0], tuple(t[1]), t[2])
        ),
        children.map(Not),
        st.tuples(children, children).map(lambda t: And(*t)),
        st.tuples(children, children).map(lambda t: Or(*t)),
    )


_selectors = st.recursive(
    st.one_of(_props.map(BoolCast), st.sampled_from([TRUE, FALSE, NULL])), _booleans, max_leaves=8
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_selectors)
def test_round_trip_of_generated_selectors(expr):
    assert parse(expr.to_sql()) == expr


@settings(max_examples=200)
@given(_selectors, st.dictionaries(st.sampled_from(["a", "b", "A", "_x"]), st.text(max_size=5), max_size=3))
def test_evaluation_is_total(expr, props):
    # a verdict or a Java exception (never a Python one), and matches() agrees
    try:
        value = evaluate(expr, props)
    except EvalError:
        assert matches(expr, props) is False
    else:
        assert value in (True, False, None)
        assert matches(expr, props) is (value is True)


# ---------------------------------------------------------------------------
# Chains: one node per chain against Java's left-deep tree evaluated recursively
# ---------------------------------------------------------------------------


def _chain_operand(e):
    # what the parser reads before "=" without making a compile-time check fire: no NULL, no Boolean constant
    return _operand(e) and not (isinstance(e, Const) and e.kind in ("bool", "null"))


_NAMES = ["a", "b", "A", "_x"]  # the properties the messages have (or not)
_known_props = st.sampled_from(_NAMES).map(Prop)
_small_numbers = st.one_of(_known_props, st.sampled_from([Const("int", JInt(1)), Const("double", 2.5)]))
_small = st.one_of(_small_numbers, st.just(Const("string", "x")))


def _chains(children):
    step = st.tuples(st.booleans(), st.one_of(_small, st.sampled_from([TRUE, FALSE, NULL])))
    return st.one_of(
        st.tuples(st.sampled_from([">", "<="]), _small_numbers, _small_numbers).map(lambda t: Compare(*t)),
        st.tuples(_known_props, st.lists(st.sampled_from(["1", "x"]), min_size=1, max_size=2), st.booleans()).map(
            lambda t: In(t[0], tuple(t[1]), t[2])
        ),
        children.map(Not),
        st.lists(children, min_size=2, max_size=5).map(lambda t: And(*t)),
        st.lists(children, min_size=2, max_size=5).map(lambda t: Or(*t)),
        st.tuples(st.one_of(_small, children.filter(_chain_operand)), st.lists(step, min_size=2, max_size=5)).map(
            lambda t: EqualChain(t[0], tuple(t[1]))
        ),
    )


_chained = st.recursive(
    st.one_of(_known_props.map(BoolCast), st.sampled_from([TRUE, FALSE, NULL])), _chains, max_leaves=12
)


def _left_deep(e):
    """Java's tree of the same selector: every chain a left-deep tree of pairs."""
    if isinstance(e, (And, Or)):
        terms = [_left_deep(t) for t in e.terms]
        tree = type(e)(terms[0], terms[1])
        for t in terms[2:]:
            tree = type(e)(tree, t)
        return tree
    if isinstance(e, EqualChain):
        tree = _left_deep(e.operand)
        for negated, right in e.steps:
            tree = Compare("=", tree, _left_deep(right))
            tree = Not(tree) if negated else tree
        return tree
    if isinstance(e, Compare):
        return Compare(e.op, _left_deep(e.left), _left_deep(e.right))
    if isinstance(e, (Not, BoolCast)):
        return type(e)(_left_deep(e.operand))
    return e


def _as_java_boolean(v):
    if v is None or type(v) is bool:
        return v
    raise EvalError("java.lang.ClassCastException: not a Boolean")


def _java_evaluate(e, props):
    """LogicExpression / ComparisonExpression / UnaryExpression.evaluate, recursive as Java's, on pairs."""
    if isinstance(e, (And, Or)):
        dominant = isinstance(e, Or)
        left, right = e.terms
        lv = _as_java_boolean(_java_evaluate(left, props))
        if lv is dominant:
            return dominant
        rv = _as_java_boolean(_java_evaluate(right, props))
        if rv is dominant:
            return dominant
        return None if lv is None or rv is None else not dominant
    if isinstance(e, Not):
        v = _as_java_boolean(_java_evaluate(e.operand, props))
        return None if v is None else not v
    if isinstance(e, BoolCast):
        v = _java_evaluate(e.operand, props)
        return v if v is None or type(v) is bool else False
    if isinstance(e, Compare) and e.op == "=":
        lv, rv = _java_evaluate(e.left, props), _java_evaluate(e.right, props)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        return lv is None or java_equals(lv, rv) or java_compare(lv, rv) == 0
    return e.evaluate(props)  # the rest hold no Boolean subtree: ordering comparisons, IN, values


def _outcome(f):
    try:
        return f()
    except EvalError as exc:
        return str(exc)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_chained, st.dictionaries(st.sampled_from(_NAMES), st.sampled_from(["", "1", "2.5", "true", "x"])))
def test_chains_evaluate_as_javas_left_deep_tree(expr, props):
    java_tree = _left_deep(expr)
    assert _outcome(lambda: evaluate(expr, props)) == _outcome(lambda: _java_evaluate(java_tree, props))
    assert expr.java_str() == java_tree.java_str()  # what compile errors print
    assert parse(expr.to_sql()) == expr  # the parser makes one node of an unparenthesized chain


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(list("ab1.'()=<>-+ *,/\nNOTANDINULLISBETWEEN#")), max_size=25))
def test_parser_fails_only_with_selector_errors(text):
    try:
        parse(text)
    except SelectorError:
        pass


# ---------------------------------------------------------------------------
# Filter manager and CHECK_CLIENT_CONFIG verdicts
# ---------------------------------------------------------------------------


def test_filter_manager_versions():
    mgr = ConsumerFilterManager()
    sub = SubscriptionData(topic="T", sub_string="a = 1", expression_type="SQL92", sub_version=5)
    mgr.register_group("G", [sub])
    data = mgr.get("T", "G")
    assert data is not None and data.client_version == 5 and not data.dead
    assert not mgr.register("T", "G", "a = 2", "SQL92", 4)  # older: ignored
    assert mgr.get("T", "G").expression == "a = 1"
    assert mgr.register("T", "G", "a = 2", "SQL92", 6)
    assert mgr.get("T", "G").expression == "a = 2"
    assert not mgr.register("T", "G", "a = ", "SQL92", 7)  # does not compile: dropped
    assert mgr.get("T", "G") is None
    mgr.register_group("G", [sub])
    mgr.unregister("G")
    assert mgr.get("T", "G").dead
    mgr.clean(0)
    assert mgr.get("T", "G") is None
    assert not mgr.register("T", "G", "TagA", "TAG", 9)


def test_check_client_config_verdicts():
    sql = SubscriptionData(topic="T", sub_string="a >", expression_type="SQL92")
    code, remark = check_client_config(sql, True)
    assert code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert remark.startswith("org.apache.rocketmq.filter.parser.ParseException: Encountered")
    assert check_client_config(sql, False) == (
        ResponseCode.SYSTEM_ERROR,
        "The broker does not support consumer to filter message by SQL92",
    )
    assert check_client_config(SubscriptionData(topic="T", sub_string="a > 1", expression_type="SQL92"), True) == (
        ResponseCode.SUCCESS,
        None,
    )
    assert check_client_config(SubscriptionData(topic="T", sub_string="x", expression_type="FOO"), True) == (
        ResponseCode.SUBSCRIPTION_PARSE_FAILED,
        None,
    )


# ---------------------------------------------------------------------------
# On a running broker
# ---------------------------------------------------------------------------


def _pull_header(group, topic, *, offset=0, sub=None, version=None, flags=0):
    return PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=flags | (4 if sub is not None else 0),
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription=sub,
        sub_version=version if version is not None else now_ms(),
        expression_type="SQL92" if sub is not None else None,
    )


def _sql_heartbeat(client_id, group, topic, expr, version):
    return HeartbeatData(
        client_id=client_id,
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=[
                    SubscriptionData(topic=topic, sub_string=expr, expression_type="SQL92", sub_version=version)
                ],
            )
        ],
    ).encode()


async def test_sql92_filtering_on_the_broker(tmp_path):
    async with running_broker(str(tmp_path), enablePropertyFilter="true") as broker:
        async with broker_client(broker.address) as c:
            for i in range(6):
                r = await c.send("TSql", f"m{i}".encode(), tags="TagA" if i % 2 else "TagB", props={"n": str(i)})
                assert r.code == ResponseCode.SUCCESS
            # a pull carrying its subscription (lite pull)
            resp = await c.invoke(
                RequestCode.PULL_MESSAGE, _pull_header("GSql", "TSql", sub="n >= 2 AND TAGS = 'TagA'")
            )
            assert resp.code == ResponseCode.SUCCESS
            assert [m.body for m in decode_messages(resp.body)] == [b"m3", b"m5"]
            assert resp.ext_fields["nextBeginOffset"] == "6"
            resp = await c.invoke(RequestCode.PULL_MESSAGE, _pull_header("GSql", "TSql", sub="n > 100"))
            assert resp.code == ResponseCode.PULL_RETRY_IMMEDIATELY and resp.remark == "NO_MATCHED_MESSAGE"
            # an empty selector fails to parse; one that does not compile is served unfiltered (Java's assert)
            resp = await c.invoke(RequestCode.PULL_MESSAGE, _pull_header("GSql", "TSql", sub=""))
            assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
            assert resp.remark == "parse the consumer's subscription failed"
            resp = await c.invoke(RequestCode.PULL_MESSAGE, _pull_header("GSql", "TSql", sub="n >"))
            assert resp.code == ResponseCode.SUCCESS and len(decode_messages(resp.body)) == 6

            # a push consumer: its selector comes with its heartbeat
            version = now_ms()
            hb = await c.invoke(
                RequestCode.HEART_BEAT, None, _sql_heartbeat(c.client_id, "GPush", "TSql", "n < 2", version)
            )
            assert hb.code == ResponseCode.SUCCESS
            resp = await c.invoke(RequestCode.PULL_MESSAGE, _pull_header("GPush", "TSql", version=version))
            assert resp.code == ResponseCode.SUCCESS
            assert [m.body for m in decode_messages(resp.body)] == [b"m0", b"m1"]
            resp = await c.invoke(RequestCode.PULL_MESSAGE, _pull_header("GPush", "TSql", version=version + 10))
            assert resp.code == ResponseCode.SUBSCRIPTION_NOT_LATEST  # the subscription itself is older
            # a selector that does not compile is accepted by HEART_BEAT but never registered
            hb = await c.invoke(
                RequestCode.HEART_BEAT, None, _sql_heartbeat(c.client_id, "GBad", "TSql", "n <", version)
            )
            assert hb.code == ResponseCode.SUCCESS
            resp = await c.invoke(RequestCode.PULL_MESSAGE, _pull_header("GBad", "TSql", version=version))
            assert resp.code == ResponseCode.FILTER_DATA_NOT_EXIST
            assert resp.remark == "The broker's consumer filter data is not exist!Your expression may be wrong!"

            body = CheckClientRequestBody(
                client_id=c.client_id,
                group="GBad",
                subscription_data=SubscriptionData(topic="TSql", sub_string="n <", expression_type="SQL92"),
            ).encode()
            resp = await c.invoke(RequestCode.CHECK_CLIENT_CONFIG, None, body)
            assert resp.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
            assert "ParseException" in resp.remark


async def test_sql92_needs_property_filter(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            await c.send("TSql", b"m", props={"n": "1"})
            resp = await c.invoke(RequestCode.PULL_MESSAGE, _pull_header("G", "TSql", sub="n = 1"))
            assert resp.code == ResponseCode.SYSTEM_ERROR
            assert resp.remark == "The broker does not support consumer to filter message by SQL92"


async def test_sql92_filter_support_retry(tmp_path):
    async with running_broker(str(tmp_path), enablePropertyFilter="true", filterSupportRetry="true") as broker:
        async with broker_client(broker.address) as c:
            version = now_ms()
            await c.invoke(RequestCode.HEART_BEAT, None, _sql_heartbeat(c.client_id, "GR", "TR", "n = 1", version))
            for i in range(3):
                await c.send("TR", f"m{i}".encode(), props={"n": str(i)})
            resp = await c.invoke(RequestCode.PULL_MESSAGE, _pull_header("GR", "TR", version=version))
            assert [m.body for m in decode_messages(resp.body)] == [b"m1"]
            # what a consumer sent back lands in the retry topic with RETRY_TOPIC: filtered by the selector on TR
            retry = "%RETRY%GR"
            for i in range(3):
                r = await c.send(retry, f"r{i}".encode(), group="GR", props={"n": str(i), "RETRY_TOPIC": "TR"})
                assert r.code == ResponseCode.SUCCESS, r.remark
            resp3, msgs = await c.pull("GR", retry, 0, 0)
            assert resp3.code == ResponseCode.SUCCESS
            assert [m.body for m in msgs] == [b"r1"]
