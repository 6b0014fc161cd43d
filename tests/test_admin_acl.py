"""ACL signing in the client (Java's AclClientRPCHook) and mqadmin's ACL subcommands against our broker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from clusters import Cluster, threaded_cluster

from rocketpy.broker.acl import AclError, PlainAccessValidator
from rocketpy.cli import main
from rocketpy.client.config import ClientConfig
from rocketpy.codecs import RemotingCommand
from rocketpy.codecs.acl_signature import AclClientRPCHook, SessionCredentials
from rocketpy.codecs.codes import RequestCode
from rocketpy.codecs.headers import CreateTopicRequestHeader

PLAIN_ACL = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: RocketAdmin
    secretKey: adminSecret1
    admin: true
  - accessKey: RocketUser
    secretKey: userSecret1
    admin: false
    defaultTopicPerm: DENY
"""


@pytest.fixture
def acl_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    return home


def _create_topic(hook: AclClientRPCHook) -> RemotingCommand:
    header = CreateTopicRequestHeader(topic="SignedTopic", default_topic="TBW102", read_queue_nums=4,
                                      write_queue_nums=4, perm=6, topic_filter_type="SINGLE_TAG",
                                      topic_sys_flag=0, order=False)
    cmd = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header, b"body bytes")
    hook(cmd)
    return cmd


def test_signed_request_passes_the_broker_check(acl_home: Path) -> None:
    validator = PlainAccessValidator.for_home(str(acl_home))
    cmd = _create_topic(AclClientRPCHook(SessionCredentials("RocketAdmin", "adminSecret1")))
    assert cmd.ext_fields is not None and cmd.ext_fields["AccessKey"] == "RocketAdmin"
    validator.check(cmd.code, cmd.ext_fields, cmd.body, "127.0.0.1:40000")
    # signing again (a retry to another broker) replaces the signature, which still verifies
    AclClientRPCHook(SessionCredentials("RocketAdmin", "adminSecret1"))(cmd)
    validator.check(cmd.code, cmd.ext_fields, cmd.body, "127.0.0.1:40000")


def test_wrong_secret_or_changed_body_is_refused(acl_home: Path) -> None:
    validator = PlainAccessValidator.for_home(str(acl_home))
    bad = _create_topic(AclClientRPCHook(SessionCredentials("RocketAdmin", "not-the-secret")))
    with pytest.raises(AclError, match="Check signature failed for accessKey=RocketAdmin"):
        validator.check(bad.code, bad.ext_fields, bad.body, "127.0.0.1:40000")
    changed = _create_topic(AclClientRPCHook(SessionCredentials("RocketAdmin", "adminSecret1")))
    changed.body = b"other bytes"
    with pytest.raises(AclError, match="Check signature failed"):
        validator.check(changed.code, changed.ext_fields, changed.body, "127.0.0.1:40000")


def test_client_config_builds_the_hook() -> None:
    assert ClientConfig(namesrv_addr="x:1").rpc_hook() is None
    hook = ClientConfig(namesrv_addr="x:1", access_key="ak", secret_key="sk12345", security_token="tok").rpc_hook()
    assert hook is not None and hook.credentials == SessionCredentials("ak", "sk12345", "tok")
    with pytest.raises(ValueError):
        ClientConfig(namesrv_addr="x:1", access_key="ak").rpc_hook()


@pytest.fixture
def acl_cluster(acl_home: Path) -> Iterator[Cluster]:
    with threaded_cluster(aclEnable="true", rocketmqHome=str(acl_home)) as c:
        yield c


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


ADMIN_KEYS = ("--aclAccessKey", "RocketAdmin", "--aclSecretKey", "adminSecret1")


