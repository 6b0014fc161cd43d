"""The requesting side of a connection: the frames of one scheduler turn written with one send, each answer
handed straight to its parked waiter, and every wait's timeout kept by one timer per connection.

A client with many concurrent senders would otherwise pay a ``send`` syscall, a trio Event, a cancel
scope and a few scheduling rounds per request. Here the first request of a turn yields once so that the
other senders of the turn queue behind it, then writes them all; the reader wakes each waiter with
``reschedule`` (no Event); the timeouts sit in a heap watched by one task per connection (no cancel scope
per request). A turn's frames go out every WRITE_CHUNK of them, so that the peer works on the first while
the turn's other senders build theirs (one write at the end of the turn would have client and peer take
turns, each idle while the other works). Serving the peer's own requests (a broker's
CHECK_TRANSACTION_STATE...) is Connection's.
"""

from __future__ import annotations

import logging
import math
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import outcome
import trio

from ..codecs import CodecError, RemotingCommand
from ..codecs.command import ONEWAY_FLAG
from .connection import Connection, ResponseFuture, receive_buffer
from .core import RequestTable
from .errors import RemotingSendRequestError, RemotingTimeoutError

if TYPE_CHECKING:
    from .dispatch import Dispatcher, RequestContext

log = logging.getLogger("rocketpy.remoting")

#: receives in a row, data waiting each time, after which the reader yields to the waiters it woke
READS_BEFORE_YIELD = 8
#: frames queued in a turn after which they are written at once (the rest of the turn goes at its end):
#: 4 to 16 measured alike with 32 senders; a write per frame would cost both sides a syscall per request
WRITE_CHUNK = 8
_INF = math.inf


def _send_some(sock: socket.socket, data: bytes | memoryview) -> int:
    """One non-blocking send: the bytes the socket took (0 when it had no room); OSError on failure."""
    try:
        return sock.send(data)
    except (BlockingIOError, InterruptedError):
        return 0


class PreparedRequest(Protocol):
    """A request encoded without a RemotingCommand (a producer's send template): its code, its frame for an
    opaque, and the equivalent command (for an RPC hook, which signs and extends a command)."""

    code: int

    def frame(self, opaque: int, oneway: bool = False) -> bytes: ...

    def command(self) -> RemotingCommand: ...


Request = RemotingCommand | PreparedRequest


def encode_request(request: Request, opaque: int, oneway: bool = False) -> bytes:
    """The frame of ``request`` under ``opaque`` (a command gets the opaque and, for oneway, the flag)."""
    if isinstance(request, RemotingCommand):
        request.opaque = opaque
        if oneway:
            request.flag |= ONEWAY_FLAG  # the peer answers nothing
        return b"".join(request.encode_parts())
    return request.frame(opaque, oneway)


class _Waiter(outcome.Outcome[RemotingCommand]):
    """One synchronous request waiting for its answer (the parts of ResponseFuture that complete() uses).

    Answered, the waiter is itself the outcome its task is woken with (or that invoke finds in ``result``): an
    outcome.Value made and unwrapped per answer cost about half a microsecond, 2-3 % of a client's send. It gives
    the answer once (as a Value does), so that a finished wait left in the heap of deadlines does not keep it."""

    __slots__ = ("opaque", "request", "timeout", "done", "task", "result", "table", "response")
    # an Outcome compares by the value it holds; a waiter is only ever itself
    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__  # type: ignore[assignment]

    def __init__(self, opaque: int, request: Request, timeout: float, table: RequestTable) -> None:
        self.opaque = opaque
        self.request: Request | None = request
        self.timeout = timeout
        self.done = False
        self.task: trio.lowlevel.Task | None = None
        self.result: outcome.Outcome[RemotingCommand] | None = None
        self.table = table
        self.response: RemotingCommand | None = None

    def _settle(self, result: outcome.Outcome[RemotingCommand]) -> None:
        if self.done:
            return
        self.done = True
        self.request = None  # complete() read its code already; a heap entry must not keep the body
        task = self.task
        if task is not None:
            self.task = None
            trio.lowlevel.reschedule(task, result)
        else:
            self.result = result

    def set_response(self, response: RemotingCommand) -> None:
        if self.done:
            return
        self.response = response
        self._settle(self)

    def unwrap(self) -> RemotingCommand:
        response, self.response = self.response, None
        assert response is not None, "an answer is given once"
        return response

    def send(self, gen: Any) -> Any:
        return gen.send(self.unwrap())

    async def asend(self, agen: Any) -> Any:
        return await agen.asend(self.unwrap())

    def set_error(self, error: BaseException) -> None:
        self._settle(outcome.Error(error))

    def abort(self, _raise_cancel: object) -> trio.lowlevel.Abort:
        self.task = None
        self.done = True
        self.request = None
        self.table.forget(self.opaque, self)  # cancelled: its answer, if it comes, is dropped quietly
        return trio.lowlevel.Abort.SUCCEEDED


