"""Long-poll holds against a flood (issue #13): held pulls per connection are capped, and a connection
that reads none of its woken answers is closed instead of having them pile up in the broker."""

from __future__ import annotations

import socket

import pytest
import trio

from rocketpy.broker import longpoll
from rocketpy.codecs import FrameSplitter, RemotingCommand, RequestCode, ResponseCode
from rocketpy.codecs.headers import PullMessageRequestHeader
from rocketpy.testing import broker_client, now_ms, running_broker, wait_until


def held_pull(topic: str, offset: int, opaque: int) -> bytes:
    header = PullMessageRequestHeader(
        consumer_group="GFlood", topic=topic, queue_id=0, queue_offset=offset, max_msg_nums=32, sys_flag=2 | 4,
        commit_offset=0, suspend_timeout_millis=60_000, subscription="*", sub_version=now_ms(), expression_type="TAG",
    )
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header, opaque=opaque).encode()


async def test_held_pulls_per_connection_are_capped(tmp_path, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(longpoll, "HELD_PER_CONNECTION", 10)
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            assert (await c.send("TFlood", b"x", queue_id=0)).code == ResponseCode.SUCCESS
        host, port = broker.address.rsplit(":", 1)
        stream = await trio.open_tcp_stream(host, int(port))
        await stream.send_all(b"".join(held_pull("TFlood", 1, i) for i in range(1, 16)))
        splitter = FrameSplitter()
        answers: list[RemotingCommand] = []
        with trio.fail_after(10):
            while len(answers) < 5:  # the five past the cap come back at once, not held
                splitter.feed(await stream.receive_some())
                answers += [RemotingCommand.decode(f) for f in splitter]
        assert broker.hold.held_count == 10
        assert {a.code for a in answers} == {ResponseCode.PULL_NOT_FOUND}
        assert sorted(a.opaque for a in answers) == [11, 12, 13, 14, 15]
        assert sum("further ones are answered at once" in r.getMessage() for r in caplog.records) == 1
        await stream.aclose()
        await wait_until(lambda: broker.hold.held_count == 0, timeout=5)


async def test_a_peer_reading_none_of_its_woken_pulls_is_closed(tmp_path, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(longpoll, "PENDING_ANSWERS_PER_CONNECTION", 3)
    async with running_broker(str(tmp_path)) as broker:
        host, port = broker.address.rsplit(":", 1)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
        await stream.socket.connect((host, int(port)))
        async with broker_client(broker.address) as c:
            assert (await c.send("TSlow", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            await stream.send_all(b"".join(held_pull("TSlow", 1, i) for i in range(1, 41)))
            await wait_until(lambda: broker.hold.held_count >= 40)
            for _ in range(32):  # each woken answer carries 32 x 64 KiB: far more than the socket buffers
                assert (await c.send("TSlow", b"y" * 65536, queue_id=0)).code == ResponseCode.SUCCESS
        await wait_until(lambda: any("pending pull answers; closing" in r.getMessage() for r in caplog.records),
                         timeout=20, tick=0.05)
        # the connection is gone: what the kernel still held drains, then the end
        with trio.fail_after(20):
            try:
                while await stream.receive_some(1 << 20):
                    pass
            except trio.BrokenResourceError:
                pass
        await stream.aclose()


@pytest.mark.parametrize("name", ["HELD_PER_CONNECTION", "PENDING_ANSWERS_PER_CONNECTION"])
def test_limits_leave_room_for_real_consumers(name: str) -> None:
    # a Java consumer holds one pull per queue it owns on a broker, over one connection
    assert getattr(longpoll, name) >= 1024
