"""Regression tests for what tools/fuzz/fuzz_servers.py found, one per finding."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketpy.javacompat.hashmap import hashmap_order
from rocketpy.javacompat.lang import java_hash
from rocketpy.namesrv import NameServer, NamesrvConfig
from rocketpy.remoting import open_remoting_client
from rocketpy.testing import wait_until


@pytest.fixture
async def namesrv(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[NameServer]:
    config = NamesrvConfig(
        listen_port=0,
        kv_config_path=str(tmp_path / "kvConfig.json"),
        config_store_path=str(tmp_path / "namesrv.properties"),
    )
    yield await nursery.start(NameServer(config).run)
    nursery.cancel_scope.cancel()


def test_java_hash_of_null_is_zero() -> None:
    # java.util.HashMap files a null key in bucket 0
    assert java_hash(None) == 0
    assert hashmap_order(["b", None, "a"])[0] is None


@pytest.mark.parametrize("missing", ["clusterName", "brokerName", "brokerAddr"])
async def test_register_broker_without_a_name_is_refused(
    namesrv: NameServer, missing: str, caplog: pytest.LogCaptureFixture
) -> None:
    # finding: a REGISTER_BROKER without clusterName filed the broker under None; when its
    # connection closed, the NameServer's cleanup raised TypeError (no hash for None)
    ext = {"brokerName": "b-fz", "brokerAddr": "127.0.0.1:1", "clusterName": "C", "haServerAddr": "x", "brokerId": "0"}
    del ext[missing]
    async with open_remoting_client() as client:
        answer = await client.invoke(namesrv.address, RemotingCommand(code=RequestCode.REGISTER_BROKER, ext_fields=ext))
        assert answer.code == ResponseCode.SYSTEM_ERROR
        assert missing in (answer.remark or "")
    await wait_until(lambda: namesrv.remoting is None or not namesrv.remoting.connections, timeout=5)
    assert "b-fz" not in namesrv.routes.broker_addr_table
    assert None not in namesrv.routes.cluster_addr_table
    assert not [r for r in caplog.records if "hook failed" in r.getMessage()]


@pytest.mark.parametrize("fast", [True, False], ids=["fast lane", "general path"])
@pytest.mark.parametrize(
    ("field", "value"),
    [("bornTimestamp", str(2**64)), ("queueId", str(2**40)), ("flag", str(2**31)), ("sysFlag", str(2**33)),
     ("reconsumeTimes", str(2**31)), ("bornTimestamp", "9" * 400)],
)
async def test_send_with_a_field_beyond_its_java_type_is_refused(
    tmp_path: Path, field: str, value: str, fast: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # finding: a SEND_MESSAGE_V2 whose bornTimestamp was 400 digits reached the CommitLog record builder,
    # which raised struct.error; Java's Long.parseLong refuses the field (the send fails with SYSTEM_ERROR).
    # Same on the fast lane (a reconsumeTimes beyond int32 made its record writer raise OverflowError)
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address, serialize_type=SerializeType.ROCKETMQ) as c:
            assert (await c.send("TFz", b"before")).code == ResponseCode.SUCCESS
            for v2 in (True, False):
                header = c.send_header("TFz", {"KEYS": "k1"})
                ext = (header if v2 else header.to_v1()).to_ext_fields()
                wire = {"bornTimestamp": "g", "queueId": "e", "flag": "h", "sysFlag": "f", "reconsumeTimes": "j"}
                if not fast:
                    ext[wire["queueId"] if v2 else "queueId"] = "-1"  # the general path (it picks the queue)
                ext[wire[field] if v2 else field] = value
                code = RequestCode.SEND_MESSAGE_V2 if v2 else RequestCode.SEND_MESSAGE
                request = RemotingCommand(code=code, ext_fields=ext, body=b"bad", serialize_type=SerializeType.ROCKETMQ)
                answer = await c.client.invoke(c.addr, request)
                assert answer.code == ResponseCode.SYSTEM_ERROR, (v2, answer.code, answer.remark)
                assert "For input string" in (answer.remark or ""), answer.remark  # NumberFormatException
            after = await c.send("TFz", b"after")
            assert after.code == ResponseCode.SUCCESS and after.ext_fields["queueOffset"] == "1"  # nothing half-made
    assert not [r for r in caplog.records if "fast lane failed" in r.getMessage()]
    assert not [r for r in caplog.records if r.exc_info and "int too large" in str(r.exc_info[1])]


HOSTILE_OFFSET_FIELDS = [
    ("queueId", "-18446744073709551616"),
    ("queueId", "9223372036854775808"),
    ("queueId", "2147483648"),
    ("commitOffset", "-9223372036854775809"),
    ("commitOffset", "9" * 400),
    ("commitOffset", ""),
    ("queueId", "1e3"),
    ("queueId", " 1"),
    ("commitOffset", "1_000"),  # Python's int() reads these two; Java's parse does not
]


@pytest.mark.parametrize(("text", "bits", "value"), [
    ("\u0661\u0662", 32, 12),  # Arabic-Indic digits: Character.digit reads every script's
    ("-\u0966\u0967", 32, -1),  # Devanagari, with an ASCII sign
    ("+\uff12\uff10", 64, 20),  # fullwidth
    ("\uff12147483648", 32, None),  # out of range whatever the script
    ("\uff12147483648", 64, 2147483648),
    ("\U0001d7ce", 32, None),  # a digit beyond the BMP is two chars, neither a digit
    ("\u00b2", 32, None),  # a superscript is not a decimal digit
    ("\uff0d1", 32, None),  # nor a fullwidth minus a sign
    ("1\u00a0", 32, None),
])
def test_java_integer_parsing_takes_the_digits_java_takes(text: str, bits: int, value: int | None) -> None:
    from rocketpy.javacompat.lang import parse_java_int

    assert parse_java_int(text, bits) == value


async def test_an_offset_in_other_digits_is_taken_as_java_takes_it(tmp_path: Path) -> None:
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            assert (await c.send("TOff", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            ext = {"consumerGroup": "GOff", "topic": "TOff", "queueId": "\u0660", "commitOffset": "\u0661"}
            answer = await c.client.invoke(c.addr, RemotingCommand(code=RequestCode.UPDATE_CONSUMER_OFFSET,
                                                                   ext_fields=ext))
            assert answer.code == ResponseCode.SUCCESS, answer.remark
        assert broker.offsets.table == {"TOff@GOff": {0: 1}}


@pytest.mark.parametrize(("field", "value"), HOSTILE_OFFSET_FIELDS)
async def test_offset_beyond_its_java_type_is_refused_and_never_persisted(
    tmp_path: Path, field: str, value: str, caplog: pytest.LogCaptureFixture
) -> None:
    # finding (issue #24): UPDATE_CONSUMER_OFFSET took header values with int() and no range check; queue ids
    # -18446744073709551616 and 9223372036854775808 and an offset -9223372036854775809 were answered with
    # success and persisted, and a restarted broker (or a Java one) could not read consumerOffset.json.
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            assert (await c.send("TOff", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            assert (await c.update_offset("GOff", "TOff", 0, 1)).code == ResponseCode.SUCCESS
            ext = {"consumerGroup": "GOff", "topic": "TOff", "queueId": "0", "commitOffset": "7", field: value}
            for code in (RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.QUERY_CONSUMER_OFFSET):
                answer = await c.client.invoke(c.addr, RemotingCommand(code=code, ext_fields=ext))
                if code == RequestCode.QUERY_CONSUMER_OFFSET and field == "commitOffset":
                    assert answer.code == ResponseCode.SUCCESS  # not a field of the query
                    continue
                assert answer.code == ResponseCode.SYSTEM_ERROR, (code, answer.code, answer.remark)
                assert answer.remark == f'java.lang.NumberFormatException: For input string: "{value[:64]}"'
        assert broker.offsets.table == {"TOff@GOff": {0: 1}}
        await broker.persist_all()
    saved = (tmp_path / "config" / "consumerOffset.json").read_text()
    assert value not in saved or value == ""
    # one line per refusal, with the code and the cause; no traceback
    refusals = [r for r in caplog.records if r.getMessage().startswith("process request refused: code 15 ")]
    assert refusals and all(r.exc_info is None for r in refusals)
    assert "NumberFormatException" in refusals[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]
    # the broker starts again on what it wrote
    async with running_broker(str(tmp_path)) as broker:
        assert broker.offsets.query("GOff", "TOff", 0) == 1


async def test_offset_for_a_topic_or_queue_the_broker_lacks_is_refused(tmp_path: Path) -> None:
    # memory finding: every UPDATE_CONSUMER_OFFSET with a new topic name or queue id added an entry kept in
    # memory and consumerOffset.json for good; a fuzzer's random names grew both without bound
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            assert (await c.send("TOff", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            answer = await c.update_offset("GOff", "NoSuchTopic", 0, 1)
            assert (answer.code, answer.remark) == (ResponseCode.TOPIC_NOT_EXIST, "Topic NoSuchTopic not exist!")
            # (30-minute run) group names of 70 KB, unicode, control characters: 940 keys, 2.3 MB of
            # consumerOffset.json rewritten every 5 s, stats items for each
            for bad in ("b" * 70_000, "\u00e9\u4e2d", "a\nb=c", "a@b", ""):
                answer = await c.update_offset(bad, "TOff", 0, 1)
                assert answer.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, answer.remark
                assert answer.remark == f"Group {bad} not exist!"
            queues = broker.topics.get("TOff").read_queue_nums  # type: ignore[union-attr]
            for queue_id in (-1, queues, 2**31 - 1):
                answer = await c.update_offset("GOff", "TOff", queue_id, 1)
                assert answer.code == ResponseCode.SYSTEM_ERROR and f"queueId[{queue_id}] is illegal" in answer.remark
            assert (await c.update_offset("GOff", "TOff", queues - 1, 3)).code == ResponseCode.SUCCESS
        assert broker.offsets.table == {"TOff@GOff": {queues - 1: 3}}


async def test_clone_into_a_group_name_no_delete_can_name_is_refused(tmp_path: Path) -> None:
    # memory finding (4-minute runs, 74 offset keys left after the clean-up): CLONE_GROUP_OFFSET into ""
    # filed "topic@" keys, which deleteSubGroup never removes (Java's removeOffset splits keys on "@")
    from rocketpy.codecs.headers import CloneGroupOffsetRequestHeader, DeleteSubscriptionGroupRequestHeader
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            assert (await c.send("TClone", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            assert (await c.update_offset("GSrc", "TClone", 0, 1)).code == ResponseCode.SUCCESS

            async def clone(dest: str) -> RemotingCommand:
                header = CloneGroupOffsetRequestHeader(src_group="GSrc", dest_group=dest, topic="TClone",
                                                       offline=True)
                return await c.client.invoke(c.addr, RemotingCommand.request(RequestCode.CLONE_GROUP_OFFSET, header))

            for bad in ("", "a@b", "g h", "\u00e9"):
                answer = await clone(bad)
                assert answer.code == ResponseCode.SYSTEM_ERROR
                assert f"the destination group[{bad}] is not a legal group name" in (answer.remark or "")
                assert answer.ext_fields is None  # as Java's createResponseCommand(null)
            assert (await clone("GDest")).code == ResponseCode.SUCCESS
            assert broker.offsets.table == {"TClone@GSrc": {0: 1}, "TClone@GDest": {0: 1}}
            delete = DeleteSubscriptionGroupRequestHeader(group_name="GDest", remove_offset=True)
            request = RemotingCommand.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, delete)
            assert (await c.client.invoke(c.addr, request)).code == ResponseCode.SUCCESS
        assert broker.offsets.table == {"TClone@GSrc": {0: 1}}


@pytest.mark.parametrize(
    ("code", "ext"),
    [
        (RequestCode.PULL_MESSAGE, {"consumerGroup": "G", "topic": "T", "queueId": "0", "queueOffset": "0",
                                    "maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0",
                                    "suspendTimeoutMillis": "0", "subVersion": "x"}),
        (RequestCode.GET_MAX_OFFSET, {"topic": "T", "queueId": "99999999999"}),
        (RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {"topic": "T", "queueId": "0", "timestamp": "-"}),
        (RequestCode.CONSUMER_SEND_MSG_BACK, {"offset": "1", "group": "G", "delayLevel": "+"}),
        (RequestCode.QUERY_MESSAGE, {"topic": "T", "key": "k", "maxNum": "1", "beginTimestamp": "0",
                                     "endTimestamp": "0x10"}),
    ],
    ids=["pull", "max offset", "search offset", "send back", "query message"],
)
async def test_every_code_checks_its_header_numbers_first(
    tmp_path: Path, code: int, ext: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    # the check is made once for every code with a typed header, before the handler runs
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            answer = await c.client.invoke(c.addr, RemotingCommand(code=code, ext_fields=ext))
            assert answer.code == ResponseCode.SYSTEM_ERROR
            assert (answer.remark or "").startswith("java.lang.NumberFormatException: For input string: ")
            missing = {k: v for k, v in ext.items() if k not in ("queueId", "offset", "maxNum")}
            if missing != ext:
                answer = await c.client.invoke(c.addr, RemotingCommand(code=code, ext_fields=missing))
                assert answer.code == ResponseCode.SYSTEM_ERROR
                assert "RemotingCommandException: the custom field <" in (answer.remark or "")
    assert not [r for r in caplog.records if r.exc_info]


async def test_tables_shrink_back_when_connections_close(tmp_path: Path) -> None:
    # memory finding (issue #24): a connection that heartbeated under several client ids left every id but
    # the last in the producer table after it closed; a fuzzer's random ids grew it for good
    from rocketpy.codecs.bodies import HeartbeatData, ProducerData
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        assert (broker.producers.groups, broker.producers.by_client_id, broker.consumers.groups) == ({}, {}, {})
        async with broker_client(broker.address) as c:
            assert (await c.send("TMem", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            for cid in ("127.0.0.1@a", "127.0.0.1@b", "127.0.0.1@c"):
                data = HeartbeatData(client_id=cid, producer_data_set=[ProducerData(group_name="PMem")])
                assert (await c.invoke(RequestCode.HEART_BEAT, None, data.encode())).code == ResponseCode.SUCCESS
            assert (await c.heartbeat(consumer_groups={"GMem": ["TMem"]})).code == ResponseCode.SUCCESS
            # a held pull (long polling) is state of the connection too
            async with trio.open_nursery() as pulls:
                pulls.start_soon(lambda: c.pull("GMem", "TMem", 0, 1, suspend_ms=60_000, timeout=120))
                await wait_until(lambda: broker.hold.held_count == 1, timeout=5)
                assert len(broker.producers.by_client_id) == 3 and broker.consumers.get("GMem") is not None
                pulls.cancel_scope.cancel()
        await wait_until(lambda: not broker.producers.by_client_id and not broker.producers.groups, timeout=5)
        await wait_until(lambda: not broker.consumers.groups and broker.hold.held_count == 0, timeout=5)
        assert broker.hold.table == {}


async def test_no_group_is_made_for_an_illegal_name(tmp_path: Path) -> None:
    # memory finding: a pull, heartbeat or unregister naming a group auto-created it, whatever the name (a
    # fuzzer's random strings: 300 a's, unicode, control characters), kept and persisted for good; the
    # broker now auto-creates only legal names, as Java 5 does
    from rocketpy.codecs.headers import UnregisterClientRequestHeader
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        before = set(broker.groups.table)
        async with broker_client(broker.address) as c:
            assert (await c.send("TGrp", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            for bad in ("a" * 256, "g\u00e9", "a b", "x\x00", "a@b"):
                resp, _ = await c.pull(bad, "TGrp", 0, 0)
                assert resp.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, (bad, resp.code)
                await c.heartbeat(consumer_groups={bad: ["TGrp"]})
                await c.invoke(RequestCode.UNREGISTER_CLIENT,
                               UnregisterClientRequestHeader(client_id=c.client_id, consumer_group=bad))
            resp, _ = await c.pull("G_ok-1%|", "TGrp", 0, 0)
            assert resp.code == ResponseCode.SUCCESS
        assert set(broker.groups.table) - before == {"G_ok-1%|"}


def test_expired_queue_locks_are_forgotten() -> None:
    # memory finding: LOCK_BATCH_MQ kept an entry for every group and queue ever named, expired or not
    from rocketpy.broker.locks import LOCK_MAX_LIVE_MS, RebalanceLockManager

    now = [0.0]
    locks = RebalanceLockManager(clock=lambda: now[0])
    for i in range(100):
        assert locks.try_lock_batch(f"G{i}", [("T", q) for q in range(4)], "c1") == [("T", q) for q in range(4)]
    assert len(locks.table) == 100
    now[0] += LOCK_MAX_LIVE_MS / 2
    assert locks.try_lock_batch("G0", [("T", 0)], "c1") == [("T", 0)]  # refreshed
    assert not locks.try_lock_batch("G1", [("T", 0)], "c2")  # still held by c1
    now[0] += LOCK_MAX_LIVE_MS * 0.6
    assert locks.try_lock_batch("Gx", [("T", 0)], "c3") == [("T", 0)]
    assert set(locks.table) == {"G0", "Gx"} and list(locks.table["G0"]) == [("T", 0)]
    assert locks.is_locked("G0", ("T", 0), "c1") and not locks.is_locked("G1", ("T", 0), "c1")
    locks.unlock_batch("Gx", [("T", 0)], "c3")
    assert "Gx" not in locks.table


async def test_a_refusal_is_one_log_line_whatever_the_value(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # finding: a header value with a newline (or 70 KB of text) went into the refusal's log line as it was,
    # forging a second line (or flooding the log); control characters are escaped and the cause is cut
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            for value in ("1\n2021-01-01 00:00:00,000 ERROR forged line", "\x00\x1b[31m", "7" * 70_000 + "x"):
                ext = {"consumerGroup": "G", "topic": "T", "queueId": value}
                answer = await c.client.invoke(c.addr, RemotingCommand(code=RequestCode.QUERY_CONSUMER_OFFSET,
                                                                       ext_fields=ext))
                assert answer.code == ResponseCode.SYSTEM_ERROR
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("process request refused")]
    assert len(lines) == 3
    assert all("\n" not in line and "\x00" not in line and "\x1b" not in line and len(line) < 600 for line in lines)
    assert "\\x0a2021-01-01" in lines[0]


async def test_namesrv_forgets_every_name_of_a_closed_connection(namesrv: NameServer) -> None:
    # memory finding: one connection registering an address under several broker names (and clusters) left
    # all but the first behind when it closed, with no live entry to ever expire them
    async with open_remoting_client() as client:
        for i in range(6):
            ext = {"brokerName": f"b-many-{min(i, 4)}", "brokerAddr": "127.0.0.1:1", "clusterName": f"C-many-{i}",
                   "haServerAddr": "x", "brokerId": "0"}  # the last: a name again, in another cluster
            answer = await client.invoke(namesrv.address, RemotingCommand(code=RequestCode.REGISTER_BROKER,
                                                                          ext_fields=ext))
            assert answer.code == ResponseCode.SUCCESS, answer.remark
        assert len([n for n in namesrv.routes.broker_addr_table if n.startswith("b-many-")]) == 5
    await wait_until(lambda: namesrv.remoting is None or not namesrv.remoting.connections, timeout=5)
    await wait_until(lambda: not [n for n in namesrv.routes.broker_addr_table if n.startswith("b-many-")], timeout=5)
    assert not [c for c in namesrv.routes.cluster_addr_table if c.startswith("C-many-")]
    assert "127.0.0.1:1" not in namesrv.routes.broker_live_table


@pytest.mark.parametrize("body", [b'{"timestamp":1,"counter":null}', b'{"timestamp":null,"counter":3}', b"{}"])
async def test_query_data_version_with_null_fields(
    namesrv: NameServer, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    # finding (30-minute run for issue #24): QUERY_DATA_VERSION whose DataVersion body had a null counter made
    # the NameServer's version comparison raise TypeError (a traceback); Java's equals takes a null counter
    ext = {"brokerName": "b-dv", "brokerAddr": "127.0.0.1:2", "clusterName": "C", "haServerAddr": "x",
           "brokerId": "0"}
    async with open_remoting_client() as client:
        answer = await client.invoke(namesrv.address, RemotingCommand(code=RequestCode.REGISTER_BROKER, ext_fields=ext))
        assert answer.code == ResponseCode.SUCCESS
        query = RemotingCommand(code=RequestCode.QUERY_DATA_VERSION, ext_fields=ext, body=body)
        answer = await client.invoke(namesrv.address, query)
        assert answer.code == ResponseCode.SUCCESS and answer.ext_fields == {"changed": "true"}, answer
    assert not [r for r in caplog.records if r.exc_info]


async def test_offset_for_an_unknown_group_is_refused_without_auto_create(tmp_path: Path) -> None:
    # as Java 5: with autoCreateSubscriptionGroup=false only an existing group takes offsets
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path), autoCreateSubscriptionGroup="false") as broker:
        async with broker_client(broker.address) as c:
            assert (await c.send("TOff", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            answer = await c.update_offset("GNew", "TOff", 0, 1)
            assert (answer.code, answer.remark) == (ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "Group GNew not exist!")
        assert broker.offsets.table == {}


@pytest.mark.parametrize("queues", [2**31 - 1, 1025, -1])
async def test_topic_or_retry_queues_beyond_the_bound_are_refused(
    tmp_path: Path, queues: int, caplog: pytest.LogCaptureFixture
) -> None:
    # finding (30-minute run for issue #24): UPDATE_AND_CREATE_TOPIC with writeQueueNums 2147483647 made a
    # topic; the next GET_BROKER_CONSUME_STATS looped over its queues on the event loop, the broker stopped
    # answering and grew by 1 GiB a minute. Same for a group's retryQueueNums (its retry topic's size)
    from rocketpy.codecs.bodies import SubscriptionGroupConfig
    from rocketpy.codecs.headers import CreateTopicRequestHeader
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            header = CreateTopicRequestHeader(topic="THuge", default_topic="TBW102", read_queue_nums=4,
                                              write_queue_nums=queues, perm=6, topic_filter_type="SINGLE_TAG",
                                              topic_sys_flag=0, order=False)
            answer = await c.invoke(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
            assert answer.code == ResponseCode.SYSTEM_ERROR and "writeQueueNums" in (answer.remark or "")
            assert broker.topics.get("THuge") is None
            group = SubscriptionGroupConfig(group_name="GHuge", retry_queue_nums=queues).encode()
            answer = await c.invoke(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, group)
            assert answer.code == ResponseCode.SYSTEM_ERROR and "retryQueueNums" in (answer.remark or "")
            assert "GHuge" not in broker.groups.table
            with trio.fail_after(10):
                stats = RemotingCommand(code=RequestCode.GET_BROKER_CONSUME_STATS, ext_fields={"isOrder": "false"})
                answer = await c.client.invoke(c.addr, stats)
            assert answer.code == ResponseCode.SUCCESS
    assert not [r for r in caplog.records if r.exc_info]


async def send_halves(c: Any, count: int) -> None:
    """``count`` prepared (half) messages of producer group PGTx, which has no connection to check."""
    from rocketpy.codecs.codes import MessageSysFlag

    for i in range(count):
        answer = await c.send("TTx", b"half-%d" % i, props={"TRAN_MSG": "true", "PGROUP": "PGTx"},
                              sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
        assert answer.code == ResponseCode.SUCCESS


async def send_and_check(c: Any, broker: Any, count: int) -> None:
    """``count`` more halves (as send_halves), then a transaction check once they are stored."""
    if count:
        await send_halves(c, count)
    await trio.sleep(0.01)  # stored before the check starts
    await broker.transactions.check(0, 15)


async def test_transaction_check_lets_other_work_run(tmp_path: Path) -> None:
    # finding (30-minute run for issue #24): thousands of half messages of producers long gone made the
    # transaction check run its whole pass (up to a minute) without yielding: the broker answered nothing
    # meanwhile. Java's check has its own thread; ours now gives the event loop back between messages
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            await send_halves(c, 200)
        await trio.sleep(0.05)
        ran = 0
        done = trio.Event()

        async def other() -> None:
            nonlocal ran
            while not done.is_set():
                ran += 1
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(other)
            await trio.sleep(0)
            await broker.transactions.check(0, 15)
            done.set()
        assert ran >= 50, f"the check ran {ran} other steps for 200 half messages"


async def test_check_offsets_deleted_or_set_back_do_not_copy_every_half_again(tmp_path: Path) -> None:
    # finding (30-minute runs for issue #24): fuzzed DELETE_SUBSCRIPTIONGROUP (with removeOffset) and
    # UPDATE_CONSUMER_OFFSET requests for CID_RMQ_SYS_TRANS sent the transaction check back to the half
    # queue's first message each time, and it put back a copy of every half it had put back before: 4.5
    # million copies of one half, a GB of CommitLog, still growing after the run. It goes on from where
    # it left the queue now
    from rocketpy.codecs.codes import MixAll
    from rocketpy.codecs.headers import DeleteSubscriptionGroupRequestHeader, UpdateConsumerOffsetRequestHeader
    from rocketpy.testing import broker_client, running_broker

    half = MixAll.RMQ_SYS_TRANS_HALF_TOPIC
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            await send_halves(c, 20)
            for round_ in range(1, 5):
                await trio.sleep(0.01)  # stored before the check starts
                await broker.transactions.check(0, 15)
                assert broker.store.get_max_offset_in_queue(half, 0) == 20 * (round_ + 1)
                if round_ % 2:  # the offsets deleted, or set back to the first half
                    forget = DeleteSubscriptionGroupRequestHeader(group_name=MixAll.CID_SYS_RMQ_TRANS,
                                                                  remove_offset=True)
                    answer = await c.invoke(RequestCode.DELETE_SUBSCRIPTIONGROUP, forget)
                    assert answer.code == ResponseCode.SUCCESS
                    assert broker.offsets.query(MixAll.CID_SYS_RMQ_TRANS, half, 0) < 0
                else:
                    back = UpdateConsumerOffsetRequestHeader(consumer_group=MixAll.CID_SYS_RMQ_TRANS, topic=half,
                                                             queue_id=0, commit_offset=0)
                    answer = await c.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, back)
                    assert answer.code == ResponseCode.SUCCESS
                    assert broker.offsets.query(MixAll.CID_SYS_RMQ_TRANS, half, 0) == 0
            # the next check takes up where the last one left the queue: its stored offset is back there
            await trio.sleep(0.01)
            await broker.transactions.check(0, 15)
            assert broker.store.get_max_offset_in_queue(half, 0) == 20 * 6
            assert broker.offsets.query(MixAll.CID_SYS_RMQ_TRANS, half, 0) == 20 * 5


async def test_check_offset_set_beyond_the_queue_then_back_does_not_copy_every_half_again(tmp_path: Path) -> None:
    # finding (60-minute run for issue #24): UPDATE_CONSUMER_OFFSET set CID_RMQ_SYS_TRANS's half-queue offset
    # to 2^40, beyond the queue, then back to 0. The check took the first as walked and the queue as one
    # made anew after it: it went back to the first half and copied every half again (a GB of CommitLog
    # and 6.9 million log lines in the next 35 minutes)
    from rocketpy.codecs.codes import MixAll
    from rocketpy.codecs.headers import UpdateConsumerOffsetRequestHeader
    from rocketpy.testing import broker_client, running_broker

    half = MixAll.RMQ_SYS_TRANS_HALF_TOPIC
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            await send_and_check(c, broker, 20)
            assert broker.store.get_max_offset_in_queue(half, 0) == 40
            for offset in (1 << 40, 0):
                header = UpdateConsumerOffsetRequestHeader(consumer_group=MixAll.CID_SYS_RMQ_TRANS, topic=half,
                                                           queue_id=0, commit_offset=offset)
                answer = await c.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, header)
                assert answer.code == ResponseCode.SUCCESS
                await send_and_check(c, broker, 0)
                # beyond the queue, the offset is taken back to its end (as Java's check goes on from the next
                # offset its read gives), skipping the copies; set back, it stays there
                assert broker.store.get_max_offset_in_queue(half, 0) == 40
                assert broker.offsets.query(MixAll.CID_SYS_RMQ_TRANS, half, 0) == 40


async def test_a_half_queue_made_anew_is_checked_from_its_start(tmp_path: Path) -> None:
    # a half queue destroyed (its topic's queues deleted, or expired) and made again restarts at offset 0:
    # how far the check walked the old one must not skip the new one's halves
    from rocketpy.codecs.codes import MixAll
    from rocketpy.testing import broker_client, running_broker

    half = MixAll.RMQ_SYS_TRANS_HALF_TOPIC
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            await send_and_check(c, broker, 20)
            assert broker.offsets.query(MixAll.CID_SYS_RMQ_TRANS, half, 0) == 20
            assert broker.store.delete_topics([half]) == 1
            await send_and_check(c, broker, 1)  # the stored 20 is beyond the new queue: taken to its end
            assert broker.offsets.query(MixAll.CID_SYS_RMQ_TRANS, half, 0) == 1
            await send_and_check(c, broker, 30)
            # all 30 new ones checked: each put back once
            assert broker.store.get_max_offset_in_queue(half, 0) == 61
            assert broker.offsets.query(MixAll.CID_SYS_RMQ_TRANS, half, 0) == 31


async def test_a_half_born_before_the_files_kept_is_discarded(tmp_path: Path) -> None:
    # needSkip, as Java's check: a half born longer ago than fileReservedTime is not checked but discarded
    # (a fuzzed born timestamp of 1 was put back and checked 15 times); an unreadable check count is -1
    from rocketpy.codecs.codes import MessageSysFlag, MixAll
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            for born, times in ((1, "0"), (None, "x"), (None, "15")):
                header = c.send_header("TTx", {"TRAN_MSG": "true", "PGROUP": "PGTx", "TRANSACTION_CHECK_TIMES": times},
                                       sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
                if born is not None:
                    header.born_timestamp = born
                answer = await c.invoke(RequestCode.SEND_MESSAGE_V2, header, b"half")
                assert answer.code == ResponseCode.SUCCESS
        await trio.sleep(0.01)
        await broker.transactions.check(0, 15)
        store = broker.store
        # the old one and the one checked 15 times discarded; the one with "x" put back, counted 0
        assert store.get_max_offset_in_queue(MixAll.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 0) == 2
        assert store.get_max_offset_in_queue(MixAll.RMQ_SYS_TRANS_HALF_TOPIC, 0) == 4


        def stored(topic: str, offset: int) -> dict[str, str]:
            cq = store.find_consume_queue(topic, 0)
            unit = cq.get_unit(offset) if cq is not None else None
            msg = store.look_message_by_offset(unit.commit_log_offset, unit.size) if unit is not None else None
            assert msg is not None
            return msg.properties

        # needDiscard counted the old one's check before needSkip discarded it; the copy of "x" counts 0
        assert stored(MixAll.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 0)["TRANSACTION_CHECK_TIMES"] == "1"
        assert stored(MixAll.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 1)["TRANSACTION_CHECK_TIMES"] == "15"
        assert stored(MixAll.RMQ_SYS_TRANS_HALF_TOPIC, 3)["TRANSACTION_CHECK_TIMES"] == "0"


@pytest.mark.parametrize("body", [b'{"clientID":"c","producerDataSet":[null]}',
                                  b'{"clientID":"c","consumerDataSet":[null],"producerDataSet":[]}',
                                  # the 30-minute run of 27 Nov: a null set raised TypeError
                                  b'{"clientID":"c","consumerDataSet":null}',
                                  b'{"clientID":"c","producerDataSet":null,"consumerDataSet":[]}'])
async def test_heartbeat_with_a_null_entry_is_refused(
    tmp_path: Path, body: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    # finding (30-minute run for issue #24): a HEART_BEAT whose producerDataSet held a null raised
    # AttributeError (a traceback); refused now, one log line, nothing registered
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            answer = await c.client.invoke(c.addr, RemotingCommand(code=RequestCode.HEART_BEAT, body=body))
            assert answer.code == ResponseCode.SYSTEM_ERROR and "null" in (answer.remark or "")
        assert not broker.producers.groups and not broker.consumers.groups
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.parametrize("code", [RequestCode.LOCK_BATCH_MQ, RequestCode.UNLOCK_BATCH_MQ])
async def test_lock_with_a_null_queue_set_is_refused(
    tmp_path: Path, code: int, caplog: pytest.LogCaptureFixture
) -> None:
    # finding (last fuzz run for issue #24): LOCK_BATCH_MQ with "mqSet": null raised TypeError (a traceback)
    from rocketpy.testing import broker_client, running_broker

    body = b'{"consumerGroup":"G","clientId":"c","mqSet":null}'
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            answer = await c.client.invoke(c.addr, RemotingCommand(code=code, body=body))
            assert answer.code == ResponseCode.SYSTEM_ERROR and "mqSet is null" in (answer.remark or "")
        assert broker.locks.table == {}
    assert not [r for r in caplog.records if r.exc_info]


async def test_the_client_scan_forgets_expired_locks_when_nobody_locks_any_more(tmp_path: Path, virtual_clock) -> None:  # type: ignore[no-untyped-def]
    # memory finding: the lock table was purged only by the next LOCK_BATCH_MQ, so after the last
    # orderly consumer went, its groups' locks stayed
    from rocketpy.codecs.bodies import MessageQueue
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        broker.locks.clock = lambda: trio.current_time() * 1000  # leases: the virtual clock here
        broker.locks.max_live_ms = 4000  # rocketmq.broker.rebalance.lockMaxLiveTime, 60 s by default
        async with broker_client(broker.address) as c:
            mqs = [MessageQueue(topic="TLock", broker_name=broker.config.broker_name, queue_id=q) for q in range(4)]
            assert len(await c.lock("GLock", mqs)) == 4
        assert set(broker.locks.table) == {"GLock"}
        await trio.sleep(2)
        assert set(broker.locks.table) == {"GLock"}  # still held: a lock lives on after its last refresh
        await trio.sleep(2 + 10)  # past expiry, and one 10 s client scan after it
        assert broker.locks.table == {}


def test_made_up_topic_names_checked_on_send_are_not_all_kept() -> None:
    # memory finding: the names a send's topic check passed were kept, up to 100,000 of them (some 25 MB),
    # though the topic need not exist: a peer sending made-up names left them all behind
    import tracemalloc

    from rocketpy.broker.processors.send import validate_topic

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(20_000):
            assert validate_topic(f"T{i}".ljust(100, "x")) is None
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 1536 * 1024
    assert validate_topic("bad topic") is not None and validate_topic("x" * 128) is not None
