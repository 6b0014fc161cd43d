"""Running the console: one admin client and Hypercorn's trio worker in the caller's nursery.

Hypercorn serves Starlette on trio directly (Starlette runs on anyio, which runs on trio),
so the console shares the event loop, the structured concurrency and the admin client
of the rest of rocketpy instead of a thread or an asyncio loop of its own. In front of the
app, :class:`~.guard.HostGuard` refuses foreign ``Host`` and ``Origin`` headers; with
``tls_cert``/``tls_key`` Hypercorn serves HTTPS (TLS 1.2+, ECDHE suites); the users file is
read again when it changes, which ends the sessions of users whose password changed.
"""

from __future__ import annotations

import logging
import os

import trio
from hypercorn.config import Config
from hypercorn.trio import serve

from .app import ConsoleSettings, build_app
from .auth import Sessions, parse_users, replace_users
from .data import Clusters
from .guard import HostGuard, is_loopback

log = logging.getLogger(__name__)
USERS_FILE_POLL = 2.0  # seconds between looks at the users file


def split_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen wants HOST:PORT, got {listen!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


async def watch_users_file(settings: ConsoleSettings, sessions: Sessions, interval: float = USERS_FILE_POLL) -> None:
    """Read ``settings.users_file`` again whenever it changes (off the event loop) and apply it: added users may
    log in, the sessions of removed users and of users whose password changed end. A file that cannot be read or
    parsed leaves the users as they were, with one log line."""
    path, users = settings.users_file, settings.users
    assert path is not None and users is not None
    seen = await trio.to_thread.run_sync(_stamp, path)
    while True:
        await trio.sleep(interval)
        stamp = await trio.to_thread.run_sync(_stamp, path)
        if stamp == seen or stamp is None:
            continue
        seen = stamp
        try:
            new = parse_users(await trio.to_thread.run_sync(_read, path))
            if not new:
                raise ValueError("it names no user")
        except (OSError, ValueError) as exc:
            log.warning("console: users file %s changed but is not used: %s", path, exc)
            continue
        ended = replace_users(users, new, sessions)
        log.info("console: users file %s read again: %d users%s", path, len(new),
                 f"; sessions ended for {', '.join(ended)}" if ended else "")


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
    config.errorlog = logging.getLogger("rocketpy.console.http")
    if settings.tls_cert or settings.tls_key:
        if not (settings.tls_cert and settings.tls_key):
            raise ValueError("--tls-cert and --tls-key go together")
        config.certfile, config.keyfile = settings.tls_cert, settings.tls_key
    clusters = Clusters(settings.namesrvs)
    app = build_app(settings, clusters)
    try:
        async with trio.open_nursery() as nursery:
            urls = await nursery.start(serve, HostGuard(app, host, settings.public_url), config)
            url = urls[0] if urls else f"{'https' if config.ssl_enabled else 'http'}://{host}:{port}"
            if settings.users_file and settings.users is not None:
                nursery.start_soon(watch_users_file, settings, app.state.sessions)
            if settings.users is None and not is_loopback(host):
                log.warning("console on %s without a users file: whoever reaches it may change the cluster "
                            "(give --users FILE)", url)
            log.info("console on %s (NameServer %s)", url, " | ".join(clusters.namesrvs))
            task_status.started(url)
    finally:
        await clusters.aclose()
