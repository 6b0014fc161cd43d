"""ACL with ``aclPlainFile`` naming an absolute path and no rocketmqHome (issue #13): the file is read; a
named file that does not exist stops the broker with one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketpy.broker.acl import AclError, PlainAccessValidator, parse_request, sign_request
from rocketpy.codecs import RemotingCommand

RULES = """\
globalWhiteRemoteAddresses:
accounts:
  - accessKey: absAccess
    secretKey: absSecret12
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
"""


def signed(ak: str, secret: str) -> RemotingCommand:
    cmd = RemotingCommand(code=28, ext_fields={})  # GET_BROKER_RUNTIME_INFO: an account, no resource
    sign_request(cmd, ak, secret)
    return cmd


def validate(v: PlainAccessValidator, cmd: RemotingCommand) -> None:
    v.manager.validate(parse_request(cmd.code, cmd.ext_fields, cmd.body, "127.0.0.1:5555"))


def test_absolute_plain_file_without_home_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    acl = tmp_path / "elsewhere" / "my_acl.yml"
    acl.parent.mkdir()
    acl.write_text(RULES)
    # a conf/acl directory under the working directory must not be taken for the home's
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conf" / "acl").mkdir(parents=True)
    (tmp_path / "conf" / "acl" / "stray.yml").write_text(RULES.replace("absAccess", "strayAccess"))
    v = PlainAccessValidator.for_home(None, str(acl))
    assert v.manager.files == [str(acl)]
    validate(v, signed("absAccess", "absSecret12"))
    with pytest.raises(AclError, match="No acl config for strayAccess"):
        validate(v, signed("strayAccess", "absSecret12"))


def test_a_named_plain_file_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="aclPlainFile .*missing.yml does not exist"):
        PlainAccessValidator.for_home(None, str(tmp_path / "nowhere" / "missing.yml"))
    with pytest.raises(FileNotFoundError, match="relative to rocketmqHome"):
        PlainAccessValidator.for_home(str(tmp_path), "conf/missing/acl.yml")


def test_broker_cli_refuses_a_missing_acl_file_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    conf = tmp_path / "broker.conf"
    conf.write_text(f"aclEnable=true\naclPlainFile={tmp_path / 'missing.yml'}\nstorePathRootDir={tmp_path / 's'}\n"
                    "listenPort=0\nlistenHost=127.0.0.1\n")
    result = subprocess.run([sys.executable, "-m", "rocketpy", "broker", "-c", str(conf)], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "missing.yml does not exist" in lines[0], result.stderr
