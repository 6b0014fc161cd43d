"""Consumers send a queue's next pull before decoding the answer just come, within Java's flow control.

A pull sent ahead is one Java's client would send anyway after queueing the answer's messages, whatever
they hold: the thresholds pass even with a whole batch more. Offsets still commit only what was consumed,
and a lite consumer's queue paused meanwhile takes nothing from the answer. Pull frames come from a
template per queue, byte for byte the frames of the commands.
"""

from __future__ import annotations

from typing import Any

import anyio
import loops
from clusters import Cluster, committed_offsets, make_topic
from hypothesis import given
from hypothesis import strategies as st
from loops import name, run

from rocketpy.client import ClientConfig, LitePullConsumer, Producer, PushConsumer, make_message
from rocketpy.client.api import ClientAPI, PreparedPull
from rocketpy.client.consumer_base import PullAhead
from rocketpy.client.offset_store import OffsetStore
from rocketpy.client.process_queue import ProcessQueue
from rocketpy.client.push_consumer import _PullState
from rocketpy.codecs import RemotingCommand, RequestCode
from rocketpy.codecs.bodies import MessageQueue, build_subscription
from rocketpy.codecs.codes import ConsumeFromWhere
from rocketpy.codecs.headers import PullMessageRequestHeader
from rocketpy.codecs.message import MessageExt
from rocketpy.remoting.client_connection import encode_request

MQ = MessageQueue(topic="T", broker_name="broker-a", queue_id=0)


class _API:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    def pull_soon(self, addr: str, header: Any, timeout: float) -> object:
        self.sent.append((addr, header))
        return object()


class _Client:
    """What _pull_ahead asks of the client instance: the broker's address and a pull sent at once."""

    config = ClientConfig()

    def __init__(self) -> None:
        self.api = _API()

    def find_broker_address_in_subscribe(self, name: str, broker_id: int, only_this: bool) -> tuple[str, bool]:
        return "127.0.0.1:10911", False


def _consumer(**kw: Any) -> tuple[PushConsumer, _API]:
    client = _Client()
    consumer = PushConsumer("CG", lambda msgs, ctx: None, client=client, pull_batch_size=32,  # type: ignore[arg-type]
                            pull_threshold_for_queue=100, pull_threshold_size_for_queue=1,
                            consume_concurrently_max_span=200, **kw)
    consumer.running = True
    consumer.offset_store = OffsetStore("CG")
    return consumer, client.api


def _held(pq: ProcessQueue, first: int, count: int, size: int = 10) -> None:
    pq.put_messages([MessageExt(topic="T", body=b"x" * size, queue_offset=first + i) for i in range(count)])


def test_push_pulls_ahead_only_when_the_flow_control_passes_with_a_batch_more() -> None:
    consumer, api = _consumer()
    sd = build_subscription("T", "*")
    consumer.offset_store.update_offset(MQ, 7)  # type: ignore[union-attr]
    pq = ProcessQueue()
    st = _PullState(offset=64)  # the answer just come held offsets 32..63
    consumer._pull_ahead(MQ, pq, sd, st, 32, 40_000)
    assert isinstance(st.ahead, PullAhead) and st.ahead.offset == 64
    header = api.sent[-1][1]
    # the next pull's header, as a pull after the answer would send it: what memory holds is committed
    assert (header.queue_offset, header.commit_offset, header.max_msg_nums) == (64, 7, 32)

    def ahead_with(pq: ProcessQueue, size: int = 40_000, offset: int = 32, **kw: Any) -> bool:
        c, _api = _consumer(**kw)
        s = _PullState(offset=offset + 32)
        c._pull_ahead(MQ, pq, sd, s, offset, size)
        return s.ahead is not None

    assert ahead_with(ProcessQueue())
    at_limit, over = ProcessQueue(), ProcessQueue()
    _held(at_limit, 0, 68)  # 68 + a batch of 32 = the threshold (100): Java pulls at 100
    _held(over, 0, 69)
    assert ahead_with(at_limit, offset=68) and not ahead_with(over, offset=69)
    # bytes: 1 MiB held, with the answer's bytes on top
    assert not ahead_with(ProcessQueue(), size=1024 * 1024 + 1)
    # span: the oldest held message to the answer's last offset
    far = ProcessQueue()
    _held(far, 0, 1)
    assert ahead_with(far, offset=169) and not ahead_with(far, offset=170)
    # no pull ahead where Java waits between pulls, or consumes in order under a lock
    assert not ahead_with(ProcessQueue(), pull_interval=0.5)
    assert not ahead_with(ProcessQueue(), orderly=True)


def fast(c: Cluster) -> ClientConfig:
    return ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=1.0, persist_consumer_offset_interval=0.5,
                        poll_name_server_interval=1.0)


loop = loops.loop  # the tests that take it run once under trio and once under asyncio (issue #45)


async def _fill(c: Cluster, topic: str, count: int) -> None:
    async with Producer(name("PGA"), namesrv=c.namesrv) as p:
        for i in range(0, count, 10):
            await p.send_batch([make_message(topic, f"m{j}") for j in range(i, i + 10)])


