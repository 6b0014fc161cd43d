"""Socket fuzzer for the NameServer and the broker (issue #13).

Starts a NameServer and a broker in this process, then drives every request code of both
with random and mutated headers, bodies, frame bytes and frame boundaries from several raw
sockets at once, while a checker produces messages and pulls them back (every acknowledged
message must come back, in order, with its body) and a prober checks that both servers
still answer a fresh connection.

A *finding* is a handler or connection exception logged by a server (``log.exception``: a
traceback where a clear answer was due), a server that stops answering, or a lost
message. Each unique one (by exception type and innermost rocketpy frame) is written to
``--out`` with the frames that led to it, to be turned into a regression test.

    nice -n 19 python tools/fuzz/fuzz_servers.py --duration 1800 --out /tmp/fuzz-out

Totals (requests, bytes, findings) are printed at the end and kept in ``--out/stats.json``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import socket
import sys
import tempfile
import time
import traceback
from collections import deque
from pathlib import Path
from typing import Any

import trio

from rocketpy.codecs import RemotingCommand
from rocketpy.codecs.codes import LanguageCode, RequestCode, SerializeType
from rocketpy.codecs.headers.registry import REQUEST_HEADERS
from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.namesrv.server import NameServer
from rocketpy.remoting import open_remoting_client
from rocketpy.remoting.tls import TlsConfig, connect_stream
from rocketpy.testing import broker_client, running_broker

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import acl_escalation  # noqa: E402
import config_injection  # noqa: E402
from golden_values import GoldenRequest, load_golden_requests, mutate_golden  # noqa: E402
from server_process import ServerProcess, kv_config_path, memory_kib, start_servers, stop_server  # noqa: E402

TLS_CLIENT = TlsConfig(enable=True).client_context()

#: the checker's own names; fuzzed requests never use them (deleting its topic is not a bug)
CHECK_TOPIC = "FUZZ_CHECK_TOPIC"
CHECK_GROUP = "FUZZ_CHECK_GROUP"
#: codes whose legitimate effect would stop the checker (write permission, broker config)
UNSAFE_CODES = {
    RequestCode.UPDATE_BROKER_CONFIG,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER,
    RequestCode.UPDATE_NAMESRV_CONFIG,
}

WORDS = [
    "", "TBW102", "DefaultCluster", "broker-a", "topicA", "GID_a", "%RETRY%GID_a", "%DLQ%GID_a", "RMQ_SYS_TRACE_TOPIC",
    "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "*", "a || b", "TAGS", "SQL92", "a > 1", "a BETWEEN 1 AND 2",
    "a IN ('x')", "a IS NULL", "(((((((", "9" * 400, "-1", "0", "2147483648", "-9223372036854775809", "NaN", "1e308",
    "true", "false", "null", "127.0.0.1:10911", "127.0.0.1", ":", ";;", "\u00e9\u4e2d", "\x00", "a" * 300, "%", "\\",
    '{"a":1}', "[1,2]", "UNIQ_KEY", "KEYS", "DELAY", "TRAN_MSG", "PGROUP",
]
INTS = [0, 1, -1, 2, 7, 16, 31, 32, 255, 2**31 - 1, -(2**31), 2**31, 2**63 - 1, -(2**63), 2**64, 10**30]
JSON_KEYS = [
    "clientID", "producerDataSet", "consumerDataSet", "groupName", "consumeType", "messageModel", "consumeFromWhere",
    "subscriptionDataSet", "topic", "subString", "tagsSet", "codeSet", "subVersion", "expressionType", "unitMode",
    "topicConfigTable", "dataVersion", "timestamp", "counter", "filterServerList", "consumerGroup", "mqSet",
    "brokerName", "queueId", "offsetTable", "readQueueNums", "writeQueueNums", "perm", "topicFilterType",
    "topicSysFlag", "order", "brokerAddrs", "cluster", "list", "topicList", "classFilterMode", "filterClassSource",
]


def rand_text(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.5:
        return rng.choice(WORDS)
    if r < 0.75:
        return str(rng.choice(INTS) + rng.randint(-2, 2))
    if r < 0.9:
        return "".join(chr(rng.randint(1, 0x2FF)) for _ in range(rng.randint(0, 40)))
    return rng.choice(WORDS) * rng.randint(1, 2000)


def rand_json(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 4 or r < 0.3:
        return rng.choice([rand_text(rng), rng.choice(INTS), True, False, None, 1.5])
    if r < 0.65:
        return {rng.choice(JSON_KEYS + WORDS[:8]): rand_json(rng, depth + 1) for _ in range(rng.randint(0, 6))}
    return [rand_json(rng, depth + 1) for _ in range(rng.randint(0, 5))]


def rand_body(rng: random.Random) -> bytes | None:
    r = rng.random()
    if r < 0.2:
        return None
    if r < 0.5:
        return json.dumps(rand_json(rng)).encode()
    if r < 0.65:
        lines = [f"{rand_text(rng)}={rand_text(rng)}" for _ in range(rng.randint(0, 6))]
        return "\n".join(lines).encode("utf-8", "surrogatepass")
    if r < 0.97:
        return rng.randbytes(rng.choice([1, 4, 8, 20, 64, 200, 1024, 4096]))
    return rng.randbytes(rng.randint(64 * 1024, 1024 * 1024))


def rand_ext_fields(rng: random.Random, code: int) -> dict[str, str]:
    ext: dict[str, str] = {}
    cls = REQUEST_HEADERS.get(code)
    if cls is not None:
        for spec in cls.fields_spec:
            r = rng.random()
            if r < 0.1:
                continue  # leave it out (a required field missing)
            kind = spec.kind.lower()
            if kind in ("int", "integer", "long") and r < 0.7:
                ext[spec.java_name] = str(rng.choice(INTS) + rng.randint(-1, 1))
            elif kind == "boolean" and r < 0.7:
                ext[spec.java_name] = rng.choice(["true", "false", "TRUE", "1", ""])
            else:
                ext[spec.java_name] = rand_text(rng)
    for _ in range(rng.choice([0, 0, 0, 1, 3])):
        ext[rand_text(rng)[:50]] = rand_text(rng)
    for key in list(ext):
        if CHECK_TOPIC in ext[key] or CHECK_GROUP in ext[key]:
            ext[key] = "other"
    return ext


# -- structured requests: plausible values, so handlers get past their first checks ----------------

TOPICS = ["FuzzT0", "FuzzT1", "%RETRY%FuzzG0", "%DLQ%FuzzG0", "TBW102", "SCHEDULE_TOPIC_XXXX",
          "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "FuzzNew", "Fuzz-T.2", "a" * 127]
GROUPS = ["FuzzG0", "FuzzG1", "CID_RMQ_SYS_TRANS", "TOOLS_CONSUMER", "FuzzG-new"]
EXPRESSIONS = ["*", "TagA", "TagA || TagB", "a > 1", "a BETWEEN 1 AND 3 AND b IS NOT NULL", "(a = 'x') OR NOT b",
               "a IN ('x', 'y')", "a > " + "9" * 50, "TAGS = 'TagA'", "", "||", "a >", "NOT NOT NOT a"]
PROPERTY_KEYS = ["TAGS", "KEYS", "DELAY", "WAIT", "TRAN_MSG", "PGROUP", "UNIQ_KEY", "MAX_OFFSET", "MIN_OFFSET",
                 "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID", "RECONSUME_TIME", "MAX_RECONSUME_TIMES",
                 "TRANSACTION_CHECK_TIMES", "CHECK_IMMUNITY_TIME_IN_SECONDS", "CORRELATION_ID", "MSG_TYPE",
                 "REPLY_TO_CLIENT", "TTL", "a", "b", "__STARTDELIVERTIME"]


def plausible(rng: random.Random, name: str, kind: str) -> str:
    low = name.lower()
    if rng.random() < 0.08:
        return rand_text(rng)  # now and then, anything
    if "topic" in low:
        return rng.choice(TOPICS)
    if "group" in low:
        return rng.choice(GROUPS)
    if low in ("queueid", "queue_id") or low.endswith("queueid"):
        return str(rng.choice([0, 1, 2, 3, -1, 7, 1000]))
    if "offset" in low:
        return str(rng.choice([0, 1, 2, 5, 50, -1, 2**40, 2**63 - 1]))
    if low == "properties":
        props = {rng.choice(PROPERTY_KEYS): rng.choice(["1", "3", "18", "true", "false", "-1", "x", "TagA", "FuzzG0",
                                                        "FuzzT0", str(2**63), ""]) for _ in range(rng.randint(0, 6))}
        return "".join(f"{k}\x01{v}\x02" for k, v in props.items())
    if "subscription" in low or "substring" in low or "expression" == low:
        return rng.choice(EXPRESSIONS)
    if "expressiontype" in low:
        return rng.choice(["TAG", "SQL92", "", "sql92"])
    if "sysflag" in low:
        return str(rng.randrange(0, 64))
    if "delaylevel" in low:
        return str(rng.randint(-2, 20))
    if "maxmsgnums" in low or "nums" in low:
        return str(rng.choice([0, 1, 4, 32, 1000, -1]))
    if "timeout" in low or "millis" in low:
        return str(rng.choice([0, 10, 100, 1500]))  # long holds would only slow the fuzzer down
    if "brokername" in low:
        return rng.choice(["broker-a", "broker-b", ""])
    if "brokeraddr" in low or "addr" in low:
        return rng.choice(["127.0.0.1:10911", "127.0.0.1:1", "x"])
    if "brokerid" in low:
        return str(rng.choice([0, 1, 2, -1]))
    if "clientid" in low:
        return rng.choice(["127.0.0.1@fz", "127.0.0.1@fz2"])
    if "msgid" in low or "uniq" in low:
        return rng.choice(["7F0000010000000000000000", "00" * 16, "zz", "7F00000100002A9F0000000000000000"])
    if "commitorrollback" in low or "committorollback" in low:
        return str(rng.choice([0, 4, 8, 12, 3]))
    if "timestamp" in low or "time" in low:
        return str(rng.choice([0, int(time.time() * 1000), 2**62]))
    if kind in ("int", "integer", "long"):
        return str(rng.choice([0, 1, 2, 4, 8, 16, 6, -1]))
    if kind == "boolean":
        return rng.choice(["true", "false"])
    return rng.choice(WORDS[:12])


def structured_body(rng: random.Random, code: int) -> bytes | None:
    from rocketpy.codecs.bodies import (
        ConsumerData,
        HeartbeatData,
        LockBatchRequestBody,
        MessageQueue,
        ProducerData,
        SubscriptionData,
    )
    from rocketpy.codecs.codes import ConsumeFromWhere, ConsumeType, MessageModel
    from rocketpy.codecs.message import Message, encode_batch

    if code == RequestCode.HEART_BEAT:
        subs = [SubscriptionData(topic=rng.choice(TOPICS), sub_string=rng.choice(EXPRESSIONS),
                                 expression_type=rng.choice(["TAG", "SQL92"]), sub_version=rng.choice([0, 1, 2**40]))
                for _ in range(rng.randint(0, 3))]
        consumers = [ConsumerData(group_name=rng.choice(GROUPS), consume_type=rng.choice(list(ConsumeType)),
                                  message_model=rng.choice(list(MessageModel)),
                                  consume_from_where=rng.choice(list(ConsumeFromWhere)), subscription_data_set=subs)
                     for _ in range(rng.randint(0, 2))]
        producers = [ProducerData(group_name=rng.choice(GROUPS)) for _ in range(rng.randint(0, 2))]
        data = HeartbeatData(client_id=rng.choice(["127.0.0.1@fz", "127.0.0.1@fz2", ""]),
                             consumer_data_set=consumers, producer_data_set=producers)
        return data.encode()
    if code in (RequestCode.LOCK_BATCH_MQ, RequestCode.UNLOCK_BATCH_MQ):
        mqs = [MessageQueue(topic=rng.choice(TOPICS), broker_name=rng.choice(["broker-a", "x"]),
                            queue_id=rng.randint(-1, 5)) for _ in range(rng.randint(0, 4))]
        return LockBatchRequestBody(consumer_group=rng.choice(GROUPS), client_id="127.0.0.1@fz", mq_set=mqs).encode()
    if code == RequestCode.SEND_BATCH_MESSAGE:
        def props() -> dict[str, str]:
            return {rng.choice(PROPERTY_KEYS): str(rng.randint(0, 20)) for _ in range(rng.randint(0, 3))}

        msgs = [Message(topic=rng.choice(TOPICS), body=rng.randbytes(rng.randint(0, 300)), properties=props())
                for _ in range(rng.randint(1, 5))]
        try:
            return encode_batch(msgs)
        except Exception:
            return None
    return rand_body(rng) if rng.random() < 0.5 else rng.randbytes(rng.randint(0, 400))


def structured_frame(rng: random.Random, codes: list[int]) -> tuple[int, bytes]:
    code = rng.choice(codes)
    ext: dict[str, str] = {}
    cls = REQUEST_HEADERS.get(code)
    if cls is not None:
        for spec in cls.fields_spec:
            if rng.random() < 0.03:
                continue
            ext[spec.java_name] = plausible(rng, spec.java_name, spec.kind.lower())
    cmd = RemotingCommand(code=code, opaque=rng.randint(0, 2**31 - 1), flag=rng.choice([0, 0, 0, 2]), ext_fields=ext,
                          body=structured_body(rng, code),
                          serialize_type=rng.choice([SerializeType.JSON, SerializeType.ROCKETMQ]),
                          language=LanguageCode.JAVA, version=rng.choice([393, 317, 0]))
    try:
        return code, cmd.encode()
    except Exception:
        return code, RemotingCommand(code=code, opaque=1).encode()


def all_codes() -> list[int]:
    return [int(c) for c in RequestCode if c not in UNSAFE_CODES]


def make_frame(rng: random.Random, codes: list[int]) -> tuple[int, bytes]:
    code = rng.choice(codes) if rng.random() < 0.95 else rng.randint(-5, 100_000)
    cmd = RemotingCommand(
        code=code,
        opaque=rng.randint(0, 2**31 - 1),
        flag=rng.choice([0, 0, 0, 2, 1, 3]),
        ext_fields=rand_ext_fields(rng, code),
        body=rand_body(rng),
        serialize_type=rng.choice([SerializeType.JSON, SerializeType.ROCKETMQ]),
        language=rng.choice(list(LanguageCode)),
        version=rng.choice([0, 317, 393, -1, 2**31 - 1]),
        remark=rng.choice([None, rand_text(rng)]),
    )
    try:
        frame = cmd.encode()
    except Exception:
        cmd.serialize_type = SerializeType.JSON
        try:
            frame = cmd.encode()
        except Exception:
            frame = RemotingCommand(code=code, opaque=1).encode()
    return code, mutate(rng, frame)


def mutate(rng: random.Random, frame: bytes) -> bytes:
    r = rng.random()
    if r < 0.7:
        return frame
    data = bytearray(frame)
    if r < 0.8:  # flip some bytes
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(data))
            data[i] = rng.randrange(256)
    elif r < 0.85:  # a lying total length
        data[0:4] = rng.choice([0, 1, 3, 4, 8, 2**24, 2**31 - 1, 2**32 - 1, len(data) + 10]).to_bytes(4, "big")
    elif r < 0.9:  # a lying header length / serialize type
        data[4:8] = rng.randrange(2**32).to_bytes(4, "big")
    elif r < 0.95:  # garbage in the header text
        if len(data) > 12:
            i = rng.randrange(8, len(data))
            data[i:i] = rng.randbytes(rng.randint(1, 16))
            data[0:4] = (len(data) - 4).to_bytes(4, "big")
    else:
        data = bytearray(rng.randbytes(rng.randint(0, 64)))
    return bytes(data)


class Findings(logging.Handler):
    """Collects server tracebacks, unique ones by (type, innermost rocketpy frame), and counts the
    one-line refusals of bad input by request code and cause."""

    def __init__(self, out: Path, recent: dict[str, deque[tuple[int, bytes]]]) -> None:
        super().__init__(logging.WARNING)
        self.out = out
        self.recent = recent
        self.unique: dict[str, dict[str, Any]] = {}
        #: every log record that carried a traceback
        self.total = 0
        #: "code N: cause" -> count, for the one-line refusals (SYSTEM_ERROR answers to bad input)
        self.refusals: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        if not record.exc_info or record.exc_info[1] is None:
            if record.msg.startswith("process request refused"):
                code, cause = record.args[0], str(record.args[2])  # type: ignore[index]
                key = f"code {code}: {cause.split(':')[0].split(',')[0][:80]}"
                self.refusals[key] = self.refusals.get(key, 0) + 1
            return
        self.total += 1
        exc = record.exc_info[1]
        frames = traceback.extract_tb(exc.__traceback__)
        mine = [f for f in frames if "rocketpy" in f.filename] or frames
        where = f"{os.path.basename(mine[-1].filename)}:{mine[-1].lineno}" if mine else "?"
        key = f"{type(exc).__name__}@{where}"
        if key in self.unique:
            self.unique[key]["count"] += 1
            return
        msg = record.getMessage()
        peer = next((a for a in self.recent if a in msg), None)
        frames_hex = [(c, f.hex()) for c, f in self.recent.get(peer, ())] if peer else []
        self.unique[key] = {"key": key, "message": msg, "exception": repr(exc)[:500], "count": 1,
                            "traceback": "".join(traceback.format_exception(exc))[-4000:], "frames": frames_hex}
        (self.out / f"finding-{len(self.unique):03d}.json").write_text(json.dumps(self.unique[key], indent=1))
        print(f"FINDING {key}: {msg[:200]}", file=sys.stderr, flush=True)


class Stats:
    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        self.answers = 0
        self.connections = 0
        self.by_code: dict[int, int] = {}
        self.acked = 0
        self.delivered = 0
        self.lost: list[str] = []
        self.unanswered_probes: list[str] = []
        self.tls = 0
        self.slow_probes = 0
        self.hogs: list[str] = []
        self.exits: dict[str, int] = {}
        #: --mode config-injection: bodies sent, answers by server and code, changes seen
        self.config: dict[str, Any] = {}


def golden_frame(rng: random.Random, golden: list[GoldenRequest]) -> tuple[int, bytes]:
    """A request of the official client with hostile header values (golden_values)."""
    cmd = mutate_golden(rng, rng.choice(golden), protect=(CHECK_TOPIC, CHECK_GROUP))
    try:
        return cmd.code, cmd.encode()
    except Exception:  # a value the binary header cannot carry (a key over 32 KiB): send it as JSON
        cmd.serialize_type = SerializeType.JSON
        return cmd.code, cmd.encode()


async def fuzz_connection(
    addr: tuple[str, int],
    rng: random.Random,
    codes: list[int],
    stats: Stats,
    recent: dict[str, deque],
    golden: list[GoldenRequest],
) -> None:
    try:
        stream = await trio.open_tcp_stream(*addr)
    except OSError:
        return
    stats.connections += 1
    local = stream.socket.getsockname()
    peer = f"{local[0]}:{local[1]}"
    sent: deque[tuple[int, bytes]] = deque(maxlen=6)
    recent[peer] = sent
    r = rng.random()
    if r < 0.02:  # a fake TLS hello: the servers are permissive, this takes their handshake path
        with trio.move_on_after(1):
            try:
                await stream.send_all(b"\x16\x03\x01" + rng.randbytes(rng.randint(0, 300)))
                await stream.receive_some(4096)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
        await trio.aclose_forcefully(stream)
        stats.tls += 1
        return
    if r < 0.07:  # real TLS (test mode, as a Java client with -Dtls.enable=true): the frames go through it
        try:
            with trio.fail_after(10):
                stream = await connect_stream(stream, TLS_CLIENT, "127.0.0.1")  # type: ignore[assignment]
        except (ConnectionError, trio.TooSlowError) as exc:
            print(f"FINDING TLS handshake refused: {exc!r}", file=sys.stderr, flush=True)
            stats.unanswered_probes.append(f"TLS handshake: {exc!r}")
            return
        stats.tls += 1
    # a connection that sends and never reads deadlocks with a server applying backpressure (it stops
    # reading while we do not take its answers): that is correct; bound our side of it in time
    try:
        async with stream:
            with trio.move_on_after(20):
                buf = bytearray()
                kind = rng.random()
                for _ in range(rng.randint(1, 40)):
                    if kind < 0.45:
                        code, frame = structured_frame(rng, codes)
                    elif kind < 0.75 and golden:
                        code, frame = golden_frame(rng, golden)
                    else:
                        code, frame = make_frame(rng, codes)
                    sent.append((code, frame))
                    buf += frame
                    stats.requests += 1
                    stats.by_code[code] = stats.by_code.get(code, 0) + 1
                    if rng.random() < 0.6:
                        continue  # pipeline it with the next one
                    while buf:  # random frame boundaries
                        n = rng.choice([1, 2, 3, 7, 64, 1500, len(buf)])
                        await stream.send_all(bytes(buf[:n]))
                        stats.bytes += min(n, len(buf))
                        del buf[:n]
                        if rng.random() < 0.1:
                            await trio.sleep(0.001)
                    with trio.move_on_after(rng.choice([0.0, 0.01, 0.05, 0.3])):
                        data = await stream.receive_some(65536)
                        if not data:
                            return  # the server closed us: fine, a bad frame does that
                        stats.answers += 1
                if buf:
                    await stream.send_all(bytes(buf[: rng.randint(0, len(buf))]))  # maybe leave mid-frame
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass


async def checker(broker_addr: str, stats: Stats, stop: trio.Event) -> None:
    """Produce to CHECK_TOPIC queue 0 and pull every acknowledged message back."""
    acked: dict[int, bytes] = {}
    next_pull = 0
    seq = 0
    async with broker_client(broker_addr) as bc:
        while not stop.is_set():
            for _ in range(5):
                seq += 1
                body = f"check-{seq}".encode()
                try:
                    resp = await bc.send(CHECK_TOPIC, body, queue_id=0)
                except Exception as exc:
                    stats.unanswered_probes.append(f"{time.strftime('%H:%M:%S')} send failed: {exc!r}")
                    continue
                if resp is not None and resp.code == 0 and resp.ext_fields:
                    acked[int(resp.ext_fields["queueOffset"])] = body
                    stats.acked += 1
            try:
                resp, msgs = await bc.pull(CHECK_GROUP, CHECK_TOPIC, 0, next_pull, max_nums=32)
            except Exception as exc:
                stats.unanswered_probes.append(f"{time.strftime('%H:%M:%S')} pull failed: {exc!r}")
                await trio.sleep(0.2)
                continue
            for m in msgs:
                want = acked.pop(m.queue_offset, None)
                if want is not None:
                    if want != m.body:
                        stats.lost.append(f"offset {m.queue_offset}: body {m.body!r} != {want!r}")
                    stats.delivered += 1
                next_pull = m.queue_offset + 1
            await trio.sleep(0.2)
        # drain: everything acked must come back
        with trio.move_on_after(20):
            while acked:
                try:
                    resp, msgs = await bc.pull(CHECK_GROUP, CHECK_TOPIC, 0, next_pull, max_nums=32)
                except Exception as exc:  # a broker that stopped answering: its acked messages count as lost
                    stats.unanswered_probes.append(f"{time.strftime('%H:%M:%S')} drain pull failed: {exc!r}")
                    break
                if not msgs:
                    break
                for m in msgs:
                    if acked.pop(m.queue_offset, None) is not None:
                        stats.delivered += 1
                    next_pull = m.queue_offset + 1
        for offset in sorted(acked):
            stats.lost.append(f"acked offset {offset} never delivered")


async def prober(ns_addr: str, broker_addr: str, stats: Stats, stop: trio.Event) -> None:
    """A fresh connection to each server must be answered, every 2 s; three failures in a row (30 s and
    more) make a finding. One failure alone is usually this niced process starved by a busy machine."""
    failures = {ns_addr: 0, broker_addr: 0}
    while not stop.is_set():
        probes = ((ns_addr, RequestCode.GET_BROKER_CLUSTER_INFO), (broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO))
        for addr, code in probes:
            try:
                async with open_remoting_client(connect_timeout=10) as rc:
                    await rc.invoke(addr, RemotingCommand.request(code), timeout=10)
                failures[addr] = 0
            except Exception as exc:
                failures[addr] += 1
                stats.slow_probes += 1
                if failures[addr] == 3:
                    stats.unanswered_probes.append(f"{time.strftime('%H:%M:%S')} {addr} code {int(code)}: {exc!r}")
                    print(f"FINDING probe {addr} not answered 3 times: {exc!r}", file=sys.stderr, flush=True)
        await trio.sleep(2)


def time_dispatches(stats: Stats) -> None:
    """Record requests whose handling took the event loop more than a second of CPU (a hog stalls every
    connection): wraps Dispatcher.dispatch in this process."""
    from rocketpy.remoting.dispatch import Dispatcher

    original = Dispatcher.dispatch

    async def timed(self: Dispatcher, ctx: Any, request: RemotingCommand) -> Any:
        entry = self._handlers.get(request.code) or self._default
        if entry is None or entry[1]:  # an async handler may yield: its CPU window holds other tasks' work
            return await original(self, ctx, request)
        cpu0 = time.thread_time()
        try:
            return await original(self, ctx, request)
        finally:
            used = time.thread_time() - cpu0
            if used > 1.0:
                what = f"code {request.code} took {used:.1f} s of CPU: ext={str(request.ext_fields)[:300]}"
                stats.hogs.append(what)
                print(f"FINDING hog {what}", file=sys.stderr, flush=True)

    Dispatcher.dispatch = timed  # type: ignore[method-assign]


def top_growth(first: Any, now: Any, limit: int = 12) -> list[str]:
    """tracemalloc: where the servers' live memory grew between two snapshots, by allocating line
    (allocations made for the fuzzer's own frames are left out)."""
    import tracemalloc

    keep = [tracemalloc.Filter(True, "*rocketpy/*", all_frames=True),
            tracemalloc.Filter(False, "*tools/fuzz/*", all_frames=True)]
    diff = now.filter_traces(keep).compare_to(first.filter_traces(keep), "lineno")
    return [str(d) for d in diff[:limit]]


def growth_tracebacks(first: Any, now: Any, limit: int = 15) -> str:
    """The allocation tracebacks whose live memory grew most between two snapshots."""
    import tracemalloc

    keep = [tracemalloc.Filter(True, "*rocketpy/*", all_frames=True)]
    diff = now.filter_traces(keep).compare_to(first.filter_traces(keep), "traceback")
    return "\n\n".join(f"{d.size_diff / 1024:+.1f} KiB, {d.count_diff:+d} blocks\n" + "\n".join(d.traceback.format())
                         for d in diff[:limit])


#: seconds from the fuzzing's end to the last memory sample: a queue lock's lifetime (60 s) and the broker's
#: 10 s scan that forgets expired locks, with a margin; the filters of gone consumers go sooner
#: (server_process.FILTER_DATA_CLEAN_MS)
LOCK_LIFETIME_WAIT = 75.0


#: topics the broker makes for itself: kept by the clean-up (its own services read them)
_SYSTEM_TOPIC_PREFIXES = ("RMQ_SYS_", "SCHEDULE_TOPIC_XXXX")


async def broker_tables(broker_addr: str) -> dict[str, set[str]]:
    """The topics, subscription groups and topic@group offset keys a broker has (its admin answers)."""
    from rocketpy.codecs.bodies import ConsumerOffsetSerializeWrapper, SubscriptionGroupWrapper
    from rocketpy.codecs.bodies.register import TopicConfigSerializeWrapper

    async with broker_client(broker_addr) as c:
        topics = (await c.invoke(RequestCode.GET_ALL_TOPIC_CONFIG)).body or b"{}"
        groups = (await c.invoke(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).body or b"{}"
        offsets = (await c.invoke(RequestCode.GET_ALL_CONSUMER_OFFSET)).body or b"{}"
    return {
        "topics": set(TopicConfigSerializeWrapper.decode(topics).topic_config_table or {}),
        "groups": set(SubscriptionGroupWrapper.decode(groups).subscription_group_table or {}),
        "offset keys": set(ConsumerOffsetSerializeWrapper.decode(offsets).offset_table or {}),
    }


def kv_configs(path: Path | None) -> set[tuple[str, str]]:
    """(namespace, key) of every KV config the NameServer holds, from the file it saves them to (no request
    lists the namespaces); none where there is no file."""
    from rocketpy.codecs import fastjson

    if path is None or not path.exists():
        return set()
    table = (fastjson.loads(path.read_bytes()) or {}).get("configTable") or {}
    return {(namespace, key) for namespace, entries in table.items() for key in entries}


async def clean_up(ns_addr: str, broker_addr: str, before: dict[str, set[str]],
                   kv_path: Path | None = None, kv_before: frozenset[tuple[str, str]] = frozenset()) -> dict[str, int]:
    """Delete what the run made under legal names, as an operator would with mqadmin deleteTopic and
    deleteSubGroup (with its offsets): the topics (in the broker and the NameServer) and the groups that
    were not there at the start, those with a subscription config and those known only by the offsets
    they committed (deleteSubGroup removes a group's offsets whether or not it has a config), and with
    deleteKvConfig the NameServer's KV configs that were not in ``kv_path`` at the start. What the
    servers hold after this is what no request asked them to keep. Returns how many of each went, and
    the offset keys left (pre-existing groups' offsets on deleted topics: Java's deleteTopic keeps those
    too)."""
    from rocketpy.codecs.headers import (
        DeleteKVConfigRequestHeader,
        DeleteSubscriptionGroupRequestHeader,
        DeleteTopicFromNamesrvRequestHeader,
        DeleteTopicRequestHeader,
    )

    now = await broker_tables(broker_addr)
    topics = sorted(t for t in now["topics"] - before["topics"] if not t.startswith(_SYSTEM_TOPIC_PREFIXES))
    known = before["groups"] | {key.partition("@")[2] for key in before["offset keys"]}
    made = now["groups"] | {key.partition("@")[2] for key in now["offset keys"]}
    groups = sorted(made - known)
    async with broker_client(broker_addr) as b, broker_client(ns_addr) as ns:
        for topic in topics:
            await b.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic=topic))
            await ns.invoke(RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic=topic))
        for group in groups:
            header = DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=True)
            await b.invoke(RequestCode.DELETE_SUBSCRIPTIONGROUP, header)
        kv_made = sorted(kv_configs(kv_path) - kv_before)
        for namespace, key in kv_made:
            await ns.invoke(RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader(namespace=namespace, key=key))
    after = await broker_tables(broker_addr)
    return {"topics deleted": len(topics), "groups deleted": len(groups), "kv configs deleted": len(kv_made),
            "topics made": len(now["topics"] - before["topics"]),
            "offset keys made": len(now["offset keys"] - before["offset keys"]),
            "offset keys left": len(after["offset keys"] - before["offset keys"])}


