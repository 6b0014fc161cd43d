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
from array import array
from typing import TYPE_CHECKING, TypeVar

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


#: the sample rings hold int64 pairs (Java's AtomicLong counters); a sum of hostile offsets is capped
_INT64_MAX = (1 << 63) - 1

# An item's state is two int64 arrays made at the item's creation and never resized: the counter, the
# rings' lengths and the minute and hour rings of (timestamp, value) pairs in one, the day ring in the
# other (each under pymalloc's 512-byte limit, so that they sit with the other small objects rather than
# in glibc's heap). Items live as long as their topic or group, and a ring that grew later (the hour ring
# every 10 min, the day ring every hour), or a new int object per sampling round, would be a small block
# allocated at a random later time: such blocks, spread through pymalloc's pools, keep them resident
# after the bursts that opened them are gone.
_VALUE, _LAST_HOUR, _LAST_DAY = 0, 1, 2
#: (slot of the ring's length, first slot of its pairs, pairs kept) in its array: minute 7 x 10 s and
#: hour 7 x 10 min in ``data``, day 25 x 1 h in ``day``, as Java's StatsItem samples
_MINUTE, _HOUR, _DAY = (3, 5, 7), (4, 19, 7), (0, 1, 25)
_DATA_SLOTS, _DAY_SLOTS = 19 + 2 * 7, 1 + 2 * 25


def _push(data: array[int], ring: tuple[int, int, int], at_ms: int, value: int) -> None:
    length_slot, first, keep = ring
    n = data[length_slot]
    if n == keep:  # full: the oldest pair goes
        data[first : first + 2 * keep - 2] = data[first + 2 : first + 2 * keep]
        n -= 1
    data[first + 2 * n] = at_ms
    data[first + 2 * n + 1] = value
    data[length_slot] = n + 1


def _snapshot(data: array[int], ring: tuple[int, int, int]) -> Snapshot:
    """Sum, TPS and average over a ring of (timestamp, value) samples: from its first to its last."""
    length_slot, first, _keep = ring
    n = data[length_slot]
    if not n:
        return Snapshot(0, 0.0, 0.0)
    last = first + 2 * (n - 1)
    total = data[last + 1] - data[first + 1]
    span = data[last] - data[first]
    tps = (total * 1000.0 / span) if span else float("nan")
    # each counted unit is one call here (the counters are totals, not increments with call counts)
    return Snapshot(total, tps, 1.0 if total > 0 else 0.0)


class StatsItem:
    """One counter and its minute (7 x 10 s), hour (7 x 10 min) and day (25 x 1 h) samples, in two int64
    arrays of fixed size (see _DATA_SLOTS); the baseline, a Python int set once, may be any size."""

    __slots__ = ("baseline", "data", "day")

    def __init__(self, start_ms: int, baseline: int) -> None:
        self.baseline = baseline
        self.data = data = array("q", bytes(8 * _DATA_SLOTS))
        self.day = array("q", bytes(8 * _DAY_SLOTS))
        data[_LAST_HOUR] = data[_LAST_DAY] = start_ms
        # each ring starts from a zero sample one period back, so the first round already has a span
        _push(data, _MINUTE, start_ms - SECONDS_PERIOD_MS, 0)
        _push(data, _HOUR, start_ms - MINUTES_PERIOD_MS, 0)
        _push(self.day, _DAY, start_ms - HOUR_PERIOD_MS, 0)

    @property
    def value(self) -> int:
        return self.data[_VALUE]

    def observe(self, total: int, at_ms: int) -> None:
        data = self.data
        data[_VALUE] = value = min(max(0, total - self.baseline), _INT64_MAX)
        _push(data, _MINUTE, at_ms, value)
        if at_ms - data[_LAST_HOUR] >= MINUTES_PERIOD_MS:
            _push(data, _HOUR, at_ms, value)
            data[_LAST_HOUR] = at_ms
        if at_ms - data[_LAST_DAY] >= HOUR_PERIOD_MS:
            _push(self.day, _DAY, at_ms, value)
            data[_LAST_DAY] = at_ms

    def in_minute(self) -> Snapshot:
        return _snapshot(self.data, _MINUTE)

    def in_hour(self) -> Snapshot:
        return _snapshot(self.data, _HOUR)

    def in_day(self) -> Snapshot:
        return _snapshot(self.day, _DAY)


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


K = TypeVar("K")
V = TypeVar("V")


def _without(table: dict[K, V], gone: list[K]) -> dict[K, V]:
    """``table`` without the keys ``gone``: in place, or as a new dict when they are most of it. A dict keeps
    the table it grew to whatever is deleted from it: after many topics or groups went, the marks' table (a
    mark per queue of each) stayed sized for the most there ever were (288 KiB after a fuzz run's clean-up)."""
    if 2 * len(gone) > len(table):
        dropped = set(gone)
        return {k: v for k, v in table.items() if k not in dropped}
    for k in gone:
        del table[k]
    return table


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

    def tps_group_get_nums(self, group: str, topic: str) -> float:
        """Java's tpsGroupGetNums: what ``group`` consumed of ``topic`` per second over the minute's samples
        (0 before the pair's first sample), the consumeTps of the consume stats."""
        item = self.items.get((GROUP_GET_NUMS, f"{topic}@{group}"))
        return 0.0 if item is None else item.in_minute().tps

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
        live: set[tuple[str, str]] = {(BROKER_PUT_NUMS, cluster), (BROKER_GET_NUMS, cluster)}
        for topic in store.topics():
            total = 0
            moved = self._put_bytes.setdefault(topic, 0)
            for q in store.queue_ids(topic):
                hi = max(0, store.get_max_offset_in_queue(topic, q))
                total += hi
                last = self._put_marks.get((topic, q))
                if last == hi:
                    continue  # kept as it is: a fresh int per round would be a block allocated every 10 s
                if last is not None and hi > last:
                    moved += units_size(store, topic, q, last, hi)
                self._put_marks[(topic, q)] = hi
            self._put_bytes[topic] = moved
            self.observe(TOPIC_PUT_NUMS, topic, total, at)
            self.observe(TOPIC_PUT_SIZE, topic, moved, at)
            live.update(((TOPIC_PUT_NUMS, topic), (TOPIC_PUT_SIZE, topic)))
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
            live.update(((GROUP_GET_NUMS, stats_key), (GROUP_GET_SIZE, stats_key)))
        self._forget_all_but(live)

    def _forget_all_but(self, live: set[tuple[str, str]]) -> None:
        """Drop the items (and their marks) of topics and groups the broker no longer has, as Java's
        onTopicDeleted and onGroupDeleted do. Java does so only with autoDeleteUnusedStats=true (default
        false); here always, so that a broker that saw many short-lived names keeps none of them. A group's
        items go with its offsets (deleteSubGroup with removeOffset), a topic's with its consume queues."""
        if len(self.items) == len(live):
            return
        self.items = _without(self.items, [k for k in self.items if k not in live])
        topics = {key for name, key in live if name == TOPIC_PUT_NUMS}
        groups = {key for name, key in live if name == GROUP_GET_NUMS}
        self._put_bytes = _without(self._put_bytes, [k for k in self._put_bytes if k not in topics])
        self._get_bytes = _without(self._get_bytes, [k for k in self._get_bytes if k not in groups])
        self._put_marks = _without(self._put_marks, [k for k in self._put_marks if k[0] not in topics])
        self._get_marks = _without(self._get_marks, [k for k in self._get_marks if f"{k[0]}@{k[1]}" not in groups])
