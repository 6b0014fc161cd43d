"""The blocking API's loop thread: many threads' calls handed over with few wake-ups, outcomes delivered."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

import pytest

from rocketpy.client.loop_thread import LoopThread

pytestmark = pytest.mark.timeout(60)


def test_calls_of_many_threads_wake_the_loop_once_per_burst() -> None:
    loop_thread = LoopThread()
    wakes = 0
    real = loop_thread.loop.call_soon_threadsafe

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal wakes
        wakes += 1
        return real(*args, **kwargs)

    loop_thread.loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
    gate = threading.Barrier(8)
    results: list[int] = []
    lock = threading.Lock()

    async def work(i: int) -> int:
        await asyncio.sleep(0.001)
        return i

    def caller(base: int) -> None:
        gate.wait()
        futures = [loop_thread.submit(lambda i=i: work(base + i)) for i in range(50)]  # a burst
        got = [f.result(10) for f in futures]
        with lock:
            results.extend(got)

    threads = [threading.Thread(target=caller, args=(1000 * t,)) for t in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        loop_thread.close()
    assert sorted(results) == sorted(1000 * t + i for t in range(8) for i in range(50))
    assert wakes < 400 / 4  # calls queued while the loop was already woken ride on that wake-up


def test_errors_and_cancellations_reach_the_caller() -> None:
    loop_thread = LoopThread()

    async def fails() -> None:
        raise ValueError("refused")

    async def cancelled() -> None:
        raise asyncio.CancelledError

    try:
        with pytest.raises(ValueError, match="refused"):
            loop_thread.run(fails)
        with pytest.raises(concurrent.futures.CancelledError):
            loop_thread.run(cancelled)

        async def where() -> bool:
            return threading.current_thread().name == "rocketpy-asyncio"

        assert loop_thread.run(where)

        # a call that fails before it starts (its coroutine function raises when called) reaches its caller,
        # and the calls handed over with it still run
        def not_a_coroutine_function() -> Any:
            raise TypeError("bad arguments")

        bad = loop_thread.submit(not_a_coroutine_function)
        good = loop_thread.submit(where)
        with pytest.raises(TypeError, match="bad arguments"):
            bad.result(timeout=5)
        assert good.result(timeout=5)
        with pytest.raises(TypeError, match="bad arguments"):
            loop_thread.run(not_a_coroutine_function)
    finally:
        loop_thread.close()
