"""The broker's Configuration (Java's common Configuration as BrokerController sets it up): the running
settings, their data version, and the properties file UPDATE_BROKER_CONFIG rewrites.

Java 4.9.8 persists to BrokerPathConfigHelper.getBrokerConfigPath(): the ``-c`` file mqbroker was started
with, else ``${user.home}/store/config/broker.properties``. Without a file we use
``<storePathRootDir>/config/broker.properties``: the same path for a broker on the default store root, and
beside its own store for any other (``rocketpy serve``, ``--store``), so two brokers of one host never share
one file. (The broker's Configuration has no storePathFromConfig in 4.9.8: brokerConfigPath is only black-listed.)
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

import trio

from ..codecs.bodies.register import DataVersion
from ..javacompat import properties
from ..remoting.tls import TLS_KEYS
from .config import ROCKETPY_KEYS, SECURITY_KEYS, BrokerConfig
from .java_defaults import KNOWN_KEYS
from .persist import persist_text

log = logging.getLogger("rocketpy.broker")

#: keys an update may change (mergeIfExist): the Java beans' fields, and rocketpy's own settings
UPDATABLE_KEYS = KNOWN_KEYS | ROCKETPY_KEYS

#: AdminBrokerProcessor.initConfigBlackList's own keys, black-listed whatever ``configBlackList`` says
JAVA_BLACK_LISTED = frozenset({"brokerConfigPath", "rocketmqHome", "configBlackList"})

#: keys no remote update may change on our broker, though Java's would take them: each names a path, an
#: address to bind, the ACL file, a credential, TLS (keys, certificates, modes) or code to load. A changed
#: path or home was the road to CVE-2023-33246 on Java brokers; a saved bind address or ACL file takes
#: effect at the next start (``listenHost=0.0.0.0`` binds every interface, a missing ACL file stops it).
REMOTE_REFUSED_KEYS: dict[str, str] = {
    "storePathRootDir": "a path", "storePathCommitLog": "a path", "storePathDLedgerCommitLog": "a path",
    "readOnlyCommitLogStorePaths": "a path",
    "listenHost": "an address to bind", "listenPort": "a port to bind", "haListenPort": "a port to bind",
    "dLegerPeers": "the addresses the DLedger members bind",
    "aclPlainFile": "the ACL file", "adminCredential": "a credential",
    "messageStorePlugIn": "code a Java broker loads at start",
    **{key: "TLS" for key in TLS_KEYS},
}


def black_list(config: BrokerConfig) -> frozenset[str]:
    """The keys UPDATE_BROKER_CONFIG refuses: Java's (its own three and ``configBlackList``'s) and ours."""
    listed = {k.strip() for k in config.props.get("configBlackList", "").split(";")}
    # SECURITY_KEYS: the switches by which this broker is stricter than Java's: a request must not loosen them
    return frozenset(JAVA_BLACK_LISTED | REMOTE_REFUSED_KEYS.keys() | SECURITY_KEYS | listed) - {""}


def refused_key(changes: Mapping[str, str], black: frozenset[str]) -> str | None:
    """The first key of an update that is refused as a whole (NO_PERMISSION, as Java refuses a black-listed
    key): one black-listed, or a key or value with a line break (written to the file, it would be lines of
    its own at the next start: the way past the black list with ``deleteWhen=04\\nstorePathRootDir=/x``);
    every ``tls.*`` key is refused, whether the broker reads it or not."""
    for key, value in changes.items():
        if (key in black or key.startswith("tls.") or properties.has_line_break(key)
                or properties.has_line_break(value)):
            return key
    return None


def default_config_path(config: BrokerConfig) -> str:
    return os.path.join(config.store.store_path_root_dir, "config", "broker.properties")


class BrokerConfiguration:
    """Configuration.update / persist / getAllConfigsFormatString for one broker."""

    def __init__(self, config: BrokerConfig, store_path: str | None = None) -> None:
        self.config = config
        #: where persist() writes: the -c file, else :func:`default_config_path`
        self.store_path = os.path.abspath(store_path) if store_path else default_config_path(config)
        self.data_version = DataVersion()
        # Java's updateBrokerConfig is synchronized: one update (and its write) at a time
        self.lock = trio.Lock()

    def all_configs_text(self) -> str:
        """getAllConfigsFormatString: GET_BROKER_CONFIG's body, every Java key as ``key=value``."""
        return self.config.properties_text()

    def file_text(self) -> str:
        """What persist() writes: the Java keys (as GET_BROKER_CONFIG lists them), plus rocketpy's own and
        the tls.* keys the broker was given (Java keeps those outside its Configuration; dropping them would
        lose, say, the adminCredential or the bind address at the next start). Escaped by
        :func:`properties.store`, so that every value comes back as it was, never as lines of its own."""
        props = self.config.props
        extra = ROCKETPY_KEYS | TLS_KEYS
        known = {k: v for k, v in props.items() if k in KNOWN_KEYS}  # GET_BROKER_CONFIG's keys and order
        return properties.store({**known, **{k: v for k, v in props.items() if k in extra}})

    def update(self, changes: Mapping[str, str]) -> dict[str, str]:
        """Configuration.update without the write: the keys the configuration has take effect (unknown
        ones are ignored, logged), then the data version moves on; returns the keys applied.
        ConfigError, and nothing changed, for a value the broker cannot parse."""
        accepted = {k: v for k, v in changes.items() if k in UPDATABLE_KEYS}
        ignored = sorted(changes.keys() - accepted.keys())
        if ignored:
            log.warning("updateBrokerConfig ignores unknown keys: %s", ", ".join(ignored))
        if accepted:
            self.config.update(accepted)
        self.data_version.next_version()
        return accepted

    async def persist(self) -> bool:
        """MixAll.string2File of the whole configuration, from a worker thread; False (one line logged)
        when the disk refused it, the previous file left as it was."""
        text = self.file_text()  # the snapshot, on the trio thread
        return await trio.to_thread.run_sync(persist_text, self.store_path, text)
