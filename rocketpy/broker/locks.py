"""Queue locks of orderly consumers (RebalanceLockManager): one client per queue per
group, taken with LOCK_BATCH_MQ, refreshed by locking again, lost 60 s after the last
refresh (``rocketmq.broker.rebalance.lockMaxLiveTime``) or on UNLOCK_BATCH_MQ."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable

from ..clock import monotonic_ms

LOCK_MAX_LIVE_MS = 60_000


@dataclasses.dataclass
class LockEntry:
    client_id: str
    last_update: float


class RebalanceLockManager:
    def __init__(self, max_live_ms: int = LOCK_MAX_LIVE_MS, clock: Callable[[], float] | None = None) -> None:
        self.max_live_ms = max_live_ms
        self.clock: Callable[[], float] = clock or monotonic_ms
        self.table: dict[str, dict[Hashable, LockEntry]] = {}
        self._next_purge = 0.0

    def _expired(self, entry: LockEntry, now: float) -> bool:
        return now - entry.last_update > self.max_live_ms

    def try_lock_batch(self, group: str, mqs: Iterable[Hashable], client_id: str) -> list[Hashable]:
        """The queues now held by ``client_id``: its own (refreshed), free or expired ones."""
        now = self.clock()
        if now >= self._next_purge:
            self.forget_expired(now)
        locks = self.table.setdefault(group, {})
        out = []
        for mq in mqs:
            entry = locks.get(mq)
            if entry is None or entry.client_id == client_id or self._expired(entry, now):
                locks[mq] = LockEntry(client_id, now)
                out.append(mq)
        return out

    def unlock_batch(self, group: str, mqs: Iterable[Hashable], client_id: str) -> None:
        locks = self.table.get(group)
        if not locks:
            return
        for mq in mqs:
            entry = locks.get(mq)
            if entry is not None and entry.client_id == client_id:
                del locks[mq]
        if not locks:
            del self.table[group]

    def forget_expired(self, now: float | None = None) -> None:
        """Forget expired locks and the groups left with none: an expired lock is as good as none, and
        Java's table kept every group and queue ever named (a client sending random ones grew it without
        bound). Locking does it once per lock lifetime, the broker's client scan every 10 s (when nobody
        locks any more, what was locked is not kept either)."""
        now = self.clock() if now is None else now
        self._next_purge = now + self.max_live_ms
        for group, locks in list(self.table.items()):
            for mq in [mq for mq, entry in locks.items() if self._expired(entry, now)]:
                del locks[mq]
            if not locks:
                del self.table[group]

    def is_locked(self, group: str, mq: Hashable, client_id: str) -> bool:
        entry = self.table.get(group, {}).get(mq)
        return entry is not None and entry.client_id == client_id and not self._expired(entry, self.clock())
