"""The send lane (broker/processors/send_lane.py and _speedups.SendCore) against the general send path
(send.send_message, the reference): for any sequence of sends, the same answers byte for byte and the
same CommitLog, ConsumeQueue and IndexFile bytes. Without the accelerated build there is no lane: the
tests over TCP then check the general path alone."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rocketpy.broker.controller import BrokerController
from rocketpy.broker.processors import send_lane
from rocketpy.broker.processors.send import send_message
from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketpy.codecs.errors import BadFieldValue
from rocketpy.codecs.headers import SendMessageRequestHeader, SendMessageRequestHeaderV2
from rocketpy.codecs.headers.registry import REQUEST_HEADERS
from rocketpy.remoting.connection import LaneFrame
from rocketpy.remoting.dispatch import RequestContext, fix_response
from rocketpy.testing import broker_client, broker_test_config, running_broker

STORE_TS = 1_700_000_000_123


class _Conn:
    def __init__(self) -> None:
        self.attributes: dict[str, Any] = {}


@contextmanager
def _broker(path: Path) -> Iterator[BrokerController]:
    broker = BrokerController(broker_test_config(str(path)))
    broker.config.listen_port = 10911
    broker.load()
    broker.store.clock = broker.store.commitlog.clock = lambda: STORE_TS
    broker.queue_id_random = lambda nums: 1 % max(nums, 1)  # type: ignore[method-assign]
    try:
        yield broker
    finally:
        broker.store.close()


def _ctx(broker: BrokerController) -> RequestContext:
    return RequestContext(connection=_Conn(), remote_addr="127.0.0.1:40123", state=broker)  # type: ignore[arg-type]


_names = st.sampled_from(["TAGS", "KEYS", "a", "userKey", "DELAY", "WAIT", "TRAN_MSG", "UNIQ_KEY", "CLUSTER", ""])
_values = st.sampled_from(["", "TagA", "k1 k2", "true", "false", "FALSE", "3", "x\x01y", "é€𝄞"])


@st.composite
def _properties(draw: st.DrawFn) -> str:
    entries = [f"{n}\x01{v}" for n, v in draw(st.lists(st.tuples(_names, _values), max_size=6))]
    if draw(st.booleans()):
        entries.insert(0, f"UNIQ_KEY\x01{draw(st.uuids()).hex.upper()}")
    text = "\x02".join(entries)
    if draw(st.booleans()):
        text += "\x02"
    return text


@st.composite
def _sends(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "topic": draw(st.sampled_from(["FastT", "FastT", "FastT2", "SCHEDULE_TOPIC_XXXX", "%RETRY%g", "bad topic"])),
        "queue_id": draw(st.sampled_from([0, 1, 3, 7, -1])),
        "sys_flag": draw(st.sampled_from([0, 0, 4, 8, 1])),
        "flag": draw(st.integers(-5, 5)),
        "properties": draw(_properties()),
        "body": draw(st.binary(max_size=200)),
        "v2": draw(st.booleans()),
        "binary": draw(st.booleans()),
        "oneway": draw(st.integers(0, 9)) == 0,
    }


def _request(send: dict[str, Any], opaque: int) -> RemotingCommand:
    # what the wire gives the broker: decode(encode) (ext values as strings)
    return RemotingCommand.decode(_frame(send, opaque))


def _frame(send: dict[str, Any], opaque: int) -> bytes:
    fields: dict[str, Any] = dict(
        producer_group="PG",
        topic=send["topic"],
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=send["queue_id"],
        sys_flag=send["sys_flag"],
        born_timestamp=1_699_999_999_000,
        flag=send["flag"],
        properties=send["properties"],
        reconsume_times=0,
        unit_mode=False,
    )
    if send["v2"]:
        header: Any = SendMessageRequestHeaderV2(**fields, batch=False)
        code = RequestCode.SEND_MESSAGE_V2
    else:
        header = SendMessageRequestHeader(**fields, batch=False)
        code = RequestCode.SEND_MESSAGE
    st_ = SerializeType.ROCKETMQ if send["binary"] else SerializeType.JSON
    req = RemotingCommand.request(code, header, send["body"], serialize_type=st_, oneway=send["oneway"])
    req.opaque = opaque
    return req.encode()


needs_lane = pytest.mark.skipif(
    not send_lane.available(), reason="no send lane without the accelerated build (ROCKETPY_PURE or not compiled)"
)


def _lane(broker: BrokerController) -> Any:
    lane = broker.dispatcher.fast_path
    assert lane is not None
    return lane


def _fast(lane: Any, ctx: RequestContext, send: dict[str, Any], opaque: int) -> bytes | None:
    """What the connection does with a send frame: the lane's answer when it takes the frame, else None
    (the frame is decoded and goes to the handler)."""
    frame = _frame(send, opaque)
    if not lane.takes(frame):
        return None
    return lane.answer(ctx, LaneFrame(frame))  # type: ignore[no-any-return]


async def _general(broker: BrokerController, ctx: RequestContext, req: RemotingCommand) -> bytes:
    resp = await send_message(ctx, req)
    if resp is None or req.is_oneway:
        return b""
    fix_response(req, resp)
    return resp.encode()


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = Path(dirpath) / f
            rel = p.relative_to(root)
            if rel.parts[0] in ("commitlog", "consumequeue"):
                out[str(rel)] = p.read_bytes()
            elif rel.parts[0] == "index":
                out["index"] = p.read_bytes()  # named by creation time: compare the content
    return out


def _flush_stores(*brokers: BrokerController) -> None:
    """Everything the brokers wrote on disk, so their files can be compared byte for byte."""
    for broker in brokers:
        broker.store.flush()
        for queues in broker.store.consume_queues.values():
            for cq in queues.values():
                cq.flush(0)
        assert broker.store.index is not None
        broker.store.index.flush()


_PLAIN = {
    "topic": "FastT",
    "queue_id": 1,
    "sys_flag": 0,
    "flag": 0,
    "properties": "UNIQ_KEY\x01C0A8000100002A9F0000000000000001\x02WAIT\x01true\x02TAGS\x01TagA\x02",
    "body": b"plain",
    "v2": True,
    "binary": True,
    "oneway": False,
}


def _compare(root: Path, sends: list[dict[str, Any]]) -> int:
    """Each send through the lane (the general path where it passes) on one broker and through the general path
    on another: the same answers, stats and files. Returns how many the lane answered."""

    async def run() -> int:
        fast_answers, general_answers, taken = [], [], 0
        with _broker(root / "fast") as fast, _broker(root / "general") as general:
            fctx, gctx = _ctx(fast), _ctx(general)
            lane = _lane(fast)
            for i, send in enumerate(sends):
                answer = _fast(lane, fctx, send, i + 1)
                if answer is None:
                    lane.settle()
                    answer = await _general(fast, fctx, _request(send, i + 1))
                else:
                    taken += 1
                fast_answers.append(answer)
                general_answers.append(await _general(general, gctx, _request(send, i + 1)))
            lane.settle()
            assert fast_answers == general_answers
            assert fast.stats["put"] == general.stats["put"]
            _flush_stores(fast, general)
        f, g = _files(root / "fast"), _files(root / "general")
        assert f.keys() == g.keys()
        for name in f:
            assert f[name] == g[name], name
        return taken

    return trio.run(run)


_EXAMPLE = [_PLAIN, {**_PLAIN, "body": b"second"}, {**_PLAIN, "binary": False, "properties": "KEYS\x01k1 k2"}]


@needs_lane
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_sends(), min_size=1, max_size=25))
@example(_EXAMPLE)
def test_fast_path_equals_general_path(tmp_path_factory: pytest.TempPathFactory, sends: list[dict[str, Any]]) -> None:
    _compare(tmp_path_factory.mktemp("fast"), sends)


@needs_lane
def test_the_equivalence_takes_the_fast_lane(tmp_path: Path) -> None:
    # the comparison means something only if the lane answers: the first send of a topic takes the general
    # path (it creates the topic), the lane answers the two after it
    assert _compare(tmp_path, _EXAMPLE) == 2


@needs_lane
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 3),
    st.booleans(),
)
@example(flips=[(70, 0)], cut=0, binary=True)  # defaultTopicQueueNums "\x00": Java's decoding refuses it
def test_compiled_lane_on_mutated_frames(
    tmp_path_factory: pytest.TempPathFactory, flips: list[tuple[int, int]], cut: int, binary: bool
) -> None:
    """Damaged and odd frames: whatever the lane answers decodes, and the general path answers the decoded
    request and stores exactly the same; everything else the lane passes on."""
    frame = bytearray(_frame({**_PLAIN, "binary": binary}, 7))
    for at, value in flips:
        if 8 <= at < len(frame):  # keep the length prefix: the splitter already checked it
            frame[at] = value
    if cut:
        del frame[len(frame) - cut :]
        frame[0:4] = (len(frame) - 4).to_bytes(4, "big")
    root = tmp_path_factory.mktemp("mut")
    with _broker(root / "core") as core_b, _broker(root / "general") as general_b:
        lane = _lane(core_b)
        # a first plain send creates the topic (the general path), a second makes it known to the lane
        for b in (core_b, general_b):
            trio.run(_general, b, _ctx(b), _request(_PLAIN, 1))
        second = trio.run(_general, general_b, _ctx(general_b), _request(_PLAIN, 2))
        assert _fast(lane, _ctx(core_b), _PLAIN, 2) == second
        answer = lane.answer(_ctx(core_b), LaneFrame(bytes(frame)))
        if answer is None:
            return
        expected = trio.run(_general, general_b, _ctx(general_b), RemotingCommand.decode(bytes(frame)))
        assert answer == expected
        lane.settle()
        _flush_stores(core_b, general_b)
    f, g = _files(root / "core"), _files(root / "general")
    assert f == g


@needs_lane
async def test_fast_path_serves_clients_over_tcp(tmp_path: Path) -> None:
    """Sends over a real connection take the fast lane (after the first of a topic) and read back in order."""
    with trio.fail_after(30):
        async with running_broker(str(tmp_path / "s")) as broker:
            lane = _lane(broker)
            taken = []
            answer_frame = lane.answer

            def counting(ctx: Any, frame: bytes) -> bytes | None:
                answer = answer_frame(ctx, frame)
                taken.append(answer is not None)
                return answer  # type: ignore[no-any-return]

            lane.answer = counting
            async with broker_client(broker.address, serialize_type=SerializeType.ROCKETMQ) as c:
                first = await c.send("FastTcp", b"m0", tags="T", keys="k0")
                assert first is not None and first.code == ResponseCode.SUCCESS
                async with trio.open_nursery() as n:
                    for i in range(1, 50):
                        n.start_soon(c.send, "FastTcp", f"m{i}".encode())
                assert broker.stats["put"] == 50
                assert broker.store.get_max_offset_in_queue("FastTcp", 0) == 50
                resp, msgs = await c.pull("G", "FastTcp", 0, 0, max_nums=32)
                assert resp.code == ResponseCode.SUCCESS and msgs[0].body == b"m0"
                assert msgs[0].tags == "T" and msgs[0].keys == ["k0"]
                assert len(msgs) == 32
                assert taken == [False] + [True] * 49


async def test_sync_flush_answers_once_the_disk_has_the_batch(tmp_path: Path) -> None:
    """SYNC_FLUSH: fast-lane answers are held until the group commit covers them, one write per batch."""
    with trio.fail_after(30):
        async with running_broker(str(tmp_path / "s"), flushDiskType="SYNC_FLUSH") as broker:
            assert broker.answers_after_store()
            services = broker.store_services
            assert services is not None and services.group_commit is not None
            seen: list[tuple[int, int]] = []  # (flushed offset, CommitLog end) when each answer arrives
            async with broker_client(broker.address, serialize_type=SerializeType.ROCKETMQ) as c:
                await c.send("SyncT", b"first")  # creates the topic (general path)

                async def one(i: int) -> None:
                    r = await c.send("SyncT", f"m{i}".encode())
                    assert r is not None and r.code == ResponseCode.SUCCESS and r.ext_fields is not None
                    seen.append((broker.store.flushed_offset, int(r.ext_fields["queueOffset"])))

                async with trio.open_nursery() as n:
                    for i in range(40):
                        n.start_soon(one, i)
            assert len(seen) == 40
            # every answer came after the disk had the CommitLog up to the end of its own record
            for flushed, queue_offset in seen:
                offset = broker.store.get_commit_log_offset_in_queue("SyncT", 0, queue_offset)
                size = broker.store.commitlog.record_size_at(offset)
                assert size is not None and flushed >= offset + size
            assert services.group_commit.rounds >= 1


async def test_sync_flush_timeout_answers_flush_disk_timeout(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running_broker(str(tmp_path / "s"), flushDiskType="SYNC_FLUSH", syncFlushTimeout=300) as broker:
            async with broker_client(broker.address, serialize_type=SerializeType.ROCKETMQ) as c:
                await c.send("SyncT2", b"first")
                broker.store.flush_until = lambda offset: False  # type: ignore[method-assign]
                broker.store.sync_request = lambda offset: None  # type: ignore[method-assign]  # nor early
                r = await c.send("SyncT2", b"never on disk")
                assert r is not None and r.code == ResponseCode.FLUSH_DISK_TIMEOUT
                assert r.ext_fields is not None and r.ext_fields["queueOffset"] == "1" and "msgId" in r.ext_fields


def test_the_general_path_alone_serves_the_same_tests(tmp_path: Path) -> None:
    """With the accelerated build switched off (ROCKETPY_PURE) there is no lane: the general path serves the
    SYNC_FLUSH sends over TCP alone, and the lane's tests say they were skipped."""
    import subprocess
    import sys

    if os.environ.get("ROCKETPY_PURE"):
        pytest.skip("this run is the pure one already")
    env = dict(os.environ, ROCKETPY_PURE="1", HYPOTHESIS_STORAGE_DIRECTORY=str(tmp_path / "hyp"))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__, "-k", "equals or took or sync"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "passed" in proc.stdout


