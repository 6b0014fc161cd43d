"""enableMsgTrace dispatcher: what a client queued before shutdown reaches the trace topic."""

from __future__ import annotations

from typing import Any

import trio

from rocketpy.client.results import SendResult
from rocketpy.client.trace import TraceDispatcher
from rocketpy.codecs.bodies import MessageQueue
from rocketpy.codecs.codes import SendStatus
from rocketpy.codecs.message import Message
from rocketpy.codecs.trace import decode_trace_data


class SlowTraceProducer:
    """The dispatcher's inner producer; each send takes `delay` seconds (a broker under load), the first
    one `first_delay` (the trace topic's route being looked up)."""

    def __init__(self, delay: float, first_delay: float | None = None) -> None:
        self.delay = delay
        self.first_delay = delay if first_delay is None else first_delay
        self.started: list[bytes] = []
        self.sent: list[bytes] = []
        self.shut_down = False

    async def send(self, msg: Message) -> None:
        self.started.append(msg.body)
        await trio.sleep(self.first_delay if len(self.started) == 1 else self.delay)
        self.sent.append(msg.body)

    async def shutdown(self) -> None:
        self.shut_down = True


class FakeClient:
    def __init__(self, nursery: trio.Nursery) -> None:
        self.nursery = nursery


async def _dispatcher(nursery: trio.Nursery, producer: SlowTraceProducer) -> TraceDispatcher:
    trace = TraceDispatcher(FakeClient(nursery), "CG", producer_class=SlowTraceProducer)  # type: ignore[arg-type]
    trace._producer = producer  # the real one needs a broker; the batching task is the one under test
    nursery.start_soon(trace._run)
    await trio.sleep(0)
    return trace


async def test_shutdown_waits_for_a_batch_being_sent(virtual_clock: Any) -> None:
    producer = SlowTraceProducer(delay=1.0)
    async with trio.open_nursery() as nursery:
        trace = await _dispatcher(nursery, producer)
        trace._add("SubAfter-record", ["MSG1"])
        while not producer.started:  # the batching task took the record and is sending it
            await trio.sleep(0.01)
        await trace.aclose()
    # the record was neither left behind nor cancelled mid-send
    assert producer.sent == [b"SubAfter-record"] and producer.shut_down


async def test_shutdown_sends_queued_records_and_the_batch_under_way(virtual_clock: Any) -> None:
    producer = SlowTraceProducer(delay=0.1, first_delay=2.0)
    async with trio.open_nursery() as nursery:
        trace = await _dispatcher(nursery, producer)
        trace._add("SubBefore-record", ["MSG1"])
        while not producer.started:
            await trio.sleep(0.01)
        trace._add("SubAfter-record", ["MSG1"])  # the listener returned while SubBefore was on its way
        await trace.aclose()
    assert sorted(producer.sent) == [b"SubAfter-record", b"SubBefore-record"]


async def test_shutdown_is_bounded_by_its_timeout(virtual_clock: Any) -> None:
    producer = SlowTraceProducer(delay=60.0)  # a trace topic nobody answers for
    async with trio.open_nursery() as nursery:
        trace = await _dispatcher(nursery, producer)
        trace._add("Pub-record", ["MSG1"])
        while not producer.started:
            await trio.sleep(0.01)
        before = trio.current_time()
        await trace.aclose(timeout=3.0)
        assert trio.current_time() - before == 3.0
    assert producer.sent == [] and producer.shut_down


def test_records_name_the_topic_without_its_namespace() -> None:
    # Java's SendMessageTraceHookImpl: NamespaceUtil.withoutNamespace(topic); the traced message keeps its topic
    trace = TraceDispatcher(FakeClient(None), "PG", producer_class=SlowTraceProducer)  # type: ignore[arg-type]
    msg = Message(topic="MQ_INST_x%TTraced", body=b"b")
    result = SendResult(SendStatus.SEND_OK, "MSG1", MessageQueue(topic="TTraced", broker_name="b", queue_id=0), 0)
    trace.on_send(msg, result, "127.0.0.1:10911", 1, 0)
    (record,) = decode_trace_data(trace._pending[0][0])
    assert (record.trace_type, record.topic, record.group) == ("Pub", "TTraced", "PG")
