"""Every example runs to completion against a live cluster.

The examples are subprocesses talking to our NameServer and broker on 127.0.0.1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketpy.pytest_plugin import Cluster

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
EXPECT = {
    "producer_sync.py": "delayed SEND_OK",
    "producer_async.py": "future: SEND_OK",
    "producer_oneway.py": "sent 5 oneway",
    "producer_batch.py": "SEND_OK: 10 messages",
    "ordered_producer.py": "order 2 shipped",
    "orderly_consumer.py": "every order arrived in sequence",
    "push_consumer_retry.py": "all consumed",
    "broadcast_consumer.py": "both consumers got all 3",
    "lite_pull_seek.py": "after seek: ['lite 3', 'lite 4']",
    "transaction_producer.py": "commit it",
    "request_reply.py": "reply: pong: ping",
    "asyncio_producer.py": "SEND_OK",
    "blocking_producer.py": "callback: SEND_OK",
    "blocking_consumer.py": "pull: all polled",
    "asyncio_consumer.py": "all consumed",
    "starlette_service.py": "every order consumed",
}


@pytest.fixture
def cluster(rocketmq_session_cluster: Cluster) -> Cluster:
    """rocketpy's pytest plugin's session cluster (shared with other example-like tests)."""
    return rocketmq_session_cluster


def test_every_example_is_tested() -> None:
    assert {p.name for p in EXAMPLES.glob("*.py")} == set(EXPECT)


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_example(name: str, cluster: Cluster, tmp_path: Path) -> None:
    env = {**os.environ, "ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, str(EXAMPLES / name), "-n", cluster.namesrv], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert EXPECT[name] in proc.stdout, proc.stdout + proc.stderr
