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
SNDBCK_PUT_NUMS (by ``topic@group``, the topic the message was first sent to) is the one
total counted where it happens: a consumer's send-back, a path that is not hot.
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
SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS"
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
_INT64_MIN = -(1 << 63)

# Every item's state is one row of int64 slots in a single array that the manager owns (StatsRows): the
# counter, the times of the last hour and day samples, the rings' lengths, the minute, hour and day rings
# of (timestamp, value) pairs and the baseline. Items come and go with topics and groups, thousands in a
# fuzz run, and a small object per item (an array, a ring grown later, an int per round) is a block
# allocated at a random time and kept as long as its item: spread through pymalloc's pools, such blocks
# keep the arenas a burst opened resident after it is gone. In one array, what is left per item is its row
# number (an int object from 257 on); the array is copied smaller when most of its rows are free, and from
# 128 KiB up glibc gives it a mapping of its own.
_VALUE, _LAST_HOUR, _LAST_DAY = 0, 1, 2
#: (slot of the ring's length, first slot of its pairs, pairs kept) in a row: minute 7 x 10 s, hour
#: 7 x 10 min and day 25 x 1 h, as Java's StatsItem samples
_MINUTE, _HOUR, _DAY = (3, 5, 7), (4, 19, 7), (33, 34, 25)
_BASELINE = 34 + 2 * 25
ROW = _BASELINE + 1
_ZERO_ROW = bytes(8 * ROW)


def _push(slots: array[int], base: int, ring: tuple[int, int, int], at_ms: int, value: int) -> None:
    length_slot, first, keep = ring
    n = slots[base + length_slot]
    first += base
    if n == keep:  # full: the oldest pair goes
        slots[first : first + 2 * keep - 2] = slots[first + 2 : first + 2 * keep]
        n -= 1
    slots[first + 2 * n] = at_ms
    slots[first + 2 * n + 1] = value
    slots[base + length_slot] = n + 1


def _snapshot(slots: array[int], base: int, ring: tuple[int, int, int]) -> Snapshot:
    """Sum, TPS and average over a ring of (timestamp, value) samples: from its first to its last."""
    length_slot, first, _keep = ring
    n = slots[base + length_slot]
    if not n:
        return Snapshot(0, 0.0, 0.0)
    first += base
    last = first + 2 * (n - 1)
    total = slots[last + 1] - slots[first + 1]
    span = slots[last] - slots[first]
    tps = (total * 1000.0 / span) if span else float("nan")
    # each counted unit is one call here (the counters are totals, not increments with call counts)
    return Snapshot(total, tps, 1.0 if total > 0 else 0.0)


class StatsRows:
    """The rows of many items (see ROW) in one int64 array, rows freed by :meth:`release` taken again by
    :meth:`add`; :meth:`compact` copies the live ones into a smaller array. A row number is only good
    until the next compaction: the owner keeps them and renumbers them in the order it passed them."""

    __slots__ = ("slots", "free", "_big")

    def __init__(self) -> None:
        self.slots = array("q")
        self.free: list[int] = []
        #: baselines beyond int64 (a sum of many hostile offsets), by row: rare, and exact
        self._big: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.slots) // ROW

    def add(self, start_ms: int, baseline: int) -> int:
        if self.free:
            row = self.free.pop()
            base = row * ROW
            self.slots[base : base + ROW] = array("q", _ZERO_ROW)
        else:
            row = len(self)
            base = row * ROW
            self.slots.frombytes(_ZERO_ROW)
        slots = self.slots
        if _INT64_MIN <= baseline <= _INT64_MAX:
            slots[base + _BASELINE] = baseline
        else:
            self._big[row] = baseline
        slots[base + _LAST_HOUR] = slots[base + _LAST_DAY] = start_ms
        # each ring starts from a zero sample one period back, so the first round already has a span
        _push(slots, base, _MINUTE, start_ms - SECONDS_PERIOD_MS, 0)
        _push(slots, base, _HOUR, start_ms - MINUTES_PERIOD_MS, 0)
        _push(slots, base, _DAY, start_ms - HOUR_PERIOD_MS, 0)
        return row

    def release(self, row: int) -> None:
        self.free.append(row)
        self._big.pop(row, None)

    def needs_compaction(self) -> bool:
        """Most rows free: worth copying the live ones into an array that size."""
        return len(self.free) > 32 and 2 * len(self.free) > len(self)

    def compact(self, rows: list[int]) -> None:
        """Keep only ``rows``, renumbered in that order: ``rows[i]`` is row ``i`` after this."""
        old, new = self.slots, array("q", bytes(8 * ROW * len(rows)))
        for i, row in enumerate(rows):
            new[i * ROW : (i + 1) * ROW] = old[row * ROW : (row + 1) * ROW]
        renumbered = {row: i for i, row in enumerate(rows)}
        self._big = {renumbered[row]: v for row, v in self._big.items() if row in renumbered}
        self.slots, self.free = new, []

    def baseline(self, row: int) -> int:
        big = self._big.get(row) if self._big else None
        return self.slots[row * ROW + _BASELINE] if big is None else big

    def observe(self, row: int, total: int, at_ms: int) -> None:
        slots, base = self.slots, row * ROW
        slots[base + _VALUE] = value = min(max(0, total - self.baseline(row)), _INT64_MAX)
        _push(slots, base, _MINUTE, at_ms, value)
        if at_ms - slots[base + _LAST_HOUR] >= MINUTES_PERIOD_MS:
            _push(slots, base, _HOUR, at_ms, value)
            slots[base + _LAST_HOUR] = at_ms
        if at_ms - slots[base + _LAST_DAY] >= HOUR_PERIOD_MS:
            _push(slots, base, _DAY, at_ms, value)
            slots[base + _LAST_DAY] = at_ms


