"""The asyncio driver of a remoting connection: :class:`~rocketpy.remoting.core.ConnectionCore` on an asyncio
``Protocol``, so an asyncio program (uvloop's loop too) talks to RocketMQ servers with no thread and no trio.

It does what the trio driver (client_connection.py) does, the asyncio way:

- the frames of one loop iteration go out in one write: the first request of an iteration schedules the
  write with ``call_soon``, so every sender already ready in that iteration queues behind it; past
  WRITE_CHUNK frames they are written at once, so the peer works on the first while the others are built;
- each wait is an asyncio Future completed by ``data_received``; one timer per connection (``call_at`` for the
  earliest deadline) ends the waits that time out, as Java's scanResponseTable does;
- a cancelled ``await invoke(...)`` forgets its wait, so nothing is left behind on the connection (an answer
  arriving later is dropped);
- the peer's requests (a broker's CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED...) go to the same
  Dispatcher the trio client uses, each in a task of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import ssl
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..codecs import DEFAULT_MAX_FRAME, CodecError, RemotingCommand
from ..keyed_locks import KeyedLocks
from .client import split_address
from .client_connection import WRITE_CHUNK, Request, encode_request
from .core import ConnectionCore, LaneFrame, ResponseFutureBase, encode_batch
from .dispatch import Dispatcher, RequestContext
from .errors import (
    ConnectionClosedError,
    RemotingConnectError,
    RemotingSendRequestError,
    RemotingTimeoutError,
)
from .pool import ConnectionPool
from .tls import describe_tls_error

log = logging.getLogger("rocketpy.remoting")

__all__ = ["AsyncioConnection", "AsyncioRemotingClient", "AsyncioResponseFuture", "open_connection"]

_INF = math.inf
DEFAULT_TIMEOUT = 3.0


class _Wait:
    """One ``invoke`` waiting for its answer: the core's Waiter on an asyncio Future."""

    __slots__ = ("opaque", "request", "timeout", "future")

    def __init__(self, opaque: int, request: Any, timeout: float, future: asyncio.Future[RemotingCommand]) -> None:
        self.opaque = opaque
        self.request = request
        self.timeout = timeout
        self.future = future

    @property
    def done(self) -> bool:
        return self.future.done()

    def set_response(self, response: RemotingCommand) -> None:
        self.request = None  # complete() read its code already; a heap entry must not keep the body
        if not self.future.done():
            self.future.set_result(response)

    def set_error(self, error: BaseException) -> None:
        self.request = None
        if not self.future.done():
            self.future.set_exception(error)


class AsyncioResponseFuture(ResponseFutureBase):
    """A request sent without waiting (``request_async``, ``request_soon``) on an asyncio connection and the
    response it waits for: the trio driver's ResponseFuture on an asyncio Future, made only if someone waits."""

    __slots__ = ("_future",)

    def __init__(self, opaque: int, request: Any, timeout: float) -> None:
        super().__init__(opaque, request, timeout)
        self._future: asyncio.Future[None] | None = None

    def _wake(self) -> None:
        self.request = None  # complete() read its code already; a heap entry must not keep the body
        if self._future is not None and not self._future.done():
            self._future.set_result(None)

    async def settled(self) -> None:
        """Wait until the future ends, whichever way."""
        if not self.done:
            if self._future is None:
                self._future = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._future)


