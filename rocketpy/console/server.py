"""Running the console: one admin client and Hypercorn's trio worker in the caller's nursery.

Hypercorn serves Starlette on trio directly (Starlette runs on anyio, which runs on trio),
so the console shares the event loop, the structured concurrency and the admin client
of the rest of rocketpy instead of a thread or an asyncio loop of its own.
"""

from __future__ import annotations

import logging

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from .app import ConsoleSettings, build_app
from .data import Clusters

log = logging.getLogger(__name__)


def split_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen wants HOST:PORT, got {listen!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


async def run_console(
    settings: ConsoleSettings,
    listen: str = "127.0.0.1:8080",
    *,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; ``task_status`` gets the base URL (the port is known once bound)."""
    host, port = split_listen(listen)
    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = logging.getLogger("rocketpy.console.http")  # type: ignore[assignment]
    clusters = Clusters(settings.namesrvs)
    app = build_app(settings, clusters)
    try:
        async with trio.open_nursery() as nursery:
            urls = await nursery.start(serve, app, config)
            url = urls[0] if urls else f"http://{host}:{port}"
            log.info("console on %s (NameServer %s)", url, " | ".join(clusters.namesrvs))
            task_status.started(url)
    finally:
        await clusters.aclose()
