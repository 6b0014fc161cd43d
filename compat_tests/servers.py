"""Servers for the compat tests: ``rocketpy serve`` in a subprocess and its admin calls; our broker
in-process; the official Java 4.9.8 NameServer, broker and client (the Java tests).

``rocketpy serve`` is started as a separate process (a crash or a hang there cannot take the
test runner with it) on free 127.0.0.1 ports, with its store in a temporary directory;
it is stopped (SIGTERM, then SIGKILL) when the test ends. The Java servers are subprocesses
stopped the same way when their context ends.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode

from .harness import DriverResult, parse_result

if TYPE_CHECKING:
    from rocketpy.broker.controller import BrokerController

BROKER_NOT_BUILT = "broker not built yet"
#: how long ``rocketpy serve`` may take to listen and register its broker
STARTUP_TIMEOUT = 30.0
#: broker.conf of the test broker: Java keys. Short delay levels make a consumer's retry
#: (level 3 + reconsumeTimes) come back within seconds instead of 10 s.
TEST_BROKER_CONF = {
    "messageDelayLevel": "1s 1s 1s 1s 1s 2s 2s 2s 2s 2s 3s 3s 3s 3s 3s 4s 4s 4s",
}


def _serve_parser() -> Any:
    from rocketpy.cli import build_parser

    parser = build_parser()
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        choices = getattr(action, "choices", None) or {}
        if "serve" in choices:
            return choices["serve"]
    return None


@functools.cache
def broker_skip_reason() -> str | None:
    """None when ``rocketpy serve`` exists with the options the fixture uses, else why not."""
    import importlib.util

    if importlib.util.find_spec("rocketpy.broker.cli") is None:
        return f"{BROKER_NOT_BUILT} (no rocketpy.broker.cli)"
    # the broker is built: a CLI that does not load is a failure to report, not a reason to skip
    serve = _serve_parser()
    if serve is None:
        return f"{BROKER_NOT_BUILT} (no `rocketpy serve` command)"
    options = {opt for action in serve._actions for opt in action.option_strings}
    missing = {"--host", "--namesrv-port", "--broker-port", "--store"} - options
    if missing:
        return f"{BROKER_NOT_BUILT} (`rocketpy serve` lacks {', '.join(sorted(missing))})"
    return None


def broker_ports() -> tuple[int, int]:
    """Free ports for the NameServer and the broker; the broker's VIP port (port - 2, where
    the Java client sends) and HA port (port + 1) are free too (picked where no other test takes them)."""
    from rocketpy.testing import free_broker_port, free_port

    return free_port(), free_broker_port()


@dataclasses.dataclass
class BrokerProcess:
    """A running ``rocketpy serve``."""

    process: trio.Process
    namesrv_addr: str
    broker_addr: str
    store: Path
    log_path: Path

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def log_problems(self) -> list[str]:
        """ERROR/CRITICAL lines and tracebacks in the server's output."""
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return []
        return [line for line in lines if " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback")]

    async def stop(self) -> None:
        if self.process.returncode is not None:
            return
        self.process.terminate()
        with trio.move_on_after(10) as scope:
            await self.process.wait()
        if scope.cancelled_caught:
            self.process.kill()
            await self.process.wait()


async def invoke(addr: str, request: RemotingCommand, timeout: float = 5.0) -> RemotingCommand:
    from rocketpy.remoting import open_remoting_client

    async with open_remoting_client() as client:
        return await client.invoke(addr, request, timeout=timeout)


