"""The broker's topic table (TopicConfigManager): system topics, auto-creation, topics.json.

Plain state, no I/O besides the config file: the controller decides when to tell the
NameServers (``on_created`` fires after a topic is created while serving a client).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable

from ..codecs.bodies import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from ..codecs.codes import MixAll, PermName, TopicFilterType
from .persist import TableSnapshot, load_json, persist_json

log = logging.getLogger("rocketpy.broker")

PERM_RW = int(PermName.PERM_READ | PermName.PERM_WRITE)
PERM_INHERIT = int(PermName.PERM_INHERIT)
SCHEDULE_TOPIC_QUEUE_NUM = 18


def new_topic(name: str, read: int = 16, write: int = 16, perm: int = PERM_RW, sys_flag: int = 0) -> TopicConfig:
    return TopicConfig(
        topic_name=name,
        read_queue_nums=read,
        write_queue_nums=write,
        perm=perm,
        topic_filter_type=TopicFilterType.SINGLE_TAG,
        topic_sys_flag=sys_flag,
        order=False,
    )


class TopicConfigManager:
    def __init__(
        self,
        config_dir: str | None,
        *,
        cluster_name: str = "DefaultCluster",
        broker_name: str = "broker-a",
        default_queue_nums: int = 8,
        auto_create: bool = True,
        cluster_topic_enable: bool = True,
        broker_topic_enable: bool = True,
        trace_topic: str | None = None,
    ) -> None:
        self.path = os.path.join(config_dir, "topics.json") if config_dir else None
        self.auto_create = auto_create
        self.table: dict[str, TopicConfig] = {}
        self.data_version = DataVersion()
        self.on_created: Callable[[TopicConfig], None] | None = None
        #: changed since last written; ``on_dirty`` (the broker's ConfigWriter) is told of each change
        self.dirty = False
        self.on_dirty: Callable[[], None] | None = None
        self.system_topics: set[str] = set()
        self._add_system(MixAll.RMQ_SYS_SELF_TEST_TOPIC, 1, 1)
        if auto_create:
            self._add_system(
                MixAll.AUTO_CREATE_TOPIC_KEY_TOPIC,
                default_queue_nums,
                default_queue_nums,
                PERM_INHERIT | PERM_RW,
            )
        self._add_system(MixAll.RMQ_SYS_BENCHMARK_TOPIC, 1024, 1024)
        self._add_system(cluster_name, perm=PERM_INHERIT | (PERM_RW if cluster_topic_enable else 0))
        self._add_system(broker_name, 1, 1, PERM_INHERIT | (PERM_RW if broker_topic_enable else 0))
        self._add_system(MixAll.RMQ_SYS_OFFSET_MOVED_EVENT, 1, 1)
        self._add_system(MixAll.RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM, SCHEDULE_TOPIC_QUEUE_NUM)
        if trace_topic:
            self._add_system(trace_topic, 1, 1)
        self._add_system(MixAll.get_reply_topic(cluster_name), 1, 1)

    def _add_system(self, name: str, read: int = 16, write: int = 16, perm: int = PERM_RW) -> None:
        self.system_topics.add(name)
        self.table[name] = new_topic(name, read, write, perm)

    def is_system_topic(self, topic: str) -> bool:
        """TopicValidator.isSystemTopic as this broker's Java twin answers it: the fixed set and ``rmq_sys_*``,
        plus what its TopicConfigManager added (the cluster name, the broker name, the trace and reply topics)."""
        return MixAll.is_system_topic(topic) or topic in self.system_topics

    # -- persistence -------------------------------------------------------------------
    def load(self) -> None:
        if self.path is None:
            return
        doc = load_json(self.path, TopicConfigSerializeWrapper)
        if doc is None:
            return
        self.table.update(doc.topic_config_table)
        if doc.data_version is not None:
            self.data_version = doc.data_version

    def persist(self) -> None:
        """Write topics.json now (blocking: for tools and tests, not the event loop)."""
        if self.path is not None:
            self.dirty = False
            persist_json(self.path, self.snapshot())

    def mark_dirty(self) -> None:
        self.dirty = True
        if self.on_dirty is not None:
            self.on_dirty()

    def wrapper(self) -> TopicConfigSerializeWrapper:
        return TopicConfigSerializeWrapper(topic_config_table=dict(self.table), data_version=self.data_version)

    def encode(self, **features: bool) -> bytes:
        """The table as TopicConfigSerializeWrapper bytes (GET_ALL_TOPIC_CONFIG), written entry by entry from
        the live table, no copy of it: call it where the table cannot change meanwhile (on the trio thread,
        with no await until it returns)."""
        return TopicConfigSerializeWrapper(topic_config_table={}, data_version=self.data_version).encode_streamed(
            "topic_config_table", self.table, **features
        )

    def snapshot(self) -> TableSnapshot:
        """topics.json's content as it is now, to be encoded in a worker thread. One copy of the dict (topics
        come and go meanwhile), the configs shared as they always were (a change replaces a config, except
        TBW102's perm fixed in place, which the next write carries anyway), and a copy of the data version,
        whose two fields next_version changes in place."""
        version = DataVersion(timestamp=self.data_version.timestamp, counter=self.data_version.counter)
        doc = TopicConfigSerializeWrapper(topic_config_table={}, data_version=version)
        return TableSnapshot(doc, "topic_config_table", dict(self.table))

    # -- queries -----------------------------------------------------------------------
    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def is_order(self, topic: str) -> bool:
        tc = self.table.get(topic)
        return bool(tc and tc.order)

    # -- changes -----------------------------------------------------------------------
    def _created(self, tc: TopicConfig) -> TopicConfig:
        self.table[tc.topic_name or ""] = tc
        self.data_version.next_version()
        self.mark_dirty()
        if self.on_created is not None:
            self.on_created(tc)
        return tc

    def create_in_send(
        self, topic: str, default_topic: str, remote: str, client_queue_nums: int, sys_flag: int
    ) -> TopicConfig | None:
        """createTopicInSendMessageMethod: a new topic modelled on an inheritable default topic."""
        tc = self.table.get(topic)
        if tc is not None:
            return tc
        default = self.table.get(default_topic)
        if default is None:
            log.warning(
                "create new topic failed, because the default topic[%s] not exist. producer:[%s]", default_topic, remote
            )
            return None
        if default_topic == MixAll.AUTO_CREATE_TOPIC_KEY_TOPIC and not self.auto_create:
            default.perm = PERM_RW
        if not PermName.is_inherited(default.perm):
            log.warning(
                "create new topic failed, because the default topic[%s] has no perm [%d] producer:[%s]",
                default_topic,
                default.perm,
                remote,
            )
            return None
        nums = max(0, min(client_queue_nums, default.write_queue_nums))
        tc = new_topic(topic, nums, nums, default.perm & ~PERM_INHERIT, sys_flag)
        tc.topic_filter_type = default.topic_filter_type
        log.info("create new topic by default topic:[%s] config:[%s] producer:[%s]", default_topic, tc, remote)
        return self._created(tc)

    def create_in_send_back(self, topic: str, queue_nums: int, perm: int, sys_flag: int) -> TopicConfig:
        """createTopicInSendMessageBackMethod: retry/DLQ topics and system queues."""
        tc = self.table.get(topic)
        if tc is not None:
            return tc
        return self._created(new_topic(topic, queue_nums, queue_nums, perm, sys_flag))

    def update(self, tc: TopicConfig) -> None:
        """UPDATE_AND_CREATE_TOPIC: replace or add, without a register (the caller does it)."""
        self.table[tc.topic_name or ""] = tc
        self.data_version.next_version()
        self.mark_dirty()

    def delete(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        self.data_version.next_version()
        self.mark_dirty()
        return True