class AsyncioConnection(asyncio.Protocol):
    """One remoting connection on an asyncio transport: requests out in batched writes, answers to their
    Futures, the peer's own requests to a Dispatcher."""

    def __init__(self, remote_addr: str, *, max_frame: int = DEFAULT_MAX_FRAME, opaques: Iterator[int] | None = None,
                 dispatcher: Dispatcher | None = None, state: Any = None, close_on_timeout: bool = False) -> None:
        self.remote_addr = remote_addr
        self.core = ConnectionCore(remote_addr, max_frame=max_frame, opaques=opaques)
        self.dispatcher = dispatcher
        self.state = state
        #: an invoke that times out closes the connection (Java's clientCloseSocketIfTimeout)
        self.close_on_timeout = close_on_timeout
        self.closed = False
        self.transport: asyncio.Transport | None = None
        self._loop = asyncio.get_running_loop()
        self._time = self._loop.time
        self._pending = self.core.requests.pending
        self._write_scheduled = False
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = _INF
        self._paused = False
        self._drained: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed: asyncio.Future[None] = self._loop.create_future()
        self.last_active = self._time()

    def __repr__(self) -> str:
        return f"<AsyncioConnection {self.remote_addr}{' closed' if self.closed else ''}>"

    # -- asyncio.Protocol ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.last_active = self._time()
        try:
            requests = self.core.receive(data)
        except CodecError as exc:
            log.error("decode exception, %s: %s; closing the connection", self.remote_addr, exc)
            self.close()
            return
        if requests:
            self._serve(requests)

    def eof_received(self) -> bool | None:
        buffered = self.core.reader.buffered
        if buffered:
            log.warning("%s closed mid-frame; %d bytes dropped", self.remote_addr, buffered)
        return None  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.transport = None
        self.core.close(ConnectionClosedError(f"connection to {self.remote_addr} closed"))
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._wake_writers()
        if not self._closed.done():
            self._closed.set_result(None)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        self._wake_writers()

    def _wake_writers(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    # -- writing ------------------------------------------------------------------------------------
    def _queue(self, frame: bytes) -> None:
        if self.core.queue(frame) >= WRITE_CHUNK:
            self._write()
        elif not self._write_scheduled:
            self._write_scheduled = True
            self._loop.call_soon(self._write)

    def _write(self) -> None:
        self._write_scheduled = False
        transport = self.transport
        data = self.core.data_to_send()
        if data and transport is not None and not self.closed:
            transport.write(data)
            self.last_active = self._time()

    async def _room(self) -> None:
        """Wait while the transport's buffer is over its high-water mark (the peer does not read)."""
        while self._paused and not self.closed:
            if self._drained is None:
                self._drained = self._loop.create_future()
            await self._drained

    def _check_open(self) -> None:
        if self.closed:
            raise RemotingSendRequestError(f"connection to {self.remote_addr} is closed")

    async def send_bytes(self, data: bytes) -> None:
        """Write raw frames (in order after what is queued)."""
        self._check_open()
        self._queue(data)
        await self._room()

    async def send_commands(self, commands: Iterable[RemotingCommand]) -> None:
        await self.send_bytes(encode_batch(commands))

    async def send_command(self, command: RemotingCommand) -> None:
        await self.send_bytes(encode_batch((command,)))

    # -- requests -----------------------------------------------------------------------------------
    def _arm(self, wait: Any, timeout: float) -> None:
        if timeout == _INF:
            return
        deadline = self._time() + timeout
        if self.core.requests.arm(wait, deadline) and deadline < self._timer_at:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._loop.call_at(deadline, self._expire)
            self._timer_at = deadline

    def _expire(self) -> None:
        self._timer, self._timer_at = None, _INF
        requests = self.core.requests
        requests.expire(self._time())
        deadline = requests.next_deadline
        if deadline != _INF and not self.closed:
            self._timer = self._loop.call_at(deadline, self._expire)
            self._timer_at = deadline

    async def invoke(self, request: Request, timeout: float) -> RemotingCommand:
        """Send ``request`` and wait up to ``timeout`` seconds for its response."""
        self._check_open()
        opaque = self.core.requests.next_opaque()
        frame = encode_request(request, opaque)
        future: asyncio.Future[RemotingCommand] = self._loop.create_future()
        wait = _Wait(opaque, request, timeout, future)
        self._pending[opaque] = wait
        self._arm(wait, timeout)
        self._queue(frame)
        try:
            if self._paused:
                await self._room()
            return await future
        except asyncio.CancelledError:
            # the caller gave up: nothing of this request stays on the connection (a late answer is dropped)
            self.core.requests.forget(opaque, wait)
            raise
        except RemotingTimeoutError:
            if self.close_on_timeout:
                self.close()
            raise

    async def invoke_oneway(self, request: Request) -> None:
        self._check_open()
        self._queue(encode_request(request, self.core.requests.next_opaque(), oneway=True))
        await self._room()

    def request_soon(self, request: Request, timeout: float, callback: Callable[[Any], Any] | None = None, *,
                     now: bool = False) -> AsyncioResponseFuture | None:
        """Send ``request`` with this iteration's others (``now``: at once) and return its future; ``callback``
        gets the future once it ends. None, and nothing sent, when the connection is closed."""
        if self.closed:
            return None
        opaque = self.core.requests.next_opaque()
        frame = encode_request(request, opaque)
        future = AsyncioResponseFuture(opaque, request, timeout)
        if callback is not None:
            future.add_done_callback(callback)
        self._pending[opaque] = future
        self._arm(future, timeout)
        self._queue(frame)
        if now:
            self._write()
        return future

    async def request_async(self, request: Request, timeout: float,
                            callback: Callable[[AsyncioResponseFuture], Any] | None = None) -> AsyncioResponseFuture:
        """Send ``request`` and return at once; the future ends with the response, a RemotingTimeoutError
        after ``timeout`` or ConnectionClosedError."""
        self._check_open()
        future = self.request_soon(request, timeout, callback)
        assert future is not None
        await self._room()
        return future

    # -- the peer's requests ------------------------------------------------------------------------
    def _serve(self, requests: list[RemotingCommand | LaneFrame]) -> None:
        if self.dispatcher is None:
            log.warning("%s sent %d request(s) to a peer that serves none", self.remote_addr, len(requests))
            return
        task = self._loop.create_task(self._answer(requests))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, requests: list[RemotingCommand | LaneFrame]) -> None:
        assert self.dispatcher is not None
        ctx = RequestContext(connection=self, remote_addr=self.remote_addr, state=self.state)  # type: ignore[arg-type]
        answers = []
        for request in requests:
            if type(request) is LaneFrame:  # no fast path on a client: decode it
                request = RemotingCommand.decode(request, self.core.reader.max_frame)
            response = await self.dispatcher.dispatch(ctx, request)  # type: ignore[arg-type]
            if response is not None:
                answers.append(response)
        if answers and not self.closed:
            self._queue(encode_batch(answers))

    # -- the end ------------------------------------------------------------------------------------
    def close(self) -> None:
        """Close now: every wait ends with ConnectionClosedError (once the transport reports it gone)."""
        if self.closed:
            return
        self.closed = True
        transport = self.transport
        if transport is not None:
            self._write()  # what is queued still goes, as the trio driver's turn would have written it
            transport.close()
        else:
            self.connection_lost(None)

    def closed_future(self) -> asyncio.Future[None]:
        """Done once the connection is gone (closed by either side)."""
        return self._closed

    async def closed_wait(self) -> None:
        """Wait until the connection is gone (closed by either side)."""
        await asyncio.shield(self._closed)

    async def aclose(self) -> None:
        self.close()
        for task in list(self._tasks):
            task.cancel()
        await self.closed_wait()


