"""The Java launchers' names (``mqnamesrv``, ``mqbroker``, ``mqadmin``) with their flags and help texts, the
log files where operators look, and how the servers start, refuse and stop."""

from __future__ import annotations

import importlib
import json
import logging
import os
import queue
import re
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import trio

from rocketpy import logs
from rocketpy.testing import free_broker_port, free_port, read_until

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "data" / "mqadmin"
LAUNCH = {
    "mqadmin": "from rocketpy.mqadmin.launcher import main",
    "mqbroker": "from rocketpy.broker.cli import mqbroker as main",
    "mqnamesrv": "from rocketpy.namesrv.cli import mqnamesrv as main",
}


def launcher(name: str, *argv: str) -> list[str]:
    """The command line of an entry point (the venv may predate them: run the function itself)."""
    return [sys.executable, "-c", f"import sys; {LAUNCH[name]}; sys.exit(main())", *argv]


def run(name: str, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(launcher(name, *argv), capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def golden_body(path: Path) -> str:
    """A golden file without its ``$ command`` and ``# exit`` header lines."""
    return path.read_text().split("\n", 2)[2]


def test_entry_points_are_declared() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for name in ("mqnamesrv", "mqbroker", "mqadmin", "mqshutdown", "rocketpy"):
        module, func = scripts[name].split(":")
        assert callable(getattr(importlib.import_module(module), func)), name


def test_mqadmin_alone_lists_the_subcommands_as_java() -> None:
    done = run("mqadmin")
    assert done.returncode == 0
    assert done.stdout == golden_body(GOLDEN / "01-help.txt")


def test_rocketpy_admin_alone_lists_the_subcommands() -> None:
    done = subprocess.run([sys.executable, "-m", "rocketpy.cli", "admin"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("   ")]
    assert len(names) == 56 and names[0] == "updateTopic" and "clusterList" in names


def test_mqadmin_help_is_javas_text() -> None:
    """``mqadmin help X`` prints what mqadmin 4.9.8 prints, for every subcommand."""
    from rocketpy.mqadmin.launcher import build_parser
    from rocketpy.mqadmin.usage import usage

    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in choices:
        assert usage(name, choices[name]) == golden_body(GOLDEN / "help" / f"{name}.txt"), name


def test_usage_layout_of_our_parsers_names_javas_options() -> None:
    """The commons-cli layout made from our parsers (for a subcommand mqadmin lacks): each option line names
    Java's short and long flag, as the golden usage does."""
    from rocketpy.mqadmin.launcher import build_parser
    from rocketpy.mqadmin.usage import command_usage as usage

    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    checked = 0
    for path in sorted((GOLDEN / "help").glob("*.txt")):
        if path.stem not in choices:
            continue
        cell = re.compile(r"^ (-\w,--[^<]+?)(?: <arg>)?(?:\s{2,}|$)", re.M)
        theirs = set(cell.findall(golden_body(path)))
        text = usage(path.stem, choices[path.stem])
        assert text.startswith(f"usage: mqadmin {path.stem} ")
        assert max(len(line) for line in text.splitlines()) <= 110
        ours = set(cell.findall(text))
        missing = {c for c in theirs - ours if " " not in c}  # Java's "--machine room" style: not an option name
        assert not missing, (path.stem, missing)
        checked += 1
    assert checked == 56


def test_mqadmin_help_layout_matches_java_for_a_simple_command() -> None:
    """topicRoute has no option group: the usage line is Java's byte for byte."""
    done = run("mqadmin", "help", "topicRoute")
    assert done.returncode == 0
    assert done.stdout.splitlines()[0] == golden_body(GOLDEN / "help" / "topicRoute.txt").splitlines()[0]


def test_mqadmin_unknown_subcommand_and_bad_option() -> None:
    done = run("mqadmin", "noSuchCommand", "-n", "127.0.0.1:1")
    assert done.stdout == golden_body(GOLDEN / "help" / "help-noSuchCommand.txt")
    assert done.returncode == 1
    done = run("mqadmin", "clusterList", "-n", "127.0.0.1:1", "-x")
    assert done.returncode == 1
    assert done.stdout.startswith("usage: mqadmin clusterList ") and " -i,--interval <arg>" in done.stdout
    assert done.stderr == "mqadmin clusterList: unrecognized arguments: -x\n"


def test_rocketpy_admin_bad_option_shows_the_subcommands_usage() -> None:
    done = subprocess.run([sys.executable, "-m", "rocketpy.cli", "admin", "clusterList", "-x"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "usage: rocketpy admin clusterList" in done.stderr
    assert done.stderr.rstrip().endswith("rocketpy admin clusterList: error: unrecognized arguments: -x")


def test_mqbroker_prints_config_with_javas_sources(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-x\nbrokerClusterName=C1\n")
    env = {"NAMESRV_ADDR": "10.0.0.1:9876", "ROCKETMQ_HOME": str(tmp_path)}
    done = run("mqbroker", "-c", str(conf), "-m", env=env)
    assert done.returncode == 0, done.stderr
    important = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert important["brokerName"] == "broker-x" and important["brokerClusterName"] == "C1"
    assert important["namesrvAddr"] == "10.0.0.1:9876"  # NAMESRV_ADDR, as Java's BrokerConfig default
    assert "listenPort" not in important and "brokerRole" in important  # -m: @ImportantField only
    done = run("mqbroker", "-c", str(conf), "-n", "10.0.0.2:9876", "-p", env=env)
    every = dict(line.split("=", 1) for line in done.stdout.splitlines())
    assert every["namesrvAddr"] == "10.0.0.2:9876"  # -n wins over the environment
    assert every["rocketmqHome"] == str(tmp_path) and every["listenPort"] == "10911"
    assert len(every) > 150


#: what Java 4.9.8's ``mqbroker -m`` prints (its @ImportantField fields of BrokerConfig, NettyServerConfig,
#: NettyClientConfig and MessageStoreConfig, in declaration order), read from BrokerStartup's output
JAVA_IMPORTANT = (
    "namesrvAddr brokerIP1 brokerName brokerClusterName brokerId autoCreateTopicEnable autoCreateSubscriptionGroup "
    "msgTraceTopicName traceTopicEnable rejectTransactionMessage fetchNamesrvAddrByAddressServer transactionTimeOut "
    "transactionCheckMax transactionCheckInterval aclEnable storePathRootDir storePathCommitLog "
    "storePathDLedgerCommitLog flushIntervalCommitLog commitIntervalCommitLog flushCommitLogTimed deleteWhen "
    "fileReservedTime maxTransferBytesOnMessageInMemory maxTransferCountOnMessageInMemory "
    "maxTransferBytesOnMessageInDisk maxTransferCountOnMessageInDisk accessMessageInMemoryMaxRatio messageIndexEnable "
    "messageIndexSafe haMasterAddress brokerRole flushDiskType cleanFileForciblyEnable transientStorePoolEnable"
).split()


def test_mqbroker_m_prints_javas_important_fields_only(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-x\n")
    done = run("mqbroker", "-c", str(conf), "-m")
    assert done.returncode == 0, done.stderr
    assert [line.split("=", 1)[0] for line in done.stdout.splitlines()] == JAVA_IMPORTANT


def test_launchers_name_themselves_in_their_errors(tmp_path: Path) -> None:
    """Under mqbroker and mqadmin the one failure line names the launcher, as the operator typed it (they
    said ``rocketpy broker:`` and ``rocketpy admin topicRoute:``); rocketpy's own commands keep their names."""
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=b\nlistenPort=20x911\nfooBar=1\nstorePathRootDir={tmp_path / 'store'}\n")
    done = run("mqbroker", "-c", str(conf), "--no-log-files")
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["mqbroker: warning: unknown broker config key 'fooBar' ignored",
                                        "mqbroker: bad config: listenPort='20x911' is not an integer"]
    nobody = f"127.0.0.1:{free_port()}"
    done = run("mqadmin", "topicRoute", "-n", nobody, "-t", "T")
    assert done.returncode == 1 and done.stderr.startswith(f"mqadmin topicRoute: no name server answered: connect "
                                                           f"to {nobody} failed"), done.stderr
    done = subprocess.run([sys.executable, "-m", "rocketpy.cli", "admin", "topicRoute", "-n", nobody, "-t", "T"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith("rocketpy admin topicRoute: no name server answered")


def test_logs_go_to_javas_files(tmp_path: Path) -> None:
    logs.setup("serve", log_dir=str(tmp_path), stream=False)
    try:
        logging.getLogger("rocketpy.broker").info("boot %s", 1)
        logging.getLogger("rocketpy.broker.ha").warning("slave gone")
        logging.getLogger("rocketpy.store").info("flush")
        logging.getLogger("rocketpy.remoting").warning("refused")
        logging.getLogger("rocketpy.namesrv").info("registered")
        logging.getLogger("rocketpy.client.admin").info("elsewhere")
    finally:
        logs.stop()
    files = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO rocketpy.broker - boot 1\n", files["broker.log"])
    assert " WARN rocketpy.broker.ha - slave gone\n" in files["store.log"] and "flush" in files["store.log"]
    assert "refused" in files["remoting.log"] and "registered" in files["namesrv.log"]
    assert "elsewhere" in files["broker_default.log"]
    logs.setup("namesrv", log_dir=str(tmp_path / "ns"), stream=False, log_format="json")
    try:
        logging.getLogger("rocketpy.remoting").info("conn")
    finally:
        logs.stop()
    line = json.loads((tmp_path / "ns" / "namesrv.log").read_text())  # the NameServer's remoting: namesrv.log
    assert line["level"] == "INFO" and line["logger"] == "rocketpy.remoting" and line["message"] == "conn"


def test_a_server_command_run_in_process_leaves_logging_as_it_was(tmp_path: Path) -> None:
    from rocketpy.cli import main

    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    conf = tmp_path / "broker.conf"
    conf.write_text("listenPort=notaport\n")
    assert main(["broker", "-c", str(conf), "--log-dir", str(tmp_path / "logs")]) == 2
    assert (list(root.handlers), root.level) == before


def test_logs_rotate_by_size_and_count(tmp_path: Path) -> None:
    logs.setup("broker", log_dir=str(tmp_path), stream=False, sizes={"broker.log": (1000, 3)})
    try:
        for i in range(200):
            logging.getLogger("rocketpy.broker").info("line %d %s", i, "x" * 40)
    finally:
        logs.stop()
    names = sorted(p.name for p in tmp_path.glob("broker.log*"))
    assert names == ["broker.log", "broker.log.1", "broker.log.2", "broker.log.3"]
    assert all(p.stat().st_size <= 1000 for p in tmp_path.glob("broker.log*"))
    assert "line 199 " in (tmp_path / "broker.log").read_text()


async def _start(argv: list[str], marker: bytes, env: dict[str, str]) -> tuple[trio.Process, bytes]:
    proc = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                            env={**os.environ, **env})
    assert proc.stdout is not None
    with trio.fail_after(30):
        return proc, await read_until(proc.stdout, marker, argv[2])


async def _stop(proc: trio.Process, within_s: float = 20) -> int:
    """SIGTERM, and the process must be gone within ``within_s``."""
    proc.send_signal(signal.SIGTERM)
    with trio.fail_after(within_s):
        return await proc.wait()


@pytest.mark.timeout(90)
async def test_mqnamesrv_binds_every_interface_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"listenPort={port}\nkvConfigPath={tmp_path}/kv.json\n")
    proc, out = await _start(launcher("mqnamesrv", "-c", str(conf)), b"boot success",
                             {"ROCKETMQ_LOG_DIR": str(tmp_path / "logs")})
    try:
        assert f"listening on 0.0.0.0:{port}".encode() in out
    finally:
        assert await _stop(proc) == 0
    namesrv_log = (tmp_path / "logs" / "namesrv.log").read_text()
    assert "NameServer listening on 0.0.0.0" in namesrv_log
    assert " INFO rocketpy.namesrv - The Name Server boot success. serializeType=JSON\n" in namesrv_log


@pytest.mark.timeout(120)
async def test_serve_second_instance_names_the_store_holder_and_sigterm_stops(tmp_path: Path) -> None:
    ns, broker = free_port(), free_broker_port()
    env = {"ROCKETMQ_LOG_DIR": str(tmp_path / "logs")}
    serve = [sys.executable, "-m", "rocketpy.cli", "serve", "--store", str(tmp_path / "store")]
    proc, _ = await _start([*serve, "--namesrv-port", str(ns), "--broker-port", str(broker)], b"rocketpy serve:", env)
    try:
        # the same store: one line naming it and the process that holds it
        second = await trio.run_process([*serve, "--namesrv-port", str(free_port()), "--broker-port",
                                         str(free_broker_port()), "--no-log-files"],
                                        capture_stdout=True, capture_stderr=True, check=False)
        assert second.returncode == 1
        last = second.stderr.decode().strip().splitlines()[-1]
        assert last.startswith(f"rocketpy serve: cannot run: store {tmp_path / 'store'} is in use by process "
                               f"{proc.pid} (")
        assert "Traceback" not in second.stderr.decode()
        # the NameServer port taken: the line names it
        third = await trio.run_process([*serve[:-1], str(tmp_path / "other"), "--namesrv-port", str(ns),
                                        "--broker-port", str(free_broker_port()), "--no-log-files"],
                                       capture_stdout=True, capture_stderr=True, check=False)
        assert third.returncode == 1
        assert f"cannot listen on 127.0.0.1:{ns}: Address already in use" in third.stderr.decode()
    finally:
        assert await _stop(proc) == 0
    broker_log = (tmp_path / "logs" / "broker.log").read_text()
    assert "boot success" in broker_log and "stopped" in broker_log
    assert f" INFO rocketpy.broker - register broker[0]to name server 127.0.0.1:{ns} OK\n" in broker_log


def test_log_queue_is_bounded_and_says_what_it_dropped() -> None:
    """A flood of log lines faster than the files take them (a transaction check logs one for each of
    thousands of half messages) holds at most the queue's bound in memory, never one record per line;
    past 80 % INFO goes first, as logback's discardingThreshold; the next record says how many went."""
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    handler = logs.BoundedQueueHandler(records, limit=10)
    log = logging.getLogger("rocketpy.test.flood")
    log.propagate = False
    log.setLevel(logging.INFO)
    log.addHandler(handler)
    try:
        for i in range(8):
            log.warning("w%d", i)
        log.info("dropped: past 80 %")
        log.warning("w8")
        log.warning("w9")
        for _ in range(5000):
            log.warning("flood")
        assert records.qsize() == 10
        for i in range(5000):  # tracebacks have as much room again, then they go too
            log.error("e%d", i)
        assert records.qsize() == 20
        got = [records.get_nowait().getMessage() for _ in range(20)]
        assert got[:8] == [f"w{i}" for i in range(8)] and got[9] == "w8"
        assert got[8].startswith("1 log records dropped")  # the INFO past 80 %; w9 and the flood: full
        assert got[10].startswith("5001 log records dropped, 0 of them ERROR")
        assert got[11:] == [f"e{i}" for i in range(9)]
        log.info("after")
        notice, after = records.get_nowait(), records.get_nowait()
        assert (notice.levelname, notice.name) == ("WARNING", "rocketpy.logs")
        assert notice.getMessage().startswith("4991 log records dropped, 4991 of them ERROR or above")
        assert after.getMessage() == "after" and records.empty()
    finally:
        log.removeHandler(handler)
        log.propagate = True
        log.setLevel(logging.NOTSET)


def test_records_dropped_just_before_stop_are_still_told(tmp_path: Path) -> None:
    """A flood that ends the process's logging (no record after it to carry the notice) is still
    counted in the files: stop queues the notice before the listener's last round."""
    logs.setup("broker", log_dir=str(tmp_path), stream=False)
    try:
        (handler,) = [h for h in logging.getLogger().handlers if isinstance(h, logs.BoundedQueueHandler)]
        logging.getLogger("rocketpy.broker").info("kept")
        handler.limit = handler.discard_below_warn_from = 0  # as if the queue were full from here on
        for _ in range(3):
            logging.getLogger("rocketpy.broker").error("lost in the flood")
    finally:
        logs.stop()
    default = (tmp_path / "broker_default.log").read_text()
    assert " WARN rocketpy.logs - 3 log records dropped, 3 of them ERROR or above" in default
    broker = (tmp_path / "broker.log").read_text()
    assert "kept" in broker and "lost in the flood" not in broker
