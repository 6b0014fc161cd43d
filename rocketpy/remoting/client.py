"""Outgoing remoting connections: a pool per address, request/response by opaque.

Used by tests, the broker (registering with NameServers) and the Python client. A
peer may also send requests down a connection we opened (a broker asks a producer
to check a transaction); give the client a Dispatcher to answer them.
"""

from __future__ import annotations

import itertools
import logging
import ssl
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from ..codecs import DEFAULT_MAX_FRAME, RemotingCommand
from ..keyed_locks import KeyedLocks
from .client_connection import ClientConnection
from .dispatch import Dispatcher, RequestContext
from .errors import RemotingConnectError
from .pool import ConnectionPool
from .tls import connect_stream

log = logging.getLogger("rocketpy.remoting")

DEFAULT_TIMEOUT = 3.0


def split_address(addr: str) -> tuple[str, int]:
    """``host:port`` split at the last colon, like Java's RemotingHelper.string2SocketAddress."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise RemotingConnectError(f"bad address {addr!r}, expected host:port")
    return host.strip("[]"), int(port)


class RemotingClient(ConnectionPool[ClientConnection]):
    """Pooled outgoing connections on trio; each one's reader runs in the client's nursery."""

    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        dispatcher: Dispatcher | None = None,
        state: Any = None,
        connect_timeout: float = DEFAULT_TIMEOUT,
        max_frame: int = DEFAULT_MAX_FRAME,
        close_on_timeout: bool = True,
        ssl_context: ssl.SSLContext | None = None,
        rpc_hook: Callable[[RemotingCommand], None] | None = None,
    ) -> None:
        super().__init__(close_on_timeout=close_on_timeout, rpc_hook=rpc_hook)
        self.nursery = nursery
        #: TLS on every connection when set (see tls.TlsConfig.client_context)
        self.ssl_context = ssl_context
        self.dispatcher = dispatcher
        self.state = state
        self.connect_timeout = connect_timeout
        self.max_frame = max_frame
        self._opaques = itertools.count(1)
        #: one connect per address at a time, a lock kept only while in use: a client talks to many
        #: addresses over its life (brokers come and go)
        self._connecting: KeyedLocks[str] = KeyedLocks()

    # -- connections ----------------------------------------------------------
    async def connection(self, addr: str, timeout: float | None = None) -> ClientConnection:
        """The pooled connection to ``addr``, opened on first use."""
        conn = self._pool.get(addr)
        if conn is not None and not conn.closed:
            return conn
        if self.closed:
            raise RemotingConnectError("client is closed")
        async with self._connecting.hold(addr):
            return await self._connect(addr, timeout)

    async def _connect(self, addr: str, timeout: float | None) -> ClientConnection:
        """Open the connection to ``addr`` unless a task before us did (under the address's lock)."""
        conn = self._pool.get(addr)
        if conn is not None and not conn.closed:
            return conn
        host, port = split_address(addr)
        limit = self.connect_timeout if timeout is None else min(timeout, self.connect_timeout)
        try:
            with trio.fail_after(limit):
                stream: trio.abc.Stream = await trio.open_tcp_stream(host, port)
                if self.ssl_context is not None:
                    stream = await connect_stream(stream, self.ssl_context, host)
        except (OSError, trio.TooSlowError) as exc:
            raise RemotingConnectError(f"connect to {addr} failed: {exc or 'timeout'}") from exc
        conn = ClientConnection(stream, addr, max_frame=self.max_frame, opaques=self._opaques,
                                close_on_timeout=self._close_on_timeout)
        self._pool[addr] = conn
        await self.nursery.start(self._run, addr, conn)
        return conn

    async def _run(self, addr: str, conn: ClientConnection, *, task_status: trio.TaskStatus[None]) -> None:
        ctx = RequestContext(connection=conn, remote_addr=addr, state=self.state)
        task_status.started()
        try:
            # handlers run in their own tasks: one may invoke the peer over this same connection
            await conn.run(self.dispatcher, ctx)
        except Exception:
            # one connection's failure must not take the client (and its other connections) down
            log.exception("connection to %s failed", addr)
        finally:
            if self._pool.get(addr) is conn:
                del self._pool[addr]


@asynccontextmanager
async def open_remoting_client(
    *,
    dispatcher: Dispatcher | None = None,
    state: Any = None,
    connect_timeout: float = DEFAULT_TIMEOUT,
    max_frame: int = DEFAULT_MAX_FRAME,
    close_on_timeout: bool = True,
    ssl_context: ssl.SSLContext | None = None,
    rpc_hook: Callable[[RemotingCommand], None] | None = None,
) -> AsyncIterator[RemotingClient]:
    """A RemotingClient whose connections all close when the block ends."""
    async with trio.open_nursery() as nursery:
        client = RemotingClient(
            nursery,
            dispatcher=dispatcher,
            state=state,
            connect_timeout=connect_timeout,
            max_frame=max_frame,
            close_on_timeout=close_on_timeout,
            ssl_context=ssl_context,
            rpc_hook=rpc_hook,
        )
        try:
            yield client
        finally:
            await client.aclose()
            nursery.cancel_scope.cancel()
