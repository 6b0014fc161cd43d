"""Ctrl-C in a trio program that runs the client with a plain ``trio.run(main)``.

Trio raises KeyboardInterrupt in whatever unprotected code runs when the signal comes. A listener that keeps
the CPU (or any of the client's own tasks) got it; it went up the client's hosted nursery, out of trio's system
task, and the run ended with TrioInternalError instead of a KeyboardInterrupt from ``main()``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from rocketpy.pytest_plugin import Cluster

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = '''
import sys, time, trio
from rocketpy.client import ConsumeFromWhere, Producer, PushConsumer, make_message

NAMESRV, TOPIC = sys.argv[1], sys.argv[2]

async def busy(msgs, context):
    print("busy", flush=True)
    end = time.monotonic() + 3
    while time.monotonic() < end:  # the CPU held: the Ctrl-C comes while this runs
        pass

async def main():
    async with Producer("ctrl_c_producer", namesrv=NAMESRV) as producer:
        await producer.send(make_message(TOPIC, "spin"))
    consumer = PushConsumer("ctrl_c_" + TOPIC, busy, namesrv=NAMESRV,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(TOPIC, "*")
    async with consumer:
        await trio.sleep_forever()

try:
    trio.run(main)
except KeyboardInterrupt:
    print("interrupted", flush=True)
'''


@pytest.mark.timeout(90)
def test_ctrl_c_during_a_busy_listener_is_a_keyboard_interrupt_from_main(rocketmq_session_cluster: Cluster,
                                                                         tmp_path: Path) -> None:
    script = tmp_path / "busy.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "out.txt"
    with out.open("w") as sink:
        proc = subprocess.Popen([sys.executable, str(script), rocketmq_session_cluster.namesrv,
                                 f"CtrlC{uuid.uuid4().hex[:8]}"], stdout=sink, stderr=subprocess.PIPE, text=True,
                                env=env)
        try:
            deadline = time.monotonic() + 60
            while "busy" not in out.read_text() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)
            assert "busy" in out.read_text(), proc.stderr.read() if proc.poll() is not None else "no message"
            time.sleep(0.3)  # well inside the listener's three seconds
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert "TrioInternalError" not in err and "Traceback" not in err, err
    assert proc.returncode == 0 and out.read_text().splitlines()[-1] == "interrupted", (out.read_text(), err)