def heap_summary(report: str) -> str:
    """The lines of a traced_server.py heap report that tell where resident memory is, on one line."""
    keep = ("mallinfo2 arena ", "mallinfo2 uordblks", "mallinfo2 fordblks", "mallinfo2 hblkhd", "anon ",
            "# arenas allocated current", "# bytes in allocated blocks", "# bytes in available blocks", "modules",
            "gc objects")
    return "; ".join(" ".join(line.split()) for line in report.splitlines() if line.startswith(keep))


def heap_growth(first: str, last: str, limit: int | None = 15) -> list[str]:
    """Between two traced_server.py heap reports: the gc-tracked types whose count grew most, then the
    exceptions the last one found kept alive (a kept exception keeps its traceback's frames) and its
    most numerous closures. A report counts only its CENSUS_TYPES most numerous types: one missing from
    the first counts from zero (in a server that froze its start-up objects, the first has few types)."""
    def types(report: str) -> dict[str, int]:
        parts = (line.split() for line in report.splitlines() if line.startswith("gc type "))
        return {p[2]: int(p[3]) for p in parts if len(p) == 4}

    before, after = types(first), types(last)
    grown = sorted(((n - before.get(t, 0), t) for t, n in after.items() if n > before.get(t, 0)), reverse=True)
    kept = [line for line in last.splitlines() if line.startswith(("exception ", "closure "))]
    return [f"{t} +{d}" for d, t in grown[:limit]] + kept


