"""``rocketpy proxy``: a decoding TCP proxy, the capture that needs no privilege.

Bytes are forwarded first and decoded second, each direction on its own, so the
proxy never changes or delays what it carries by more than a copy: a frame that
does not decode is still forwarded untouched.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import trio

from .framing import StreamDecoder
from .packet import Endpoint
from .reassembly import Event, StreamNote, decode_frame

_CHUNK = 1 << 16


def parse_hostport(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """``HOST:PORT``, ``[v6]:PORT`` or ``PORT``."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = default_host, text
    host = host.strip("[]") or default_host
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"not HOST:PORT: {text!r}")
    return host, int(port)


def _endpoint(sock_addr: tuple) -> Endpoint:  # type: ignore[type-arg]
    return str(sock_addr[0]), int(sock_addr[1])


async def _pump(
    src: trio.SocketStream,
    dst: trio.SocketStream,
    src_ep: Endpoint,
    dst_ep: Endpoint,
    from_server: bool,
    on_event: Callable[[Event], None],
) -> None:
    decoder = StreamDecoder(synced=True)
    while True:
        data = await src.receive_some(_CHUNK)
        if not data:
            break
        await dst.send_all(data)
        now = time.time()
        frames, skipped = decoder.feed(data)
        if skipped:
            on_event(StreamNote(now, src_ep, dst_ep, "resync", skipped))
        for raw in frames:
            on_event(decode_frame(now, src_ep, dst_ep, raw, from_server))
    if decoder.buffered:
        n = decoder.buffered
        on_event(StreamNote(time.time(), src_ep, dst_ep, "error", n, f"connection closed inside a frame ({n} bytes)"))
    try:
        await dst.send_eof()  # half-close: the other direction may still have answers to carry
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def _handle(client: trio.SocketStream, upstream: tuple[str, int], on_event: Callable[[Event], None]) -> None:
    client_ep = _endpoint(client.socket.getpeername())
    try:
        server = await trio.open_tcp_stream(*upstream)
    except OSError as exc:
        on_event(StreamNote(time.time(), client_ep, upstream, "error", 0, f"upstream {upstream} unreachable: {exc}"))
        await client.aclose()
        return
    server_ep = _endpoint(server.socket.getpeername())
    async with client, server:

        async def guarded(src: trio.SocketStream, dst: trio.SocketStream, a: Endpoint, b: Endpoint,
                          from_server: bool) -> None:
            try:
                await _pump(src, dst, a, b, from_server, on_event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                nursery.cancel_scope.cancel()  # one side reset: tear the whole connection down

        async with trio.open_nursery() as nursery:
            nursery.start_soon(guarded, client, server, client_ep, server_ep, False)
            nursery.start_soon(guarded, server, client, server_ep, client_ep, True)


async def serve_proxy(
    listen: tuple[str, int],
    upstream: tuple[str, int],
    on_event: Callable[[Event], None],
    *,
    task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept on ``listen``, connect each client to ``upstream``, decode both ways until cancelled.

    ``task_status.started`` gets the listeners (their bound ports, for port 0).
    """
    listeners = await trio.open_tcp_listeners(listen[1], host=listen[0])

    async def handler(stream: trio.SocketStream) -> None:
        await _handle(stream, upstream, on_event)

    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handler, listeners)
        task_status.started(listeners)
