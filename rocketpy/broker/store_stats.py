"""The store's TPS windows and day marks behind GET_BROKER_RUNTIME_INFO.

Java's StoreStatsService samples its put and get totals once a second, keeps the last
601 samples, and answers ``putTps`` / ``getFoundTps`` / ``getMissTps`` /
``getTransferedTps`` / ``getTotalTps`` as the rates over the last 10, 60 and 600 samples
(an empty string while fewer samples exist). BrokerStats keeps the put and get totals
seen at the last two local midnights (``msg*TotalTodayMorning`` / ``YesterdayMorning``);
``msg*TotalTodayNow`` is the total since boot.

The totals are the broker's plain counters (``broker.stats``), bumped once per send batch
and once per pull, so sampling costs nothing on the send path; the bytes put are what the
CommitLog grew by since boot (Java's putMessageSizeTotal is the sum of wrote bytes).
The put times (``putMessageDistributeTime``, ``putLatency99``/``999``) are counted where a put's
result is seen: per put on the general path, per receive on the send lane. The thread-pool
queue figures are the event loop's (:class:`LoopWait`): every request waits in that one queue.
"""

from __future__ import annotations

import bisect
import datetime
import logging
import math
import os
from array import array
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

import trio

from ..codecs.fastjson import java_double

if TYPE_CHECKING:
    from .controller import BrokerController

log = logging.getLogger("rocketpy.store")

MAX_RECORDS_OF_SAMPLING = 600
PRINT_TPS_INTERVAL_S = 60
WINDOWS = (10, 60, 600)


def next_morning_ms(at_ms: int) -> int:
    """The next local midnight after ``at_ms`` (UtilAll.computeNextMorningTimeMillis)."""
    day = datetime.datetime.fromtimestamp(at_ms / 1000).date() + datetime.timedelta(days=1)
    return int(datetime.datetime.combine(day, datetime.time()).timestamp() * 1000)


def _double(value: float) -> str:
    # Double.toString: NaN and the infinities are spelled out (fastjson's writer says null)
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return java_double(value)


