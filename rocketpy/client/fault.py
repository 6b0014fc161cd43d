"""Latency-based broker avoidance (Java's MQFaultStrategy and LatencyFaultToleranceImpl), sans-IO.

After a send, the broker's latency picks a quarantine: slow or failing brokers are
skipped for a while when choosing the next queue. Off by default, as in Java.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from ..clock import monotonic_ms
from ..codecs.bodies import MessageQueue
from .route import QueueCounter, TopicPublishInfo

#: send latency thresholds (ms) and the quarantine each one earns (ms)
LATENCY_MAX = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_DURATION = (0, 0, 30000, 60000, 120000, 180000, 600000)


@dataclass
class FaultItem:
    name: str
    current_latency: int
    start_timestamp: int

    def available(self, now: int) -> bool:
        return now - self.start_timestamp >= 0


class LatencyFaultTolerance:
    """Brokers in quarantine, with when each may be used again."""

    def __init__(self, clock: Callable[[], int] = monotonic_ms) -> None:
        self.clock = clock
        self.items: dict[str, FaultItem] = {}
        self._worst = QueueCounter(0)

    def update(self, name: str, current_latency: int, not_available_ms: int) -> None:
        start = self.clock() + not_available_ms
        item = self.items.get(name)
        if item is None:
            self.items[name] = FaultItem(name, current_latency, start)
        else:
            item.current_latency = current_latency
            item.start_timestamp = start

    def is_available(self, name: str) -> bool:
        item = self.items.get(name)
        return item is None or item.available(self.clock())

    def remove(self, name: str) -> None:
        self.items.pop(name, None)

    def pick_one_at_least(self) -> str | None:
        """A quarantined broker that is least bad: available first, then faster, then sooner free."""
        items = list(self.items.values())
        if not items:
            return None
        random.shuffle(items)
        now = self.clock()
        items.sort(key=lambda it: (not it.available(now), it.current_latency, it.start_timestamp))
        half = len(items) // 2
        if half <= 0:
            return items[0].name
        return items[self._worst.next() % half].name


class FaultStrategy:
    """Chooses the queue of each send attempt and records how each attempt went."""

    def __init__(self, enabled: bool = False, clock: Callable[[], int] = monotonic_ms) -> None:
        self.enabled = enabled
        self.tolerance = LatencyFaultTolerance(clock)

    def select(self, info: TopicPublishInfo, last_broker: str | None) -> MessageQueue:
        if not self.enabled:
            return info.select(last_broker)
        n = len(info.queues)
        index = info.counter.next()
        for i in range(n):
            mq = info.queues[((index + i) & 0x7FFFFFFF) % n]
            if self.tolerance.is_available(mq.broker_name or ""):
                return mq
        not_best = self.tolerance.pick_one_at_least()
        if not_best is not None:
            nums = info.write_queue_nums(not_best)
            if nums > 0:
                info.select()
                return MessageQueue(topic=info.queues[0].topic, broker_name=not_best,
                                    queue_id=info.counter.next() % nums)
            self.tolerance.remove(not_best)
        return info.select()

    def update(self, broker_name: str, latency_ms: int, isolation: bool) -> None:
        if self.enabled:
            duration = not_available_duration(30000 if isolation else latency_ms)
            self.tolerance.update(broker_name, latency_ms, duration)


def not_available_duration(latency_ms: int) -> int:
    for limit, duration in zip(reversed(LATENCY_MAX), reversed(NOT_AVAILABLE_DURATION)):
        if latency_ms >= limit:
            return duration
    return 0