def test_push_pipelined_keeps_the_thresholds_and_commits_only_consumed(loop: str,
                                                                       rocketmq_session_cluster: Cluster) -> None:
    c, topic, group = rocketmq_session_cluster, name("TopicPa"), name("CGPA")
    seen: list[int] = []
    held: list[int] = []
    early: list[tuple[int, int]] = []

    def committed() -> int:
        return committed_offsets(c.broker, group, topic).get(0, 0)

    async def main() -> None:
        await make_topic(c, topic, 1)
        await _fill(c, topic, 300)
        gate = anyio.Event()

        async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
            await gate.wait()
            pq = next(iter(consumer.pq_table.values()))
            held.append(pq.msg_count)
            if committed() > msgs[0].queue_offset:
                early.append((committed(), msgs[0].queue_offset))
            seen.extend(m.queue_offset for m in msgs)

        def held_now() -> int:
            return next(iter(consumer.pq_table.values())).msg_count if consumer.pq_table else 0

        consumer = PushConsumer(group, listener, config=fast(c), pull_batch_size=8, pull_threshold_for_queue=40,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe(topic)
        async with consumer:
            await loops.wait_for(lambda: held_now() > 40 - 8, "filled up to the flow control")
            await anyio.sleep(0.5)  # the listener blocked: ten looks of the flow control (50 ms), no further
            assert 40 - 8 < held_now() <= 40 + 8
            assert committed() == 0  # nothing consumed, nothing committed
            gate.set()
            await loops.wait_for(lambda: len(seen) >= 300, "all consumed", seconds=30)
            await loops.wait_for(lambda: committed() == 300, "all committed")

    run(loop, main)
    assert sorted(seen) == list(range(300))
    assert max(held) <= 40 + 8
    assert early == []  # a message's offset is committed only after it is consumed


def test_lite_pull_ahead_answer_is_dropped_when_paused_meanwhile(loop: str, rocketmq_session_cluster: Cluster) -> None:
    c, topic = rocketmq_session_cluster, name("TopicLa")
    got: list[int] = []

    async def main() -> None:
        await make_topic(c, topic, 1)
        await _fill(c, topic, 200)
        mq = MessageQueue(topic=topic, broker_name=c.broker.config.broker_name, queue_id=0)
        async with LitePullConsumer(name("CGLA"), config=fast(c), pull_batch_size=10,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET) as lp:
            await lp.assign([mq])
            got.extend(m.queue_offset for m in await lp.poll(5.0))
            # the first answer's pull ahead is on its way: paused now, the queue takes nothing from it
            lp.pause([mq])
            fetched = lp.pq_table[mq].msg_count
            while msgs := await lp.poll(1.0):
                got.extend(m.queue_offset for m in msgs)
            assert len(got) == 10 + fetched
            await anyio.sleep(1.2)  # past the paused queue's next look (1 s, Java's delay when paused)
            assert await lp.poll(0.5) == []  # paused: nothing more, not even the answer of the pull ahead
            lp.resume([mq])
            with anyio.fail_after(20):
                while len(got) < 200:
                    got.extend(m.queue_offset for m in await lp.poll(1.0))

    run(loop, main)
    assert got == list(range(200))  # no message skipped or repeated by the dropped answer


_longs = st.integers(-(2**63), 2**63 - 1)
_ints = st.integers(-(2**31), 2**31 - 1)


@given(group=st.text(min_size=1), topic=st.text(min_size=1), queue_id=_ints, queue_offset=_longs,
       max_msg_nums=_ints, sys_flag=_ints, commit_offset=_longs, suspend=_longs, subscription=st.none() | st.text(),
       sub_version=_longs, expression_type=st.none() | st.sampled_from(["TAG", "SQL92"]),
       bname=st.none() | st.text(), opaque=_ints)
def test_pull_frames_from_templates_equal_the_commands(  # type: ignore[no-untyped-def]
        group, topic, queue_id, queue_offset, max_msg_nums, sys_flag, commit_offset, suspend, subscription,
        sub_version, expression_type, bname, opaque) -> None:
    api = ClientAPI(None)  # type: ignore[arg-type]
    header = PullMessageRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, queue_offset=queue_offset, max_msg_nums=max_msg_nums,
        sys_flag=sys_flag, commit_offset=commit_offset, suspend_timeout_millis=suspend, subscription=subscription,
        sub_version=sub_version, expression_type=expression_type, bname=bname)
    reference = encode_request(RemotingCommand.request(RequestCode.PULL_MESSAGE, header), opaque)
    assert encode_request(api.pull_request(header), opaque) == reference
    # the queue's next pull: the same template, other offsets
    header.queue_offset, header.commit_offset = commit_offset, queue_offset
    reference = encode_request(RemotingCommand.request(RequestCode.PULL_MESSAGE, header), opaque)
    assert encode_request(api.pull_request(header), opaque) == reference


def test_a_queue_pulls_with_its_template() -> None:
    api = ClientAPI(None)  # type: ignore[arg-type]
    header = PullMessageRequestHeader(
        consumer_group="CG", topic="T", queue_id=0, queue_offset=64, max_msg_nums=32, sys_flag=3, commit_offset=7,
        suspend_timeout_millis=15000, sub_version=1, expression_type="TAG", bname="broker-a")
    assert isinstance(api.pull_request(header), PreparedPull)
