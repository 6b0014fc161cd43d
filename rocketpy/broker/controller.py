"""BrokerController: the broker's state, its servers and every background task.

:meth:`BrokerController.run` owns one nursery: the remoting servers (listenPort and
the VIP port listenPort-2), the store services (flush, group commit, retention),
NameServer registration every registerNameServerPeriod, offset persistence every
flushConsumerOffsetInterval, the long-poll hold service, delay delivery, the
transaction back-check and the client liveness scan. Cancelling the nursery stops
them all; ``finally`` then persists the config files, unregisters and closes the store.
"""

from __future__ import annotations

import logging
import math
import random
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from .. import heap
from ..clock import now_ms as _now_ms
from ..codecs import RemotingCommand
from ..codecs.codes import MessageConst, MixAll, RequestCode
from ..codecs.headers import NotifyConsumerIdsChangedRequestHeader
from ..codecs.message import tags_hash_code
from ..dledger.store import DLedgerMessageStore
from ..remoting import Dispatcher, RemotingClient, RemotingServer
from ..remoting.connection import Connection
from ..remoting.tls import TlsConfig, TlsMode, broker_client_context, server_settings
from ..store import MessageStore, PutMessageResult, PutMessageStatus
from ..store.config import BrokerRole
from ..store.services import FlushedAnswer, StoreServices
from ..store.types import MessageExtBatch, MessageExtBrokerInner
from .acl import PlainAccessValidator
from .clients import ConsumerManager, ProducerManager
from .config import BrokerConfig
from .configuration import BrokerConfiguration
from .dledger import BrokerDLedger
from .filter import ConsumerFilterManager
from .groups import ConsumerOffsetManager, SubscriptionGroupManager
from .ha import BrokerHA
from .locks import RebalanceLockManager
from .longpoll import PullRequestHoldService
from .outer import BrokerOuterAPI
from .persist import ConfigWriter
from .schedule import ScheduleMessageService
from .stats import BrokerStatsManager
from .store_stats import StoreStats
from .topics import TopicConfigManager
from .transaction import TransactionalMessageService

log = logging.getLogger("rocketpy.broker")


