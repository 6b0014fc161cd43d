"""What the trio and asyncio remoting clients share: the pool of connections by address and the calls on it.

Only opening a connection differs between the two (trio streams in a nursery, an asyncio Protocol), so each
client (remoting.client.RemotingClient, remoting.aio.AsyncioRemotingClient) supplies :meth:`connection`; the
RPC hook, the fast path to an open connection's own invoke, oneway and async requests, the counts and closing
are written once here.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Generic, Protocol, TypeVar

import anyio

from ..codecs import RemotingCommand
from .core import AnswerFuture, ConnectionCore
from .errors import RemotingTimeoutError

__all__ = ["ConnectionPool", "PooledConnection"]


class PooledConnection(Protocol):
    """A client connection as either driver makes it."""

    core: ConnectionCore
    closed: bool
    close_on_timeout: bool

    def invoke(self, request: Any, timeout: float) -> Coroutine[Any, Any, RemotingCommand]: ...

    async def invoke_oneway(self, request: Any) -> None: ...

    def request_soon(self, request: Any, timeout: float, callback: Callable[[Any], Any], *,
                     now: bool = False) -> Any: ...

    async def request_async(self, request: Any, timeout: float,
                            callback: Callable[[Any], Any] | None = None) -> Any: ...

    async def aclose(self) -> None: ...


C = TypeVar("C", bound=PooledConnection)


class ConnectionPool(Generic[C]):
    """Pooled outgoing connections: subclasses open them (:meth:`connection`)."""

    def __init__(self, *, close_on_timeout: bool, rpc_hook: Callable[[RemotingCommand], None] | None) -> None:
        #: Java's RPCHook.doBeforeRequest: runs on every request just before it is sent (ACL signing)
        self.rpc_hook = rpc_hook
        self._close_on_timeout = close_on_timeout
        self._pool: dict[str, C] = {}
        self.closed = False

    async def connection(self, addr: str, timeout: float | None = None) -> C:
        """The pooled connection to ``addr``, opened on first use."""
        raise NotImplementedError

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

    def _hooked(self, request: Any) -> Any:
        """The request after Java's RPCHook.doBeforeRequest (a prepared request becomes its command first)."""
        if self.rpc_hook is None:
            return request
        if not isinstance(request, RemotingCommand):
            request = request.command()
        self.rpc_hook(request)
        return request

    def invoke(self, addr: str, request: Any, timeout: float = 3.0) -> Coroutine[Any, Any, RemotingCommand]:
        """Send ``request`` to ``addr`` and return its response (the timeout covers connecting; a timeout closes
        the connection when close_on_timeout is set). To await: on an open pooled connection, that
        connection's own invoke coroutine (no coroutine of this client's for every request to pass through)."""
        conn = self._pool.get(addr)
        if conn is None or conn.closed or self.rpc_hook is not None:
            return self._invoke(addr, request, timeout)
        return conn.invoke(request, timeout)

    async def _invoke(self, addr: str, request: Any, timeout: float) -> RemotingCommand:
        """invoke, connecting first when needed, with the RPC hook applied."""
        conn = self._pool.get(addr)
        if conn is None or conn.closed:
            deadline = anyio.current_time() + timeout
            conn = await self.connection(addr, timeout)
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                raise RemotingTimeoutError(f"invoke to {addr}: connecting used the whole {timeout} s")
        else:
            remaining = timeout  # pooled: no time went by
        return await conn.invoke(self._hooked(request), remaining)

    def is_open(self, addr: str) -> bool:
        """Whether a connection to ``addr`` is open in the pool (send_soon can use it)."""
        conn = self._pool.get(addr)
        return conn is not None and not conn.closed

    def pending_requests(self) -> int:
        """Requests sent on this client's connections and not yet answered, timed out or forgotten."""
        return sum(len(conn.core.requests) for conn in self._pool.values())

    def send_soon(self, addr: str, request: Any, timeout: float, callback: Callable[[Any], Any], *,
                  now: bool = False) -> AnswerFuture | None:
        """An async request without waiting, on the open connection to ``addr``: the request goes out with the
        others of this turn (``now``: at once, when no write is under way) and ``callback`` gets the future once
        it ends. None when no connection to ``addr`` is open."""
        conn = self._pool.get(addr)
        if conn is None or conn.closed:
            return None
        future: AnswerFuture | None = conn.request_soon(self._hooked(request), timeout, callback, now=now)
        return future

    async def invoke_oneway(self, addr: str, request: Any) -> None:
        conn = await self.connection(addr)
        await conn.invoke_oneway(self._hooked(request))

    async def invoke_async(self, addr: str, request: RemotingCommand, timeout: float = 3.0,
                           callback: Callable[[Any], Any] | None = None) -> AnswerFuture:
        """Send ``request`` and return at once; ``await future.wait()`` or get ``callback(future)``. The future
        ends with the response, a RemotingTimeoutError after ``timeout``, or ConnectionClosedError."""
        conn = await self.connection(addr, timeout)
        future: AnswerFuture = await conn.request_async(self._hooked(request), timeout, callback)
        return future

    async def close_connection(self, addr: str) -> None:
        conn = self._pool.pop(addr, None)
        if conn is not None:
            await conn.aclose()

    async def aclose(self) -> None:
        self.closed = True
        for addr in list(self._pool):
            await self.close_connection(addr)
