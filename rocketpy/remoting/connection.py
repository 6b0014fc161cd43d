"""One remoting connection over a trio Stream: frames in, commands out, batched writes.

The protocol state is sans-IO (:class:`~rocketpy.remoting.core.ConnectionCore`: the reader, the
requests waiting for answers); :class:`Connection` is its trio driver: receiving, writing every
response of one receive in one ``send_all``, and waking the tasks that wait for answers.
Servers and clients share it: a broker may invoke a client over the client's own
connection, and a client answers broker-initiated requests on the connection it opened.
"""

from __future__ import annotations

import itertools
import logging
import math
import socket
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import trio

from ..codecs import DEFAULT_MAX_FRAME, CodecError, RemotingCommand
from ..codecs.command import ONEWAY_FLAG
from .core import CommandReader, ConnectionCore, LaneFrame, ResponseFutureBase, encode_batch
from .errors import ConnectionClosedError, RemotingSendRequestError, RemotingTimeoutError

if TYPE_CHECKING:
    from .dispatch import Dispatcher, RequestContext

log = logging.getLogger("rocketpy.remoting")

#: bytes asked of the stream per receive; several frames usually arrive in one
RECEIVE_SIZE = 256 * 1024
#: the buffer socket reads land in on this thread (see receive_buffer)
_receive_buffers = threading.local()


def receive_buffer(size: int) -> memoryview:
    """A buffer of ``size`` bytes for reads on this thread, shared by its connections: what a read puts
    there is copied out (FrameSplitter.feed) before the reading task yields. A fresh 256 KiB bytes object
    per read would cost an mmap, an mremap and an munmap each time (glibc maps blocks that large)."""
    view: memoryview | None = getattr(_receive_buffers, "view", None)
    if view is None or len(view) < size:
        view = _receive_buffers.view = memoryview(bytearray(size))
    return view
#: reads more that a server receive takes in before answering, while more frames are already there
COALESCE_READS = 8
#: requests a server decodes at once: a receive of many small frames (a pipelining peer's, up to
#: COALESCE_READS + 1 reads of RECEIVE_SIZE) keeps the rest as bytes until these are answered, so what
#: one connection holds decoded is bounded by this, not by how many frames fit in its reads
REQUEST_BATCH = 256
#: requests of one receive handled between two looks at the answers' size (see Connection.answers)
ANSWER_CHUNK = 256
#: answer bytes of one receive written before handling the rest of it
ANSWER_FLUSH_BYTES = 1 << 20
#: a writer that finds another task writing leaves its frames to that task (one send for a turn's answers)
#: while this many bytes at most wait behind the writer; past that it waits for the lock
JOIN_TAIL_BYTES = 1 << 20

_connection_ids = itertools.count(1)


def peer_address(stream: trio.abc.Stream) -> str:
    """``host:port`` of the peer as Java's RemotingHelper.parseChannelRemoteAddr prints it."""
    sock = getattr(stream, "socket", None)
    if sock is not None:
        try:
            name = sock.getpeername()
            return f"{name[0]}:{name[1]}"
        except OSError:
            pass
    return f"stream-{id(stream):x}"


class ResponseFuture(ResponseFutureBase):
    """A request sent on a trio connection and the response it is waiting for."""

    __slots__ = ("_event",)

    def __init__(self, opaque: int, request: RemotingCommand | None = None, timeout: float = math.inf) -> None:
        super().__init__(opaque, request, timeout)
        self._event = trio.Event()

    def _wake(self) -> None:
        self._event.set()

    async def settled(self) -> None:
        """Wait until the future ends, whichever way."""
        await self._event.wait()