async def open_connection(host: str, port: int, *, remote_addr: str | None = None,
                          ssl_context: ssl.SSLContext | None = None, timeout: float = DEFAULT_TIMEOUT,
                          **kwargs: Any) -> AsyncioConnection:
    """A connected :class:`AsyncioConnection` to ``host:port`` (TLS with ``ssl_context``). The TCP connection
    and the TLS handshake are two steps, so a failed handshake is told as the trio driver tells it (``TLS
    handshake failed: <SSL reason>``), not as a refused connection."""
    loop = asyncio.get_running_loop()
    addr = remote_addr or f"{host}:{port}"
    transport: asyncio.Transport | None = None
    try:
        async with asyncio.timeout(timeout):
            transport, conn = await loop.create_connection(lambda: AsyncioConnection(addr, **kwargs), host, port)
            if ssl_context is not None:
                try:
                    tls = await loop.start_tls(transport, conn, ssl_context, server_hostname=host)
                except OSError as exc:  # ssl.SSLError among them
                    raise ConnectionError(f"TLS handshake failed: {describe_tls_error(exc)}") from None
                if tls is None:  # the transport closed under the handshake
                    raise ConnectionError("TLS handshake failed: connection closed")
                conn.transport = tls
    except (OSError, TimeoutError) as exc:
        if transport is not None:
            transport.abort()
        raise RemotingConnectError(f"connect to {addr} failed: {exc or 'timeout'}") from exc
    except BaseException:  # cancelled mid-connect: the socket must not leak
        if transport is not None:
            transport.abort()
        raise
    return conn


class AsyncioRemotingClient(ConnectionPool[AsyncioConnection]):
    """Pooled outgoing connections on asyncio: the trio RemotingClient's interface (pool.ConnectionPool), for
    the client's upper layers to use on either loop."""

    def __init__(self, *, dispatcher: Dispatcher | None = None, state: Any = None,
                 connect_timeout: float = DEFAULT_TIMEOUT, max_frame: int = DEFAULT_MAX_FRAME,
                 close_on_timeout: bool = True, ssl_context: ssl.SSLContext | None = None,
                 rpc_hook: Callable[[RemotingCommand], None] | None = None) -> None:
        super().__init__(close_on_timeout=close_on_timeout, rpc_hook=rpc_hook)
        self.dispatcher = dispatcher
        self.state = state
        self.connect_timeout = connect_timeout
        self.max_frame = max_frame
        self.ssl_context = ssl_context
        self._opaques = itertools.count(1)
        self._connecting: KeyedLocks[str] = KeyedLocks(asyncio.Lock)

    async def connection(self, addr: str, timeout: float | None = None) -> AsyncioConnection:
        """The pooled connection to ``addr``, opened on first use."""
        conn = self._pool.get(addr)
        if conn is not None and not conn.closed:
            return conn
        if self.closed:
            raise RemotingConnectError("client is closed")
        async with self._connecting.hold(addr):
            conn = self._pool.get(addr)
            if conn is not None and not conn.closed:
                return conn
            host, port = split_address(addr)
            limit = self.connect_timeout if timeout is None else min(timeout, self.connect_timeout)
            conn = await open_connection(host, port, remote_addr=addr, ssl_context=self.ssl_context, timeout=limit,
                                         max_frame=self.max_frame, opaques=self._opaques, dispatcher=self.dispatcher,
                                         state=self.state, close_on_timeout=self._close_on_timeout)
            self._pool[addr] = conn
            conn.closed_future().add_done_callback(lambda _f: self._forget(addr, conn))
            return conn

    def _forget(self, addr: str, conn: AsyncioConnection) -> None:
        if self._pool.get(addr) is conn:  # a closed connection leaves the pool, as the trio client's does
            del self._pool[addr]
