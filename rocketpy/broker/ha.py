"""The broker's master/slave roles around the store's HA stream (rocketpy.store.ha).

* :class:`BrokerHA` starts the HA service of a master (``haListenPort``) or the HA client of
  a slave, learns the master's addresses from REGISTER_BROKER answers the way Java's
  BrokerController.registerBrokerAll does, and waits for slave acknowledgements on
  SYNC_MASTER sends (CommitLog.submitReplicaRequest).
* :class:`HAAllowList` decides who may connect to the HA port (``haAllowedAddresses``; Java streams the
  CommitLog to anyone who connects): by default loopback and the hosts the NameServers list for this
  broker name (its slaves), asked again when an unknown address connects (at most every 5 s).
* :class:`SlaveSynchronize` copies the master's topic configs, consumer offsets, delay offsets
  and subscription groups every 10 s (first after 3 s), as Java's handleSlaveSynchronize schedules it.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING

import trio

from ..allowlist import AllowList, host_of, parse_ip
from ..codecs import RemotingCommand
from ..codecs.bodies import ConsumerOffsetSerializeWrapper, TopicConfigSerializeWrapper
from ..codecs.bodies.admin import SubscriptionGroupWrapper
from ..codecs.bodies.route import ClusterInfo
from ..codecs.codes import RequestCode
from ..store import PutMessageResult, PutMessageStatus
from ..store.config import BrokerRole
from ..store.ha import HAClient, HAService, split_host_port
from .persist import persist_text

if TYPE_CHECKING:
    from .controller import BrokerController

__all__ = ["HA_ALLOWED_DEFAULT", "BrokerHA", "HAAllowList", "SlaveSynchronize", "vip_channel"]

log = logging.getLogger("rocketpy.broker.ha")

#: haAllowedAddresses when the config names none: this host, and the slaves the NameServers know
HA_ALLOWED_DEFAULT = "loopback,slaves"
#: an unknown address asks the NameServers again at most this often (a slave retries every 5 s)
SLAVES_REFRESH_INTERVAL = 5.0
#: a known slave's address is looked up again after this long (a slave that went keeps no access)
SLAVES_TTL = 60.0
#: a refused host is logged once per this many seconds (and at most this many hosts are remembered)
REFUSAL_LOG_INTERVAL = 60.0
REFUSAL_LOG_HOSTS = 1024
SLAVE_SYNC_DELAY = 3.0
SLAVE_SYNC_PERIOD = 10.0
SYNC_TIMEOUT = 3.0


def vip_channel(addr: str) -> str:
    """MixAll.brokerVIPChannel(true, addr): the same host, listenPort - 2."""
    host, port = split_host_port(addr)
    return f"{host}:{port - 2}"


class HAAllowList:
    """``haAllowedAddresses``: addresses and networks (rocketpy.allowlist), ``*``, and ``slaves``: the hosts of
    the other brokers the NameServers list under this broker name (GET_BROKER_CLUSTER_INFO; a master's
    slaves), as registered (brokerIP1; a slave connecting from another address must be listed explicitly)."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        text = broker.config.props.get("haAllowedAddresses", "").strip() or HA_ALLOWED_DEFAULT
        try:
            self.list = AllowList.parse(text, keywords=("slaves",))
        except ValueError as exc:  # `rocketpy broker` refuses to start on it; a broker made in code falls back
            log.error("haAllowedAddresses: %s; using %s", exc, HA_ALLOWED_DEFAULT)
            self.list = AllowList.parse(HA_ALLOWED_DEFAULT, keywords=("slaves",))
        self.members: frozenset[object] = frozenset()
        self.fetched_at = -math.inf
        self._fetching: trio.Event | None = None
        self.fetches = 0  # for tests and logs
        self._refused: dict[str, tuple[float, int]] = {}  # host -> (last logged, refused since)

    async def __call__(self, host: str) -> bool:
        if self.list.allows(host):
            return True
        ip = parse_ip(host)
        if "slaves" in self.list.keywords and ip is not None:
            age = trio.current_time() - self.fetched_at
            if age >= (SLAVES_TTL if ip in self.members else SLAVES_REFRESH_INTERVAL):
                await self.refresh()
            if ip in self.members:
                return True
        self._log_refusal(host)
        return False

    def _log_refusal(self, host: str) -> None:
        """One line per host and REFUSAL_LOG_INTERVAL (a peer retrying in a loop is counted, not logged each time)."""
        now = trio.current_time()
        last, quiet = self._refused.get(host, (-math.inf, 0))
        if now - last < REFUSAL_LOG_INTERVAL:
            self._refused[host] = (last, quiet + 1)
            return
        if len(self._refused) >= REFUSAL_LOG_HOSTS:
            self._refused.clear()
        self._refused[host] = (now, 0)
        known = ", ".join(sorted(map(str, self.members))) or "none"
        more = f"; {quiet} more refused since the last line" if quiet else ""
        log.warning("HAService refused connection from %s: not in haAllowedAddresses (%s; slaves of %s known: %s)%s",
                    host, self.list.text, self.broker.config.broker_name, known, more)

    async def refresh(self) -> None:
        """Ask the NameServers (one question at a time; a connection meanwhile waits for its answer)."""
        if self._fetching is not None:
            await self._fetching.wait()
            return
        self._fetching = done = trio.Event()
        try:
            self.members = frozenset(await self._fetch())
            self.fetches += 1
        finally:
            self.fetched_at = trio.current_time()
            self._fetching = None
            done.set()

    async def _fetch(self) -> set[object]:
        broker = self.broker
        client = broker.client
        found: set[object] = set()
        if client is None:
            return found
        for addr in broker.config.namesrv_addrs:
            try:
                answer = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 3.0)
                info = ClusterInfo.decode(answer.body or b"{}") if answer.code == 0 else None
            except Exception as exc:
                log.info("HA allow-list: cluster info from %s failed: %s", addr, exc)
                continue
            data = (info.broker_addr_table or {}).get(broker.config.broker_name) if info is not None else None
            for broker_id, member in (data.broker_addrs or {}).items() if data is not None else ():
                if int(broker_id) != broker.config.broker_id:  # the others: a master's slaves
                    found.update(await _addresses(host_of(member)))
        return found


