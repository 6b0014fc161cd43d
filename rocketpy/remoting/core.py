"""A remoting connection without I/O: bytes in, commands and answered waits out, frames to send.

Everything a connection knows besides its socket lives here, in the house's h11 style: the frame reader
(:class:`CommandReader`), the table of requests sent and not yet answered with their deadlines
(:class:`RequestTable`), and the frames queued for the next write (:class:`ConnectionCore`). Time is handed
in (``now``), never read; a driver owns the socket, the event loop and the timer, and calls in:

- bytes received: :meth:`ConnectionCore.receive` completes the waits they answer and returns the peer's
  requests, in order;
- a request to send: :meth:`RequestTable.add` (and :meth:`RequestTable.arm` for its deadline), then
  :meth:`ConnectionCore.queue` for its frame and :meth:`ConnectionCore.data_to_send` when writing;
- the timer: :attr:`RequestTable.next_deadline` says when, :meth:`RequestTable.expire` ends what is due;
- the end: :meth:`ConnectionCore.close` fails every wait.

A wait is the driver's own object (:class:`Waiter`): the trio driver parks a task on it, the asyncio driver
wraps a Future. The drivers are ``connection.py`` / ``client_connection.py`` (trio) and ``aio.py`` (asyncio).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, cast

from ..accel import compiled
from ..codecs import DEFAULT_MAX_FRAME, CodecError, FrameSplitter, RemotingCommand, ResponseCode
from ..codecs.command import LANGUAGES_BY_NAME, RESPONSE_FLAG
from .errors import RemotingTimeoutError, fresh_error

log = logging.getLogger("rocketpy.remoting")

__all__ = ["AnswerFuture", "CodecError", "CommandReader", "ConnectionCore", "LaneFrame", "RequestTable",
           "ResponseFutureBase", "Waiter", "encode_batch"]

#: the heap of deadlines is swept of finished waits when it is this long and mostly finished
SWEEP_AT = 4096
#: opaques of given-up waits remembered, so that their late answers are dropped quietly
FORGOTTEN_KEPT = 1024
_INF = math.inf
_heappush = heapq.heappush


class LaneFrame(bytes):
    """A request frame left undecoded for the server's fast path (see dispatch.FastPath)."""

    __slots__ = ()


#: the compiled reader of whole frames with plain JSON headers (a client's answers), when built
_read_frames = compiled("read_frames")


class CommandReader:
    """Feed received bytes, get every whole command they complete, in order.

    A frame that ``takes`` accepts (a server's fast path, see dispatch.FastPath) comes out undecoded, as a
    :class:`LaneFrame`; every other one decoded."""

    __slots__ = ("_splitter", "takes")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME, takes: Callable[[bytes], bool] | None = None) -> None:
        self._splitter = FrameSplitter(max_frame)
        self.takes = takes

    def feed(self, data: bytes | bytearray | memoryview, limit: int | None = None) -> list[RemotingCommand | LaneFrame]:
        """Commands completed by ``data`` (frames for the fast path undecoded), at most ``limit`` of them:
        the others stay as bytes until :meth:`take`. CodecError on a bad frame (the stream is then
        unusable)."""
        self._splitter.feed(data)
        return self.take(limit)

    def take(self, limit: int | None = None) -> list[RemotingCommand | LaneFrame]:
        """The whole commands held, at most ``limit`` (see :attr:`frame_ready` for whether any is)."""
        splitter = self._splitter
        max_frame = splitter.max_frame
        takes = self.takes
        if takes is None and limit is None and _read_frames is not None:
            # a client's answers: plain ones read by compiled code
            out: list[RemotingCommand | LaneFrame] = []
            while True:
                out += splitter.take_plain(_read_frames, RemotingCommand, LANGUAGES_BY_NAME)
                frame = splitter.next_frame()  # not plain (decoded the reference way), or not whole (None)
                if frame is None:
                    return out
                out.append(RemotingCommand.decode(frame, max_frame))
        taken: list[RemotingCommand | LaneFrame] = []
        kind = bytes if takes is None else LaneFrame
        while limit is None or len(taken) < limit:
            # frames are made LaneFrames as they are copied out (no second copy for the fast path's)
            frame = splitter.next_frame(kind)
            if frame is None:
                break
            taken.append(cast(LaneFrame, frame) if takes is not None and takes(frame)
                         else RemotingCommand.decode(frame, max_frame))
        return taken

    @property
    def frame_ready(self) -> bool:
        """A whole frame (or a bad length) waits: :meth:`take` has something to give."""
        return self._splitter.frame_ready

    @property
    def max_frame(self) -> int:
        return self._splitter.max_frame

    @property
    def buffered(self) -> int:
        return self._splitter.buffered