def test_acl_subcommands_on_our_broker(acl_cluster: Cluster, acl_home: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    ns, addr = acl_cluster.namesrv, acl_cluster.broker_addr
    cluster_name = acl_cluster.broker.config.broker_cluster_name
    acl_file = acl_home / "conf" / "plain_acl.yml"

    # unsigned: the broker refuses, one line and exit 1
    code, out, err = _run(capsys, "admin", "updateAclConfig", "-n", ns, "-b", addr, "-a", "NewAccount", "-s",
                          "12345678")
    assert code == 1 and "No accessKey is configured" in err and "Traceback" not in err
    # signed with a secret the broker does not know
    code, out, err = _run(capsys, "admin", "updateAclConfig", "-n", ns, "-b", addr, "-a", "NewAccount", "-s",
                          "12345678", "--aclAccessKey", "RocketAdmin", "--aclSecretKey", "wrongSecret")
    assert code == 1 and "Check signature failed" in err

    code, out, err = _run(capsys, "admin", "updateAclConfig", "-n", ns, "-b", addr, "-a", "NewAccount", "-s",
                          "12345678", "-t", "topicA=PUB,topicB=SUB", "-m", "false", *ADMIN_KEYS)
    assert code == 0, err
    assert out.startswith(f"create or update plain access config to {addr} success.\nPlainAccessConfig{{"
                          f"accessKey=NewAccount, ")
    assert "topicPerms=[topicA=PUB, topicB=SUB]" in out and "12345678" not in out
    accounts = {a["accessKey"]: a for a in yaml.safe_load(acl_file.read_text())["accounts"]}
    assert accounts["NewAccount"]["secretKey"] == "12345678"
    assert accounts["NewAccount"]["topicPerms"] == ["topicA=PUB", "topicB=SUB"]

    code, out, err = _run(capsys, "admin", "updateGlobalWhiteAddr", "-n", ns, "-c", cluster_name, "-g",
                          "10.10.*.*,192.168.0.*", *ADMIN_KEYS)
    assert code == 0, err
    assert out == f"update global white remote addresses to {addr} success.\n"
    assert yaml.safe_load(acl_file.read_text())["globalWhiteRemoteAddresses"] == ["10.10.*.*", "192.168.0.*"]

    code, out, err = _run(capsys, "admin", "clusterAclConfigVersion", "-n", ns, "-c", cluster_name, *ADMIN_KEYS)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["#Cluster", "Name", "#Broker", "Name", "#Broker", "Addr", "#AclFilePath",
                                "#AclConfigVersionNum", "#AclLastUpdateTime"]
    row = lines[1].split()
    assert row[:4] == [cluster_name, "broker-a", addr, str(acl_file)]
    assert int(row[4]) >= 2  # two updates so far
    assert lines[-1] == "get cluster's plain access config version success."

    code, out, err = _run(capsys, "admin", "clusterAclConfigVersion", "-n", ns, "-b", addr, "--json", *ADMIN_KEYS)
    assert code == 0, err
    import json

    rows = json.loads(out)
    assert rows[0]["aclFilePath"] == str(acl_file) and rows[0]["brokerAddr"] == addr

    code, out, err = _run(capsys, "admin", "deleteAclConfig", "-n", ns, "-c", cluster_name, "-a", "NewAccount",
                          *ADMIN_KEYS)
    assert code == 0, err
    assert out == f"delete plain access config account from {addr} success.\naccount's accesskey is:NewAccount"
    assert "NewAccount" not in {a["accessKey"] for a in yaml.safe_load(acl_file.read_text())["accounts"]}


def test_credentials_from_tools_yml(acl_cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    tools_home = tmp_path / "tools-home"
    (tools_home / "conf").mkdir(parents=True)
    (tools_home / "conf" / "tools.yml").write_text("accessKey: RocketAdmin\nsecretKey: adminSecret1\n")
    monkeypatch.setenv("ROCKETMQ_HOME", str(tools_home))
    code, out, err = _run(capsys, "admin", "clusterAclConfigVersion", "-n", acl_cluster.namesrv, "-b",
                          acl_cluster.broker_addr)
    assert code == 0, err
    assert out.endswith("get broker's plain access config version success.\n")
    # an option without its partner is a usage error
    code, out, err = _run(capsys, "admin", "clusterAclConfigVersion", "-n", acl_cluster.namesrv, "-b",
                          acl_cluster.broker_addr, "--aclAccessKey", "RocketAdmin")
    assert code == 2 and "needs both --aclAccessKey and --aclSecretKey" in err
