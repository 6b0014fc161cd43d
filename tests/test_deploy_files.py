"""The Dockerfile, compose.yaml and systemd units name commands, flags, ports and paths that exist: each
command line parses with our parsers, each port is the default the role listens on, each mounted file is
the one the command reads. (No container engine runs in CI: the image itself is built by hand, see the
README's Deploy section.)"""

from __future__ import annotations

import configparser
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from rocketpy.namesrv.config import NamesrvConfig

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def dockerfile() -> list[tuple[str, str]]:
    """(instruction, arguments) of each Dockerfile line, continuations joined."""
    out: list[tuple[str, str]] = []
    joined = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def parses(argv: list[str]) -> Any:
    """The namespace a command line of ours parses to (SystemExit if it does not)."""
    from rocketpy.cli import build_parser, parse

    name, *rest = argv
    name = Path(name).name
    if name == "rocketpy":
        return parse(build_parser(), rest)
    assert name in SCRIPTS, f"{name} is no entry point"
    from rocketpy.broker.cli import mqbroker_parser
    from rocketpy.mqadmin.launcher import build_parser as mqadmin_parser
    from rocketpy.namesrv.cli import mqnamesrv_parser

    parsers = {"mqadmin": mqadmin_parser, "mqbroker": mqbroker_parser, "mqnamesrv": mqnamesrv_parser}
    return parse(parsers[name](), rest)


def test_dockerfile_builds_the_speedups_and_runs_unprivileged() -> None:
    lines = dockerfile()
    runs = " ".join(args for word, args in lines if word == "RUN")
    assert "pip install" in runs and "'.[console]'" in runs
    assert 'python -c "import rocketpy._speedups"' in runs  # the build fails without the compiled extension
    users = [args for word, args in lines if word == "USER"]
    assert users and users[-1] not in ("root", "0")
    exposed = {int(p) for word, args in lines if word == "EXPOSE" for p in args.split()}
    listen = NamesrvConfig().listen_port
    assert {listen, 10911, 10911 - 2, 10911 + 1, 8080} <= exposed
    cmd = next(args for word, args in reversed(lines) if word == "CMD")
    assert yaml.safe_load(cmd)[0] in SCRIPTS
    copied = [args.split()[:-1] for word, args in lines if word == "COPY" and "--from" not in args]
    for sources in copied:
        for src in sources:
            assert (ROOT / src).exists(), src
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert all(f"!{src}" in ignore for sources in copied for src in sources)


def test_compose_is_the_classic_three_services() -> None:
    services = compose()["services"]
    assert set(services) == {"namesrv", "broker", "console"}
    ns, broker, console = services["namesrv"], services["broker"], services["console"]
    assert ns["command"] == ["mqnamesrv"] and "9876:9876" in ns["ports"]
    assert {"10909:10909", "10911:10911"} <= set(broker["ports"])
    assert "8080:8080" in console["ports"]
    # the broker reads the broker.conf compose mounts, and finds the NameServer by its service name
    argv = broker["command"]
    assert argv[0] == "mqbroker" and argv[argv.index("-n") + 1] == "namesrv:9876"
    conf_in_container = argv[argv.index("-c") + 1]
    mounts = {m.split(":")[1]: m.split(":")[0] for m in broker["volumes"]}
    conf = ROOT / mounts[conf_in_container]
    props = dict(line.split("=", 1) for line in conf.read_text().splitlines() if line and not line.startswith("#"))
    assert props["brokerIP1"] and props["listenPort"] == "10911"
    assert props["storePathRootDir"] in mounts  # the store is a volume
    # the console: our command, on every interface of the container, with logins (test_console_needs_logins)
    args = parses(console["command"])
    assert args.namesrv == ["namesrv:9876"] and args.listen == "0.0.0.0:8080" and args.users
    # health checks are our probe, against the roles' ports
    for service, flag, port in ((ns, "-n", "9876"), (broker, "-b", "10911")):
        test = service["healthcheck"]["test"]
        assert test[1:3] == ["rocketpy", "health"]
        probe = parses(test[1:])
        assert (probe.namesrv if flag == "-n" else probe.broker) == f"127.0.0.1:{port}"


def test_compose_broker_conf_is_a_valid_broker_config(tmp_path: Path) -> None:
    """mqbroker -m with the compose file's broker.conf: read without a warning, brokerIP1 as written."""
    broker = compose()["services"]["broker"]
    mounts = {m.split(":")[1]: m.split(":")[0] for m in broker["volumes"]}
    argv = broker["command"]
    conf = ROOT / mounts[argv[argv.index("-c") + 1]]
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from rocketpy.broker.cli import mqbroker; sys.exit(mqbroker())",
         "-c", str(conf), "-n", "namesrv:9876", "-m"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    important = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert important["namesrvAddr"] == "namesrv:9876" and important["brokerIP1"] == "127.0.0.1"


