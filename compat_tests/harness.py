"""Running the third-party client drivers (compat_tests/clients/) from trio tests.

Each client lives in its own environment under compat_tests/.envs/ (made by
install.sh). A driver takes one JSON argument and prints ``RESULT {json}``; here it
runs as a subprocess under ``trio.fail_after`` so a hung client is killed with the test.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import trio

HERE = Path(__file__).resolve().parent
CLIENTS = HERE / "clients"
ENVS = Path(os.environ.get("COMPAT_ENVS_DIR", HERE / ".envs"))
INSTALL_HINT = "run `bash compat_tests/install.sh`"

#: the ``version`` each client puts in its request headers (MQVersion ordinals)
EXPECTED_VERSION = {"cpp1": 63, "cpp2": 333, "node": 121}
#: (client, role) whose client library is known to crash in its own shutdown: rocketmq-python-cvs
#: 2.1.0.3's PushConsumer.shutdown() segfaults (after "Shutdown Message Trace Inner Producer In
#: Consumer." in its log) even against a stub broker; the driver prints its RESULT before shutdown
KNOWN_SHUTDOWN_CRASHES = {("cpp2", "consumer")}
#: the ``language`` each client announces
EXPECTED_LANGUAGE = {"cpp1": "CPP", "cpp2": "CPP", "node": "JAVA"}


@dataclasses.dataclass(frozen=True)
class ClientEnv:
    """One third-party client: how to run its drivers, or why it cannot run here."""

    name: str
    interpreter: str | None
    skip_reason: str | None = None

    @property
    def available(self) -> bool:
        return self.skip_reason is None

    def command(self, role: str, args: dict[str, Any]) -> list[str]:
        assert self.interpreter is not None
        ext = "js" if self.name == "node" else "py"
        return [self.interpreter, str(CLIENTS / f"{self.name}_{role}.{ext}"), json.dumps(args)]

    def environment(self, home: Path) -> dict[str, str]:
        """The driver's environment: its own HOME (the C++ clients write logs and offsets there)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "NODE_"))}
        home.mkdir(parents=True, exist_ok=True)
        env["HOME"] = str(home)
        env["ROCKETMQ_CLIENT_LOG_DIR"] = str(home / "logs")
        if self.name == "node":
            env["NODE_PATH"] = str(ENVS / "node" / "node_modules")
        return env


def _probe(name: str, interpreter: str, env: dict[str, str]) -> str | None:
    """None when the client loads, else why not."""
    role_file = CLIENTS / f"{name}_probe.{'js' if name == 'node' else 'py'}"
    try:
        proc = subprocess.run(
            [interpreter, str(role_file)], capture_output=True, timeout=60, env=env, cwd=str(env["HOME"])
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{name} client cannot run: {exc}"
    out = proc.stdout.decode("utf-8", "replace")
    if proc.returncode == 0 and "RESULT " in out:
        return None
    err = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["(no output)"])[-1]
    return f"{name} client does not load on this machine: {err}"


@functools.cache
def client_env(name: str) -> ClientEnv:
    """The client ``name`` (cpp1, cpp2, node), probed once per run."""
    if name == "node":
        node = shutil.which("node")
        if node is None:
            return ClientEnv(name, None, "node is not installed")
        if not (ENVS / "node" / "node_modules" / "ali-ons").is_dir():
            return ClientEnv(name, None, f"ali-ons is not installed in {ENVS / 'node'} ({INSTALL_HINT})")
        interpreter = node
    else:
        python = ENVS / name / "bin" / "python"
        if not python.exists():
            return ClientEnv(name, None, f"{name} client env {ENVS / name} missing ({INSTALL_HINT})")
        interpreter = str(python)
    probe_home = ENVS / ".probe-home"
    env = ClientEnv(name, interpreter).environment(probe_home)
    reason = _probe(name, interpreter, env)
    return ClientEnv(name, interpreter, reason)


@dataclasses.dataclass
class DriverResult:
    returncode: int
    result: dict[str, Any] | None
    stdout: str
    stderr: str

    @property
    def shutdown_ok(self) -> bool:
        """The driver's client shut down cleanly (it prints ``SHUTDOWN ok`` after its RESULT)."""
        return "\nSHUTDOWN ok" in "\n" + self.stdout

    def describe(self) -> str:
        tail = "\n".join(self.stderr.strip().splitlines()[-30:])
        result = json.dumps(self.result)[:3000]
        return f"exit {self.returncode}, shutdown_ok={self.shutdown_ok}, result={result}\n--- stderr tail ---\n{tail}"


def parse_result(stdout: str) -> dict[str, Any] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("RESULT "):
            parsed: dict[str, Any] = json.loads(line[len("RESULT "):])
            return parsed
    return None


async def run_driver(client: ClientEnv, role: str, args: dict[str, Any], home: Path, timeout: float) -> DriverResult:
    """Run one driver to its end (killed after ``timeout`` s) and parse its RESULT line."""
    args = dict(args)
    args.setdefault("deadline", max(timeout - 5, 5))
    with trio.fail_after(timeout):
        proc = await trio.run_process(
            client.command(role, args),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=client.environment(home),
            cwd=str(home),
        )
    stdout = proc.stdout.decode("utf-8", "replace")
    stderr = proc.stderr.decode("utf-8", "replace")
    return DriverResult(proc.returncode, parse_result(stdout), stdout, stderr)


class BackgroundDriver:
    """A driver started in a nursery; :meth:`wait` gives its result."""

    def __init__(self) -> None:
        self._done = trio.Event()
        self.result: DriverResult | None = None
        self.error: BaseException | None = None

    async def _run(self, client: ClientEnv, role: str, args: dict[str, Any], home: Path, timeout: float) -> None:
        try:
            self.result = await run_driver(client, role, args, home, timeout)
        except Exception as exc:  # TooSlowError and the like, reported by wait()
            self.error = exc
        finally:
            self._done.set()

    async def wait(self) -> DriverResult:
        await self._done.wait()
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


def start_driver(
    nursery: trio.Nursery, client: ClientEnv, role: str, args: dict[str, Any], home: Path, timeout: float
) -> BackgroundDriver:
    bg = BackgroundDriver()
    nursery.start_soon(bg._run, client, role, args, home, timeout)
    return bg


def sample_messages(tag_prefix: str, n: int, *, run_id: str, big: bool = False) -> list[dict[str, Any]]:
    """``n`` distinct messages: text bodies (with non-ASCII), a tag, a key and two user properties.

    With ``big``, the last body is ~12 KiB: past the 4 KiB over which the clients compress it
    (sysFlag COMPRESSED; the broker stores it so and the consumer inflates it)."""
    messages = [
        {
            "body": f"{run_id} message {i} héllo 世界 {'x' * (i * 7)}",
            "tags": f"{tag_prefix}{i % 2}",
            "keys": f"key-{run_id}-{i}",
            "properties": {"compat_index": str(i), "compat_run": run_id},
        }
        for i in range(n)
    ]
    if big and messages:
        messages[-1]["body"] = f"{run_id} big " + "".join(f"line {k} ünïcödé; " for k in range(700))
    return messages


def python_executable() -> str:
    return sys.executable
