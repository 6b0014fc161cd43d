"""The README's consumer snippets run as written (against the session cluster) and end cleanly on Ctrl-C: status
0, the consumer shut down, no traceback. The push consumer's ended in a KeyboardInterrupt traceback (issue #47)."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from rocketpy.client import make_message
from rocketpy.client.facade import BlockingProducer
from rocketpy.pytest_plugin import Cluster

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def snippet(marker: str) -> str:
    found = [b for b in BLOCKS if marker in b]
    assert len(found) == 1, f"the README has {len(found)} python blocks with {marker!r}"
    return found[0]


def _lines(stream, into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("marker", ["trio.open_signal_receiver", "asyncio.Event().wait()", "BlockingPushConsumer("],
                         ids=["trio", "asyncio", "blocking"])
def test_a_consumer_snippet_consumes_and_ends_cleanly_on_ctrl_c(marker: str, rocketmq_session_cluster: Cluster,
                                                                tmp_path: Path) -> None:
    topic = f"ReadmeTopic{uuid.uuid4().hex[:8]}"
    code = snippet(marker).replace("127.0.0.1:9876", rocketmq_session_cluster.namesrv).replace("MyTopic", topic)
    code = code.replace("my_consumer_group", f"readme_{uuid.uuid4().hex[:8]}")
    script = tmp_path / "snippet.py"
    script.write_text(code)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get(
        "PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_lines, args=(proc.stdout, out), daemon=True).start()
    printed: list[str] = []
    try:
        # the consumer starts at the queues' ends (a new group): send until it has printed one
        with BlockingProducer("readme_snippet_producer", namesrv=rocketmq_session_cluster.namesrv) as producer:
            deadline = time.monotonic() + 60
            while not any("consumed by the snippet" in line for line in printed) and time.monotonic() < deadline:
                producer.send(make_message(topic, "consumed by the snippet", tags="TagA"))
                try:
                    printed.append(out.get(timeout=0.5))
                except queue.Empty:
                    pass
        assert any("consumed by the snippet" in line for line in printed), printed
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
