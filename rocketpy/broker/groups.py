"""Subscription groups (SubscriptionGroupManager) and consumer offsets (ConsumerOffsetManager).

Both are plain tables persisted as Java's config files: subscriptionGroup.json and
consumerOffset.json (``{"offsetTable":{"topic@group":{queueId:offset}}}``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping

from ..codecs.bodies import (
    ConsumerOffsetSerializeWrapper,
    DataVersion,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
)
from ..codecs.codes import MixAll
from ..javacompat.lang import java_split
from .persist import TableSnapshot, load_json, persist_json

log = logging.getLogger("rocketpy.broker")

_BUILTIN_GROUPS = (
    MixAll.TOOLS_CONSUMER_GROUP,
    MixAll.FILTERSRV_CONSUMER_GROUP,
    MixAll.SELF_TEST_CONSUMER_GROUP,
    MixAll.ONS_HTTP_PROXY_GROUP,
    MixAll.CID_ONSAPI_PULL_GROUP,
    MixAll.CID_ONSAPI_PERMISSION_GROUP,
    MixAll.CID_ONSAPI_OWNER_GROUP,
)


#: Validators.CHARACTER_MAX_LENGTH
GROUP_MAX_LENGTH = 255


def legal_group_name(group: str) -> bool:
    """1 to 255 characters of ``[%|a-zA-Z0-9_-]``: Java 5 auto-creates a group under no other name, and
    neither is "" one here (no client can use it, Validators.checkGroup; offsets filed under ``topic@``
    are never removed, as removeOffset splits the keys on "@")."""
    return 0 < len(group) <= GROUP_MAX_LENGTH and not MixAll.is_topic_or_group_illegal(group)


class SubscriptionGroupManager:
    def __init__(self, config_dir: str | None, *, auto_create: bool = True) -> None:
        self.path = os.path.join(config_dir, "subscriptionGroup.json") if config_dir else None
        self.auto_create = auto_create
        self.table: dict[str, SubscriptionGroupConfig] = {
            g: SubscriptionGroupConfig(group_name=g) for g in _BUILTIN_GROUPS
        }
        self.data_version = DataVersion()
        #: changed since last written; ``on_dirty`` (the broker's ConfigWriter) is told of each change
        self.dirty = False
        self.on_dirty: Callable[[], None] | None = None

    def load(self) -> None:
        if self.path is None:
            return
        doc = load_json(self.path, SubscriptionGroupWrapper)
        if doc is not None:
            self.table.update(doc.subscription_group_table)
            if doc.data_version is not None:
                self.data_version = doc.data_version

    def wrapper(self) -> SubscriptionGroupWrapper:
        return SubscriptionGroupWrapper(subscription_group_table=dict(self.table), data_version=self.data_version)

    def encode(self, **features: bool) -> bytes:
        """The table as SubscriptionGroupWrapper bytes (GET_ALL_SUBSCRIPTIONGROUP_CONFIG), written entry by
        entry from the live table, no copy of it: call it where the table cannot change meanwhile (on the
        trio thread, with no await until it returns)."""
        return SubscriptionGroupWrapper(subscription_group_table={}, data_version=self.data_version).encode_streamed(
            "subscription_group_table", self.table, **features
        )

    def snapshot(self) -> TableSnapshot:
        """subscriptionGroup.json's content as it is now, to be encoded in a worker thread. One copy of the dict
        (groups come and go meanwhile), the configs shared as they always were (a change replaces a config),
        and a copy of the data version, whose two fields next_version changes in place."""
        version = DataVersion(timestamp=self.data_version.timestamp, counter=self.data_version.counter)
        doc = SubscriptionGroupWrapper(subscription_group_table={}, data_version=version)
        return TableSnapshot(doc, "subscription_group_table", dict(self.table))

    def persist(self) -> None:
        """Write subscriptionGroup.json now (blocking: for tools and tests, not the event loop)."""
        if self.path is not None:
            self.dirty = False
            persist_json(self.path, self.snapshot())

    def mark_dirty(self) -> None:
        self.dirty = True
        if self.on_dirty is not None:
            self.on_dirty()

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """findSubscriptionGroupConfig: auto-created when allowed (or a CID_RMQ_SYS_ group), and only
        under a legal name, as Java 5 does: 4.9.8 kept (and persisted) a group for any string a pull,
        heartbeat or unregister carried, so random names grew the table without bound."""
        cfg = self.table.get(group)
        if cfg is None and (self.auto_create or MixAll.is_sys_consumer_group(group)) and legal_group_name(group):
            cfg = SubscriptionGroupConfig(group_name=group)
            self.table[group] = cfg
            log.info("auto create a subscription group, %s", group)
            self.data_version.next_version()
            self.mark_dirty()
        return cfg

    def update(self, cfg: SubscriptionGroupConfig) -> None:
        self.table[cfg.group_name or ""] = cfg
        self.data_version.next_version()
        self.mark_dirty()

    def delete(self, group: str) -> bool:
        if self.table.pop(group, None) is None:
            return False
        self.data_version.next_version()
        self.mark_dirty()
        return True


def _is_key_of(key: str, group: str, separator: str) -> bool:
    parts = java_split(key, separator)
    return len(parts) == 2 and parts[1] == group


class _CopiedWhenRead(Mapping[str, dict[int, int]]):
    """A table of queue maps whose maps are copied as they are read (see ConsumerOffsetManager.snapshot)."""

    def __init__(self, table: dict[str, dict[int, int]]) -> None:
        self.table = table

    def __getitem__(self, key: str) -> dict[int, int]:
        return dict(self.table[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)


class ConsumerOffsetManager:
    """Committed offsets by ``topic@group`` and queue id; persisted every flush interval."""

    SEPARATOR = "@"

    def __init__(self, config_dir: str | None) -> None:
        self.path = os.path.join(config_dir, "consumerOffset.json") if config_dir else None
        self.table: dict[str, dict[int, int]] = {}
        self.dirty = False

    def load(self) -> None:
        if self.path is None:
            return
        doc = load_json(self.path, ConsumerOffsetSerializeWrapper)
        if doc is not None:
            self.table = {k: dict(v) for k, v in doc.offset_table.items()}

    def wrapper(self) -> ConsumerOffsetSerializeWrapper:
        return ConsumerOffsetSerializeWrapper(offset_table={k: dict(v) for k, v in self.table.items()})

    def encode(self, **features: bool) -> bytes:
        """The table as ConsumerOffsetSerializeWrapper bytes (GET_ALL_CONSUMER_OFFSET), written entry by entry
        from the live table, no copy of it: call it where the table cannot change meanwhile (on the trio
        thread, with no await until it returns)."""
        return ConsumerOffsetSerializeWrapper(offset_table={}).encode_streamed("offset_table", self.table, **features)

    def snapshot(self) -> TableSnapshot:
        """consumerOffset.json's content, to be encoded in a worker thread: the table's entries as they are now
        (one copy of the dict: groups are removed meanwhile), each entry's queue map as it is when the worker
        reaches it. Commits change those maps in place, so the worker copies each before reading it; that copy
        of int keys and values runs in C without releasing the GIL, so it is never torn (Java writes its live
        ConcurrentHashMaps the same way, an entry as it is when reached), and copying one map at a time on
        the worker spares the event loop, and the heap, a copy of every map at once."""
        return TableSnapshot(
            ConsumerOffsetSerializeWrapper(offset_table={}), "offset_table", _CopiedWhenRead(dict(self.table))
        )

    def persist(self) -> None:
        if self.path is not None:
            persist_json(self.path, self.snapshot())
            self.dirty = False

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.table.setdefault(topic + self.SEPARATOR + group, {})[queue_id] = offset
        self.dirty = True

    def query(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1."""
        m = self.table.get(topic + self.SEPARATOR + group)
        if m is None:
            return -1
        return m.get(queue_id, -1)

    def offsets_of(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.table.get(topic + self.SEPARATOR + group, {}))

    def topics_of_group(self, group: str) -> set[str]:
        out = set()
        for key in self.table:
            topic, _, g = key.partition(self.SEPARATOR)
            if g == group:
                out.add(topic)
        return out

    def groups_of_topic(self, topic: str) -> set[str]:
        out = set()
        for key in self.table:
            t, _, g = key.partition(self.SEPARATOR)
            if t == topic:
                out.add(g)
        return out

    def remove_group(self, group: str) -> None:
        """ConsumerOffsetManager.removeOffset: the keys that split into exactly ``topic`` and ``group`` (Java
        keeps ``a@b@c`` and ``T@`` whatever group is named)."""
        for key in [k for k in self.table if _is_key_of(k, group, self.SEPARATOR)]:
            del self.table[key]
        self.dirty = True