def encode_batch(commands: Iterable[RemotingCommand | bytes]) -> bytes:
    """All frames in one buffer (items already encoded pass as they are); a response that cannot be
    encoded becomes a SYSTEM_ERROR answer (a request that cannot be encoded raises)."""
    parts: list[bytes] = []
    for cmd in commands:
        if type(cmd) is bytes:  # a fast path's answer: already encoded
            parts.append(cmd)
            continue
        assert isinstance(cmd, RemotingCommand)
        try:
            parts += cmd.encode_parts()
        except Exception as exc:  # a bad header value must not take the other answers down
            log.error("cannot encode %r: %s", cmd, exc)
            if not cmd.is_response:
                raise
            fallback = RemotingCommand(
                code=ResponseCode.SYSTEM_ERROR,
                opaque=cmd.opaque,
                flag=cmd.flag,
                remark=f"response encoding failed: {exc}",
            )
            parts += fallback.encode_parts()
    return b"".join(parts)


class Waiter(Protocol):
    """A request sent and waiting for its answer, as a driver keeps it (a parked task, a Future)."""

    opaque: int
    #: seconds, for the timeout's text
    timeout: float
    #: what complete() reads the request code of (None once the wait ended)
    request: Any

    @property
    def done(self) -> bool: ...

    def set_response(self, response: RemotingCommand) -> None: ...

    def set_error(self, error: BaseException) -> None: ...


class AnswerFuture(Protocol):
    """A request sent without waiting, as either driver gives it back (trio's ResponseFuture, asyncio's
    AsyncioResponseFuture): what the client's upper layers may use of it."""

    opaque: int
    response: RemotingCommand | None
    error: BaseException | None

    @property
    def done(self) -> bool: ...

    def add_done_callback(self, callback: Callable[[Any], Any]) -> None: ...

    async def wait(self) -> RemotingCommand: ...


class ResponseFutureBase:
    """A request sent without waiting and the response it waits for: the Waiter the core completes, with
    callbacks; a driver's subclass says how a task waiting on it is woken (:meth:`_wake`, :meth:`settled`)."""

    __slots__ = ("opaque", "request", "timeout", "response", "error", "done", "_callbacks")

    def __init__(self, opaque: int, request: Any = None, timeout: float = math.inf) -> None:
        self.opaque = opaque
        self.request = request
        self.timeout = timeout
        self.response: RemotingCommand | None = None
        self.error: BaseException | None = None
        self.done = False
        self._callbacks: list[Callable[[Any], Any]] = []

    def set_response(self, response: RemotingCommand) -> None:
        if not self.done:
            self.response = response
            self._finish()

    def set_error(self, error: BaseException) -> None:
        if not self.done:
            self.error = error
            self._finish()

    def add_done_callback(self, callback: Callable[[Any], Any]) -> None:
        if self.done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def _finish(self) -> None:
        self.done = True
        self._wake()
        for cb in self._callbacks:
            try:
                cb(self)
            except Exception:
                log.exception("response callback failed for opaque %d", self.opaque)
        self._callbacks.clear()

    def _wake(self) -> None:
        """Wake whoever waits in :meth:`settled` (the driver's)."""

    async def settled(self) -> None:
        """Wait until the future ends, whichever way (the driver's)."""
        raise NotImplementedError

    async def wait(self) -> RemotingCommand:
        """The response, or the error that ended the wait."""
        await self.settled()
        if self.error is not None:
            raise fresh_error(self.error)  # each waiter its own: one object raised in each gathers their frames
        assert self.response is not None
        return self.response


