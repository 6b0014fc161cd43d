"""tools/bench/bench_client.py without Java: every phase runs, and --vs-java says in one line it measures ours alone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "bench" / "bench_client.py"
pytestmark = pytest.mark.timeout(120)


def test_phases_without_java(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(TOOL), "--in-process", "--vs-java", "--java-ref", str(tmp_path), "--count", "40",
         "--seconds", "20", "--batch", "8", "--senders", "4", "--window", "8", "--backlog", "2000"],
        capture_output=True, text=True, timeout=110, check=True).stdout
    lines = out.splitlines()
    assert lines[0].startswith("bench_client: no Java reference build") and "measuring ours alone" in lines[0]
    for phase in ("sync", "sync32", "async", "oneway", "batch", "push", "litepull"):
        [line] = [ln for ln in lines if ln.split()[:2] == ["ours", phase]]
        assert "msgs/s" in line and "us cpu/msg" in line
    assert "median (min..max) over rounds:" in lines
    assert not [ln for ln in lines if ln.split()[:1] == ["java"]]


def test_every_api_one_after_the_other_with_ratios_to_trio() -> None:
    out = subprocess.run(
        [sys.executable, str(TOOL), "--in-process", "--apis", "all", "--phases", "sync,sync32,async,push,litepull",
         "--count", "40", "--seconds", "20", "--senders", "4", "--window", "8", "--backlog", "2000"],
        capture_output=True, text=True, timeout=110, check=True).stdout
    lines = out.splitlines()
    for who, phases in (("ours", ("sync", "sync32", "async")), ("aio", ("sync", "sync32", "async")),
                        ("blk", ("sync", "sync32"))):
        for phase in phases:
            [line] = [ln for ln in lines if ln.split()[:2] == [who, phase]]
            sent = int(line.rsplit("(", 1)[1].split()[0])  # "(N msgs, load L)": concurrent senders may overshoot
            assert "msgs/s" in line and sent >= 40
    for who in ("ours", "aio"):  # the consumers drain the backlog on both loops
        for phase in ("push", "litepull"):
            [line] = [ln for ln in lines if ln.split()[:2] == [who, phase]]
            assert "msgs/s" in line
    assert [ln for ln in lines if "asyncio/trio rate" in ln and ln.split()[0] == "sync32"]
    assert [ln for ln in lines if "blocking/trio rate" in ln and ln.split()[0] == "sync32"]
