"""Who is connected: consumer groups (ConsumerManager) and producer groups (ProducerManager).

A client is known by its connection; heartbeats refresh it, UNREGISTER_CLIENT or a
closed connection remove it, and the liveness scan drops one silent for 120 s. Group
membership changes are reported through ``on_change(group, connections)`` so the
broker can send NOTIFY_CONSUMER_IDS_CHANGED (the managers do no I/O themselves).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from typing import Any

from ..clock import now_ms
from ..codecs.bodies import SubscriptionData
from ..codecs.codes import ConsumeFromWhere, ConsumeType, LanguageCode, MessageModel

log = logging.getLogger("rocketpy.broker")

CHANNEL_EXPIRED_TIMEOUT_MS = 120_000


@dataclasses.dataclass(eq=False)
class ClientChannelInfo:
    """One client on one connection (Java's ClientChannelInfo)."""

    channel: Any  # the remoting Connection
    client_id: str
    language: LanguageCode | int | str
    version: int
    last_update: int = dataclasses.field(default_factory=now_ms)

    @property
    def addr(self) -> str:
        return str(getattr(self.channel, "remote_addr", ""))


@dataclasses.dataclass(eq=False)
class ConsumerGroupInfo:
    group: str
    consume_type: ConsumeType | None
    message_model: MessageModel | None
    consume_from_where: ConsumeFromWhere | None
    channels: dict[Any, ClientChannelInfo] = dataclasses.field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = dataclasses.field(default_factory=dict)
    last_update: int = dataclasses.field(default_factory=now_ms)

    def update_channel(
        self,
        info: ClientChannelInfo,
        consume_type: ConsumeType | None,
        model: MessageModel | None,
        where: ConsumeFromWhere | None,
    ) -> bool:
        self.consume_type, self.message_model, self.consume_from_where = consume_type, model, where
        old = self.channels.get(info.channel)
        updated = False
        if old is None:
            self.channels[info.channel] = info
            old = info
            updated = True
        elif old.client_id != info.client_id:
            self.channels[info.channel] = info
            old = info
        self.last_update = now_ms()
        old.last_update = self.last_update
        return updated

    def update_subscriptions(self, subs: Iterable[SubscriptionData]) -> bool:
        updated = False
        subs = list(subs)
        for sub in subs:
            topic = sub.topic or ""
            old = self.subscriptions.get(topic)
            if old is None:
                self.subscriptions[topic] = sub
                updated = True
            elif sub.sub_version > old.sub_version:
                self.subscriptions[topic] = sub
        wanted = {s.topic for s in subs}
        for topic in [t for t in self.subscriptions if t not in wanted]:
            del self.subscriptions[topic]
            updated = True
        self.last_update = now_ms()
        return updated

    @property
    def client_ids(self) -> list[str]:
        return [c.client_id for c in self.channels.values()]

    def find_by_client_id(self, client_id: str) -> ClientChannelInfo | None:
        for info in self.channels.values():
            if info.client_id == client_id:
                return info
        return None


ChangeHook = Callable[[str, list[Any]], None]


class ConsumerManager:
    def __init__(self, on_change: ChangeHook | None = None) -> None:
        self.groups: dict[str, ConsumerGroupInfo] = {}
        self.on_change = on_change
        #: called with (group, topics) when a group (re)registers: lets filters update
        self.on_register: Callable[[str, list[SubscriptionData]], None] | None = None
        self.on_unregister: Callable[[str], None] | None = None

    def _changed(self, group: str, info: ConsumerGroupInfo) -> None:
        if self.on_change is not None:
            self.on_change(group, list(info.channels))

    def get(self, group: str) -> ConsumerGroupInfo | None:
        return self.groups.get(group)

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.groups.get(group)
        return None if info is None else info.subscriptions.get(topic)

    def register(
        self,
        group: str,
        info: ClientChannelInfo,
        consume_type: ConsumeType | None,
        model: MessageModel | None,
        where: ConsumeFromWhere | None,
        subs: list[SubscriptionData],
        notify: bool,
    ) -> bool:
        g = self.groups.get(group)
        if g is None:
            g = self.groups[group] = ConsumerGroupInfo(group, consume_type, model, where)
        r1 = g.update_channel(info, consume_type, model, where)
        r2 = g.update_subscriptions(subs)
        if (r1 or r2) and notify:
            self._changed(group, g)
        if self.on_register is not None:
            self.on_register(group, subs)
        return r1 or r2

    def unregister(self, group: str, channel: Any, notify: bool) -> None:
        g = self.groups.get(group)
        if g is None:
            return
        g.channels.pop(channel, None)
        if not g.channels:
            del self.groups[group]
            if self.on_unregister is not None:
                self.on_unregister(group)
        if notify:
            self._changed(group, g)

    def channel_closed(self, channel: Any) -> None:
        for group, g in list(self.groups.items()):
            if g.channels.pop(channel, None) is None:
                continue
            if not g.channels:
                del self.groups[group]
                if self.on_unregister is not None:
                    self.on_unregister(group)
            self._changed(group, g)

    def scan_not_active(self, now: int | None = None) -> list[Any]:
        """Drop channels silent for 120 s; returns them so the caller can close them."""
        now = now_ms() if now is None else now
        gone = []
        for group, g in list(self.groups.items()):
            for ch, info in list(g.channels.items()):
                if now - info.last_update > CHANNEL_EXPIRED_TIMEOUT_MS:
                    log.warning("SCAN: remove expired channel %s from consumer group %s", info.addr, group)
                    del g.channels[ch]
                    gone.append(ch)
            if not g.channels:
                del self.groups[group]
        return gone

    def groups_of_topic(self, topic: str) -> list[str]:
        return [name for name, g in self.groups.items() if topic in g.subscriptions]


class ProducerManager:
    def __init__(self) -> None:
        self.groups: dict[str, dict[Any, ClientChannelInfo]] = {}
        self.by_client_id: dict[str, Any] = {}
        self._rr = 0

    def register(self, group: str, info: ClientChannelInfo) -> None:
        table = self.groups.setdefault(group, {})
        old = table.get(info.channel)
        if old is None:
            table[info.channel] = info
            old = info
        old.last_update = now_ms()
        self.by_client_id[info.client_id] = info.channel

    def unregister(self, group: str, channel: Any) -> None:
        table = self.groups.get(group)
        if table is None:
            return
        info = table.pop(channel, None)
        if info is not None and self.by_client_id.get(info.client_id) is channel:
            del self.by_client_id[info.client_id]
        if not table:
            del self.groups[group]

    def channel_closed(self, channel: Any) -> None:
        for group in list(self.groups):
            self.unregister(group, channel)
        # a connection that heartbeated under several client ids left all of them here (unregister
        # drops the id of the entry it removes); Java's doChannelCloseEvent has the same gap
        for client_id in [cid for cid, ch in self.by_client_id.items() if ch is channel]:
            del self.by_client_id[client_id]

    def scan_not_active(self, now: int | None = None) -> list[Any]:
        now = now_ms() if now is None else now
        gone = []
        for group, table in list(self.groups.items()):
            for ch, info in list(table.items()):
                if now - info.last_update > CHANNEL_EXPIRED_TIMEOUT_MS:
                    gone.append(ch)
                    self.unregister(group, ch)
        return gone

    def available_channel(self, group: str) -> Any | None:
        """A live connection of the group, taken in turn (getAvailableChannel)."""
        table = self.groups.get(group)
        if not table:
            return None
        live = [ch for ch in table if not getattr(ch, "closed", False)]
        if not live:
            return None
        self._rr += 1
        return live[self._rr % len(live)]

    def find_channel(self, client_id: str) -> Any | None:
        return self.by_client_id.get(client_id)
