"""rocketpy's clock: the system clock unless a context installs another, and its testing helpers."""

from __future__ import annotations

import contextvars
import time

import pytest
import trio
import trio.testing

from rocketpy.clock import monotonic_ms, now_ms, system_ms, use_clock
from rocketpy.testing import clock_following, wait_until


def test_now_ms_is_the_system_clock_by_default() -> None:
    before = time.time_ns() // 1_000_000
    now = now_ms()
    assert before <= now <= time.time_ns() // 1_000_000
    assert abs(system_ms() - now) < 1000


def test_use_clock_sets_it_for_the_block_only() -> None:
    with use_clock(lambda: 42):
        assert now_ms() == 42
        with use_clock(lambda: 7):
            assert now_ms() == 7
        assert now_ms() == 42
    assert now_ms() != 42


def test_other_contexts_keep_the_system_clock() -> None:
    outside = contextvars.copy_context()  # a context made before the clock was set
    with use_clock(lambda: 42):
        assert outside.run(now_ms) != 42
        assert contextvars.copy_context().run(now_ms) == 42


async def test_tasks_and_worker_threads_started_inside_inherit_it() -> None:
    seen: list[int] = []
    with use_clock(lambda: 42):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: _record(seen))
        seen.append(await trio.to_thread.run_sync(now_ms))
    assert seen == [42, 42]


async def _record(seen: list[int]) -> None:
    await trio.sleep(0)
    seen.append(now_ms())


def test_clock_following_moves_with_a_mock_clock_only() -> None:
    clock = trio.testing.MockClock()
    with clock_following(clock):
        start, wall = now_ms(), time.time_ns()
        while time.time_ns() - wall < 2_000_000:  # the wall clock moves on: ours does not
            assert now_ms() == start
        clock.jump(1.5)
        assert now_ms() == start + 1500


async def test_virtual_clock_fixture_puts_servers_and_clients_on_trio_time(
    virtual_clock: trio.testing.MockClock,
) -> None:
    start_ms, start = now_ms(), trio.current_time()
    await trio.sleep(3600)  # an hour of virtual time, no wall time
    assert trio.current_time() - start == 3600
    assert now_ms() - start_ms == 3_600_000


async def test_wait_until_returns_once_the_condition_holds(virtual_clock: trio.testing.MockClock) -> None:
    start = trio.current_time()
    await wait_until(lambda: trio.current_time() - start >= 2.5, timeout=10, tick=0.5)
    assert trio.current_time() - start == 2.5


async def test_wait_until_gives_up_after_its_timeout(virtual_clock: trio.testing.MockClock) -> None:
    start = trio.current_time()
    with pytest.raises(trio.TooSlowError):
        await wait_until(lambda: False, timeout=5, tick=1)  # each tick costs the autojump threshold in real time
    assert trio.current_time() - start == 5


async def test_wait_until_awaits_an_async_condition(virtual_clock: trio.testing.MockClock) -> None:
    """A condition that queries something (a server, a page) is awaited each tick, not taken as true."""
    asked: list[float] = []

    async def ready() -> bool:
        await trio.sleep(0.1)  # the round trip
        asked.append(trio.current_time())
        return len(asked) == 3

    start = trio.current_time()
    await wait_until(ready, timeout=10, tick=0.5)
    assert [round(t - start, 3) for t in asked] == [0.1, 0.7, 1.3]


def test_admin_times_and_consume_timestamp_read_the_installed_clock() -> None:
    """mqadmin's 'now' and the consumers' default consumeTimestamp (half an hour ago) come from
    rocketpy's clock, so they move with a virtual one like every server timestamp."""
    from datetime import datetime

    from rocketpy.client.consumer_base import half_hour_ago
    from rocketpy.mqadmin.core import parse_time

    at = int(datetime(2024, 5, 1, 12, 0, 0).timestamp() * 1000)
    with use_clock(lambda: at):
        assert parse_time("now") == at
        assert half_hour_ago() == "20240501113000"


def test_quarantines_and_lock_leases_run_on_the_monotonic_clock() -> None:
    """Fault quarantines and queue-lock leases measure intervals: a monotonic clock, which a wall-clock
    step (or a virtual clock installed for timestamps) does not move."""
    from rocketpy.broker.locks import RebalanceLockManager
    from rocketpy.client.fault import LatencyFaultTolerance

    with use_clock(lambda: 0):
        before = monotonic_ms()
        for clock in (LatencyFaultTolerance().clock(), RebalanceLockManager().clock()):
            assert before <= clock <= monotonic_ms()
