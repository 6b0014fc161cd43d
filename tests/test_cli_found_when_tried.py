"""Issue #27's "found when tried" rows: each command as an operator ran it, against a running cluster."""

from __future__ import annotations

import fcntl
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from clusters import Cluster, committed_offsets, threaded_cluster

from rocketpy.cli import main
from rocketpy.codecs import RequestCode
from rocketpy.testing import free_port

ROOT = Path(__file__).resolve().parent.parent
CAPTURE = ROOT / "protocol" / "golden" / "captures" / "09-Admin.pcap"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with threaded_cluster(probe=True) as c:
        yield c


def one_line_failure(capsys: pytest.CaptureFixture[str], argv: list[str], status: int = 1) -> str:
    assert main(argv) == status
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


def produce(cluster: Cluster, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], topic: str,
            count: int) -> None:
    lines = "".join(f"m{i}\n" for i in range(count)).encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(lines)))
    assert main(["produce", "-n", cluster.namesrv, "-t", topic]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("argv", [
    ["brokerStatus", "-b", "{gone}"],
    ["getBrokerConfig", "-b", "{gone}"],
    ["producer", "-b", "{gone}"],
    ["cleanExpiredCQ", "-b", "{gone}"],
    ["brokerConsumeStats", "-b", "{gone}"],
    ["updateTopic", "-b", "{gone}", "-t", "GoneT"],
    ["updateSubGroup", "-b", "{gone}", "-g", "GoneG"],
    ["consumerConnection", "-b", "{gone}", "-g", "GoneG"],
    # an offset message id names its broker: 127.0.0.1 and a port nobody listens on
    ["queryMsgById", "-i", "7F000001{gone_hex}0000000000000000"],
])
def test_admin_to_a_gone_broker_is_one_line(argv: list[str], cluster: Cluster,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    argv = [a.format(gone=f"127.0.0.1:{port}", gone_hex=f"{port:08X}") for a in argv]
    line = one_line_failure(capsys, ["admin", *argv, "-n", cluster.namesrv])
    assert line.startswith(f"rocketpy admin {argv[0]}: connect to 127.0.0.1:{port} failed"), line


@pytest.mark.timeout(60)
def test_cluster_acl_config_version_with_acl_off(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_failure(capsys, ["admin", "clusterAclConfigVersion", "-b", cluster.broker_addr,
                                     "-n", cluster.namesrv])
    assert "timeout" in line and "aclEnable=false" in line


def test_reset_offset_of_a_group_never_online(cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Offsets copied to a group no client ever ran: mqadmin's fallback writes them on the broker (golden 83)."""
    produce(cluster, monkeypatch, capsys, "TOffline", 12)
    broker = cluster.broker
    assert main(["consume", "-n", cluster.namesrv, "-t", "TOffline", "-g", "SrcG", "--count", "12"]) == 0
    assert main(["admin", "cloneGroupOffset", "-n", cluster.namesrv, "-s", "SrcG", "-d", "NeverOnline",
                 "-t", "TOffline", "-o", "true"]) == 0
    capsys.readouterr()
    assert main(["admin", "resetOffsetByTime", "-n", cluster.namesrv, "-g", "NeverOnline", "-t", "TOffline",
                 "-s", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("rollback consumer offset by specified consumerGroup[NeverOnline], topic[TOffline], "
                             "force[true], timestamp(string)[0], timestamp(long)[0]")
    assert out[1].split() == ["#brokerName", "#queueId", "#brokerOffset", "#consumerOffset", "#timestampOffset",
                              "#rollbackOffset"]
    rows = [r.split() for r in out[2:]]
    assert sorted(int(r[1]) for r in rows) == [0, 1, 2, 3] and all(r[5] == "0" for r in rows)
    assert set(committed_offsets(broker, "NeverOnline", "TOffline").values()) == {0}


def test_delete_sub_group_removes_its_retry_and_dlq_topics(cluster: Cluster,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    broker = cluster.broker
    for topic in ("%RETRY%GoneGroup", "%DLQ%GoneGroup"):
        assert main(["admin", "updateTopic", "-n", cluster.namesrv, "-c", "DefaultCluster", "-t", topic]) == 0
    assert main(["admin", "updateSubGroup", "-n", cluster.namesrv, "-c", "DefaultCluster", "-g", "GoneGroup"]) == 0
    capsys.readouterr()
    assert main(["admin", "deleteSubGroup", "-n", cluster.namesrv, "-c", "DefaultCluster", "-g", "GoneGroup"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == ["delete topic [%RETRY%GoneGroup] from cluster [DefaultCluster] success.",
                       "delete topic [%RETRY%GoneGroup] from NameServer success.",
                       "delete topic [%DLQ%GoneGroup] from cluster [DefaultCluster] success.",
                       "delete topic [%DLQ%GoneGroup] from NameServer success."]
    assert broker.topics.get("%RETRY%GoneGroup") is None and broker.topics.get("%DLQ%GoneGroup") is None


def test_update_topic_order_stores_the_order_conf(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["admin", "updateTopic", "-n", cluster.namesrv, "-c", "DefaultCluster", "-t", "OrderT",
                 "-r", "4", "-w", "4", "-o", "true"]) == 0
    assert "set cluster orderConf. isOrder=true, orderConf=[broker-a:4]TopicConfig" in capsys.readouterr().out
    assert main(["admin", "updateOrderConf", "-n", cluster.namesrv, "-t", "OrderT", "-m", "get"]) == 0
    assert capsys.readouterr().out == "get orderConf success. topic=[OrderT], orderConf=[broker-a:4] "


def test_consume_into_a_closed_pipe_sends_nothing_back(cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """``rocketpy consume ... | head -1``: one line printed, then quiet; nothing goes to %RETRY%, and what was
    fetched but not printed is not acknowledged."""
    produce(cluster, monkeypatch, capsys, "THead", 20)

    class HeadOne(io.StringIO):
        def write(self, text: str) -> int:
            if "\n" in self.getvalue():  # after the first line, as head closes its end
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(text)

    before = len(cluster.probe.of(RequestCode.CONSUMER_SEND_MSG_BACK))
    head = HeadOne()
    monkeypatch.setattr(sys, "stdout", head)
    assert main(["consume", "-n", cluster.namesrv, "-t", "THead", "-g", "GHead", "--timeout", "5"]) == 141
    assert head.getvalue().count("\n") == 1
    assert len(cluster.probe.of(RequestCode.CONSUMER_SEND_MSG_BACK)) == before
    assert sum(committed_offsets(cluster.broker, "GHead", "THead").values()) <= 1


def test_bad_values_are_named(cluster: Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_failure(capsys, ["admin", "queryMsgByKey", "-n", cluster.namesrv, "-t", "THead", "-k", "nokey"])
    assert line.endswith("query message by key finished, but no message.")
    line = one_line_failure(capsys, ["admin", "printMsgByQueue", "-n", cluster.namesrv, "-t", "THead",
                                     "-a", "nosuch", "-i", "0"])
    assert line == "rocketpy admin printMsgByQueue: The broker[nosuch] not exist"
    line = one_line_failure(capsys, ["sniff", "-r", str(CAPTURE), "--port", "abc"], status=2)
    assert line == "rocketpy: --port 'abc' is not a port number (1-65535)"


@pytest.mark.parametrize("options", [[], ["-V"], ["--json"]])
@pytest.mark.skipif(not hasattr(fcntl, "F_SETPIPE_SZ"), reason="the pipe's size is set with Linux's F_SETPIPE_SZ")
def test_sniff_into_head_is_quiet(options: list[str]) -> None:
    # a pipe of one page, smaller than the listing even without -V: the sniffer cannot have written it
    # all (and exited 0) before this end closes, however the two are scheduled
    read_end, write_end = os.pipe()
    with open(read_end, "rb") as stdout:
        try:
            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
            sniff = subprocess.Popen([sys.executable, "-m", "rocketpy.cli", "sniff", "-r", str(CAPTURE), *options],
                                     stdout=write_end, stderr=subprocess.PIPE)
        finally:
            os.close(write_end)
        with sniff:
            stdout.readline()
            stdout.close()  # as head does after its line
            _, errors = sniff.communicate(timeout=60)
    assert sniff.returncode == 141
    assert errors == b""
