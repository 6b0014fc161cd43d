"""rocketpy's pytest plugin as a user's test suite meets it: the fixtures by name, in blocking, asyncio and trio
tests, through the installed ``pytest11`` entry point (no conftest, no import of the plugin)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

USER_TESTS = '''
import asyncio

import pytest
import trio

from rocketpy.client import Producer, make_message
from rocketpy.client.facade import BlockingProducer


def test_blocking(rocketmq_namesrv):
    with BlockingProducer("UserPG1", namesrv=rocketmq_namesrv) as producer:
        assert producer.send(make_message("UserTopic", "b")).send_status.name == "SEND_OK"


def test_asyncio(rocketmq_cluster):
    async def main():
        async with Producer("UserPG2", namesrv=rocketmq_cluster.namesrv) as producer:
            return await producer.send(make_message("UserTopic", "a"))

    assert asyncio.run(main()).send_status.name == "SEND_OK"


def test_trio(rocketmq_cluster):
    async def main():
        async with Producer("UserPG3", namesrv=rocketmq_cluster.namesrv) as producer:
            return await producer.send(make_message("UserTopic", "t"))

    assert trio.run(main).send_status.name == "SEND_OK"


@pytest.mark.rocketmq(broker_names=("broker-x", "broker-y"))
def test_marker(rocketmq_cluster):
    assert [b.config.broker_name for b in rocketmq_cluster.brokers] == ["broker-x", "broker-y"]
'''


@pytest.mark.timeout(180)
def test_the_fixtures_serve_blocking_asyncio_and_trio_tests_and_stop_what_they_started(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "no:randomly", str(tmp_path / "test_user.py")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=170)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout
