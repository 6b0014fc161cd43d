"""A lock per key (an address, a message queue) that lives only while someone uses it.

A table of one lock per key, filled on first use and never emptied, grows with every key a long-lived
client ever meets (brokers come and go, queues move on rebalance). Here an entry counts the tasks that
hold or wait on its lock and goes when the last one leaves, so "one at a time per key" still holds:
while anyone holds or waits, a newcomer finds the same lock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Generic, TypeVar

import trio

K = TypeVar("K", bound=Hashable)


class _Gate:
    __slots__ = ("lock", "users")

    def __init__(self, lock: AbstractAsyncContextManager[Any]) -> None:
        self.lock = lock
        self.users = 0  # tasks holding or waiting on the lock


class KeyedLocks(Generic[K]):
    """``async with locks.hold(key):`` one task at a time per key (trio's locks, or ``lock``'s: asyncio.Lock)."""

    def __init__(self, lock: Callable[[], AbstractAsyncContextManager[Any]] = trio.Lock) -> None:
        self._gates: dict[K, _Gate] = {}
        self._lock = lock

    def __len__(self) -> int:
        """Keys whose lock is held or waited on."""
        return len(self._gates)

    @asynccontextmanager
    async def hold(self, key: K) -> AsyncIterator[None]:
        gate = self._gates.get(key)
        if gate is None:
            gate = self._gates[key] = _Gate(self._lock())
        gate.users += 1
        try:
            async with gate.lock:
                yield
        finally:
            gate.users -= 1
            if gate.users == 0:
                del self._gates[key]
