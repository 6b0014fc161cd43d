"""The push consumer (Java's DefaultMQPushConsumer): long-polling pull loops feeding a listener.

Each owned queue has a pull task in the consumer's nursery (its next pull sent once its
answer came); pulled messages wait in the queue's ProcessQueue and are handed to the
listener concurrently, in pull order, by the ConsumeMessageConcurrentlyService
(consume_concurrently.py: at most ``consume_concurrency`` at once), or in order, one
batch at a time per queue, under a broker lock (``orderly=True``). Failed messages go
back to the broker for retry; consumed offsets are committed to the broker (clustering)
or a local file (broadcasting).
"""

from __future__ import annotations

import inspect
import logging
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import trio

from ..clock import now_ms
from ..codecs.bodies import ConsumeMessageDirectlyResult, ConsumerRunningInfo, MessageQueue
from ..codecs.codes import CMResult, MessageConst, MessageModel, MixAll, PullStatus, PullSysFlag
from ..codecs.headers import PullMessageRequestHeader
from ..codecs.message import Message, MessageExt
from ..keyed_locks import KeyedLocks
from ..remoting import RemotingError
from .api import decode_pulled
from .consume_concurrently import ConsumeMessageConcurrentlyService
from .consumer_base import ConsumerBase, PullAhead, reset_retry_topic
from .consumer_stats import ConsumerStats
from .errors import MQClientError
from .listener import ConsumeContext, ConsumeStatus, Listener, OrderlyStatus
from .namespace import with_namespace
from .process_queue import LOCK_INTERVAL, ProcessQueue
from .producer import Producer
from .trace import CONTEXT_EXCEPTION, CONTEXT_FAILED, CONTEXT_SUCCESS, TraceDispatcher

log = logging.getLogger("rocketpy.client")

_MIN_OFFSET, _MAX_OFFSET = MessageConst.PROPERTY_MIN_OFFSET, MessageConst.PROPERTY_MAX_OFFSET

PULL_DELAY_ON_EXCEPTION = 3.0
PULL_DELAY_ON_FLOW_CONTROL = 0.05
MAX_TIME_CONSUME_CONTINUOUSLY = 60.0


def _stamp_consume_start(msgs: list[MessageExt]) -> None:
    now = str(now_ms())
    for m in msgs:
        m.properties[MessageConst.PROPERTY_CONSUME_START_TIMESTAMP] = now


@dataclass
class _PullState:
    """A queue's pull loop: the next offset to pull, whether its (orderly) lock was held, the pull ahead."""

    offset: int
    previously_locked: bool = False
    ahead: PullAhead | None = None


