"""The asyncio driver of the connection core: against our servers (on their own trio thread) and against
asyncio peers that answer late, never, or close mid-frame."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from rocketpy.codecs import RemotingCommand, ResponseCode
from rocketpy.codecs.bodies import TopicRouteData
from rocketpy.codecs.headers import GetRouteInfoRequestHeader
from rocketpy.pytest_plugin import Cluster
from rocketpy.remoting import Dispatcher
from rocketpy.remoting.aio import AsyncioConnection, AsyncioRemotingClient, open_connection
from rocketpy.remoting.errors import ConnectionClosedError, RemotingConnectError, RemotingTimeoutError

GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_RUNTIME_INFO = 28


@pytest.fixture
def cluster(rocketmq_session_cluster: Cluster) -> Cluster:
    return rocketmq_session_cluster


def route_request(topic: str) -> RemotingCommand:
    return RemotingCommand.request(GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic))


def run(main: Callable[[], Awaitable[object]]) -> object:
    return asyncio.run(asyncio.wait_for(main(), 30))


@pytest.mark.timeout(60)
def test_concurrent_requests_to_our_namesrv_are_answered_and_share_writes(cluster: Cluster) -> None:
    async def main() -> tuple[list[str], int]:
        host, port = cluster.namesrv.rsplit(":", 1)
        conn = await open_connection(host, int(port))
        writes = 0
        transport = conn.transport
        assert transport is not None
        real_write = transport.write

        def counted(data: bytes | bytearray | memoryview) -> None:
            nonlocal writes
            writes += 1
            real_write(data)

        transport.write = counted  # type: ignore[method-assign]
        try:
            answers = await asyncio.gather(*(conn.invoke(route_request("TBW102"), 3.0) for _ in range(32)))
        finally:
            await conn.aclose()
        names = [TopicRouteData.decode(a.body).broker_datas[0].broker_name for a in answers]  # type: ignore[arg-type]
        return names, writes

    names, writes = run(main)  # type: ignore[misc]
    assert names == [names[0]] * 32 and names[0]
    assert writes <= 32 // 8  # a write per WRITE_CHUNK frames at most, not one per request


@pytest.mark.timeout(60)
def test_the_pooled_client_talks_to_the_broker_and_applies_the_rpc_hook(cluster: Cluster) -> None:
    hooked: list[int] = []

    async def main() -> RemotingCommand:
        client = AsyncioRemotingClient(rpc_hook=lambda cmd: hooked.append(cmd.code))
        try:
            first = await client.invoke(cluster.broker_addr, RemotingCommand(code=GET_BROKER_RUNTIME_INFO), 3.0)
            assert client.is_open(cluster.broker_addr)
            again = await client.invoke(cluster.broker_addr, RemotingCommand(code=GET_BROKER_RUNTIME_INFO), 3.0)
            assert again.code == first.code
            return first
        finally:
            await client.aclose()

    answer = run(main)
    assert isinstance(answer, RemotingCommand) and answer.code == ResponseCode.SUCCESS
    assert b"putTps" in (answer.body or b"")
    assert hooked == [GET_BROKER_RUNTIME_INFO] * 2


async def _peer(handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]) -> asyncio.Server:
    return await asyncio.start_server(handle, "127.0.0.1", 0)


def _port(server: asyncio.Server) -> int:
    return int(server.sockets[0].getsockname()[1])


@pytest.mark.timeout(30)
def test_a_silent_peer_times_the_wait_out_with_javas_text_and_a_cancelled_wait_leaves_nothing() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(-1)

    async def main() -> None:
        server = await _peer(silent)
        async with server:
            conn = await open_connection("127.0.0.1", _port(server))
            timed_out = r"wait response on the channel <127\.0\.0\.1:\d+> timeout, 50\(ms\)"
            with pytest.raises(RemotingTimeoutError, match=timed_out):
                await conn.invoke(route_request("T"), 0.05)
            task = asyncio.ensure_future(conn.invoke(route_request("T"), 30.0))
            await asyncio.sleep(0.01)
            assert len(conn.core.requests) == 1
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert len(conn.core.requests) == 0  # nothing left behind on the connection
            assert not conn.closed
            await conn.aclose()

    run(main)


@pytest.mark.timeout(30)
def test_a_peer_that_answers_out_of_order_and_closes_mid_frame() -> None:
    async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        frames = []
        for _ in range(3):
            length = int.from_bytes(await reader.readexactly(4), "big")
            frames.append(RemotingCommand.decode(length.to_bytes(4, "big") + await reader.readexactly(length)))
        # answer the last two in reverse order, then half of an answer to the first, then hang up
        for cmd in (frames[2], frames[1]):
            writer.write(cmd.response(ResponseCode.SUCCESS, body=str(cmd.opaque).encode()).encode())
        writer.write(frames[0].response(ResponseCode.SUCCESS, body=b"z" * 64).encode()[:20])
        await writer.drain()
        writer.close()

    async def main() -> None:
        server = await _peer(peer)
        async with server:
            conn = await open_connection("127.0.0.1", _port(server))
            results = await asyncio.gather(*(conn.invoke(route_request("T"), 5.0) for _ in range(3)),
                                           return_exceptions=True)
            assert isinstance(results[0], ConnectionClosedError)
            assert [r.body for r in results[1:]] == [str(r.opaque).encode() for r in results[1:]]  # type: ignore[union-attr]
            await conn.closed_wait()

    run(main)


@pytest.mark.timeout(30)
def test_the_peers_own_requests_are_served_by_the_dispatcher() -> None:
    dispatcher = Dispatcher()

    async def notified(ctx, request):  # type: ignore[no-untyped-def]
        return request.response(ResponseCode.SUCCESS, remark=f"seen by {ctx.state}")

    dispatcher.register(40, notified)  # NOTIFY_CONSUMER_IDS_CHANGED, as a broker sends it to a consumer
    got: asyncio.Future[RemotingCommand]

    async def broker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(RemotingCommand(code=40, opaque=77).encode())
        length = int.from_bytes(await reader.readexactly(4), "big")
        got.set_result(RemotingCommand.decode(length.to_bytes(4, "big") + await reader.readexactly(length)))
        writer.close()

    async def main() -> None:
        nonlocal got
        got = asyncio.get_running_loop().create_future()
        server = await _peer(broker)
        async with server:
            conn = await open_connection("127.0.0.1", _port(server), dispatcher=dispatcher, state="client-1")
            response = await asyncio.wait_for(got, 5)
            assert response.is_response and response.opaque == 77 and response.remark == "seen by client-1"
            await conn.aclose()

    run(main)


def test_a_refused_connect_is_one_error() -> None:
    async def main() -> None:
        server = await _peer(lambda r, w: asyncio.sleep(0))
        port = _port(server)
        server.close()
        await server.wait_closed()
        with pytest.raises(RemotingConnectError, match=f"connect to 127.0.0.1:{port} failed"):
            await open_connection("127.0.0.1", port)

    run(main)


def test_the_connection_is_an_asyncio_protocol() -> None:
    assert issubclass(AsyncioConnection, asyncio.Protocol)