async def _addresses(host: str) -> set[object]:
    ip = parse_ip(host)
    if ip is not None:
        return {ip}
    try:  # brokerIP1 may be a name
        infos = await trio.socket.getaddrinfo(host, None)
    except OSError:
        return set()
    return {a for a in (parse_ip(str(info[4][0])) for info in infos) if a is not None}


class BrokerHA:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        #: who may connect to the HA port
        self.allow = HAAllowList(broker)
        store_cfg = broker.config.store
        self.role = store_cfg.broker_role
        self.service: HAService | None = None
        self.client: HAClient | None = None
        self.sync: SlaveSynchronize | None = None
        self.update_master_ha_periodically = False
        # a broker told to bind port 0 (tests) rewrites listenPort once bound: decide the HA port now
        self._configured_listen_port = broker.config.listen_port
        #: DLedger mode: no HA stream at all (the group replicates); a slave still copies the metadata
        self.dledger = store_cfg.enable_d_leger_commit_log
        if self.dledger:
            self.sync = SlaveSynchronize(broker)
        elif self.is_slave:
            self.client = HAClient(broker.store)
            self.sync = SlaveSynchronize(broker)
            fixed = store_cfg.ha_master_address
            if fixed and len(fixed) >= 6:
                self.client.update_master_address(fixed)
            else:
                self.update_master_ha_periodically = True
        else:
            self.service = HAService(broker.store)

    @property
    def is_slave(self) -> bool:
        return self.role == BrokerRole.SLAVE

    @property
    def is_sync_master(self) -> bool:
        """A master whose sends wait for a slave's HA acknowledgement (never in DLedger mode)."""
        return self.role == BrokerRole.SYNC_MASTER and not self.dledger

    @property
    def ha_port(self) -> int:
        if self.service is not None and self.service.port is not None:
            return self.service.port
        return self.broker.config.listen_port + 1

    def ha_server_addr(self) -> str:
        cfg = self.broker.config
        return f"{cfg.props.get('brokerIP2') or cfg.broker_ip1}:{self.ha_port}"

    async def start(self, nursery: trio.Nursery, host: str) -> None:
        """Every role listens on haListenPort (Java's HAService accepts on slaves too); in DLedger mode
        nothing does, and the role changes start SlaveSynchronize."""
        if self.dledger:
            return
        if self.service is None:
            # a slave also owns an HA service, unused unless it becomes a master
            self.service = HAService(self.broker.store)
        self.service.allow = self.allow
        port = self._listen_port()
        try:
            await nursery.start(self.service.serve, host, port)
        except OSError as exc:
            # Java would not start; we keep serving remoting and say why no slave can connect
            log.error("HAService cannot listen on %s:%d: %s", host, port, exc)
        if self.client is not None:
            await nursery.start(self.client.run)
        if self.sync is not None:
            nursery.start_soon(self.sync.run)

    def _listen_port(self) -> int:
        # BrokerStartup: haListenPort = listenPort + 1, whatever the file says; a broker bound to
        # port 0 (tests) takes any free port for HA too
        port = self._configured_listen_port
        return port + 1 if port else 0

    # -- hooks -----------------------------------------------------------------------------
    def on_put(self) -> None:
        if self.service is not None:
            self.service.notify_new_data()

    def on_register_result(self, answer: RemotingCommand) -> None:
        """registerBrokerAll's result: a slave learns the master's HA and broker addresses."""
        if not self.is_slave:
            return
        ext = answer.ext_fields or {}
        ha_addr = ext.get("haServerAddr") or None
        if self.update_master_ha_periodically and ha_addr and self.client is not None:
            self.client.update_master_address(ha_addr)
        if self.sync is not None:
            self.sync.master_addr = ext.get("masterAddr") or None

    def must_wait_replica(self, result: PutMessageResult, wait: bool) -> bool:
        return self.is_sync_master and wait and result.is_ok and result.append is not None

    async def wait_replica(self, result: PutMessageResult) -> PutMessageStatus:
        assert self.service is not None and result.append is not None
        return await self.service.submit_replica(result.append.wrote_offset, result.append.wrote_bytes)


