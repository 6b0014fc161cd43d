"""Heavy and hostile load, small and fast versions of issue #13's measurements (the full runs are in
tools/bench/bench_load.py): a peer that never reads its answers cannot make a server buffer them, many
connections are all answered, and every path refuses a frame above 16 MiB before allocating it."""

from __future__ import annotations

import contextlib
import functools
import socket
import struct

import pytest
import trio
import trio.testing

from rocketpy.codecs import CodecError, FrameSplitter, RemotingCommand, ResponseCode
from rocketpy.codecs.ha import HaTransferReader
from rocketpy.remoting import Dispatcher, RemotingServer, open_remoting_client
from rocketpy.remoting.errors import ConnectionClosedError
from rocketpy.sniffer.framing import StreamDecoder

ECHO = 9001
ANSWER = b"a" * 2048


@pytest.fixture
async def server(nursery: trio.Nursery) -> RemotingServer:
    handled = [0]
    d = Dispatcher()

    @d.route(ECHO)
    def echo(ctx, request):  # type: ignore[no-untyped-def]
        handled[0] += 1
        return request.response(ResponseCode.SUCCESS, body=ANSWER)

    srv = RemotingServer(d)
    srv.state = handled
    return await nursery.start(srv.serve, "127.0.0.1", 0)  # type: ignore[no-any-return]


async def test_a_peer_that_never_reads_is_not_buffered_for(server: RemotingServer) -> None:
    handled = server.state
    stream = await trio.open_tcp_stream("127.0.0.1", server.port)
    stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    batch = RemotingCommand(code=ECHO, opaque=1).encode() * 2000
    stalled = 0
    # until three rounds in a row in which the server took nothing more (or it buffered far too much)
    while stalled < 3 and handled[0] * len(ANSWER) < 64 * 1024 * 1024:
        before = handled[0]
        with trio.move_on_after(0.5):
            await stream.send_all(batch)
        await trio.sleep(0.2)
        stalled = stalled + 1 if handled[0] == before else 0
    # what it answered sits in socket buffers (a few MiB at most), not in the server's memory
    assert handled[0] * len(ANSWER) < 32 * 1024 * 1024
    # and it keeps serving others meanwhile
    async with open_remoting_client() as client:
        answer = await client.invoke(server.address, RemotingCommand(code=ECHO), timeout=10)
        assert answer.body == ANSWER
    await trio.aclose_forcefully(stream)


async def test_one_receive_of_tiny_requests_does_not_buffer_all_its_answers() -> None:
    # 20,000 requests of 28 bytes (one receive's worth) ask for 40 MiB of answers: they are written
    # as they are made, so a peer that reads nothing stops the handling at about ANSWER_FLUSH_BYTES
    from rocketpy.remoting.connection import ANSWER_FLUSH_BYTES, Connection
    from rocketpy.remoting.dispatch import RequestContext

    handled = [0]
    d = Dispatcher()

    @d.route(ECHO)
    def echo(ctx, request):  # type: ignore[no-untyped-def]
        handled[0] += 1
        return request.response(ResponseCode.SUCCESS, body=ANSWER)

    ours, theirs = trio.testing.lockstep_stream_pair()  # a write completes only as the peer reads
    conn = Connection(ours, "peer:1")
    requests = [RemotingCommand(code=ECHO, opaque=i) for i in range(20_000)]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.answers, d, RequestContext(connection=conn, remote_addr="peer:1"), requests)
        await trio.testing.wait_all_tasks_blocked()
        assert handled[0] * len(ANSWER) <= ANSWER_FLUSH_BYTES + 256 * len(ANSWER)
        assert handled[0] < len(requests)
        nursery.cancel_scope.cancel()