def census(root: Any, depth: int = 2, prefix: str = "", seen: set[int] | None = None) -> dict[str, int]:
    """Sizes of the containers a server object holds, two attributes deep (broker.consumers.groups ...):
    what grows here is what a run retains."""
    seen = set() if seen is None else seen
    out: dict[str, int] = {}
    if id(root) in seen:
        return out
    seen.add(id(root))
    names = list(getattr(root, "__dict__", {}))
    for cls in type(root).__mro__:
        names += [n for n in getattr(cls, "__slots__", ()) if isinstance(n, str)]
    for name in names:
        value = getattr(root, name, None)
        if isinstance(value, (dict, set, list, deque)):
            out[prefix + name] = len(value)
        elif depth > 1 and value is not None and type(value).__module__.startswith("rocketpy"):
            out.update(census(value, depth - 1, f"{prefix}{name}.", seen))
    return out


async def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.mode == "acl-escalation":  # servers of its own (ACL on, narrowed lists), no checker
        return await acl_escalation.run(args, out)
    recent: dict[str, deque] = {}
    findings = Findings(out, recent)
    logging.getLogger().addHandler(findings)
    logging.getLogger().setLevel(logging.WARNING)
    logging.getLogger("rocketpy").setLevel(logging.WARNING)  # tracebacks, and refusals (counted)
    rng = random.Random(args.seed)
    stats = Stats()
    codes = all_codes()
    golden = load_golden_requests(skip_codes=frozenset(int(c) for c in UNSAFE_CODES)) if args.golden else []
    memory: dict[str, list[dict[str, Any]]] = {}
    growth: list[str] = []
    heaps: dict[str, list[str]] = {}
    cleaned: dict[str, int] = {}
    log_dropped: dict[str, int] = {}
    after_clean_up: dict[str, dict[str, int]] = {}
    after_expiry: dict[str, dict[str, int]] = {}
    restarted: dict[str, dict[str, int]] = {}
    started = time.monotonic()

    async def report_heaps() -> None:
        for p in procs if args.heap else ():
            heaps.setdefault(p.name, []).append(await p.heap_report(workdir))

    def sample(servers: dict[str, int]) -> None:
        for name, pid in servers.items():
            memory.setdefault(name, []).append({"t": round(time.monotonic() - started), **memory_kib(pid)})

    census_at: dict[str, dict[str, int]] = {}

    procs: tuple[ServerProcess, ...] = ()
    workdir = Path(".")
    config_files: dict[str, Path] = {}  # each server's config file (what UPDATE_*_CONFIG rewrites)

    async def fuzz(ns_addr: str, b_addr: str, servers: dict[str, int], objects: dict[str, Any] | None = None) -> None:
        nonlocal started
        started = time.monotonic()  # the servers are up: the run's duration counts from here
        objects = objects or {}
        targets = [tuple_addr(ns_addr), tuple_addr(b_addr)]
        by_target = {t: [g for g in golden if g.to_namesrv == (t == targets[0])] for t in targets}
        snapshot = None
        if args.tracemalloc and not procs:
            import tracemalloc

            tracemalloc.start(6)
            snapshot = tracemalloc.take_snapshot()
        snaps: dict[str, Any] = {}
        if args.tracemalloc and procs:
            snaps = {p.name: await p.snapshot(workdir) for p in procs}
        await report_heaps()
        sample(servers)
        for name, obj in objects.items():
            census_at[f"{name} start"] = census(obj)
        tables_at_start = await broker_tables(b_addr) if args.clean_up else {}
        kv_path = kv_config_path(workdir) if procs else None
        kv_at_start = frozenset(kv_configs(kv_path))
        stop = trio.Event()
        async with trio.open_nursery() as inner:
            inner.start_soon(checker, b_addr, stats, stop)
            inner.start_soon(prober, ns_addr, b_addr, stats, stop)
            last_report = time.monotonic()
            if args.mode == "config-injection":  # 25 and 318 bodies, one at a time, each checked (config_injection)
                injected = [config_injection.Server("broker", b_addr, config_files["broker"]),
                            config_injection.Server("namesrv", ns_addr, config_files["namesrv"])]
                stats.config = await config_injection.run(injected, args.duration, rng, findings.unique, out)
            async with trio.open_nursery() as workers:
                limit = trio.Semaphore(args.concurrency)

                async def one(target: tuple[str, int], seed: int) -> None:
                    try:
                        await fuzz_connection(target, random.Random(seed), codes, stats, recent, by_target[target])
                    finally:
                        limit.release()

                while args.mode == "requests" and time.monotonic() - started < args.duration:
                    await limit.acquire()
                    workers.start_soon(one, rng.choice(targets), rng.getrandbits(64))
                    if len(recent) > 2000:  # forget old peers
                        for k in list(recent)[:1000]:
                            del recent[k]
                    if time.monotonic() - last_report > 60:
                        last_report = time.monotonic()
                        sample(servers)
                        mem = " ".join(f"{n} RssAnon {m[-1].get('RssAnon', 0) // 1024} MiB" for n, m in memory.items())
                        print(f"{int(last_report - started)} s: {stats.requests} requests, "
                              f"{len(findings.unique)} unique findings, acked {stats.acked}, "
                              f"delivered {stats.delivered}; {mem}", flush=True)
                        if snapshot is not None:
                            import tracemalloc

                            growth[:] = top_growth(snapshot, tracemalloc.take_snapshot())
                            print("  grew: " + "\n  grew: ".join(growth[:8]), flush=True)
                        await report_heaps()
                        for name, reports in heaps.items():
                            print(f"  {name} heap: " + heap_summary(reports[-1]), flush=True)
                        for p in procs if snaps else ():
                            now = await p.snapshot(workdir)
                            if now is not None and snaps[p.name] is not None:
                                growth[:] = [f"{p.name}: {g}" for g in top_growth(snaps[p.name], now)]
                                print("  grew: " + "\n  grew: ".join(growth[:10]), flush=True)
            stop.set()
        # the fuzzing connections are closed: what the servers still hold now is what they keep
        ended = time.monotonic()
        await trio.sleep(args.settle)
        sample(servers)
        await report_heaps()
        if args.clean_up:
            cleaned.update(await clean_up(ns_addr, b_addr, tables_at_start, kv_path, kv_at_start))
            # the broker forgets a deleted topic's stats and trims its heap in its 10 s scan
            await trio.sleep(max(args.settle, 25))
            for name, pid in servers.items():
                after_clean_up[name] = {"t": round(time.monotonic() - started), **memory_kib(pid)}
            await report_heaps()
            # what requests made with a lifetime of their own goes when it runs out: a queue lock after 60 s
            # (Java's REBALANCE_LOCK_MAX_LIVE_TIME), at the broker's next 10 s scan
            await trio.sleep(max(0.0, ended + LOCK_LIFETIME_WAIT - time.monotonic()))
            for name, pid in servers.items():
                after_expiry[name] = {"t": round(time.monotonic() - started), **memory_kib(pid)}
            await report_heaps()
        for name, reports in heaps.items():
            (out / f"{name}-heap.txt").write_text("\n\n".join(reports))
        for name, obj in objects.items():
            census_at[f"{name} end"] = census(obj)
        if snapshot is not None:
            import tracemalloc

            growth[:] = top_growth(snapshot, tracemalloc.take_snapshot(), 25)
        grown: list[str] = []
        for p in procs if snaps else ():
            now = await p.snapshot(workdir)
            if now is not None and snaps[p.name] is not None:
                grown += [f"{p.name}: {g}" for g in top_growth(snaps[p.name], now, 25)]
                (out / f"{p.name}-growth-traceback.txt").write_text(growth_tracebacks(snaps[p.name], now))
                # kept for a closer look (Snapshot.load) than the growth lists give
                for which, number in (("start", 0), ("end", p.snapshots - 1)):
                    shutil.copyfile(workdir / f"{p.name}.snap.{number}", out / f"{p.name}-{which}.snap")
        if grown:
            growth[:] = grown

    with tempfile.TemporaryDirectory(prefix="rocketpy-fuzz-") as tmp:
        if args.servers == "process":
            workdir = Path(tmp)
            config_files.update(broker=workdir / "broker.conf", namesrv=workdir / "namesrv.properties")
            procs = await start_servers(workdir, traced=args.tracemalloc, heap=args.heap)
            ns_proc, b_proc = procs
            try:
                await fuzz(ns_proc.addr, b_proc.addr, {p.name: p.proc.pid for p in procs})
            finally:
                exits: dict[str, int] = {}
                with trio.CancelScope(shield=True):  # (also when the run broke off or is cancelled)
                    for p in procs:
                        try:
                            exits[p.name] = await stop_server(p)
                        except Exception as exc:  # (the other server is still stopped)
                            print(f"cannot stop the {p.name}: {exc!r}", flush=True)
                            p.proc.kill()
                        finally:  # a server that died: its log goes with the workdir otherwise
                            (out / f"{p.name}.log.tail").write_text(p.log.path.read_text(errors="replace")[-200_000:])
                print(f"server exit codes: {exits}", flush=True)
            for p in procs:
                p.log.scan()
                findings.total += p.log.tracebacks
                for key, count in p.log.unique.items():
                    name = f"{p.name}: {key}"
                    findings.unique[name] = {"key": name, "count": count, "traceback": p.log.examples[key]}
                    (out / f"finding-{len(findings.unique):03d}.json").write_text(
                        json.dumps(findings.unique[name], indent=1))
                for key, count in p.log.refusals.items():
                    findings.refusals[f"{p.name} {key}"] = count
                log_dropped[p.name] = p.log.dropped
                if p.log.dropped_errors:  # a traceback may be among them: a finding, as a traceback is
                    key = f"{p.name}: {p.log.dropped_errors} ERROR log records dropped"
                    findings.unique[key] = {"key": key, "count": p.log.dropped_errors, "traceback": ""}
            stats.exits = exits
            if args.restart:
                restarted.update(await restarted_memory(workdir, traced=args.tracemalloc, heap=args.heap, out=out))
        else:
            time_dispatches(stats)
            config_files.update(broker=Path(tmp) / "store" / "config" / "broker.properties",
                                namesrv=Path(tmp) / "namesrv.properties")
            ns = NameServer(NamesrvConfig(listen_port=0, kv_config_path=f"{tmp}/kv.json",
                                          config_store_path=f"{tmp}/namesrv.properties"))
            async with trio.open_nursery() as nursery:
                await nursery.start(ns.run)
                assert ns.remoting is not None and ns.remoting.port is not None
                ns_addr = f"127.0.0.1:{ns.remoting.port}"
                async with running_broker(f"{tmp}/store", namesrvAddr=ns_addr) as broker:
                    await fuzz(ns_addr, broker.servers[0].address, {"servers and fuzzer": os.getpid()},
                               {"broker": broker, "namesrv": ns})
                nursery.cancel_scope.cancel()
    elapsed = time.monotonic() - started
    result = {
        "seconds": round(elapsed), "seed": args.seed, "servers": args.servers, "requests": stats.requests,
        "bytes": stats.bytes, "connections": stats.connections, "tls_connections": stats.tls,
        "answers_read": stats.answers, "codes": len(stats.by_code),
        "acked": stats.acked, "delivered": stats.delivered, "lost": stats.lost[:50],
        "unanswered_probes": stats.unanswered_probes[:50], "slow_probes": stats.slow_probes, "hogs": stats.hogs[:50],
        "tracebacks": findings.total,
        "unique_findings": sorted(findings.unique),
        "refused_one_line": sum(findings.refusals.values()),
        "log_records_dropped": log_dropped,  # by the servers' bounded log queues: not scanned for tracebacks
        "refusals": dict(sorted(findings.refusals.items(), key=lambda kv: -kv[1])[:40]),
        # warm: after the first minute, when every request code has been seen (lazy imports, codec tables and
        # the allocator's first arenas are in place); a long run's end is compared with it as well as with start
        "memory_kib": {name: {"start": m[0], "warm": m[1] if len(m) > 2 else None, "end": m[-1],
                              "after_clean_up": after_clean_up.get(name), "after_expiry": after_expiry.get(name),
                              "restarted": restarted.get(name),
                              "series": m}
                       for name, m in memory.items()},
        "clean_up": cleaned,
        "exit_codes": stats.exits,
        "tracemalloc_growth": growth,
        "heap_growth": {name: heap_growth(r[0], r[-1]) for name, r in heaps.items() if len(r) > 1},
        "config_injection": stats.config or None,
        "grown_tables": {
            name: {k: (v, census_at[f"{name} end"].get(k)) for k, v in sorted(census_at[f"{name} start"].items())
                   if census_at[f"{name} end"].get(k) != v}
            for name in ("broker", "namesrv") if f"{name} start" in census_at
        },
    }
    prev = out / "stats.json"
    runs = json.loads(prev.read_text()) if prev.exists() else []
    runs.append(result)
    prev.write_text(json.dumps(runs, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "memory_kib"}, indent=1))
    kept = ("start", "warm", "end", "after_clean_up", "after_expiry", "restarted")
    print(json.dumps({n: {k: m[k] for k in kept} for n, m in result["memory_kib"].items()}))
    return 1 if (stats.lost or stats.unanswered_probes or stats.hogs or findings.unique) else 0