class SlaveSynchronize:
    """The slave's periodic copy of the master's metadata."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.master_addr: str | None = None
        self.cycles = 0

    async def run(self) -> None:
        await trio.sleep(SLAVE_SYNC_DELAY)
        while True:
            try:
                await self.sync_all()
            except Exception:
                log.exception("SlaveSynchronize failed")
            await trio.sleep(SLAVE_SYNC_PERIOD)

    async def _get(self, addr: str, code: int) -> bytes | None:
        client = self.broker.client
        if client is None:
            return None
        answer = await client.invoke(addr, RemotingCommand.request(code), SYNC_TIMEOUT)
        if answer.code != 0:
            log.warning("slave sync %d from %s: %d %s", code, addr, answer.code, answer.remark)
            return None
        return answer.body

    async def sync_all(self) -> None:
        master = self.master_addr
        if not master or master == self.broker.broker_addr:
            return
        for step in (self.sync_topic_config, self.sync_consumer_offset, self.sync_delay_offset, self.sync_groups):
            try:
                await step(master)
            except Exception as exc:
                log.error("%s from %s failed: %s", step.__name__, master, exc)
        self.cycles += 1

    async def sync_topic_config(self, master: str) -> None:
        body = await self._get(vip_channel(master), RequestCode.GET_ALL_TOPIC_CONFIG)
        if body is None:
            return
        wrapper = TopicConfigSerializeWrapper.decode(body)
        topics = self.broker.topics
        if wrapper.data_version is not None and wrapper.data_version != topics.data_version:
            topics.table.clear()
            topics.table.update(wrapper.topic_config_table)
            topics.data_version = wrapper.data_version
            topics.mark_dirty()
            await self.broker.config_writer.write_dirty([topics])
            log.info("Update slave topic config from master, %s", master)

    async def sync_consumer_offset(self, master: str) -> None:
        body = await self._get(master, RequestCode.GET_ALL_CONSUMER_OFFSET)
        if body is None:
            return
        wrapper = ConsumerOffsetSerializeWrapper.decode(body)
        offsets = self.broker.offsets
        for key, table in wrapper.offset_table.items():
            offsets.table[key] = dict(table)
        offsets.dirty = True
        await self.broker.config_writer.write_dirty([offsets])
        log.info("Update slave consumer offset from master, %s", master)

    async def sync_delay_offset(self, master: str) -> None:
        body = await self._get(master, RequestCode.GET_ALL_DELAY_OFFSET)
        if body is None:
            return
        schedule = self.broker.schedule
        if schedule.path is None:
            return
        await trio.to_thread.run_sync(persist_text, schedule.path, body)
        schedule.load()
        log.info("Update slave delay offset from master, %s", master)

    async def sync_groups(self, master: str) -> None:
        body = await self._get(master, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        if body is None:
            return
        wrapper = SubscriptionGroupWrapper.decode(body)
        groups = self.broker.groups
        if wrapper.data_version is not None and wrapper.data_version != groups.data_version:
            groups.table.clear()
            groups.table.update(wrapper.subscription_group_table)
            groups.data_version = wrapper.data_version
            groups.mark_dirty()
            await self.broker.config_writer.write_dirty([groups])
            log.info("Update slave Subscription Group from master, %s", master)