async def test_many_connections_are_all_answered(server: RemotingServer) -> None:
    streams = [await trio.open_tcp_stream("127.0.0.1", server.port) for _ in range(300)]
    frame = RemotingCommand(code=ECHO, opaque=7).encode()
    answered = 0

    async def ask(stream: trio.SocketStream) -> None:
        nonlocal answered
        await stream.send_all(frame)
        splitter = FrameSplitter()
        with trio.fail_after(30):
            while not list(splitter):
                splitter.feed(await stream.receive_some())
        answered += 1

    async with trio.open_nursery() as nursery:
        for s in streams:
            nursery.start_soon(ask, s)
    assert answered == 300 and len(server.connections) == 300
    for s in streams:
        await s.aclose()


async def test_client_refuses_an_absurd_answer_length(nursery: trio.Nursery) -> None:
    async def liar(stream: trio.SocketStream) -> None:
        await stream.receive_some()
        await stream.send_all(struct.pack(">ii", 0x7FFFFFF0, 0) + b"x" * 64)  # 2 GiB "frame"
        await trio.sleep_forever()

    listeners = await nursery.start(functools.partial(trio.serve_tcp, liar, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    with trio.fail_after(10):  # closed at the length, not after waiting for 2 GiB
        try:
            async with open_remoting_client() as client:
                await client.invoke(f"127.0.0.1:{port}", RemotingCommand(code=ECHO), timeout=30)
        except BaseExceptionGroup as group:
            assert group.subgroup(ConnectionClosedError) is not None, group
        else:
            raise AssertionError("the client took a 2 GiB frame length")
    nursery.cancel_scope.cancel()


def test_every_reader_checks_the_length_before_buffering() -> None:
    absurd = struct.pack(">ii", 17 * 1024 * 1024, 0) + b"{"
    splitter = FrameSplitter()
    splitter.feed(absurd)
    with pytest.raises(CodecError):
        list(splitter)
    decoder = StreamDecoder(synced=True)  # the sniffer, the proxy and the Spark pcap reader
    frames, _ = decoder.feed(absurd + b"x" * 1000)
    assert frames == [] and decoder.buffered < 2048 and not decoder.synced
    reader = HaTransferReader()  # the HA slave
    with pytest.raises(CodecError):
        reader.feed(struct.pack(">qi", 0, 0x7FFFFFFF))


async def _pipeline(send_all, receive_some, count: int) -> list[int]:  # type: ignore[no-untyped-def]
    """Writes ``count`` requests at once, reads the answers: their opaques, in the order they came."""
    await send_all(b"".join(RemotingCommand(code=ECHO, opaque=i).encode() for i in range(count)))
    splitter, opaques = FrameSplitter(), []
    while len(opaques) < count:
        data = await receive_some()
        assert data, "the server closed before answering everything"
        splitter.feed(data)
        opaques += [RemotingCommand.decode(frame).opaque for frame in splitter]
    return opaques


def _echo_dispatcher() -> Dispatcher:
    d = Dispatcher()

    @d.route(ECHO)
    def echo(ctx, request):  # type: ignore[no-untyped-def]
        return request.response(ResponseCode.SUCCESS)

    return d


@pytest.mark.parametrize("path", ["socket", "stream"])
async def test_a_pipelining_peer_is_decoded_a_batch_at_a_time(path: str, nursery: trio.Nursery) -> None:
    # one write of 3,000 small requests arrives in a few receives: the server decodes REQUEST_BATCH of
    # them, answers, then the next, so what it holds decoded does not grow with what a peer pipelines
    from rocketpy.remoting.connection import REQUEST_BATCH, Connection
    from rocketpy.remoting.dispatch import RequestContext

    d = _echo_dispatcher()
    batches: list[int] = []
    real_answers = Connection.answers

    async def answers(self, dispatcher, context, requests):  # type: ignore[no-untyped-def]
        batches.append(len(requests))
        return await real_answers(self, dispatcher, context, requests)

    count = 3000
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Connection, "answers", answers)
        if path == "socket":
            srv = RemotingServer(d)
            await nursery.start(srv.serve, "127.0.0.1", 0)
            stream = await trio.open_tcp_stream("127.0.0.1", srv.port)
            seen = await _pipeline(stream.send_all, functools.partial(stream.receive_some, 65536), count)
            await stream.aclose()
        else:  # trio's stream layers (the TLS path)
            ours, theirs = trio.testing.memory_stream_pair()
            conn = Connection(ours, "peer:1")
            nursery.start_soon(conn.serve, d, RequestContext(connection=conn, remote_addr="peer:1"))
            seen = await _pipeline(theirs.send_all, theirs.receive_some, count)
            await theirs.aclose()
    assert seen == list(range(count))
    assert max(batches) <= REQUEST_BATCH
    assert sum(batches) == count


async def _served(path: str, d: Dispatcher, nursery: trio.Nursery) -> trio.abc.HalfCloseableStream:
    """A stream to ``d`` served on a TCP socket (the socket path) or through trio's stream layers."""
    from rocketpy.remoting.connection import Connection
    from rocketpy.remoting.dispatch import RequestContext

    if path == "socket":
        srv = RemotingServer(d)
        await nursery.start(srv.serve, "127.0.0.1", 0)
        return await trio.open_tcp_stream("127.0.0.1", srv.port)
    stream, ours = trio.testing.memory_stream_pair()
    conn = Connection(ours, "peer:1")
    nursery.start_soon(conn.serve, d, RequestContext(connection=conn, remote_addr="peer:1"))
    return stream


async def _answered(stream: trio.abc.HalfCloseableStream) -> list[int]:
    """The opaques of the answers read until the server closes, in the order they came."""
    splitter, opaques = FrameSplitter(), []
    with trio.fail_after(10), contextlib.suppress(trio.BrokenResourceError):  # a reset: unread bytes at close
        while data := await stream.receive_some(65536):
            splitter.feed(data)
            opaques += [RemotingCommand.decode(frame).opaque for frame in splitter]
    return opaques


@pytest.mark.parametrize("path", ["socket", "stream"])
async def test_a_peer_that_half_closes_after_pipelining_gets_every_answer(path: str, nursery: trio.Nursery) -> None:
    # the end of the stream comes after four batches' worth of requests: every one is answered, in order,
    # before the server closes
    from rocketpy.remoting.connection import REQUEST_BATCH

    d = _echo_dispatcher()
    count = 4 * REQUEST_BATCH + 7
    stream = await _served(path, d, nursery)
    await stream.send_all(b"".join(RemotingCommand(code=ECHO, opaque=i).encode() for i in range(count)))
    await stream.send_eof()
    assert await _answered(stream) == list(range(count))
    await stream.aclose()


class _PassesOn:
    """A fast path that takes every request frame and answers none (each is decoded late, as a broker's
    send lane passes on what it does not handle)."""

    def takes(self, frame: bytes) -> bool:
        return True

    def answer(self, ctx: object, frame: bytes) -> bytes | None:
        return None

    def settle(self) -> None:
        pass


@pytest.mark.parametrize("path", ["socket", "stream"])
async def test_a_malformed_frame_the_fast_path_passed_on_closes_the_connection(path: str,
                                                                                nursery: trio.Nursery) -> None:
    # what came before it is answered; what follows it is not served: the connection closes, as it does
    # for a frame found malformed on reading (Java's NettyDecoder)
    d = _echo_dispatcher()
    d.fast_path = _PassesOn()
    bad = struct.pack(">ii", 6, 10) + b"{}"  # a header longer than its frame: refused only on decoding
    stream = await _served(path, d, nursery)
    await stream.send_all(RemotingCommand(code=ECHO, opaque=1).encode() + bad)
    await trio.testing.wait_all_tasks_blocked()  # the server has read (and answered) the first receive
    with contextlib.suppress(trio.BrokenResourceError):  # the server may be gone already
        await stream.send_all(RemotingCommand(code=ECHO, opaque=2).encode())
    assert await _answered(stream) == [1]
    await stream.aclose()
