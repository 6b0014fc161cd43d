"""The requesting side of a connection: one write per turn of senders, parked waits, one timer per connection."""

from __future__ import annotations

import socket
import threading
import time

import pytest
import trio
import trio.testing
from test_remoting import CountingStream

from rocketpy.codecs import RemotingCommand
from rocketpy.remoting import CommandReader, ConnectionClosedError, RemotingTimeoutError, RequestContext
from rocketpy.remoting.client_connection import WRITE_CHUNK, ClientConnection
from rocketpy.testing import wait_until

ECHO = 9001


async def peer(stream: trio.abc.Stream, delays: dict[bytes, float] | None = None) -> None:
    """Answers every request with its own body, after ``delays[body]`` seconds when given."""
    reader = CommandReader()
    lock = trio.Lock()
    async with trio.open_nursery() as nursery:
        async def answer(cmd: RemotingCommand) -> None:
            await trio.sleep((delays or {}).get(cmd.body or b"", 0))
            async with lock:
                await stream.send_all(cmd.response(0, body=cmd.body).encode())

        while data := await stream.receive_some():
            for cmd in reader.feed(data):
                assert isinstance(cmd, RemotingCommand)
                if not cmd.is_oneway:
                    nursery.start_soon(answer, cmd)


async def connected(nursery: trio.Nursery, delays: dict[bytes, float] | None = None
                    ) -> tuple[ClientConnection, CountingStream]:
    ours, theirs = trio.testing.memory_stream_pair()
    counting = CountingStream(ours)
    conn = ClientConnection(counting, "peer:1")
    nursery.start_soon(peer, theirs, delays)
    nursery.start_soon(conn.run, None, RequestContext(connection=conn, remote_addr="peer:1"))
    return conn, counting


async def test_concurrent_requests_share_writes(nursery: trio.Nursery) -> None:
    conn, counting = await connected(nursery)
    answers: dict[int, bytes | None] = {}

    async def ask(i: int) -> None:
        answers[i] = (await conn.invoke(RemotingCommand.request(ECHO, body=b"%d" % i), 3)).body

    async with trio.open_nursery() as senders:
        for i in range(32):
            senders.start_soon(ask, i)
    assert answers == {i: b"%d" % i for i in range(32)}  # each sender got its own answer
    assert counting.sends <= 4  # not one write per request


async def test_timeouts_fire_by_deadline_and_late_answers_are_dropped(
        nursery: trio.Nursery, virtual_clock: trio.testing.MockClock) -> None:
    conn, _ = await connected(nursery, {b"slow": 10.0})
    ended: list[tuple[str, float]] = []

    async def ask(body: bytes, timeout: float) -> None:
        try:
            await conn.invoke(RemotingCommand.request(ECHO, body=body), timeout)
        except RemotingTimeoutError as exc:
            assert f"{int(timeout * 1000)}(ms)" in str(exc)
            ended.append((body.decode(), trio.current_time()))

    t0 = trio.current_time()
    async with trio.open_nursery() as senders:
        senders.start_soon(ask, b"slow", 2.0)
        await trio.sleep(0.1)
        senders.start_soon(ask, b"slow", 0.5)  # a later request with an earlier deadline
    assert [(b, round(t - t0, 2)) for b, t in ended] == [("slow", 0.6), ("slow", 2.0)]
    await trio.sleep(10)  # the answers arrive after their waits ended: ignored
    assert (await conn.invoke(RemotingCommand.request(ECHO, body=b"after"), 1)).body == b"after"


def _answer_when_told(server: socket.socket, go: threading.Event, answered: threading.Event) -> None:
    """A peer on a thread of its own: answers each request once ``go`` is set, whatever our loop does."""
    conn, _ = server.accept()
    reader = CommandReader()
    with conn:
        while data := conn.recv(65536):
            for cmd in reader.feed(data):
                assert isinstance(cmd, RemotingCommand)
                go.wait(5)
                go.clear()
                conn.sendall(cmd.response(0, body=cmd.body).encode())
            answered.set()