class BrokerController:
    def __init__(self, config: BrokerConfig, config_path: str | None = None) -> None:
        """``config_path``: the file the broker was started with (mqbroker -c), which
        UPDATE_BROKER_CONFIG rewrites; see :mod:`.configuration` for the default."""
        self.config = config
        self.configuration = BrokerConfiguration(config, config_path)
        cfg = config
        # store timestamps come from rocketpy.clock like every other broker time (a test may set it)
        store_class = DLedgerMessageStore if cfg.store.enable_d_leger_commit_log else MessageStore
        self.store = store_class(cfg.store, clock=_now_ms)
        cdir = cfg.config_dir
        self.topics = TopicConfigManager(
            cdir,
            cluster_name=cfg.broker_cluster_name,
            broker_name=cfg.broker_name,
            default_queue_nums=cfg.default_topic_queue_nums,
            auto_create=cfg.auto_create_topic_enable,
            cluster_topic_enable=cfg.cluster_topic_enable,
            broker_topic_enable=cfg.broker_topic_enable,
            trace_topic=cfg.msg_trace_topic_name if cfg.trace_topic_enable else None,
        )
        self.topics.on_created = lambda _tc: self.register_soon(oneway=True)
        self.groups = SubscriptionGroupManager(cdir, auto_create=cfg.auto_create_subscription_group)
        self.offsets = ConsumerOffsetManager(cdir)
        self.consumers = ConsumerManager(on_change=self._consumer_ids_changed)
        self.producers = ProducerManager()
        self.locks = RebalanceLockManager()
        self.hold = PullRequestHoldService(self)
        self.schedule = ScheduleMessageService(self)
        self.config_writer = ConfigWriter([self.topics, self.groups, self.offsets, self.schedule])
        self.topics.on_dirty = self.config_writer.wake
        self.groups.on_dirty = self.config_writer.wake
        self.transactions = TransactionalMessageService(self)
        self.outer = BrokerOuterAPI(self)
        self.ha = BrokerHA(self)  # master: HA service; slave: HA client and SlaveSynchronize
        #: DLedger mode: the group member, its sends and its role changes (None otherwise)
        self.dledger: BrokerDLedger | None = BrokerDLedger(self) if cfg.store.enable_d_leger_commit_log else None
        #: the tasks one role runs and the other does not (DLedger role changes start and stop them)
        self._role_scopes: dict[str, trio.CancelScope] = {}
        # SQL92 filtering: the groups' compiled selectors follow their heartbeats
        self.filters = ConsumerFilterManager()
        self.filter_support_retry = cfg.props.get("filterSupportRetry", "false").strip().lower() == "true"
        self.consumers.on_register = self.filters.register_group
        self.consumers.on_unregister = self.filters.unregister
        self.stats_manager = BrokerStatsManager()
        self.dispatcher = self._build_dispatcher()
        # ACL: one check in front of every request (Java's server RPC hook)
        self.acl: PlainAccessValidator | None = None
        if cfg.acl_enable:
            self.acl = PlainAccessValidator.for_broker(cfg.props, self.store)
            self.dispatcher.add_before_hook(self.acl)
        self.store_services: StoreServices | None = None
        self.nursery: trio.Nursery | None = None
        self.client: RemotingClient | None = None
        #: TLS settings of the listeners, and of the connections to the NameServers (None: plain)
        self.tls = TlsConfig()
        self.client_ssl: ssl.SSLContext | None = None
        self.servers: list[RemotingServer] = []
        self.started = trio.Event()
        self.stats: dict[str, int] = {"put": 0, "get": 0, "get_found": 0, "get_miss": 0}
        self.store_stats = StoreStats(_now_ms())
        self.boot_ms = 0

    # -- identity ----------------------------------------------------------------------
    @property
    def store_host(self) -> str:
        return f"{self.config.broker_ip1}:{self.config.listen_port}"

    @property
    def broker_addr(self) -> str:
        return self.store_host

    @property
    def address(self) -> str:
        """Where clients reach us (the first listener's bound address)."""
        srv = self.servers[0]
        return f"{self.config.broker_ip1}:{srv.port}"

    # -- dispatch ----------------------------------------------------------------------
    def _build_dispatcher(self) -> Dispatcher:
        from .processors import register_all

        d = Dispatcher()
        register_all(self, d)
        return d

    # -- helpers used by processors -------------------------------------------------------
    def spawn(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run ``fn`` in the broker's nursery (background sends); dropped when stopping."""
        if self.nursery is None:
            return
        try:
            self.nursery.start_soon(fn, *args)
        except RuntimeError:  # nursery closing
            pass

    def put_now(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Append (and dispatch) now, wake long-polls on the queue; no flush wait."""
        began = time.perf_counter()
        result = self.store.put_message(msg)
        latency = self.store_stats.latency
        latency.put(int((time.perf_counter() - began) * 1000))
        if not result.is_ok:
            latency.failed += 1
        else:
            self.stats["put"] += 1
            self.ha.on_put()
            if self.hold.table and self.dledger is None:  # DLedger: once committed (BrokerDLedger)
                self.hold.notify_arrival(msg.topic, msg.queue_id, tags_hash_code(msg.tags) if msg.tags else 0)
        return result

    def put_batch_now(self, batch: MessageExtBatch) -> PutMessageResult:
        began = time.perf_counter()
        result = self.store.put_messages(batch)
        latency = self.store_stats.latency
        latency.put(int((time.perf_counter() - began) * 1000))  # one putMessages call, as Java counts it
        if not result.is_ok:
            latency.failed += 1
        else:
            self.stats["put"] += result.append.msg_num if result.append else 1
            self.ha.on_put()
            if self.hold.table and self.dledger is None:
                self.hold.notify_arrival(batch.topic, batch.queue_id)
        return result

    def answers_after_store(self) -> bool:
        """Whether a send that waits (WAIT not false) is answered only once stored durably: on disk
        (SYNC_FLUSH) or on a slave (SYNC_MASTER)."""
        services = self.store_services
        return (services is not None and services.group_commit is not None) or self.ha.is_sync_master

    def answer_when_stored(self, answer: FlushedAnswer) -> None:
        """Deliver ``answer`` once the CommitLog up to its offset is on disk (SYNC_FLUSH's group commit)."""
        services = self.store_services
        assert services is not None and services.group_commit is not None
        services.group_commit.answer_when_flushed(answer)

    def must_wait_flush(self, result: PutMessageResult, wait: bool) -> bool:
        """The producer asked to wait (WAIT not false) and the answer must wait: SYNC_FLUSH
        until on disk, SYNC_MASTER until a slave has it (CommitLog's flush and replica requests)."""
        if self.dledger is not None:
            # DLedgerCommitLog answers when the entry is committed, whatever WAIT says
            return result.is_ok and result.dledger_entry is not None
        if not (result.is_ok and wait):
            return False
        services = self.store_services
        return (services is not None and services.group_commit is not None) or self.ha.must_wait_replica(result, wait)

    async def wait_flush(self, result: PutMessageResult) -> PutMessageResult:
        """Both waits run together; a replica failure wins over a flush failure, as in Java's thenCombine.
        DLedger mode: the wait for the quorum instead."""
        if self.dledger is not None:
            return await self.dledger.wait_committed(result)
        services = self.store_services
        group_commit = services.group_commit if services is not None else None
        statuses: dict[str, PutMessageStatus] = {}

        async def flush() -> None:
            assert group_commit is not None
            statuses["flush"] = await group_commit.wait_flushed(result.flush_offset)

        async def replica() -> None:
            statuses["replica"] = await self.ha.wait_replica(result)

        if group_commit is not None and self.ha.must_wait_replica(result, True):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(flush)
                nursery.start_soon(replica)
        elif group_commit is not None:
            await flush()
        else:
            await replica()
        for key in ("flush", "replica"):
            status = statuses.get(key, PutMessageStatus.PUT_OK)
            if status is not PutMessageStatus.PUT_OK:
                result.status = status
        return result

    async def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Append, wake long-polls, and for SYNC_FLUSH wait for the disk."""
        result = self.put_now(msg)
        if self.must_wait_flush(result, msg.wait_store_msg_ok):
            await self.wait_flush(result)
        return result

    async def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        result = self.put_batch_now(batch)
        if self.must_wait_flush(result, batch.wait_store_msg_ok):
            await self.wait_flush(result)
        return result

    def queue_id_random(self, nums: int) -> int:
        return random.randrange(99999999) % max(nums, 1)

    # -- notifications ---------------------------------------------------------------------
    def _consumer_ids_changed(self, group: str, channels: list[Any]) -> None:
        if not self.config.notify_consumer_ids_changed_enable:
            return
        for ch in channels:
            self.spawn(self._notify_ids_changed, ch, group)

    async def _notify_ids_changed(self, conn: Connection, group: str) -> None:
        req = RemotingCommand.request(
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, NotifyConsumerIdsChangedRequestHeader(consumer_group=group)
        )
        try:
            await conn.invoke_oneway(req)
        except Exception as exc:
            log.info("notifyConsumerIdsChanged to %s failed: %s", conn.remote_addr, exc)

    def register_soon(self, oneway: bool = False) -> None:
        """registerBrokerAll after a topic change (oneway, like Java's auto-create path)."""
        self.spawn(self.outer.register_all, oneway)

    # -- connection events --------------------------------------------------------------
    def on_connection_closed(self, conn: Connection) -> None:
        self.consumers.channel_closed(conn)
        self.producers.channel_closed(conn)
        self.hold.drop_channel(conn)

    # -- lifecycle --------------------------------------------------------------------------
    def load(self) -> None:
        self.topics.load()
        self.groups.load()
        self.offsets.load()
        self.schedule.load()
        report = self.store.open()
        log.info("store opened: %s", report)

    async def persist_all(self) -> None:
        """Write every config file (from a worker thread)."""
        await self.config_writer.flush_all()

    async def run(
        self,
        host: str | None = None,
        *,
        vip: bool | None = None,
        task_status: trio.TaskStatus[BrokerController] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Load, serve until cancelled, then shut down cleanly."""
        cfg = self.config
        host = cfg.listen_host if host is None else host
        vip = cfg.vip_channel_enable if vip is None else vip
        heap.tune()  # before the worker threads start: their arenas are capped
        self.load()
        self.boot_ms = _now_ms()
        self.configuration.data_version.timestamp = self.boot_ms  # the version GET_BROKER_CONFIG starts at
        self.store_stats = StoreStats(self.boot_ms, self.store.max_phy_offset)
        self._unregistered = False
        try:
            async with trio.open_nursery() as nursery:
                self.nursery = nursery
                self.tls, cap = await trio.to_thread.run_sync(server_settings, dict(cfg.props))
                self.client_ssl = await trio.to_thread.run_sync(broker_client_context, self.tls, cfg.props)
                self.client = RemotingClient(nursery, connect_timeout=3.0, ssl_context=self.client_ssl)
                self.store_services = await StoreServices.start(self.store, nursery)
                idle = cfg.server_channel_max_idle_time_seconds
                ports = [cfg.listen_port]
                if vip and cfg.listen_port > 2:
                    ports.append(cfg.listen_port - 2)
                for port in ports:
                    srv = RemotingServer(
                        self.dispatcher,
                        state=self,
                        on_close=self.on_connection_closed,
                        idle_timeout=idle if idle > 0 else math.inf,
                        tls=self.tls,
                        max_connections=cap,
                    )
                    await nursery.start(srv.serve, host, port)
                    self.servers.append(srv)
                if cfg.listen_port == 0:
                    # tests bind port 0: advertise the port we got
                    cfg.listen_port = self.servers[0].port or 0
                    cfg.props["listenPort"] = str(cfg.listen_port)
                if self.tls.mode is TlsMode.ENFORCING and self.servers:
                    # replication over TLS only where plain is refused anyway; the slave follows the same rule
                    if self.ha.service is not None:
                        self.ha.service.tls_mode = self.tls.mode
                        self.ha.service.tls_context = self.servers[0].tls_context
                    if self.ha.client is not None:
                        self.ha.client.ssl_context = await trio.to_thread.run_sync(self.tls.client_context)
                await self.ha.start(nursery, host)
                await nursery.start(self.hold.run)
                if self.dledger is not None:
                    await nursery.start(self.dledger.run)  # its role changes start the role's services
                elif not self.ha.is_slave:  # a slave neither delivers delayed messages nor checks transactions
                    await nursery.start(self.schedule.run)
                    await nursery.start(self.transactions.run_check)
                await nursery.start(self.config_writer.run)
                nursery.start_soon(self._persist_config_loop)
                if self.acl is not None:
                    nursery.start_soon(self.acl.watch)
                nursery.start_soon(self._scan_clients_loop)
                nursery.start_soon(self._sample_store_stats_loop)
                nursery.start_soon(self.outer.register_loop)
                log.info("The broker[%s, %s] boot success.", cfg.broker_name, self.broker_addr)
                self.started.set()
                task_status.started(self)
                await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await self._shutdown()

    async def stop(self) -> None:
        """Unregister from the NameServers while the broker's connections still work, then stop."""
        if self.nursery is None:
            return
        await self._unregister()
        self.nursery.cancel_scope.cancel()

    async def _unregister(self) -> None:
        if self._unregistered:
            return
        self._unregistered = True
        try:
            with trio.move_on_after(3):
                await self.outer.unregister_all()
        except Exception:
            log.exception("unregister failed")

    async def _shutdown(self) -> None:
        self.nursery = None
        await self._unregister()
        if self.client is not None:
            await self.client.aclose()
        await self.persist_all()
        self.store.close()
        log.info("broker %s stopped", self.config.broker_name)

    async def _persist_config_loop(self) -> None:
        while True:
            await trio.sleep(self.config.flush_consumer_offset_interval / 1000)
            # offsets change with every commit: written on this interval, like Java's, not on each change
            await self.config_writer.write_dirty()

    async def _sample_store_stats_loop(self) -> None:
        while True:
            self.store_stats.sample(self, _now_ms())
            await self.store_stats.loop.sleep(1)  # notes how late the loop woke it (the queues' wait)

    async def _scan_clients_loop(self) -> None:
        keep_dead_ms = int(self.config.props.get("filterDataCleanTimeSpan", "86400000") or 86400000)
        while True:
            self.stats_manager.sample(self)
            await trio.sleep(10)
            for ch in self.consumers.scan_not_active() + self.producers.scan_not_active():
                if isinstance(ch, Connection):
                    await ch.aclose()
            self.filters.clean(keep_dead_ms)
            self.locks.forget_expired()
            heap.collect_cycles()  # closed connections' cycles (a TLS stream is one), before the trim
            heap.trim()  # what closed connections and answered requests freed goes back to the system

    # -- role changes (DLedger) ------------------------------------------------------------
    async def _start_role_services(self, name: str, *services: Callable[..., Awaitable[Any]]) -> None:
        if name in self._role_scopes or self.nursery is None:
            return

        async def run(task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED) -> None:
            with trio.CancelScope() as scope:
                async with trio.open_nursery() as nursery:
                    for service in services:
                        await nursery.start(service)
                    task_status.started(scope)

        self._role_scopes[name] = await self.nursery.start(run)

    def _stop_role_services(self, name: str) -> None:
        scope = self._role_scopes.pop(name, None)
        if scope is not None:
            scope.cancel()

    def _set_identity(self, broker_id: int, role: BrokerRole) -> None:
        cfg = self.config
        cfg.broker_id = broker_id
        cfg.props["brokerId"] = str(broker_id)
        cfg.store.broker_role = role
        cfg.props["brokerRole"] = role.value
        self.ha.role = role

    async def change_to_slave(self, broker_id: int) -> None:
        """BrokerController.changeToSlave: no delay delivery nor transaction checks, metadata copied from
        the master, registered at once under the slave's id."""
        name = self.config.broker_name
        log.info("Begin to change to slave brokerName=%s brokerId=%d", name, broker_id)
        self._set_identity(broker_id if broker_id != 0 else 1, BrokerRole.SLAVE)
        self._stop_role_services("master")
        if self.ha.sync is not None:
            await self._start_role_services("slave", self._slave_sync)
        await self.outer.register_all(oneway=True)
        log.info("Finish to change to slave brokerName=%s brokerId=%d", name, broker_id)

    async def change_to_master(self, role: BrokerRole = BrokerRole.SYNC_MASTER) -> None:
        """BrokerController.changeToMaster: delay delivery and transaction checks start, then brokerId 0."""
        if role == BrokerRole.SLAVE:
            return
        name = self.config.broker_name
        log.info("Begin to change to master brokerName=%s", name)
        self._stop_role_services("slave")
        await self._start_role_services("master", self.schedule.run, self.transactions.run_check)
        self._set_identity(0, role)
        await self.outer.register_all(oneway=True)
        log.info("Finish to change to master brokerName=%s", name)

    async def _slave_sync(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        assert self.ha.sync is not None
        await self.ha.sync.run()

    # -- lookup helpers --------------------------------------------------------------------
    def retry_or_dlq_topic(self, topic: str) -> bool:
        return topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX) or topic.startswith(MixAll.DLQ_GROUP_TOPIC_PREFIX)

    @staticmethod
    def real_topic(props: dict[str, str]) -> str | None:
        return props.get(MessageConst.PROPERTY_REAL_TOPIC)