@pytest.mark.parametrize("unit", sorted((ROOT / "deploy" / "systemd").glob("*.service")), ids=lambda p: p.name)
def test_systemd_units(unit: Path) -> None:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read(unit)
    service = parser["Service"]
    assert service["User"] not in ("root", "0") and service["KillSignal"] == "SIGTERM"
    argv = shlex.split(service["ExecStart"])
    name = Path(argv[0]).name
    assert name in SCRIPTS
    parses(argv)
    for word in argv:
        if word.startswith("/etc/rocketmq/") and name != "rocketpy":
            # the file it reads is one we ship under deploy/
            assert (ROOT / "deploy" / Path(word).name).exists() or Path(word).name == "broker.conf", word
    assert parser["Install"]["WantedBy"] == "multi-user.target"


def test_readme_says_what_is_there() -> None:
    """The README's admin count is the number of subcommands, its Python examples are valid Python, and every
    command its Deploy section names is an entry point."""
    import ast
    import re

    from rocketpy.mqadmin.core import COMMANDS

    text = (ROOT / "README.md").read_text()
    assert f"all {len(COMMANDS)} of mqadmin 4.9.8's subcommands" in text
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        ast.parse(block)
    deploy = text.split("## Deploy", 1)[1].split("\n## ", 1)[0]
    for name in ("mqnamesrv", "mqbroker", "mqadmin"):
        assert f"`{name} " in deploy and name in SCRIPTS


def _console_commands() -> list[tuple[str, list[str]]]:
    """(where, argv) of every console that compose.yaml and the systemd units start."""
    found = [("compose.yaml", compose()["services"]["console"]["command"])]
    for unit in sorted((ROOT / "deploy" / "systemd").glob("*.service")):
        parser = configparser.ConfigParser(interpolation=None, strict=False)
        parser.read(unit)
        argv = shlex.split(parser["Service"]["ExecStart"])
        if Path(argv[0]).name == "rocketpy" and argv[1] == "console":
            found.append((unit.name, argv))
    return found


def test_console_needs_logins_wherever_it_is_started() -> None:
    """Issue #46: compose.yaml published the console on every interface without --users. Every console the
    deploy files start asks for a login, from a users file made from the example shipped beside them."""
    commands = _console_commands()
    assert [where for where, _ in commands] == ["compose.yaml", "rocketmq-console.service"]
    example = ROOT / "deploy" / "console-users.properties.example"
    for where, argv in commands:
        args = parses(argv)
        assert args.users, f"{where} starts the console without --users"
    # compose mounts the users file from deploy/, read-only, and refuses to start without it
    console = compose()["services"]["console"]
    users = parses(console["command"]).users
    (mount,) = [v for v in console["volumes"] if isinstance(v, dict) and v["target"] == users]
    assert mount["type"] == "bind" and mount["read_only"] and mount["bind"]["create_host_path"] is False
    assert mount["source"] == "./deploy/console-users.properties" and not (ROOT / mount["source"]).exists()
    assert "/deploy/console-users.properties" in (ROOT / ".gitignore").read_text().split()
    # the unit's users file, and the README's Deploy section, say how to make the file from the example
    unit = (ROOT / "deploy" / "systemd" / "rocketmq-console.service").read_text()
    assert f"deploy/{example.name} {parses(commands[1][1]).users}" in unit
    deploy = (ROOT / "README.md").read_text().split("## Deploy", 1)[1].split("\n## ", 1)[0]
    assert f"deploy/{example.name}" in deploy


def test_console_users_example_must_be_edited_before_use() -> None:
    """The example names no user as shipped (no known password anywhere), so a console started on it stops with
    one line; its lines, uncommented, are an administrator and a viewer."""
    import argparse

    from rocketpy.console.auth import parse_users
    from rocketpy.console.cli import settings_from

    example = ROOT / "deploy" / "console-users.properties.example"
    text = example.read_text()
    assert parse_users(text) == {}
    args = argparse.Namespace(users=str(example), read_only=False, public_url=None, tls_cert=None, tls_key=None)
    with pytest.raises(ValueError, match="names no user"):
        settings_from(args, "namesrv:9876")
    users = parse_users(text.replace("\n#admin=", "\nadmin=").replace("\n#viewer=", "\nviewer="))
    assert users["admin"].admin and not users["viewer"].admin
