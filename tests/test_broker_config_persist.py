"""UPDATE_BROKER_CONFIG persists the whole configuration to the file the broker was started with
(Java 4.9.8's Configuration.update then persist, through MixAll.string2File)."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys

import pytest
import trio

from rocketpy.broker.config import BrokerConfig
from rocketpy.codecs import ResponseCode
from rocketpy.codecs.codes import RequestCode
from rocketpy.javacompat import properties
from rocketpy.testing import broker_client, free_broker_port, read_until, running_broker

START = "brokerName=broker-a\nlistenHost=127.0.0.1\nfileReservedTime=48\nadminCredential=\n"


def _conf(tmp_path) -> str:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "broker.conf")
    with open(path, "w") as f:
        f.write(START)
    return path


async def _get_config(c) -> tuple[dict[str, str], dict[str, int]]:  # type: ignore[no-untyped-def]
    r = await c.invoke(RequestCode.GET_BROKER_CONFIG)
    assert r.code == ResponseCode.SUCCESS
    return properties.loads(r.body.decode()), json.loads(r.ext_fields["version"])


async def test_update_rewrites_the_config_file_and_a_restart_keeps_it(tmp_path):
    path = _conf(tmp_path)
    store = str(tmp_path / "store")
    async with running_broker(store, config_path=path) as broker:
        async with broker_client(broker.address) as c:
            _, version = await _get_config(c)
            assert version["counter"] == 0
            r = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, b"fileReservedTime=72\nnoSuchKey=1\n")
            assert r.code == ResponseCode.SUCCESS
            served, version = await _get_config(c)
    assert version["counter"] == 1 and served["fileReservedTime"] == "72"
    assert "noSuchKey" not in served  # mergeIfExist: a key the configuration lacks is ignored
    written = properties.load_file(path)
    # the whole configuration, as GET_BROKER_CONFIG shows it, plus rocketpy's own keys the file had
    assert {k: v for k, v in written.items() if k in served} == served
    assert written["listenHost"] == "127.0.0.1" and "noSuchKey" not in written
    # MixAll.string2File: the previous text kept as .bak, no .tmp left behind
    with open(path + ".bak") as f:
        assert f.read() == START
    assert not os.path.exists(path + ".tmp")
    assert BrokerConfig.load(path, strict=True).store.file_reserved_time == 72
    async with running_broker(store, config_path=path) as broker:
        assert broker.config.store.file_reserved_time == 72
        async with broker_client(broker.address) as c:
            served, _ = await _get_config(c)
            assert served["fileReservedTime"] == "72"


async def test_black_listed_or_empty_update_writes_nothing(tmp_path):
    path = _conf(tmp_path)
    async with running_broker(str(tmp_path / "store"), config_path=path) as broker:
        async with broker_client(broker.address) as c:
            r = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, b"fileReservedTime=72\nbrokerConfigPath=/x\n")
            assert r.code == ResponseCode.NO_PERMISSION
            # an empty body reaches Java as null: SUCCESS, no new version, no write (checked on Java 4.9.8)
            r = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, b"")
            assert r.code == ResponseCode.SUCCESS
            served, version = await _get_config(c)
    assert version["counter"] == 0 and served["fileReservedTime"] == "48"
    with open(path) as f:
        assert f.read() == START
    assert sorted(os.listdir(tmp_path)) == ["broker.conf", "store"]


async def test_without_a_file_it_persists_under_the_store_root(tmp_path):
    store = tmp_path / "store"
    async with running_broker(str(store)) as broker:
        async with broker_client(broker.address) as c:
            r = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, b"fileReservedTime=24\n")
            assert r.code == ResponseCode.SUCCESS
    assert properties.load_file(str(store / "config" / "broker.properties"))["fileReservedTime"] == "24"


async def test_write_failure_still_answers_success_and_logs_one_line(tmp_path, caplog):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")  # a file where the config's directory would be: no write can succeed, even as root
    path = str(blocker / "broker.conf")
    async with running_broker(str(tmp_path / "store"), config_path=path) as broker:
        async with broker_client(broker.address) as c:
            caplog.clear()
            with caplog.at_level(logging.ERROR, logger="rocketpy"):
                r = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, b"fileReservedTime=72\n")
            assert r.code == ResponseCode.SUCCESS  # as Java: persist's IOException is only logged
            errors = [rec for rec in caplog.records if rec.levelno >= logging.ERROR]
            assert len(errors) == 1 and path in errors[0].getMessage() and errors[0].exc_info is None
            served, version = await _get_config(c)
            assert served["fileReservedTime"] == "72" and version["counter"] == 1
            # the broker keeps serving
            r = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, b"fileReservedTime=73\n")
            assert r.code == ResponseCode.SUCCESS


@pytest.mark.timeout(120)
async def test_mqbroker_c_file_is_rewritten_by_mqadmin_update_broker_config(tmp_path):
    port = free_broker_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=broker-a\nlistenHost=127.0.0.1\nlistenPort={port}\nbrokerIP1=127.0.0.1\n"
                    f"storePathRootDir={tmp_path / 'store'}\nvipChannelEnable=false\n"
                    f"mappedFileSizeCommitLog={4 * 1024 * 1024}\nfileReservedTime=48\n")
    env = {**os.environ, "ROCKETMQ_LOG_DIR": str(tmp_path / "logs"), "NAMESRV_ADDR": ""}

    def launcher(main: str, *argv: str) -> list[str]:
        return [sys.executable, "-c", f"import sys; {main}; sys.exit(main())", *argv]

    proc = await trio.lowlevel.open_process(
        launcher("from rocketpy.broker.cli import mqbroker as main", "-c", str(conf)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None
        with trio.fail_after(30):
            await read_until(proc.stdout, b"serving on", "mqbroker")
        done = await trio.run_process(
            launcher("from rocketpy.mqadmin.launcher import main", "updateBrokerConfig", "-b",
                     f"127.0.0.1:{port}", "-k", "fileReservedTime", "-v", "72"),
            capture_stdout=True, capture_stderr=True, check=False, env=env)
        assert done.returncode == 0, done.stderr.decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        with trio.fail_after(20):
            await proc.wait()
    assert properties.load_file(str(conf))["fileReservedTime"] == "72"
    assert "fileReservedTime=48\n" in (tmp_path / "broker.conf.bak").read_text()
