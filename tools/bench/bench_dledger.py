"""A DLedger broker group's send rate: three rocketpy members against three Java 4.9.8 members.

Each implementation in turn (alternating, ``--rounds`` times) runs a three-member group on loopback from
``examples/dledger/broker-n0.conf`` (free ports, its own store; the groups and their processes are
``tools/faults/dledger_failover.py``'s) with its own NameServer (ours: ``python -m rocketpy namesrv``; Java:
``bin/namesrv.sh``), and the official benchmark Producer
(``bin/run-client.sh org.apache.rocketmq.example.benchmark.Producer -w THREADS -s SIZE``) as load. After its
first stats line (warm-up), the Producer's "Send TPS" lines covering ``--seconds`` are the send rate; each
member's CPU (user+sys of all its threads, ``/proc/PID/stat``) over the same window, divided by the messages
sent, is its CPU µs per message: the leader's and the two followers'. ``/proc/loadavg`` is quoted per run.

    flock -x /work/bench.lock python tools/bench/bench_dledger.py [--rounds 1] [--seconds 30] [--json]

``--impl rocketpy`` measures ours alone (so does a machine without ``java``); without the Java reference
build there is no load to run, which it says in one line (exit 1);
``--py-spy DIR`` records a py-spy profile (speedscope JSON) of our leader and one follower over the window.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools" / "faults"))

from dledger_failover import (  # noqa: E402
    BENCH_TOPIC,
    Group,
    RocketpyRoot,
    create_topics,
    java_ref_dir,
    wait_port,
)

from rocketpy.testing import free_port  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_vs_java import cpu_seconds, parse_producer_line  # noqa: E402  (the Java tools' parsers)

#: the benchmark Producer prints its stats every 10 s, each line over the 10 s before it
STATS_PERIOD_S = 10


def loadavg() -> list[float]:
    return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]


def tps_lines(path: Path) -> list[float]:
    """The Producer's periodic "Send TPS: N" figures so far (not its final [Complete] line)."""
    stats = (parse_producer_line(line) for line in path.read_text(errors="replace").splitlines())
    return [s["tps"] for s in stats if s is not None and not s["complete"]]


async def _namesrv(impl: str, work: Path, stack: contextlib.AsyncExitStack) -> str:
    port = free_port()
    if impl == "java":
        from compat_tests.servers import java_namesrv

        return await stack.enter_async_context(java_namesrv(java_ref_dir(), port, work))
    log = open(work / "namesrv.out", "wb")  # noqa: SIM115 - the process writes it until it stops
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "rocketpy", "namesrv", "--listen", f"127.0.0.1:{port}"],
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, HOME=str(work), PYTHONPATH=str(ROOT)), cwd=work,
    )

    async def stop() -> None:
        proc.terminate()
        with trio.move_on_after(15):
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        log.close()

    stack.push_async_callback(stop)
    with trio.fail_after(30):
        while True:
            try:
                s = await trio.open_tcp_stream("127.0.0.1", port)
                await s.aclose()
                break
            except OSError:
                await trio.sleep(0.2)
    return f"127.0.0.1:{port}"


async def run_once(impl: str, args: argparse.Namespace) -> dict[str, Any]:
    from compat_tests.servers import wait_for_route

    work = Path(tempfile.mkdtemp(prefix=f"bench-dledger-{impl}-"))
    rec: dict[str, Any] = {"impl": impl, "load_before": loadavg()}
    bench: subprocess.Popen[bytes] | None = None
    async with contextlib.AsyncExitStack() as stack:
        namesrv = await _namesrv(impl, work, stack)
        group = Group([impl] * 3, work, namesrv)
        for m in group.members:
            m.start()
        try:
            for m in group.members:
                await wait_port(m, 120)
            leader = await group.wait_whole(120)
            await create_topics(group)
            await wait_for_route(namesrv, BENCH_TOPIC, timeout=60)
            out = work / "producer.out"
            with open(out, "wb") as out_file:
                bench = subprocess.Popen(
                    ["bash", str(java_ref_dir() / "bin" / "run-client.sh"),
                     "org.apache.rocketmq.example.benchmark.Producer",
                     "-n", namesrv, "-t", BENCH_TOPIC, "-w", str(args.threads), "-s", str(args.size)],
                    stdout=out_file, stderr=subprocess.STDOUT, start_new_session=True,
                    env=dict(os.environ, JAVA_OPT_EXT="-Xms128m -Xmx512m"),
                )
            lines = math.ceil(args.seconds / STATS_PERIOD_S)
            with trio.fail_after(60 + STATS_PERIOD_S * (lines + 2)):
                while len(tps_lines(out)) < 1:  # warm-up: the first line
                    await trio.sleep(0.05)
                members = [leader] + [m for m in group.members if m is not leader]
                assert all(m.proc is not None for m in members)
                cpu0 = [cpu_seconds(m.proc.pid) for m in members]  # type: ignore[union-attr]
                t0 = time.monotonic()
                spies = _start_py_spy(args, impl, members, lines)
                while len(tps_lines(out)) < 1 + lines:
                    await trio.sleep(0.05)
                cpu1 = [cpu_seconds(m.proc.pid) for m in members]  # type: ignore[union-attr]
                elapsed = time.monotonic() - t0
            for spy in spies:
                spy.wait(30)
            tps = tps_lines(out)[1:1 + lines]
            sent = sum(tps) * STATS_PERIOD_S
            after = await group.leader()
            rec.update(
                seconds=round(elapsed, 1),
                tps_lines=tps,
                send_per_s=round(sum(tps) / len(tps), 1),
                cpu_us_per_msg={
                    "leader": round((cpu1[0] - cpu0[0]) * 1e6 / max(sent, 1), 1),
                    "followers": [round((b - a) * 1e6 / max(sent, 1), 1) for a, b in zip(cpu0[1:], cpu1[1:])],
                },
                cpu_share={  # of one core, over the window
                    "leader": round((cpu1[0] - cpu0[0]) / elapsed, 2),
                    "followers": [round((b - a) / elapsed, 2) for a, b in zip(cpu0[1:], cpu1[1:])],
                },
                leader_changed=after is not leader,
            )
        except (RuntimeError, trio.TooSlowError, OSError) as exc:
            rec["error"] = f"{type(exc).__name__}: {exc}"
            rec["work"] = str(work)
        finally:
            if bench is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(bench.pid, signal.SIGTERM)
                bench.wait()
            for m in group.members:
                m.stop()
    rec["load_after"] = loadavg()
    if "error" not in rec and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return rec


