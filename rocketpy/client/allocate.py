"""Queue allocation among the consumers of a group: the Java strategies, sans-IO.

Every consumer of a group computes its own share from the same sorted lists, so a
Python consumer must compute exactly what a Java consumer would, or queues would
be consumed twice or not at all. Inputs are lists in the caller's order (the
rebalancer sorts them first, as Java does); outputs keep the input order.
"""

from __future__ import annotations

import hashlib
import logging
from bisect import bisect_left
from collections.abc import Callable, Collection, Sequence
from typing import Protocol

from ..codecs.bodies import MessageQueue

log = logging.getLogger("rocketpy.client.rebalance")


class AllocateStrategy(Protocol):
    name: str

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]: ...


def _check(group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> bool:
    if not current_cid:
        raise ValueError("currentCID is empty")
    if not mq_all:
        raise ValueError("mqAll is null or mqAll empty")
    if not cid_all:
        raise ValueError("cidAll is null or cidAll empty")
    if current_cid not in cid_all:
        log.info("[BUG] ConsumerGroup: %s The consumerId: %s not in cidAll: %s", group, current_cid, cid_all)
        return False
    return True


class AllocateAveragely:
    """Contiguous blocks; the first ``len(mq) % len(cid)`` consumers get one more queue."""

    name = "AVG"

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(group, current_cid, mq_all, cid_all):
            return []
        n_mq, n_cid = len(mq_all), len(cid_all)
        index = list(cid_all).index(current_cid)
        mod = n_mq % n_cid
        if n_mq <= n_cid:
            size = 1
        elif mod > 0 and index < mod:
            size = n_mq // n_cid + 1
        else:
            size = n_mq // n_cid
        start = index * size if (mod > 0 and index < mod) else index * size + mod
        count = min(size, n_mq - start)
        return [mq_all[(start + i) % n_mq] for i in range(max(count, 0))]


class AllocateAveragelyByCircle:
    """Round robin: queue i goes to consumer ``i % len(cid)``."""

    name = "AVG_BY_CIRCLE"

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(group, current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        return [mq_all[i] for i in range(index, len(mq_all)) if i % len(cid_all) == index]


def md5_hash(key: str) -> int:
    """The router's default hash: the first four MD5 bytes as an unsigned big-endian number."""
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


def mq_string(mq: MessageQueue) -> str:
    """MessageQueue.toString(), the key a queue is hashed by."""
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


class HashRing:
    """A consistent-hash ring of named nodes with virtual replicas ``name-<i>``."""

    def __init__(self, nodes: Sequence[str], virtual_nodes: int, hash_fn: Callable[[str], int] = md5_hash) -> None:
        if virtual_nodes < 0:
            raise ValueError(f"illegal virtual node counts :{virtual_nodes}")
        self.hash_fn = hash_fn
        self._ring: dict[int, str] = {}
        for node in nodes:
            # a repeated node continues its replica numbering, as the Java router counts existing replicas
            existing = sum(1 for owner in self._ring.values() if owner == node)
            for i in range(virtual_nodes):
                self._ring[hash_fn(f"{node}-{i + existing}")] = node  # a collision: the later node wins
        self._keys = sorted(self._ring)

    def route(self, key: str) -> str | None:
        if not self._keys:
            return None
        pos = bisect_left(self._keys, self.hash_fn(key))
        return self._ring[self._keys[pos if pos < len(self._keys) else 0]]


class AllocateConsistentHash:
    """Each queue goes to the consumer whose virtual node follows the queue's hash on the ring."""

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_nodes: int = 10, hash_fn: Callable[[str], int] | None = None) -> None:
        if virtual_nodes < 0:
            raise ValueError(f"illegal virtualNodeCnt :{virtual_nodes}")
        self.virtual_nodes = virtual_nodes
        self.hash_fn = hash_fn or md5_hash

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(group, current_cid, mq_all, cid_all):
            return []
        ring = HashRing(cid_all, self.virtual_nodes, self.hash_fn)
        return [mq for mq in mq_all if ring.route(mq_string(mq)) == current_cid]


class AllocateByConfig:
    """A fixed list of queues, whoever asks."""

    name = "CONFIG"

    def __init__(self, queues: Sequence[MessageQueue]) -> None:
        self.queues = list(queues)

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return list(self.queues)


class AllocateByMachineRoom:
    """Queues of brokers named ``<idc>@<name>`` in the consumer's data centers, shared out in blocks."""

    name = "MACHINE_ROOM"

    def __init__(self, consumer_idcs: Collection[str]) -> None:
        self.consumer_idcs = set(consumer_idcs)

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(group, current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        picked = []
        for mq in mq_all:
            parts = (mq.broker_name or "").split("@")
            if len(parts) == 2 and parts[0] in self.consumer_idcs:
                picked.append(mq)
        per, rem = divmod(len(picked), len(cid_all))
        result = picked[per * index : per * index + per]
        if rem > index:
            result.append(picked[index + per * len(cid_all)])
        return result


class AllocateMachineRoomNearby:
    """Queues of the consumer's own machine room first; rooms without consumers are shared by all."""

    def __init__(
        self,
        inner: AllocateStrategy,
        broker_room: Callable[[MessageQueue], str],
        consumer_room: Callable[[str], str],
    ) -> None:
        self.inner = inner
        self.broker_room = broker_room
        self.consumer_room = consumer_room
        self.name = f"MACHINE_ROOM_NEARBY-{inner.name}"

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(group, current_cid, mq_all, cid_all):
            return []
        mq_by_room: dict[str, list[MessageQueue]] = {}
        for mq in mq_all:
            room = self.broker_room(mq)
            if not room:
                raise ValueError(f"Machine room is null for mq {mq_string(mq)}")
            mq_by_room.setdefault(room, []).append(mq)
        cid_by_room: dict[str, list[str]] = {}
        for cid in cid_all:
            room = self.consumer_room(cid)
            if not room:
                raise ValueError(f"Machine room is null for consumer id {cid}")
            cid_by_room.setdefault(room, []).append(cid)
        result: list[MessageQueue] = []
        mine = self.consumer_room(current_cid)
        local = mq_by_room.pop(mine, None)
        if local:
            result.extend(self.inner.allocate(group, current_cid, local, cid_by_room.get(mine, [])))
        # rooms are visited in sorted order (Java keeps them in a TreeMap)
        for room in sorted(mq_by_room, key=java_sort_key):
            if room not in cid_by_room:
                result.extend(self.inner.allocate(group, current_cid, mq_by_room[room], cid_all))
        return result


def java_sort_key(text: str) -> bytes:
    """String.compareTo order (UTF-16 code units), which differs from Python's beyond the BMP."""
    return text.encode("utf-16-be", "surrogatepass")


def mq_sort_key(mq: MessageQueue) -> tuple[bytes, bytes, int]:
    """MessageQueue.compareTo: topic, broker name, queue id."""
    return (java_sort_key(mq.topic or ""), java_sort_key(mq.broker_name or ""), mq.queue_id)


STRATEGIES: dict[str, Callable[[], AllocateStrategy]] = {
    "AVG": AllocateAveragely,
    "AVG_BY_CIRCLE": AllocateAveragelyByCircle,
    "CONSISTENT_HASH": AllocateConsistentHash,
}


def strategy_by_name(name: str) -> AllocateStrategy:
    """A strategy from its Java getName() (averagely, by circle, consistent hash)."""
    try:
        return STRATEGIES[name.upper()]()
    except KeyError:
        raise ValueError(f"unknown allocation strategy {name!r}; known: {', '.join(STRATEGIES)}") from None