def human_bytes(count: int) -> str:
    """MixAll.humanReadableByteCount(bytes, si=false): 1024-based, one decimal rounded half up (String.format)."""
    if count < 1024:
        return f"{count} B"
    exp = min(int(math.log(count) / math.log(1024)), 6)
    scaled = (Decimal(count) / (Decimal(1024) ** exp)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{scaled} {'KMGTPE'[exp - 1]}iB"


def used_ratio(path: str) -> float:
    """UtilAll.getDiskPartitionSpaceUsedPercent: the used share of the partition holding ``path``, rounded up to
    two decimals (used over used plus what an unprivileged user may still take); -1 if it cannot be told."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    total = st.f_blocks * st.f_frsize
    if total <= 0:
        return -1.0
    used = total - st.f_bfree * st.f_frsize
    entire = used + st.f_bavail * st.f_frsize
    if entire <= 0:
        return -1.0
    return (used * 100 // entire + (1 if used * 100 % entire else 0)) / 100.0


def disk_info(root_dir: str, commit_log_dir: str, consume_queue_dir: str) -> dict[str, str]:
    """commitLogDirCapacity (of storePathRootDir: total and usable space, as File.getTotalSpace and
    getUsableSpace) and the partitions' used ratios, as BrokerController and DefaultMessageStore report them
    (statvfs: no data read; a path that does not exist has the ratio -1.0)."""
    out: dict[str, str] = {}
    if os.path.exists(root_dir):
        try:
            st = os.statvfs(root_dir)
        except OSError:
            pass
        else:
            total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
            out["commitLogDirCapacity"] = f"Total : {human_bytes(total)}, Free : {human_bytes(usable)}."
    ratio = _double(used_ratio(commit_log_dir) if os.path.exists(commit_log_dir) else -1.0)
    out[f"commitLogDiskRatio_{commit_log_dir}"] = ratio
    out["commitLogDiskRatio"] = ratio  # the smallest over the CommitLog's paths: it has one here
    out["consumeQueueDiskRatio"] = _double(used_ratio(consume_queue_dir) if os.path.exists(consume_queue_dir)
                                           else -1.0)
    return out


class _Series:
    """(timestamp ms, total) once a second: the last MAX_RECORDS_OF_SAMPLING + 1 samples, in a ring of
    int64 pairs made once. A tuple per sample would be blocks allocated every second and freed ten minutes
    later, all through the heap: with pymalloc's pools that keeps more resident than the samples hold."""

    __slots__ = ("_ring", "_next", "_count")

    CAPACITY = MAX_RECORDS_OF_SAMPLING + 1

    def __init__(self) -> None:
        self._ring = array("q", bytes(16 * self.CAPACITY))
        self._next = 0  # the pair the next sample goes to
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def append(self, at_ms: int, total: int) -> None:
        i = 2 * self._next
        self._ring[i] = at_ms
        self._ring[i + 1] = total
        self._next = (self._next + 1) % self.CAPACITY
        self._count = min(self._count + 1, self.CAPACITY)

    def back(self, n: int) -> tuple[int, int]:
        """The sample ``n`` rounds before the newest (0: the newest)."""
        i = 2 * ((self._next - 1 - n) % self.CAPACITY)
        return self._ring[i], self._ring[i + 1]

    def rate(self, window: int) -> float | None:
        if self._count <= window:
            return None
        t0, v0 = self.back(window)
        t1, v1 = self.back(0)
        span = t1 - t0
        if span == 0:
            return float("nan") if v1 == v0 else float("inf")
        return (v1 - v0) / span * 1000.0

    def text(self) -> str:
        rates = [self.rate(w) for w in WINDOWS]
        return " ".join("" if r is None else _double(r) for r in rates)


#: StoreStatsService's put-time distribution: upper bounds (ms, exclusive) of its 13 ranges but the first (<= 0)
DISTRIBUTION_LIMITS = (1, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10000)
DISTRIBUTION_NAMES = ("[<=0ms]", "[0~10ms]", "[10~50ms]", "[50~100ms]", "[100~200ms]", "[200~500ms]", "[500ms~1s]",
                      "[1~2s]", "[2~3s]", "[3~4s]", "[4~5s]", "[5~10s]", "[10s~]")
#: the percentile buckets' (step ms, count) rule: 0-20 by 1, 20-50 by 2, ... 1-10 s by 1000, then the rest
_BUCKET_RULE = ((1, 20), (2, 15), (5, 10), (10, 10), (50, 6), (100, 5), (1000, 9))


def _bucket_bounds() -> list[int]:
    bounds, at = [], 0
    for step, times in _BUCKET_RULE:
        for _ in range(times):
            at += step
            bounds.append(at)
    return bounds


BUCKET_BOUNDS = _bucket_bounds()


_NO_DISTRIBUTION = (0,) * len(DISTRIBUTION_NAMES)
_NO_BUCKETS = (0,) * (len(BUCKET_BOUNDS) + 1)


class PutLatency:
    """Put times as StoreStatsService keeps them: a 13-range distribution and percentile buckets, each
    swapped for a fresh one every minute (the answers show the last full minute), and the maxima since boot."""

    def __init__(self) -> None:
        self.distribution = [0] * len(DISTRIBUTION_NAMES)
        self.last_distribution: list[int] | None = None  # Java: null until the first minute has passed
        self.buckets = [0] * (len(BUCKET_BOUNDS) + 1)  # the last one: beyond 10 s
        self.last_buckets: list[int] = []
        self.put_max_ms = 0
        self.get_max_ms = 0
        self.failed = 0  # putMessageFailedTimes: puts whose result was not PUT_OK

    def put(self, elapsed_ms: int, count: int = 1) -> None:
        """``count`` puts (Java: one per putMessage or putMessages call) that took ``elapsed_ms`` each
        (setPutMessageEntireTimeMax)."""
        self.distribution[0 if elapsed_ms <= 0 else bisect.bisect_right(DISTRIBUTION_LIMITS, elapsed_ms)] += count
        self.buckets[bisect.bisect_left(BUCKET_BOUNDS, elapsed_ms)] += count  # the first bound >= elapsed
        if elapsed_ms > self.put_max_ms:
            self.put_max_ms = elapsed_ms

    def get(self, elapsed_ms: int) -> None:
        if elapsed_ms > self.get_max_ms:
            self.get_max_ms = elapsed_ms

    def rotate(self) -> list[int]:
        """The minute's end: the current counts become the answered ones; returns the distribution."""
        if self.last_distribution is None:
            self.last_distribution = [0] * len(DISTRIBUTION_NAMES)
            self.last_buckets = [0] * (len(BUCKET_BOUNDS) + 1)
        # the pairs swap and the new current lists are zeroed in place: fresh lists every minute would be
        # blocks made at every minute's end and kept for two
        self.last_distribution, self.distribution = self.distribution, self.last_distribution
        self.last_buckets, self.buckets = self.buckets, self.last_buckets
        self.distribution[:] = _NO_DISTRIBUTION
        self.buckets[:] = _NO_BUCKETS
        return self.last_distribution

    def percentile(self, px: float) -> float:
        """findPutMessageEntireTimePX over the last minute's buckets, interpolated inside the bucket."""
        total = sum(self.last_buckets)
        index = int(total * px)
        passed = 0
        bounds = [*BUCKET_BOUNDS, 2**63 - 1]
        for i, count in enumerate(self.last_buckets):
            if index <= passed + count:
                rel = index - passed
                if i == 0:
                    return 0.0 if count == 0 else bounds[0] * rel / count
                low = bounds[i - 1]
                return low + (0.0 if count == 0 else (bounds[i] - low) * rel / count)
            passed += count
        return 0.0

    @staticmethod
    def distribution_text(counts: list[int] | None) -> str:
        if counts is None:
            return "null"
        return "".join(f"{name}:{n} " for name, n in zip(DISTRIBUTION_NAMES, counts))

    def runtime_info(self) -> dict[str, str]:
        return {
            "putMessageEntireTimeMax": str(self.put_max_ms),
            "getMessageEntireTimeMax": str(self.get_max_ms),
            "putMessageDistributeTime": self.distribution_text(self.last_distribution),
            "putLatency99": f"{self.percentile(0.99):.2f}",
            "putLatency999": f"{self.percentile(0.999):.2f}",
            "dispatchMaxBuffer": "0",  # Java 4.9.8 never sets it
        }


class LoopWait:
    """What Java's thread-pool queues report (their sizes and the wait of the request at each head), for a broker
    whose requests all wait in one queue: the event loop's. The sampler sleeps to a deadline each second and
    notes how late it woke (what any request that became ready then waited before it ran) and how many other
    tasks were ready with it. Nothing is added to the request paths; the figures are those of the last round."""

    __slots__ = ("wait_ms", "ready")

    def __init__(self) -> None:
        self.wait_ms = 0
        self.ready = 0

    async def sleep(self, seconds: float) -> None:
        deadline = trio.current_time() + seconds
        await trio.sleep_until(deadline)
        self.wait_ms = max(0, int((trio.current_time() - deadline) * 1000))
        self.ready = trio.lowlevel.current_statistics().tasks_runnable

    def runtime_info(self) -> dict[str, str]:
        wait, ready = str(self.wait_ms), str(self.ready)
        return {
            "sendThreadPoolQueueSize": ready,
            "pullThreadPoolQueueSize": ready,
            "queryThreadPoolQueueSize": ready,
            "EndTransactionQueueSize": ready,
            "sendThreadPoolQueueHeadWaitTimeMills": wait,
            "pullThreadPoolQueueHeadWaitTimeMills": wait,
            "queryThreadPoolQueueHeadWaitTimeMills": wait,
        }


class StoreStats:
    def __init__(self, boot_ms: int, commitlog_base: int = 0) -> None:
        self.put = _Series()
        self.found = _Series()
        self.miss = _Series()
        self.transferred = _Series()
        self.commitlog_base = commitlog_base
        self.put_yesterday_morning = 0
        self.put_today_morning = 0
        self.get_yesterday_morning = 0
        self.get_today_morning = 0
        self.next_record_ms = next_morning_ms(boot_ms)
        self.latency = PutLatency()
        self.loop = LoopWait()
        self.next_print_ms = boot_ms + PRINT_TPS_INTERVAL_S * 1000

    def sample(self, broker: BrokerController, at_ms: int) -> None:
        """One sampling round (every second), and the midnight record when one has passed."""
        s = broker.stats
        self.put.append(at_ms, s["put"])
        self.found.append(at_ms, s["get_found"])
        self.miss.append(at_ms, s["get_miss"])
        self.transferred.append(at_ms, s["get"])
        if at_ms >= self.next_record_ms:
            self.record(broker)
            self.next_record_ms = next_morning_ms(at_ms)
        if at_ms > self.next_print_ms:
            self.next_print_ms = at_ms + PRINT_TPS_INTERVAL_S * 1000
            self.print_tps()

    def print_tps(self) -> None:
        """StoreStatsService.printTps, once a minute: the store log's TPS line, the minute's put times."""
        rates = [s.rate(PRINT_TPS_INTERVAL_S) for s in (self.put, self.found, self.miss, self.transferred)]
        log.info("[STORETPS] put_tps %s get_found_tps %s get_miss_tps %s get_transfered_tps %s",
                 *("" if r is None else _double(r) for r in rates))
        counts = self.latency.rotate()
        log.info("[PAGECACHERT] TotalPut %d, PutMessageDistributeTime %s", sum(counts),
                 self.latency.distribution_text(counts))

    def record(self, broker: BrokerController) -> None:
        """BrokerStats.record: today's morning marks become yesterday's, the totals now today's."""
        self.put_yesterday_morning = self.put_today_morning
        self.get_yesterday_morning = self.get_today_morning
        self.put_today_morning = broker.stats["put"]
        self.get_today_morning = broker.stats["get"]

    def total_tps(self) -> str:
        out = []
        for w in WINDOWS:
            found, miss = self.found.rate(w), self.miss.rate(w)
            out.append(_double((found or 0.0) + (miss or 0.0)))
        return " ".join(out)

    def runtime_info(self, broker: BrokerController) -> dict[str, str]:
        """The counters and rates part of the runtime info table."""
        s = broker.stats
        puts = s["put"]
        times = puts or 1  # Java's getRuntimeInfo counts 1 before the first put (and divides by it)
        size = max(0, broker.store.max_phy_offset - self.commitlog_base)
        return {
            "msgPutTotalYesterdayMorning": str(self.put_yesterday_morning),
            "msgPutTotalTodayMorning": str(self.put_today_morning),
            "msgPutTotalTodayNow": str(puts),
            "msgGetTotalYesterdayMorning": str(self.get_yesterday_morning),
            "msgGetTotalTodayMorning": str(self.get_today_morning),
            "msgGetTotalTodayNow": str(s["get"]),
            "putMessageTimesTotal": str(times),
            "putMessageSizeTotal": str(size),
            "putMessageAverageSize": _double(size / times),
            "putMessageFailedTimes": str(self.latency.failed),
            "putTps": self.put.text(),
            "getFoundTps": self.found.text(),
            "getMissTps": self.miss.text(),
            "getTotalTps": self.total_tps(),
            "getTransferedTps": self.transferred.text(),
            **self.latency.runtime_info(),
            **self.loop.runtime_info(),
        }