async def test_an_answer_in_the_socket_when_the_loop_was_held_past_the_deadline_is_taken(
        nursery: trio.Nursery, caplog: pytest.LogCaptureFixture) -> None:
    """A listener that keeps the CPU holds the event loop; a request's answer comes in time meanwhile, and the
    loop is back only after the request's deadline. The reader and the timer then woke in the same turn, and in
    about half such turns the wait timed out first (a RemotingTimeoutError, then "response with opaque N ...
    matches no request" for the answer that had been there all along)."""
    server = socket.create_server(("127.0.0.1", 0))
    go, answered = threading.Event(), threading.Event()
    threading.Thread(target=_answer_when_told, args=(server, go, answered), daemon=True).start()
    stream = await trio.open_tcp_stream("127.0.0.1", server.getsockname()[1])
    conn = ClientConnection(stream, "peer:1")
    nursery.start_soon(conn.run, None, RequestContext(connection=conn, remote_addr="peer:1"))
    got: list[bytes | None] = []

    async def ask(body: bytes) -> None:
        try:
            got.append((await conn.invoke(RemotingCommand.request(ECHO, body=body), 0.05)).body)
        except RemotingTimeoutError:
            raise AssertionError(f"timed out at {body!r}") from None

    with caplog.at_level("WARNING", logger="rocketpy.remoting"):
        for i in range(12):
            answered.clear()
            async with trio.open_nursery() as asks:
                asks.start_soon(ask, b"%d" % i)
                await wait_until(lambda: len(conn.core.requests) == 1 and not conn.core.outbox, timeout=5, tick=0)
                go.set()  # sent: the peer answers while the loop is held (blocking, on purpose)
                assert answered.wait(5)
                time.sleep(0.1)  # and past the request's 50 ms
            assert got[-1] == b"%d" % i
    assert "matches no request" not in caplog.text
    await conn.aclose()
    server.close()


async def test_cancelled_wait_leaves_the_connection_usable(
        nursery: trio.Nursery, virtual_clock: trio.testing.MockClock) -> None:
    conn, _ = await connected(nursery, {b"slow": 1.0})
    with trio.move_on_after(0.2):
        await conn.invoke(RemotingCommand.request(ECHO, body=b"slow"), 3)
        pytest.fail("not cancelled")
    await trio.sleep(2)
    assert (await conn.invoke(RemotingCommand.request(ECHO, body=b"next"), 1)).body == b"next"


async def test_close_fails_waiters_and_async_requests(nursery: trio.Nursery,
                                                       virtual_clock: trio.testing.MockClock) -> None:
    conn, _ = await connected(nursery, {b"slow": 10.0})
    future = await conn.request_async(RemotingCommand.request(ECHO, body=b"slow"), 30)
    failed: list[BaseException] = []

    async def ask() -> None:
        with pytest.raises(ConnectionClosedError):
            await conn.invoke(RemotingCommand.request(ECHO, body=b"slow"), 30)
        failed.append(ConnectionClosedError())

    async with trio.open_nursery() as senders:
        senders.start_soon(ask)
        await trio.sleep(1)
        await conn.aclose()
    assert failed
    with pytest.raises(ConnectionClosedError):
        await future.wait()


async def test_each_waiter_gets_its_own_closed_error(nursery: trio.Nursery,
                                                      virtual_clock: trio.testing.MockClock) -> None:
    # memory finding: one ConnectionClosedError raised in every waiter gathered all their frames in its
    # traceback, so a producer keeping one failed send kept every request that waited with it
    conn, _ = await connected(nursery, {b"slow": 10.0})
    failed: list[BaseException] = []

    async def ask() -> None:
        try:
            await conn.invoke(RemotingCommand.request(ECHO, body=b"slow"), 30)
        except ConnectionClosedError as exc:
            failed.append(exc)

    async with trio.open_nursery() as senders:
        for _ in range(5):
            senders.start_soon(ask)
        await trio.sleep(1)
        await conn.aclose()
    assert len({id(exc) for exc in failed}) == len(failed) == 5
    for exc in failed:
        tb, asks = exc.__traceback__, 0
        while tb is not None:
            asks += tb.tb_frame.f_code is ask.__code__
            tb = tb.tb_next
        assert asks == 1  # its own waiter's frame only


async def test_async_request_times_out(nursery: trio.Nursery, virtual_clock: trio.testing.MockClock) -> None:
    conn, _ = await connected(nursery, {b"slow": 10.0})
    done: list[object] = []
    future = await conn.request_async(RemotingCommand.request(ECHO, body=b"slow"), 0.5, done.append)
    with pytest.raises(RemotingTimeoutError):
        await future.wait()
    assert done == [future]
    fast = await conn.request_async(RemotingCommand.request(ECHO, body=b"fast"), 0.5)
    assert (await fast.wait()).body == b"fast"


async def test_write_cut_short_closes_the_connection(nursery: trio.Nursery,
                                                     virtual_clock: trio.testing.MockClock) -> None:
    ours, _theirs = trio.testing.lockstep_stream_pair()  # nobody reads: the write blocks
    conn = ClientConnection(ours, "peer:1")
    nursery.start_soon(conn.run, None, RequestContext(connection=conn, remote_addr="peer:1"))
    queued: list[BaseException] = []

    async def behind() -> None:
        await trio.sleep(0.1)  # queues behind the blocked writer
        try:
            await conn.invoke(RemotingCommand.request(ECHO, body=b"second"), 30)
        except ConnectionClosedError as exc:
            queued.append(exc)

    async with trio.open_nursery() as senders:
        senders.start_soon(behind)
        with trio.move_on_after(1):
            await conn.invoke(RemotingCommand.request(ECHO, body=b"first"), 30)
    # part of a frame may have gone out: the connection is done, and what waited behind it fails at once
    assert conn.closed
    assert len(queued) == 1