def _start_py_spy(args: argparse.Namespace, impl: str, members: list[Any], lines: int) -> list[subprocess.Popen[bytes]]:
    if args.py_spy is None or impl != "rocketpy":
        return []
    args.py_spy.mkdir(parents=True, exist_ok=True)
    spy = shutil.which("py-spy") or "py-spy"
    return [
        subprocess.Popen(
            [spy, "record", "-p", str(m.proc.pid), "-d", str(lines * STATS_PERIOD_S), "-r", "200", "-f", "raw",
             "-o", str(args.py_spy / f"{name}.txt")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for name, m in (("leader", members[0]), ("follower", members[1]))
    ]


def summary_line(rec: dict[str, Any]) -> str:
    if "error" in rec:
        return f"{rec['impl']:8} ERROR {rec['error']} (kept {rec.get('work')})"
    cpu = rec["cpu_us_per_msg"]
    share = rec["cpu_share"]
    return (
        f"{rec['impl']:8} send/s {rec['send_per_s']:8.1f}  cpu us/msg leader {cpu['leader']:7.1f} followers "
        f"{' '.join(f'{x:7.1f}' for x in cpu['followers'])}  (cores: {share['leader']:.2f} "
        f"{' '.join(f'{x:.2f}' for x in share['followers'])})  load {rec['load_before']} -> {rec['load_after']}"
        + ("  LEADER CHANGED" if rec["leader_changed"] else "")
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--impl", choices=("both", "rocketpy", "java"), default="both")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=30.0, help="measured seconds (whole Producer stats lines)")
    ap.add_argument("--threads", type=int, default=32, help="benchmark Producer threads (-w)")
    ap.add_argument("--size", type=int, default=1024, help="message size (-s)")
    ap.add_argument("--py-spy", type=Path, default=None, help="record py-spy profiles of our leader and a follower")
    ap.add_argument("--rocketpy-root", type=Path, default=ROOT,
                    help="the checkout our brokers run from (default: this one), to measure another")
    ap.add_argument("--keep", action="store_true", help="keep the work directories")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    RocketpyRoot.path = args.rocketpy_root.resolve()
    if not (java_ref_dir() / "bin" / "run-client.sh").exists():
        print(f"no Java reference build at {java_ref_dir()} (ROCKETMQ_JAVA_REF): it drives the load; nothing measured",
              file=sys.stderr)
        return 1
    impls = ["rocketpy", "java"] if args.impl == "both" else [args.impl]
    if "java" in impls and shutil.which("java") is None:
        print("no java on PATH: measuring ours alone", file=sys.stderr)
        impls = ["rocketpy"]
    records = []
    for r in range(args.rounds):
        order = impls if r % 2 == 0 else impls[::-1]
        for impl in order:
            rec = trio.run(run_once, impl, args)
            rec["round"] = r + 1
            records.append(rec)
            if not args.json:
                print(f"round {r + 1} " + summary_line(rec), flush=True)
    if args.json:
        print(json.dumps(records, indent=1))
    return 1 if any("error" in r for r in records) else 0


if __name__ == "__main__":
    sys.exit(main())
