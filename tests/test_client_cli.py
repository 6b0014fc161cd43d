"""``rocketpy produce``, ``rocketpy consume`` and ``rocketpy admin`` against a running cluster."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator

import pytest
from client_fakes import Cluster, real_broker_available, threaded_cluster

from rocketpy.cli import main
from rocketpy.client import make_message


@pytest.fixture(scope="module", params=["fake", "rocketpy"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    if request.param == "rocketpy" and not real_broker_available():
        pytest.skip("rocketpy.broker is not available")
    with threaded_cluster(real=request.param == "rocketpy") as c:
        yield c


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def produce(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], cluster: Cluster, text: bytes,
            *extra: str) -> list[dict]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text)))
    code, out = run(capsys, "produce", "-n", cluster.namesrv, *extra)
    assert code == 0
    return [json.loads(line) for line in out.splitlines()]


def test_produce_then_consume(cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    results = produce(monkeypatch, capsys, cluster, b"one\ntwo\n\xff\xfe\n", "-t", "CliTopic", "--tag", "T1",
                      "--keys", "k1 k2", "--property", "color=blue")
    assert [r["status"] for r in results] == ["SEND_OK"] * 3
    assert {"msgId", "broker", "queueId", "queueOffset"} <= set(results[0])
    produce(monkeypatch, capsys, cluster, b"skipped\n", "-t", "CliTopic", "--tag", "T2")
    code, out = run(capsys, "consume", "-n", cluster.namesrv, "-t", "CliTopic", "-g", "CliGroup",
                    "--tag-expr", "T1", "--count", "3", "--timeout", "5")
    assert code == 0
    msgs = [json.loads(line) for line in out.splitlines()]
    assert sorted(m["body"] for m in msgs if not m.get("bodyBase64")) == ["one", "two"]
    binary = [m for m in msgs if m.get("bodyBase64")]
    assert binary and binary[0]["body"] == "//4="
    assert all(m["tags"] == "T1" and m["keys"] == "k1 k2" and m["properties"]["color"] == "blue" for m in msgs)
    assert {m["msgId"] for m in msgs} == {r["msgId"] for r in results}


def test_consume_stops_after_silence(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "consume", "-n", cluster.namesrv, "-t", "CliEmpty", "-g", "CliGroupE",
                    "--timeout", "0.5")
    assert code == 0 and out == ""


def test_admin_commands(cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    ns = cluster.namesrv
    addr = cluster.broker_addr
    code, out = run(capsys, "admin", "updateTopic", "-n", ns, "-c", "DefaultCluster", "-t", "AdmTopic", "-r", "2",
                    "-w", "2")
    assert code == 0 and "success" in out
    import time

    for _ in range(50):
        code, out = run(capsys, "admin", "topicList", "-n", ns)
        if "AdmTopic" in out.split():
            break
        time.sleep(0.05)
    assert "AdmTopic" in out.split()
    results = produce(monkeypatch, capsys, cluster, b"hello admin\n", "-t", "AdmTopic", "--keys", "adm-key")
    offset_id = results[0]["offsetMsgId"]
    code, out = run(capsys, "admin", "topicRoute", "-n", ns, "-t", "AdmTopic")
    assert code == 0 and '"readQueueNums":2' in out
    code, out = run(capsys, "admin", "topicStatus", "-n", ns, "-t", "AdmTopic")
    assert code == 0 and "broker-a" in out
    code, out = run(capsys, "admin", "clusterList", "-n", ns)
    assert code == 0 and "DefaultCluster" in out and addr in out and "V4_9_8" in out
    code, out = run(capsys, "admin", "brokerStatus", "-n", ns, "-b", addr)
    assert code == 0 and "brokerVersionDesc" in out
    code, out = run(capsys, "admin", "getBrokerConfig", "-n", ns, "-b", addr)
    assert code == 0 and "brokerName" in out
    code, out = run(capsys, "admin", "queryMsgById", "-n", ns, "-i", offset_id)
    assert code == 0 and "hello admin" in out and "AdmTopic" in out
    code, out = run(capsys, "admin", "queryMsgById", "-n", ns, "-i", results[0]["msgId"], "-t", "AdmTopic")
    assert code == 0 and "hello admin" in out
    code, out = run(capsys, "admin", "queryMsgByKey", "-n", ns, "-t", "AdmTopic", "-k", "adm-key")
    assert code == 0 and results[0]["msgId"] in out
    code, out = run(capsys, "admin", "queryMsgByOffset", "-n", ns, "-t", "AdmTopic", "-b", "broker-a", "-i",
                    str(results[0]["queueId"]), "-o", "0")
    assert code == 0 and "hello admin" in out
    code, out = run(capsys, "admin", "printMsg", "-n", ns, "-t", "AdmTopic")
    assert code == 0 and "hello admin" in out
    code, out = run(capsys, "admin", "updateSubGroup", "-n", ns, "-b", addr, "-g", "AdmGroup")
    assert code == 0 and "success" in out
    code, out = run(capsys, "admin", "deleteSubGroup", "-n", ns, "-b", addr, "-g", "AdmGroup")
    assert code == 0 and "success" in out
    # a consumer group with progress
    code, out = run(capsys, "consume", "-n", ns, "-t", "AdmTopic", "-g", "AdmCG", "--count", "1", "--timeout", "5")
    assert code == 0
    code, out = run(capsys, "admin", "consumerProgress", "-n", ns, "-g", "AdmCG")
    assert code == 0 and "AdmTopic" in out
    code, out = run(capsys, "admin", "resetOffsetByTime", "-n", ns, "-g", "AdmCG", "-t", "AdmTopic", "-s", "0")
    assert code == 0 and "broker-a" in out
    code, out = run(capsys, "admin", "consumerProgress", "-n", ns, "-g", "AdmCG")
    assert code == 0 and "Diff Total: 1" in out
    from rocketpy.client.facade import BlockingProducer

    with BlockingProducer("AdmPG", namesrv=ns) as producer:
        producer.send(make_message("AdmTopic", "live producer"))
        # the producer's heartbeat travels beside the send: the broker knows it a moment later
        for _ in range(100):
            code, out = run(capsys, "admin", "producerConnection", "-n", ns, "-g", "AdmPG", "-t", "AdmTopic")
            if code == 0:
                break
            time.sleep(0.05)
    assert code == 0 and producer.producer.client.client_id in out
    code, out = run(capsys, "admin", "deleteTopic", "-n", ns, "-c", "DefaultCluster", "-t", "AdmTopic")
    assert code == 0 and "success" in out
    code, out = run(capsys, "admin", "topicRoute", "-n", ns, "-t", "NoSuchTopic")
    assert code == 1


def test_consumer_connection(cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    import threading

    from rocketpy.client.facade import BlockingPushConsumer

    produce(monkeypatch, capsys, cluster, b"x\n", "-t", "ConnTopic")
    consumer = BlockingPushConsumer("ConnGroup", lambda msgs, ctx: None, namesrv=cluster.namesrv)
    consumer.subscribe("ConnTopic", "A || B")
    with consumer:
        event = threading.Event()
        for _ in range(100):
            code, out = run(capsys, "admin", "consumerConnection", "-n", cluster.namesrv, "-g", "ConnGroup")
            if code == 0:
                break
            event.wait(0.05)
    assert code == 0 and "A || B" in out and "CLUSTERING" in out
