"""The broker as a separate process with its store on a 48 MiB tmpfs that producers fill: it never dies,
refuses sends with SERVICE_NOT_AVAILABLE (14) while the disk is full, takes them again once space is
freed, restarts on the full store, and every acknowledged message is read back afterwards (unless a
logged forced deletion removed its CommitLog file); ``rocketpy store check`` finds nothing wrong.

Needs root for ``mount -t tmpfs`` (skipped with the reason otherwise)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from test_broker_crash import CONF
from test_broker_crash import _start as start_broker

from rocketpy.codecs import ResponseCode
from rocketpy.testing import SendLoad, broker_client, pull_queues

MIB = 1 << 20
TOPIC = "TDiskFull"
_DELETED = re.compile(r"deleted CommitLog file \S+, offsets \[(\d+), (\d+)\)")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 48 MiB tmpfs, unmounted afterwards."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


async def _stop(proc: trio.Process) -> int:
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await proc.wait()
    return proc.returncode


@pytest.mark.slow  # about 30 s
async def test_full_disk_refuses_sends_and_the_broker_survives(tmp_path: Path, small_disk: Path) -> None:
    ballast = small_disk / "ballast"
    with open(ballast, "wb") as f:
        f.write(b"\xff" * (8 * MIB))  # freed later: the operator's "make room"
    store = small_disk / "store"
    conf = tmp_path / "broker.conf"
    # 4 MiB CommitLog files, as in the issue
    text = CONF.format(flush="ASYNC_FLUSH", store=store)
    conf.write_text(text.replace("mappedFileSizeCommitLog = 1048576", "mappedFileSizeCommitLog = 4194304"))
    log = tmp_path / "broker.log"
    proc, addr = await start_broker(str(conf), str(log))
    load = SendLoad(addr, TOPIC)
    try:
        # fill the disk: sends are refused with 14 (not a dead broker)
        assert await load.run_until(lambda: load.refused_since_ok >= 200, timeout=120)
        assert proc.returncode is None and not load.broken, "the broker died"
        assert load.refusal_remark.startswith(
            "service not available now. It may be caused by one of the following reasons: the broker's disk is "
            "full [CL:"
        )
        full_acked = len(load.acked)
        assert full_acked > 1000
        # reads go on while the disk is full
        async with broker_client(addr) as c:
            resp, msgs = await c.pull("READER", TOPIC, 0, 0)
            assert resp.code == ResponseCode.SUCCESS and msgs
        # make room: sends are taken again (the disk check runs every 10 s)
        os.remove(ballast)
        assert await load.run_until(lambda: len(load.acked) >= full_acked + 200, timeout=60)
        assert proc.returncode is None and not load.broken, "the broker died"
        # full again, then a clean stop
        assert await load.run_until(lambda: load.refused_since_ok >= 50, timeout=120)
        assert await _stop(proc) == 0
        # restart on the full store: it comes up and serves
        proc, addr = await start_broker(str(conf), str(log))
        got = await pull_queues(addr, TOPIC, load.queues)
        async with broker_client(addr) as c:
            r = await c.send(TOPIC, b"after restart", queue_id=0)
            assert r is not None and r.code in (ResponseCode.SUCCESS, ResponseCode.SERVICE_NOT_AVAILABLE)
        assert proc.returncode is None, "the restarted broker died"
    finally:
        await _stop(proc)
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-3000:]
    deleted = [(int(a), int(b)) for a, b in _DELETED.findall(text)]
    lost = load.lost(got, deleted)
    assert not lost, f"{len(lost)} of {len(load.acked)} acknowledged messages lost: {lost[:5]}"
    assert not load.other, load.other
    check = subprocess.run(
        [sys.executable, "-m", "rocketpy.cli", "store", "check", str(store)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    print(
        f"acknowledged {len(load.acked)}, refused with 14: {load.refused}, "
        f"deletions logged: {len(deleted)}, lost: {len(lost)}"
    )


_FULL_TMPFS_SCRIPT = """
import os, sys
from rocketpy.store import MessageStore, MessageStoreConfig, MessageExtBrokerInner, PutMessageStatus
root = sys.argv[1]
cfg = MessageStoreConfig(store_path_root_dir=root + "/store", mapped_file_size_commit_log=16 << 20,
                         max_hash_slot_num=100000, max_index_num=400000)
def msg(i):
    return MessageExtBrokerInner(topic="T", queue_id=i % 4, body=b"%d-" % i + b"x" * 1000,
                                 properties={"KEYS": "k%d" % i}, born_host="127.0.0.1:1", store_host="127.0.0.1:2")
with MessageStore(cfg) as store:
    for i in range(3000):
        assert store.put_message(msg(i)).is_ok
# every block of the filesystem taken: files are written past their allocated part never, read past it never
with open(root + "/ballast", "wb") as f:
    try:
        while True:
            f.write(b"\\xff" * 65536)
            f.flush()
    except OSError:
        pass
assert os.statvfs(root).f_bavail == 0
for abnormal in (False, True):
    if abnormal:
        open(root + "/store/abort", "wb").close()  # as after a crash: every record checked again
    with MessageStore(cfg) as store:
        got = store.get_message("T", 1, 0, 32)
        assert got is not None and len(got.messages) == 32
        statuses = {store.put_message(msg(i)).status for i in range(3000, 6000)}
        assert statuses <= {PutMessageStatus.PUT_OK, PutMessageStatus.SERVICE_NOT_AVAILABLE}, statuses
        assert PutMessageStatus.SERVICE_NOT_AVAILABLE in statuses
print("ok")
"""


async def test_a_store_on_a_full_tmpfs_reopens_and_refuses_without_a_fault(tmp_path: Path, small_disk: Path) -> None:
    """Files allocated by chunks on a filesystem with no block left: recovery looks just past the written
    ends and puts reach the allocated end, neither touching a page that is not there (a SIGBUS, exit -7)."""
    done = subprocess.run([sys.executable, "-c", _FULL_TMPFS_SCRIPT, str(small_disk)], capture_output=True, text=True)
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    check = subprocess.run(
        [sys.executable, "-m", "rocketpy.cli", "store", "check", str(small_disk / "store")],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-2000:]
