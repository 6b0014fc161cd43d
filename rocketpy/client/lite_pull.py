"""The lite pull consumer (Java's DefaultLitePullConsumer): subscribe or assign, then poll.

Pull tasks fetch ahead into a bounded buffer; ``poll`` hands out what arrived. Each
queue remembers the next offset to pull and the offset after the last message
polled; ``seek`` moves both and discards what was fetched before it. Offsets are
committed automatically every ``auto_commit_interval`` or by ``commit``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc

from ..clock import now_ms
from ..codecs.bodies import MessageQueue, SubscriptionData, build_subscription
from ..codecs.codes import ConsumeType, MessageModel, PullStatus, PullSysFlag
from ..codecs.headers import PullMessageRequestHeader
from ..codecs.message import MessageExt
from ..remoting import RemotingError
from .api import decode_pulled
from .consumer_base import ConsumerBase, PullAhead, reset_retry_topic
from .errors import MQClientError
from .loop import ParkingLot
from .namespace import queue_with_namespace, queue_without_namespace, with_namespace
from .offset_store import ReadOffsetType
from .process_queue import ProcessQueue

log = logging.getLogger("rocketpy.client")

#: how long a pull loop held back by a threshold or a pause waits before it looks again (Java's
#: PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL); a poll wakes it sooner
FLOW_CONTROL_DELAY = 0.05


@dataclass
class Assigned:
    pq: ProcessQueue
    pull_offset: int = -1
    consume_offset: int = -1
    paused: bool = False
    generation: int = 0
    scope: anyio.CancelScope | None = None
    buffered: list[Any] = field(default_factory=list)


class LitePullConsumer(ConsumerBase):
    consume_type = ConsumeType.CONSUME_ACTIVELY

    def __init__(
        self,
        group: str,
        *,
        pull_batch_size: int = 10,
        pull_threshold_for_all: int = 10000,
        pull_threshold_for_queue: int = 1000,
        auto_commit: bool = True,
        auto_commit_interval: float = 5.0,
        poll_timeout: float = 5.0,
        broker_suspend_max: float = 20.0,
        consumer_timeout_when_suspend: float = 30.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(group, **kwargs)
        self.pull_batch_size = pull_batch_size
        self.pull_threshold_for_all = pull_threshold_for_all
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.auto_commit = auto_commit
        self.auto_commit_interval = auto_commit_interval
        self.poll_timeout = poll_timeout
        self.broker_suspend_max = broker_suspend_max
        self.consumer_timeout_when_suspend = consumer_timeout_when_suspend
        self.assigned: dict[MessageQueue, Assigned] = {}
        self._manual = False
        self._send, self._recv = anyio.create_memory_object_stream[tuple[MessageQueue, int, list[MessageExt]]](10**6)
        self._buffered = 0
        #: pull loops held back by the thresholds (or a pause), woken by each poll
        self._room = ParkingLot()

    # -- lifecycle --------------------------------------------------------------------------
    async def __aenter__(self) -> LitePullConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def start(self) -> None:
        if self.running:
            return
        self._group_in_namespace()
        # made on the loop that runs the consumer (the constructor may have run on another: a facade's)
        self._send, self._recv = anyio.create_memory_object_stream[tuple[MessageQueue, int, list[MessageExt]]](10**6)
        self._buffered = 0
        await self._start_common()
        assert self.nursery is not None
        if self.auto_commit:
            self.nursery.start_soon(self._auto_commit_loop)
        for mq in list(self.assigned):
            await self._start_queue(mq)
        await self.client.send_heartbeat_to_all_brokers()
        if not self._manual:
            self.client.rebalance_immediately()

    async def shutdown(self) -> None:
        if not self.running:
            return
        if self.auto_commit:
            await self.commit()
        self.running = False
        await self._stop_common()

    # -- subscribe / assign ----------------------------------------------------------------------
    def subscribe(self, topic: str, expression: str | None = "*") -> None:
        if self._manual:
            raise MQClientError("Subscribe and assign are mutually exclusive.")
        super().subscribe(topic, expression)

    async def assign(self, queues: list[MessageQueue]) -> None:
        """Consume exactly these queues (no rebalance)."""
        if self.subscriptions and not self._manual:
            raise MQClientError("Subscribe and assign are mutually exclusive.")
        self._manual = True
        queues = [self._queue(mq) for mq in queues]
        for mq in queues:
            self.subscriptions.setdefault(mq.topic or "", build_subscription(mq.topic or "", "*"))
        for mq in [mq for mq in self.assigned if mq not in queues]:
            self._stop_queue(mq)
        for mq in queues:
            if mq not in self.assigned:
                self.assigned[mq] = Assigned(ProcessQueue())
                self.pq_table[mq] = self.assigned[mq].pq
                if self.running:
                    await self._start_queue(mq)

    async def fetch_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of a topic (fetchMessageQueues), named as the user names them (no namespace)."""
        from .route import broker_addrs, subscribe_queues

        topic = with_namespace(self.namespace, topic)
        route = await self.client.fetch_route(topic)
        if route is None:
            raise MQClientError(f"Can not find Message Queue for this topic, {topic}")
        self.client.broker_addr_table.update(broker_addrs(route))
        return [queue_without_namespace(self.namespace, mq) for mq in subscribe_queues(topic, route)]

    def _queue(self, mq: MessageQueue) -> MessageQueue:
        """A queue the user named, as it is on the wire (queueWithNamespace)."""
        return queue_with_namespace(self.namespace, mq)

    #: Java's name (DefaultLitePullConsumer.fetchMessageQueues)
    fetch_message_queues = fetch_queues

    async def do_rebalance(self) -> None:
        if not self._manual:
            await super().do_rebalance()

    async def _on_queue_added(self, mq: MessageQueue, pq: ProcessQueue, next_offset: int) -> None:
        self.assigned[mq] = Assigned(pq, pull_offset=next_offset, consume_offset=next_offset)
        await self._start_queue(mq)

    async def _on_queue_removed(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        self._stop_queue(mq)

    def _stop_queue(self, mq: MessageQueue) -> None:
        a = self.assigned.pop(mq, None)
        if self._manual:
            self.pq_table.pop(mq, None)
        if a is not None:
            a.pq.dropped = True
            a.generation += 1
            if a.scope is not None:
                a.scope.cancel()

    async def _start_queue(self, mq: MessageQueue) -> None:
        assert self.nursery is not None
        await self.nursery.start(self._pull_loop, mq)

    # -- pulling ------------------------------------------------------------------------------------
    async def _next_offset(self, mq: MessageQueue, a: Assigned) -> int:
        if a.pull_offset >= 0:
            return a.pull_offset
        assert self.offset_store is not None
        off = await self.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
        if off < 0:
            off = await self.compute_pull_from_where(mq)
        a.pull_offset = a.consume_offset = off
        return off

    async def _pull_loop(self, mq: MessageQueue, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        a = self.assigned[mq]
        with anyio.CancelScope() as scope:
            a.scope = scope
            task_status.started()
            ahead: PullAhead | None = None
            while self.running and not a.pq.dropped:
                if ahead is None and (a.paused or self._buffered > self.pull_threshold_for_all or
                                      a.pq.msg_count > self.pull_threshold_for_queue):
                    # Java looks again after 50 ms; a poll that makes room looks sooner (an idle wait otherwise)
                    with anyio.move_on_after(FLOW_CONTROL_DELAY):
                        await self._room.park()
                    continue
                try:
                    ahead = await self._pull_once(mq, a, ahead)
                except (RemotingError, MQClientError) as exc:
                    ahead = None
                    log.warning("lite pull %s failed: %s", mq, exc)
                    await anyio.sleep(3.0)

    def _pull_header(self, mq: MessageQueue, sd: SubscriptionData, offset: int) -> PullMessageRequestHeader:
        return PullMessageRequestHeader(
            consumer_group=self.group, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset,
            max_msg_nums=self.pull_batch_size, sys_flag=PullSysFlag.build_sys_flag(False, True, True, False, True),
            commit_offset=0, suspend_timeout_millis=int(self.broker_suspend_max * 1000), subscription=sd.sub_string,
            sub_version=0, expression_type=sd.expression_type, bname=mq.broker_name)

    async def _pull_once(self, mq: MessageQueue, a: Assigned, ahead: PullAhead | None = None) -> PullAhead | None:
        """One pull answer handled; the queue's next pull when it was sent before the messages were decoded
        (the thresholds pass even with a whole batch more)."""
        generation = a.generation
        sd = self.subscriptions.get(mq.topic or "") or build_subscription(mq.topic or "", "*")
        if ahead is not None and ahead.offset == a.pull_offset:
            offset = ahead.offset
            result, body = await self.client.api.pull_answered(ahead.addr, ahead.future)
            if a.paused:
                return None  # paused meanwhile: as if never sent (the queue pulls from this offset on resume)
        else:
            offset = await self._next_offset(mq, a)
            addr, _ = await self.pull_target(mq)
            result, body = await self.client.api.pull(addr, self._pull_header(mq, sd, offset),
                                                      self.consumer_timeout_when_suspend)
        self.update_pull_from_which_node(mq, result.suggest_which_broker_id)
        if generation != a.generation:
            return None  # a seek moved the queue while we waited
        if result.pull_status == PullStatus.OFFSET_ILLEGAL:
            log.warning("lite pull offset illegal, %s: %d -> %d", mq, offset, result.next_begin_offset)
        a.pull_offset = result.next_begin_offset
        if result.pull_status != PullStatus.FOUND:
            return None
        ahead = self._pull_ahead(mq, a, sd)
        msgs = decode_pulled(body, sd.tags_set)
        if msgs:
            reset_retry_topic(msgs, self.group, self.namespace)
            a.pq.put_messages(msgs)
            self._buffered += len(msgs)
            await self._send.send((mq, generation, msgs))
        return ahead

    def _pull_ahead(self, mq: MessageQueue, a: Assigned, sd: SubscriptionData) -> PullAhead | None:
        if a.paused or not self.running or self._buffered + self.pull_batch_size > self.pull_threshold_for_all or \
                a.pq.msg_count + self.pull_batch_size > self.pull_threshold_for_queue:
            return None
        target = self.known_pull_target(mq)
        if target is None:
            return None
        future = self.client.api.pull_soon(target[0], self._pull_header(mq, sd, a.pull_offset),
                                           self.consumer_timeout_when_suspend)
        return None if future is None else PullAhead(a.pull_offset, target[0], future)

    # -- consuming ----------------------------------------------------------------------------------
    async def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """The next fetched batch, or [] after ``timeout`` seconds (default ``poll_timeout``)."""
        if not self.running:
            raise MQClientError("The consumer not running, please start it first.")
        with anyio.move_on_after(self.poll_timeout if timeout is None else timeout):
            while True:
                mq, generation, msgs = await self._recv.receive()
                self._buffered -= len(msgs)
                if self._room:
                    self._room.unpark_all()
                a = self.assigned.get(mq)
                if a is None or a.generation != generation:
                    continue
                a.pq.remove_messages(msgs)
                a.consume_offset = msgs[-1].queue_offset + 1
                if self.auto_commit:
                    assert self.offset_store is not None
                    self.offset_store.update_offset(mq, a.consume_offset, False)
                return msgs
        return []

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Make ``offset`` the next message polled from ``mq``."""
        mq = self._queue(mq)
        a = self.assigned.get(mq)
        if a is None:
            raise MQClientError(f"The message queue is not in assigned list, message queue: {mq}")
        a.generation += 1
        a.pq.clear()
        a.pull_offset = a.consume_offset = offset
        if a.scope is not None:
            a.scope.cancel()
        if self.running:
            await self._start_queue(mq)

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        mq = self._queue(mq)
        await self.seek(mq, await self.client.api.get_min_offset(await self._broker_of(mq), mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        mq = self._queue(mq)
        await self.seek(mq, await self.client.api.get_max_offset(await self._broker_of(mq), mq))

    def pause(self, queues: list[MessageQueue]) -> None:
        for mq in map(self._queue, queues):
            if mq in self.assigned:
                self.assigned[mq].paused = True

    def resume(self, queues: list[MessageQueue]) -> None:
        for mq in map(self._queue, queues):
            if mq in self.assigned:
                self.assigned[mq].paused = False

    async def commit(self) -> None:
        """Commit the offsets after the last polled messages (commitSync)."""
        assert self.offset_store is not None
        for mq, a in self.assigned.items():
            if a.consume_offset >= 0:
                self.offset_store.update_offset(mq, a.consume_offset, False)
        await self.offset_store.persist_all(list(self.assigned))

    #: Java's name (DefaultLitePullConsumer.commitSync)
    commit_sync = commit

    async def committed(self, mq: MessageQueue) -> int:
        assert self.offset_store is not None
        return await self.offset_store.read_offset(self._queue(mq), ReadOffsetType.READ_FROM_STORE)

    async def persist_offsets(self) -> None:
        if self.offset_store is not None:
            await self.offset_store.persist_all(list(self.assigned))

    async def _auto_commit_loop(self) -> None:
        while True:
            await anyio.sleep(self.auto_commit_interval)
            try:
                await self.commit()
            except (RemotingError, MQClientError) as exc:
                log.warning("auto commit failed: %s", exc)

    def now_ms(self) -> int:
        return now_ms()

    def is_broadcast(self) -> bool:
        return str(self.message_model) == MessageModel.BROADCASTING
