"""A remoting server on trio.serve_tcp: one Connection per accepted stream.

Connection events mirror Java's ChannelEventListener: ``on_connect`` when a peer
arrives, ``on_close`` whenever its connection ends (peer closed, reset, bad frame,
idle); the NameServer drops the brokers registered through a closed connection.
"""

from __future__ import annotations

import functools
import logging
import math
import ssl
from collections.abc import Callable
from typing import Any

import trio

from ..codecs import DEFAULT_MAX_FRAME
from .connection import Connection, peer_address
from .dispatch import Dispatcher, RequestContext
from .tls import TlsConfig, TlsConfigError, TlsMode, accept_stream

log = logging.getLogger("rocketpy.remoting")

ConnectionHook = Callable[[Connection], Any]


class RemotingServer:
    """Serves a Dispatcher to every accepted connection; ``connections`` are the live ones."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        state: Any = None,
        on_connect: ConnectionHook | None = None,
        on_close: ConnectionHook | None = None,
        max_frame: int = DEFAULT_MAX_FRAME,
        idle_timeout: float = math.inf,
        tls: TlsConfig | None = None,
        max_connections: int = 0,
    ) -> None:
        self.dispatcher = dispatcher
        #: TLS settings (None: plain only); the context is made when serving starts
        self.tls = tls
        self.tls_context: ssl.SSLContext | None = None
        #: refuse connections beyond this many (0: no cap)
        self.max_connections = max_connections
        #: streams accepted, not yet connections: the scope of each one's wait for a first byte, and
        #: when the sweep (close_idle_connections) gives up on it
        self._accepting: dict[trio.CancelScope, float] = {}
        self._cap_logged = False
        #: connections served over TLS so far (a plain peer is not counted)
        self.tls_accepted = 0
        self.state = state
        self.on_connect = on_connect
        self.on_close = on_close
        self.max_frame = max_frame
        self.idle_timeout = idle_timeout
        self.connections: set[Connection] = set()
        self.listeners: list[trio.SocketListener] = []
        self.host: str | None = None
        self.port: int | None = None

    @property
    def address(self) -> str:
        """``host:port`` that peers connect to."""
        return f"{self.host}:{self.port}"

    async def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        task_status: trio.TaskStatus[RemotingServer] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Listen and serve until cancelled; ``task_status.started(self)`` once listening.

        TlsConfigError when the TLS settings cannot be used."""
        if self.tls is not None and self.tls.mode is not TlsMode.DISABLED:
            # key generation and file reads stay off the event loop
            try:
                self.tls_context = await trio.to_thread.run_sync(self.tls.server_context)
            except TlsConfigError as exc:
                if self.tls.mode is not TlsMode.PERMISSIVE or not self.tls.test_mode:
                    raise
                # the implicit default must not keep a server from serving plain connections
                log.warning("TLS off: %s", exc)
        async with trio.open_nursery() as nursery:
            try:
                self.listeners = await nursery.start(functools.partial(trio.serve_tcp, self.handle_stream, port,
                                                                       host=host))
            except OSError as exc:  # name the address: "Address already in use" alone does not say which
                raise OSError(exc.errno, f"cannot listen on {host or '0.0.0.0'}:{port}: {exc.strerror}") from None
            sockname = self.listeners[0].socket.getsockname()
            self.host, self.port = sockname[0], sockname[1]
            log.info("remoting server listening on %s (TLS %s)", self.address,
                     self.tls.mode.value if self.tls and self.tls_context else "disabled")
            if self.idle_timeout != math.inf:
                nursery.start_soon(self.close_idle_connections)
            task_status.started(self)

    async def close_idle_connections(self) -> None:
        """Close connections silent for ``idle_timeout`` (Java's IdleStateHandler), and end the wait of
        accepted streams that sent no first byte in that time; one check per quarter (at most 5 s)."""
        period = min(self.idle_timeout / 4, 5.0)
        while True:
            await trio.sleep(period)
            now = trio.current_time()
            for scope in [s for s, until in self._accepting.items() if until <= now]:
                scope.cancel()
            limit = now - self.idle_timeout
            for conn in [c for c in self.connections if c.last_active < limit]:
                log.info("closing %s: idle for %.0f s", conn.remote_addr, self.idle_timeout)
                await conn.aclose()

    async def handle_stream(self, stream: trio.abc.Stream, remote_addr: str | None = None) -> None:
        """Serve one accepted stream until it ends (usable with in-memory streams too)."""
        remote_addr = remote_addr or peer_address(stream)
        if self.max_connections and len(self.connections) + len(self._accepting) >= self.max_connections:
            if not self._cap_logged:  # once per episode, not once per refused peer
                self._cap_logged = True
                log.warning("%s: connection cap of %d reached, refusing new connections (first: %s)",
                            self.address, self.max_connections, remote_addr)
            await trio.aclose_forcefully(stream)
            return
        self._cap_logged = False
        if self.tls_context is not None and self.tls is not None:
            # cancelled by the sweep, not by a deadline of its own (see accept_stream)
            waiting = trio.CancelScope()
            self._accepting[waiting] = trio.current_time() + self.idle_timeout
            try:
                served = await accept_stream(stream, self.tls.mode, self.tls_context, remote_addr,
                                             wait_first_byte=waiting)
            finally:
                del self._accepting[waiting]
            if served is None:
                await trio.aclose_forcefully(stream)
                return
            if isinstance(served, trio.SSLStream):
                self.tls_accepted += 1
            stream = served
        conn = Connection(stream, remote_addr, max_frame=self.max_frame)
        ctx = RequestContext(connection=conn, remote_addr=conn.remote_addr, state=self.state)
        self.connections.add(conn)
        try:
            self._fire(self.on_connect, conn)
            await conn.serve(self.dispatcher, ctx, inline=True)
        except Exception:
            # one connection's failure must never stop the listener
            log.exception("connection %s failed", conn.remote_addr)
            await conn.aclose()
        finally:
            self.connections.discard(conn)
            self._fire(self.on_close, conn)

    @staticmethod
    def _fire(hook: ConnectionHook | None, conn: Connection) -> None:
        if hook is None:
            return
        try:
            hook(conn)
        except Exception:
            log.exception("connection hook failed for %s", conn.remote_addr)


async def serve_remoting(
    dispatcher: Dispatcher,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    state: Any = None,
    on_connect: ConnectionHook | None = None,
    on_close: ConnectionHook | None = None,
    max_frame: int = DEFAULT_MAX_FRAME,
    idle_timeout: float = math.inf,
    tls: TlsConfig | None = None,
    max_connections: int = 0,
    task_status: trio.TaskStatus[RemotingServer] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``dispatcher`` on host:port until cancelled; started with the RemotingServer."""
    server = RemotingServer(
        dispatcher,
        state=state,
        on_connect=on_connect,
        on_close=on_close,
        max_frame=max_frame,
        idle_timeout=idle_timeout,
        tls=tls,
        max_connections=max_connections,
    )
    await server.serve(host, port, task_status=task_status)
