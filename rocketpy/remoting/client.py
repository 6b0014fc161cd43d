"""Outgoing remoting connections: a pool per address, request/response by opaque.

Used by tests, the broker (registering with NameServers) and the Python client. A
peer may also send requests down a connection we opened (a broker asks a producer
to check a transaction); give the client a Dispatcher to answer them.
"""

from __future__ import annotations

import itertools
import logging
import ssl
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import trio

from ..codecs import DEFAULT_MAX_FRAME, RemotingCommand
from ..keyed_locks import KeyedLocks
from .client_connection import ClientConnection, Request
from .connection import ResponseFuture
from .dispatch import Dispatcher, RequestContext
from .errors import RemotingConnectError, RemotingTimeoutError
from .tls import connect_stream

log = logging.getLogger("rocketpy.remoting")

DEFAULT_TIMEOUT = 3.0


def split_address(addr: str) -> tuple[str, int]:
    """``host:port`` split at the last colon, like Java's RemotingHelper.string2SocketAddress."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise RemotingConnectError(f"bad address {addr!r}, expected host:port")
    return host.strip("[]"), int(port)


class RemotingClient:
    """Pooled outgoing connections; each one's reader runs in the client's nursery."""

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
        self.nursery = nursery
        #: Java's RPCHook.doBeforeRequest: runs on every request just before it is sent (ACL signing)
        self.rpc_hook = rpc_hook
        #: TLS on every connection when set (see tls.TlsConfig.client_context)
        self.ssl_context = ssl_context
        self._close_on_timeout = close_on_timeout
        self.dispatcher = dispatcher
        self.state = state
        self.connect_timeout = connect_timeout
        self.max_frame = max_frame
        self._opaques = itertools.count(1)
        self._pool: dict[str, ClientConnection] = {}
        #: one connect per address at a time, a lock kept only while in use: a client talks to many
        #: addresses over its life (brokers come and go)
        self._connecting: KeyedLocks[str] = KeyedLocks()
        self.closed = False

    @property
    def close_on_timeout(self) -> bool:
        """Java clients close a connection whose sync request timed out (clientCloseSocketIfTimeout): each
        connection does it itself (its invoke's coroutine is the one a caller awaits)."""
        return self._close_on_timeout

    @close_on_timeout.setter
    def close_on_timeout(self, value: bool) -> None:
        self._close_on_timeout = value
        for conn in self._pool.values():
            conn.close_on_timeout = value

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

    async def close_connection(self, addr: str) -> None:
        conn = self._pool.pop(addr, None)
        if conn is not None:
            await conn.aclose()

    async def aclose(self) -> None:
        self.closed = True
        for addr in list(self._pool):
            await self.close_connection(addr)

    # -- invocations ----------------------------------------------------------
    def _hooked(self, request: Request) -> Request:
        """The request after Java's RPCHook.doBeforeRequest (a prepared request becomes its command first)."""
        if self.rpc_hook is None:
            return request
        if not isinstance(request, RemotingCommand):
            request = request.command()
        self.rpc_hook(request)
        return request

    def invoke(
        self, addr: str, request: Request, timeout: float = DEFAULT_TIMEOUT
    ) -> Coroutine[Any, Any, RemotingCommand]:
        """Send ``request`` to ``addr`` and return its response (the timeout covers connecting; a timeout closes
        the connection when close_on_timeout is set). To await: on an open pooled connection, that
        connection's own invoke coroutine (no coroutine of this client's for every request to pass through)."""
        conn = self._pool.get(addr)
        if conn is None or conn.closed or self.rpc_hook is not None:
            return self._invoke(addr, request, timeout)
        return conn.invoke(request, timeout)

    async def _invoke(self, addr: str, request: Request, timeout: float) -> RemotingCommand:
        """invoke, connecting first when needed, with the RPC hook applied."""
        conn = self._pool.get(addr)
        if conn is None or conn.closed:
            deadline = trio.current_time() + timeout
            conn = await self.connection(addr, timeout)
            remaining = deadline - trio.current_time()
            if remaining <= 0:
                raise RemotingTimeoutError(f"invoke to {addr}: connecting used the whole {timeout} s")
        else:
            remaining = timeout  # pooled: no time went by
        return await conn.invoke(self._hooked(request), remaining)

    def pending_requests(self) -> int:
        """Requests sent on this client's connections and not yet answered, timed out or forgotten."""
        return sum(len(conn.core.requests) for conn in self._pool.values())

    def is_open(self, addr: str) -> bool:
        """Whether a connection to ``addr`` is open in the pool (send_soon can use it)."""
        conn = self._pool.get(addr)
        return conn is not None and not conn.closed

    def send_soon(
        self, addr: str, request: Request, timeout: float, callback: Callable[[ResponseFuture], Any], *,
        now: bool = False,
    ) -> ResponseFuture | None:
        """invoke_async without waiting, on the open connection to ``addr``: the request goes out with the others
        of this turn (``now``: at once, when no write is under way) and ``callback`` gets the future once it
        ends. None when no connection to ``addr`` is open."""
        conn = self._pool.get(addr)
        if conn is None or conn.closed:
            return None
        return conn.request_soon(self._hooked(request), timeout, callback, now=now)

    async def invoke_oneway(self, addr: str, request: Request) -> None:
        conn = await self.connection(addr)
        await conn.invoke_oneway(self._hooked(request))

    async def invoke_async(
        self,
        addr: str,
        request: RemotingCommand,
        timeout: float = DEFAULT_TIMEOUT,
        callback: Callable[[ResponseFuture], Any] | None = None,
    ) -> ResponseFuture:
        """Send ``request`` and return at once; ``await future.wait()`` or get ``callback(future)``.

        The future ends with the response, a RemotingTimeoutError after ``timeout``, or
        ConnectionClosedError.
        """
        conn = await self.connection(addr, timeout)
        return await conn.request_async(self._hooked(request), timeout, callback)


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
