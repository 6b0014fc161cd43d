"""KeyedLocks: one task at a time per key, and no entry for a key nobody holds or waits on."""

from __future__ import annotations

import trio
import trio.testing

from rocketpy.keyed_locks import KeyedLocks


async def test_one_holder_per_key_and_nothing_kept_after(virtual_clock: trio.testing.MockClock) -> None:
    locks: KeyedLocks[str] = KeyedLocks()
    inside: dict[str, int] = {}
    most: dict[str, int] = {}
    order: list[str] = []

    async def use(key: str, name: str) -> None:
        async with locks.hold(key):
            inside[key] = inside.get(key, 0) + 1
            most[key] = max(most.get(key, 0), inside[key])
            order.append(name)
            await trio.sleep(1)
            inside[key] -= 1

    async with trio.open_nursery() as tasks:
        for i in range(3):
            tasks.start_soon(use, "a", f"a{i}")
            await trio.testing.wait_all_tasks_blocked()
        tasks.start_soon(use, "b", "b0")
        await trio.testing.wait_all_tasks_blocked()
        assert len(locks) == 2 and order == ["a0", "b0"]  # b is not held up by a
    assert most == {"a": 1, "b": 1} and order == ["a0", "b0", "a1", "a2"]
    assert len(locks) == 0
    for i in range(100):  # many keys over a life: none stays
        async with locks.hold(f"k{i}"):
            pass
    assert len(locks) == 0


async def test_a_waiter_cancelled_leaves_no_entry(virtual_clock: trio.testing.MockClock) -> None:
    locks: KeyedLocks[str] = KeyedLocks()
    release = trio.Event()

    async def hold() -> None:
        async with locks.hold("k"):
            await release.wait()

    async with trio.open_nursery() as tasks:
        tasks.start_soon(hold)
        await trio.testing.wait_all_tasks_blocked()
        with trio.move_on_after(1) as waited:
            async with locks.hold("k"):
                raise AssertionError("the lock is held")
        assert waited.cancelled_caught and len(locks) == 1  # the holder's entry only
        release.set()
    assert len(locks) == 0
    async with locks.hold("k"):  # and the key can be taken again
        assert len(locks) == 1
