"""The full-disk run of issue 24, against our broker and/or the Java 4.9.8 one.

A 48 MiB tmpfs (root: ``mount -t tmpfs``) holds the store (4 MiB CommitLog files) and an 8 MiB ballast
file; 8 producers (rocketpy.testing.SendLoad, 2 KiB bodies) send until the disk is full (500 refusals
in a row, or the broker died); the ballast is deleted (8 MiB freed) and the broker restarted (stopped
first if it is still up); the producers run another ``--after`` seconds (long enough for the clean-up
service, which starts a minute after the broker, to run); then the broker is restarted once more and
every queue read back. Printed per broker: acknowledged, refused with 14, other answers, whether and
how the broker died, CommitLog file deletions logged (and the acknowledged messages they held), lost
(acknowledged, not read back, not in a logged deletion), and ``rocketpy store check``'s verdict.

    python tools/faults/disk_full.py [--impl ours|java|both] [--after 75] [--json]

Run it with the repository's Python (it imports rocketpy and compat_tests); needs root.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocketpy.testing import SendLoad, free_broker_port, free_port, pull_queues, read_until  # noqa: E402

MIB = 1 << 20
TOPIC = "TDiskFull"
STORE_KEYS = {
    "mappedFileSizeCommitLog": str(4 * MIB),
    "mappedFileSizeConsumeQueue": "60000",
    "maxHashSlotNum": "1000",
    "maxIndexNum": "4000",
    "flushDiskType": "ASYNC_FLUSH",
}
#: ours: "deleted CommitLog file PATH, offsets [A, B)"; Java's MappedFile.destroy: "delete file[REF:n] PATH OK"
_OURS_DELETED = re.compile(r"deleted CommitLog file \S+, offsets \[(\d+), (\d+)\)")
_JAVA_DELETED = re.compile(r"delete file\[REF:-?\d+\] \S*/commitlog/(\d{20}) OK")


def java_ref_dir() -> Path:
    """The Java reference install (ROCKETMQ_JAVA_REF, default ~/.cache/rocketmq-java-4.9.8)."""
    return Path(os.environ.get("ROCKETMQ_JAVA_REF", "~/.cache/rocketmq-java-4.9.8")).expanduser()


class Broker:
    """One implementation's broker process: start, stop, whether it died, its log."""

    def __init__(self, impl: str, store: Path, work: Path) -> None:
        self.impl = impl
        self.store = store
        self.work = work
        self.log = work / f"{impl}-broker.log"
        self.proc: trio.Process | None = None
        self.addr = ""
        self.exits: list[int] = []  # return codes of every stop or death
        self.namesrv = ""

    async def start(self) -> None:
        if self.impl == "ours":
            conf = self.work / "broker.conf"
            keys = {
                "brokerName": "broker-a",
                "brokerIP1": "127.0.0.1",
                "listenPort": "0",
                "listenHost": "127.0.0.1",
                "vipChannelEnable": "false",
                "storePathRootDir": str(self.store),
                **STORE_KEYS,
            }
            conf.write_text("".join(f"{k} = {v}\n" for k, v in keys.items()))
            with open(self.log, "ab") as err:
                self.proc = await trio.lowlevel.open_process(
                    [sys.executable, "-m", "rocketpy.cli", "broker", "-c", str(conf)],
                    stdout=subprocess.PIPE,
                    stderr=err,
                )
            assert self.proc.stdout is not None
            with trio.fail_after(60):
                buf = await read_until(self.proc.stdout, b"serving on", "broker")
            line = next(ln for ln in buf.decode().splitlines() if "serving on" in ln)
            self.addr = line.rsplit(" ", 1)[1]
            return
        ref = java_ref_dir()
        port = free_broker_port()
        extra = {**STORE_KEYS, "autoCreateTopicEnable": "true"}
        env = {
            "BROKER_PORT": str(port),
            "NAMESRV_ADDR": self.namesrv,
            "STORE_DIR": str(self.store),
            "BROKER_NAME": "broker-a",
            "BROKER_CONF_EXTRA": "\n".join(f"{k}={v}" for k, v in extra.items()),
        }
        with open(self.log, "ab") as err:
            self.proc = await trio.lowlevel.open_process(
                ["bash", str(ref / "bin" / "broker.sh")],
                stdout=subprocess.PIPE,
                stderr=err,
                env=dict(os.environ, **env),
            )
        assert self.proc.stdout is not None
        with trio.fail_after(90):
            await read_until(self.proc.stdout, b"boot success", "Java broker")
        self.addr = f"127.0.0.1:{port}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            with trio.move_on_after(40):
                await self.proc.wait()
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
        self.exits.append(self.proc.returncode)
        self.proc = None

    def deleted(self) -> list[tuple[int, int]]:
        """[start, end) of every CommitLog file a deletion was logged for."""
        if self.impl == "ours":
            text = self.log.read_text(errors="replace")
            return [(int(a), int(b)) for a, b in _OURS_DELETED.findall(text)]
        store_log = java_ref_dir() / "run" / "logs" / "rocketmqlogs" / "store.log"
        text = store_log.read_text(errors="replace") if store_log.exists() else ""
        text = "\n".join(ln for ln in text.splitlines() if str(self.store) in ln)
        starts = sorted({int(a) for a in _JAVA_DELETED.findall(text)})
        return [(a, a + 4 * MIB) for a in starts]


