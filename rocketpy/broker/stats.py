"""Broker statistics for VIEW_BROKER_STATS_DATA (BrokerStatsManager's StatsItems).

Java counts every put and get into named items (TOPIC_PUT_NUMS by topic,
GROUP_GET_NUMS by ``topic@group``, BROKER_PUT_NUMS / BROKER_GET_NUMS by cluster name)
and samples each item every 10 s, 10 min and hour; a view answers the sum, TPS and
average of the last minute, hour and day from the first and last samples.

Here nothing is added to the send/pull paths: the sampler reads totals that already
exist, the broker's put/get counters, each topic's consume-queue lengths and each
group's committed offsets, and keeps the same three sample lists. The first sample
of an item is its baseline, so traffic before the item was first seen is not counted.
The byte items (TOPIC_PUT_SIZE, GROUP_GET_SIZE) add the sizes in the consume-queue
units the queue lengths or the committed offsets moved over since the last round.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..clock import now_ms
from ..codecs.store_records import CONSUME_QUEUE_UNIT, CQ_STORE_UNIT_SIZE

if TYPE_CHECKING:
    from .controller import BrokerController

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
BROKER_PUT_NUMS = "BROKER_PUT_NUMS"
BROKER_GET_NUMS = "BROKER_GET_NUMS"
TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE"
GROUP_GET_SIZE = "GROUP_GET_SIZE"
_UNIT = CQ_STORE_UNIT_SIZE
_READ_BYTES = 1 << 20

SECONDS_PERIOD_MS = 10_000
MINUTES_PERIOD_MS = 600_000
HOUR_PERIOD_MS = 3_600_000


@dataclasses.dataclass(frozen=True)
class Snapshot:
    sum: int
    tps: float
    avgpt: float


@dataclasses.dataclass
class _Sample:
    timestamp: int
    times: int
    value: int


class StatsItem:
    """One counter and its minute (7 x 10 s), hour (7 x 10 min) and day (25 x 1 h) samples."""

    def __init__(self, start_ms: int, baseline: int) -> None:
        self.baseline = baseline
        self.value = 0
        self.minute: deque[_Sample] = deque([_Sample(start_ms - SECONDS_PERIOD_MS, 0, 0)], maxlen=7)
        self.hour: deque[_Sample] = deque([_Sample(start_ms - MINUTES_PERIOD_MS, 0, 0)], maxlen=7)
        self.day: deque[_Sample] = deque([_Sample(start_ms - HOUR_PERIOD_MS, 0, 0)], maxlen=25)
        self.last_hour_ms = start_ms
        self.last_day_ms = start_ms

    def observe(self, total: int, at_ms: int) -> None:
        self.value = max(0, total - self.baseline)
        sample = _Sample(at_ms, self.value, self.value)
        self.minute.append(sample)
        if at_ms - self.last_hour_ms >= MINUTES_PERIOD_MS:
            self.hour.append(sample)
            self.last_hour_ms = at_ms
        if at_ms - self.last_day_ms >= HOUR_PERIOD_MS:
            self.day.append(sample)
            self.last_day_ms = at_ms

    @staticmethod
    def _compute(samples: Iterable[_Sample]) -> Snapshot:
        items = list(samples)
        if not items:
            return Snapshot(0, 0.0, 0.0)
        first, last = items[0], items[-1]
        total = last.value - first.value
        span = last.timestamp - first.timestamp
        tps = (total * 1000.0 / span) if span else float("nan")
        times = last.times - first.times
        return Snapshot(total, tps, total / times if times > 0 else 0.0)

    def in_minute(self) -> Snapshot:
        return self._compute(self.minute)

    def in_hour(self) -> Snapshot:
        return self._compute(self.hour)

    def in_day(self) -> Snapshot:
        return self._compute(self.day)


def units_size(store: object, topic: str, queue_id: int, start: int, end: int) -> int:
    """The bytes of the messages at queue offsets [start, end) (their consume-queue unit sizes)."""
    find = getattr(store, "find_consume_queue", None)
    cq = find(topic, queue_id) if find is not None else None
    if cq is None:
        return 0
    total = 0
    index = max(start, cq.min_offset_in_queue)
    while index < end:
        raw = cq.read_units(index, min(_READ_BYTES, (end - index) * _UNIT))
        if not raw:
            break
        count = len(raw) // _UNIT
        total += sum(size for _, size, _ in CONSUME_QUEUE_UNIT.iter_unpack(raw[: count * _UNIT]))
        index += count
    return total


class BrokerStatsManager:
    def __init__(self) -> None:
        self.items: dict[tuple[str, str], StatsItem] = {}
        # last queue offsets seen and the running byte totals of the size items
        self._put_marks: dict[tuple[str, int], int] = {}
        self._get_marks: dict[tuple[str, str, int], int] = {}
        self._put_bytes: dict[str, int] = {}
        self._get_bytes: dict[str, int] = {}

    def get(self, name: str | None, key: str | None) -> StatsItem | None:
        return self.items.get((name or "", key or ""))

    def observe(self, name: str, key: str, total: int, at_ms: int) -> None:
        item = self.items.get((name, key))
        if item is None:
            self.items[(name, key)] = item = StatsItem(at_ms, total)
        item.observe(total, at_ms)

    def sample(self, broker: BrokerController, at_ms: int | None = None) -> None:
        """One 10-second sampling round over everything the broker can count."""
        at = now_ms() if at_ms is None else at_ms
        cluster = broker.config.broker_cluster_name
        self.observe(BROKER_PUT_NUMS, cluster, broker.stats["put"], at)
        self.observe(BROKER_GET_NUMS, cluster, broker.stats["get"], at)
        store = broker.store
        for topic in store.topics():
            total = 0
            moved = self._put_bytes.setdefault(topic, 0)
            for q in store.queue_ids(topic):
                hi = max(0, store.get_max_offset_in_queue(topic, q))
                total += hi
                last = self._put_marks.get((topic, q))
                if last is not None and hi > last:
                    moved += units_size(store, topic, q, last, hi)
                self._put_marks[(topic, q)] = hi
            self._put_bytes[topic] = moved
            self.observe(TOPIC_PUT_NUMS, topic, total, at)
            self.observe(TOPIC_PUT_SIZE, topic, moved, at)
        for key, offsets in list(broker.offsets.table.items()):
            topic, _, group = key.partition("@")
            stats_key = f"{topic}@{group}"
            moved = self._get_bytes.setdefault(stats_key, 0)
            for q, off in list(offsets.items()):
                last = self._get_marks.get((topic, group, q))
                if last is not None and off > last:
                    moved += units_size(store, topic, q, last, off)
                self._get_marks[(topic, group, q)] = off  # a reset moves the mark back without counting
            self._get_bytes[stats_key] = moved
            self.observe(GROUP_GET_NUMS, stats_key, sum(max(0, o) for o in offsets.values()), at)
            self.observe(GROUP_GET_SIZE, stats_key, moved, at)
