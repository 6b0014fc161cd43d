"""The servers under fuzz as their own processes (``rocketpy namesrv``, ``rocketpy broker``), as an
operator runs them: their memory is theirs alone (read from /proc/PID/status), and what they log is
scanned for tracebacks and one-line refusals.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from rocketpy.testing import free_broker_port, free_port

#: the /proc/PID/status lines reported, in KiB
MEMORY_KEYS = ("VmRSS", "RssAnon", "RssFile")


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS, RssAnon and RssFile of a process, in KiB ({} once it is gone)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in MEMORY_KEYS:
                    out[key] = int(value.split()[0])
    except OSError:
        pass
    return out


@dataclass
class ServerLog:
    """What a server wrote: tracebacks (unique by their last line and innermost rocketpy frame), Python
    warnings printed to stderr (a coroutine never awaited...; by category and place), and the one-line
    refusals of bad input, by request code and cause."""

    path: Path
    tracebacks: int = 0
    unique: dict[str, int] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)
    refusals: dict[str, int] = field(default_factory=dict)
    #: records the server's bounded log queue dropped (rocketpy.logs), and of those ERROR and above: a
    #: traceback may be among these
    dropped: int = 0
    dropped_errors: int = 0

    _DROPPED = re.compile(r"rocketpy\.logs - (\d+) log records dropped, (\d+) of them ERROR")
    _REFUSED = re.compile(r"process request refused: code (-?\d+) from \S+ answered SYSTEM_ERROR: ([^:,]{0,80})")
    #: a traceback's first line, also within an exception group's report ("  + Exception Group Traceback",
    #: "    | Traceback"), which CPython indents and frames with "|" and "+"
    _TRACEBACK = re.compile(r"^([ |+]*)(?:Exception Group )?Traceback \(most recent call last\)")
    #: warnings.showwarning's first line: "path:line: Category: message"
    _WARNING = re.compile(r"^(\S+?):(\d+): (\w*Warning): ")

    def scan(self) -> None:
        lines = self.path.read_text(errors="replace").splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            dropped = self._DROPPED.search(line)
            if dropped:
                self.dropped += int(dropped.group(1))
                self.dropped_errors += int(dropped.group(2))
            m = self._REFUSED.search(line)
            if m:
                key = f"code {m.group(1)}: {m.group(2)}"
                self.refusals[key] = self.refusals.get(key, 0) + 1
            warned = self._WARNING.match(line)
            if warned:
                # a finding, as a traceback is (not counted among them): a warning is shown once per place,
                # and showing it reads its source file into linecache for good
                key = f"{warned.group(3)}@{os.path.basename(warned.group(1))}:{warned.group(2)}"
                self.unique[key] = self.unique.get(key, 0) + 1
                self.examples.setdefault(key, "\n".join(lines[i : i + 2]))
            header = self._TRACEBACK.match(line)
            if header:
                # an exception group's report is indented throughout; its errors stand in the columns of
                # their own "Traceback" lines, the innermost last
                columns, errors = {len(header.group(1))}, []
                j = i + 1
                where = "?"
                while j < len(lines) and (lines[j].startswith(" ") or not lines[j].strip()):
                    body = lines[j].lstrip(" |+")
                    fm = re.match(r'File "([^"]+)", line (\d+)', body)
                    inner = self._TRACEBACK.match(lines[j])
                    if fm and "rocketpy" in fm.group(1):
                        where = f"{os.path.basename(fm.group(1))}:{fm.group(2)}"
                    elif inner:
                        columns.add(len(inner.group(1)))
                    elif (body[:1].isalpha() and len(lines[j]) - len(body) in columns and not fm
                          and not body.startswith(("During handling", "The above exception"))):
                        errors.append(body)
                    j += 1
                last = errors[-1] if errors else lines[j] if j < len(lines) else "?"
                key = f"{last.split(':')[0]}@{where}"
                self.tracebacks += 1
                self.unique[key] = self.unique.get(key, 0) + 1
                self.examples.setdefault(key, "\n".join(lines[max(0, i - 1) : j + 1])[-4000:])
                i = j
            i += 1


@dataclass
class ServerProcess:
    name: str
    proc: trio.Process
    log: ServerLog
    port: int
    #: snapshots asked for so far (traced_server numbers its dumps from 0)
    snapshots: int = 0
    heap_reports: int = 0

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def memory(self) -> dict[str, int]:
        return memory_kib(self.proc.pid)

    async def _ask(self, sig: int, path: Path, timeout: float) -> bool:
        """Signal the traced server and wait for the file it writes in answer (False if it did not come)."""
        self.proc.send_signal(sig)
        with trio.move_on_after(timeout):
            while not path.exists():
                await trio.sleep(0.2)
            return True
        return False

    async def heap_report(self, workdir: Path) -> str:
        """traced_server.py's report of the C heap (mallinfo2, anonymous mappings, pymalloc arenas)."""
        path = workdir / f"{self.name}.snap.heap.{self.heap_reports}"
        self.heap_reports += 1
        return path.read_text() if await self._ask(signal.SIGUSR2, path, 60) else ""

    async def snapshot(self, workdir: Path) -> Any:
        """The next tracemalloc snapshot of a traced server (None if it did not come in time)."""
        import tracemalloc

        path = workdir / f"{self.name}.snap.{self.snapshots}"
        self.snapshots += 1
        # a big heap on a busy machine takes a while
        return tracemalloc.Snapshot.load(str(path)) if await self._ask(signal.SIGUSR1, path, 300) else None