@needs_lane
def test_the_lane_takes_only_plain_send_frames(tmp_path: Path) -> None:
    """``takes`` (what the connection asks per frame) says yes to SEND_MESSAGE and SEND_MESSAGE_V2 frames
    with either header, and no to every other request and to frames too short to be one."""
    with _broker(tmp_path) as broker:
        lane = _lane(broker)
        for v2 in (False, True):
            for binary in (False, True):
                assert lane.takes(_frame({**_PLAIN, "v2": v2, "binary": binary}, 3))
        for code in (RequestCode.SEND_BATCH_MESSAGE, RequestCode.PULL_MESSAGE, RequestCode.HEART_BEAT):
            for st_ in (SerializeType.JSON, SerializeType.ROCKETMQ):
                assert not lane.takes(RemotingCommand(code=code, serialize_type=st_).encode())
        frame = _frame(_PLAIN, 3)
        assert not lane.takes(frame[:28])
        assert not lane.takes(frame[:4] + b"\x02" + frame[5:])  # an unknown serialize type


@needs_lane
async def test_a_malformed_send_frame_closes_the_connection_after_answering_what_came_before(tmp_path: Path) -> None:
    """A send frame the compiled lane passes on and the decoder refuses: the sends before it in the same
    write are stored and answered, then the connection closes (as a bad frame closes it on reading)."""
    with trio.fail_after(30):
        async with running_broker(str(tmp_path / "s")) as broker:
            async with broker_client(broker.address, serialize_type=SerializeType.ROCKETMQ) as c:
                first = await c.send("FastBad", b"m0")  # creates the topic (general path)
                assert first is not None and first.code == ResponseCode.SUCCESS
            good = _frame({**_PLAIN, "topic": "FastBad"}, 41)
            bad = bytearray(_frame({**_PLAIN, "topic": "FastBad"}, 42))
            bad[8 + 17 : 8 + 21] = (0x7FFFFFF0).to_bytes(4, "big")  # extFields length past the header
            host, port = broker.address.rsplit(":", 1)
            stream = await trio.open_tcp_stream(host, int(port))
            async with stream:
                await stream.send_all(good + bytes(bad))
                received = b""
                while chunk := await stream.receive_some(65536):
                    received += chunk
            answer = RemotingCommand.decode(received)  # exactly one whole frame, then EOF
            assert answer.opaque == 41 and answer.code == ResponseCode.SUCCESS
            stored = sum(broker.store.get_max_offset_in_queue("FastBad", q) for q in range(8))
            assert stored == 2  # the first send and the good one; the bad one never reached the store




