"""The client instance (Java's MQClientInstance): routes, heartbeats, broker connections.

One instance serves any number of producers and consumers that share a client id.
Its background work (route refresh, heartbeats, rebalance, offset persistence) runs
in a nursery the instance owns; leaving ``async with`` stops all of it and tells
the brokers this client is gone.

Producers and consumers given no ``client=`` share instances through a registry kept
per event loop run (MQClientManager): :func:`acquire_instance` hands out the instance for a
config, hosted in a task of its own that owns its nursery (trio's system task, a free-standing
asyncio task), so it does not depend on the scope of whoever opened it first;
:func:`release_instance` counts users down and the last one stops the instance and waits for
its tasks to end.

The instance runs on trio or on asyncio, whichever runs it (see :mod:`.loop`): its locks, events and
scopes are anyio's, and its connections the loop's own driver (remoting.client under trio,
remoting.aio under asyncio), so an asyncio program uses it with no thread and no trio loop.
"""

from __future__ import annotations

import functools
import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from anyio.lowlevel import RunVar

from ..codecs import RemotingCommand, ResponseCode
from ..codecs.bodies import ConsumerData, HeartbeatData, MessageQueue, ProducerData, TopicRouteData
from ..codecs.codes import MixAll
from ..remoting import Dispatcher, RemotingClient, RemotingError
from ..remoting.aio import AsyncioRemotingClient
from .api import ClientAPI
from .config import DEFAULT_INSTANCE_NAME, ClientConfig
from .errors import MQClientError
from .hosting import TaskHost, failure_text
from .loop import clock, is_trio, spawn_detached
from .route import MASTER_ID, TopicPublishInfo, broker_addrs, publish_info, route_equal, subscribe_queues

if TYPE_CHECKING:
    from .producer import Producer

log = logging.getLogger("rocketpy.client")


class ConsumerHandle(Protocol):
    """What the instance needs from a consumer (push or lite pull)."""

    group: str

    def consumer_data(self) -> ConsumerData: ...
    def subscribed_topics(self) -> list[str]: ...
    def update_subscribe_info(self, topic: str, queues: list[MessageQueue]) -> None: ...
    async def do_rebalance(self) -> None: ...
    async def persist_offsets(self) -> None: ...


