"""SQL92 selectors against hostile input: huge numeric literals and deep or long expressions (issue #13)."""

from __future__ import annotations

import pytest

from rocketpy.broker.sql92 import MAX_SELECTOR_DEPTH, MAX_SELECTOR_LENGTH, SelectorError, evaluate, matches, parse
from rocketpy.codecs import ResponseCode
from rocketpy.testing import broker_client, running_broker

HUGE = "9" * 5000  # Python's int() refuses more than 4300 digits


@pytest.mark.parametrize("text", ["a > 1", "a = 5", "a BETWEEN 1 AND 2", "a IN ('x')", "a IS NOT NULL AND a < 3"])
def test_a_property_of_thousands_of_digits_does_not_match(text: str) -> None:
    assert matches(parse(text), {"a": HUGE}) is False
    assert matches(parse(text), {"a": "-" + HUGE}) is False


def test_a_literal_of_thousands_of_digits_is_a_number_format_error() -> None:
    with pytest.raises(SelectorError, match="NumberFormatException"):
        parse(f"a > {HUGE}")
    assert matches(parse("a > 1.5"), {"a": "2"})  # ordinary literals still work
    assert parse(f"a > 0000000000000000000000000000{2**62}") is not None  # leading zeros are not digits of value


@pytest.mark.parametrize(
    "text",
    [
        "(" * (MAX_SELECTOR_DEPTH + 1) + "a > 1" + ")" * (MAX_SELECTOR_DEPTH + 1),
        "NOT " * 5000 + "a > 1",
        "-" * 5000 + "1 > a",
        "a = 'x' OR " * (MAX_SELECTOR_LENGTH // 11 + 1) + "a = 'y'",
    ],
    ids=["parentheses", "NOT chain", "sign chain", "length"],
)
def test_expression_size_and_nesting_are_bounded(text: str) -> None:
    with pytest.raises(SelectorError, match="RuntimeException"):
        parse(text)


def test_nesting_within_the_bound_parses() -> None:
    depth = MAX_SELECTOR_DEPTH // 2
    assert matches(parse("(" * depth + "a > 1" + ")" * depth), {"a": "2"})


N = 1000  # terms: past Python's recursion limit, well within what Java 4.9.8 evaluates
_OR_CHAIN = " OR ".join(f"a = {i}" for i in range(1, N + 1))
_AND_CHAIN = " AND ".join(f"a <> {i}" for i in range(2, N + 2))


@pytest.mark.parametrize(
    ("text", "props", "verdict"),
    [
        (_OR_CHAIN, {"a": str(N)}, True),
        (_OR_CHAIN, {"a": "0"}, False),
        (_OR_CHAIN, {}, None),
        (_AND_CHAIN, {"a": "1"}, True),
        (_AND_CHAIN, {"a": str(N)}, False),
        (_AND_CHAIN, {}, None),
        (_AND_CHAIN + " OR b IS NULL", {"a": "5"}, True),
        ("a = 1" + " = TRUE" * (N - 1), {"a": "1"}, True),
        ("a = 1" + " <> FALSE" * (N - 1), {"a": "1"}, True),
        ("a = 1" + " <> FALSE" * (N - 1), {}, None),
        ("b" + " IS NOT NULL" * N, {"b": "x"}, True),
        ("b" + " IS NULL" * N, {}, False),
        # the longest chain the length bound lets in (Java's own stack gives out before, a StackOverflowError)
        ("a = 1" + " = TRUE" * ((MAX_SELECTOR_LENGTH - 5) // 7), {"a": "1"}, True),
    ],
    ids=[
        "OR true",
        "OR false",
        "OR null",
        "AND true",
        "AND false",
        "AND null",
        "AND then OR",
        "= chain",
        "<> chain",
        "<> chain null",
        "IS NOT NULL chain",
        "IS NULL chain",
        "longest",
    ],
)
def test_chains_of_thousands_of_terms_evaluate_as_java(text: str, props: dict[str, str], verdict: bool | None) -> None:
    # Java 4.9.8's verdicts for these; the recursive evaluation hit Python's recursion limit and said "no match"
    expr = parse(text)
    assert evaluate(expr, props) is verdict
    assert matches(expr, props) is (verdict is True)


def test_a_chain_in_a_compile_error_reads_as_java_prints_it() -> None:
    # Java's message holds the chain's toString(), a left-deep ((a || b) || c); ours recursed per term
    expected = "(" * (N - 1) + "(a == 1)" + "".join(f" || (a == {i}))" for i in range(2, N + 1))
    with pytest.raises(SelectorError) as info:
        parse(f"({_OR_CHAIN}) IN ('x')")
    assert info.value.message == f"Expected a property for In expression, got: {expected}"
    with pytest.raises(SelectorError, match="cannot be compared"):
        parse("(a" + " = 1" * N + ") > 1")


def test_arithmetic_after_a_property_is_where_java_stops_reading() -> None:
    # 4.9.8 has no binary +: the parser reads "x" and stops (no recursion, whatever follows)
    assert parse("x" + " + 1" * N) == parse("x")
    assert evaluate(parse("x" + " + 1" * N), {"x": "5"}) is False  # a bare property: FALSE, as Java answered


async def test_a_huge_property_leaves_sql92_pulls_working(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # one message with such a property made every SQL92 pull of its queue fail with SYSTEM_ERROR
    async with running_broker(str(tmp_path), enablePropertyFilter="true") as broker:
        async with broker_client(broker.address) as c:
            assert (await c.send("THuge", b"huge", props={"a": HUGE})).code == ResponseCode.SUCCESS
            assert (await c.send("THuge", b"small", props={"a": "5"})).code == ResponseCode.SUCCESS
            resp, msgs = await c.pull("GHuge", "THuge", 0, 0, subscription="a > 1", expression_type="SQL92")
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            assert [m.body for m in msgs] == [b"small"]


def test_a_bad_expression_compiled_again_keeps_no_caller_alive() -> None:
    """A consumer heartbeating with a bad SQL92 filter: each failure is its own error, and the cached
    failure holds no traceback, so the requests that compiled it are freed (the fuzzer found 103
    cached exceptions holding every heartbeat frame that had raised them again)."""
    import gc
    import weakref

    from rocketpy.broker.sql92 import compile_cached

    class Request:
        pass

    def heartbeat(text: str) -> weakref.ref[Request]:
        request = Request()  # a local of the failing caller's frame, as a request is
        with pytest.raises(SelectorError) as info:
            compile_cached(text)
        assert info.value.java_class == "org.apache.rocketmq.filter.parser.ParseException"
        return weakref.ref(request)

    refs = [heartbeat("a >") for _ in range(5)]
    gc.collect()
    assert [r() for r in refs] == [None] * 5
    with pytest.raises(SelectorError) as first:
        compile_cached("a >")
    with pytest.raises(SelectorError) as again:
        compile_cached("a >")
    assert first.value is not again.value and first.value.java_message == again.value.java_message


def test_long_expressions_are_compiled_but_not_kept() -> None:
    """A consumer's filter is short; long ones (valid or refused) are compiled each time: 100 of them
    kept 230 MB of trees, or megabytes of refused text each."""
    import tracemalloc

    from rocketpy.broker.sql92 import MAX_SELECTOR_LENGTH, compile_cached, matches

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(10):
            with pytest.raises(SelectorError, match="longer than"):
                compile_cached(f"a{i} > 1 AND " + "b" * MAX_SELECTOR_LENGTH)
            text = " OR ".join(f"a = {k}" for k in range(i, i + 300))  # 3 KB
            assert matches(compile_cached(text), {"a": str(i + 299)})
            assert not matches(compile_cached(text), {"a": str(i + 300)})
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 256 * 1024