#: filterDataCleanTimeSpan of the fuzzed broker, under fuzz_servers.LOCK_LIFETIME_WAIT
FILTER_DATA_CLEAN_MS = 30_000
TRACED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "traced_server.py")


def kv_config_path(workdir: Path) -> Path:
    """The NameServer's kvConfig.json under start_servers' ``workdir``."""
    return workdir / "namesrv" / "kvConfig.json"


async def start_servers(workdir: Path, traced: bool = False, heap: bool = False, *,
                        broker_extra: dict[str, str] | None = None,
                        namesrv_extra: dict[str, str] | None = None) -> tuple[ServerProcess, ServerProcess]:
    """A NameServer and a broker registered with it, each its own ``python -m rocketpy.cli`` process
    logging to ``workdir/<name>.log``; ``traced``: under traced_server.py (tracemalloc, SIGUSR1 dumps
    a snapshot to ``workdir/<name>.snap.<n>``); ``heap``: under traced_server.py, SIGUSR2 reports the C
    heap. ``broker_extra``, ``namesrv_extra``: more settings of their files."""
    ns_port, broker_port = free_port(), free_broker_port()  # (the broker's HA port is its port + 1)
    store = workdir / "store"
    store.mkdir(parents=True, exist_ok=True)
    conf = workdir / "broker.conf"
    conf.write_text(
        "\n".join(
            [
                "brokerName=broker-a",
                "brokerClusterName=DefaultCluster",
                "brokerIP1=127.0.0.1",
                "brokerIP2=127.0.0.1",
                f"namesrvAddr=127.0.0.1:{ns_port}",
                f"storePathRootDir={store}",
                f"storePathCommitLog={store}/commitlog",
                f"mappedFileSizeCommitLog={64 * 1024 * 1024}",
                "mappedFileSizeConsumeQueue=600000",
                # the SQL92 filters of consumers gone are kept this long (Java's default, a day, would
                # outlast the run): forgotten by the after-expiry sample, as the queue locks are
                f"filterDataCleanTimeSpan={FILTER_DATA_CLEAN_MS}",
                *(f"{k}={v}" for k, v in (broker_extra or {}).items()),
            ]
        )
        + "\n"
    )
    kv_config_path(workdir).parent.mkdir(exist_ok=True)
    ns_conf = workdir / "namesrv.properties"
    extra = "".join(f"{k}={v}\n" for k, v in (namesrv_extra or {}).items())
    ns_conf.write_text(f"kvConfigPath={kv_config_path(workdir)}\nconfigStorePath={ns_conf}\n{extra}")
    commands = {
        "namesrv": ["namesrv", "-c", str(ns_conf), "--listen", f"127.0.0.1:{ns_port}"],
        "broker": ["broker", "-c", str(conf), "--host", "127.0.0.1", "-p", str(broker_port), "--no-vip"],
    }
    ready = {"namesrv": "boot success", "broker": "serving on"}
    started: list[ServerProcess] = []
    for name, args in commands.items():
        log_path = workdir / f"{name}.log"
        launcher = [TRACED] if traced or heap else ["-m", "rocketpy.cli"]
        # the log files go with the run (not to ~/logs/rocketmqlogs: a 30-minute run writes 1.2 GB); the
        # scan reads stderr, which has every record too
        env = {**os.environ, "ROCKETMQ_LOG_DIR": str(workdir / "logs"),
               "TRACED_SERVER_DUMP": str(workdir / f"{name}.snap"), "TRACED_SERVER_TRACEMALLOC": "1" if traced else "0"}
        with open(log_path, "wb") as log_file:  # the child keeps its own descriptor
            proc = await trio.lowlevel.open_process(
                [sys.executable, *launcher, *args], stdout=log_file, stderr=subprocess.STDOUT, env=env
            )
        started.append(ServerProcess(name, proc, ServerLog(log_path), ns_port if name == "namesrv" else broker_port))
        try:
            with trio.fail_after(300 if traced else 120):  # a busy machine, tracemalloc: slow starts
                while ready[name] not in log_path.read_text(errors="replace"):
                    if proc.poll() is not None:
                        raise RuntimeError(f"{name} exited: {log_path.read_text(errors='replace')[-2000:]}")
                    await trio.sleep(0.2)
        except BaseException:
            for server in started:
                server.proc.kill()
            raise
    return started[0], started[1]


async def stop_server(server: ServerProcess) -> int:
    server.proc.send_signal(signal.SIGTERM)
    with trio.move_on_after(60):
        return await server.proc.wait()
    server.proc.kill()
    return await server.proc.wait()