async def broker_addresses(namesrv_addr: str) -> list[str]:
    """Every broker address the NameServer knows (GET_BROKER_CLUSTER_INFO)."""
    from rocketpy.codecs.bodies.route import ClusterInfo

    response = await invoke(namesrv_addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
    if response.code != ResponseCode.SUCCESS or not response.body:
        return []
    info = ClusterInfo.decode(response.body)
    addrs: list[str] = []
    for data in (info.broker_addr_table or {}).values():
        addrs.extend((data.broker_addrs or {}).values())
    return addrs


async def start_broker_process(
    nursery: trio.Nursery, workdir: Path, conf: dict[str, str] | None = None
) -> BrokerProcess:
    """Start ``rocketpy serve`` and wait until its broker is registered with its NameServer."""
    workdir.mkdir(parents=True, exist_ok=True)
    conf_path = workdir / "broker.conf"
    settings = dict(TEST_BROKER_CONF, **(conf or {}))
    conf_path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()), encoding="utf-8")
    store = workdir / "store"
    log_path = workdir / "serve.log"
    namesrv_port, broker_port = broker_ports()
    cmd = [
        sys.executable, "-m", "rocketpy.cli", "serve",
        "--host", "127.0.0.1",
        "--namesrv-port", str(namesrv_port),
        "--broker-port", str(broker_port),
        "--store", str(store),
        "-c", str(conf_path),
    ]  # fmt: skip
    log_file = log_path.open("wb")
    process: trio.Process = await nursery.start(
        functools.partial(
            trio.run_process, cmd, check=False, stdin=subprocess.DEVNULL, stdout=log_file,
            stderr=subprocess.STDOUT, cwd=str(workdir),
        )
    )
    log_file.close()
    server = BrokerProcess(process, f"127.0.0.1:{namesrv_port}", f"127.0.0.1:{broker_port}", store, log_path)
    last_error = "no answer yet"
    with trio.move_on_after(STARTUP_TIMEOUT):
        while process.returncode is None:
            try:
                addrs = await broker_addresses(server.namesrv_addr)
                if addrs:
                    if server.broker_addr not in addrs:
                        last_error = f"NameServer lists {addrs}, not {server.broker_addr}"
                    return server
                last_error = "NameServer lists no broker"
            except Exception as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            await trio.sleep(0.2)
    await server.stop()
    raise RuntimeError(
        f"`{' '.join(cmd)}` did not come up ({last_error}; exit {process.returncode})\n{server.log_tail()}"
    )


async def create_topic(broker_addr: str, topic: str, queues: int = 4) -> RemotingCommand:
    """UPDATE_AND_CREATE_TOPIC through the admin path, as mqadmin updateTopic does."""
    from rocketpy.codecs.headers.admin import CreateTopicRequestHeader

    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queues,
        write_queue_nums=queues,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    return await invoke(broker_addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header))


async def wait_for_route(namesrv_addr: str, topic: str, timeout: float = 15.0) -> RemotingCommand:
    """Poll GET_ROUTEINFO_BY_TOPIC until the NameServer knows ``topic`` (the broker re-registers it)."""
    from rocketpy.codecs.headers.namesrv import GetRouteInfoRequestHeader

    response: RemotingCommand | None = None
    with trio.move_on_after(timeout):
        while True:
            header = GetRouteInfoRequestHeader(topic=topic)
            request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, header)
            response = await invoke(namesrv_addr, request)
            if response.code == ResponseCode.SUCCESS:
                return response
            await trio.sleep(0.2)
    raise AssertionError(
        f"the NameServer has no route for {topic} after {timeout} s: "
        f"{None if response is None else (response.code, response.remark)}"
    )


# -- the official Java 4.9.8 servers and client (ROCKETMQ_JAVA_REF, ROCKETMQ_JAVA_CLASSPATH) -----------------------
#: store sizes of the brokers in the Java tests (theirs and ours alike): small files, so a test writes little
JAVA_STORE_KEYS = {
    "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
    "mappedFileSizeConsumeQueue": "60000",
    "maxHashSlotNum": "1000",
    "maxIndexNum": "4000",
}


