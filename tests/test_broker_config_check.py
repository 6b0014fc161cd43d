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


@pytest.mark.parametrize(("line", "says"), [
    # Java takes these and then deletes no file on time (its cleaning thread fails at Integer.parseInt, or the
    # hour never comes), or every file at once (a negative reserved time)
    ("deleteWhen=4am", "deleteWhen='4am': '4am' is not an hour of the day (0-23); write the hours files are "
                       "deleted at as 04, or 01;02;03"),
    ("deleteWhen=01;25", "deleteWhen='01;25': '25' is not an hour of the day (0-23)"),
    ("deleteWhen=01; 02", "deleteWhen='01; 02': ' 02' is not an hour of the day (0-23)"),
    ("deleteWhen=;", "deleteWhen=';': it names no hour"),
    ("fileReservedTime=-5", "fileReservedTime=-5 must be 0 or more hours"),
])
def test_delete_hours_and_reserved_times_java_cannot_run_are_refused(line: str, says: str) -> None:
    """Checked at start (and by UPDATE_BROKER_CONFIG, which reads through the same check): one ConfigError
    line, which the command lines print as ``bad config: ...`` and exit 2."""
    from rocketpy.broker.config import BrokerConfig

    key, _, value = line.partition("=")
    with pytest.raises(ConfigError) as refused:
        BrokerConfig.from_properties({key: value}, strict=True)
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("line", ["deleteWhen=04", "deleteWhen=4", "deleteWhen=01;02;03", "deleteWhen=23;",
                                  "fileReservedTime=0", "fileReservedTime=48"])
def test_delete_hours_and_reserved_times_java_runs_are_taken(line: str) -> None:
    from rocketpy.broker.config import BrokerConfig

    key, _, value = line.partition("=")
    cfg = BrokerConfig.from_properties({key: value}, strict=True)
    assert cfg.props[key] == value


def test_warnings_come_first_each_on_its_line_then_the_fatal_one(tmp_path: Path) -> None:
    """An unknown key's warning came from the log thread after the fatal line, on the same line; a warning
    found before a refusal of check_given was never shown."""
    import subprocess
    import sys

    for fatal, says in (("listenPort=20x911", "listenPort='20x911' is not an integer"),
                        ("brokerRole=MASTER", "brokerRole='MASTER' is not one of ASYNC_MASTER, SYNC_MASTER, SLAVE")):
        conf = tmp_path / "b.conf"
        conf.write_text(f"brokerName=b\n{fatal}\nfooBar=1\nautoCreateTopicEnable=yes\n"
                        f"storePathRootDir={tmp_path / 'store'}\n")
        done = subprocess.run([sys.executable, "-m", "rocketpy.cli", "broker", "-c", str(conf), "--no-log-files"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            "rocketpy broker: warning: unknown broker config key 'fooBar' ignored",
            "rocketpy broker: warning: autoCreateTopicEnable=yes is not true or false: read as false (as Java's "
            "Boolean.parseBoolean does)",
            f"rocketpy broker: bad config: {says}",
        ]
