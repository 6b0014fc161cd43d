"""``rocketpy console`` and ``rocketpy serve --console`` as processes: one line and a failure status on bad input,
the console served beside the servers, a clean stop on Ctrl-C."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")

from rocketpy.testing import free_broker_port  # noqa: E402

ROOT = str(Path(__file__).resolve().parents[1])


def _env() -> dict[str, str]:
    path = os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rocketpy(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "rocketpy", *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=20)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["console", "-n", "127.0.0.1:9876", "--listen", "nowhere"], "--listen wants HOST:PORT"),
        (["console", "-n", "127.0.0.1:9876", "--users", "missing-users.properties"], "missing-users.properties"),
        (["serve", "--console", "--console-users", "missing-users.properties"], "missing-users.properties"),
    ],
)
def test_bad_input_is_one_line_and_a_failure_status(tmp_path: Path, args: list[str], expected: str) -> None:
    result = rocketpy(*args, cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], result.stderr


def test_console_port_taken_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = rocketpy("console", "-n", "127.0.0.1:9876", "--listen", f"127.0.0.1:{port}", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"cannot serve on 127.0.0.1:{port}" in result.stderr.strip().splitlines()[-1]


@pytest.mark.timeout(60)
def test_serve_with_console_serves_pages_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    console_port = _free_port()
    args = [sys.executable, "-m", "rocketpy", "serve", "--store", str(tmp_path / "store"), "--no-vip",
            "--namesrv-port", str(_free_port()), "--broker-port", str(free_broker_port()), "--console",
            "--console-listen", f"127.0.0.1:{console_port}", "--console-read-only"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("rocketpy serve: NameServer 127.0.0.1:")
        line = proc.stdout.readline()
        assert line.strip() == f"rocketpy serve: console http://127.0.0.1:{console_port}", line
        with urllib.request.urlopen(f"http://127.0.0.1:{console_port}/", timeout=10) as r:
            page = r.read().decode()
        assert "broker-a" in page and "read-only" in page
        with urllib.request.urlopen(f"http://127.0.0.1:{console_port}/metrics", timeout=10) as r:
            assert "rocketmq_broker_tps" in r.read().decode()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "broker broker-a stopped" in err, err


@pytest.mark.timeout(60)
def test_console_with_two_clusters_and_healthz(tmp_path: Path) -> None:
    """``-n`` once per cluster: the switcher offers both; /healthz checks the first and says 503 while it is down."""
    import json
    import urllib.error

    port, gone, other = _free_port(), f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"
    args = [sys.executable, "-m", "rocketpy", "console", "-n", gone, "-n", other, "--listen", f"127.0.0.1:{port}"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == f"rocketpy console: http://127.0.0.1:{port} (NameServer {gone} | {other})", line
        with pytest.raises(urllib.error.HTTPError) as down:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10)
        body = json.loads(down.value.read().decode())
        assert down.value.code == 503 and body["status"] == "DOWN" and body["namesrv"] == gone, body
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/acl", timeout=10) as r:  # an error, shown on the page
            page = r.read().decode()
        assert 'id="namesrv-select"' in page and f"<option selected>{gone}</option>" in page
        assert f"<option >{other}</option>" in page or f"<option>{other}</option>" in page
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0
