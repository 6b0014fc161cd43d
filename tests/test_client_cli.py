"""``rocketpy produce``, ``rocketpy consume`` and ``rocketpy admin`` against a running cluster."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from clusters import Cluster, committed_offsets, threaded_cluster

from rocketpy.cli import main
from rocketpy.client import make_message


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with threaded_cluster() as c:
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
    assert all(m["tags"] == "T1" and m["keys"] == ["k1", "k2"] and m["properties"]["color"] == "blue" for m in msgs)
    assert {m["msgId"] for m in msgs} == {r["msgId"] for r in results}


def test_consume_stops_after_silence(cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    produce(monkeypatch, capsys, cluster, b"old\n", "-t", "CliQuiet")
    argv = ["consume", "-n", cluster.namesrv, "-t", "CliQuiet", "-g", "CliGroupE"]
    code, out = run(capsys, *argv, "--count", "1", "--timeout", "5")
    assert code == 0 and json.loads(out)["body"] == "old"
    code, out = run(capsys, *argv, "--timeout", "0.5")  # nothing new: ends after the quiet time
    assert code == 0 and out == ""


def test_consume_unknown_topic_fails(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["consume", "-n", cluster.namesrv, "-t", "CliNoSuchTopic", "-g", "CliGroupN", "--timeout", "0.5"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == ""
    assert captured.err.strip() == (f"rocketpy consume: topic CliNoSuchTopic does not exist (the NameServer "
                                    f"{cluster.namesrv} has no route for it)")


@pytest.mark.parametrize("command", ["consume", "produce"])
def test_unreachable_namesrv_is_one_line_with_the_cause(command: str, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    from rocketpy.testing import free_broker_port

    addr = f"127.0.0.1:{free_broker_port()}"  # nothing listens there
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x\n")))
    argv = [command, "-n", addr, "-t", "T"] + (["-g", "G", "--timeout", "0.5"] if command == "consume" else [])
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"rocketpy {command}: cannot reach the NameServer {addr}")
    assert "connect" in err[0]  # the refused connection, not "No route info"


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
    assert code == 0 and f"OffsetID:            {offset_id}\n" in out and "Topic:               AdmTopic\n" in out
    body_path = out.split("Message Body Path:   ")[1].splitlines()[0]  # mqadmin: the body goes to a file
    assert open(body_path, "rb").read() == b"hello admin"
    code, out = run(capsys, "admin", "queryMsgById", "-n", ns, "-i", results[0]["msgId"], "-t", "AdmTopic",
                    "--json")
    assert code == 0 and json.loads(out)["body"] == "hello admin"
    code, out = run(capsys, "admin", "queryMsgByUniqueKey", "-n", ns, "-i", results[0]["msgId"], "-t", "AdmTopic")
    assert code == 0 and out.startswith("Topic:               AdmTopic\n")
    code, out = run(capsys, "admin", "queryMsgByKey", "-n", ns, "-t", "AdmTopic", "-k", "adm-key")
    assert code == 0 and results[0]["msgId"] in out
    code, out = run(capsys, "admin", "queryMsgByOffset", "-n", ns, "-t", "AdmTopic", "-b", "broker-a", "-i",
                    str(results[0]["queueId"]), "-o", "0", "--json")
    assert code == 0 and json.loads(out)["body"] == "hello admin"
    code, out = run(capsys, "admin", "printMsg", "-n", ns, "-t", "AdmTopic")
    assert code == 0 and "hello admin" in out
    code, out = run(capsys, "admin", "printMsgByQueue", "-n", ns, "-t", "AdmTopic", "-a", "broker-a", "-i",
                    str(results[0]["queueId"]), "-p", "true", "-d", "true", "-f", "true")
    assert code == 0 and " BODY: hello admin\n" in out and "Tag: " in out and "Count: 1" in out
    code, out = run(capsys, "admin", "updateSubGroup", "-n", ns, "-b", addr, "-g", "AdmGroup")
    assert code == 0 and "success" in out
    code, out = run(capsys, "admin", "deleteSubGroup", "-n", ns, "-b", addr, "-g", "AdmGroup")
    assert code == 0 and "success" in out
    # a consumer group with progress on both queues (the broker resets a group only where it has an offset on
    # every queue, as Java's does): one more message on each queue (consecutive sends go round the queues)
    more = produce(monkeypatch, capsys, cluster, b"second\nthird\n", "-t", "AdmTopic")
    assert {r["queueId"] for r in more} == {0, 1}
    code, out = run(capsys, "consume", "-n", ns, "-t", "AdmTopic", "-g", "AdmCG", "--count", "3", "--timeout", "5")
    assert code == 0
    # its last offsets go out oneway as it shuts down: wait until the broker has read them
    for _ in range(200):
        if len(committed_offsets(cluster.brokers[0], "AdmCG", "AdmTopic")) == 2:
            break
        time.sleep(0.05)
    assert sorted(committed_offsets(cluster.brokers[0], "AdmCG", "AdmTopic").values()) == [1, 2]
    code, out = run(capsys, "admin", "consumerProgress", "-n", ns, "-g", "AdmCG")
    assert code == 0 and "AdmTopic" in out and "Diff Total: 0" in out
    code, out = run(capsys, "admin", "resetOffsetByTime", "-n", ns, "-g", "AdmCG", "-t", "AdmTopic", "-s", "0")
    assert code == 0 and "broker-a" in out
    code, out = run(capsys, "admin", "consumerProgress", "-n", ns, "-g", "AdmCG")
    assert code == 0 and "Diff Total: 3" in out
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


@pytest.mark.parametrize(("command", "topic"), [("updateTopic", "DefaultCluster"), ("updateTopic", "broker-a"),
                                                ("updateTopic", "DefaultCluster_REPLY_TOPIC"),
                                                ("deleteTopic", "broker-a"), ("deleteTopic", "DefaultCluster")])
def test_admin_refuses_the_broker_own_system_topics(cluster: Cluster, capsys: pytest.CaptureFixture[str],
                                                    command: str, topic: str) -> None:
    # Java's TopicConfigManager adds the broker's cluster name, broker name and reply topic to TopicValidator's
    # set: updateTopic -t DefaultCluster made the 16-queue cluster topic an 8-queue one here
    broker = cluster.broker
    before = broker.topics.get(topic)
    assert before is not None
    code = main(["admin", command, "-n", cluster.namesrv, "-c", "DefaultCluster", "-t", topic])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    assert f"DESC: The topic[{topic}] is conflict with system topic." in err[0]
    assert broker.topics.get(topic) == before


def test_consumer_connection(cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
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
        client_id = consumer.consumer.client.client_id
        monkeypatch.chdir(tmp_path)  # mqadmin writes each client's running info under the working directory
        code, out = run(capsys, "admin", "consumerStatus", "-n", cluster.namesrv, "-g", "ConnGroup")
        assert code == 0, out
        lines = out.splitlines()
        assert lines[0] == ("#Index     #ClientId                                #Version             "
                            "#ConsumerRunningInfoFile")
        path = lines[1].split()[-1]
        assert lines[1].split()[:3] == ["1", client_id, "V4_9_8"] and (tmp_path / path).read_text().startswith(
            "#Consumer Properties#\n")
        assert out.endswith("\n\nSame subscription in the same group of consumer\n\nRebalance OK\n")
        code, out = run(capsys, "admin", "consumerStatus", "-n", cluster.namesrv, "-g", "ConnGroup", "-i", client_id)
        assert code == 0 and "#Consumer Subscription#\n" in out and "SubExpression: A || B" in out


def test_new_admin_commands_live(cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ns, addr = cluster.namesrv, cluster.broker_addr
    code, out = run(capsys, "admin", "updateTopic", "-n", ns, "-b", addr, "-t", "NewCmdTopic", "-r", "2", "-w", "2")
    assert code == 0
    code, out = run(capsys, "admin", "sendMessage", "-n", ns, "-t", "NewCmdTopic", "-p", "[red]hi[/red]", "-c", "T")
    assert code == 0, out
    head, row = out.splitlines()
    assert head == "#Broker Name                      #QID  #Send Result            #MsgId"
    assert row.split()[2] == "SEND_OK"
    code, out = run(capsys, "admin", "checkMsgSendRT", "-n", ns, "-t", "NewCmdTopic", "-a", "3", "-s", "10")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "#Broker Name                      #QID  #Send Result            #RT"
    assert [ln.split()[1:3] for ln in lines[1:4]] == [["0", "true"], ["1", "true"], ["0", "true"]]
    assert lines[4].startswith("Avg RT: ")
    code, out = run(capsys, "admin", "topicClusterList", "-n", ns, "-t", "NewCmdTopic")
    assert code == 0 and out == "DefaultCluster\n"
    code, out = run(capsys, "admin", "topicStatus", "-n", ns, "-t", "NewCmdTopic")
    assert out.splitlines()[0] == ("#Broker Name                      #QID  #Min Offset           #Max Offset"
                                   "             #Last Updated")  # as mqadmin (tests/data/mqadmin/21-*)
    code, out = run(capsys, "admin", "updateTopicPerm", "-n", ns, "-c", "DefaultCluster", "-t", "NewCmdTopic",
                    "-p", "4", "--json")
    assert code == 0 and json.loads(out)["changed"][0]["perm"] == 4
    code, out = run(capsys, "admin", "getNamesrvConfig", "-n", ns)
    assert code == 0 and out.startswith(f"============{ns}============\n") and "listenPort" in out
    code, out = run(capsys, "admin", "consumerProgress", "-n", ns, "--json")
    assert code == 0 and isinstance(json.loads(out), list)
    code = main(["admin", "resetOffsetByTime", "-n", ns, "-g", "G", "-t", "NewCmdTopic", "-s", "yesterday"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "bad time 'yesterday'" in err
    code, out = run(capsys, "admin", "sendMsgStatus", "-n", ns, "-b", "broker-a", "-c", "2", "-s", "20")
    assert code == 0 and [ln.split(", SendResult=SendResult [sendStatus=")[1][:7] for ln in out.splitlines()] == [
        "SEND_OK", "SEND_OK"]
    code, out = run(capsys, "admin", "exportMetadata", "-n", ns, "-c", "DefaultCluster", "-f", str(tmp_path))
    assert code == 0 and out == f"export {tmp_path}/metadata.json success\n"
    exported = json.loads((tmp_path / "metadata.json").read_text())
    assert "NewCmdTopic" in exported["topicConfigTable"] and "TBW102" not in exported["topicConfigTable"]
    code, out = run(capsys, "admin", "clusterRT", "-n", ns, "-a", "3", "-s", "16", "--rounds", "1")
    head, row = out.splitlines()
    assert code == 0 and head == "#Cluster Name             #Broker Name              #RT   #successCount  #failCount"
    assert row.split()[:2] == ["DefaultCluster", "broker-a"] and row.split()[3:] == ["3", "0"]
    code, out = run(capsys, "admin", "brokerConsumeStats", "-n", ns, "-b", addr)
    assert code == 0 and out.startswith("#Topic ") and "Diff Total: " in out
    # as Java's: a key of configBlackList is refused (one line, exit 1), another one changes
    code = main(["admin", "updateBrokerConfig", "-n", ns, "-b", addr, "-k", "brokerConfigPath", "-v", "/tmp/x"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert "CODE: 16 NO_PERMISSION DESC: Can not update config in black list." in err
    code, out = run(capsys, "admin", "updateBrokerConfig", "-n", ns, "-b", addr, "-k", "fileReservedTime", "-v", "72")
    assert code == 0 and out == f"update broker config success, {addr}\n"
    assert cluster.broker.config.store.file_reserved_time == 72
    code, out = run(capsys, "admin", "wipeWritePerm", "-n", ns, "-b", "broker-a")
    assert code == 0 and out.startswith(f"wipe write perm of broker[broker-a] in name server[{ns}] OK, ")
    code, out = run(capsys, "admin", "addWritePerm", "-n", ns, "-b", "broker-a")
    assert code == 0 and out.startswith(f"add write perm of broker[broker-a] in name server[{ns}] OK, ")


def test_query_msg_by_id_consume_directly_and_resend(cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """queryMsgById -g/-d: the consumer's client consumes the message once more; -s true: sent again."""
    import threading

    from rocketpy.client.facade import BlockingPushConsumer

    ns = cluster.namesrv
    code, out = run(capsys, "admin", "sendMessage", "-n", ns, "-t", "DirectTopic", "-p", "again", "-c", "T",
                    "--json")
    assert code == 0, out
    offset_id, msg_id = json.loads(out)["offsetMsgId"], json.loads(out)["msgId"]
    seen: list[bytes] = []
    consumer = BlockingPushConsumer("DirectGroup", lambda msgs, ctx: seen.extend(m.body for m in msgs), namesrv=ns)
    consumer.subscribe("DirectTopic", "*")
    with consumer:
        client_id = consumer.consumer.client.client_id
        event = threading.Event()
        for _ in range(200):
            if seen:
                break
            event.wait(0.05)
        before = len(seen)
        code, out = run(capsys, "admin", "queryMsgById", "-n", ns, "-i", offset_id, "-g", "DirectGroup", "-d",
                        client_id)
        assert code == 0, out
        assert out.startswith("ConsumeMessageDirectlyResult [order=false, autoCommit=true, "
                              "consumeResult=CR_SUCCESS, remark=") and "\n" not in out
        assert len(seen) == before + 1 and seen[-1] == b"again"
        code, out = run(capsys, "admin", "queryMsgById", "-n", ns, "-i", offset_id, "-s", "true")
        assert code == 0, out
        assert out.startswith(f"prepare resend msg. originalMsgId={offset_id}SendResult [sendStatus=SEND_OK, ")
        for _ in range(200):
            if len(seen) >= before + 2:
                break
            event.wait(0.05)
        assert seen[-1] == b"again" and len(seen) == before + 2
        # the resent message kept its client id (UNIQ_KEY): -a shows both stored copies, the original first
        code, out = run(capsys, "admin", "queryMsgByUniqueKey", "-n", ns, "-t", "DirectTopic", "-i", msg_id, "-a")
        assert code == 0, out
        assert out.count("Topic:               DirectTopic\n") == 2
        code, out = run(capsys, "admin", "queryMsgByUniqueKey", "-n", ns, "-t", "DirectTopic", "-i", msg_id)
        assert out.count("Topic:               DirectTopic\n") == 1


def test_send_message_with_trace(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    """sendMessage -m true: the send is traced (a Pub record queryMsgTraceById finds)."""
    import threading

    ns = cluster.namesrv
    code, out = run(capsys, "admin", "sendMessage", "-n", ns, "-t", "TracedTopic", "-p", "traced", "-m", "true",
                    "--json")
    assert code == 0, out
    msg_id = json.loads(out)["msgId"]
    event = threading.Event()
    for _ in range(100):
        code, out = run(capsys, "admin", "queryMsgTraceById", "-n", ns, "-i", msg_id)
        if code == 0 and "\nPub " in out:
            break
        event.wait(0.1)
    assert code == 0 and "\nPub " in out, out
    code, out = run(capsys, "admin", "sendMessage", "-n", ns, "-t", "TracedTopic", "-p", "plain", "--json")
    plain_id = json.loads(out)["msgId"]
    code, out = run(capsys, "admin", "queryMsgTraceById", "-n", ns, "-i", plain_id)
    assert "\nPub " not in out