class Connection:
    """A remoting connection: commands in, batched frames out, responses matched by opaque."""

    def __init__(
        self,
        stream: trio.abc.Stream,
        remote_addr: str | None = None,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        opaques: Iterator[int] | None = None,
        receive_size: int = RECEIVE_SIZE,
    ) -> None:
        self.id = next(_connection_ids)
        self.stream = stream
        self.remote_addr = remote_addr or peer_address(stream)
        #: the protocol state: reader, requests waiting for answers (see core.ConnectionCore)
        self.core = ConnectionCore(self.remote_addr, max_frame=max_frame, opaques=opaques)
        self.reader: CommandReader = self.core.reader
        #: the waits by opaque: the core's table, read and written directly on the hot path
        self._pending: dict[int, Any] = self.core.requests.pending
        self.receive_size = receive_size
        self.closed = False
        #: owner data (a NameServer keeps nothing here; a broker may keep client ids)
        self.attributes: dict[str, Any] = {}
        self._send_lock = trio.StrictFIFOLock()
        # Writes from another thread (the group commit's answers, see write_from_thread): the raw socket
        # while _serve_socket owns it, bytes such a write left over (_tail, sent by the next trio writer
        # before its own), and a thread lock that orders both with the trio writers' claims of _send_lock.
        self.raw: socket.socket | None = None
        self._wlock = threading.Lock()
        self._tail = b""
        self._token: trio.lowlevel.TrioToken | None = None
        self._tail_nursery: trio.Nursery | None = None
        self._eof = False
        #: a frame left undecoded for the fast path turned out malformed: close once its receive is answered
        self._bad_frame = False
        #: trio clock of the last byte received or sent (idle connections get closed)
        self.last_active = trio.current_time()

    def __repr__(self) -> str:
        return f"<Connection #{self.id} {self.remote_addr}{' closed' if self.closed else ''}>"

    # -- receiving ------------------------------------------------------------
    async def receive_commands(self, limit: int | None = REQUEST_BATCH) -> list[RemotingCommand | LaneFrame] | None:
        """The commands completed by the next receive(s), at most ``limit`` (the rest kept as bytes for the
        next call); None at end of stream.

        Raises CodecError on a malformed frame; the caller closes the connection.
        """
        if self.reader.frame_ready:  # what an earlier receive brought beyond its batch
            return self.reader.take(limit)
        while not self._eof:
            try:
                data = await self.stream.receive_some(self.receive_size)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data:
                self._eof = True
                if self.reader.buffered:
                    # the peer left mid-frame: say so, or the dropped request vanishes without a trace
                    log.warning("%s closed mid-frame; %d bytes dropped", self.remote_addr, self.reader.buffered)
                break
            self.last_active = trio.current_time()
            commands = self.reader.feed(data, limit)
            if commands:
                return commands
        return None

    # -- sending --------------------------------------------------------------
    async def send_bytes(self, data: bytes) -> None:
        """Write raw frames; failures close the connection and raise RemotingSendRequestError in the task that
        wrote. Frames handed to a task already writing return at once: if that write fails, they go with the
        connection and this caller learns it as any peer does, by the close (its waits end with
        ConnectionClosedError; a oneway frame, like one left in the socket's buffer, is simply lost)."""
        if self.closed:
            raise RemotingSendRequestError(f"connection to {self.remote_addr} is closed")
        lock = self._send_lock
        try:
            if lock.locked() and data:
                # another task is writing: it sends our frames after its own, before it lets go (as it does a
                # thread's, see _unlock); the answers a turn wakes go out in one send, not one each
                with self._wlock:
                    if lock.locked() and len(self._tail) + len(data) <= JOIN_TAIL_BYTES:
                        self._tail += data
                        return
            if lock.locked():
                await lock.acquire()
                data = self._claim(data)
            else:
                # uncontended: skip the lock's extra scheduling round (send_all checkpoints anyway)
                data = self._claim(data, acquire=True)
            try:
                while True:
                    if data:
                        await self.stream.send_all(data)
                    # let go only through _unlock: a thread may have queued bytes behind us meanwhile
                    data = self._unlock()
                    if not data:
                        break
            finally:
                self._let_go()
            self.last_active = trio.current_time()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            await self.aclose()
            raise RemotingSendRequestError(f"send to {self.remote_addr} failed: {exc}") from exc

    def _claim(self, data: bytes, *, acquire: bool = False) -> bytes:
        """Holding _send_lock (or taking it now, with ``acquire``, under the thread lock so that a thread sees
        it taken): what a thread left over goes first."""
        with self._wlock:
            if acquire:
                self._send_lock.acquire_nowait()
            if self._tail:
                data, self._tail = self._tail + data, b""
        return data

    def _let_go(self) -> None:
        """After a failed write: release _send_lock if this task still holds it; a thread's leftover goes with
        the failing connection."""
        lock = self._send_lock
        if lock.locked() and lock.statistics().owner is trio.lowlevel.current_task():
            with self._wlock:
                self._tail = b""
                lock.release()

    def _unlock(self) -> bytes:
        """Release _send_lock, unless a thread queued bytes meanwhile: those are returned, to send first."""
        with self._wlock:
            tail = self._tail
            if tail:
                self._tail = b""
                return tail
            self._send_lock.release()
            return b""

    def write_from_thread(self, data: bytes) -> bool:
        """Write ``data`` from a thread other than trio's (the group commit's, whose answers then skip a
        trip through the event loop). False when only trio can write here (no raw socket: TLS, memory
        streams); otherwise the bytes are sent, or queued behind the trio writer of the moment, or
        dropped with the connection if it is closing. Frames never interleave: the socket is written
        only while no trio writer holds _send_lock, under the thread lock that writer claims it with,
        and closing takes that lock too, so the descriptor cannot be closed (and reused) meanwhile."""
        with self._wlock:
            raw = self.raw
            if raw is None:
                return self.closed
            if self._tail or self._send_lock.locked():
                self._tail += data  # the lock's holder sends it before letting go; or a flush is on its way
                return True
            try:
                sent = raw.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                return True  # broken: the receiving side sees it and closes
            if sent == len(data):
                return True
            self._tail = data[sent:]
        token, nursery = self._token, self._tail_nursery
        if token is not None and nursery is not None:
            try:
                token.run_sync_soon(self._flush_tail, nursery)
            except trio.RunFinishedError:
                pass
        return True

    def _flush_tail(self, nursery: trio.Nursery) -> None:
        if self._tail and not self.closed:
            try:
                nursery.start_soon(self._send_tail)
            except RuntimeError:  # the connection's nursery is closing
                pass

    @trio.lowlevel.enable_ki_protection  # a task of its own (see client.hosting.KIProtectedNursery)
    async def _send_tail(self) -> None:
        try:
            await self.send_bytes(b"")
        except RemotingSendRequestError as exc:
            log.warning("responses to %s lost: %s", self.remote_addr, exc)

    async def send_commands(self, commands: Iterable[RemotingCommand]) -> None:
        """Write commands with one ``send_all``."""
        await self.send_bytes(encode_batch(commands))

    async def send_command(self, command: RemotingCommand) -> None:
        await self.send_bytes(encode_batch((command,)))

    # -- requests we send -----------------------------------------------------
    def next_opaque(self) -> int:
        return self.core.requests.next_opaque()

    def start_request(self, request: RemotingCommand, timeout: float = math.inf) -> ResponseFuture:
        """Give ``request`` a fresh opaque and register the wait for its response."""
        request.opaque = self.next_opaque()
        future = ResponseFuture(request.opaque, request, timeout)
        self.core.requests.add(future)
        return future

    def forget(self, future: ResponseFuture) -> None:
        self.core.requests.forget(future.opaque, future)

    async def invoke(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send ``request`` and wait up to ``timeout`` seconds for its response."""
        future = self.start_request(request, timeout)
        try:
            await self.send_command(request)
            with trio.move_on_after(timeout):
                return await future.wait()
            raise RemotingTimeoutError(
                f"wait response on the channel <{self.remote_addr}> timeout, {int(timeout * 1000)}(ms)"
            )
        finally:
            self.forget(future)

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        request.opaque = self.next_opaque()
        request.flag |= ONEWAY_FLAG  # the peer answers nothing
        await self.send_command(request)

    def complete(self, response: RemotingCommand) -> None:
        """Hand a received response to whoever waits for its opaque."""
        self.core.requests.complete(response)

    def fail_pending(self, error: BaseException) -> None:
        """End every wait with a copy of ``error`` each (see core.RequestTable.fail_all)."""
        self.core.requests.fail_all(error)

    # -- lifecycle ------------------------------------------------------------
    async def aclose(self) -> None:
        if self.closed:
            return
        with self._wlock:  # no thread is writing on the descriptor we are about to close
            self.closed = True
            self.raw = None
        self.core.close(ConnectionClosedError(f"connection to {self.remote_addr} closed"))
        # shielded, yet bounded: a TLS stream's close_notify must not wait forever on a peer that never reads
        with trio.CancelScope(shield=True, deadline=trio.current_time() + 5):
            try:
                await self.stream.aclose()
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass

    async def serve(
        self,
        dispatcher: Dispatcher | None,
        context: RequestContext,
        *,
        inline: bool = True,
    ) -> None:
        """Read until the peer leaves: complete responses, dispatch requests, batch the answers.

        ``inline`` handles each receive's requests before reading on (backpressure, no task
        per batch: the server hot path); otherwise each batch runs in its own task so a
        handler may itself wait on this connection (client side).
        A malformed frame closes the connection.
        """
        fast = dispatcher.fast_path if dispatcher is not None else None
        self.reader.takes = fast.takes if fast is not None else None
        if inline and dispatcher is not None and isinstance(self.stream, trio.SocketStream):
            await self._serve_socket(dispatcher, context)
            return
        # inline, what one connection holds decoded is one batch; otherwise (a client: mostly answers, each
        # receive's requests in their own task) no limit, which keeps the compiled reader for the answers
        limit = REQUEST_BATCH if inline else None
        try:
            async with trio.open_nursery() as nursery:
                context.nursery = nursery
                while True:
                    try:
                        commands = await self.receive_commands(limit)
                    except CodecError as exc:
                        log.error("decode exception, %s: %s; closing the connection", self.remote_addr, exc)
                        break
                    if commands is None:
                        break
                    requests = self.take_requests(commands)
                    if not requests:
                        continue
                    if dispatcher is None:
                        log.warning("%s sent %d request(s) to a peer that serves none", self.remote_addr, len(requests))
                    elif inline:
                        await self.handle_batch(dispatcher, context, requests)
                        if self._bad_frame:  # a frame the fast path passed on was malformed: as on reading
                            break
                    else:
                        nursery.start_soon(self.handle_batch, dispatcher, context, requests)
                nursery.cancel_scope.cancel()
        finally:
            await self.aclose()

    def take_requests(self, commands: list[RemotingCommand | LaneFrame]) -> list[RemotingCommand | LaneFrame]:
        """Hand received responses to their waiters; the requests (some undecoded) remain, in order."""
        return self.core.sort(commands)

    async def _serve_socket(self, dispatcher: Dispatcher, context: RequestContext) -> None:
        """The server hot path on a TCP socket: :meth:`serve` without trio's stream layers.

        Non-blocking reads on the socket itself; frames that arrived while a receive was being handled
        join it (up to COALESCE_READS more reads), so one write answers them all; the answers go out
        with one send when the socket takes them (else through :meth:`send_bytes`). The task parks only
        when nothing is readable, and yields after every busy round (data already waiting) so that what
        this receive woke (a held pull, another connection) runs before the next one.
        """
        stream = self.stream
        assert isinstance(stream, trio.SocketStream)
        # a second Python object on the stream's own descriptor (already non-blocking); detached, not closed
        raw = socket.socket(fileno=stream.socket.fileno())
        recv_into = raw.recv_into
        size = self.receive_size
        buffer = receive_buffer(size)
        reader = self.reader
        feed, take = reader.feed, reader.take
        try:
            async with trio.open_nursery() as nursery:
                context.nursery = nursery
                self._token, self._tail_nursery = trio.lowlevel.current_trio_token(), nursery
                with self._wlock:
                    if not self.closed:
                        self.raw = raw
                eof = False
                while not self.closed:
                    drained = False
                    try:
                        if reader.frame_ready:  # frames an earlier receive brought beyond its batch, first
                            commands = take(REQUEST_BATCH)
                        elif eof:
                            break
                        else:
                            try:
                                got = recv_into(buffer, size)
                            except BlockingIOError:
                                await trio.lowlevel.wait_readable(raw)
                                continue
                            except OSError:
                                got = 0
                            if not got:
                                eof = True
                                continue
                            commands = feed(buffer[:got], REQUEST_BATCH)
                            for _ in range(COALESCE_READS):
                                if len(commands) >= REQUEST_BATCH:
                                    break  # the rest waits in the reader as bytes
                                try:
                                    got = recv_into(buffer, size)
                                except (BlockingIOError, InterruptedError):
                                    drained = True
                                    break
                                except OSError:
                                    got = 0
                                if not got:
                                    eof = True
                                    break
                                commands += feed(buffer[:got], REQUEST_BATCH - len(commands))
                    except CodecError as exc:
                        log.error("decode exception, %s: %s; closing the connection", self.remote_addr, exc)
                        break
                    except trio.ClosedResourceError:
                        break  # another task closed it while it waited (the idle sweep, a client scan)
                    self.last_active = trio.current_time()
                    requests = self.take_requests(commands)
                    if requests:
                        answer = await self.answers(dispatcher, context, requests)
                        if answer and not self.closed:
                            await self._write(raw, answer)
                    if self._bad_frame:
                        break
                    if drained and not self.closed:
                        # the socket was empty a moment ago: park on it now (a checkpoint too) rather than
                        # take a scheduler turn and a read that would most likely find nothing
                        try:
                            await trio.lowlevel.wait_readable(raw)
                        except trio.ClosedResourceError:
                            break  # closed by another task, as above
                    else:
                        await trio.lowlevel.checkpoint()
                if eof and reader.buffered:
                    log.warning("%s closed mid-frame; %d bytes dropped", self.remote_addr, reader.buffered)
                nursery.cancel_scope.cancel()
        finally:
            with self._wlock:
                self.raw = None
                self._tail_nursery = None
            raw.detach()
            await self.aclose()

    async def _write(self, raw: socket.socket, data: bytes) -> None:
        """Send ``data`` on the socket now; what it does not take goes out under the send lock, so no other
        writer's frames can land inside ours."""
        lock = self._send_lock
        if lock.locked():
            try:
                await self.send_bytes(data)
            except RemotingSendRequestError as exc:
                log.warning("responses to %s lost: %s", self.remote_addr, exc)
            return
        data = self._claim(data, acquire=True)
        failed: str | None = None  # the text only: the exception in a local would be a cycle through its traceback
        try:
            while data:
                try:
                    sent = raw.send(data)
                except (BlockingIOError, InterruptedError):
                    sent = 0
                if sent < len(data):
                    await self.stream.send_all(memoryview(data)[sent:])
                data = self._unlock()  # let go, or send what a thread queued behind us meanwhile
            self.last_active = trio.current_time()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            failed = str(exc)
        finally:
            self._let_go()
        if failed is not None:
            log.warning("responses to %s lost: %s", self.remote_addr, failed)
            await self.aclose()

    @trio.lowlevel.enable_ki_protection  # a task of its own on a client (see client.hosting.KIProtectedNursery)
    async def handle_batch(
        self, dispatcher: Dispatcher, context: RequestContext, requests: list[RemotingCommand | LaneFrame]
    ) -> None:
        answer = await self.answers(dispatcher, context, requests)
        if answer and not self.closed:
            try:
                await self.send_bytes(answer)  # every answer of the receive, one write
            except RemotingSendRequestError as exc:
                log.warning("responses to %s lost: %s", self.remote_addr, exc)

    def _decode_late(self, frame: bytes) -> RemotingCommand | None:
        """A LaneFrame the fast path passed on, decoded now; None when malformed (the connection then closes
        after answering what came before it, as a bad frame closes it on reading)."""
        try:
            return RemotingCommand.decode(frame, self.reader.max_frame)
        except CodecError as exc:
            log.error("decode exception, %s: %s; closing the connection", self.remote_addr, exc)
            self._bad_frame = True
            return None

    async def answers(
        self, dispatcher: Dispatcher, context: RequestContext, requests: list[RemotingCommand | LaneFrame]
    ) -> bytes:
        """The encoded answers to ``requests``, in order: the fast path's (see dispatch.FastPath) for the
        frames it answers, the dispatcher's for the others.

        A receive of many small requests can ask for far more answer bytes than it carried: every
        ANSWER_CHUNK requests, the answers so far are written once they reach ANSWER_FLUSH_BYTES, so a
        peer that does not read them stops being served at that size (backpressure), and the other
        tasks get a turn."""
        responses: list[RemotingCommand | bytes] = []
        chunks: list[bytes] = []
        held = 0
        fast = dispatcher.fast_path if not dispatcher.before else None
        for done, request in enumerate(requests, 1):
            answer: bytes | None = None
            if type(request) is LaneFrame:
                if fast is not None:
                    try:
                        answer = fast.answer(context, request)
                    except Exception:
                        log.exception("fast path failed on a frame from %s", self.remote_addr)
                if answer is None:
                    decoded = self._decode_late(request)
                    if decoded is None:
                        break
                    request = decoded
            if answer is not None:
                if answer:
                    responses.append(answer)
            else:
                if fast is not None:
                    fast.settle()  # what the fast path deferred is done before any handler looks
                response = await dispatcher.dispatch(context, request)  # type: ignore[arg-type]
                if response is not None:
                    responses.append(response)
            if done % ANSWER_CHUNK == 0 and done < len(requests):
                if fast is not None:
                    fast.settle()
                if responses:
                    chunk = encode_batch(responses)
                    responses.clear()
                    chunks.append(chunk)
                    held += len(chunk)
                if held >= ANSWER_FLUSH_BYTES and not self.closed:
                    data, chunks, held = b"".join(chunks), [], 0
                    try:
                        await self.send_bytes(data)
                    except RemotingSendRequestError as exc:
                        log.warning("responses to %s lost: %s", self.remote_addr, exc)
                        return b""
                else:
                    await trio.lowlevel.checkpoint()
        if fast is not None:
            fast.settle()
        if responses:
            chunks.append(encode_batch(responses))
        return b"".join(chunks) if len(chunks) != 1 else chunks[0]
