"""TLS between the official Java 4.9.8 client/servers and ours (issue #13).

* the Java client with ``-Dtls.enable=true`` (test mode, as shipped) produces and consumes through our
  NameServer and broker started with no TLS settings at all (permissive by default, as Java's);
* our client with TLS produces and consumes through the Java NameServer and broker (their defaults).

Runs when ROCKETMQ_JAVA_CLASSPATH (and, for the Java servers, ROCKETMQ_JAVA_REF) are set; skips otherwise.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from rocketpy.client import ClientConfig, Producer, make_message
from rocketpy.codecs import ResponseCode
from rocketpy.codecs.codes import SendStatus
from rocketpy.namesrv.server import NameServer
from rocketpy.remoting import open_remoting_client
from rocketpy.remoting.tls import TlsConfig
from rocketpy.testing import BrokerTestClient, free_broker_port

from .servers import create_topic, java_broker, java_namesrv, our_broker, run_java, wait_for_route

N = 10
pytestmark = pytest.mark.timeout(240)


async def test_java_tls_client_through_our_servers_with_no_tls_settings(
    java_classes: str, namesrv: NameServer, nursery: trio.Nursery, tmp_path: Path
) -> None:
    topic = "TlsJava"
    async with our_broker(nursery, tmp_path / "store", namesrvAddr=namesrv.address,
                          listenPort=free_broker_port()) as broker:
        response = await create_topic(broker.servers[0].address, topic, 4)
        assert response.code == ResponseCode.SUCCESS
        await wait_for_route(namesrv.address, topic)
        produced = await run_java(java_classes, ["produce", namesrv.address, topic, "PG_tls", str(N), "tls", "T"],
                                  tmp_path / "producer", tls=True)
        assert produced.result is not None and not produced.result.get("error"), produced.describe()
        assert [r.get("status") for r in produced.result["results"]] == ["SEND_OK"] * N, produced.describe()
        consume = ["consume", namesrv.address, topic, "CG_tls", str(N), "tls", "*", "40"]
        consumed = await run_java(java_classes, consume, tmp_path / "consumer", tls=True)
        assert consumed.result is not None and not consumed.result.get("error"), consumed.describe()
        assert len(consumed.result["messages"]) == N, consumed.describe()
        # the Java client really spoke TLS to both servers
        assert namesrv.remoting is not None and namesrv.remoting.tls_accepted > 0
        assert sum(s.tls_accepted for s in broker.servers) > 0


async def test_our_tls_client_through_java_servers(java_ref: Path, tmp_path: Path) -> None:
    port = free_broker_port()
    async with java_namesrv(java_ref, free_broker_port(), tmp_path) as ns_addr, java_broker(
        java_ref, port, ns_addr, tmp_path / "java", {}
    ):
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