@needs_lane
@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize(("v2", "name"), [(True, "j"), (True, "l"), (False, "reconsumeTimes"),
                                          (False, "maxReconsumeTimes")])
def test_an_empty_reconsume_field_is_passed_on_to_the_general_path(
    tmp_path: Path, binary: bool, v2: bool, name: str
) -> None:
    """reconsumeTimes / maxReconsumeTimes present as "": the dispatcher refuses it before the handler
    (SYSTEM_ERROR, NumberFormatException: as Java's SendMessageRequestHeaderV2.decode throws), so the
    lane must not answer SEND_OK for it."""
    req = _request({**_PLAIN, "binary": binary, "v2": v2}, 7)
    assert req.ext_fields is not None
    req.ext_fields[name] = ""
    frame = req.encode()
    header_class = REQUEST_HEADERS[req.code]
    with pytest.raises(BadFieldValue) as refused:
        header_class.check_wire_values(RemotingCommand.decode(frame).ext_fields)
    assert 'For input string: ""' in refused.value.remote_desc
    with _broker(tmp_path) as broker:
        lane = _lane(broker)
        trio.run(_general, broker, _ctx(broker), _request(_PLAIN, 1))
        assert _fast(lane, _ctx(broker), _PLAIN, 2) is not None  # the topic is the lane's now
        assert lane.answer(_ctx(broker), LaneFrame(frame)) is None