@asynccontextmanager
async def small_disk(work: Path) -> AsyncIterator[Path]:
    mnt = work / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@asynccontextmanager
async def namesrv_for(impl: str, work: Path) -> AsyncIterator[str]:
    if impl == "ours":
        yield ""
        return
    from compat_tests.servers import java_namesrv

    async with java_namesrv(java_ref_dir(), free_port(), work) as addr:
        yield addr


async def run_one(impl: str, after: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"disk-full-{impl}-"))
    async with small_disk(work) as mnt, namesrv_for(impl, work) as namesrv:
        ballast = mnt / "ballast"
        ballast.write_bytes(b"\xff" * (8 * MIB))
        broker = Broker(impl, mnt / "store", work)
        broker.namesrv = namesrv
        await broker.start()
        load = SendLoad(broker.addr, TOPIC)
        out: dict[str, Any] = {"impl": impl}
        try:
            await load.run_until(lambda: load.refused_since_ok >= 500 or not broker.alive, timeout=180)
            out["filled"] = {"acked": len(load.acked), "refused": load.refused, "broker_alive": broker.alive}
            ballast.unlink()
            await broker.stop()
            await broker.start()
            load.addr = broker.addr
            load.broken = False
            await load.run_until(lambda: not broker.alive, timeout=after)
            out["after_restart_alive"] = broker.alive and not load.broken
            await broker.stop()
            await broker.start()
            got = await pull_queues(broker.addr, TOPIC, load.queues)
        finally:
            await broker.stop()
        deleted = broker.deleted()
        lost = load.lost(got, deleted)
        in_deleted = sum(1 for _b, phys in load.acked.values() if any(a <= phys < b for a, b in deleted))
        check = subprocess.run(
            [sys.executable, "-m", "rocketpy.cli", "store", "check", str(mnt / "store")], capture_output=True, text=True
        )
        out.update(
            acked=len(load.acked),
            refused_14=load.refused,
            other_answers=load.other,
            timeouts=load.timeouts,
            exit_codes=broker.exits,  # 0: stopped by us; 135: SIGBUS (128 + 7); 143: SIGTERM
            deletions_logged=len(deleted),
            acked_in_deleted_files=in_deleted,
            read_back=len(got),
            lost=len(lost),
            store_check=check.returncode,
            store_check_errors=[ln for ln in check.stdout.splitlines() if "error" in ln.lower()][:5],
            log=str(broker.log),
        )
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", choices=["ours", "java", "both"], default="both")
    parser.add_argument("--after", type=float, default=75.0, help="seconds of load after the restart")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("disk_full: needs root (mount -t tmpfs)")
    impls = ["ours", "java"] if args.impl == "both" else [args.impl]
    for impl in impls:
        result = await run_one(impl, args.after)
        if args.json:
            print(json.dumps(result))
        else:
            print(" ".join(f"{k}={v}" for k, v in result.items()))


if __name__ == "__main__":
    trio.run(main)