class StatsItem:
    """One counter and its minute (7 x 10 s), hour (7 x 10 min) and day (25 x 1 h) samples: a row of a
    StatsRows. Made alone (``StatsItem(start_ms, baseline)``) it has rows of its own; the manager's
    :meth:`BrokerStatsManager.get` hands out a view of its row, good until the next sampling round."""

    __slots__ = ("_rows", "_row")

    def __init__(self, start_ms: int, baseline: int) -> None:
        self._rows = StatsRows()
        self._row = self._rows.add(start_ms, baseline)

    @classmethod
    def view(cls, rows: StatsRows, row: int) -> StatsItem:
        item = cls.__new__(cls)
        item._rows, item._row = rows, row
        return item

    @property
    def baseline(self) -> int:
        return self._rows.baseline(self._row)

    @property
    def value(self) -> int:
        return self._rows.slots[self._row * ROW + _VALUE]

    def observe(self, total: int, at_ms: int) -> None:
        self._rows.observe(self._row, total, at_ms)

    def in_minute(self) -> Snapshot:
        return _snapshot(self._rows.slots, self._row * ROW, _MINUTE)

    def in_hour(self) -> Snapshot:
        return _snapshot(self._rows.slots, self._row * ROW, _HOUR)

    def in_day(self) -> Snapshot:
        return _snapshot(self._rows.slots, self._row * ROW, _DAY)


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
        self._rows = StatsRows()
        #: stats name -> key (a topic, ``topic@group``, the cluster) -> row in _rows; the keys are the
        #: strings the topic and offset tables hold, not copies
        self._tables: dict[str, dict[str, int]] = {}
        # last queue offsets seen and the running byte totals of the size items
        self._put_marks: dict[tuple[str, int], int] = {}
        self._get_marks: dict[tuple[str, int], int] = {}
        self._put_bytes: dict[str, int] = {}
        self._get_bytes: dict[str, int] = {}
        #: messages consumers gave back, by topic@group (incSendBackNums)
        self._send_backs: dict[str, int] = {}

    def __len__(self) -> int:
        return sum(len(table) for table in self._tables.values())

    def get(self, name: str | None, key: str | None) -> StatsItem | None:
        """The item's view (until the next sampling round), None if there is none."""
        row = self._tables.get(name or "", {}).get(key or "")
        return None if row is None else StatsItem.view(self._rows, row)

    def tps_group_get_nums(self, group: str, topic: str) -> float:
        """Java's tpsGroupGetNums: what ``group`` consumed of ``topic`` per second over the minute's samples
        (0 before the pair's first sample), the consumeTps of the consume stats."""
        item = self.get(GROUP_GET_NUMS, f"{topic}@{group}")
        return 0.0 if item is None else item.in_minute().tps

    def inc_send_back(self, group: str, topic: str) -> None:
        """BrokerStatsManager.incSendBackNums: one message of ``topic`` given back by ``group``."""
        key = f"{topic}@{group}"
        self._send_backs[key] = self._send_backs.get(key, 0) + 1

    def observe(self, name: str, key: str, total: int, at_ms: int, baseline: int | None = None) -> None:
        """The item's total now; a new item starts from ``baseline`` (default: this total, nothing counted)."""
        table = self._tables.get(name)
        if table is None:
            self._tables[name] = table = {}
        row = table.get(key)
        if row is None:
            table[key] = row = self._rows.add(at_ms, total if baseline is None else baseline)
        self._rows.observe(row, total, at_ms)

    def sample(self, broker: BrokerController, at_ms: int | None = None) -> None:
        """One 10-second sampling round over everything the broker can count."""
        at = now_ms() if at_ms is None else at_ms
        cluster = broker.config.broker_cluster_name
        self.observe(BROKER_PUT_NUMS, cluster, broker.stats["put"], at)
        self.observe(BROKER_GET_NUMS, cluster, broker.stats["get"], at)
        store = broker.store
        topics: set[str] = set()
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
            topics.add(topic)
        groups: set[str] = set()
        for key, offsets in list(broker.offsets.table.items()):
            topic = key.partition("@")[0]  # the key is the item's: topic@group
            moved = self._get_bytes.setdefault(key, 0)
            for q, off in list(offsets.items()):
                last = self._get_marks.get((key, q))
                if last is not None and off > last:
                    moved += units_size(store, topic, q, last, off)
                if last != off:  # a reset moves the mark back without counting
                    self._get_marks[(key, q)] = off
            self._get_bytes[key] = moved
            self.observe(GROUP_GET_NUMS, key, sum(max(0, o) for o in offsets.values()), at)
            self.observe(GROUP_GET_SIZE, key, moved, at)
            groups.add(key)
        backs: set[str] = set()
        if self._send_backs:
            known = broker.groups.table
            for key in list(self._send_backs):
                topic, _, group = key.partition("@")
                if topic in topics and group in known:  # the topic's queues or the group gone: forgotten
                    backs.add(key)
                else:
                    del self._send_backs[key]
            for key in backs:  # counted from zero: the item's first send-backs count, as Java's addValue does
                self.observe(SNDBCK_PUT_NUMS, key, self._send_backs[key], at, baseline=0)
        self._forget_all_but({BROKER_PUT_NUMS: {cluster}, BROKER_GET_NUMS: {cluster}, TOPIC_PUT_NUMS: topics,
                              TOPIC_PUT_SIZE: topics, GROUP_GET_NUMS: groups, GROUP_GET_SIZE: groups,
                              SNDBCK_PUT_NUMS: backs})

    def _forget_all_but(self, live: dict[str, set[str]]) -> None:
        """Drop the items (and their marks) of topics and groups the broker no longer has, as Java's
        onTopicDeleted and onGroupDeleted do. Java does so only with autoDeleteUnusedStats=true (default
        false); here always, so that a broker that saw many short-lived names keeps none of them. A group's
        items go with its offsets (deleteSubGroup with removeOffset), a topic's with its consume queues."""
        if len(self) == sum(len(keys) for keys in live.values()):
            return
        for name, table in list(self._tables.items()):
            keep = live.get(name)
            if keep is None:
                continue
            gone = [k for k in table if k not in keep]
            for k in gone:
                self._rows.release(table[k])
            self._tables[name] = _without(table, gone)
        if self._rows.needs_compaction():
            rows = [row for table in self._tables.values() for row in table.values()]
            self._rows.compact(rows)
            i = 0
            for table in self._tables.values():
                for k in table:
                    table[k] = i
                    i += 1
        topics, groups = live[TOPIC_PUT_NUMS], live[GROUP_GET_NUMS]
        self._put_bytes = _without(self._put_bytes, [k for k in self._put_bytes if k not in topics])
        self._get_bytes = _without(self._get_bytes, [k for k in self._get_bytes if k not in groups])
        self._put_marks = _without(self._put_marks, [k for k in self._put_marks if k[0] not in topics])
        self._get_marks = _without(self._get_marks, [k for k in self._get_marks if k[0] not in groups])
