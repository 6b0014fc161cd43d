"""What our client sends, compared with what the Java 4.9.8 client sent in the golden captures.

For each request code both sides use, the extFields keys (in order: Java's HashMap
order), the oneway flag and the shape of JSON bodies must be the same.
"""

from __future__ import annotations

import json
from functools import cache

import trio
import trio.testing
from clusters import real_cluster
from golden import CAPTURES, frames

from rocketpy.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumeStatus,
    OrderlyStatus,
    Producer,
    PushConsumer,
    TransactionProducer,
    make_message,
    select_by_hash,
)
from rocketpy.codecs import RemotingCommand, RequestCode
from rocketpy.testing import wait_until


@cache
def java_requests(capture: str) -> dict[int, list[RemotingCommand]]:
    out: dict[int, list[RemotingCommand]] = {}
    for fr in frames(CAPTURES / capture):
        cmd = fr.command
        if cmd is not None and not cmd.is_response:
            out.setdefault(cmd.code, []).append(cmd)
    return out


def shape(value: object) -> object:
    """A JSON value with its leaves blanked: keys and nesting only."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    return type(value).__name__


async def run_scenario() -> dict[int, list[RemotingCommand]]:
    """Every kind of client request against our cluster, recorded by its probe (run it on the virtual clock)."""
    async with real_cluster(probe=True) as c:
        config = ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=0.5, persist_consumer_offset_interval=0.3)
        retried = set()

        async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
            for m in msgs:
                if m.reconsume_times == 0 and m.body == b"retry-me" and m.body not in retried:
                    retried.add(m.body)
                    return ConsumeStatus.RECONSUME_LATER
            return ConsumeStatus.CONSUME_SUCCESS

        got = trio.Event()

        async def orderly(msgs, ctx):  # type: ignore[no-untyped-def]
            got.set()
            return OrderlyStatus.SUCCESS

        async with Producer("PG", namesrv=c.namesrv) as p:
            await p.send(make_message("WireT", "hello", tags="TagA", keys="k"))
            await p.send(make_message("WireT", "retry-me", tags="TagA"))
            await p.send(make_message("WireO", "o"), selector=select_by_hash, arg=1)
            consumer = PushConsumer("WireCG", listener, config=config,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe("WireT", "*")
            async with consumer:
                await wait_until(lambda: consumer.consumed_ok >= 2)
                await trio.sleep(0.5)  # virtual: the offsets go out (persistConsumerOffsetInterval 0.3 s)
            oc = PushConsumer("WireOG", orderly, orderly=True, config=config,
                              consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            oc.subscribe("WireO")
            async with oc:
                with trio.fail_after(10):
                    await got.wait()

        async with TransactionProducer("TPG", lambda m, a: "UNKNOW", lambda m: "COMMIT_MESSAGE",
                                       namesrv=c.namesrv) as tp:
            await tp.send_in_transaction(make_message("WireTx", "tx"))
            # the broker checks the UNKNOW half message; the answer commits it
            await wait_until(lambda: any(r.ext_fields["fromTransactionCheck"] == "true"
                                         for r in c.probe.of(RequestCode.END_TRANSACTION)))
        out: dict[int, list[RemotingCommand]] = {}
        for r in c.probe.requests:
            out.setdefault(r.code, []).append(r)
        return out


async def test_headers_match_java_client(virtual_clock: trio.testing.MockClock) -> None:
    ours = await run_scenario()
    java = {**java_requests("05-PushRetry.pcap"), **java_requests("01-ProducerSync.pcap")}
    java_tx = java_requests("08-Transaction.pcap")
    java_ordered = java_requests("04-Ordered.pcap")
    checks = {
        RequestCode.SEND_MESSAGE_V2: java,
        RequestCode.PULL_MESSAGE: java,
        RequestCode.QUERY_CONSUMER_OFFSET: java,
        RequestCode.UPDATE_CONSUMER_OFFSET: java,
        RequestCode.GET_CONSUMER_LIST_BY_GROUP: java,
        RequestCode.UNREGISTER_CLIENT: java,
        RequestCode.CONSUMER_SEND_MSG_BACK: java,
        RequestCode.END_TRANSACTION: java_tx,
        RequestCode.LOCK_BATCH_MQ: java_ordered,
        RequestCode.UNLOCK_BATCH_MQ: java_ordered,
    }
    for code, table in checks.items():
        theirs = table[code][0]
        mine_all = ours[code]
        mine = mine_all[0]
        if code == RequestCode.CONSUMER_SEND_MSG_BACK:
            theirs = next(r for r in table[code] if "maxReconsumeTimes" in (r.ext_fields or {}))
        if code == RequestCode.UNREGISTER_CLIENT:
            # compare a consumer-group unregister with a consumer-group one
            theirs = next(r for r in table[code] if "consumerGroup" in r.ext_fields)
            mine = next(r for r in mine_all if "consumerGroup" in r.ext_fields)
        if code == RequestCode.END_TRANSACTION:
            mine = next(r for r in mine_all if r.ext_fields["fromTransactionCheck"] == "false")
        assert list((mine.ext_fields or {}).keys()) == list((theirs.ext_fields or {}).keys()), code
        assert mine.flag == theirs.flag, code
        assert mine.version == theirs.version and mine.language == theirs.language
        if theirs.body and theirs.body.startswith(b"{"):
            assert shape(json.loads(mine.body)) == shape(json.loads(theirs.body)), code


async def test_heartbeat_body_matches_java_client(virtual_clock: trio.testing.MockClock) -> None:
    ours = await run_scenario()
    theirs = json.loads(java_requests("01-ProducerSync.pcap")[RequestCode.HEART_BEAT][0].body)
    consumer_beats = [json.loads(r.body) for r in ours[RequestCode.HEART_BEAT] if b'"WireCG"' in r.body]
    mine = consumer_beats[-1]
    assert shape(mine) == shape(theirs)
    assert mine["producerDataSet"] == [{"groupName": "CLIENT_INNER_PRODUCER"}]
    cd, jd = mine["consumerDataSet"][0], theirs["consumerDataSet"][0]
    assert cd["consumeType"] == jd["consumeType"] and cd["messageModel"] == jd["messageModel"]
    assert {s["topic"] for s in cd["subscriptionDataSet"]} == {"WireT", "%RETRY%WireCG"}
