"""A push consumer's concurrent consumption (Java's ConsumeMessageConcurrentlyService).

Each pulled batch is cut into consume requests of ``consume_batch_size`` messages, queued in pull order
in one FIFO (Java's consumeRequestQueue) and taken from its head by at most ``consume_concurrency``
workers (the consume thread pool: consumeThreadMin; with Java's unbounded queue the pool never grows past
it). A request's messages leave their ProcessQueue as soon as the listener acknowledged them, and the
offset committed is what ``ProcessQueue.remove_messages`` answers: the lowest offset still in flight (or
one past the highest pulled), so a crash redelivers at most what was in flight.

A blocking listener runs on the service's own worker threads. When it is quick (about ``TRIP_WORK`` of
listening per request, measured) a worker takes the next few requests from the head in one trip to its
thread, still in pull order; a slow one gets one request per trip, as a Java consume thread does.
"""

from __future__ import annotations

import collections
import inspect
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ..clock import now_ms
from ..codecs.bodies import MessageQueue
from ..codecs.codes import MessageConst, MessageModel, MixAll
from ..codecs.message import MessageExt
from .consumer_base import reset_retry_topic
from .listener import ConsumeContext, ConsumeStatus, Listener
from .loop import ParkingLot
from .process_queue import ProcessQueue

if TYPE_CHECKING:
    from .push_consumer import PushConsumer

log = logging.getLogger("rocketpy.client")

#: submitConsumeRequestLater: a request whose send-back failed is consumed again after this long
CONSUME_LATER_ON_SEND_BACK_FAILURE = 5.0
#: listening time one trip to a worker thread may carry when the listener is quick (fewer trips)
TRIP_WORK = 0.001


@dataclass(slots=True)
class ConsumeRequest:
    """Messages of one queue handed to the listener in one call (Java's ConsumeRequest)."""

    msgs: list[MessageExt]
    process_queue: ProcessQueue
    message_queue: MessageQueue


#: a request the listener did not wholly acknowledge: its place in the trip, the answer or exception, the context
Unacknowledged = tuple[int, Any, BaseException | None, ConsumeContext]


def _listen_all(listener: Listener, requests: list[ConsumeRequest]) -> tuple[list[Unacknowledged], float]:
    """On a worker thread: the listener on each request in turn (a fresh context each); the requests it did
    not wholly acknowledge (the usual trip has none), and the seconds that took."""
    began = time.perf_counter()
    out: list[Unacknowledged] = []
    key = MessageConst.PROPERTY_CONSUME_START_TIMESTAMP
    success = ConsumeStatus.CONSUME_SUCCESS
    stamped, stamp = -1, ""
    for i, request in enumerate(requests):
        msgs = request.msgs
        now = now_ms()
        if now != stamped:  # the start stamp's text made once a millisecond
            stamped, stamp = now, str(now)
        for m in msgs:
            m.properties[key] = stamp
        ctx = ConsumeContext(request.message_queue)
        try:
            status = listener(msgs, ctx)
        except Exception as exc:
            out.append((i, None, exc, ctx))
            continue
        if (status is not None and status != success) or ctx.ack_index < len(msgs) - 1:
            out.append((i, status, None, ctx))
    return out, time.perf_counter() - began


