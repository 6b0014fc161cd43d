"""``rocketpy broker`` start-up: the address it registers is one clients can reach."""

from __future__ import annotations

import signal
import subprocess
import sys

import trio

from rocketpy.broker.cli import advertise_listen_host
from rocketpy.testing import read_until


def test_specific_listen_host_is_advertised() -> None:
    given = {"listenHost": "127.0.0.1"}
    advertise_listen_host(given)
    assert given["brokerIP1"] == "127.0.0.1" and given["brokerIP2"] == "127.0.0.1"
    given = {"listenHost": "127.0.0.1", "brokerIP1": "10.1.2.3"}
    advertise_listen_host(given)
    assert given["brokerIP1"] == "10.1.2.3"  # an explicit brokerIP1 wins
    given = {"listenHost": "0.0.0.0"}
    advertise_listen_host(given)
    assert "brokerIP1" not in given  # any address: Java's default (the host's address)


async def test_broker_host_flag_registers_that_address(tmp_path) -> None:
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "rocketpy.cli", "broker", "--host", "127.0.0.1", "-p", "0", "--no-vip",
         "--store", str(tmp_path / "store")],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    try:
        with trio.fail_after(20):
            buf = await read_until(proc.stdout, b"\n", "broker")
    finally:
        proc.send_signal(signal.SIGTERM)
        with trio.fail_after(20):
            await proc.wait()
    line = buf.decode().splitlines()[0]
    assert "serving on 127.0.0.1:" in line and " registered as 127.0.0.1:" in line, line


def test_unreadable_config_file_is_one_line(tmp_path) -> None:
    """``rocketpy broker`` on a store whose consumerOffset.json (and its .bak) do not parse: exit 1 with
    one line naming the file, no traceback, the file left as it was."""
    config = tmp_path / "store" / "config"
    config.mkdir(parents=True)
    bad = '{"offsetTable":{"T@G":{9223372036854775808:-9223372036854775809}}}'
    for name in ("consumerOffset.json", "consumerOffset.json.bak"):
        (config / name).write_text(bad)
    proc = subprocess.run(
        [sys.executable, "-m", "rocketpy.cli", "broker", "--host", "127.0.0.1", "-p", "0", "--no-vip",
         "--store", str(tmp_path / "store")],
        capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("rocketpy broker: cannot start: config file ") and "consumerOffset.json" in lines[0]
    assert (config / "consumerOffset.json").read_text() == bad
