"""Fixtures of the compat tests: the third-party clients, our servers, a stub broker, a capture proxy,
and the official Java 4.9.8 install and client (``java_ref``, ``java_classes``).

Our servers bind 127.0.0.1 on free ports and stop with the test that started them:
the NameServer runs in the test's trio loop; the broker runs as ``rocketpy serve``
in a subprocess (skipped with "broker not built yet" while ``rocketpy.broker`` is absent).
The Java fixtures skip with the reason when ROCKETMQ_JAVA_REF / ROCKETMQ_JAVA_CLASSPATH are not set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import trio

from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.namesrv.server import NameServer

from .capture import RecordingProxy
from .harness import CLIENTS, ClientEnv, client_env
from .servers import BrokerProcess, broker_skip_reason, start_broker_process
from .stub_broker import StubBroker

CLIENT_NAMES = ("cpp1", "cpp2", "node")

# the servers these suites start (rocketpy serve in subprocesses too) log under a temporary directory
os.environ.setdefault("ROCKETMQ_LOG_DIR", tempfile.mkdtemp(prefix="rocketpy-compat-logs-"))
JAVA_REF_VAR = "ROCKETMQ_JAVA_REF"
JAVA_CLASSPATH_VAR = "ROCKETMQ_JAVA_CLASSPATH"


def require_client(name: str) -> ClientEnv:
    env = client_env(name)
    if not env.available:
        pytest.skip(env.skip_reason or f"{name} unavailable")
    return env


@pytest.fixture(params=CLIENT_NAMES)
def client(request: pytest.FixtureRequest) -> ClientEnv:
    """Each third-party client in turn (skipped where it cannot run)."""
    return require_client(request.param)


@pytest.fixture
def cpp1() -> ClientEnv:
    return require_client("cpp1")


@pytest.fixture
def cpp2() -> ClientEnv:
    return require_client("cpp2")


@pytest.fixture
def node() -> ClientEnv:
    return require_client("node")


@pytest.fixture
def run_id() -> str:
    return uuid.uuid4().hex[:8]


@pytest.fixture
def client_home(tmp_path: Path) -> Path:
    """A HOME for client processes (the C++ clients write logs and offsets under it)."""
    home = tmp_path / "home"
    home.mkdir()
    return home


@pytest.fixture
async def namesrv(nursery: trio.Nursery, tmp_path: Path) -> NameServer:
    """Our NameServer, in-process on 127.0.0.1:<free port>."""

    config = NamesrvConfig(
        kv_config_path=str(tmp_path / "namesrv" / "kvConfig.json"),
        config_store_path=str(tmp_path / "namesrv" / "namesrv.properties"),
    )
    server = NameServer(config)
    await nursery.start(server.run, "127.0.0.1", 0)
    return server


@pytest.fixture
def start_stub(nursery: trio.Nursery) -> Callable[..., Awaitable[StubBroker]]:
    """``await start_stub(namesrv_addr, topic, queues=4)``: a stub broker registered there."""

    async def start(namesrv_addr: str, topic: str, **kwargs: object) -> StubBroker:
        stub = StubBroker(topic, **kwargs)  # type: ignore[arg-type]
        await nursery.start(stub.run, namesrv_addr)
        return stub

    return start


@pytest.fixture
def start_proxy(nursery: trio.Nursery) -> Callable[[str], Awaitable[RecordingProxy]]:
    """``await start_proxy(upstream)``: a recording proxy in front of ``upstream``."""

    async def start(upstream: str) -> RecordingProxy:
        proxy = RecordingProxy(upstream)
        await nursery.start(proxy.run)
        return proxy

    return start


@pytest.fixture
def broker_built() -> None:
    """Skips (sync, so the reason shows) while ``rocketpy serve`` does not exist."""
    reason = broker_skip_reason()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture
async def rocketpy_server(broker_built: None, nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[BrokerProcess]:
    """``rocketpy serve`` (NameServer + broker) in a subprocess on 127.0.0.1, store under tmp_path."""
    server = await start_broker_process(nursery, tmp_path / "server")
    try:
        yield server
    finally:
        await server.stop()
    # whatever the clients saw, the server must not have logged an error or a traceback
    problems = server.log_problems()
    assert not problems, "rocketpy serve logged errors:\n" + "\n".join(problems[:40])


@pytest.fixture(scope="session")
def java_ref() -> Path:
    """The official Java 4.9.8 install (its ``bin/namesrv.sh``, ``bin/broker.sh``, ``bin/mqadmin.sh``), or skip."""
    ref = os.environ.get(JAVA_REF_VAR)
    if not ref:
        pytest.skip(f"{JAVA_REF_VAR} is not set: the official Java 4.9.8 servers are not available here")
    path = Path(ref).expanduser()
    for script in ("namesrv.sh", "broker.sh", "mqadmin.sh"):
        if not (path / "bin" / script).exists():
            pytest.skip(f"{JAVA_REF_VAR}={ref} has no bin/{script}")
    return path


@pytest.fixture(scope="session")
def java_classes(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The classpath to run clients/java/CompatClient with (compiled once per run against the Java client's
    jars in ROCKETMQ_JAVA_CLASSPATH), or skip."""
    classpath = os.environ.get(JAVA_CLASSPATH_VAR)
    if not classpath:
        pytest.skip(f"{JAVA_CLASSPATH_VAR} is not set: the official Java client's jars are not available here")
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    out = tmp_path_factory.mktemp("java-classes")
    proc = subprocess.run(
        ["javac", "-encoding", "UTF-8", "-cp", classpath, "-d", str(out), str(CLIENTS / "java" / "CompatClient.java")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        pytest.fail(f"javac against {JAVA_CLASSPATH_VAR}={classpath} failed:\n{proc.stderr[-3000:]}")
    return f"{out}{os.pathsep}{classpath}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every compat test drives third-party clients or Java: ``slow`` (CI runs them; ``-m "not slow"`` skips)."""
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.slow)


def _first_skip(exc: BaseException | None) -> BaseException | None:
    """The pytest.skip raised inside ``exc`` (an exception group of a trio test), if there is one."""
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = _first_skip(inner)
            if found is not None:
                return found
        return None
    return exc if isinstance(exc, pytest.skip.Exception) else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """A test body that skips (a third-party client missing) keeps its reason in ``-rs``: pytest-trio 0.8 catches
    the group its run raises and skips again with no message, so those tests said only "Skipped"."""
    outcome = yield
    report = outcome.get_result()
    if not report.skipped or call.excinfo is None or not isinstance(report.longrepr, tuple):
        return
    raised = call.excinfo.value
    if isinstance(raised, pytest.skip.Exception) and not raised.msg:
        original = _first_skip(raised.__context__)
        if original is not None and getattr(original, "msg", ""):
            report.longrepr = (str(item.path), item.location[1] + 1, f"Skipped: {original.msg}")
