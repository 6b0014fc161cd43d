"""What the both-loops suites share (test_client_loops*.py): the ``loop`` fixture, running a test body on
that loop, unique names and waits that work under trio and asyncio alike (anyio)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
import trio

from rocketpy.client import ConsumeFromWhere, LitePullConsumer
from rocketpy.client.config import ClientConfig
from rocketpy.pytest_plugin import Cluster

__all__ = ["drain", "gather", "loop", "name", "run", "wait_for"]


@pytest.fixture(params=["trio", "asyncio"])
def loop(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run(loop: str, main: Callable[[], Awaitable[Any]], seconds: float = 60) -> Any:
    """``main()`` on the given loop, checking it really runs there (the asyncio run has no trio under it)."""

    async def checked() -> Any:
        if loop == "asyncio":
            asyncio.get_running_loop()
            with pytest.raises(RuntimeError):
                trio.lowlevel.current_task()
        with anyio.fail_after(seconds):
            return await main()

    return anyio.run(checked, backend=loop)


def name(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


async def wait_for(check: Callable[[], bool], what: str, seconds: float = 20) -> None:
    with anyio.fail_after(seconds):
        while not check():
            await anyio.sleep(0.02)


async def gather(coros: list[Awaitable[Any]]) -> list[Any]:
    """Run the awaitables concurrently on whichever loop runs (an anyio task group), results in order."""
    out: list[Any] = [None] * len(coros)

    async def one(i: int, c: Awaitable[Any]) -> None:
        out[i] = await c

    async with anyio.create_task_group() as group:
        for i, c in enumerate(coros):
            group.start_soon(one, i, c)
    return out


async def drain(cluster: Cluster, topic: str, count: int, config: ClientConfig | None = None) -> list[bytes]:
    """Every message of ``topic`` read back by a lite-pull consumer of a fresh group."""
    consumer = LitePullConsumer(name("CGDrain"), namesrv=None if config else cluster.namesrv, config=config,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic)
    got: list[bytes] = []
    async with consumer:
        with anyio.fail_after(30):
            while len(got) < count:
                got += [m.body for m in await consumer.poll(0.5)]
    return got
