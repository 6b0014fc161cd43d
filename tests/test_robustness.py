"""Hostile input against the broker and the NameServer over real sockets.

Every case sends raw bytes on a connection of its own and expects either the answer a
Java 4.9.8 server gives (its processor's code, else SYSTEM_ERROR with a remark) or a
closed connection with a log line. Afterwards the server must still answer on a NEW
connection, and the broker must still hand out the messages stored before the attack.
Bad config files must stop ``rocketpy broker`` / ``rocketpy namesrv`` / ``rocketpy serve``
with one clear line and a non-zero status, never a traceback.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio

from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode
from rocketpy.codecs.bodies.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    body_crc32,
)
from rocketpy.codecs.headers.namesrv import GetRouteInfoRequestHeader
from rocketpy.namesrv import NameServer, NamesrvConfig
from rocketpy.remoting import open_remoting_client
from rocketpy.remoting.connection import CommandReader
from rocketpy.testing import BrokerTestClient, broker_client, free_broker_port, free_port, running_broker, wait_until

R = RequestCode
TOPIC = "Robust"
STORED = [b"stored-0", b"stored-1", b"stored-2"]
CLOSED = "closed"


# -- raw wire helpers -------------------------------------------------------------------------


def frame(header: bytes, body: bytes = b"", serialize_type: int = 0) -> bytes:
    """A frame as the wire carries it: length, serialize type + header length, header, body."""
    return struct.pack(">ii", 4 + len(header) + len(body), (serialize_type << 24) | len(header)) + header + body


def json_request(code: Any, ext: Any = None, body: bytes = b"", **fields: Any) -> bytes:
    """A JSON-header request frame; ``code``/``ext``/``fields`` may be of any (wrong) JSON type."""
    doc: dict[str, Any] = {"code": code, "flag": 0, "language": "JAVA", "opaque": 77, "version": 435}
    if ext is not None:
        doc["extFields"] = ext
    doc.update(fields)
    return frame(json.dumps(doc).encode(), body)


async def exchange(addr: str, data: bytes, *, half_close: bool = False) -> RemotingCommand | str:
    """Send ``data`` on a fresh connection: the first answer, or CLOSED if the server hung up."""
    host, port = addr.rsplit(":", 1)
    stream = await trio.open_tcp_stream(host, int(port))
    reader = CommandReader()
    try:
        try:
            await stream.send_all(data)
            if half_close:
                await stream.send_eof()
        except trio.BrokenResourceError:
            return CLOSED  # the server closed while we were still sending (an oversized frame)
        with trio.fail_after(5):
            while True:
                try:
                    chunk = await stream.receive_some(65536)
                except trio.BrokenResourceError:
                    return CLOSED  # reset: the server closed with our bytes unread
                if not chunk:
                    return CLOSED
                answers = reader.feed(chunk)
                if answers:
                    assert answers[0].opaque == 77 and answers[0].is_response
                    return answers[0]
    finally:
        await stream.aclose()


@dataclass
class Case:
    name: str
    data: Callable[[], bytes]
    #: CLOSED, or (response code, text the remark must contain)
    expect: str | tuple[int, str]
    half_close: bool = False


def check(case: Case, answer: RemotingCommand | str, caplog: pytest.LogCaptureFixture) -> None:
    if case.expect == CLOSED:
        assert answer == CLOSED, f"{case.name}: expected a closed connection, got {answer}"
        logged = [r for r in caplog.records if r.name == "rocketpy.remoting" and r.levelno >= logging.WARNING]
        assert logged, f"{case.name}: the server closed the connection without a log line"
        return
    assert isinstance(answer, RemotingCommand), f"{case.name}: expected an answer, the connection was closed"
    code, remark = case.expect
    assert answer.code == code, f"{case.name}: code {answer.code} ({answer.remark!r}), expected {code}"
    assert answer.remark, f"{case.name}: an error answer without a remark"
    assert remark in answer.remark, f"{case.name}: remark {answer.remark!r} lacks {remark!r}"


# -- cases both servers share: framing and header decoding ------------------------------------

FRAMING_CASES = [
    Case("absurd length", lambda: struct.pack(">ii", 0x7FFFFFF0, 0) + b"x" * 64, CLOSED),
    Case("negative length", lambda: struct.pack(">ii", -8, 0), CLOSED),
    Case("frame above the 16 MiB limit", lambda: json_request(10, {}, b"x" * (17 * 1024 * 1024)), CLOSED),
    Case("truncated frame then close", lambda: json_request(10, {"a": "b"})[:-5], CLOSED, half_close=True),
    Case("header is not JSON", lambda: frame(b"{not json"), CLOSED),
    Case("header is a JSON array", lambda: frame(b"[1, 2]"), CLOSED),
    Case("code is a word", lambda: json_request("abc"), CLOSED),
    Case("code is a float", lambda: json_request(1.5), CLOSED),
    Case("extFields is a list", lambda: json_request(10, ["a", "b"]), CLOSED),
    Case("language is a list", lambda: json_request(10, {}, language=[1]), CLOSED),
    Case("header length past the frame", lambda: struct.pack(">ii", 8, 100) + b"abcd", CLOSED),
    Case("unknown serialize type", lambda: frame(b"{}", serialize_type=9), CLOSED),
    Case("truncated ROCKETMQ header", lambda: frame(b"\x00\x0a\x00", serialize_type=1), CLOSED),
    Case(
        "unknown request code",
        lambda: json_request(9999, {}),
        (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "request type 9999 not supported"),
    ),
]


# -- the broker ----------------------------------------------------------------------------------

SEND_V2 = {"a": "PG", "b": TOPIC, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1700000000000", "h": "0"}
SEND_V2.update({"i": "WAIT\x01true", "j": "0", "k": "false", "m": "false"})
PULL = {
    "consumerGroup": "G",
    "topic": TOPIC,
    "queueId": "0",
    "queueOffset": "0",
    "maxMsgNums": "32",
    "sysFlag": "4",
    "commitOffset": "0",
    "suspendTimeoutMillis": "0",
    "subVersion": "0",
    "subscription": "*",
}
CREATE_TOPIC = {
    "topic": "Fine",
    "defaultTopic": "TBW102",
    "readQueueNums": "4",
    "writeQueueNums": "4",
    "perm": "6",
    "topicFilterType": "SINGLE_TAG",
}
BAD_BODIES = {"broken JSON": b'{"a": ', "a JSON array": b"[1, 2]", "not UTF-8": b"\xff\xfe{}"}
SE = ResponseCode.SYSTEM_ERROR


def without(d: dict[str, str], key: str) -> dict[str, str]:
    return {k: v for k, v in d.items() if k != key}


BROKER_CASES = FRAMING_CASES + [
    Case("SEND_MESSAGE_V2 without b (topic)", lambda: json_request(310, without(SEND_V2, "b"), b"x"), (SE, "topic")),
    Case("SEND_MESSAGE_V2 with a word for e", lambda: json_request(310, {**SEND_V2, "e": "zz"}, b"x"), (SE, "zz")),
    Case("PULL_MESSAGE without queueId", lambda: json_request(11, without(PULL, "queueId")), (SE, "queueId")),
    Case(
        "QUERY_CONSUMER_OFFSET with queueId abc",
        lambda: json_request(14, {"consumerGroup": "G", "topic": TOPIC, "queueId": "abc"}),
        (SE, "abc"),
    ),
    Case(
        "UPDATE_CONSUMER_OFFSET with commitOffset x",
        lambda: json_request(15, {"consumerGroup": "G", "topic": TOPIC, "queueId": "0", "commitOffset": "x"}),
        (SE, 'NumberFormatException: For input string: "x"'),
    ),
    *[
        Case(f"{code.name} with {what}", (lambda c=code, b=body: json_request(int(c), None, b)), (SE, "Error"))
        for code in (R.HEART_BEAT, R.LOCK_BATCH_MQ, R.UNLOCK_BATCH_MQ, R.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
        for what, body in BAD_BODIES.items()
    ],
    Case(
        "HEART_BEAT with clientID a list",
        lambda: json_request(34, None, b'{"clientID": [1], "consumerDataSet": []}'),
        (SE, "clientID"),
    ),
    Case("HEART_BEAT with a null consumer", lambda: json_request(34, None, b'{"consumerDataSet": [null]}'), (SE, "")),
    Case("LOCK_BATCH_MQ with mqSet a string", lambda: json_request(41, None, b'{"mqSet": "x"}'), (SE, "mqSet")),
    Case(
        "LOCK_BATCH_MQ with a null queue",
        lambda: json_request(41, None, b'{"consumerGroup": "G", "clientId": "c", "mqSet": [null]}'),
        (SE, "null MessageQueue"),
    ),
    Case(
        "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP without groupName",
        lambda: json_request(200, None, b'{"retryQueueNums": 1}'),
        (SE, "groupName"),
    ),
    Case(
        "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP with groupName an object",
        lambda: json_request(200, None, b'{"groupName": {"a": 1}}'),
        (SE, "groupName"),
    ),
    # a broker does not serve NameServer codes (Java registers no processor for them)
    Case(
        "REGISTER_BROKER to a broker",
        lambda: json_request(103, {}, b"{not json"),
        (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "not supported"),
    ),
    Case(
        "SEND_BATCH_MESSAGE with a corrupt body",
        lambda: json_request(320, {**SEND_V2, "m": "true"}, b"\x00\x00\x00\x10garbage-garbage-garbage"),
        (SE, "corrupt batch body"),
    ),
    Case(
        "SEND_BATCH_MESSAGE with a truncated body",
        lambda: json_request(320, {**SEND_V2, "m": "true"}, b"\xff\xff\xff\xff"),
        (SE, "corrupt batch body"),
    ),
    Case(
        "PULL_MESSAGE with a negative offset",
        lambda: json_request(11, {**PULL, "queueOffset": "-5"}),
        (ResponseCode.PULL_OFFSET_MOVED, "OFFSET_TOO_SMALL"),
    ),
    Case(
        "PULL_MESSAGE with a huge offset",
        lambda: json_request(11, {**PULL, "queueOffset": str(2**62)}),
        (ResponseCode.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY"),
    ),
    Case("PULL_MESSAGE with queueId -1", lambda: json_request(11, {**PULL, "queueId": "-1"}), (SE, "queueId[-1]")),
    Case(
        "UPDATE_AND_CREATE_TOPIC with an illegal name",
        lambda: json_request(17, {**CREATE_TOPIC, "topic": "bad topic!"}),
        (SE, "contains illegal characters"),
    ),
    Case(
        "UPDATE_AND_CREATE_TOPIC with a blank name",
        lambda: json_request(17, {**CREATE_TOPIC, "topic": "  "}),
        (SE, "The specified topic is blank."),
    ),
    Case(
        "UPDATE_AND_CREATE_TOPIC without readQueueNums",
        lambda: json_request(17, without(CREATE_TOPIC, "readQueueNums")),
        (SE, "readQueueNums"),
    ),
    Case(
        "UPDATE_AND_CREATE_TOPIC with perm x",
        lambda: json_request(17, {**CREATE_TOPIC, "perm": "x"}),
        (SE, 'NumberFormatException: For input string: "x"'),
    ),
    Case(
        "UPDATE_AND_CREATE_TOPIC with an unknown topicFilterType",
        lambda: json_request(17, {**CREATE_TOPIC, "topicFilterType": "NOPE"}),
        (SE, "topicFilterType"),
    ),
    Case(
        "SEND_MESSAGE_V2 with a 10 MB body",
        lambda: json_request(310, SEND_V2, b"x" * (10 * 1024 * 1024)),
        (ResponseCode.MESSAGE_ILLEGAL, "the message is illegal"),
    ),
]


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Any]:
    async with running_broker(str(tmp_path / "store")) as b:
        async with broker_client(b.address) as c:
            for body in STORED:
                assert (await c.send(TOPIC, body)).code == ResponseCode.SUCCESS
        yield b


async def assert_broker_healthy(addr: str) -> None:
    """A new connection still sends, and the messages stored before are all still there."""
    async with broker_client(addr) as c:
        resp, msgs = await c.pull("G-check", TOPIC, 0, 0)
        assert resp.code == ResponseCode.SUCCESS, resp
        assert [m.body for m in msgs][: len(STORED)] == STORED
        assert (await c.send(TOPIC, b"after")).code == ResponseCode.SUCCESS


@pytest.mark.parametrize("case", BROKER_CASES, ids=lambda c: c.name)
async def test_broker_survives(broker: Any, case: Case, caplog: pytest.LogCaptureFixture) -> None:
    answer = await exchange(broker.address, case.data(), half_close=case.half_close)
    check(case, answer, caplog)
    await assert_broker_healthy(broker.address)
    # nothing half-made by a refused request may reach the broker's tables or files
    assert "" not in broker.groups.table and None not in broker.groups.table
    assert all(None not in locks for locks in broker.locks.table.values())
    assert "Fine" not in broker.topics.table and "bad topic!" not in broker.topics.table


async def test_broker_refused_batch_stores_nothing(broker: Any) -> None:
    before = broker.store.max_phy_offset
    answer = await exchange(broker.address, json_request(320, {**SEND_V2, "m": "true"}, b"\x00" * 30))
    assert isinstance(answer, RemotingCommand) and answer.code == ResponseCode.SYSTEM_ERROR
    assert broker.store.max_phy_offset == before


async def test_broker_huge_max_msg_nums_is_bounded(broker: Any) -> None:
    # Java caps a pull by its transfer limits whatever maxMsgNums says
    answer = await exchange(broker.address, json_request(11, {**PULL, "maxMsgNums": "2147483647"}))
    assert isinstance(answer, RemotingCommand) and answer.code == ResponseCode.SUCCESS
    assert answer.ext_fields is not None and answer.ext_fields["nextBeginOffset"] == str(len(STORED))


async def test_broker_keeps_serving_while_a_peer_is_mid_frame(broker: Any) -> None:
    # a peer that announced a frame and went quiet holds its own connection only
    host, port = broker.address.rsplit(":", 1)
    stalled = await trio.open_tcp_stream(host, int(port))
    try:
        await stalled.send_all(json_request(10, {"a": "b"})[:10])
        await assert_broker_healthy(broker.address)
    finally:
        await stalled.aclose()


async def test_broker_valid_requests_after_garbage_on_other_connections(broker: Any) -> None:
    # many bad connections at once, then normal traffic
    async def attack(case: Case) -> None:
        assert await exchange(broker.address, case.data(), half_close=case.half_close) == CLOSED

    async with trio.open_nursery() as nursery:
        for case in FRAMING_CASES:
            if case.expect == CLOSED:
                nursery.start_soon(attack, case)
    async with broker_client(broker.address) as c:
        client: BrokerTestClient = c
        resp = await client.query_offset("G-none", TOPIC, 0)
        assert resp.code in (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND)
    await assert_broker_healthy(broker.address)


# -- the NameServer ---------------------------------------------------------------------------


def register_frame(
    *,
    body: bytes | None = None,
    crc: int | None = None,
    compressed: bool = False,
    broker_id: str | None = "0",
    broker: str = "broker-bad",
) -> bytes:
    if body is None:
        wrapper = TopicConfigSerializeWrapper(
            topic_config_table={"Bad": TopicConfig(topic_name="Bad", read_queue_nums=4, write_queue_nums=4, perm=6)},
            data_version=DataVersion(timestamp=1, counter=1),
        )
        body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).encode(compress=compressed)
    ext = {
        "brokerName": broker,
        "brokerAddr": "127.0.0.1:1" if broker == "broker-bad" else "127.0.0.1:3",
        "clusterName": "Bad",
        "haServerAddr": "127.0.0.1:2",
        "compressed": "true" if compressed else "false",
        "bodyCrc32": str(body_crc32(body) if crc is None else crc),
    }
    if broker_id is not None:
        ext["brokerId"] = broker_id
    return json_request(int(R.REGISTER_BROKER), ext, body)


NAMESRV_CASES = FRAMING_CASES + [
    *[
        Case(f"REGISTER_BROKER with {what}", (lambda b=body: register_frame(body=b)), (SE, "RegisterBrokerBody"))
        for what, body in BAD_BODIES.items()
    ],
    Case(
        "REGISTER_BROKER with topicConfigTable of numbers",
        lambda: register_frame(body=b'{"topicConfigSerializeWrapper": {"topicConfigTable": {"T": 5}}}'),
        (SE, "TopicConfig"),
    ),
    Case(
        "REGISTER_BROKER with filterServerList a string",
        lambda: register_frame(body=b'{"filterServerList": "x"}'),
        (SE, "filterServerList"),
    ),
    Case("REGISTER_BROKER without brokerId", lambda: register_frame(broker_id=None), (SE, "brokerId")),
    Case(
        "REGISTER_BROKER with brokerId abc",
        lambda: register_frame(broker_id="abc"),
        (SE, 'NumberFormatException: For input string: "abc"'),
    ),
    Case(
        "compressed REGISTER_BROKER with a bad CRC", lambda: register_frame(compressed=True, crc=12345), (SE, "crc32")
    ),
    Case(
        "compressed REGISTER_BROKER that is not zlib",
        lambda: register_frame(body=b"garbage", compressed=True),
        (SE, "deflate"),
    ),
    Case(
        "compressed REGISTER_BROKER with a truncated stream",
        lambda: register_frame(body=zlib.compress(b"\x00\x00\x00\x40{}")[:-3], compressed=True),
        (SE, "RegisterBrokerBody"),
    ),
    Case(
        "QUERY_DATA_VERSION with broken JSON",
        lambda: json_request(int(R.QUERY_DATA_VERSION), {"brokerAddr": "127.0.0.1:1", "brokerId": "0"}, b"{not"),
        (SE, "JSON"),
    ),
    Case(
        "UPDATE_NAMESRV_CONFIG with a bad escape",
        lambda: json_request(int(R.UPDATE_NAMESRV_CONFIG), None, b"a=\\u12zz"),
        (SE, "string2Properties error"),
    ),
    Case(
        "REGISTER_BROKER with a 10 MB body",
        lambda: register_frame(body=b"{" * (10 * 1024 * 1024)),
        (SE, "is over registerBrokerMaxBodySize"),
    ),
    Case(
        "PULL_MESSAGE to a NameServer",
        lambda: json_request(11, without(PULL, "queueId")),
        (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "not supported"),
    ),
]


@pytest.fixture
async def namesrv(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[NameServer]:
    config = NamesrvConfig(
        listen_port=0,
        kv_config_path=str(tmp_path / "kvConfig.json"),
        config_store_path=str(tmp_path / "namesrv.properties"),
        scan_not_active_broker_interval=50,
    )
    ns: NameServer = await nursery.start(NameServer(config).run)
    # a broker stays registered while its connection lives: keep this one open
    async with open_remoting_client() as client:
        request = RemotingCommand.decode(register_frame(broker="broker-ok"))
        answer = await client.invoke(ns.address, request, 5)
        assert answer.code == ResponseCode.SUCCESS
        yield ns
    nursery.cancel_scope.cancel()


async def assert_namesrv_healthy(ns: NameServer) -> None:
    """A new connection still gets the route registered before the attack."""
    request = RemotingCommand.request(R.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="Bad"), opaque=77)
    answer = await exchange(ns.address, request.encode())
    assert isinstance(answer, RemotingCommand) and answer.code == ResponseCode.SUCCESS, answer
    assert b"broker-ok" in (answer.body or b"")


@pytest.mark.parametrize("case", NAMESRV_CASES, ids=lambda c: c.name)
async def test_namesrv_survives(namesrv: NameServer, case: Case, caplog: pytest.LogCaptureFixture) -> None:
    answer = await exchange(namesrv.address, case.data(), half_close=case.half_close)
    check(case, answer, caplog)
    await assert_namesrv_healthy(namesrv)
    assert "broker-bad" not in namesrv.routes.broker_addr_table


@pytest.mark.parametrize("interval", ["-1", "0"])
async def test_namesrv_survives_a_non_positive_scan_interval(
    namesrv: NameServer, interval: str, virtual_clock: trio.testing.MockClock
) -> None:
    # UPDATE_NAMESRV_CONFIG changes the liveness scan period at run time; trio.sleep refuses
    # negatives, and this used to take the whole NameServer down a scan later
    body = f"scanNotActiveBrokerInterval={interval}".encode()
    answer = await exchange(namesrv.address, json_request(int(R.UPDATE_NAMESRV_CONFIG), None, body))
    assert isinstance(answer, RemotingCommand) and answer.code == ResponseCode.SUCCESS
    await trio.sleep(0.2)  # virtual: several scan rounds at the old 50 ms period
    await assert_namesrv_healthy(namesrv)


# -- bad config files -------------------------------------------------------------------------

BAD_CONFIGS = {
    "malformed properties": ("brokerName=\\u12zz\n", "Malformed \\uxxxx encoding"),
    "non-numeric listenPort": ("listenPort=abc\n", "listenPort='abc' is not an integer"),
    "listenPort out of range": ("listenPort=70000\n", "listenPort"),
    "unknown flushDiskType": ("flushDiskType=SOMETIMES\n", "flushDiskType='SOMETIMES'"),
    "unknown brokerRole": ("brokerRole=BOSS\n", "brokerRole='BOSS'"),
    "non-numeric store size": ("mappedFileSizeCommitLog=big\n", "mappedFileSizeCommitLog='big'"),
    "malformed messageDelayLevel": ("messageDelayLevel=1s 5x\n", "messageDelayLevel"),
    "negative offset flush period": ("flushConsumerOffsetInterval=-5\n", "flushConsumerOffsetInterval=-5"),
}


def rocketpy(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # the rocketpy next to this file, whatever the environment has installed
    root = str(Path(__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "rocketpy", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=15
    )


def assert_refused(result: subprocess.CompletedProcess[str], expected: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], result.stderr


def write_conf(path: Path, text: str | bytes) -> Path:
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


@pytest.mark.parametrize("name", BAD_CONFIGS)
def test_broker_cli_refuses_bad_config(tmp_path: Path, name: str) -> None:
    text, expected = BAD_CONFIGS[name]
    conf = write_conf(tmp_path / "broker.conf", text)
    # a subprocess with a timeout: a config wrongly accepted starts a broker, which must not hang the suite
    result = rocketpy("broker", "-c", str(conf), "--store", str(tmp_path / "store"), cwd=tmp_path)
    assert_refused(result, expected)
    assert "bad config" in result.stderr


def test_broker_cli_refuses_unwritable_store(tmp_path: Path) -> None:
    # a regular file where a directory must go: refused even for root, which ignores chmod
    (tmp_path / "afile").write_text("x")
    conf = write_conf(tmp_path / "broker.conf", f"storePathRootDir={tmp_path / 'afile' / 'store'}\n")
    assert_refused(rocketpy("broker", "-c", str(conf), cwd=tmp_path), "storePathRootDir")


def test_broker_cli_refuses_missing_config(tmp_path: Path) -> None:
    assert_refused(rocketpy("broker", "-c", str(tmp_path / "nope.conf"), cwd=tmp_path), "nope.conf")


def test_serve_refuses_bad_config(tmp_path: Path) -> None:
    conf = write_conf(tmp_path / "extra.conf", "flushDiskType=SOMETIMES\n")
    result = rocketpy("serve", "-c", str(conf), "--store", str(tmp_path / "store"), cwd=tmp_path)
    assert_refused(result, "flushDiskType")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("listenPort=abc\n", "listenPort='abc' is not an integer"),
        ("listenPort=99999\n", "listenPort"),
        ("a=\\u00zz\n", "Malformed"),
        ("orderMessageEnable=true\nserverChannelMaxIdleTimeSeconds=soon\n", "serverChannelMaxIdleTimeSeconds"),
    ],
)
def test_namesrv_cli_refuses_bad_config(tmp_path: Path, text: str, expected: str) -> None:
    conf = write_conf(tmp_path / "namesrv.properties", text)
    assert_refused(rocketpy("namesrv", "-c", str(conf), cwd=tmp_path), expected)


def test_namesrv_config_stays_lenient_at_run_time() -> None:
    # UPDATE_NAMESRV_CONFIG keeps Java's leniency: a bad value is skipped, not fatal
    config = NamesrvConfig(listen_port=0)
    config.apply({"listenPort": "abc", "orderMessageEnable": "true"})
    assert config.listen_port == 0 and config.order_message_enable is True


# -- clean shutdown ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "signum,times", [(signal.SIGINT, 1), (signal.SIGTERM, 1), (signal.SIGINT, 2)], ids=["SIGINT", "SIGTERM", "SIGINTx2"]
)
def test_serve_stops_cleanly_on_signal(tmp_path: Path, signum: int, times: int) -> None:
    """One signal, or an impatient second Ctrl-C: a clean stop, no traceback."""
    # -X dev shows ResourceWarnings and never-awaited coroutines on stderr
    root = str(Path(__file__).resolve().parents[1])
    args = [sys.executable, "-X", "dev", "-m", "rocketpy", "serve", "--store", str(tmp_path / "store"), "--no-vip"]
    # the broker's VIP (-2) and HA (+1) ports must be free as well
    args += ["--namesrv-port", str(free_port()), "--broker-port", str(free_broker_port())]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        banner = proc.stdout.readline()
        assert banner.startswith("rocketpy serve: NameServer 127.0.0.1:"), banner
        for i in range(times):
            if i:
                time.sleep(0.05)  # the second arrives while the broker unregisters
            proc.send_signal(signum)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    for marker in ("Traceback", "ResourceWarning", "never awaited", "ERROR"):
        assert marker not in err, err
    assert "broker broker-a stopped" in err
    # the shutdown persisted the broker's state: a clean restart finds it
    assert (tmp_path / "store" / "config" / "topics.json").exists()
    assert not (tmp_path / "store" / "abort").exists()


async def test_running_broker_releases_fds_and_mappings(tmp_path: Path) -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    def store_maps() -> int:
        with open("/proc/self/maps") as maps:
            return sum(str(tmp_path) in line for line in maps)

    async def cycle() -> None:
        async with running_broker(str(tmp_path / "store")) as b:
            async with broker_client(b.address) as c:
                sent = await c.send(TOPIC, b"x")
                assert sent.code == ResponseCode.SUCCESS
                end = int(sent.ext_fields["queueOffset"]) + 1
                async with trio.open_nursery() as polls:  # a long poll cut short by the shutdown
                    polls.start_soon(functools.partial(c.pull, "G", TOPIC, 0, end, suspend_ms=10_000))
                    await wait_until(lambda: b.hold.held_count > 0)  # the broker holds it
                    polls.cancel_scope.cancel()

    await cycle()  # first run: lazy imports, trio's thread cache
    before = open_fds()
    for _ in range(5):
        await cycle()
    assert open_fds() == before
    assert store_maps() == 0
