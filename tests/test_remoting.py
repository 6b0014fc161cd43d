"""The trio transport: connection batching, dispatch answers, servers and the client."""

from __future__ import annotations

import functools
import logging
import struct

import pytest
import trio
import trio.testing

from rocketpy.client.errors import MQBrokerError
from rocketpy.codecs import CodecError, RemotingCommand, ResponseCode, SerializeType
from rocketpy.remoting import (
    CommandReader,
    Connection,
    ConnectionClosedError,
    Dispatcher,
    RemotingConnectError,
    RemotingServer,
    RemotingTimeoutError,
    RequestContext,
    ResponseFuture,
    fresh_error,
    open_remoting_client,
    serve_remoting,
)
from rocketpy.testing import wait_until

ECHO, BOOM, SLOW, NOTE = 9001, 9002, 9003, 9004


class CountingStream(trio.abc.Stream):
    """Wraps a stream and counts its send_all calls."""

    def __init__(self, inner: trio.abc.Stream) -> None:
        self.inner = inner
        self.sends = 0

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.sends += 1
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


def make_dispatcher(notes: list[str] | None = None) -> Dispatcher:
    d = Dispatcher()

    @d.route(ECHO)
    def echo(ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        return req.response(0, body=req.body, remark=ctx.remote_addr)

    @d.route(BOOM)
    def boom(ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        raise RuntimeError("kaput")

    @d.route(SLOW)
    async def slow(ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        await trio.sleep(float(req.body or b"1"))
        return req.response(0)

    @d.route(NOTE)
    def note(ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        if notes is not None:
            notes.append((req.body or b"").decode())
        return req.response(0)

    return d


async def read_commands(stream: trio.abc.Stream, count: int) -> list[RemotingCommand]:
    reader = CommandReader()
    out: list[RemotingCommand] = []
    with trio.fail_after(5):
        while len(out) < count:
            data = await stream.receive_some()
            assert data, "stream closed early"
            out += reader.feed(data)
    return out


def req(code: int, opaque: int, body: bytes | None = None, **kw: object) -> RemotingCommand:
    return RemotingCommand.request(code, body=body, opaque=opaque, **kw)  # type: ignore[arg-type]


# -- sans-IO reading -----------------------------------------------------------


def test_reader_any_chunking() -> None:
    frames = b"".join(req(ECHO, i, b"x" * i).encode() for i in range(5))
    for size in (1, 3, 7, len(frames)):
        reader = CommandReader()
        got: list[RemotingCommand] = []
        for i in range(0, len(frames), size):
            got += reader.feed(frames[i : i + size])
        assert [c.opaque for c in got] == list(range(5))
        assert [c.body for c in got] == [None] + [b"x" * i for i in range(1, 5)]
        assert reader.buffered == 0


def test_reader_rejects_absurd_length() -> None:
    with pytest.raises(CodecError):
        CommandReader(max_frame=1024).feed(struct.pack(">i", 1 << 20) + b"\0" * 8)
    with pytest.raises(CodecError):
        CommandReader().feed(struct.pack(">ii", 2, 0))


# -- connection + dispatcher over memory streams --------------------------------


async def serve_memory(dispatcher: Dispatcher, nursery: trio.Nursery, **kw: object) -> tuple:
    client_side, server_side = trio.testing.memory_stream_pair()
    counting = CountingStream(server_side)
    server = RemotingServer(dispatcher, **kw)  # type: ignore[arg-type]
    nursery.start_soon(server.handle_stream, counting, "10.0.0.1:5555")
    return client_side, counting, server


async def test_batched_responses_one_send(nursery: trio.Nursery) -> None:
    client, counting, _ = await serve_memory(make_dispatcher(), nursery)
    await client.send_all(b"".join(req(ECHO, i, f"b{i}".encode()).encode() for i in range(1, 6)))
    got = await read_commands(client, 5)
    assert [c.opaque for c in got] == [1, 2, 3, 4, 5]
    assert all(c.is_response and c.code == 0 for c in got)
    assert [c.body for c in got] == [f"b{i}".encode() for i in range(1, 6)]
    assert got[0].remark == "10.0.0.1:5555"
    assert counting.sends == 1


async def test_deferred_answers_woken_together_go_out_whole_and_in_one_or_two_sends() -> None:
    """Answers written by several tasks at once (a DLedger leader's sends, acked together): the first writer
    sends the others' frames behind its own instead of each task taking the lock and a send of its own."""
    client_side, server_side = trio.testing.memory_stream_pair()
    counting = CountingStream(server_side)
    conn = Connection(counting, "10.0.0.1:5555")
    ctx = RequestContext(connection=conn, remote_addr="10.0.0.1:5555")
    requests = [req(ECHO, i, b"x" * i) for i in range(1, 31)]
    async with trio.open_nursery() as nursery:
        for r in requests:
            nursery.start_soon(ctx.reply, r, r.response(0, body=r.body))
    got = await read_commands(client_side, 30)
    assert sorted((c.opaque, c.body) for c in got) == [(i, b"x" * i) for i in range(1, 31)]
    assert counting.sends <= 3
    # and several answers of one connection through reply_all: one write
    before = counting.sends
    await ctx.reply_all([(r, r.response(0)) for r in requests[:5]])
    assert [c.opaque for c in await read_commands(client_side, 5)] == [1, 2, 3, 4, 5]
    assert counting.sends == before + 1


async def test_unknown_code(nursery: trio.Nursery) -> None:
    client, _, _ = await serve_memory(make_dispatcher(), nursery)
    await client.send_all(req(4242, 7).encode())
    (resp,) = await read_commands(client, 1)
    assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert resp.remark == " request type 4242 not supported"
    assert resp.opaque == 7 and resp.is_response


async def test_handler_exception_system_error(nursery: trio.Nursery) -> None:
    client, _, _ = await serve_memory(make_dispatcher(), nursery)
    await client.send_all(req(BOOM, 3).encode() + req(ECHO, 4).encode())
    boom, echo = await read_commands(client, 2)
    assert boom.code == ResponseCode.SYSTEM_ERROR and boom.opaque == 3
    assert boom.remark.startswith("builtins.RuntimeError: kaput, boom(")
    assert echo.code == 0 and echo.opaque == 4


async def test_oneway_gets_no_answer(nursery: trio.Nursery) -> None:
    notes: list[str] = []
    client, _, _ = await serve_memory(make_dispatcher(notes), nursery)
    await client.send_all(
        req(NOTE, 1, b"one", oneway=True).encode() + req(BOOM, 2, oneway=True).encode() + req(NOTE, 3, b"two").encode()
    )
    (resp,) = await read_commands(client, 1)
    assert resp.opaque == 3
    assert notes == ["one", "two"]


async def test_response_keeps_serialize_type(nursery: trio.Nursery) -> None:
    client, _, _ = await serve_memory(make_dispatcher(), nursery)
    await client.send_all(req(ECHO, 9, b"bin", serialize_type=SerializeType.ROCKETMQ).encode())
    (resp,) = await read_commands(client, 1)
    assert resp.serialize_type == SerializeType.ROCKETMQ and resp.body == b"bin"


async def test_malformed_frame_closes_connection(nursery: trio.Nursery, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "rocketpy.remoting")
    closed: list[Connection] = []
    server = RemotingServer(make_dispatcher(), on_close=closed.append)
    bad_client, bad_server = trio.testing.memory_stream_pair()
    good_client, good_server = trio.testing.memory_stream_pair()
    nursery.start_soon(server.handle_stream, bad_server, "bad:1")
    nursery.start_soon(server.handle_stream, good_server, "good:1")
    # a whole good request, then a negative length
    await bad_client.send_all(req(ECHO, 1).encode() + struct.pack(">i", -5) + b"junkjunk")
    await wait_until(lambda: closed != [], timeout=5)
    assert [c.remote_addr for c in closed] == ["bad:1"]
    assert "decode exception, bad:1" in caplog.text and "failed" not in caplog.text
    await good_client.send_all(req(ECHO, 2).encode())
    (resp,) = await read_commands(good_client, 1)
    assert resp.opaque == 2
    assert len(server.connections) == 1


async def test_broken_json_header_closes_connection(nursery: trio.Nursery) -> None:
    closed: list[Connection] = []
    server = RemotingServer(make_dispatcher(), on_close=closed.append)
    client, server_side = trio.testing.memory_stream_pair()
    nursery.start_soon(server.handle_stream, server_side, "x:1")
    header = b'{"code":9001,"opaque":'
    await client.send_all(struct.pack(">ii", 4 + len(header), len(header)) + header)
    await wait_until(lambda: closed != [], timeout=5)
    with trio.fail_after(5):
        assert await client.receive_some() == b""


# -- real sockets ----------------------------------------------------------------


async def test_client_invoke_timeout_async_oneway(nursery: trio.Nursery, virtual_clock: trio.testing.MockClock) -> None:
    # timeouts race the SLOW handler's 0.3 s on the virtual clock: no busy machine can reorder them
    notes: list[str] = []
    connects: list[Connection] = []
    closes: list[Connection] = []
    server: RemotingServer = await nursery.start(
        lambda task_status: serve_remoting(
            make_dispatcher(notes),
            "127.0.0.1",
            0,
            on_connect=connects.append,
            on_close=closes.append,
            task_status=task_status,
        )
    )
    assert server.port and server.host == "127.0.0.1"
    async with open_remoting_client() as client:
        resp = await client.invoke(server.address, req(ECHO, 0, b"hello"), timeout=3)
        assert resp.code == 0 and resp.body == b"hello" and resp.request_code == ECHO

        with pytest.raises(RemotingTimeoutError):
            await client.invoke(server.address, req(SLOW, 0, b"0.3"), timeout=0.1)
        # like Java, a sync timeout closes the connection; the next call reconnects
        resp = await client.invoke(server.address, req(ECHO, 0, b"again"), timeout=3)
        assert resp.body == b"again"
        assert len(connects) == 2

        results: list[RemotingCommand | None] = []
        fut = await client.invoke_async(
            server.address, req(ECHO, 0, b"async"), timeout=3, callback=lambda f: results.append(f.response)
        )
        assert (await fut.wait()).body == b"async"
        assert results and results[0] is fut.response

        slow = await client.invoke_async(server.address, req(SLOW, 0, b"0.3"), timeout=0.1)
        with pytest.raises(RemotingTimeoutError):
            await slow.wait()

        await client.invoke_oneway(server.address, req(NOTE, 0, b"fire"))
        await client.invoke(server.address, req(ECHO, 0), timeout=3)
        assert notes == ["fire"]
        assert len(connects) == 2

    async with open_remoting_client(close_on_timeout=False) as client:
        with pytest.raises(RemotingTimeoutError):
            await client.invoke(server.address, req(SLOW, 0, b"0.3"), timeout=0.1)
        # kept open: the late answer is dropped and the connection serves on
        resp = await client.invoke(server.address, req(ECHO, 0, b"kept"), timeout=3)
        assert resp.body == b"kept" and len(connects) == 3
        # switched on for the open connection too (each connection closes itself on a timeout)
        client.close_on_timeout = True
        with pytest.raises(RemotingTimeoutError):
            await client.invoke(server.address, req(SLOW, 0, b"0.3"), timeout=0.1)
        resp = await client.invoke(server.address, req(ECHO, 0, b"fresh"), timeout=3)
        assert resp.body == b"fresh" and len(connects) == 4

    await wait_until(lambda: len(closes) >= 4, timeout=5)
    nursery.cancel_scope.cancel()


async def test_server_initiated_request_to_client(nursery: trio.Nursery) -> None:
    server: RemotingServer = await nursery.start(serve_remoting, make_dispatcher())
    client_dispatcher = Dispatcher()
    asked: list[bytes | None] = []

    @client_dispatcher.route(7777)
    def check(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        asked.append(request.body)
        return request.response(0, body=b"client says hi")

    async with open_remoting_client(dispatcher=client_dispatcher) as client:
        await client.invoke(server.address, req(ECHO, 0), timeout=3)
        (conn,) = server.connections
        resp = await conn.invoke(req(7777, 0, b"are you there"), timeout=3)
        assert resp.body == b"client says hi" and asked == [b"are you there"]
        # the client answers codes it does not know like Java does
        resp = await conn.invoke(req(7778, 0), timeout=3)
        assert resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    nursery.cancel_scope.cancel()


async def test_connect_refused_and_pending_failed_on_close(nursery: trio.Nursery) -> None:
    # find a port with nobody listening
    sock = trio.socket.socket()
    await sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    async with open_remoting_client() as client:
        with pytest.raises(RemotingConnectError):
            await client.invoke(f"127.0.0.1:{port}", req(ECHO, 0), timeout=1)

    server: RemotingServer = await nursery.start(serve_remoting, make_dispatcher())
    async with open_remoting_client() as client:
        fut = await client.invoke_async(server.address, req(SLOW, 0, b"10"), timeout=30)
        await wait_until(lambda: server.connections, timeout=5)
        for conn in list(server.connections):
            await conn.aclose()
        with pytest.raises(ConnectionClosedError):
            with trio.fail_after(5):
                await fut.wait()
    nursery.cancel_scope.cancel()


async def test_connect_locks_live_only_while_someone_connects(nursery: trio.Nursery) -> None:
    # a client that talks to many addresses over its life kept a lock per address forever
    server: RemotingServer = await nursery.start(serve_remoting, make_dispatcher())
    refused = []
    for _ in range(20):
        sock = trio.socket.socket()
        await sock.bind(("127.0.0.1", 0))
        refused.append(f"127.0.0.1:{sock.getsockname()[1]}")
        sock.close()
    async with open_remoting_client() as client:
        got = []

        async def connect(addr: str) -> None:
            try:
                got.append(await client.connection(addr, timeout=2))
            except RemotingConnectError:
                got.append(None)

        async with trio.open_nursery() as tasks:
            for _ in range(8):  # at once: one connect, the others wait on it and share its connection
                tasks.start_soon(connect, server.address)
            for addr in refused:
                tasks.start_soon(connect, addr)
        shared = {id(c) for c in got if c is not None}
        assert len(shared) == 1 and got.count(None) == len(refused)
        await wait_until(lambda: len(server.connections) == 1, timeout=5)
        assert len(client._connecting) == 0
        await client.close_connection(server.address)
        assert (await client.invoke(server.address, req(ECHO, 0, b"again"), timeout=3)).body == b"again"
        assert len(client._connecting) == 0
    nursery.cancel_scope.cancel()


async def test_server_survives_garbage_over_tcp(nursery: trio.Nursery) -> None:
    server: RemotingServer = await nursery.start(serve_remoting, make_dispatcher())
    bad = await trio.open_tcp_stream("127.0.0.1", server.port)
    await bad.send_all(struct.pack(">i", 0x7FFFFFF0) + b"\0\0\0\0")
    with trio.fail_after(5):
        assert await bad.receive_some() == b""
    await bad.aclose()
    async with open_remoting_client() as client:
        resp = await client.invoke(server.address, req(ECHO, 0, b"still here"), timeout=3)
        assert resp.body == b"still here"
    nursery.cancel_scope.cancel()


async def test_idle_connection_closed(nursery: trio.Nursery, virtual_clock: trio.testing.MockClock) -> None:
    closed: list[Connection] = []
    server: RemotingServer = await nursery.start(
        lambda task_status: serve_remoting(
            make_dispatcher(), idle_timeout=0.2, on_close=closed.append, task_status=task_status
        )
    )
    stream = await trio.open_tcp_stream("127.0.0.1", server.port)
    t0 = trio.current_time()
    with trio.fail_after(5):
        assert await stream.receive_some() == b""
    assert 0.2 <= trio.current_time() - t0 <= 0.25  # idle_timeout, checked every quarter of it (virtual time)
    await wait_until(lambda: closed != [], timeout=5)
    await stream.aclose()
    nursery.cancel_scope.cancel()


async def test_a_connection_closed_by_the_sweep_while_parked_ends_quietly(
    nursery: trio.Nursery, virtual_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    # finding (30-minute fuzz run): a connection parked on its socket, before its first request or after
    # answering one, woke with ClosedResourceError ("another task closed this fd") when the idle sweep
    # closed it, and the server logged "connection ... failed" with the exception group's traceback
    closed: list[Connection] = []
    server: RemotingServer = await nursery.start(
        lambda task_status: serve_remoting(
            make_dispatcher(), idle_timeout=0.2, on_close=closed.append, task_status=task_status
        )
    )
    silent = await trio.open_tcp_stream("127.0.0.1", server.port)
    answered = await trio.open_tcp_stream("127.0.0.1", server.port)
    await answered.send_all(req(ECHO, 1, b"hi").encode())
    with trio.fail_after(5):
        assert await answered.receive_some()  # answered: the server is parked on the drained socket
        assert await silent.receive_some() == b"" and await answered.receive_some() == b""
    await wait_until(lambda: len(closed) == 2, timeout=5)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    await silent.aclose()
    await answered.aclose()
    nursery.cancel_scope.cancel()


def test_fresh_error_is_the_same_error_without_the_traceback() -> None:
    errors: list[BaseException] = []
    for make in (lambda: MQBrokerError(17, "no topic", "127.0.0.1:10911"), lambda: FileNotFoundError(2, "gone", "f"),
                 lambda: ConnectionClosedError("closed"), lambda: trio.TooSlowError()):
        try:
            try:
                raise KeyError("cause")
            except KeyError as cause:
                raise make() from cause
        except BaseException as exc:  # noqa: BLE001 - each of the kinds above
            errors.append(exc)
    for error in errors:
        fresh = fresh_error(error)
        assert fresh is not error and type(fresh) is type(error) and fresh.args == error.args
        assert vars(fresh) == vars(error) and str(fresh) == str(error)
        assert fresh.__traceback__ is None and fresh.__cause__ is error.__cause__
    broker_error = fresh_error(errors[0])
    assert (broker_error.response_code, broker_error.remark, broker_error.addr) == (17, "no topic", "127.0.0.1:10911")
    assert fresh_error(errors[1]).filename == "f"  # type: ignore[attr-defined]


async def test_a_failed_response_raises_a_copy_to_each_waiter() -> None:
    future = ResponseFuture(1)
    future.set_error(ConnectionClosedError("closed"))
    raised = []
    for _ in range(3):
        with pytest.raises(ConnectionClosedError, match="closed") as info:
            await future.wait()
        raised.append(info.value)
    assert len({id(e) for e in [future.error, *raised]}) == 4
    assert future.error is not None and future.error.__traceback__ is None  # never raised: holds no frames



async def test_a_client_reads_its_answers_with_the_compiled_reader(nursery: trio.Nursery) -> None:
    # the server's batch limit (REQUEST_BATCH) is no business of a client's answers (serve(inline=False),
    # the TLS client's path): they keep the compiled reader, which reads every whole frame at once
    from rocketpy.remoting import core

    if core._read_frames is None:
        pytest.skip("the compiled extension is not built")
    read = core._read_frames
    calls: list[int] = []

    def counted(*args: object) -> tuple[list[object], int]:
        out, end = read(*args)
        calls.append(len(out))
        return out, end

    ours, theirs = trio.testing.memory_stream_pair()
    conn = Connection(ours, "peer:1")
    futures = [conn.start_request(req(ECHO, 0)) for _ in range(3)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(core, "_read_frames", counted)
        nursery.start_soon(functools.partial(conn.serve, None, RequestContext(connection=conn, remote_addr="peer:1"),
                                             inline=False))
        await theirs.send_all(b"".join(req(ECHO, f.opaque, b"x").response(ResponseCode.SUCCESS).encode()
                                       for f in futures))
        assert [(await f.wait()).opaque for f in futures] == [f.opaque for f in futures]
    assert sum(calls) == 3
    await theirs.aclose()