class RequestTable:
    """The requests a connection sent and waits to be answered: by opaque, with a heap of deadlines.

    Answers are matched by opaque (in any order); a wait whose deadline passed ends with
    RemotingTimeoutError as Java's scanResponseTable ends it, and its late answer is dropped."""

    __slots__ = ("pending", "remote_addr", "_deadlines", "_seq", "_opaques", "quiet_unmatched", "_forgotten")

    def __init__(self, remote_addr: str, opaques: Iterator[int] | None = None) -> None:
        self.remote_addr = remote_addr
        #: opaque -> wait, one dict for the table's life (a driver may register and remove its own waits
        #: here directly on its hot path)
        self.pending: dict[int, Any] = {}
        self._deadlines: list[tuple[float, int, Any]] = []
        self._seq = itertools.count()
        self._opaques = opaques if opaques is not None else itertools.count(1)
        #: an answer to no wait is logged at debug level, not as a warning (a connection shutting down
        #: forgets its waits before their answers arrive)
        self.quiet_unmatched = False
        #: opaques whose waits were given up (cancelled): their answers, when they come, are expected
        self._forgotten: dict[int, None] = {}

    def __len__(self) -> int:
        return len(self.pending)

    def next_opaque(self) -> int:
        return next(self._opaques) & 0x7FFFFFFF

    def add(self, waiter: Waiter) -> None:
        """Register ``waiter`` under its opaque (an answer to it completes it from now on)."""
        self.pending[waiter.opaque] = waiter

    def arm(self, waiter: Waiter, deadline: float) -> bool:
        """Give ``waiter`` a deadline (no-op for an infinite one): True when it is now the earliest, so the
        driver's timer must be brought forward."""
        if deadline == _INF:
            return False
        heap = self._deadlines
        if len(heap) >= SWEEP_AT and len(heap) > 4 * len(self.pending):
            heap[:] = [e for e in heap if not e[2].done]
            heapq.heapify(heap)
        _heappush(heap, (deadline, next(self._seq), waiter))
        return heap[0][2] is waiter

    def forget(self, opaque: int, waiter: Waiter | None = None) -> None:
        """Stop waiting for ``opaque`` (only if it is still ``waiter``'s, when given): a caller gave up, and the
        answer, if it comes, is dropped without a warning."""
        if waiter is None or self.pending.get(opaque) is waiter:
            if self.pending.pop(opaque, None) is not None:
                self._expect(opaque)

    def _expect(self, opaque: int) -> None:
        """An answer to ``opaque`` may still come and is no stray: dropped quietly (the last FORGOTTEN_KEPT)."""
        forgotten = self._forgotten
        if len(forgotten) >= FORGOTTEN_KEPT:
            del forgotten[next(iter(forgotten))]
        forgotten[opaque] = None

    def complete(self, response: RemotingCommand) -> bool:
        """Hand ``response`` to the wait for its opaque; False (and a log line) when none waits."""
        waiter = self.pending.pop(response.opaque, None)
        if waiter is None:
            expected = self._forgotten.pop(response.opaque, 0) is None
            log.log(logging.DEBUG if self.quiet_unmatched or expected else logging.WARNING,
                    "response with opaque %d from %s matches no request", response.opaque, self.remote_addr)
            return False
        request = waiter.request
        if request is not None:
            response.request_code = request.code
        waiter.set_response(response)
        return True

    @property
    def next_deadline(self) -> float:
        """When :meth:`expire` next has something to do (inf: never). Finished waits at the top of the heap
        are dropped on the way, so the timer is set for a live one."""
        heap = self._deadlines
        while heap and heap[0][2].done:
            heapq.heappop(heap)
        return heap[0][0] if heap else _INF

    def expire(self, now: float) -> int:
        """End every wait whose deadline is ``now`` or earlier with RemotingTimeoutError; how many."""
        heap = self._deadlines
        pending = self.pending
        ended = 0
        while heap and (heap[0][0] <= now or heap[0][2].done):
            _deadline, _seq, waiter = heapq.heappop(heap)
            if waiter.done:
                continue
            opaque = waiter.opaque
            if pending.get(opaque) is waiter:
                del pending[opaque]
            ms = int(waiter.timeout * 1000)
            waiter.set_error(RemotingTimeoutError(f"wait response on the channel <{self.remote_addr}> timeout, "
                                                  f"{ms}(ms)"))
            ended += 1
        return ended

    def fail_all(self, error: BaseException) -> None:
        """End every wait with a copy of ``error`` each: one exception raised in every waiter would gather
        all their frames in its traceback, and any caller keeping it would keep them all."""
        waiters = list(self.pending.values())
        self.pending.clear()  # the same dict for the connection's life: drivers keep a reference to it
        self._deadlines.clear()
        for waiter in waiters:
            # what was in flight as the connection went (a consumer's pulls at its shutdown): an answer the
            # reader still hands in is expected; one to an opaque never sent still warns
            self._expect(waiter.opaque)
            waiter.set_error(fresh_error(error))


