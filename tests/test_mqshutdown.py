"""``mqshutdown broker|namesrv``: Java's bin/mqshutdown (find the server, SIGTERM it, say so in Java's words).

The servers other tests (and other checkouts) run on this machine are not this test's to stop: the real
/proc is only read; what mqshutdown may signal is a /proc holding this test's own two servers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from rocketpy.shutdown import find_servers, main, server_role
from rocketpy.testing import free_port, read_until

PY = "/usr/bin/python3.11"


@pytest.mark.parametrize(("argv", "role"), [
    ([PY, "/venv/bin/mqbroker", "-c", "broker.conf"], "broker"),  # a console script, as the kernel runs it
    ([PY, "/venv/bin/mqnamesrv"], "namesrv"),
    ([PY, "/venv/bin/rocketpy", "broker", "-c", "b.conf"], "broker"),
    ([PY, "/venv/bin/rocketpy", "namesrv", "--listen", "127.0.0.1:9876"], "namesrv"),
    ([PY, "-u", "-X", "dev", "-m", "rocketpy.cli", "broker", "--host", "127.0.0.1"], "broker"),
    ([PY, "-m", "rocketpy", "namesrv"], "namesrv"),
    ([PY, "-m", "rocketpy.namesrv.cli", "--listen", "127.0.0.1:9876"], "namesrv"),
    (["mqbroker", "-n", "127.0.0.1:9876"], "broker"),
    ([PY, "/venv/bin/rocketpy", "serve"], None),  # both servers in one process: not one of them
    ([PY, "/venv/bin/rocketpy", "admin", "brokerStatus", "-b", "broker"], None),
    ([PY, "/venv/bin/mqadmin", "updateBrokerConfig"], None),
    ([PY, "-c", "import rocketpy; print('broker')"], None),
    ([PY, "-m", "pytest", "tests/test_broker.py"], None),
    (["java", "org.apache.rocketmq.broker.BrokerStartup"], None),
])
def test_what_counts_as_a_server(argv: list[str], role: str | None) -> None:
    assert server_role(argv) == role


async def _start(argv: list[str], marker: bytes, tmp_path: Path) -> trio.Process:
    proc = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                            env={**os.environ, "ROCKETMQ_LOG_DIR": str(tmp_path / "logs")})
    assert proc.stdout is not None
    with trio.fail_after(30):
        await read_until(proc.stdout, marker, argv[1])
    return proc


@pytest.mark.timeout(120)
async def test_mqshutdown_stops_each_server_and_says_so_as_java(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "bin" / "mqnamesrv"  # what pip installs: the kernel runs it as [python, script, ...]
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom rocketpy.namesrv.cli import mqnamesrv\n"
                      "sys.exit(mqnamesrv())\n")
    script.chmod(0o755)
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"listenHost=127.0.0.1\nlistenPort={free_port()}\nkvConfigPath={tmp_path}/kv.json\n")
    namesrv = await _start([str(script), "-c", str(conf)], b"boot success", tmp_path)
    broker = await _start([sys.executable, "-m", "rocketpy.cli", "broker", "--host", "127.0.0.1", "-p", "0",
                           "--no-vip", "--store", str(tmp_path / "store")], b"serving on", tmp_path)
    try:
        # the real /proc, read: each found as what it is
        assert broker.pid in find_servers("broker") and broker.pid not in find_servers("namesrv")
        assert namesrv.pid in find_servers("namesrv") and namesrv.pid not in find_servers("broker")
        ours = tmp_path / "proc"
        ours.mkdir()
        for proc in (namesrv, broker):
            (ours / str(proc.pid)).symlink_to(f"/proc/{proc.pid}")
        capsys.readouterr()
        assert main(["broker"], proc=str(ours)) == 0
        assert capsys.readouterr().out.splitlines() == [f"The mqbroker({broker.pid}) is running...",
                                                        f"Send shutdown request to mqbroker({broker.pid}) OK"]
        with trio.fail_after(20):
            assert await broker.wait() == 0  # SIGTERM: the broker's own clean stop
        assert main(["broker"], proc=str(ours)) == 255  # its /proc entry is gone: Java's `exit -1`
        assert capsys.readouterr().out == "No mqbroker running.\n"
        assert main(["namesrv"], proc=str(ours)) == 0
        assert capsys.readouterr().out.splitlines() == [f"The mqnamesrv({namesrv.pid}) is running...",
                                                        f"Send shutdown request to mqnamesrv({namesrv.pid}) OK"]
        with trio.fail_after(20):
            assert await namesrv.wait() == 0
        assert main([], proc=str(ours)) == 1
        assert capsys.readouterr().out == "Useage: mqshutdown broker | namesrv\n"  # Java's text
    finally:
        for proc in (namesrv, broker):
            if proc.returncode is None:
                proc.send_signal(signal.SIGKILL)
                await proc.wait()
