"""The server commands' own lines (boot lines, warnings, last words) leave in one write each.

``print`` writes a line's text and its newline apart. Where nothing buffers stdout (PYTHONUNBUFFERED, which the
Docker image sets) each is a write of its own, and the log listener thread writes the log lines to stderr
meanwhile: with both in one file, ``...listening on 127.0.0.1:9876`` ran into the next log line. The streams here
keep every write apart, as an unbuffered one hands them to the file.
"""

from __future__ import annotations

import io
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from rocketpy import heap, logs
from rocketpy.namesrv.cli import serve_until_signal
from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.namesrv.server import NameServer
from rocketpy.testing import free_broker_port, free_port, wait_until


class Writes(io.StringIO):
    """A text stream that records each write() call; ``on_write`` sees each one."""

    def __init__(self, on_write: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.on_write = on_write

    def write(self, s: str) -> int:
        self.calls.append(s)
        if self.on_write is not None:
            self.on_write(s)
        return super().write(s)


@pytest.fixture(autouse=True)
def _no_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heap, "own_process", lambda: None)  # a test process is not the servers' own


def test_say_is_one_write_with_its_newline() -> None:
    out = Writes()
    logs.say("The Name Server boot success. serializeType=JSON, listening on 127.0.0.1:9876", out)
    assert out.calls == ["The Name Server boot success. serializeType=JSON, listening on 127.0.0.1:9876\n"]


async def test_the_name_server_boot_line_is_one_write(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out = Writes()
    monkeypatch.setattr(sys, "stdout", out)
    server = NameServer(NamesrvConfig(listen_host="127.0.0.1", listen_port=free_port(),
                                      kv_config_path=str(tmp_path / "kvConfig.json"),
                                      config_store_path=str(tmp_path / "namesrv.properties")))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_until_signal, server)
        await wait_until(lambda: "boot success" in out.getvalue(), timeout=10)
        nursery.cancel_scope.cancel()
    line = f"The Name Server boot success. serializeType=JSON, listening on {server.address}\n"
    assert line in out.calls, out.calls


def test_the_serve_banner_is_one_write(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``rocketpy serve`` in this process, stopped by SIGTERM once it has said where it serves."""
    from rocketpy.cli import main

    def stop_once_up(text: str) -> None:
        if "rocketpy serve:" in text:  # the banner has begun: stop the servers (as an operator's SIGTERM)
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()

    out = Writes(stop_once_up)
    monkeypatch.setattr(sys, "stdout", out)
    ns, broker = free_port(), free_broker_port()
    rc = main(["serve", "--namesrv-port", str(ns), "--broker-port", str(broker), "--store", str(tmp_path / "store"),
               "--no-vip", "--no-log-files"])
    assert rc == 0
    banners = [c for c in out.calls if "rocketpy serve:" in c]
    assert len(banners) == 1 and banners[0].endswith(f"store {tmp_path / 'store'}\n"), out.calls
    assert banners[0].startswith(f"rocketpy serve: NameServer 127.0.0.1:{ns}, broker broker-a 127.0.0.1:{broker}")