class ConsumeMessageConcurrentlyService:
    """The FIFO of consume requests and the workers that take them, for one push consumer."""

    def __init__(self, consumer: PushConsumer) -> None:
        self.consumer = consumer
        self.concurrency = max(1, consumer.consume_concurrency)
        #: the consume threads: the service's own, so other trio threads neither wait for them nor they for those
        self.limiter = anyio.CapacityLimiter(self.concurrency)
        #: consumeRequestQueue: requests in pull order, waiting for a worker
        self.requests: collections.deque[ConsumeRequest] = collections.deque()
        self.workers = 0
        self._work = ParkingLot()
        #: seconds the blocking listener takes per request (moving average; pessimistic until measured)
        self.listen_cost = TRIP_WORK

    # -- submitting ----------------------------------------------------------------------------
    def submit_consume_request(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """A pulled batch, cut into requests of ``consume_batch_size``, to the tail of the FIFO."""
        size = max(1, self.consumer.consume_batch_size)
        if size == 1:
            self._submit([ConsumeRequest([m], pq, mq) for m in msgs])
        else:
            self._submit([ConsumeRequest(msgs[i:i + size], pq, mq) for i in range(0, len(msgs), size)])

    def _submit(self, requests: list[ConsumeRequest]) -> None:
        consumer = self.consumer
        assert consumer.nursery is not None
        # workers start as work comes, up to the pool's size, and stay (Java's core threads)
        for _ in range(min(len(requests), self.concurrency - self.workers)):
            self.workers += 1
            consumer.nursery.start_soon(self._worker)
        consumer._busy(len(requests))
        self.requests.extend(requests)
        self._work.unpark(count=-(-len(self.requests) // self._trip_size(len(self.requests))))

    def submit_consume_request_later(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        """submitConsumeRequestLater: messages whose send-back failed, consumed here again after a while."""
        consumer = self.consumer
        assert consumer.nursery is not None
        consumer._track(consumer.nursery, self._consume_later, msgs, pq, mq)

    async def _consume_later(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        await anyio.sleep(CONSUME_LATER_ON_SEND_BACK_FAILURE)
        if not pq.dropped and self.consumer.running:
            self.submit_consume_request(msgs, pq, mq)

    # -- the workers -----------------------------------------------------------------------------------
    def _threaded(self) -> bool:
        consumer = self.consumer
        listener = consumer.listener
        return consumer.trace is None and consumer.listener_in_thread and not inspect.iscoroutinefunction(listener)

    def _trip_size(self, waiting: int) -> int:
        """Requests one worker takes from the head at once: one, or about TRIP_WORK of a quick blocking
        listener's work (the trip's requests still start in FIFO order, one after the other)."""
        if waiting <= 1 or not self._threaded():
            return 1
        return max(1, min(waiting, int(TRIP_WORK / max(self.listen_cost, 1e-6))))

    async def _worker(self) -> None:
        requests = self.requests
        try:
            while True:
                while not requests:
                    await self._work.park()
                n = self._trip_size(len(requests))
                trip = [requests.popleft()] if n == 1 else [requests.popleft() for _ in range(n)]
                try:
                    await self._run(trip)
                finally:
                    self.consumer._done(len(trip))
        finally:
            self.workers -= 1

    async def _run(self, trip: list[ConsumeRequest]) -> None:
        """ConsumeRequest.run of each request of the trip, then processConsumeResult of each."""
        consumer = self.consumer
        if not consumer.running:
            return
        retry = MixAll.get_retry_topic(consumer.group)
        live: list[ConsumeRequest] = []
        for request in trip:
            if request.process_queue.dropped:
                log.info("the message queue not be able to consume, because it's dropped. group=%s %s",
                         consumer.group, request.message_queue)
                continue
            live.append(request)
            if consumer.namespace:  # every topic is named without it
                reset_retry_topic(request.msgs, consumer.group, consumer.namespace)
                continue
            for m in request.msgs:
                if m.topic == retry:  # rare: the reset's work, once the request holds a retried message
                    reset_retry_topic(request.msgs, consumer.group)
                    break
        if not live:
            return
        unacknowledged: list[Unacknowledged]
        if self._threaded():
            listener = consumer.listener
            assert listener is not None
            unacknowledged, took = await anyio.to_thread.run_sync(
                _listen_all, listener, live, limiter=self.limiter)
            self.listen_cost += 0.2 * (took / len(live) - self.listen_cost)
            # the running info's statusTable (ConsumerStatsManager): the trip's time shared by its requests
            each_ms = took * 1000 / len(live)
            failed_at = {u[0] for u in unacknowledged}
            for i, request in enumerate(live):
                n = len(request.msgs)
                consumer.stats.consumed(request.message_queue.topic or "", 0 if i in failed_at else n,
                                        n if i in failed_at else 0, each_ms)
        else:
            unacknowledged = []
            for i, request in enumerate(live):
                msgs = request.msgs
                ctx = ConsumeContext(request.message_queue)
                stamp = str(now_ms())
                for m in msgs:
                    m.properties[MessageConst.PROPERTY_CONSUME_START_TIMESTAMP] = stamp
                began = time.perf_counter()
                failure: Exception | None = None
                status: Any = None
                try:
                    status = await consumer._call_listener(msgs, ctx)
                except Exception as exc:
                    failure = exc
                good = failure is None and (status is None or status == ConsumeStatus.CONSUME_SUCCESS) \
                    and ctx.ack_index >= len(msgs) - 1
                consumer.stats.consumed(request.message_queue.topic or "", len(msgs) if good else 0,
                                        0 if good else len(msgs), (time.perf_counter() - began) * 1000)
                if not good:
                    unacknowledged.append((i, status, failure, ctx))
        # what was acknowledged leaves its queue at once (one step per queue), before any send-back is awaited
        skip = {u[0] for u in unacknowledged}
        consumed: dict[int, tuple[ProcessQueue, MessageQueue, list[MessageExt]]] = {}
        ok = 0
        for i, request in enumerate(live):
            if skip and i in skip:
                continue
            pq, mq = request.process_queue, request.message_queue
            if pq.dropped:
                log.warning("processQueue is dropped without process consume result. messageQueue=%s", mq)
                continue
            ok += len(request.msgs)
            same = consumed.get(id(pq))
            if same is None:
                consumed[id(pq)] = (pq, mq, list(request.msgs))
            else:
                same[2].extend(request.msgs)
        consumer.consumed_ok += ok
        for pq, mq, msgs in consumed.values():
            self._remove(pq, mq, msgs)
        for i, status, error, ctx in unacknowledged:
            request = live[i]
            if error is not None:
                log.error("consumeMessage exception, Group: %s %s", consumer.group, request.message_queue,
                          exc_info=error)
                status = ConsumeStatus.RECONSUME_LATER
            if request.process_queue.dropped:
                log.warning("processQueue is dropped without process consume result. messageQueue=%s",
                            request.message_queue)
                continue
            await self.process_consume_result(status, ctx, request)

    async def process_consume_result(self, status: Any, ctx: ConsumeContext, request: ConsumeRequest) -> None:
        """The messages past the context's ack index (all of them unless CONSUME_SUCCESS) go back to the broker
        for redelivery (or, when that fails, to this queue again later); then the request leaves its queue."""
        consumer = self.consumer
        msgs = request.msgs
        if not msgs:
            return
        if status is None or status == ConsumeStatus.CONSUME_SUCCESS:
            ack = min(ctx.ack_index, len(msgs) - 1)
        else:
            ack = -1
        consumer.consumed_ok += ack + 1
        consumer.consumed_failed += len(msgs) - ack - 1
        pq, mq = request.process_queue, request.message_queue
        done = msgs
        if str(consumer.message_model) == MessageModel.BROADCASTING:
            for m in msgs[ack + 1:]:
                log.warning("BROADCASTING, the message consume failed, drop it, %s", m.client_msg_id)
        else:
            back_failed = []
            for m in msgs[ack + 1:]:
                if not await consumer.send_message_back(m, ctx.delay_level_when_next_consume, mq.broker_name):
                    m.reconsume_times += 1
                    back_failed.append(m)
            if back_failed:
                failed = {id(m) for m in back_failed}
                done = [m for m in msgs if id(m) not in failed]
                self.submit_consume_request_later(back_failed, pq, mq)
        self._remove(pq, mq, done)

    def _remove(self, pq: ProcessQueue, mq: MessageQueue, msgs: list[MessageExt]) -> None:
        """Consumed messages leave their queue; the offset that makes safe is kept for the broker."""
        offset = pq.remove_messages(msgs)
        if offset >= 0 and not pq.dropped:
            assert self.consumer.offset_store is not None
            self.consumer.offset_store.update_offset(mq, offset, True)