class ConnectionCore:
    """One connection's protocol state: the reader, the waits, and the frames queued for the next write."""

    __slots__ = ("reader", "requests", "outbox", "closed", "answered")

    def __init__(self, remote_addr: str, *, max_frame: int = DEFAULT_MAX_FRAME,
                 opaques: Iterator[int] | None = None) -> None:
        self.reader = CommandReader(max_frame)
        self.requests = RequestTable(remote_addr, opaques)
        #: frames to write, in order; a driver writes them with :meth:`data_to_send`
        self.outbox: list[bytes] = []
        self.closed = False
        #: answers handed to waits by the last :meth:`receive` (a driver batches its next writes after
        #: waking several senders)
        self.answered = 0

    @property
    def remote_addr(self) -> str:
        return self.requests.remote_addr

    # -- in ---------------------------------------------------------------------------------------
    def receive(self, data: bytes | bytearray | memoryview,
                limit: int | None = None) -> list[RemotingCommand | LaneFrame]:
        """Feed received bytes: the answers among the commands they complete go to their waits, the peer's
        requests (fast-path frames undecoded) are returned in order. CodecError on a malformed frame: the
        stream is unusable, the driver closes it."""
        return self.sort(self.reader.feed(data, limit))

    def sort(self, commands: list[RemotingCommand | LaneFrame]) -> list[RemotingCommand | LaneFrame]:
        """Hand the answers among ``commands`` to their waits; the requests remain, in order."""
        requests: list[RemotingCommand | LaneFrame] = []
        complete = self.requests.complete
        answered = 0
        for cmd in commands:
            if type(cmd) is LaneFrame:  # a request frame for the fast path
                requests.append(cmd)
            elif cmd.flag & RESPONSE_FLAG:  # type: ignore[union-attr]
                complete(cmd)  # type: ignore[arg-type]
                answered += 1
            else:
                requests.append(cmd)
        self.answered = answered
        return requests

    # -- out --------------------------------------------------------------------------------------
    def queue(self, frame: bytes) -> int:
        """Queue an encoded frame for the next write; how many are queued now."""
        outbox = self.outbox
        outbox.append(frame)
        return len(outbox)

    def data_to_send(self) -> bytes:
        """Everything queued, as one buffer (and the queue emptied)."""
        frames, self.outbox = self.outbox, []
        if not frames:
            return b""
        return frames[0] if len(frames) == 1 else b"".join(frames)

    def unsent(self, rest: bytes | memoryview) -> None:
        """A write took only part of :meth:`data_to_send`'s buffer: ``rest`` goes first next time."""
        if rest:
            self.outbox.insert(0, bytes(rest))

    # -- the end ----------------------------------------------------------------------------------
    def close(self, error: BaseException) -> None:
        """The connection is gone: every wait ends with a copy of ``error``, queued frames are dropped."""
        self.closed = True
        self.outbox.clear()
        self.requests.fail_all(error)
