"""A push consumer's statusTable in GET_CONSUMER_RUNNING_INFO (Java's ConsumerStatsManager), per topic: the pull
TPS and average time, the consume OK and failed TPS and average time over the last minute, and the messages whose
consumption failed in the last hour (what mqadmin consumerStatus and rocketmq-exporter's rocketmq_client_* show).

Counting is a few integer additions per pull answer and per listener call. The totals have a sample every 10 s
(the last 7 kept: a minute) and every 10 min (7: an hour), taken when they are counted or read (those no count
came between have the same totals); a rate is from the first to the last sample, as Java's StatsItem computes it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from ..codecs.bodies import ConsumeStatus

MINUTE_STEP = 10.0
HOUR_STEP = 600.0
KEEP = 7
#: the totals' slots
PULL_MSGS, PULL_TIMES, PULL_RT, OK, FAILED, RT, RT_TIMES = range(7)


class _Topic:
    __slots__ = ("totals", "minute", "hour")

    def __init__(self, now: float) -> None:
        self.totals = [0] * 7
        start = (now, (0,) * 7)
        self.minute: deque[tuple[float, tuple[int, ...]]] = deque([start], maxlen=KEEP)
        self.hour: deque[tuple[float, tuple[int, ...]]] = deque([start], maxlen=KEEP)

    def sample(self, now: float) -> None:
        """The samples Java's 10-second (and 10-minute) sampling would have taken until ``now``: nothing was
        counted since the last one was taken, or a sample would have been taken then, so each has today's totals."""
        for window, step in ((self.minute, MINUTE_STEP), (self.hour, HOUR_STEP)):
            last = window[-1][0]
            steps = int((now - last) // step)
            if steps > 0:
                totals = tuple(self.totals)
                for i in range(max(1, steps - KEEP + 1), steps + 1):
                    window.append((last + i * step, totals))


class ConsumerStats:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._topics: dict[str, _Topic] = {}

    def _topic(self, topic: str) -> _Topic:
        now = self.clock()
        t = self._topics.get(topic)
        if t is None:
            t = self._topics[topic] = _Topic(now)
        else:
            t.sample(now)
        return t

    def pulled(self, topic: str, msgs: int, rt_ms: float) -> None:
        """A pull answer with ``msgs`` messages, ``rt_ms`` after it was asked for (incPullRT, incPullTPS)."""
        totals = self._topic(topic).totals
        totals[PULL_MSGS] += msgs
        totals[PULL_TIMES] += 1
        totals[PULL_RT] += int(rt_ms)

    def consumed(self, topic: str, ok: int, failed: int, rt_ms: float) -> None:
        """One listener call: its messages consumed or failed, and how long it took (incConsumeRT, ...TPS)."""
        totals = self._topic(topic).totals
        totals[OK] += ok
        totals[FAILED] += failed
        totals[RT] += int(rt_ms)
        totals[RT_TIMES] += 1

    def forget(self, topics: set[str]) -> None:
        """Keep only ``topics`` (the subscriptions): a topic unsubscribed takes its figures with it."""
        for topic in [t for t in self._topics if t not in topics]:
            del self._topics[topic]

    def status(self, topic: str) -> ConsumeStatus:
        """consumeStatus(group, topic): zeros for a topic nothing was counted for yet."""
        t = self._topics.get(topic)
        if t is None:
            return ConsumeStatus()
        now = self.clock()
        t.sample(now)

        def delta(window: deque[tuple[float, tuple[int, ...]]], slot: int) -> int:
            return window[-1][1][slot] - window[0][1][slot]

        span = t.minute[-1][0] - t.minute[0][0]

        def tps(slot: int) -> float:
            return delta(t.minute, slot) / span if span > 0 else 0.0

        def avg(window: deque[tuple[float, tuple[int, ...]]], value: int, times: int) -> float:
            n = delta(window, times)
            return delta(window, value) / n if n else 0.0

        consume_rt = avg(t.minute, RT, RT_TIMES)
        if delta(t.minute, RT) == 0:  # Java: the hour's average when the minute has none
            consume_rt = avg(t.hour, RT, RT_TIMES)
        return ConsumeStatus(
            pull_rt=avg(t.minute, PULL_RT, PULL_TIMES),
            pull_tps=tps(PULL_MSGS),
            consume_rt=consume_rt,
            consume_ok_tps=tps(OK),
            consume_failed_tps=tps(FAILED),
            consume_failed_msgs=delta(t.hour, FAILED),
        )
