"""No tracebacks in normal use: a closed pipe (``| head``) and Ctrl-C end quietly with the right status."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from golden import STORE_DUMP

from rocketpy.testing import free_broker_port


def _rocketpy(*argv: str, **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "rocketpy.cli", *argv], stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]


def test_closed_pipe_ends_quietly() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write, as after `| head -1`
    proc = _rocketpy("store", "dump", "--json", str(STORE_DUMP), stdout=write_end)
    os.close(write_end)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 141 and err == b""


def test_proxy_ctrl_c_keeps_the_stats_summary() -> None:
    listen = free_broker_port()
    proc = _rocketpy("proxy", "--listen", f"127.0.0.1:{listen}", "--upstream", f"127.0.0.1:{free_broker_port()}",
                     "--stats", stdout=subprocess.PIPE)
    assert proc.stderr is not None
    deadline = time.monotonic() + 30
    line = b""
    while b"Ctrl-C stops" not in line and time.monotonic() < deadline:
        line = proc.stderr.readline()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert b"Traceback" not in err and out.strip(), (out, err)


def test_codes_off_a_terminal_are_plain_rows(capsys: object) -> None:
    from rocketpy.cli import main

    assert main(["codes", "version"]) == 0
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "  409  V4_9_8\n" in out and not set(out) & set("┏━┃│")


def test_ctrl_c_in_a_client_command_is_status_130() -> None:
    """consume/produce/admin: a KeyboardInterrupt out of the client's nurseries ends quietly."""
    import trio

    from rocketpy.client.cli import run_quietly
    from rocketpy.client.errors import MQClientError

    async def interrupted() -> int:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever)
            raise KeyboardInterrupt

    async def failing() -> int:
        async with trio.open_nursery():
            raise MQClientError("connect to 127.0.0.1:1 failed")

    assert run_quietly("consume", interrupted) == 130
    assert run_quietly("consume", failing) == 1
