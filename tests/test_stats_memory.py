"""The broker's statistics keep what they sample in memory made once, when an item or a series is made.

A sampling round runs every second (store stats) or 10 s (stats items) for the broker's whole life. A
block it allocated and kept (a tuple per sample, a ring grown later, a fresh int per round) is a small
object allocated at a random later time and kept minutes to forever: spread through pymalloc's pools,
such blocks keep pools and arenas resident after the bursts that opened them are gone (issue #24's
fuzz runs ended megabytes above their start with little data held)."""

from __future__ import annotations

import gc
import tracemalloc
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rocketpy.broker import stats, store_stats
from rocketpy.broker.stats import StatsItem
from rocketpy.broker.store_stats import StoreStats
from rocketpy.store import consume_queue
from rocketpy.testing import broker_client, now_ms, running_broker


@contextmanager
def kept_blocks(*modules: types.ModuleType) -> Iterator[Callable[[], int]]:
    """Bytes still allocated, at the call of the yielded function, by lines of ``modules`` run inside
    the block (tracing starts at the block, so what was made before does not count)."""
    only = [tracemalloc.Filter(True, str(module.__file__)) for module in modules]
    tracemalloc.start()
    try:
        def kept() -> int:
            snapshot = tracemalloc.take_snapshot().filter_traces(only)
            return sum(t.size for t in snapshot.traces)

        yield kept
    finally:
        tracemalloc.stop()


def test_a_stats_item_samples_a_day_without_keeping_a_block() -> None:
    item = StatsItem(1_000_000, baseline=5)
    with kept_blocks(stats) as kept:
        for i in range(30 * 360):  # 30 hours of 10-second rounds: the day ring fills, then turns
            item.observe(5 + 1000 * i, 1_000_000 + 10_000 * (i + 1))
        assert kept() == 0
    assert item.in_minute().sum == 6000 and item.in_hour().sum == 6 * 60 * 1000
    assert item.in_day().sum == 24 * 360 * 1000


def test_store_stats_sample_every_second_without_keeping_a_block() -> None:
    service = StoreStats(boot_ms=0)
    broker = types.SimpleNamespace(stats={"put": 0, "get_found": 0, "get_miss": 0, "get": 0})
    with kept_blocks(store_stats) as kept:
        for i in range(1, 1500):  # more than the 601 samples kept
            broker.stats = {"put": 1000 * i, "get_found": 900 * i, "get_miss": 3 * i, "get": 2000 * i}
            service.sample(broker, 1000 * i)  # type: ignore[arg-type]
        # a few ints (the ring's next slot, the next log time), not a tuple per sample kept
        assert kept() < 1024
    assert service.put.rate(10) == 1000.0 and service.transferred.rate(600) == 2000.0
    assert service.total_tps() == "903.0 903.0 903.0"


async def test_a_sampling_round_over_queues_that_did_not_move_keeps_no_block(tmp_path) -> None:  # type: ignore[no-untyped-def]
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            for _ in range(300):  # offsets beyond the ints Python caches
                await c.send("TStill", b"m", queue_id=0)
        t0 = now_ms()
        broker.stats_manager.sample(broker, at_ms=t0)
        # a queue's max offset is an int the consume queue makes at each call: the round keeps none of them
        with kept_blocks(stats, consume_queue) as kept:
            for i in range(1, 30):
                broker.stats_manager.sample(broker, at_ms=t0 + 10_000 * i)
            assert kept() == 0


def _broker_with_offsets(table: dict[str, dict[int, int]]) -> types.SimpleNamespace:
    """What a sampling round reads of a broker: no topics, and these offsets (topic@group -> queue -> offset)."""
    store = types.SimpleNamespace(topics=lambda: [], queue_ids=lambda topic: [],
                                  get_max_offset_in_queue=lambda topic, queue_id: 0)
    return types.SimpleNamespace(config=types.SimpleNamespace(broker_cluster_name="C"), store=store,
                                 stats={"put": 0, "get": 0}, offsets=types.SimpleNamespace(table=table))


