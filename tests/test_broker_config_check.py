"""broker.conf checks at start-up: refused settings are one line and exit 2, doubtful ones warned."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketpy.broker.config_check import check_given
from rocketpy.cli import main
from rocketpy.javacompat.properties import ConfigError


@pytest.mark.parametrize(("line", "says"), [
    ("useTLS=true", "useTLS=true asks for TLS on the remoting port, which rocketpy's broker does not implement"),
    ("enableDLegerCommitLog=true", "enableDLegerCommitLog=true needs dLegerGroup"),
    ("enableDLegerCommitLog=true\ndLegerGroup=g\ndLegerPeers=n0-127.0.0.1:1\ndLegerSelfId=n1",
     "dLegerSelfId=n1 is not one of dLegerPeers (n0)"),
    ("mappedFileSizeCommitLog=-5", "mappedFileSizeCommitLog=-5 must be a positive number"),
    ("mappedFileSizeConsumeQueue=0", "mappedFileSizeConsumeQueue=0 must be a positive number"),
    ("brokerRole=MASTER", "brokerRole='MASTER' is not one of ASYNC_MASTER, SYNC_MASTER, SLAVE"),
    ("flushDiskType=sync", "flushDiskType='sync' is not one of SYNC_FLUSH, ASYNC_FLUSH"),
])
def test_refused_settings_are_one_line_and_exit_2(line: str, says: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "b.conf"
    conf.write_text(f"brokerName=b\n{line}\nstorePathRootDir={tmp_path / 'store'}\n")
    assert main(["broker", "-c", str(conf), "--host", "127.0.0.1", "-p", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and err[0].startswith("rocketpy broker: bad config")
    assert not (tmp_path / "store").exists()  # refused before anything was created


def test_non_boolean_booleans_are_warned_as_java_reads_them() -> None:
    warnings = check_given({"autoCreateTopicEnable": "yes", "aclEnable": "TRUE", "brokerName": "yes"})
    assert warnings == ["autoCreateTopicEnable=yes is not true or false: read as false "
                        "(as Java's Boolean.parseBoolean does)"]


def test_ignored_features_are_warned_and_valid_ones_pass() -> None:
    assert check_given({"transientStorePoolEnable": "true"}) == [
        "transientStorePoolEnable=true ignored: rocketpy's broker does not implement the transient (off-heap) "
        "store pool"]
    assert check_given({"brokerRole": "SLAVE", "useTLS": "false", "mappedFileSizeCommitLog": "1048576"}) == []
    with pytest.raises(ConfigError):
        check_given({"messageStorePlugIn": "com.example.Plugin"})


def test_serve_prints_the_warning_and_reads_false(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from argparse import Namespace

    from rocketpy.broker.cli import serve_configs

    conf = tmp_path / "extra.conf"
    conf.write_text("autoCreateTopicEnable=yes\n")
    args = Namespace(store=str(tmp_path / "store"), host="127.0.0.1", namesrv_port=19876, broker_port=20911,
                     config=str(conf), no_vip=True)
    _, broker = serve_configs(args)
    assert broker.auto_create_topic_enable is False
    assert capsys.readouterr().err == (
        "rocketpy serve: warning: autoCreateTopicEnable=yes is not true or false: read as false "
        "(as Java's Boolean.parseBoolean does)\n")