class ClientInstance:
    """Shared state and background tasks of producers and consumers with one client id."""

    def __init__(self, config: ClientConfig | None = None, **settings: Any) -> None:
        self.config = (config or ClientConfig(**settings)).resolved()
        self.client_id = self.config.client_id()
        self.producers: dict[str, Producer] = {}
        self.consumers: dict[str, ConsumerHandle] = {}
        self.routes: dict[str, TopicRouteData] = {}
        self.broker_addr_table: dict[str, dict[int, str]] = {}
        self.broker_versions: dict[str, int] = {}
        #: correlation id -> callback for request-reply answers pushed by brokers
        self.reply_waiters: dict[str, Callable[[Any], None]] = {}
        self._route_lock = anyio.Lock()
        self._heartbeat_lock = anyio.Lock()
        self._rebalance_wakeup = anyio.Event()
        self._ns_index = random.randrange(1 << 16)
        self._host: TaskHost | None = None
        #: the background tasks' nursery (an anyio task group under asyncio)
        self.nursery: Any = None
        self.remoting: RemotingClient | AsyncioRemotingClient | None = None
        #: the running loop's clock (see loop.clock), set by start()
        self.clock: Callable[[], float] = anyio.current_time
        self._api: ClientAPI | None = None
        self.running = False
        #: set while (and after) the per-run registry hosts this instance
        self.hosted: _Hosted | None = None

    # -- lifecycle -----------------------------------------------------------------------
    async def __aenter__(self) -> ClientInstance:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        if self.running:
            return
        # hosted, not entered here: start() and aclose() may run in different cancel scopes
        self._host = TaskHost(f"rocketpy client tasks {self.client_id}")
        self.nursery = await self._host.open()
        self.clock = clock()
        # the locks and events were made where the instance was (maybe outside any loop): made anew for this run
        self._route_lock, self._heartbeat_lock, self._rebalance_wakeup = anyio.Lock(), anyio.Lock(), anyio.Event()
        ssl_context = await anyio.to_thread.run_sync(self.config.ssl_context) if self.config.use_tls else None
        settings: dict[str, Any] = dict(dispatcher=self._build_dispatcher(), state=self,
                                        connect_timeout=self.config.mq_client_api_timeout, ssl_context=ssl_context,
                                        rpc_hook=self.config.rpc_hook())
        self.remoting = (RemotingClient(self.nursery, **settings) if is_trio()
                         else AsyncioRemotingClient(**settings))
        self._api = ClientAPI(self.remoting, self.config.mq_client_api_timeout)
        self.running = True
        self.nursery.start_soon(self._route_loop)
        self.nursery.start_soon(self._heartbeat_loop)
        self.nursery.start_soon(self._persist_loop)
        self.nursery.start_soon(self._rebalance_loop)

    async def aclose(self) -> None:
        if not self.running:
            return
        self.running = False
        assert self._host is not None and self.nursery is not None and self.remoting is not None
        with anyio.CancelScope(shield=True) as scope:
            scope.deadline = anyio.current_time() + self.config.mq_client_api_timeout
            await self._unregister(MixAll.CLIENT_INNER_PRODUCER_GROUP, None)
        # stop the background loops before their connections go, so none fails half way
        self.nursery.cancel_scope.cancel()
        with anyio.CancelScope(shield=True):
            await self.remoting.aclose()
        await self._host.aclose()

    @property
    def api(self) -> ClientAPI:
        if self._api is None:
            raise MQClientError("the client instance is not started")
        return self._api

    # -- registration ----------------------------------------------------------------------
    def register_producer(self, group: str, producer: Producer) -> None:
        if group in self.producers:
            raise MQClientError(f"The producer group[{group}] has been created before, specify another name please.")
        self.producers[group] = producer

    async def unregister_producer(self, group: str) -> None:
        if self.producers.pop(group, None) is not None:
            await self._unregister(group, None)

    def register_consumer(self, group: str, consumer: ConsumerHandle) -> None:
        if group in self.consumers:
            raise MQClientError(f"The consumer group[{group}] has been created before, specify another name please.")
        self.consumers[group] = consumer

    async def unregister_consumer(self, group: str) -> None:
        if self.consumers.pop(group, None) is not None:
            await self._unregister(None, group)

    async def _unregister(self, producer_group: str | None, consumer_group: str | None) -> None:
        for addrs in list(self.broker_addr_table.values()):
            for addr in addrs.values():
                try:
                    await self.api.unregister_client(addr, self.client_id, producer_group, consumer_group)
                except (RemotingError, MQClientError) as exc:
                    log.warning("unregister client from %s failed: %s", addr, exc)

    async def inner_producer(self, producer_class: Callable[..., Producer]) -> Producer:
        """The instance's own producer (CLIENT_INNER_PRODUCER), used to re-send messages for retry; made
        with ``producer_class`` the first time (the consumer passes its Producer: no import cycle here)."""
        producer = self.producers.get(MixAll.CLIENT_INNER_PRODUCER_GROUP)
        if producer is None:
            producer = producer_class(MixAll.CLIENT_INNER_PRODUCER_GROUP, client=self)
            producer.namespace = None  # as Java's: it sends to retry topics already named in the namespace
            await producer.start()
        return producer

    # -- name servers and routes ------------------------------------------------------------
    async def namesrv_invoke(self, call: Callable[[str], Any]) -> Any:
        """Run ``call(addr)`` on the current name server, moving to the next on transport errors."""
        servers = self.config.namesrv_list
        if not servers:
            raise MQClientError("No name server address, please set it.")
        last: Exception | None = None
        for i in range(len(servers)):
            addr = servers[(self._ns_index + i) % len(servers)]
            try:
                result = await call(addr)
            except RemotingError as exc:
                last = exc
                log.info("name server %s failed: %s", addr, exc)
                continue
            self._ns_index = (self._ns_index + i) % len(servers)
            return result
        raise MQClientError(f"no name server answered: {last}")

    async def fetch_route(self, topic: str) -> TopicRouteData | None:
        return await self.namesrv_invoke(lambda addr: self.api.get_topic_route(addr, topic))

    async def update_topic_route(self, topic: str, default_topic: str | None = None,
                                 default_queue_nums: int = 4) -> bool:
        """Refresh ``topic`` from the name server; with ``default_topic``, borrow that route (auto-creation)."""
        async with self._route_lock:
            try:
                if default_topic is not None:
                    route = await self.fetch_route(default_topic)
                    if route is not None:
                        for qd in route.queue_datas or []:
                            nums = min(default_queue_nums, qd.read_queue_nums)
                            qd.read_queue_nums = qd.write_queue_nums = nums
                else:
                    route = await self.fetch_route(topic)
            except MQClientError as exc:
                if self.running:
                    log.warning("updateTopicRouteInfoFromNameServer for %s failed: %s", topic, exc)
                return False
            if route is None:
                return False
            old = self.routes.get(topic)
            changed = not route_equal(old, route) or self._needs_update(topic)
            if not changed:
                return False
            new_addrs = broker_addrs(route)
            known = {a for addrs in self.broker_addr_table.values() for a in addrs.values()}
            self.broker_addr_table.update(new_addrs)
            if self.nursery is not None and any(a not in known for addrs in new_addrs.values() for a in addrs.values()):
                # tell a newly seen broker about us now rather than at the next 30 s heartbeat, so its
                # transaction checks and connection lists find this client
                self.nursery.start_soon(self._guard, "heartbeat", self.send_heartbeat_to_all_brokers)
            self.routes[topic] = route
            info = publish_info(topic, route)
            info.have_route = True
            for producer in self.producers.values():
                producer.update_publish_info(topic, info)
            queues = subscribe_queues(topic, route)
            for consumer in self.consumers.values():
                consumer.update_subscribe_info(topic, queues)
            log.info("topic route of %s changed: %s", topic, route)
            return True

    def _needs_update(self, topic: str) -> bool:
        return any(p.needs_route(topic) for p in self.producers.values()) or any(
            topic in c.subscribed_topics() and getattr(c, "needs_route", lambda t: False)(topic)
            for c in self.consumers.values())

    def topics_in_use(self) -> set[str]:
        topics: set[str] = set()
        for p in self.producers.values():
            topics.update(p.publish_topics())
        for c in self.consumers.values():
            topics.update(c.subscribed_topics())
        return topics

    async def update_all_routes(self) -> None:
        for topic in sorted(self.topics_in_use()):
            await self.update_topic_route(topic)

    # -- broker addresses ---------------------------------------------------------------------
    def master_addr(self, broker_name: str) -> str | None:
        return self.broker_addr_table.get(broker_name, {}).get(MASTER_ID)

    def find_broker(self, broker_name: str, broker_id: int = MASTER_ID, only_this: bool = False) -> str | None:
        """FindBrokerResult: the wanted broker id, else any member unless ``only_this``."""
        addrs = self.broker_addr_table.get(broker_name) or {}
        addr = addrs.get(broker_id)
        if addr is None and not only_this and addrs:
            addr = next(iter(addrs.values()))
        return addr

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this: bool
    ) -> tuple[str, bool] | None:
        """MQClientInstance.findBrokerAddressInSubscribe: (address, is slave). A wanted slave
        that is missing falls back to the next id; unless ``only_this``, then to the first member
        (Java's HashMap order of the ids: the smallest)."""
        addrs = self.broker_addr_table.get(broker_name) or {}
        if not addrs:
            return None
        addr = addrs.get(broker_id)
        slave = broker_id != MASTER_ID
        if addr is None and slave:
            addr = addrs.get(broker_id + 1)
        if addr is None and not only_this:
            first = min(addrs)
            addr, slave = addrs[first], first != MASTER_ID
        if addr is None:
            return None
        return addr, slave

    def any_broker_of_topic(self, topic: str) -> str | None:
        """A broker that serves ``topic`` (Java picks one at random for consumer id queries)."""
        route = self.routes.get(topic)
        if route is None or not route.broker_datas:
            return None
        bd = random.choice(route.broker_datas)
        addrs = bd.broker_addrs or {}
        return addrs.get(MASTER_ID) or next(iter(addrs.values()), None)

    async def find_consumer_ids(self, topic: str, group: str) -> list[str]:
        addr = self.any_broker_of_topic(topic)
        if addr is None:
            await self.update_topic_route(topic)
            addr = self.any_broker_of_topic(topic)
        if addr is None:
            return []
        try:
            return await self.api.get_consumer_ids(addr, group)
        except (RemotingError, MQClientError) as exc:
            log.warning("getConsumerIdListByGroup from %s failed: %s", addr, exc)
            return []

    # -- heartbeats ------------------------------------------------------------------------------
    def heartbeat_data(self) -> HeartbeatData:
        producers = [ProducerData(group_name=MixAll.CLIENT_INNER_PRODUCER_GROUP)]
        producers += [ProducerData(group_name=g) for g in self.producers if g != MixAll.CLIENT_INNER_PRODUCER_GROUP]
        return HeartbeatData(client_id=self.client_id, producer_data_set=producers,
                             consumer_data_set=[c.consumer_data() for c in self.consumers.values()])

    async def send_heartbeat_to_all_brokers(self) -> None:
        async with self._heartbeat_lock:
            data = self.heartbeat_data()
            only_masters = not data.consumer_data_set
            for name, addrs in list(self.broker_addr_table.items()):
                for broker_id, addr in list(addrs.items()):
                    if only_masters and broker_id != MASTER_ID:
                        continue
                    try:
                        self.broker_versions[addr] = await self.api.heartbeat(addr, data, self.config.language)
                    except (RemotingError, MQClientError) as exc:
                        log.info("send heart beat to broker[%s %d %s] failed: %s", name, broker_id, addr, exc)

    # -- background loops -------------------------------------------------------------------------
    def rebalance_immediately(self) -> None:
        self._rebalance_wakeup.set()

    def spawn(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` in the instance's nursery; its errors are logged, since they must not
        stop an instance that other producers and consumers share."""
        if self.nursery is None:
            raise MQClientError("the client instance is not started")
        self.nursery.start_soon(self._guard, what, functools.partial(fn, *args))

    async def _guard(self, what: str, fn: Callable[[], Any]) -> None:
        try:
            await fn()
        except (RemotingError, MQClientError, OSError) as exc:
            log.warning("%s failed: %s", what, exc)
        except Exception:
            log.exception("%s failed", what)

    async def _route_loop(self) -> None:
        await anyio.sleep(0.01)
        while True:
            await self._guard("route refresh", self.update_all_routes)
            await anyio.sleep(self.config.poll_name_server_interval)

    async def _heartbeat_loop(self) -> None:
        await anyio.sleep(1.0)
        while True:
            await self._guard("heartbeat", self.send_heartbeat_to_all_brokers)
            await anyio.sleep(self.config.heartbeat_broker_interval)

    async def _persist_loop(self) -> None:
        while True:
            await anyio.sleep(self.config.persist_consumer_offset_interval)
            for consumer in list(self.consumers.values()):
                await self._guard("persist offsets", consumer.persist_offsets)

    async def _rebalance_loop(self) -> None:
        while True:
            with anyio.move_on_after(self.config.rebalance_interval):
                await self._rebalance_wakeup.wait()
            self._rebalance_wakeup = anyio.Event()
            await self.do_rebalance()

    async def do_rebalance(self) -> None:
        for consumer in list(self.consumers.values()):
            await self._guard("rebalance", consumer.do_rebalance)

    # -- requests from brokers -------------------------------------------------------------------------
    def _build_dispatcher(self) -> Dispatcher:
        from . import processor

        return processor.build_dispatcher(self)


# -- one instance per loop run and config (MQClientManager) --------------------------------------------
_INSTANCES: RunVar[dict[tuple[object, ...], list[_Hosted]]] = RunVar("rocketpy_client_instances")


def _registry() -> dict[tuple[object, ...], list[_Hosted]]:
    try:
        return _INSTANCES.get()
    except LookupError:
        table: dict[tuple[object, ...], list[_Hosted]] = {}
        _INSTANCES.set(table)
        return table


class _Hosted:
    """A shared instance, its users and the system task that keeps it running."""

    def __init__(self, key: tuple[object, ...], instance: ClientInstance) -> None:
        self.key = key
        self.instance = instance
        self.users = 0
        #: (kind, group) of every user, so a default-named instance never takes a group twice
        self.groups: set[tuple[str, str]] = set()
        self.ready = anyio.Event()
        self.stop = anyio.Event()
        self.done = anyio.Event()
        #: why the instance failed, as text: the exception would keep the frames of its failed tasks
        self.error: str | None = None

    async def run(self) -> None:
        try:
            async with self.instance:
                self.ready.set()
                await self.stop.wait()
        except Exception as exc:  # an error escaping a system task would end the whole trio run
            self.error = failure_text(exc)
            log.exception("client instance %s failed", self.instance.client_id)
        finally:
            self.forget()
            self.ready.set()
            self.done.set()

    def forget(self) -> None:
        self.stop.set()
        table = _registry()
        entries = table.get(self.key, [])
        if self in entries:
            entries.remove(self)
        if not entries:
            table.pop(self.key, None)


async def acquire_instance(config: ClientConfig, kind: str, group: str,
                           candidate: ClientInstance | None = None) -> ClientInstance:
    """The started instance shared by ``config``'s equals in this loop run, opened if none is.

    ``candidate`` (an instance never started) becomes the shared one when a new one is needed.
    """
    key = config.sharing_key()
    table = _registry()
    hosted = None
    for entry in table.get(key, []):
        if entry.stop.is_set():
            continue
        if config.instance_name == DEFAULT_INSTANCE_NAME and (kind, group) in entry.groups:
            continue  # Java gives each default-named client its own pid#nanotime id: same here for a group
        hosted = entry
        break
    if hosted is None:
        if candidate is None or candidate.hosted is not None or candidate.running:
            candidate = ClientInstance(config)
        hosted = _Hosted(key, candidate)
        candidate.hosted = hosted
        table.setdefault(key, []).append(hosted)
        spawn_detached(hosted.run, f"rocketpy client instance {candidate.client_id}")
    hosted.users += 1
    hosted.groups.add((kind, group))
    try:
        await hosted.ready.wait()
        if hosted.error is not None or not hosted.instance.running:
            raise MQClientError(f"client instance {hosted.instance.client_id} failed: {hosted.error}")
    except BaseException:
        await release_instance(hosted.instance, kind, group)
        raise
    return hosted.instance


async def release_instance(instance: ClientInstance, kind: str, group: str) -> None:
    """One user of a shared instance left; the last one stops it and waits until its tasks are gone."""
    hosted = instance.hosted
    if hosted is None:
        return
    hosted.groups.discard((kind, group))
    hosted.users -= 1
    if hosted.users > 0:
        return
    hosted.forget()
    with anyio.CancelScope(shield=True):
        await hosted.done.wait()


def ok(request: RemotingCommand, body: bytes | None = None) -> RemotingCommand:
    return request.response(ResponseCode.SUCCESS, body=body)


__all__ = ["ClientInstance", "acquire_instance", "release_instance", "ConsumerHandle", "TopicPublishInfo", "ok"]