async def restarted_memory(workdir: Path, *, traced: bool, heap: bool, out: Path) -> dict[str, dict[str, int]]:
    """Both servers started again, as the run started them, on what the run left (the store, kvConfig.json)
    and sampled as the run's start was (after a heap report with ``heap``, kept as <name>-restarted-heap.txt):
    what that state takes in a fresh process. The run's end above this is what its traffic left in the
    allocators rather than in the data."""
    for old in workdir.glob("*.snap*"):  # the run's dumps, read already: the new processes number theirs from 0
        old.unlink()
    procs = await start_servers(workdir, traced=traced, heap=heap)
    try:
        if heap:
            for p in procs:
                (out / f"{p.name}-restarted-heap.txt").write_text(await p.heap_report(workdir))
        return {p.name: {"t": 0, **p.memory()} for p in procs}
    finally:
        for p in procs:
            await stop_server(p)


def tuple_addr(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host, int(port)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", "--seconds", type=float, default=60.0, help="seconds to fuzz")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--concurrency", type=int, default=8, help="fuzzing connections at once")
    ap.add_argument("--out", default="fuzz-out", help="findings and stats.json go here")
    ap.add_argument("--mode", choices=["requests", "config-injection", "acl-escalation"], default="requests",
                    help="requests: every code, fuzzed (the default); config-injection: UPDATE_BROKER_CONFIG and "
                         "UPDATE_NAMESRV_CONFIG bodies trying to change a black-listed key, each checked in memory, "
                         "in the file and in what a restart reads (config_injection.py); acl-escalation: a normal "
                         "ACL account and an address outside the lists try the escalations of issue #46, each "
                         "checked through an admin account and the files (acl_escalation.py)")
    ap.add_argument("--guards", choices=["on", "off"], default="on",
                    help="with --mode acl-escalation: the servers' guards as by default (on) or all at Java's "
                         "behaviour (off: the attempts must get through)")
    ap.add_argument("--servers", choices=["inprocess", "process"], default="inprocess",
                    help="run the servers in this process (findings carry the guilty frames) or as their own "
                         "rocketpy namesrv / broker processes (their memory is measured alone; logs scanned)")
    ap.add_argument("--no-golden", dest="golden", action="store_false",
                    help="leave out the golden requests with hostile header values")
    ap.add_argument("--tracemalloc", action="store_true",
                    help="print where the servers' live memory grew, every minute (with --servers process, the "
                         "servers run under traced_server.py)")
    ap.add_argument("--heap", action="store_true",
                    help="with --servers process: report the servers' C heap every minute and at the end "
                         "(glibc's mallinfo2, anonymous mappings by kind, pymalloc arenas; --out/<server>-heap.txt)")
    ap.add_argument("--peaks", action="store_true",
                    help="with --heap: the servers note what they ran at each new high of pymalloc blocks (a "
                         "burst of short-lived objects whose pools later objects keep resident); the heap "
                         "reports list the latest")
    ap.add_argument("--no-clean-up", dest="clean_up", action="store_false",
                    help="leave the topics and groups the run made (by default they are deleted after the end "
                         "sample, and memory is sampled again: what is then left is what nothing asked to keep)")
    ap.add_argument("--no-restart", dest="restart", action="store_false",
                    help="with --servers process: do not start the servers again on what the run left to sample "
                         "the memory that state takes in fresh processes (memory_kib's 'restarted')")
    ap.add_argument("--settle", type=float, default=10.0,
                    help="seconds to wait after the last connection before the final memory sample")
    args = ap.parse_args()
    if args.peaks:
        if not args.heap:
            ap.error("--peaks needs --heap")
        os.environ["TRACED_SERVER_PEAKS"] = "1"  # the server processes inherit it
    socket.setdefaulttimeout(None)
    return trio.run(run, args)


if __name__ == "__main__":
    sys.exit(main())
