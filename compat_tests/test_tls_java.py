"""TLS between the official Java 4.9.8 client/servers and ours (issue #13).

* the Java client with ``-Dtls.enable=true`` (test mode, as shipped) produces and consumes through our
  NameServer and broker started with no TLS settings at all (permissive by default, as Java's);
* our client with TLS produces and consumes through the Java NameServer and broker (their defaults).

Runs when ROCKETMQ_JAVA_CLASSPATH (and, for the Java servers, ROCKETMQ_JAVA_REF) are set; skips otherwise.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from rocketpy.broker.controller import BrokerController
from rocketpy.broker.testing import BrokerTestClient, broker_test_config, free_broker_port
from rocketpy.client import ClientConfig, Producer, make_message
from rocketpy.codecs import ResponseCode
from rocketpy.codecs.codes import SendStatus
from rocketpy.namesrv.server import NameServer
from rocketpy.remoting import open_remoting_client
from rocketpy.remoting.tls import TlsConfig

from .harness import DriverResult, parse_result
from .servers import create_topic, wait_for_route
from .test_ha_java import java_broker, java_ref
from .test_java_client import java_classes

__all__ = ["java_classes", "java_ref"]  # fixtures shared with the other Java tests

N = 10
pytestmark = pytest.mark.timeout(240)


async def run_java_tls(classes: str, args: list[str], home: Path, timeout: float = 90) -> DriverResult:
    """CompatClient with TLS on, as a user turns it on: -Dtls.enable=true (test mode is Java's default)."""
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOME=str(home))
    cmd = ["java", "-Dtls.enable=true", "-Dtls.test.mode.enable=true", f"-Dtls.config.file={home / 'none'}",
           f"-Duser.home={home}", f"-Drocketmq.client.logRoot={home / 'logs'}", "-cp", classes, "CompatClient", *args]
    with trio.fail_after(timeout):
        proc = await trio.run_process(cmd, capture_stdout=True, capture_stderr=True, check=False, env=env,
                                      cwd=str(home))
    stdout = proc.stdout.decode("utf-8", "replace")
    return DriverResult(proc.returncode, parse_result(stdout), stdout, proc.stderr.decode("utf-8", "replace"))


async def test_java_tls_client_through_our_servers_with_no_tls_settings(
    java_classes: str, namesrv: NameServer, nursery: trio.Nursery, tmp_path: Path
) -> None:
    topic = "TlsJava"
    store = tmp_path / "store"
    store.mkdir()
    broker = BrokerController(broker_test_config(str(store), namesrvAddr=namesrv.address,
                                                 listenPort=free_broker_port()))
    await nursery.start(broker.run)
    try:
        response = await create_topic(broker.servers[0].address, topic, 4)
        assert response.code == ResponseCode.SUCCESS
        await wait_for_route(namesrv.address, topic)
        produced = await run_java_tls(java_classes, ["produce", namesrv.address, topic, "PG_tls", str(N), "tls", "T"],
                                      tmp_path / "producer")
        assert produced.result is not None and not produced.result.get("error"), produced.describe()
        assert [r.get("status") for r in produced.result["results"]] == ["SEND_OK"] * N, produced.describe()
        consumed = await run_java_tls(
            java_classes, ["consume", namesrv.address, topic, "CG_tls", str(N), "tls", "*", "40"], tmp_path / "consumer"
        )
        assert consumed.result is not None and not consumed.result.get("error"), consumed.describe()
        assert len(consumed.result["messages"]) == N, consumed.describe()
        # the Java client really spoke TLS to both servers
        assert namesrv.remoting is not None and namesrv.remoting.tls_accepted > 0
        assert sum(s.tls_accepted for s in broker.servers) > 0
    finally:
        await broker.stop()


@asynccontextmanager
async def java_namesrv(ref: Path, port: int, log_dir: Path) -> AsyncIterator[trio.Process]:
    log_dir.mkdir(parents=True, exist_ok=True)
    log = open(log_dir / "java-namesrv.log", "wb")  # noqa: SIM115
    proc = await trio.lowlevel.open_process(["bash", str(ref / "bin" / "namesrv.sh")], stdout=subprocess.PIPE,
                                            stderr=log, env=dict(os.environ, NAMESRV_PORT=str(port)))
    try:
        buf = b""
        with trio.fail_after(60):
            while b"boot success" not in buf:
                chunk = await proc.stdout.receive_some(4096)
                if not chunk:
                    raise RuntimeError(f"Java NameServer exited: {buf[-2000:]!r}")
                buf += chunk
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


async def test_our_tls_client_through_java_servers(java_ref: Path, tmp_path: Path) -> None:
    ns_port = free_broker_port()
    ns_addr = f"127.0.0.1:{ns_port}"
    port = free_broker_port()
    async with java_namesrv(java_ref, ns_port, tmp_path), java_broker(java_ref, port, ns_addr, tmp_path / "java", {}):
        config = ClientConfig(namesrv_addr=ns_addr, use_tls=True, tls=TlsConfig(enable=True))
        with trio.fail_after(60):
            while True:  # the broker registers, then TBW102 lets our producer create the topic
                try:
                    async with Producer("PG_tls_py", config=config) as producer:
                        result = await producer.send(make_message("TlsPy", "over tls"))
                    break
                except Exception:
                    await trio.sleep(1)
        assert result.send_status == SendStatus.SEND_OK
        async with open_remoting_client(ssl_context=TlsConfig(enable=True).client_context()) as rc:
            _, msgs = await BrokerTestClient(rc, f"127.0.0.1:{port}").pull(
                "CG_tls_py", "TlsPy", result.message_queue.queue_id, 0)
        assert [m.body for m in msgs] == [b"over tls"]