def test_the_tables_shrink_when_most_of_their_groups_went() -> None:
    # a dict keeps the table it grew to whatever is deleted from it: after a clean-up of many groups the
    # stats' tables stayed sized for the most groups there ever were
    broker = _broker_with_offsets({})
    manager = stats.BrokerStatsManager()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        broker.offsets.table = {f"T@G{i}": {q: 1000 + q for q in range(8)} for i in range(2000)}
        manager.sample(broker, 10_000)  # type: ignore[arg-type]
        grown = tracemalloc.get_traced_memory()[0] - base
        broker.offsets.table = {"T@G0": broker.offsets.table["T@G0"]}
        manager.sample(broker, 20_000)  # type: ignore[arg-type]
        gc.collect()  # a full collection empties CPython's free lists (tuples the rounds made and dropped)
        left = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown > 2 << 20
    assert left < 64 << 10, (grown, left)
    assert manager.get(stats.GROUP_GET_NUMS, "T@G0") is not None
    assert manager.get(stats.GROUP_GET_NUMS, "T@G1") is None


def test_items_keep_their_samples_when_the_rows_are_compacted() -> None:
    # the rows of gone items are copied out of the array once most of it is free: what the others
    # sampled, and a baseline beyond int64, come through the renumbering as a manager that kept all has them
    huge = 1 << 70  # offsets are longs, their sum is not
    table = {f"T@G{i}": {0: 10 * i, 1: huge if i == 97 else 0} for i in range(100)}
    kept = [f"T@G{i}" for i in (3, 50, 97, 99)]
    everything, trimmed = _broker_with_offsets(table), _broker_with_offsets(table)
    reference, manager = stats.BrokerStatsManager(), stats.BrokerStatsManager()
    for round_ in range(1, 12):
        for i in range(100):
            table[f"T@G{i}"][0] += i * round_
        if round_ == 8:
            trimmed.offsets.table = {key: table[key] for key in kept}
        reference.sample(everything, 10_000 * round_)  # type: ignore[arg-type]
        manager.sample(trimmed, 10_000 * round_)  # type: ignore[arg-type]
    assert len(manager) == 2 + 2 * len(kept)
    assert manager.get(stats.GROUP_GET_NUMS, "T@G4") is None
    assert len(manager._rows) == len(manager)  # compacted: no free row left
    for key in kept:
        for name in (stats.GROUP_GET_NUMS, stats.GROUP_GET_SIZE):
            item, want = manager.get(name, key), reference.get(name, key)
            assert item is not None and want is not None
            # repr: a window of one instant has a NaN TPS, which equals nothing
            assert repr((item.value, item.in_minute(), item.in_hour(), item.in_day())) == repr(
                (want.value, want.in_minute(), want.in_hour(), want.in_day()))
    # counted from its first round's total, 2**70 and more
    assert manager.get(stats.GROUP_GET_NUMS, "T@G97").value == 97 * sum(range(2, 12))  # type: ignore[union-attr]


def test_a_freed_row_is_taken_again_clean() -> None:
    # below the compaction threshold a gone item's row is reused: nothing of its samples or of a baseline
    # beyond int64 may show through in the next item's
    rows = stats.StatsRows()
    gone = rows.add(0, 1 << 70)
    stats.StatsItem.view(rows, gone).observe((1 << 70) + 500, 10_000)
    other = rows.add(0, 7)
    rows.release(gone)
    again = rows.add(20_000, 3)
    assert again == gone and len(rows) == 2
    item = stats.StatsItem.view(rows, again)
    assert (item.baseline, item.value, item.in_minute().sum) == (3, 0, 0)
    item.observe(10, 30_000)
    assert (item.value, item.in_minute().sum) == (7, 7)
    assert stats.StatsItem.view(rows, other).baseline == 7