class PushConsumer(ConsumerBase):
    """``consumer.subscribe(topic, "TagA || TagB")``, then ``async with consumer:`` until done.

    The listener gets ``(msgs, context)``; it may be a plain function (run in a worker
    thread, like Java's consume thread pool, unless ``listener_in_thread=False``) or an
    async function. Returning None or CONSUME_SUCCESS/SUCCESS acknowledges the batch;
    RECONSUME_LATER/SUSPEND_CURRENT_QUEUE_A_MOMENT or raising asks for redelivery.
    """

    def __init__(
        self,
        group: str,
        listener: Listener | None = None,
        *,
        orderly: bool = False,
        pull_batch_size: int = 32,
        consume_batch_size: int = 1,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue: int = 100,
        consume_concurrently_max_span: int = 2000,
        consume_concurrency: int = 20,
        max_reconsume_times: int = -1,
        suspend_current_queue_time: float = 1.0,
        pull_interval: float = 0.0,
        broker_suspend_max: float = 15.0,
        consumer_timeout_when_suspend: float = 30.0,
        post_subscription_when_pull: bool = False,
        listener_in_thread: bool = True,
        await_termination: float = 5.0,
        enable_msg_trace: bool = False,
        customized_trace_topic: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(group, **kwargs)
        self.enable_msg_trace = enable_msg_trace
        self.customized_trace_topic = customized_trace_topic
        self.trace: TraceDispatcher | None = None
        self.listener = listener
        self.orderly = orderly
        self.pull_batch_size = pull_batch_size
        self.consume_batch_size = consume_batch_size
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.consume_concurrency = consume_concurrency
        self.max_reconsume_times = max_reconsume_times
        self.suspend_current_queue_time = suspend_current_queue_time
        self.pull_interval = pull_interval
        self.broker_suspend_max = broker_suspend_max
        self.consumer_timeout_when_suspend = consumer_timeout_when_suspend
        self.post_subscription_when_pull = post_subscription_when_pull
        self.listener_in_thread = listener_in_thread
        self.await_termination = await_termination
        #: orderly: listener calls at once across queues
        self._limiter = anyio.CapacityLimiter(consume_concurrency)
        self._pull_scopes: dict[MessageQueue, anyio.CancelScope] = {}
        #: orderly consumption of a queue one batch at a time (Java's MessageQueueLock), kept while in use
        self._mq_locks: KeyedLocks[MessageQueue] = KeyedLocks(anyio.Lock)
        self._inflight = 0
        self._idle = anyio.Event()
        self._idle.set()
        #: concurrent consumption (made again at start, from the settings then)
        self.consume_service = ConsumeMessageConcurrentlyService(self)
        self.consumed_ok = 0
        self.consumed_failed = 0
        #: the running info's statusTable (ConsumerStatsManager)
        self.stats = ConsumerStats()

    def register_listener(self, listener: Listener, *, orderly: bool | None = None) -> None:
        self.listener = listener
        if orderly is not None:
            self.orderly = orderly

    #: Java's name (DefaultMQPushConsumer.registerMessageListener)
    register_message_listener = register_listener

    @property
    def max_reconsume(self) -> int:
        if self.max_reconsume_times == -1:
            return 2**31 - 1 if self.orderly else 16
        return self.max_reconsume_times

    # -- lifecycle ----------------------------------------------------------------------------
    async def __aenter__(self) -> PushConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def start(self) -> None:
        if self.running:
            return
        if self.listener is None:
            raise MQClientError("messageListener is null")
        user_group = self._group_in_namespace()
        # made on the loop that runs the consumer (the constructor may have run on another: a facade's)
        self._limiter = anyio.CapacityLimiter(self._limiter.total_tokens)
        self._idle = anyio.Event()
        self._idle.set()
        if str(self.message_model) == MessageModel.CLUSTERING:
            retry = MixAll.get_retry_topic(self.group)
            self.subscriptions.setdefault(retry, self._retry_subscription(retry))
        if not self.orderly:
            self.consume_service = ConsumeMessageConcurrentlyService(self)
        await self._start_common()
        assert self.nursery is not None
        if self.enable_msg_trace:  # the records name the group as the user did (Java's dispatcher is made so)
            self.trace = TraceDispatcher(self.client, user_group, self.customized_trace_topic, producer_class=Producer)
            await self.trace.start()
        if self.orderly and str(self.message_model) == MessageModel.CLUSTERING:
            self.nursery.start_soon(self._lock_loop)
        await self.client.send_heartbeat_to_all_brokers()
        self.client.rebalance_immediately()

    @staticmethod
    def _retry_subscription(topic: str) -> Any:
        from ..codecs.bodies import build_subscription

        return build_subscription(topic, "*")

    async def shutdown(self) -> None:
        if not self.running:
            return
        self.running = False
        for scope in self._pull_scopes.values():
            scope.cancel()
        with anyio.move_on_after(self.await_termination):
            await self._idle.wait()
        if self.orderly and str(self.message_model) == MessageModel.CLUSTERING:
            with anyio.CancelScope(shield=True), anyio.move_on_after(3):
                await self._unlock_all()
        if self.trace is not None:
            await self.trace.aclose()
            self.trace = None
        await self._stop_common()

    # -- queue ownership --------------------------------------------------------------------------
    async def _before_add(self, mq: MessageQueue) -> bool:
        if self.orderly and str(self.message_model) == MessageModel.CLUSTERING:
            return await self.lock(mq)
        return True

    async def _on_queue_added(self, mq: MessageQueue, pq: ProcessQueue, next_offset: int) -> None:
        if self.orderly and str(self.message_model) == MessageModel.CLUSTERING:
            pq.locked = True
            pq.last_lock_time = time.monotonic()
        assert self.nursery is not None
        # started, not awaited: the queues added together send their first pulls in one turn
        scope = self._pull_scopes[mq] = anyio.CancelScope()
        self.nursery.start_soon(self._pull_loop, mq, pq, next_offset, scope)

    async def _on_queue_removed(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        scope = self._pull_scopes.pop(mq, None)
        if scope is not None:
            scope.cancel()

    async def _remove_unnecessary(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        await self._on_queue_removed(mq, pq)
        assert self.offset_store is not None
        await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        if self.orderly and str(self.message_model) == MessageModel.CLUSTERING:
            # wait (a little) for the batch in flight, so the next owner starts after our commit
            with anyio.move_on_after(1.0) as waited:
                async with self._mq_locks.hold(mq):
                    await self._unlock(mq)
            if waited.cancelled_caught:
                pq.try_unlock_times += 1
                return False
        return True

    # -- pulling -------------------------------------------------------------------------------------
    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue, next_offset: int, scope: anyio.CancelScope) -> None:
        """The queue's pulls, one at a time: the next sent once the answer before it came (or was decoded)."""
        with scope:
            st = _PullState(next_offset)
            while self.running and not pq.dropped:
                try:
                    delay = await self._pull_once(mq, pq, st)
                except (RemotingError, MQClientError) as exc:
                    log.warning("pull message from %s failed: %s", mq, exc)
                    delay = PULL_DELAY_ON_EXCEPTION
                except (trio.TooSlowError, TimeoutError):
                    delay = 0
                if delay:
                    st.ahead = None  # a pause: the flow control is checked again after it
                    await anyio.sleep(delay)

    def _pull_header(self, mq: MessageQueue, sd: Any, offset: int, from_slave: bool) -> PullMessageRequestHeader:
        """The PULL_MESSAGE header for ``offset`` (PullAPIWrapper.pullKernelImpl's), committing what memory holds
        unless it goes to a slave (a slave does not take the commit offset: the client keeps it for the master)."""
        assert self.offset_store is not None
        commit_offset = 0
        if str(self.message_model) == MessageModel.CLUSTERING:
            commit_offset = self.offset_store.memory_offset(mq)
        expression = sd.sub_string if self.post_subscription_when_pull and not sd.class_filter_mode else None
        return PullMessageRequestHeader(
            consumer_group=self.group, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset,
            max_msg_nums=self.pull_batch_size,
            sys_flag=PullSysFlag.build_sys_flag(commit_offset > 0 and not from_slave, True, expression is not None,
                                              False),
            commit_offset=max(commit_offset, 0), suspend_timeout_millis=int(self.broker_suspend_max * 1000),
            subscription=expression, sub_version=sd.sub_version, expression_type=sd.expression_type,
            bname=mq.broker_name)

    async def _pull_once(self, mq: MessageQueue, pq: ProcessQueue, st: _PullState) -> float:
        """One pull answer handled (the queue's next pull sent before its messages are decoded, when the flow
        control allows it whatever they are); the seconds to wait before the next one."""
        pq.last_pull_time = time.monotonic()
        ahead, st.ahead = st.ahead, None
        sd = self.subscriptions.get(mq.topic or "")
        if ahead is not None and sd is not None and ahead.offset == st.offset:
            addr, offset = ahead.addr, ahead.offset
            result, body = await self.client.api.pull_answered(addr, ahead.future)
        else:
            if pq.msg_count > self.pull_threshold_for_queue or \
                    pq.msg_size > self.pull_threshold_size_for_queue * 1024 * 1024:
                return PULL_DELAY_ON_FLOW_CONTROL
            if not self.orderly:
                if pq.max_span() > self.consume_concurrently_max_span:
                    return PULL_DELAY_ON_FLOW_CONTROL
            elif str(self.message_model) == MessageModel.CLUSTERING:
                if not pq.locked:
                    return PULL_DELAY_ON_EXCEPTION
                if not st.previously_locked:
                    # the queue just became ours: start from the committed offset (the last owner's progress)
                    st.offset = await self.compute_pull_from_where(mq)
                    st.previously_locked = True
            if sd is None:
                return PULL_DELAY_ON_EXCEPTION
            offset = st.offset
            addr, from_slave = await self.pull_target(mq)
            header = self._pull_header(mq, sd, offset, from_slave)
            result, body = await self.client.api.pull(addr, header, self.consumer_timeout_when_suspend)
        self.update_pull_from_which_node(mq, result.suggest_which_broker_id)
        if pq.dropped:
            return 0
        assert self.offset_store is not None
        if result.pull_status == PullStatus.FOUND:
            st.offset = result.next_begin_offset
            self._pull_ahead(mq, pq, sd, st, offset, len(body))
            msgs = decode_pulled(body, sd.tags_set, sd.class_filter_mode)
            self.stats.pulled(mq.topic or "", len(msgs), (time.monotonic() - pq.last_pull_time) * 1000)
            low, high = str(result.min_offset), str(result.max_offset)
            for m in msgs:
                props = m.properties
                props[_MIN_OFFSET] = low
                props[_MAX_OFFSET] = high
            if msgs:
                dispatch = pq.put_messages(msgs)
                self._submit(msgs, pq, mq, dispatch)
                return self.pull_interval
            return 0
        offset = st.offset
        if result.pull_status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            st.offset = result.next_begin_offset
            if pq.msg_count == 0:
                self.offset_store.update_offset(mq, st.offset, True)
            return 0
        # OFFSET_ILLEGAL: adopt the broker's offset, and let the next rebalance rebuild the queue
        log.warning("the pull request offset illegal, %s offset %d, next %d", mq, offset, result.next_begin_offset)
        pq.dropped = True
        self.offset_store.update_offset(mq, result.next_begin_offset, False)
        await self.offset_store.persist(mq)
        if self.pq_table.get(mq) is pq:
            del self.pq_table[mq]
        self._pull_scopes.pop(mq, None)
        self.client.rebalance_immediately()
        return 0

    def _pull_ahead(self, mq: MessageQueue, pq: ProcessQueue, sd: Any, st: _PullState, offset: int,
                    size: int) -> None:
        """Send the queue's next pull now, before the answer just come (``size`` bytes of messages from
        ``offset`` up to ``st.offset``) is decoded, when Java's client would send it after queueing them
        whatever they hold: its flow control (the queue's message count, bytes and offset span) passes even
        with a whole batch more, nothing pauses between pulls, and the broker to ask stays the same."""
        if self.orderly or self.pull_interval or not self.running:
            return
        if pq.msg_count + self.pull_batch_size > self.pull_threshold_for_queue or \
                pq.msg_size + size > self.pull_threshold_size_for_queue * 1024 * 1024:
            return
        first = pq.first_offset()
        if st.offset - 1 - (offset if first is None else min(first, offset)) > self.consume_concurrently_max_span:
            return
        target = self.known_pull_target(mq)
        if target is None:
            return
        addr, from_slave = target
        header = self._pull_header(mq, sd, st.offset, from_slave)
        future = self.client.api.pull_soon(addr, header, self.consumer_timeout_when_suspend)
        if future is not None:
            st.ahead = PullAhead(st.offset, addr, future)

    # -- consuming ------------------------------------------------------------------------------------
    def _submit(self, msgs: list[MessageExt], pq: ProcessQueue, mq: MessageQueue, dispatch: bool) -> None:
        """submitConsumeRequest: the orderly service consumes the queue (when not already), the concurrent one
        queues the batch's requests behind those pulled before."""
        assert self.nursery is not None
        if self.orderly:
            if dispatch:
                self._track(self.nursery, self._consume_orderly, mq, pq)
            return
        self.consume_service.submit_consume_request(msgs, pq, mq)

    def _track(self, nursery: Any, fn: Callable[..., Awaitable[None]], *args: Any) -> None:
        self._busy()

        async def run() -> None:
            try:
                await fn(*args)
            finally:
                self._done()

        nursery.start_soon(run)

    def _busy(self, count: int = 1) -> None:
        self._inflight += count
        self._idle = anyio.Event() if self._idle.is_set() else self._idle

    def _done(self, count: int = 1) -> None:
        self._inflight -= count
        if self._inflight == 0:
            self._idle.set()

    async def _call_listener(self, msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
        trace = self.trace
        if trace is None:
            return await self._run_listener(msgs, ctx)
        token = trace.before_consume(msgs)
        try:
            status = await self._run_listener(msgs, ctx)
        except Exception:
            trace.after_consume(msgs, token, False, CONTEXT_EXCEPTION)
            raise
        ok = status in (None, ConsumeStatus.CONSUME_SUCCESS, OrderlyStatus.SUCCESS)
        trace.after_consume(msgs, token, ok, CONTEXT_SUCCESS if ok else CONTEXT_FAILED)
        return status

    async def _run_listener(self, msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
        listener = self.listener
        assert listener is not None
        if inspect.iscoroutinefunction(listener):
            return await listener(msgs, ctx)
        if self.listener_in_thread:
            return await anyio.to_thread.run_sync(listener, msgs, ctx)
        return listener(msgs, ctx)

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> bool:
        """CONSUMER_SEND_MSG_BACK, or a re-send to the retry topic when the broker cannot be asked."""
        try:
            addr = self.client.master_addr(broker_name) if broker_name else msg.store_host
            if addr is None:
                addr = msg.store_host
            # the listener saw the topic without the namespace: the broker is told the real one
            msg.topic = with_namespace(self.namespace, msg.topic)
            await self.client.api.send_message_back(addr, msg, self.group, delay_level, self.max_reconsume,
                                                    broker_name)
            return True
        except (RemotingError, MQClientError) as exc:
            log.warning("sendMessageBack to broker failed, resend to the retry topic: %s", exc)
        try:
            producer = await self.client.inner_producer(Producer)
            await producer.send(self._retry_message(msg))
            return True
        except (RemotingError, MQClientError) as exc:
            log.warning("sendMessageBack exception, group: %s msg: %s: %s", self.group, msg.client_msg_id, exc)
            return False

    def _retry_message(self, msg: MessageExt) -> Message:
        props = dict(msg.properties)
        origin = props.get(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID)
        props[MessageConst.PROPERTY_ORIGIN_MESSAGE_ID] = origin or msg.client_msg_id
        props[MessageConst.PROPERTY_RETRY_TOPIC] = msg.topic
        props[MessageConst.PROPERTY_RECONSUME_TIME] = str(msg.reconsume_times + 1)
        props[MessageConst.PROPERTY_MAX_RECONSUME_TIMES] = str(self.max_reconsume)
        props.pop(MessageConst.PROPERTY_TRANSACTION_PREPARED, None)
        props[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = str(3 + msg.reconsume_times)
        return Message(topic=MixAll.get_retry_topic(self.group), body=msg.decompressed_body(), flag=msg.flag,
                       properties=props)

    # -- orderly --------------------------------------------------------------------------------------------
    async def _consume_orderly(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        async with self._mq_locks.hold(mq):
            started = anyio.current_time()
            while True:
                if pq.dropped or not self.running:
                    return
                clustering = str(self.message_model) == MessageModel.CLUSTERING
                if clustering and (not pq.locked or pq.is_lock_expired()):
                    await anyio.sleep(0.01)
                    if not await self.lock(mq):
                        await anyio.sleep(PULL_DELAY_ON_EXCEPTION)
                    continue
                if anyio.current_time() - started > MAX_TIME_CONSUME_CONTINUOUSLY:
                    await anyio.sleep(0.01)  # let other queues have a turn
                    started = anyio.current_time()
                msgs = pq.take_messages(self.consume_batch_size)
                if not msgs:
                    return
                reset_retry_topic(msgs, self.group, self.namespace)
                ctx = ConsumeContext(mq)
                began = time.perf_counter()
                try:
                    async with self._limiter:
                        status = await self._call_listener(msgs, ctx)
                except Exception:
                    log.exception("consumeMessage exception, Group: %s %s", self.group, mq)
                    status = OrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                if status is None:
                    status = OrderlyStatus.SUCCESS
                good = status == OrderlyStatus.SUCCESS
                self.stats.consumed(mq.topic or "", len(msgs) if good else 0, 0 if good else len(msgs),
                                    (time.perf_counter() - began) * 1000)
                commit = -1
                if status == OrderlyStatus.SUCCESS:
                    self.consumed_ok += len(msgs)
                    commit = pq.commit()
                else:
                    self.consumed_failed += len(msgs)
                    if await self._check_reconsume_times(msgs):
                        pq.make_message_to_consume_again(msgs)
                        pause = ctx.suspend_current_queue_time
                        await anyio.sleep(pause if pause >= 0 else self.suspend_current_queue_time)
                        continue
                    commit = pq.commit()
                if commit >= 0 and not pq.dropped:
                    assert self.offset_store is not None
                    self.offset_store.update_offset(mq, commit, False)

    async def _check_reconsume_times(self, msgs: list[MessageExt]) -> bool:
        """True to suspend and retry locally; messages past the limit go to the DLQ instead."""
        suspend = False
        for m in msgs:
            if m.reconsume_times >= self.max_reconsume:
                m.properties[MessageConst.PROPERTY_RECONSUME_TIME] = str(m.reconsume_times)
                try:
                    producer = await self.client.inner_producer(Producer)
                    await producer.send(self._retry_message(m))
                except (RemotingError, MQClientError):
                    suspend = True
                    m.reconsume_times += 1
            else:
                suspend = True
                m.reconsume_times += 1
        return suspend

    # -- broker locks ----------------------------------------------------------------------------------------
    async def lock(self, mq: MessageQueue) -> bool:
        try:
            addr = await self._broker_of(mq)
            locked = await self.client.api.lock_batch(addr, self.group, self.client.client_id, [mq])
        except (RemotingError, MQClientError) as exc:
            log.warning("lockBatchMQ %s failed: %s", mq, exc)
            return False
        ok = mq in locked
        pq = self.pq_table.get(mq)
        if pq is not None and ok:
            pq.locked = True
            pq.last_lock_time = time.monotonic()
        return ok

    async def _unlock(self, mq: MessageQueue) -> None:
        try:
            addr = await self._broker_of(mq)
            await self.client.api.unlock_batch(addr, self.group, self.client.client_id, [mq], oneway=True)
        except (RemotingError, MQClientError) as exc:
            log.warning("unlockBatchMQ %s failed: %s", mq, exc)

    def _by_broker(self) -> dict[str, list[MessageQueue]]:
        out: dict[str, list[MessageQueue]] = {}
        for mq in self.pq_table:
            out.setdefault(mq.broker_name or "", []).append(mq)
        return out

    async def lock_all(self) -> None:
        for broker, mqs in self._by_broker().items():
            addr = self.client.master_addr(broker)
            if addr is None:
                continue
            try:
                locked = set(await self.client.api.lock_batch(addr, self.group, self.client.client_id, mqs))
            except (RemotingError, MQClientError) as exc:
                log.warning("lockBatchMQ on %s failed: %s", broker, exc)
                continue
            now = time.monotonic()
            for mq in mqs:
                pq = self.pq_table.get(mq)
                if pq is None:
                    continue
                if mq in locked:
                    pq.locked, pq.last_lock_time = True, now
                else:
                    pq.locked = False

    async def _unlock_all(self) -> None:
        for broker, mqs in self._by_broker().items():
            addr = self.client.master_addr(broker)
            if addr is None:
                continue
            try:
                # at shutdown Java waits for the answer (unlockAll(false))
                await self.client.api.unlock_batch(addr, self.group, self.client.client_id, mqs)
            except (RemotingError, MQClientError):
                pass

    async def _lock_loop(self) -> None:
        while True:
            await anyio.sleep(LOCK_INTERVAL)
            await self.lock_all()

    # -- admin hooks ---------------------------------------------------------------------------------------------
    async def reset_offset(self, topic: str | None, table: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET from the broker: drop the topic's queues, take the new offsets."""
        assert self.offset_store is not None
        for mq, pq in list(self.pq_table.items()):
            if mq.topic == topic and mq in table:
                pq.dropped = True
                pq.clear()
                await self._on_queue_removed(mq, pq)
        for mq, off in table.items():
            if mq in self.pq_table:
                self.offset_store.update_offset(mq, off, False)
                await self.offset_store.persist(mq)
                del self.pq_table[mq]
        self.client.rebalance_immediately()

    def running_info(self) -> ConsumerRunningInfo:
        info = ConsumerRunningInfo()
        info.properties = {
            "PROP_CONSUMEORDERLY": str(self.orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(self.consume_concurrency),
            "PROP_CONSUME_TYPE": str(self.consume_type),
            "PROP_CONSUMER_START_TIMESTAMP": str(self.start_time),
            "consumerGroup": self.group,
            "messageModel": str(self.message_model),
            "consumeFromWhere": str(self.consume_from_where),
        }
        info.subscription_set = list(self.subscriptions.values())
        topics = set(self.subscriptions)
        self.stats.forget(topics)
        info.status_table = {topic: self.stats.status(topic) for topic in sorted(topics)}
        offsets = self.offset_store.table if self.offset_store else {}
        info.mq_table = {mq: pq.info(offsets.get(mq, 0)) for mq, pq in self.pq_table.items()}
        return info

    async def consume_directly(self, msg: MessageExt, broker_name: str | None) -> ConsumeMessageDirectlyResult:
        mq = MessageQueue(topic=msg.topic, broker_name=broker_name, queue_id=msg.queue_id)
        reset_retry_topic([msg], self.group, self.namespace)
        start = time.monotonic()
        result = ConsumeMessageDirectlyResult(order=self.orderly, auto_commit=True)
        try:
            status = await self._call_listener([msg], ConsumeContext(mq))
        except Exception as exc:
            result.consume_result = CMResult.CR_THROW_EXCEPTION
            result.remark = "".join(traceback.format_exception_only(exc)).strip()
        else:
            good = status in (None, ConsumeStatus.CONSUME_SUCCESS, OrderlyStatus.SUCCESS)
            result.consume_result = CMResult.CR_SUCCESS if good else CMResult.CR_LATER
        result.spent_time_mills = int((time.monotonic() - start) * 1000)
        return result