class ClientConnection(Connection):
    """A Connection for the side that sends requests (clients, a broker registering with NameServers)."""

    def __init__(self, stream: trio.abc.Stream, remote_addr: str | None = None, *, close_on_timeout: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(stream, remote_addr, **kwargs)
        #: an invoke that times out closes the connection (Java's clientCloseSocketIfTimeout: a late answer
        #: or a stuck peer gets a fresh connection)
        self.close_on_timeout = close_on_timeout
        self._flushing = False
        #: the reader woke several waiters since the last write: their senders' next requests join one write
        self._woke_many = False
        self._timer: trio.CancelScope | None = None
        #: the run's clock (trio.current_time without its two wrapper calls: _arm reads it for every request)
        self._now: Callable[[], float] = trio.lowlevel.current_clock().current_time
        #: run()'s nursery, where request_soon's writes go
        self._nursery: trio.Nursery | None = None
        # plain TCP, while run() reads: a second Python object on the stream's own (non-blocking) descriptor,
        # for reads and writes without trio's stream layers (TLS and memory streams go through them)
        self._sock: socket.socket | None = None

    @property
    def _outbox(self) -> list[bytes]:
        """The frames queued for this turn's write (the core's)."""
        return self.core.outbox

    # -- writing ----------------------------------------------------------------------------------
    async def post(self, frame: bytes) -> None:
        """Queue ``frame``; the first poster of a turn yields once (unless nothing else is in flight), then
        writes what the turn queued with one send. A failed write closes the connection (its waiters get
        ConnectionClosedError) and raises RemotingSendRequestError in the poster that wrote."""
        if self.closed:
            raise RemotingSendRequestError(f"connection to {self.remote_addr} is closed")
        queued = self.core.queue(frame)
        if self._flushing:  # the writer of this turn takes it, or this poster writes the turn's first frames
            if queued >= WRITE_CHUNK:
                self._write_now()
            return
        self._flushing = True
        try:
            if len(self._pending) > 1 or self._woke_many:
                # other requests are in flight, or their answers just woke other senders (which may have
                # nothing in flight at this moment): the senders of this turn queue behind this one
                await trio.lowlevel.cancel_shielded_checkpoint()
            await self._flush()
        finally:
            self._flushing = False
            if self.closed:
                self.core.outbox.clear()

    def _free_socket(self) -> socket.socket | None:
        """The raw socket, when a write may go straight to it: no task is writing and no thread's bytes wait."""
        sock = self._sock
        return sock if sock is not None and not self._send_lock.locked() and not self._tail else None

    def _write_now(self) -> None:
        """Write what is queued with one non-blocking send, when the raw socket is free to take it; what it
        does not take (or all of it, on an error) stays first in the queue for the turn's writer, whose
        _flush then waits for room or reports the error."""
        sock = self._free_socket()
        if sock is None or self.closed:
            return
        core = self.core
        data = core.data_to_send()
        try:
            sent = _send_some(sock, data)
        except OSError:
            sent = 0  # _flush meets it again, and closes the connection
        if sent < len(data):
            core.unsent(data[sent:] if sent else data)
        else:
            self.last_active = self._now()

    async def _flush(self) -> None:
        self._woke_many = False
        core = self.core
        while core.outbox and not self.closed:
            data: bytes | memoryview = core.data_to_send()
            sock = self._free_socket()
            if sock is not None:
                try:
                    sent = _send_some(sock, data)
                except OSError as exc:
                    await self.aclose()
                    raise RemotingSendRequestError(f"send to {self.remote_addr} failed: {exc}") from exc
                self.last_active = trio.current_time()
                if sent == len(data):
                    continue
                data = memoryview(data)[sent:]
            try:
                await self.send_bytes(data)  # type: ignore[arg-type]  # the rest, under the send lock
            except trio.Cancelled:
                # cut short mid-write: the peer may hold part of a frame, so nothing more can go on this
                # connection (and the frames queued behind would wait for a writer that is gone)
                await self.aclose()
                raise

    # -- requests ---------------------------------------------------------------------------------
    def _arm(self, entry: Any, timeout: float) -> None:
        """Give a wait its deadline (and bring the timer forward when it is the earliest)."""
        if timeout == _INF:
            return
        deadline = self._now() + timeout
        if self.core.requests.arm(entry, deadline):
            timer = self._timer
            if timer is not None and deadline < timer.deadline:
                timer.deadline = deadline

    async def invoke(self, request: Request, timeout: float) -> RemotingCommand:
        """Send ``request`` and wait up to ``timeout`` seconds for its response."""
        opaque = self.next_opaque()
        frame = encode_request(request, opaque) if isinstance(request, RemotingCommand) else request.frame(opaque)
        waiter = _Waiter(opaque, request, timeout, self.core.requests)
        self._pending[opaque] = waiter
        self._arm(waiter, timeout)
        try:
            await self.post(frame)
        except BaseException:
            waiter.done = True
            self.core.requests.forget(opaque, waiter)
            raise
        try:
            result = waiter.result
            if result is not None:  # answered while the turn was written
                waiter.result = None
                return result.unwrap()
            # parked here, not in a method of the waiter: a coroutine less for the answer to pass through
            waiter.task = trio.lowlevel.current_task()
            return await trio.lowlevel.wait_task_rescheduled(waiter.abort)
        except RemotingTimeoutError:
            if self.close_on_timeout:
                await self.aclose()
            raise

    async def invoke_oneway(self, request: Request) -> None:
        await self.post(encode_request(request, self.next_opaque(), oneway=True))

    async def request_async(
        self, request: Request, timeout: float, callback: Callable[[ResponseFuture], Any] | None = None
    ) -> ResponseFuture:
        """Send ``request`` and return at once; the future ends with the response, a RemotingTimeoutError
        after ``timeout`` or ConnectionClosedError."""
        opaque = self.next_opaque()
        frame = encode_request(request, opaque)
        future = ResponseFuture(opaque, request if isinstance(request, RemotingCommand) else request.command(),
                                timeout)
        self._pending[opaque] = future
        if callback is not None:
            future.add_done_callback(callback)
        try:
            await self.post(frame)
        except Exception as exc:
            self.forget(future)
            future.set_error(exc)
            return future
        self._arm(future, timeout)
        return future

    def request_soon(
        self, request: Request, timeout: float, callback: Callable[[ResponseFuture], Any], *, now: bool = False
    ) -> ResponseFuture | None:
        """:meth:`request_async` without waiting: the frame joins this turn's write (a task writes it) and
        ``callback`` gets the future once it ends. None, and nothing sent, when the connection is not running.
        ``now`` writes it at once when no other write is under way (the caller works on before it yields, and
        the peer should meanwhile work on this request)."""
        nursery = self._nursery
        if nursery is None or self.closed:
            return None
        opaque = self.next_opaque()
        frame = encode_request(request, opaque)
        # complete() reads the request's code only, which a prepared request has too
        future = ResponseFuture(opaque, request, timeout)  # type: ignore[arg-type]
        future.add_done_callback(callback)
        self._pending[opaque] = future
        self._arm(future, timeout)
        queued = self.core.queue(frame)
        if not self._flushing:
            if now:
                self._write_now()
                if not self.core.outbox:
                    return future
            self._flushing = True
            nursery.start_soon(self._flush_soon)
        elif queued >= WRITE_CHUNK:
            self._write_now()
        return future

    # the tasks a connection starts for itself are KI-protected as the client's hosted tasks are
    # (client.hosting.KIProtectedNursery): a Ctrl-C goes to the main task, not up a system task
    @trio.lowlevel.enable_ki_protection
    async def _flush_soon(self) -> None:
        try:
            await self._flush()
        except RemotingSendRequestError as exc:  # the connection closed: its waits have failed with it
            log.warning("requests to %s lost: %s", self.remote_addr, exc)
        finally:
            self._flushing = False
            if self.closed:
                self.core.outbox.clear()

    @trio.lowlevel.enable_ki_protection
    async def _expire_loop(self) -> None:
        """End every wait whose deadline passed with RemotingTimeoutError, as Java's scanResponseTable does."""
        requests = self.core.requests
        while True:
            now = trio.current_time()
            if requests.next_deadline <= now:
                # after the loop was held (a listener that kept the CPU) the timer may come before the reader gets
                # what came in time: they timed out with their answers in the socket, and those answers then warned
                # "matches no request". Two turns first: one I/O poll after this wake, and the reader it woke has
                # read (a turn's tasks run in random order); then the waits still open end
                for _ in range(2):
                    await trio.lowlevel.checkpoint()
                requests.expire(now)
            # with answers in milliseconds and timeouts of seconds, the timer seldom fires at all
            with trio.CancelScope(deadline=requests.next_deadline) as self._timer:
                await trio.sleep_forever()

    # -- reading ----------------------------------------------------------------------------------
    async def run(self, dispatcher: Dispatcher | None, context: RequestContext) -> None:
        """Read until the peer leaves: answers to their waiters at once, the peer's requests to ``dispatcher``
        in a task per receive (a handler may invoke the peer over this connection); expire waits meanwhile."""
        sock = None
        if isinstance(self.stream, trio.SocketStream) and not self.closed:
            # made here, detached in aclose (which the finally below guarantees): never a second owner of the fd
            sock = self._sock = socket.socket(fileno=self.stream.socket.fileno())
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                try:
                    nursery.start_soon(self._expire_loop)
                    if sock is None:
                        await self.serve(dispatcher, context, inline=False)
                    else:
                        context.nursery = nursery
                        await self._read_socket(sock, dispatcher, context, nursery)
                    nursery.cancel_scope.cancel()
                finally:
                    # trio closes the nursery to new tasks as the body ends, while its tasks still finish: one of
                    # them calling request_soon then must find no nursery (None: "not running"), not a closed one
                    self._nursery = None
        finally:
            self._nursery = None
            await self.aclose()

    async def _read_socket(
        self, sock: socket.socket, dispatcher: Dispatcher | None, context: RequestContext, nursery: trio.Nursery
    ) -> None:
        recv_into = sock.recv_into
        size = self.receive_size
        buffer = receive_buffer(size)  # feed copies what a read puts there before this task yields
        feed = self.reader.feed
        busy = 0
        drained = False
        while not self.closed:
            if drained:
                # nothing more: park until readable (the waiters woken meanwhile run first, no extra turn)
                drained = False
                busy = 0
                try:
                    await trio.lowlevel.wait_readable(sock)
                except (trio.ClosedResourceError, OSError, ValueError):
                    return  # closed under us
            try:
                got = recv_into(buffer, size)
            except (BlockingIOError, InterruptedError):
                drained = True
                continue
            except OSError:
                got = 0
            if not got:
                if self.reader.buffered:
                    log.warning("%s closed mid-frame; %d bytes dropped", self.remote_addr, self.reader.buffered)
                return
            try:
                commands = feed(buffer[:got])
            except CodecError as exc:
                log.error("decode exception, %s: %s; closing the connection", self.remote_addr, exc)
                return
            self.last_active = self._now()
            requests = self.take_requests(commands)
            if len(commands) - len(requests) > 1:
                self._woke_many = True
            # a receive that did not fill its buffer emptied the socket: the next would find nothing
            drained = got < size
            if requests:
                if dispatcher is None:
                    log.warning("%s sent %d request(s) to a peer that serves none", self.remote_addr, len(requests))
                else:
                    nursery.start_soon(self.handle_batch, dispatcher, context, requests)
            if drained:
                continue
            busy += 1
            if busy >= READS_BEFORE_YIELD:  # answers keep coming: let the woken waiters have a turn
                busy = 0
                await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.detach()  # the descriptor is the stream's: it closes it
        await super().aclose()
