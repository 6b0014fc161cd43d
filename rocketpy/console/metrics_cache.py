"""The console's /metrics answer: one gathering from the brokers at a time, kept for a few seconds."""

from __future__ import annotations

import math

import trio

from .data import ConsoleData
from .metrics import exposition
from .metrics_gather import gather


async def render(data: ConsoleData) -> bytes:
    return exposition(await gather(data))


class MetricsCache:
    """One gathering at a time, reused for ``max_age`` seconds: scrapers (often several Prometheus
    replicas) must not multiply the load on the brokers."""

    def __init__(self, max_age: float = 10.0) -> None:
        self.max_age = max_age
        self.lock = trio.Lock()
        self.text = b""
        self.at = -math.inf

    async def get(self, data: ConsoleData) -> bytes:
        async with self.lock:
            if trio.current_time() - self.at >= self.max_age:
                self.text = await render(data)
                self.at = trio.current_time()
            return self.text
