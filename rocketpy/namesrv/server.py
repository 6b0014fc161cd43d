"""The NameServer process: remoting server, routing state, KV store and the liveness scan.

Everything runs in one nursery owned by :meth:`NameServer.run`; cancelling it stops
the listener, the connections and the scan together.
"""

from __future__ import annotations

import logging
import math

import trio

from .. import heap
from ..javacompat import properties
from ..remoting.connection import Connection
from ..remoting.server import RemotingServer
from ..remoting.tls import server_settings
from .config import NamesrvConfig
from .fastpath import RouteShortcut
from .kv_config import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager, write_file_safely
from .processor import build_dispatcher, route_body
from .route_info import RouteInfoManager

log = logging.getLogger("rocketpy.namesrv")

#: distinct (topic, dialect) answers kept between two state changes
ROUTE_CACHE_LIMIT = 4096
#: topics longer than this (no valid one is: 127 characters, or a retry topic of a 255-character group)
#: are answered without being cached, else 4,096 hostile names of a megabyte each would be kept
ROUTE_CACHE_TOPIC_LENGTH = 300


class NameServer:
    """State and behaviour of one NameServer; :meth:`run` serves it."""

    def __init__(self, config: NamesrvConfig | None = None, *, routes: RouteInfoManager | None = None) -> None:
        self.config = config or NamesrvConfig()
        self.routes = routes or RouteInfoManager()
        self.kv = KVConfigManager(self.config.kv_config_path)
        self._config_write_lock = trio.Lock()
        self.dispatcher = build_dispatcher()
        self.remoting: RemotingServer | None = None
        #: answers repeated route lookups from bytes (same answers as the dispatcher's)
        self.route_shortcut = RouteShortcut(self)
        self.dispatcher.fast_path = self.route_shortcut
        self._route_cache: dict[tuple[str | None, bool], bytes | None] = {}
        self._route_cache_key: tuple[int, int, bool, bool] = (-1, -1, False, False)

    @property
    def address(self) -> str:
        assert self.remoting is not None, "not serving"
        return self.remoting.address

    @property
    def port(self) -> int:
        assert self.remoting is not None and self.remoting.port is not None, "not serving"
        return self.remoting.port

    # -- answers -----------------------------------------------------------------------
    def route_answer(self, topic: str | None, standard_json: bool) -> bytes | None:
        """GET_ROUTEINFO_BY_TOPIC body for ``topic``, or None; cached until routes or KV change."""
        with_order_conf = self.config.order_message_enable or self.config.cluster_test
        self._forget_stale_routes()
        cache = self._route_cache
        try:
            return cache[(topic, standard_json)]
        except KeyError:
            pass
        view = self.routes.pickup_topic_route_data(topic)
        body = None
        if view is not None:
            order_conf = None
            if with_order_conf:
                order_conf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
            body = route_body(view, order_conf, standard_json)
        if topic is None or len(topic) <= ROUTE_CACHE_TOPIC_LENGTH:
            cache[(topic, standard_json)] = body
        return body

    @property
    def answers_state(self) -> tuple[int, int, bool, bool]:
        """What cached route answers were made under: the routes, the KV config (ORDER_TOPIC_CONFIG) and the
        settings that shape an answer (orderMessageEnable, clusterTest); they are stale once it changes."""
        return self.routes.version, self.kv.version, self.config.order_message_enable, self.config.cluster_test

    def _forget_stale_routes(self) -> None:
        key = self.answers_state
        if key != self._route_cache_key or len(self._route_cache) > ROUTE_CACHE_LIMIT:
            self._route_cache.clear()
            self._route_cache_key = key

    def forget_stale_answers(self) -> None:
        """Drop the cached route answers that routes or KV changed since: a lookup does it, and the
        periodic scan too, so that answers nobody asks for again (deleted topics) are not kept."""
        self._forget_stale_routes()
        self.route_shortcut.forget_stale()

    @property
    def cached_route_answers(self) -> int:
        """Route answers kept: by topic, and by request shape for the shortcut."""
        return len(self._route_cache) + self.route_shortcut.memo_size

    def update_config(self, props: dict[str, str]) -> None:
        """UPDATE_NAMESRV_CONFIG: change known settings (:meth:`save_config` then persists them all)."""
        known = self.config.settings()
        accepted = {k: v for k, v in props.items() if k in known or k in self.config.extra}
        ignored = sorted(props.keys() - accepted.keys())
        if ignored:
            log.warning("updateConfig ignores unknown keys: %s", ", ".join(ignored))
        self.config.apply(accepted, warn_unknown=False)

    async def save_config(self) -> None:
        """Write every setting to configStorePath from a worker thread (Java's string2File), escaped
        (:func:`properties.store`: every value comes back as it was at the next start)."""
        async with self._config_write_lock:  # one write at a time, each of the settings as they are then
            path = self.config.config_store_path
            text = properties.store(self.config.to_properties())  # the snapshot, on the trio thread
            await trio.to_thread.run_sync(_write_config, path, text.encode("ascii"))

    # -- lifecycle -------------------------------------------------------------------------
    def on_connection_closed(self, conn: Connection) -> None:
        """BrokerHousekeepingService: a closed, broken or idle connection takes its broker away."""
        self.routes.on_channel_destroy(conn.remote_addr, conn)

    async def scan_not_active_brokers(self) -> None:
        """Every scan interval, drop brokers silent for longer than the expiry and close their connections."""
        while True:
            # re-read each round (UPDATE_NAMESRV_CONFIG may change it); a value <= 0 must neither
            # crash the server (trio.sleep refuses negatives) nor spin
            await trio.sleep(max(self.config.scan_not_active_broker_interval, 10) / 1000)
            gone = self.routes.scan_not_active_broker(self.config.broker_channel_expired_time)
            for _, channel in gone:
                if isinstance(channel, Connection):
                    await channel.aclose()
            self.forget_stale_answers()
            heap.collect_cycles()  # closed connections' cycles (a TLS stream is one), before the trim
            heap.trim()

    async def run(
        self,
        host: str | None = None,
        port: int | None = None,
        *,
        task_status: trio.TaskStatus[NameServer] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Load the KV store, listen, scan; ``task_status.started(self)`` once listening."""
        heap.tune()
        if not self.kv.loaded:
            self.kv.load()
        if self.config.cluster_test:
            log.warning(
                "clusterTest: routes carry orderTopicConf in the legacy dialect; unknown topics are not "
                "looked up in the %s environment (not supported)",
                self.config.product_env_name,
            )
        idle = self.config.server_channel_max_idle_time_seconds
        tls, cap = await trio.to_thread.run_sync(server_settings, dict(self.config.extra))
        self.remoting = RemotingServer(
            self.dispatcher,
            state=self,
            on_close=self.on_connection_closed,
            idle_timeout=idle if idle > 0 else math.inf,
            tls=tls,
            max_connections=cap,
        )
        host = self.config.listen_host if host is None else host
        port = self.config.listen_port if port is None else port
        async with trio.open_nursery() as nursery:
            await nursery.start(self.remoting.serve, host, port)
            nursery.start_soon(self.scan_not_active_brokers)
            log.info("NameServer listening on %s", self.address)
            task_status.started(self)


async def run_namesrv(
    config: NamesrvConfig | None = None,
    *,
    task_status: trio.TaskStatus[NameServer] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve a NameServer with ``config`` until cancelled; started with the NameServer."""
    await NameServer(config).run(task_status=task_status)


def _write_config(path: str, data: bytes) -> None:
    try:
        write_file_safely(path, data)
    except OSError as exc:
        log.error("persist string2File error, %s: %s", path, exc)
