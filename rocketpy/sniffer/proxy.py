"""``rocketpy proxy``: a decoding TCP proxy, the capture that needs no privilege.

Bytes are forwarded first and decoded second, each direction on its own, so the
proxy never changes or delays what it carries by more than a copy: a frame that
does not decode is still forwarded untouched.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable

import trio

from ..remoting.tls import HANDSHAKE_TIMEOUT, TlsConfig, accept_stream, connect_stream
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


def _endpoint(sock_addr: tuple) -> Endpoint:
    return str(sock_addr[0]), int(sock_addr[1])


async def _pump(
    src: trio.abc.Stream,
    dst: trio.abc.Stream,
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
        frames, skipped = decoder.feed(bytes(data))
        if skipped:
            on_event(StreamNote(now, src_ep, dst_ep, "resync", skipped))
        for raw in frames:
            on_event(decode_frame(now, src_ep, dst_ep, raw, from_server))
    if decoder.buffered:
        n = decoder.buffered
        on_event(StreamNote(time.time(), src_ep, dst_ep, "error", n, f"connection closed inside a frame ({n} bytes)"))
    if isinstance(dst, trio.abc.HalfCloseableStream):  # a TLS stream cannot half-close
        try:
            await dst.send_eof()  # half-close: the other direction may still have answers to carry
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass


class ProxyTls:
    """TLS at the proxy: the listener accepts as a server in ``config.mode`` (permissive: plain and TLS),
    and a client that came with TLS is carried to the upstream over TLS too."""

    def __init__(self, config: TlsConfig) -> None:
        self.config = config
        self.server_context = config.server_context()
        self.client_context: ssl.SSLContext = config.client_context()


async def _handle(
    client: trio.SocketStream,
    upstream: tuple[str, int],
    on_event: Callable[[Event], None],
    tls: ProxyTls | None = None,
) -> None:
    client_ep = _endpoint(client.socket.getpeername())
    near: trio.abc.Stream = client
    if tls is not None and tls.server_context is not None:
        served = await accept_stream(client, tls.config.mode, tls.server_context, f"{client_ep[0]}:{client_ep[1]}",
                                     wait_first_byte=120.0)
        if served is None:
            on_event(StreamNote(time.time(), client_ep, upstream, "error", 0, "client refused (TLS mode) or silent"))
            await trio.aclose_forcefully(client)
            return
        near = served
    try:
        sock = await trio.open_tcp_stream(*upstream)
    except OSError as exc:
        on_event(StreamNote(time.time(), client_ep, upstream, "error", 0, f"upstream {upstream} unreachable: {exc}"))
        await trio.aclose_forcefully(near)
        return
    server_ep = _endpoint(sock.socket.getpeername())
    far: trio.abc.Stream = sock
    if tls is not None and isinstance(near, trio.SSLStream):
        try:
            with trio.fail_after(HANDSHAKE_TIMEOUT):
                far = await connect_stream(sock, tls.client_context, upstream[0])
        except (ConnectionError, trio.TooSlowError) as exc:
            on_event(StreamNote(time.time(), client_ep, upstream, "error", 0, f"upstream TLS: {exc or 'timeout'}"))
            await trio.aclose_forcefully(sock)
            await trio.aclose_forcefully(near)
            return
    async with near as client_stream, far as server:

        async def guarded(src: trio.abc.Stream, dst: trio.abc.Stream, a: Endpoint, b: Endpoint,
                          from_server: bool) -> None:
            try:
                await _pump(src, dst, a, b, from_server, on_event)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                nursery.cancel_scope.cancel()  # one side reset: tear the whole connection down

        async with trio.open_nursery() as nursery:
            nursery.start_soon(guarded, client_stream, server, client_ep, server_ep, False)
            nursery.start_soon(guarded, server, client_stream, server_ep, client_ep, True)


async def serve_proxy(
    listen: tuple[str, int],
    upstream: tuple[str, int],
    on_event: Callable[[Event], None],
    *,
    tls: TlsConfig | None = None,
    task_status: trio.TaskStatus[list[trio.SocketListener]] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept on ``listen``, connect each client to ``upstream``, decode both ways until cancelled.

    With ``tls`` the proxy terminates TLS from its clients (see :class:`ProxyTls`) and decodes what
    they send in clear. ``task_status.started`` gets the listeners (their bound ports, for port 0).
    """
    proxy_tls = await trio.to_thread.run_sync(ProxyTls, tls) if tls is not None else None
    listeners = await trio.open_tcp_listeners(listen[1], host=listen[0])

    async def handler(stream: trio.SocketStream) -> None:
        await _handle(stream, upstream, on_event, proxy_tls)

    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, handler, listeners)
        task_status.started(listeners)