@asynccontextmanager
async def _java_server(ref: Path, script: str, env: dict[str, str], log_path: Path) -> AsyncIterator[trio.Process]:
    """``bin/<script>`` of the Java install, until it prints "boot success"; SIGTERM (then SIGKILL) on exit."""
    from rocketpy.testing import read_until

    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = open(log_path, "wb")  # noqa: SIM115 - the process writes it until it stops
    proc = await trio.lowlevel.open_process(
        ["bash", str(ref / "bin" / script)], stdout=subprocess.PIPE, stderr=log, env=dict(os.environ, **env)
    )
    try:
        assert proc.stdout is not None
        with trio.fail_after(60):
            await read_until(proc.stdout, b"boot success", f"Java {script}")
        yield proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            with trio.move_on_after(30):
                await proc.wait()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        log.close()


@asynccontextmanager
async def java_namesrv(ref: Path, port: int, log_dir: Path) -> AsyncIterator[str]:
    """The Java NameServer on 127.0.0.1:``port``; yields its address."""
    async with _java_server(ref, "namesrv.sh", {"NAMESRV_PORT": str(port)}, log_dir / f"java-namesrv-{port}.log"):
        yield f"127.0.0.1:{port}"


@asynccontextmanager
async def java_broker(
    ref: Path, port: int, namesrv: str, store: Path, extra: dict[str, str]
) -> AsyncIterator[trio.Process]:
    """A Java broker (broker-a unless ``extra`` names it) on ``port`` registered with ``namesrv``, its store in
    ``store``; ``extra`` are more broker.conf keys."""
    store.mkdir(parents=True, exist_ok=True)
    lines = {**JAVA_STORE_KEYS, "brokerName": "broker-a", **extra}
    env = {
        "BROKER_PORT": str(port),
        "NAMESRV_ADDR": namesrv,
        "STORE_DIR": str(store),
        "BROKER_NAME": lines["brokerName"],
        "BROKER_CONF_EXTRA": "\n".join(f"{k}={v}" for k, v in lines.items()),
    }
    async with _java_server(ref, "broker.sh", env, store.parent / f"java-broker-{port}.log") as proc:
        yield proc


async def stop_java(proc: trio.Process) -> None:
    """Stop a Java server before its context ends (to test what happens without it)."""
    proc.send_signal(signal.SIGTERM)
    with trio.fail_after(40):
        await proc.wait()


@asynccontextmanager
async def our_broker(nursery: trio.Nursery, store: Path, **props: object) -> AsyncIterator[BrokerController]:
    """Our broker in-process (``props`` are broker.conf keys), stopped (unregistered first) on exit."""
    from rocketpy.broker.controller import BrokerController
    from rocketpy.testing import broker_test_config

    store.mkdir(parents=True, exist_ok=True)
    broker = BrokerController(broker_test_config(str(store), **props))
    await nursery.start(broker.run)
    try:
        yield broker
    finally:
        await broker.stop()


async def run_java(
    classes: str, args: list[str], home: Path, *, tls: bool = False, timeout: float = 90
) -> DriverResult:
    """clients/java/CompatClient with ``args``; ``tls``: TLS on as a user turns it on (-Dtls.enable=true; test
    mode, Java's default)."""
    home.mkdir(parents=True, exist_ok=True)
    flags = ["-Dtls.enable=true", "-Dtls.test.mode.enable=true", f"-Dtls.config.file={home / 'none'}"] if tls else []
    cmd = ["java", *flags, f"-Duser.home={home}", f"-Drocketmq.client.logRoot={home / 'logs'}", "-cp", classes,
           "CompatClient", *args]  # fmt: skip
    with trio.fail_after(timeout):
        proc = await trio.run_process(cmd, capture_stdout=True, capture_stderr=True, check=False,
                                      env=dict(os.environ, HOME=str(home)), cwd=str(home))  # fmt: skip
    stdout = proc.stdout.decode("utf-8", "replace")
    return DriverResult(proc.returncode, parse_result(stdout), stdout, proc.stderr.decode("utf-8", "replace"))