def tcp_pair(nursery: trio.Nursery, sndbuf: int | None = None) -> tuple[ClientConnection, socket.socket]:
    """A running ClientConnection over a real socket (its raw write path), and the peer's plain socket."""
    ours, theirs = socket.socketpair()
    if sndbuf is not None:
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    conn = ClientConnection(trio.SocketStream(trio.socket.from_stdlib_socket(ours)), "peer:1")
    nursery.start_soon(conn.run, None, RequestContext(connection=conn, remote_addr="peer:1"))
    theirs.setblocking(False)
    return conn, theirs


async def test_a_turns_first_frames_go_out_before_the_turn_ends(nursery: trio.Nursery) -> None:
    """The peer can work on the first WRITE_CHUNK requests of a turn while its other senders build theirs."""
    conn, theirs = tcp_pair(nursery)
    await trio.sleep(0.01)  # run() reads
    try:
        for i in range(WRITE_CHUNK - 1):  # one turn: no checkpoint from here on
            assert conn.request_soon(RemotingCommand.request(ECHO, body=b"%d" % i), 5, lambda f: None)
        with pytest.raises(BlockingIOError):
            theirs.recv(1 << 16)  # queued for the turn's writer
        conn.request_soon(RemotingCommand.request(ECHO, body=b"last"), 5, lambda f: None)
        received = CommandReader().feed(theirs.recv(1 << 16))
        assert [c.body for c in received] == [b"%d" % i for i in range(WRITE_CHUNK - 1)] + [b"last"]
    finally:
        await conn.aclose()
        theirs.close()


@pytest.mark.timeout(60)
async def test_early_writes_the_socket_takes_in_part_keep_frames_whole(nursery: trio.Nursery) -> None:
    """A socket that takes part of a turn's frames (small buffer, slow peer): the rest goes first, each sender
    gets its own answer."""
    conn, theirs = tcp_pair(nursery, sndbuf=4096)
    peer = trio.SocketStream(trio.socket.from_stdlib_socket(theirs))

    async def serve() -> None:
        reader = CommandReader()
        while data := await peer.receive_some(3000):
            await trio.sleep(0.001)
            for cmd in reader.feed(data):
                assert isinstance(cmd, RemotingCommand) and cmd.body is not None
                await peer.send_all(cmd.response(0, body=cmd.body[:16]).encode())

    answers: dict[int, bytes | None] = {}

    async def ask(i: int) -> None:
        body = b"%06d" % i + bytes(i % 251 for _ in range(20000 + i))
        answers[i] = (await conn.invoke(RemotingCommand.request(ECHO, body=body), 30)).body

    async with trio.open_nursery() as peer_side:
        peer_side.start_soon(serve)
        async with trio.open_nursery() as senders:
            for i in range(48):
                senders.start_soon(ask, i)
        peer_side.cancel_scope.cancel()
    assert answers == {i: (b"%06d" % i + bytes(i % 251 for _ in range(10))) for i in range(48)}
    await conn.aclose()
    await peer.aclose()


async def test_a_request_soon_from_a_task_finishing_after_the_peer_left_is_refused_quietly(
        nursery: trio.Nursery, virtual_clock: trio.testing.MockClock) -> None:
    # a DLedger member's push, sent from a task of the connection's own nursery as the follower went away: trio
    # had closed that nursery to new tasks, and request_soon's start_soon raised RuntimeError into the member
    a, b = trio.socket.socketpair()  # a socket: the production read loop, which closes only after its tasks end
    conn = ClientConnection(trio.SocketStream(a), "peer:1")
    theirs = trio.SocketStream(b)
    got: list[object] = []
    ran = trio.Event()

    async def late() -> None:
        with trio.CancelScope(shield=True):
            await trio.sleep(1)
        got.append(conn.request_soon(RemotingCommand(code=105), 3.0, lambda _f: None))
        ran.set()

    async def run() -> None:
        await conn.run(None, RequestContext(connection=conn, remote_addr="peer:1"))

    nursery.start_soon(run)
    await wait_until(lambda: conn._nursery is not None)
    conn._nursery.start_soon(late)
    await theirs.aclose()  # the peer leaves: the read loop ends while late() still sleeps
    await ran.wait()
    assert got == [None]  # not running: nothing sent, no error
