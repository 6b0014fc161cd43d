"""Live capture on the loopback interface (needs root or CAP_NET_RAW; skipped otherwise)."""

from __future__ import annotations

import socket
import threading

import pytest

from rocketpy.codecs import FrameSplitter, RemotingCommand
from rocketpy.sniffer.live import CaptureError, capture, open_socket
from rocketpy.sniffer.pairing import Pairer
from rocketpy.sniffer.reassembly import CapturedFrame, Tracker


def _can_capture() -> str | None:
    try:
        open_socket("lo").close()
    except CaptureError as exc:
        return str(exc)
    return None


why_not = _can_capture()
pytestmark = pytest.mark.skipif(why_not is not None, reason=f"no live capture here: {why_not}")


def test_live_capture_on_loopback_decodes_and_pairs() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            splitter = FrameSplitter()
            while data := conn.recv(65536):
                splitter.feed(data)
                for raw in splitter:
                    req = RemotingCommand.decode(raw)
                    conn.sendall(req.response(0, body=b"z" * 70_000).encode())  # larger than one segment

    stop, ready = threading.Event(), threading.Event()
    tracker, pairer = Tracker(ports=[port]), Pairer()
    frames: list[CapturedFrame] = []

    def sniff() -> None:
        for pkt in capture("lo", stop, ready, poll=0.05):
            if pkt is None:
                continue
            for ev in tracker.packet(pkt):
                if isinstance(ev, CapturedFrame):
                    pairer.add(ev)
                    frames.append(ev)

    sniffer = threading.Thread(target=sniff, daemon=True)
    srv = threading.Thread(target=serve, daemon=True)
    sniffer.start()
    srv.start()
    try:
        assert ready.wait(5)
        req = RemotingCommand(code=105, opaque=77, ext_fields={"topic": "LiveT"})
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            client.sendall(req.encode())
            need = len(req.response(0, body=b"z" * 70_000).encode())
            got = b""
            while len(got) < need:
                got += client.recv(65536)
        srv.join(10)
        for _ in range(100):  # the capture thread may lag behind the socket calls
            if len(frames) >= 2:
                break
            threading.Event().wait(0.05)
    finally:
        stop.set()
        sniffer.join(10)
        server.close()
    assert [f.command.opaque for f in frames] == [77, 77]
    assert frames[0].command == req and not frames[0].from_server
    assert frames[1].from_server and frames[1].request is frames[0]
    assert len(frames[1].command.body) == 70_000


def _sniff_loopback(capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict]:
    """``rocketpy sniff -i lo --json -c 4``: requests repeat until the command has shown four commands.

    The capture starts while the loop already runs, so the first exchange may be seen in part;
    what must hold is that a whole exchange is decoded and paired.
    """
    import json
    import time

    from rocketpy.sniffer.cli import main

    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    result: list[int] = []
    cli = threading.Thread(
        target=lambda: result.append(main(["sniff", "-i", "lo", "--port", str(port), "--json", "-c", "4",
                                           "--duration", "20", *extra])),
        daemon=True,
    )
    cli.start()
    try:
        deadline = time.monotonic() + 20
        opaque = 0
        while cli.is_alive() and time.monotonic() < deadline:
            opaque += 1
            with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
                conn, _ = server.accept()
                with conn:
                    client.sendall(RemotingCommand(code=34, opaque=opaque).encode())
                    splitter = FrameSplitter()
                    splitter.feed(conn.recv(65536))
                    for raw in splitter:
                        conn.sendall(RemotingCommand.decode(raw).response(0).encode())
                    client.recv(65536)
            cli.join(0.2)
    finally:
        server.close()
        cli.join(20)
    assert result == [0]
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_sniff_command_on_loopback(capsys: pytest.CaptureFixture[str]) -> None:
    objs = _sniff_loopback(capsys)
    assert len(objs) == 4
    assert {(o["name"], o["is_response"]) for o in objs} <= {("HEART_BEAT", False), ("SUCCESS", True)}
    requests = {o["opaque"]: o for o in objs if not o["is_response"]}
    paired = [o for o in objs if o["is_response"] and o["opaque"] in requests]
    assert paired, objs
    for o in paired:  # the capture time between the request and its response (times rounded to the microsecond)
        assert o["paired"] and o["request_name"] == "HEART_BEAT"
        assert o["latency_ms"] == pytest.approx((o["ts"] - requests[o["opaque"]]["ts"]) * 1000, abs=0.0021)


def test_sniff_on_loopback_writes_what_it_shows(capsys: pytest.CaptureFixture[str], tmp_path) -> None:
    """``-w FILE`` on a live capture: the file holds the packets of the commands shown (it was ignored)."""
    import json

    from rocketpy.sniffer.cli import main

    written = tmp_path / "lo.pcap"
    shown = _sniff_loopback(capsys, "-w", str(written))
    assert main(["sniff", "-r", str(written), "--json"]) == 0
    read = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(o["name"], o["opaque"]) for o in read] == [(o["name"], o["opaque"]) for o in shown]
    assert len(read) == 4