@needs_lane
def test_made_up_long_property_names_are_stored_but_not_kept(tmp_path: Path) -> None:
    """Plans and property orders are cached per sequence of names because a producer's few recur; a
    producer making up long names each time must not fill the caches with them (4,096 of up to 32 KB
    were kept): such sends take the general path, which orders them uncached."""
    from rocketpy.javacompat.hashmap import hashmap_key_order

    with _broker(tmp_path) as broker:
        lane, ctx = _lane(broker), _ctx(broker)
        trio.run(_general, broker, ctx, _request(_PLAIN, 1))
        assert _fast(lane, ctx, _PLAIN, 2) is not None  # the topic is the lane's now
        lane.settle()
        plans, orders = dict(lane.plans), hashmap_key_order.cache_info().currsize
        for i in range(20):
            names = [f"{i}-{n}-" + "n" * 300 for n in range(3)]
            send = {**_PLAIN, "properties": "\x02".join(f"{n}\x01v" for n in [*names, "TAGS"])}
            assert _fast(lane, ctx, send, 10 + i) is None  # the general path's
            request = _request(send, 10 + i)
            answer = RemotingCommand.decode(trio.run(_general, broker, ctx, request))
            assert answer.code == ResponseCode.SUCCESS
            stored = broker.store.look_message_by_msg_id(answer.ext_fields["msgId"])  # type: ignore[index]
            assert stored is not None and all(stored.properties[n] == "v" for n in names)
        assert lane.plans == plans
        assert hashmap_key_order.cache_info().currsize == orders


