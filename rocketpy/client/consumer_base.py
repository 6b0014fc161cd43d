"""What push and lite-pull consumers share: subscriptions, offsets, rebalance bookkeeping."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio

from ..clock import now_ms
from ..codecs.bodies import ConsumerData, MessageQueue, SubscriptionData, build_subscription
from ..codecs.codes import ConsumeFromWhere, ConsumeType, MessageConst, MessageModel, MixAll
from ..codecs.message import MessageExt
from ..remoting import RemotingError
from ..remoting.core import AnswerFuture
from .allocate import AllocateAveragely, AllocateStrategy
from .config import ClientConfig
from .errors import MQClientError
from .hosting import TaskHost
from .instance import ClientInstance, acquire_instance, release_instance
from .namespace import with_namespace, without_namespace
from .offset_store import LocalFileOffsetStore, OffsetStore, ReadOffsetType, RemoteBrokerOffsetStore
from .process_queue import ProcessQueue
from .rebalance import allocate_for, plan
from .route import MASTER_ID

log = logging.getLogger("rocketpy.client")


def half_hour_ago() -> str:
    """DefaultMQPushConsumer's consumeTimestamp default: yyyyMMddHHmmss of 30 minutes ago."""
    return datetime.fromtimestamp(now_ms() / 1000 - 1800).strftime("%Y%m%d%H%M%S")


def reset_retry_topic(msgs: list[MessageExt], group: str, namespace: str | None = None) -> None:
    """A message redelivered through the retry topic shows its original topic to the listener, and with a
    namespace the topic is named without it (resetRetryAndNamespace)."""
    retry = MixAll.get_retry_topic(group)
    key = MessageConst.PROPERTY_RETRY_TOPIC
    for msg in msgs:
        if msg.topic == retry:
            real = msg.properties.get(key)
            if real is not None:
                msg.topic = real
        if namespace:
            msg.topic = without_namespace(msg.topic, namespace)


@dataclass
class PullAhead:
    """A queue's next pull, sent before the answer before it was decoded (its answer awaited later)."""

    offset: int
    addr: str
    future: AnswerFuture


