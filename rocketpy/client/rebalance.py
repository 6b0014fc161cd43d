"""Which queues this consumer owns (Java's RebalanceImpl), kept apart from pulling and consuming.

``Rebalancer.plan`` is pure: given the queues of a topic, the group's client ids and
a strategy it says which queues to start and which to stop. The consumers apply the
plan with their own I/O (offsets, locks, pull tasks).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..codecs.bodies import MessageQueue
from ..codecs.codes import MessageModel
from .allocate import AllocateStrategy, java_sort_key, mq_sort_key

log = logging.getLogger("rocketpy.client.rebalance")


@dataclass
class Plan:
    topic: str
    allocated: list[MessageQueue] = field(default_factory=list)
    to_add: list[MessageQueue] = field(default_factory=list)
    to_remove: list[MessageQueue] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.to_add or self.to_remove)


def allocate_for(
    strategy: AllocateStrategy,
    model: MessageModel | str,
    group: str,
    client_id: str,
    queues: Iterable[MessageQueue],
    cids: Iterable[str],
) -> list[MessageQueue]:
    """The queues of one topic this client should own: all of them when broadcasting, else its share
    of the sorted queues among the sorted client ids (as every Java consumer of the group computes it)."""
    mq_all = sorted(set(queues), key=mq_sort_key)
    if str(model) == MessageModel.BROADCASTING:
        return mq_all
    cid_all = sorted(set(cids), key=java_sort_key)
    if not mq_all or not cid_all:
        return []
    try:
        return strategy.allocate(group, client_id, mq_all, cid_all)
    except Exception as exc:  # a strategy bug must not stop the other topics
        log.error("allocate message queue exception. strategy name: %s: %s", strategy.name, exc)
        return []


def plan(topic: str, owned: Sequence[MessageQueue], allocated: Sequence[MessageQueue]) -> Plan:
    owned_set, alloc_set = set(owned), set(allocated)
    return Plan(
        topic=topic,
        allocated=list(allocated),
        to_add=[mq for mq in allocated if mq not in owned_set],
        to_remove=[mq for mq in owned if mq not in alloc_set],
    )
