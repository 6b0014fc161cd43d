"""MessageStoreConfig: the store settings of a 4.9.8 broker, with Java's defaults.

Attribute names are the snake_case forms of the Java property names, so a broker
``.conf`` file (``mappedFileSizeCommitLog = 4194304``) maps onto this class with
:meth:`MessageStoreConfig.from_properties`. Only settings the Python store acts on
are modelled; unknown keys are ignored, as Java ignores keys of other config beans.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..codecs.codes import BrokerRole, FlushDiskType
from ..codecs.store_records import CQ_STORE_UNIT_SIZE
from ..javacompat.properties import loads

__all__ = [
    "BrokerRole",
    "DelayLevels",
    "FlushDiskType",
    "MessageStoreConfig",
    "parse_properties_text",
]

OS_PAGE_SIZE = 4096  # MappedFile.OS_PAGE_SIZE: flush/commit "pages" are counted in 4 KiB units


def _norm(name: str) -> str:
    # Java names have acronyms (checkCRCOnRecover): compare case- and underscore-blind.
    return name.replace("_", "").lower()


def _default_root() -> str:
    return os.path.join(os.path.expanduser("~"), "store")


@dataclass
class MessageStoreConfig:
    """Store settings; defaults are those of MessageStoreConfig.java in 4.9.8."""

    store_path_root_dir: str = field(default_factory=_default_root)
    store_path_commit_log: str | None = None  # None: <root>/commitlog
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300000 * CQ_STORE_UNIT_SIZE
    flush_interval_commit_log: int = 500  # ms, ASYNC_FLUSH background flush period
    flush_commit_log_timed: bool = True
    flush_interval_consume_queue: int = 1000
    clean_resource_interval: int = 10000
    delete_commit_log_files_interval: int = 100
    delete_consume_queue_files_interval: int = 100
    destroy_maped_file_interval_forcibly: int = 1000 * 120
    redelete_hanged_file_interval: int = 1000 * 120
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    file_reserved_time: int = 72  # hours
    max_message_size: int = 1024 * 1024 * 4
    check_crc_on_recover: bool = True
    flush_commit_log_least_pages: int = 4
    flush_consume_queue_least_pages: int = 2
    flush_commit_log_thorough_interval: int = 1000 * 10
    flush_consume_queue_thorough_interval: int = 1000 * 60
    max_transfer_bytes_on_message_in_memory: int = 1024 * 256
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 1024 * 64
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    message_index_enable: bool = True
    max_hash_slot_num: int = 5000000
    max_index_num: int = 5000000 * 4
    max_msgs_num_batch: int = 64
    message_index_safe: bool = False
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    sync_flush_timeout: int = 1000 * 5
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    clean_file_forcibly_enable: bool = True
    offset_check_in_slave: bool = False
    duplication_enable: bool = False
    disk_fall_recorded: bool = True
    default_query_max_num: int = 32
    # HA (HAService / HAConnection / HAClient); BrokerStartup moves haListenPort to listenPort + 1
    ha_listen_port: int = 10912
    ha_send_heartbeat_interval: int = 1000 * 5
    ha_housekeeping_interval: int = 1000 * 20
    ha_transfer_batch_size: int = 1024 * 32
    ha_master_address: str | None = None
    ha_slave_fallbehind_max: int = 1024 * 1024 * 256
    slave_timeout: int = 3000  # ms a SYNC_MASTER send waits for the slave (CommitLog.submitReplicaRequest)
    # DLedger (Raft) CommitLog: the members of one brokerName replicate entries holding the records
    enable_d_leger_commit_log: bool = False
    d_leger_group: str | None = None
    d_leger_peers: str | None = None
    d_leger_self_id: str | None = None
    preferred_leader_id: str | None = None
    enable_batch_push: bool = False
    store_path_d_ledger_commit_log: str | None = None  # None: <root>/dledger-<selfId>/data

    # -- derived paths (StorePathConfigHelper / BrokerPathConfigHelper) ----------

    @property
    def commit_log_dir(self) -> str:
        return self.store_path_commit_log or os.path.join(self.store_path_root_dir, "commitlog")

    @property
    def dledger_dir(self) -> str:
        """DLedgerConfig.getDefaultPath: ``currterm``, ``checkpoint``, ``index/`` (and ``data/`` by default)."""
        return os.path.join(self.store_path_root_dir, f"dledger-{self.d_leger_self_id}")

    @property
    def consume_queue_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def index_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "index")

    @property
    def checkpoint_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "checkpoint")

    @property
    def abort_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "abort")

    @property
    def lock_path(self) -> str:
        return os.path.join(self.store_path_root_dir, "lock")

    @property
    def config_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "config")

    @property
    def consume_queue_file_size(self) -> int:
        """getMappedFileSizeConsumeQueue: rounded up to whole 20-byte units."""
        units = -(-self.mapped_file_size_consume_queue // CQ_STORE_UNIT_SIZE)
        return units * CQ_STORE_UNIT_SIZE

    # -- construction from a broker config file --------------------------------

    @classmethod
    def from_properties(cls, props: Mapping[str, str] | str, **overrides: Any) -> MessageStoreConfig:
        """Build from Java property names (``mappedFileSizeCommitLog`` ...) or a ``.conf`` text."""
        if isinstance(props, str):
            props = parse_properties_text(props)
        kinds = {_norm(f.name): f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for key, raw in props.items():
            f = kinds.get(_norm(key.strip()))
            if f is None:
                continue
            try:
                values[f.name] = _convert(f.type, raw.strip())
            except ValueError as exc:
                # name the key: this ends up as the one line a bad broker.conf is refused with
                raise ValueError(f"{key.strip()}={raw.strip()!r}: {exc}") from None
        values.update(overrides)
        return cls(**values)


def _convert(kind: Any, raw: str) -> Any:
    kind = str(kind)
    if kind.startswith("bool"):
        return raw.lower() == "true"  # Boolean.parseBoolean
    if kind.startswith("int"):
        return int(raw)
    if "BrokerRole" in kind:
        return BrokerRole(raw)
    if "FlushDiskType" in kind:
        return FlushDiskType(raw)
    return raw


def parse_properties_text(text: str) -> dict[str, str]:
    """A java.util.Properties text (escapes, continuation lines): the one reader every config file goes through."""
    return loads(text)


_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


class DelayLevels:
    """The delay-level table of ScheduleMessageService (``messageDelayLevel``).

    Level n (1-based) maps to queue n-1 of SCHEDULE_TOPIC_XXXX; its delay is used as
    the ConsumeQueue tagsCode (deliver time) of scheduled records.
    """

    def __init__(self, spec: str) -> None:
        self.table: dict[int, int] = {}
        for i, item in enumerate(spec.split(" ")):
            if item.endswith("ms"):  # rocketpy extension (Java knows s m h d): sub-second levels for tests
                self.table[i + 1] = int(item[:-2])
                continue
            self.table[i + 1] = int(item[:-1]) * _UNIT_MS[item[-1]]
        self.max_level = max(self.table, default=0)

    def deliver_timestamp(self, level: int, store_timestamp: int) -> int:
        """computeDeliverTimestamp: store time plus the level's delay (1 s for an unknown level)."""
        delay = self.table.get(level)
        return store_timestamp + (delay if delay is not None else 1000)

    @staticmethod
    def queue_id(level: int) -> int:
        return level - 1

    @staticmethod
    def level_of_queue(queue_id: int) -> int:
        return queue_id + 1
