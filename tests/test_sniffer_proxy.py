"""``rocketpy proxy``: byte-for-byte forwarding both ways, decoded like sniff. Every test stops what it starts."""

from __future__ import annotations

import functools
import json
import socket
import threading
import time

import pytest
import trio

from rocketpy.codecs import FrameSplitter, RemotingCommand, SerializeType
from rocketpy.sniffer.cli import main
from rocketpy.sniffer.proxy import parse_hostport, serve_proxy
from rocketpy.sniffer.reassembly import CapturedFrame, Event, StreamNote
from rocketpy.testing import free_port


def _requests() -> list[RemotingCommand]:
    return [
        RemotingCommand(code=105, opaque=1, ext_fields={"topic": "T"}),
        RemotingCommand(code=310, opaque=2, ext_fields={"a": "PG", "b": "T"}, body=b"x" * 200_000),
        RemotingCommand(code=15, opaque=3, flag=2, ext_fields={"topic": "T"}, serialize_type=SerializeType.ROCKETMQ),
        RemotingCommand(code=34, opaque=4, body=b"{}"),
    ]


def _respond(req: RemotingCommand) -> bytes | None:
    if req.is_oneway:
        return None
    code = 17 if req.code == 105 else 0
    return req.response(code, body=b"y" * 100_000 if req.code == 310 else None,
                        remark="no route" if code else None).encode()


class EchoBroker:
    """Answers every non-oneway request; records the exact bytes it received and sent."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.sent = bytearray()

    async def handle(self, stream: trio.SocketStream) -> None:
        splitter = FrameSplitter()
        async with stream:
            while data := await stream.receive_some(7919):  # odd reads: frames arrive in pieces
                self.received += data
                splitter.feed(data)
                for raw in splitter:
                    out = _respond(RemotingCommand.decode(raw))
                    if out is not None:
                        self.sent += out
                        await stream.send_all(out)


async def test_proxy_forwards_bytes_and_decodes_both_ways() -> None:
    broker = EchoBroker()
    events: list[Event] = []
    wire = b"".join(r.encode() for r in _requests())
    expected = b"".join(filter(None, (_respond(r) for r in _requests())))
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(functools.partial(trio.serve_tcp, broker.handle, 0, host="127.0.0.1"))
        upstream = listeners[0].socket.getsockname()
        proxy = (await nursery.start(serve_proxy, ("127.0.0.1", 0), upstream[:2], events.append))[0]
        port = proxy.socket.getsockname()[1]
        client = await trio.open_tcp_stream("127.0.0.1", port)
        async with client:
            for k in range(0, len(wire), 1000):  # the client writes in small pieces too
                await client.send_all(wire[k : k + 1000])
            received = bytearray()
            with trio.fail_after(10):
                while len(received) < len(expected):
                    received += await client.receive_some(65536)
        nursery.cancel_scope.cancel()
    assert bytes(broker.received) == wire  # client → broker, unchanged
    assert bytes(received) == bytes(broker.sent) == expected  # broker → client, unchanged
    frames = [e for e in events if isinstance(e, CapturedFrame)]
    assert [f.command for f in frames if not f.from_server] == _requests()
    answers = [f.command for f in frames if f.from_server]
    assert [(a.code, a.opaque) for a in answers] == [(17, 1), (0, 2), (0, 4)]
    assert not [e for e in events if isinstance(e, StreamNote) and e.kind != "error"]


async def test_proxy_reports_an_unreachable_upstream() -> None:
    events: list[Event] = []
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()
    async with trio.open_nursery() as nursery:
        proxy = (await nursery.start(serve_proxy, ("127.0.0.1", 0), dead, events.append))[0]
        client = await trio.open_tcp_stream("127.0.0.1", proxy.socket.getsockname()[1])
        async with client:
            with trio.fail_after(5):
                assert await client.receive_some(10) == b""  # closed on us
        nursery.cancel_scope.cancel()
    assert events and isinstance(events[0], StreamNote) and "unreachable" in events[0].detail


def test_parse_hostport() -> None:
    assert parse_hostport("10.0.0.1:9876") == ("10.0.0.1", 9876)
    assert parse_hostport("[::1]:10911") == ("::1", 10911)
    assert parse_hostport("9876") == ("127.0.0.1", 9876)
    with pytest.raises(ValueError):
        parse_hostport("host:port")


def test_proxy_command_prints_like_sniff(capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI proxy in a thread, a blocking client and server around it; -c ends it."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)
    upstream_port = server.getsockname()[1]
    listen_port = free_port()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            splitter = FrameSplitter()
            while data := conn.recv(65536):
                splitter.feed(data)
                for raw in splitter:
                    conn.sendall(RemotingCommand.decode(raw).response(0).encode())

    result: list[int] = []
    srv = threading.Thread(target=serve, daemon=True)
    cli = threading.Thread(
        target=lambda: result.append(main(["proxy", "--listen", f"127.0.0.1:{listen_port}", "--upstream",
                                           f"127.0.0.1:{upstream_port}", "--json", "-c", "2", "--duration", "20"])),
        daemon=True,
    )
    srv.start()
    cli.start()
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                client = socket.create_connection(("127.0.0.1", listen_port), timeout=10)
                break
            except ConnectionRefusedError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        with client:
            client.sendall(RemotingCommand(code=105, opaque=42, ext_fields={"topic": "T"}).encode())
            reply = client.recv(65536)
        assert RemotingCommand.decode(reply).opaque == 42
        cli.join(10)
        assert not cli.is_alive() and result == [0]
    finally:
        server.close()
        srv.join(10)
    objs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(o["name"], o["opaque"], o["is_response"]) for o in objs] == [
        ("GET_ROUTEINFO_BY_TOPIC", 42, False),
        ("SUCCESS", 42, True),
    ]
    assert objs[1]["request_name"] == "GET_ROUTEINFO_BY_TOPIC"
    # the time between the request and its response as the proxy saw them (times rounded to the microsecond)
    assert objs[1]["latency_ms"] == pytest.approx((objs[1]["ts"] - objs[0]["ts"]) * 1000, abs=0.0021)
