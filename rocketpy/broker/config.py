"""Broker settings under the Java property keys of a 4.9.8 ``broker.conf``.

One text of ``key = value`` lines configures three Java beans at once (BrokerConfig,
MessageStoreConfig, NettyServerConfig/NettyClientConfig). Here every key is kept as
text in :attr:`BrokerConfig.props` (what GET_BROKER_CONFIG prints) and the settings
the broker acts on are typed attributes; the store gets its own MessageStoreConfig
built from the same text. Unknown keys are logged, not refused, as Java ignores them.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
from collections.abc import Mapping
from typing import Any

from ..dledger.member import parse_peers
from ..javacompat import properties
from ..javacompat.lang import java_split, parse_java_int
from ..javacompat.properties import ConfigError
from ..remoting.tls import TLS_KEYS  # Java's system properties (TlsSystemConfig), accepted in broker.conf
from ..store.config import BrokerRole, DelayLevels, MessageStoreConfig
from .java_defaults import JAVA_PROPERTIES, KNOWN_KEYS

log = logging.getLogger("rocketpy.broker")

#: keys of our own (not in Java): where to bind, who may change the config remotely, the ACL file (Java's
#: -Drocketmq.acl.plain.file; relative to rocketmqHome or absolute), and what one request may make the
#: broker hold (:mod:`.config_limits`)
ROCKETPY_KEYS = frozenset({
    "listenHost", "adminCredential", "vipChannelEnable", "aclPlainFile", "serverMaxConnections",
    "heartbeatMaxBodySize", "heartbeatMaxSubscriptions", "heartbeatMaxGroups", "lockBatchMqMaxBodySize",
    "checkClientConfigMaxBodySize", "updateBrokerConfigMaxBodySize", "subscriptionGroupMaxBodySize",
})
#: where this broker is stricter than Java's (see SECURITY.md): the ACL switches and the HA allow-list
SECURITY_KEYS = frozenset({"aclStrictAdmin", "aclStrictBatchSend", "aclStrictReads", "haAllowedAddresses"})
ROCKETPY_KEYS |= SECURITY_KEYS


def _local_address() -> str:
    """A non-loopback IPv4 address of this host, like RemotingUtil.getLocalAddress."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # TEST-NET: no packet is sent for a UDP connect
            return str(s.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def _bool(text: str) -> bool:
    return text.strip().lower() == "true"  # Boolean.parseBoolean


@dataclasses.dataclass
class BrokerConfig:
    """The settings the broker reads; ``props`` holds every key as text."""

    props: dict[str, str]
    listen_host: str = "0.0.0.0"
    listen_port: int = 10911
    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = ""
    broker_id: int = 0
    broker_ip1: str = ""
    broker_permission: int = 6
    namesrv_addr: str = ""
    default_topic_queue_nums: int = 8
    auto_create_topic_enable: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    trace_topic_enable: bool = False
    flush_consumer_offset_interval: int = 5000
    reject_transaction_message: bool = False
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    notify_consumer_ids_changed_enable: bool = True
    region_id: str = "DefaultRegion"
    register_broker_timeout_mills: int = 6000
    trace_on: bool = True
    enable_property_filter: bool = False
    compressed_register: bool = False
    force_register: bool = True
    register_name_server_period: int = 30000
    transaction_time_out: int = 6000
    transaction_check_max: int = 15
    transaction_check_interval: int = 60000
    acl_enable: bool = False
    store_reply_message_enable: bool = True
    server_channel_max_idle_time_seconds: int = 120
    channel_not_active_interval: int = 60000
    admin_credential: str = ""
    vip_channel_enable: bool = True
    slave_read_enable: bool = False
    # -- what one request may make the broker hold (ours; 0 or less: no limit, as Java) -------------------
    heartbeat_max_body_size: int = 4 * 1024 * 1024
    heartbeat_max_subscriptions: int = 10_000
    heartbeat_max_groups: int = 1_000
    lock_batch_mq_max_body_size: int = 1024 * 1024
    check_client_config_max_body_size: int = 64 * 1024
    update_broker_config_max_body_size: int = 64 * 1024
    #: a SubscriptionGroupConfig is some 350 bytes; each one taken is kept in subscriptionGroup.json
    subscription_group_max_body_size: int = 64 * 1024
    store: MessageStoreConfig = dataclasses.field(default_factory=MessageStoreConfig)

    @classmethod
    def from_properties(
        cls, given: Mapping[str, str] | None = None, *, strict: bool = False, log_unknown: bool = True,
        **overrides: Any
    ) -> BrokerConfig:
        """Java defaults, then ``given`` (file keys), then ``overrides`` (snake_case attributes).

        Java ignores a value it cannot parse; ``strict`` (a config file given to the CLI)
        raises ConfigError for it instead, and for periods a scheduler would refuse, so a
        typo cannot silently start a broker on defaults or kill it minutes later. Unknown keys are
        logged unless ``log_unknown`` is false (the command line has printed them, config_check).
        """
        given = dict(given or {})
        if log_unknown:
            for key in sorted(k for k in given if k not in KNOWN_KEYS and k not in ROCKETPY_KEYS and k not in TLS_KEYS):
                log.warning("unknown broker config key %r ignored", key)
        props = dict(JAVA_PROPERTIES)
        props["brokerName"] = socket.gethostname().split(".")[0] or "DEFAULT_BROKER"
        props["brokerIP1"] = props["brokerIP2"] = _local_address()
        props["storePathRootDir"] = os.path.join(os.path.expanduser("~"), "store")
        props["rocketmqHome"] = os.environ.get("ROCKETMQ_HOME", "")
        props["namesrvAddr"] = os.environ.get("NAMESRV_ADDR", "")
        props.update({k: v.strip() for k, v in given.items()})
        # Java sets storePathCommitLog from the root only when the file leaves it out
        if not given.get("storePathCommitLog"):
            props["storePathCommitLog"] = os.path.join(props["storePathRootDir"], "commitlog")
        for name, given_value in overrides.items():
            if name == "store":
                continue
            props[_camel(name)] = _text(given_value)
        cfg = cls(props=props)
        for f in dataclasses.fields(cls):
            if f.name in ("props", "store"):
                continue
            key = _JAVA_NAMES.get(f.name, _camel(f.name))
            if key not in props:
                continue
            raw = props[key]
            kind = str(f.type)
            try:
                if kind.startswith("bool"):
                    value: Any = _bool(raw)
                elif kind.startswith("int"):
                    value = int(raw)
                else:
                    value = raw
            except ValueError:
                if strict:
                    raise ConfigError(f"{key}={raw!r} is not an integer") from None
                log.warning("broker config %s=%r is not a number; keeping %r", key, raw, getattr(cfg, f.name))
                continue
            setattr(cfg, f.name, value)
        store_props = {k: v for k, v in props.items() if v != ""}
        try:
            cfg.store = MessageStoreConfig.from_properties(store_props)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if cfg.store.broker_role != BrokerRole.SLAVE and cfg.broker_id != 0:
            # BrokerStartup: a master is always brokerId 0
            cfg.broker_id = 0
            cfg.props["brokerId"] = "0"
        if cfg.store.enable_d_leger_commit_log:
            # BrokerStartup: the DLedger role change handler gives the id (0 leader, node number + 1 follower)
            cfg.broker_id = -1
            cfg.props["brokerId"] = "-1"
        if strict:
            cfg.check()
        return cfg

    def _check_dledger(self) -> None:
        """What DLedgerConfig/DLedgerCommitLog need to start (Java fails later, with a stack trace)."""
        store = self.store
        for key, value in (("dLegerGroup", store.d_leger_group), ("dLegerPeers", store.d_leger_peers),
                           ("dLegerSelfId", store.d_leger_self_id)):
            if not value:
                raise ConfigError(f"enableDLegerCommitLog=true needs {key}")
        try:
            peers = parse_peers(store.d_leger_peers or "")
        except ValueError as exc:
            raise ConfigError(f"dLegerPeers={store.d_leger_peers!r}: {exc}") from None
        self_id = store.d_leger_self_id or ""
        if self_id not in peers:
            raise ConfigError(f"dLegerSelfId={self_id} is not one of dLegerPeers ({', '.join(peers)})")
        if not self_id[1:].isdigit():
            # DLedgerCommitLog: brokerId = Integer.parseInt(selfId.substring(1)) + 1
            raise ConfigError(f"dLegerSelfId={self_id} must be a letter and a number (n0, n1...)")
        if store.preferred_leader_id and store.preferred_leader_id not in peers:
            raise ConfigError(f"preferredLeaderId={store.preferred_leader_id} is not one of dLegerPeers")

    def check(self) -> None:
        """ConfigError for settings the broker cannot run with (see :meth:`from_properties`)."""
        if self.store.broker_role == BrokerRole.SLAVE and self.broker_id <= 0:
            raise ConfigError("Slave's brokerId must be > 0")
        if not 0 <= self.listen_port < 65536:
            raise ConfigError(f"listenPort={self.listen_port} is not a port number (0-65535)")
        store = self.store
        if store.enable_d_leger_commit_log:
            self._check_dledger()
        periods = {
            "flushConsumerOffsetInterval": self.flush_consumer_offset_interval,
            "transactionCheckInterval": self.transaction_check_interval,
            "flushIntervalCommitLog": store.flush_interval_commit_log,
            "flushIntervalConsumeQueue": store.flush_interval_consume_queue,
            "cleanResourceInterval": store.clean_resource_interval,
        }
        for key, value in periods.items():
            if value <= 0:
                raise ConfigError(f"{key}={value} must be a positive number of milliseconds")
        _check_delete_when(store.delete_when)
        if store.file_reserved_time < 0:
            # Java takes it: every CommitLog file but the last would count as expired at the deleteWhen hour
            raise ConfigError(f"fileReservedTime={store.file_reserved_time} must be 0 or more hours")
        try:
            DelayLevels(store.message_delay_level)
        except (ValueError, KeyError, IndexError) as exc:
            raise ConfigError(
                f"messageDelayLevel={store.message_delay_level!r} is malformed (levels look like '1s 5m 2h')"
            ) from exc

    def update(self, changes: Mapping[str, str]) -> None:
        """Configuration.update: the changed keys take effect on this running config (and its store config,
        the same objects the broker reads); ConfigError, and nothing changed, for a value it cannot parse."""
        fresh = type(self).from_properties({**self.props, **changes}, strict=True)
        for f in dataclasses.fields(self):
            if f.name not in ("props", "store"):
                setattr(self, f.name, getattr(fresh, f.name))
        for f in dataclasses.fields(self.store):
            setattr(self.store, f.name, getattr(fresh.store, f.name))
        self.props.update({k: v.strip() for k, v in changes.items()})

    @classmethod
    def load(cls, path: str | None = None, *, strict: bool = False, **overrides: Any) -> BrokerConfig:
        given: dict[str, str] = {}
        if path:
            given = properties.load_file(path)
        return cls.from_properties(given, strict=strict, **overrides)

    # -- derived ---------------------------------------------------------------------
    @property
    def broker_addr(self) -> str:
        return f"{self.broker_ip1}:{self.listen_port}"

    @property
    def vip_port(self) -> int:
        return self.listen_port - 2

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    @property
    def config_dir(self) -> str:
        return os.path.join(self.store.store_path_root_dir, "config")

    def properties_text(self) -> str:
        """GET_BROKER_CONFIG body: every Java key with its value, ``key=value`` lines."""
        return properties.dumps({k: v for k, v in self.props.items() if k in KNOWN_KEYS})


def _check_delete_when(when: str) -> None:
    """ConfigError unless ``deleteWhen`` is what UtilAll.isItTimeToDo can match: hours of the day, 0 to 23,
    ';' between ("04", "01;02;03"). Java takes any text and its cleaning thread then fails on each run at
    Integer.parseInt ("4am"), or never meets the hour ("25"): files are no longer deleted on time."""
    hours = java_split(when, ";")
    bad = next((h for h in hours if parse_java_int(h) not in range(24)), None)
    if not hours or bad is not None:
        why = f"{bad!r} is not an hour of the day (0-23)" if bad is not None else "it names no hour"
        raise ConfigError(f"deleteWhen={when!r}: {why}; write the hours files are deleted at as 04, or 01;02;03")


_JAVA_NAMES = {"broker_ip1": "brokerIP1", "listen_host": "listenHost"}


def _camel(name: str) -> str:
    if name in _JAVA_NAMES:
        return _JAVA_NAMES[name]
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
