"""NameServer configuration under Java's property keys (NamesrvConfig + NettyServerConfig).

Files given with ``-c`` and UPDATE_NAMESRV_CONFIG bodies use the same ``key=value``
format and keys as the Java NameServer 4.9.8; rocketpy keys (marked below) give the bind
address, make the liveness scan configurable and list who may register brokers and
administer (SECURITY.md). GET_NAMESRV_CONFIG prints every key.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..allowlist import AllowList
from ..javacompat import properties
from ..javacompat.hashmap import concurrent_hashmap_order

log = logging.getLogger("rocketpy.namesrv")

#: keys UPDATE_NAMESRV_CONFIG may never change, whatever configBlackList says (DefaultRequestProcessor's
#: initConfigBlackList, and the allow-lists: a request must not widen who may send it)
ALWAYS_BLACK_LISTED = ("configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome",
                       "registerAllowedAddresses", "adminAllowedAddresses")
#: the default of both allow-lists: this host and the networks a broker or a tool on another host of the
#: deployment connects from (containers, pods, a LAN); ``rocketpy serve`` narrows it to loopback
DEFAULT_ALLOWED_ADDRESSES = "loopback,private"
ALLOW_LIST_KEYS = ("registerAllowedAddresses", "adminAllowedAddresses")
#: keys no remote update may change on our NameServer, though Java's would take them: the address and port
#: it binds (saved, they take effect at the next start: ``listenHost=0.0.0.0`` binds every interface), and
#: every ``tls.*`` key (key and certificate paths, passwords, modes)
REMOTE_REFUSED_KEYS: dict[str, str] = {"listenHost": "an address to bind", "listenPort": "a port to bind"}
REMOTE_REFUSED_PREFIX = "tls."
#: our keys bounding what one request may make the NameServer hold (0 or less: no limit, as Java), with their
#: defaults: read from the file's extra keys (like serverMaxConnections), so that GET_NAMESRV_CONFIG lists
#: one only when it is set; :mod:`.limits` says which request each bounds.
LIMITS: dict[str, int] = {
    # reading a body of short lines takes about 0.5 s a MiB on the event loop
    "updateNamesrvConfigMaxBodySize": 64 * 1024,
    # a real broker's registration (measured on ours, 4.9.8's JSON, the default compressedRegister=false):
    # 10,000 topics of 20-character names are a body of 1,681,402 bytes, of 127 (Java's longest) 3,821,402
    # bytes, decoded in 0.08 and 0.11 s; compressed, 25,426 and 29,397 bytes inflating to 410,350 and
    # 1,480,350. 8 MiB takes some 50,000 topics of usual names (2.2 times the longest-named 10,000) and, as
    # the bound of a compressed body once inflated, some 200,000 (100,000 plain are 16,801,402 bytes, over
    # the 16 MiB frame Java's NameServer reads).
    "registerBrokerMaxBodySize": 8 * 1024 * 1024,
    # 5 times the 10,000 above, as many as 8 MiB of plain JSON holds; 1,000,000 topics of 8-character names
    # compressed are 2,612,114 bytes on the wire, 29,000,053 inflated (within the 64 MiB cap of before),
    # 8.8 s of decoding on the event loop and a route table to match
    "registerBrokerMaxTopics": 50_000,
    # a DataVersion is some 40 bytes
    "queryDataVersionMaxBodySize": 64 * 1024,
}


def _home_file(name: str) -> str:
    return str(Path.home() / "namesrv" / name)


@dataclasses.dataclass
class NamesrvConfig:
    """Every setting, named as the Java property it reads (camelCase -> snake_case)."""

    # -- NamesrvConfig --------------------------------------------------------
    rocketmq_home: str | None = dataclasses.field(default_factory=lambda: os.environ.get("ROCKETMQ_HOME"))
    kv_config_path: str = dataclasses.field(default_factory=lambda: _home_file("kvConfig.json"))
    config_store_path: str = dataclasses.field(default_factory=lambda: _home_file("namesrv.properties"))
    product_env_name: str = "center"
    cluster_test: bool = False
    order_message_enable: bool = False
    config_black_list: str = "configBlackList;configStorePath;kvConfigPath"
    # -- NettyServerConfig (NamesrvStartup sets listenPort 9876) -----------------
    listen_port: int = 9876
    server_worker_threads: int = 8
    server_callback_executor_threads: int = 0
    server_selector_threads: int = 3
    server_oneway_semaphore_value: int = 256
    server_async_semaphore_value: int = 64
    server_channel_max_idle_time_seconds: int = 120
    server_socket_snd_buf_size: int = 0
    server_socket_rcv_buf_size: int = 0
    write_buffer_high_water_mark: int = 0
    write_buffer_low_water_mark: int = 0
    server_socket_backlog: int = 1024
    server_pooled_byte_buf_allocator_enable: bool = True
    use_epoll_native_selector: bool = False
    # -- rocketpy ---------------------------------------------------------------
    #: address to bind (Java binds every interface; we default to loopback)
    listen_host: str = "127.0.0.1"
    #: ms between liveness scans (the key RocketMQ 5 uses; 4.9.8 hard-codes 10 s)
    scan_not_active_broker_interval: int = 10_000
    #: ms without a registration after which a broker leaves the routes (4.9.8: 120 s)
    broker_channel_expired_time: int = 120_000
    #: who may REGISTER_BROKER / UNREGISTER_BROKER / QUERY_DATA_VERSION (rocketpy.allowlist; Java: anyone)
    register_allowed_addresses: str = DEFAULT_ALLOWED_ADDRESSES
    #: who may change KV configs, routes' write permission, topics and the config (Java: anyone)
    admin_allowed_addresses: str = DEFAULT_ALLOWED_ADDRESSES

    #: keys read from a file that matched no setting (kept and printed, as Java does)
    extra: dict[str, str] = dataclasses.field(default_factory=dict)

    # -- property view --------------------------------------------------------------
    @staticmethod
    def java_key(attr: str) -> str:
        head, *rest = attr.split("_")
        return head + "".join(p[:1].upper() + p[1:] for p in rest)

    @classmethod
    def settings(cls) -> dict[str, dataclasses.Field[Any]]:
        """Java key -> dataclass field, for every setting."""
        return {cls.java_key(f.name): f for f in dataclasses.fields(cls) if f.name != "extra"}

    def apply(self, props: Mapping[str, str], *, warn_unknown: bool = True, strict: bool = False) -> list[str]:
        """Set what ``props`` names, parsing like MixAll.properties2Object; returns unknown keys.

        A value that does not parse leaves the setting as it was (Java ignores it too, and
        UPDATE_NAMESRV_CONFIG must stay that lenient); ``strict`` (a config file given to the
        CLI) raises ConfigError instead, so a typo cannot silently start the default server.
        """
        settings = self.settings()
        unknown = []
        for key, text in props.items():
            f = settings.get(key)
            if f is None:
                if strict and key in LIMITS:
                    try:
                        int(text.strip())
                    except ValueError:
                        raise properties.ConfigError(f"{key}={text!r} is not an integer") from None
                unknown.append(key)
                self.extra[key] = text
                continue
            try:
                value = _parse(text, f.type)
            except ValueError:
                if strict:
                    raise properties.ConfigError(f"{key}={text!r} is not {_kind_name(f.type)}") from None
                log.warning("config %s: cannot use %r as %s; keeping %r", key, text, f.type, getattr(self, f.name))
                continue
            if strict and key == "listenPort" and not 0 <= value < 65536:
                raise properties.ConfigError(f"listenPort={text!r} is not a port number (0-65535)")
            if strict and key in ALLOW_LIST_KEYS:
                try:
                    AllowList.parse(value)
                except ValueError as exc:
                    raise properties.ConfigError(f"{key}: {exc}") from None
            setattr(self, f.name, value)
        # tls.* (Java's system properties) and our connection cap are read from ``extra`` at start
        unknown = [k for k in unknown
                   if not k.startswith("tls.") and k != "serverMaxConnections" and k not in LIMITS]
        if unknown and warn_unknown:
            log.warning("unknown NameServer config keys (ignored): %s", ", ".join(sorted(unknown)))
        return unknown

    def to_properties(self) -> dict[str, str]:
        """Every setting as Java's Configuration prints it (Properties order on JDK 9+)."""
        values: dict[str, str] = {}
        for key, f in self.settings().items():
            value = getattr(self, f.name)
            if value is not None:
                values[key] = _format(value)
        for key, text in self.extra.items():
            values.setdefault(key, text)
        return {k: values[k] for k in concurrent_hashmap_order(values, 8)}

    def black_list(self) -> set[str]:
        """Java's black list: its own four keys and those of ``configBlackList``."""
        return set(ALWAYS_BLACK_LISTED) | {k for k in self.config_black_list.split(";")}

    def limit(self, key: str) -> int:
        """One of :data:`LIMITS`: the file's (or a remote update's) value, the default when it is not set or
        not a number."""
        try:
            return int(self.extra.get(key, LIMITS[key]))
        except ValueError:
            return LIMITS[key]

    def refused_key(self, props: Mapping[str, str]) -> str | None:
        """The first key that makes UPDATE_NAMESRV_CONFIG refuse the whole update (NO_PERMISSION, as Java
        refuses a black-listed key): one of :meth:`black_list`, of ours (``REMOTE_REFUSED_KEYS``, ``tls.*``),
        or a key or value with a line break (it would be lines of its own in the file at the next start)."""
        black = self.black_list() | REMOTE_REFUSED_KEYS.keys()
        for key, value in props.items():
            if (key in black or key.startswith(REMOTE_REFUSED_PREFIX) or properties.has_line_break(key)
                    or properties.has_line_break(value)):
                return key
        return None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, strict: bool = False) -> NamesrvConfig:
        """A config read from a properties file (``configStorePath`` becomes that file, like Java).

        ``strict``: a value that does not parse raises ConfigError (see :meth:`apply`)."""
        config = cls()
        config.apply(properties.load_file(path), strict=strict)
        config.config_store_path = str(path)
        return config


def _parse(text: str, kind: Any) -> Any:
    kind = str(kind)
    if kind.startswith("bool"):
        return text.strip().lower() == "true"  # Boolean.parseBoolean
    if kind.startswith("int"):
        return int(text.strip())
    return text


def _kind_name(kind: Any) -> str:
    return "an integer" if str(kind).startswith("int") else str(kind)


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