@needs_lane
def test_new_topics_take_the_lane_after_many_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane keeps the topics it has taken, at most 4,096: once that many had been seen (deleted ones
    too), no new topic took the lane any more."""
    monkeypatch.setattr(send_lane, "_MAX_CACHE", 3)
    with _broker(tmp_path) as broker:
        lane, ctx = _lane(broker), _ctx(broker)
        for i, topic in enumerate(f"Many{n}" for n in range(6)):
            send = {**_PLAIN, "topic": topic}
            trio.run(_general, broker, ctx, _request(send, 2 * i))  # creates it
            assert _fast(lane, ctx, send, 2 * i + 1) is not None, topic
            lane.settle()
        assert len(lane.topics) <= 3


@needs_lane
def test_long_tags_are_not_kept_by_the_lane(tmp_path: Path) -> None:
    """The lane caches the hash codes of the tags it sees (a producer's few recur); long ones, which only
    a hostile producer sends, are not kept (4,096 of 32 KB could be)."""
    import tracemalloc

    with _broker(tmp_path) as broker:
        lane, ctx = _lane(broker), _ctx(broker)
        trio.run(_general, broker, ctx, _request(_PLAIN, 1))
        assert _fast(lane, ctx, _PLAIN, 2) is not None
        lane.settle()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for i in range(40):
                send = {**_PLAIN, "properties": _PLAIN["properties"].replace("TagA", f"{i}".ljust(10_000, "t"))}
                assert _fast(lane, ctx, send, 10 + i) is not None
                lane.settle()
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    assert kept < 200 * 1024