class ConsumerBase:
    consume_type = ConsumeType.CONSUME_PASSIVELY

    def __init__(
        self,
        group: str,
        *,
        namesrv: str | None = None,
        client: ClientInstance | None = None,
        config: ClientConfig | None = None,
        message_model: MessageModel = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp: str | None = None,
        allocate_strategy: AllocateStrategy | None = None,
        offset_store_dir: str | None = None,
    ) -> None:
        if not group:
            raise MQClientError("consumerGroup is null")
        if group == MixAll.DEFAULT_CONSUMER_GROUP:
            raise MQClientError(
                f"consumerGroup can not equal {MixAll.DEFAULT_CONSUMER_GROUP}, please specify another one.")
        self.group = group
        self._own_client = client is None
        if client is None:
            if config is None:
                config = ClientConfig(namesrv_addr=namesrv) if namesrv else ClientConfig()
            # not started: start swaps in the instance shared with equal configs of the trio run
            client = ClientInstance(config)
        self._config = config if config is not None else client.config
        self.client = client
        #: the config's namespace (Java's ClientConfig.namespace): topics and the group get it on the wire
        self.namespace = self._config.namespace
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.consume_timestamp = consume_timestamp or half_hour_ago()
        self.allocate_strategy = allocate_strategy or AllocateAveragely()
        self.offset_store_dir = offset_store_dir
        self.subscriptions: dict[str, SubscriptionData] = {}
        self.topic_queues: dict[str, list[MessageQueue]] = {}
        self.pq_table: dict[MessageQueue, ProcessQueue] = {}
        # PullAPIWrapper.pullFromWhichNodeTable: the broker id each queue's last pull answer suggested
        self.pull_from_which_node: dict[MessageQueue, int] = {}
        self.offset_store: OffsetStore | None = None
        self.running = False
        self.start_time = 0
        self.nursery: Any = None
        self._host: TaskHost | None = None
        self._rebalance_lock = anyio.Lock()

    # -- subscriptions ---------------------------------------------------------------------
    def subscribe(self, topic: str, expression: str | None = "*") -> None:
        """Subscribe by tag expression: '*' for all, or 'TagA || TagB'."""
        topic = with_namespace(self.namespace, topic)
        self.subscriptions[topic] = build_subscription(topic, expression or "*")
        if self.running:
            self.client.spawn("subscribe", self._after_subscribe, topic)

    async def _after_subscribe(self, topic: str) -> None:
        await self.client.update_topic_route(topic)
        await self.client.send_heartbeat_to_all_brokers()
        self.client.rebalance_immediately()

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(with_namespace(self.namespace, topic), None)

    # -- hooks the instance calls ---------------------------------------------------------------
    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group, consume_type=self.consume_type, message_model=self.message_model,
            consume_from_where=self.consume_from_where, subscription_data_set=list(self.subscriptions.values()),
            unit_mode=False)

    def subscribed_topics(self) -> list[str]:
        return list(self.subscriptions)

    def update_subscribe_info(self, topic: str, queues: list[MessageQueue]) -> None:
        if topic in self.subscriptions:
            self.topic_queues[topic] = queues

    def needs_route(self, topic: str) -> bool:
        return topic in self.subscriptions and topic not in self.topic_queues

    async def persist_offsets(self) -> None:
        if self.offset_store is not None:
            await self.offset_store.persist_all(list(self.pq_table))

    def offsets_of(self, topic: str) -> dict[MessageQueue, int]:
        return self.offset_store.clone_table(topic) if self.offset_store else {}

    # -- lifecycle ---------------------------------------------------------------------------------
    def _group_in_namespace(self) -> str:
        """The group in the namespace (the consumers do it at start, as Java's do); the name the user gave."""
        user_group = self.group
        self.group = with_namespace(self.namespace, self.group)
        return user_group

    def _make_offset_store(self) -> OffsetStore:
        if str(self.message_model) == MessageModel.BROADCASTING:
            return LocalFileOffsetStore(self.client.client_id, self.group, self.offset_store_dir)
        return RemoteBrokerOffsetStore(self.client, self.group)

    async def _start_common(self) -> None:
        # made here, on the loop that runs the consumer (the constructor may have run on another: a facade's)
        self._rebalance_lock = anyio.Lock()
        if self._own_client:
            self.client = await acquire_instance(self._config, "consumer", self.group, self.client)
        try:
            self.offset_store = self._make_offset_store()
            await self.offset_store.load()
            self.client.register_consumer(self.group, self)
        except BaseException:
            if self._own_client:
                await release_instance(self.client, "consumer", self.group)
            raise
        # hosted, not entered here: start() and shutdown() may run in different cancel scopes
        self._host = TaskHost(f"rocketpy consumer {self.group}")
        self.nursery = await self._host.open()
        self.running = True
        self.start_time = now_ms()
        for topic in list(self.subscriptions):
            await self.client.update_topic_route(topic)

    async def _stop_common(self) -> None:
        with anyio.CancelScope(shield=True) as scope:
            scope.deadline = anyio.current_time() + 5
            # a rebalance under way ends first (the next one sees the consumer stopped): asked after the
            # unregister, the broker answers its consumer list "no consumer for this group", two warnings
            with anyio.move_on_after(3):
                async with self._rebalance_lock:
                    pass
            try:
                await self.persist_offsets()
            except Exception as exc:
                log.warning("persist offsets at shutdown failed: %s", exc)
            await self.client.unregister_consumer(self.group)
        if self._host is not None:
            await self._host.aclose()
            self._host = None
        if self._own_client:
            await release_instance(self.client, "consumer", self.group)

    # -- rebalance ---------------------------------------------------------------------------------
    async def do_rebalance(self) -> None:
        if not self.running:
            return
        async with self._rebalance_lock:
            if not self.running:  # stopped while it waited for the one before
                return
            changed = False
            for topic in list(self.subscriptions):
                queues = self.topic_queues.get(topic)
                if queues is None:
                    # a topic made since the last route refresh (the retry topic, typically): look now
                    await self.client.update_topic_route(topic)
                    queues = self.topic_queues.get(topic)
                if queues is None:
                    if not topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX):
                        log.warning("doRebalance, %s, but the topic[%s] not exist.", self.group, topic)
                    continue
                if str(self.message_model) == MessageModel.BROADCASTING:
                    cids = [self.client.client_id]
                else:
                    cids = await self.client.find_consumer_ids(topic, self.group)
                    if not cids:
                        log.warning("doRebalance, %s %s, get consumer id list failed", self.group, topic)
                        continue
                allocated = allocate_for(self.allocate_strategy, self.message_model, self.group,
                                         self.client.client_id, queues, cids)
                owned = [mq for mq in self.pq_table if mq.topic == topic]
                p = plan(topic, owned, allocated)
                if p.changed:
                    changed = await self._apply(p) or changed
            # queues of topics no longer subscribed
            for mq in [mq for mq in self.pq_table if mq.topic not in self.subscriptions]:
                pq = self.pq_table.pop(mq)
                pq.dropped = True
                await self._on_queue_removed(mq, pq)
                changed = True
        if changed:
            await self.client.send_heartbeat_to_all_brokers()

    async def _apply(self, p: Any) -> bool:
        changed = False
        added: list[tuple[MessageQueue, ProcessQueue, int]] = []
        for mq in p.to_remove:
            pq = self.pq_table[mq]
            pq.dropped = True
            if await self._remove_unnecessary(mq, pq):
                del self.pq_table[mq]
                changed = True
        for mq in p.to_add:
            if not await self._before_add(mq):
                continue
            assert self.offset_store is not None
            self.offset_store.remove_offset(mq)
            try:
                next_offset = await self.compute_pull_from_where(mq)
            except (MQClientError, RemotingError) as exc:
                log.warning("computePullFromWhere %s failed: %s", mq, exc)
                continue
            if next_offset < 0:
                log.warning("doRebalance, %s, add new mq failed, %s", self.group, mq)
                continue
            if not self.running:  # shut down meanwhile: its nursery takes no pull loops
                break
            pq = ProcessQueue()
            self.pq_table[mq] = pq
            added.append((mq, pq, next_offset))
            changed = True
        # the new queues' first pulls go together, once every offset is known (dispatchPullRequest of the list):
        # the first queue is not pulled ahead of the others while their offsets are looked up
        for mq, pq, next_offset in added:
            if self.running and self.pq_table.get(mq) is pq and not pq.dropped:
                await self._on_queue_added(mq, pq, next_offset)
        return changed

    async def _before_add(self, mq: MessageQueue) -> bool:
        return True

    async def _remove_unnecessary(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        await self._on_queue_removed(mq, pq)
        assert self.offset_store is not None
        await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        return True

    async def _on_queue_added(self, mq: MessageQueue, pq: ProcessQueue, next_offset: int) -> None:
        raise NotImplementedError

    async def _on_queue_removed(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        raise NotImplementedError

    async def _broker_of(self, mq: MessageQueue) -> str:
        addr = self.client.find_broker(mq.broker_name or "")
        if addr is None:
            await self.client.update_topic_route(mq.topic or "")
            addr = self.client.find_broker(mq.broker_name or "")
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return addr

    async def pull_target(self, mq: MessageQueue) -> tuple[str, bool]:
        """PullAPIWrapper.pullKernelImpl's broker: the suggested member (the master by default),
        a slave's next id, else any member of the broker name; (address, is slave)."""
        found = self.known_pull_target(mq)
        if found is None:
            await self.client.update_topic_route(mq.topic or "")
            found = self.known_pull_target(mq)
        if found is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return found

    def known_pull_target(self, mq: MessageQueue) -> tuple[str, bool] | None:
        """:meth:`pull_target` from the routes known now, or None (no route update)."""
        return self.client.find_broker_address_in_subscribe(
            mq.broker_name or "", self.pull_from_which_node.get(mq, MASTER_ID), False)

    def update_pull_from_which_node(self, mq: MessageQueue, broker_id: int) -> None:
        self.pull_from_which_node[mq] = broker_id

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """RebalancePushImpl.computePullFromWhereWithException."""
        assert self.offset_store is not None
        last = await self.offset_store.read_offset(mq, ReadOffsetType.READ_FROM_STORE)
        where = self.consume_from_where
        is_retry = (mq.topic or "").startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX)
        if last >= 0:
            return last
        if last != -1:
            return -1
        if where == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if where == ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
            if is_retry:
                return await self.client.api.get_max_offset(await self._broker_of(mq), mq)
            ts = int(datetime.strptime(self.consume_timestamp, "%Y%m%d%H%M%S").timestamp() * 1000)
            return await self.client.api.search_offset(await self._broker_of(mq), mq, ts)
        # CONSUME_FROM_LAST_OFFSET and its deprecated variants
        if is_retry:
            return 0
        return await self.client.api.get_max_offset(await self._broker_of(mq), mq)
