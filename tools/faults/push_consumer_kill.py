"""The push consumer kill -9 run of issue 47: how much a crashed push consumer redelivers, ours beside Java's.

A NameServer and broker (``rocketpy serve``, or the Java 4.9.8 ones with ``--servers java``), a topic of
``--queues`` queues x ``--per-queue`` messages (bodies ``queue:index``), then per consumer implementation:

1. a consumer process (ours: this file's ``child`` mode, a ``PushConsumer`` whose blocking listener sleeps
   ``--sleep`` seconds a message; Java: ``tools/faults/java/SlowPushConsumer.java``, a
   ``DefaultMQPushConsumer`` with the same listener; both CONSUME_FROM_FIRST_OFFSET, 20 consume threads,
   batches of 1, offsets persisted every 5 s) says each message it consumed on stdout;
2. every second the group's committed offsets are read from the broker (GET_CONSUME_STATS, what
   ``mqadmin consumerProgress`` shows) beside the consumed prefix of each queue (the lowest offset not yet
   consumed, from the child's lines): ``lag`` is how far the committed offsets trail it;
3. ``--kill-after`` seconds after the first message was consumed the process is killed (SIGKILL);
4. a second process of the same implementation (no sleep) consumes from the committed offsets until every
   message was seen (or nothing came for ``--idle`` seconds).

Reported: consumed before the kill, the committed offsets then, redelivered (consumed by both processes),
lost (by neither: must be 0), and what the redeliveries were made of: ``held`` (consumed above a lower
offset still in flight: the order's cost) and ``unpersisted`` (the consumed prefix past the committed offset:
the persist interval's cost).

    python tools/faults/push_consumer_kill.py [--impl ours|java|both] [--servers ours|java]
        [--rocketpy-root CHECKOUT] [--json]

Run it with the repository's Python; ``java`` needs the Java reference build (ROCKETMQ_JAVA_REF, default
~/.cache/rocketmq-java-4.9.8) and a JDK (javac). Run it alone on the machine (it measures timing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[2]
#: the consumer process may take its client from another checkout (--rocketpy-root: main's, to compare)
sys.path.insert(0, os.environ.get("ROCKETPY_ROOT", str(ROOT)))

TOPIC = "TopicKill"
JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "SlowPushConsumer.java"


def java_ref_dir() -> Path:
    return Path(os.environ.get("ROCKETMQ_JAVA_REF", "~/.cache/rocketmq-java-4.9.8")).expanduser()


# -- the consumer process (ours) -----------------------------------------------------------------------------
def child(namesrv: str, topic: str, group: str, sleep: float) -> None:
    """Our push consumer with a blocking listener, saying what it consumed (SlowPushConsumer.java's lines)."""
    from rocketpy.client import ClientConfig, PushConsumer
    from rocketpy.codecs.codes import ConsumeFromWhere

    out = threading.Lock()

    def say(line: str) -> None:
        with out:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def listener(msgs, ctx):  # type: ignore[no-untyped-def]
        if sleep > 0:
            time.sleep(sleep * len(msgs))
        for m in msgs:
            say(f"C {m.queue_id} {m.queue_offset} {m.body.decode()}")

    async def run() -> None:
        consumer = PushConsumer(group, listener, config=ClientConfig(namesrv_addr=namesrv),
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe(topic)
        async with consumer:
            say("READY")
            stdin = trio.lowlevel.FdStream(os.dup(0))
            while await stdin.receive_some():  # until stdin closes
                pass

    trio.run(run)


# -- the run ---------------------------------------------------------------------------------------------------
@dataclass
class Run:
    """One consumer process's lines: what it consumed, in order, and when (seconds since it started)."""

    started: float = field(default_factory=time.monotonic)
    ready: float | None = None
    consumed: list[tuple[int, int, float]] = field(default_factory=list)

    def feed(self, line: str) -> None:
        if line == "READY":
            self.ready = time.monotonic() - self.started
        elif line.startswith("C "):
            _c, q, o, _body = line.split(" ", 3)
            self.consumed.append((int(q), int(o), time.monotonic() - self.started))

    def prefix(self, queues: int) -> dict[int, int]:
        """Per queue, the lowest offset not consumed yet."""
        seen: dict[int, set[int]] = {q: set() for q in range(queues)}
        for q, o, _t in self.consumed:
            seen.setdefault(q, set()).add(o)
        out = {}
        for q, offsets in seen.items():
            n = 0
            while n in offsets:
                n += 1
            out[q] = n
        return out


async def _pump(stream: Any, run: Run, log: Path) -> None:
    buf = b""
    with open(log, "ab") as f:
        while chunk := await stream.receive_some(65536):
            f.write(chunk)
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                run.feed(line.decode(errors="replace").strip())


def compile_java(out: Path) -> str:
    ref = java_ref_dir()
    cp = subprocess.run(["bash", str(ref / "bin" / "java-cp.sh")], capture_output=True, text=True,
                        check=True).stdout.strip()
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "-nowarn", "-proc:none", "-encoding", "UTF-8", "-cp", cp, "-d", str(out),
                    str(JAVA_SOURCE)], check=True, capture_output=True)
    return f"{out}:{cp}"


def _command(impl: str, namesrv: str, group: str, sleep: float, work: Path, classpath: str) -> list[str]:
    if impl == "ours":
        return [sys.executable, str(Path(__file__).resolve()), "child", namesrv, TOPIC, group, str(sleep)]
    return ["java", "-Xms128m", "-Xmx512m", f"-Drocketmq.client.logRoot={work}/client-logs", f"-Duser.home={work}",
            "-cp", classpath, "SlowPushConsumer", namesrv, TOPIC, group, str(int(sleep * 1000))]


async def _committed(namesrv: str, group: str) -> dict[int, int]:
    from rocketpy.client import Admin

    async with Admin(namesrv) as admin:
        stats = await admin.consume_stats(group, TOPIC)
    return {mq.queue_id: w.consumer_offset for mq, w in stats.offset_table.items()}


async def run_impl(impl: str, namesrv: str, args: argparse.Namespace, work: Path, classpath: str) -> dict[str, Any]:
    group = f"CGKill_{impl}_{int(time.time())}"
    total = args.queues * args.per_queue
    first = Run()
    env = dict(os.environ, ROCKETPY_ROOT=args.rocketpy_root) if args.rocketpy_root else None
    proc = await trio.lowlevel.open_process(_command(impl, namesrv, group, args.sleep, work, classpath),
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=subprocess.DEVNULL, env=env)
    samples: list[dict[str, Any]] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pump, proc.stdout, first, work / f"{impl}-1.out")
        with trio.fail_after(120):
            while not first.consumed:
                await trio.sleep(0.05)
        t0 = time.monotonic()
        while time.monotonic() - t0 < args.kill_after:
            await trio.sleep(1.0)
            try:
                committed = await _committed(namesrv, group)
            except Exception as exc:  # the broker may not know the group's offsets yet
                committed = {"error": str(exc)}  # type: ignore[dict-item]
            samples.append({"t": round(time.monotonic() - t0, 1), "consumed": len(first.consumed),
                            "committed": committed, "prefix": first.prefix(args.queues)})
        proc.kill()  # SIGKILL: no shutdown, no last persist
        await proc.wait()
        nursery.cancel_scope.cancel()
    if proc.stdin is not None:
        await proc.stdin.aclose()
    await trio.sleep(1.0)
    committed = await _committed(namesrv, group)
    prefix = first.prefix(args.queues)
    before = {(q, o) for q, o, _t in first.consumed}
    # the second process, same implementation, no sleep: from the committed offsets to the end
    second = Run()
    proc2 = await trio.lowlevel.open_process(_command(impl, namesrv, group, 0.0, work, classpath),
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             stderr=subprocess.DEVNULL, env=env)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_pump, proc2.stdout, second, work / f"{impl}-2.out")
        last, seen_count = time.monotonic(), -1
        with trio.move_on_after(180):
            while len(before | {(q, o) for q, o, _t in second.consumed}) < total:
                if len(second.consumed) != seen_count:
                    last, seen_count = time.monotonic(), len(second.consumed)
                elif second.consumed and time.monotonic() - last > args.idle:
                    break
                await trio.sleep(0.2)
        assert proc2.stdin is not None
        await proc2.stdin.aclose()  # a clean shutdown
        with trio.move_on_after(20):
            await proc2.wait()
        if proc2.returncode is None:
            proc2.kill()
            await proc2.wait()
        nursery.cancel_scope.cancel()
    after = {(q, o) for q, o, _t in second.consumed}
    redelivered = before & after
    held = sum(1 for q, o in redelivered if o >= prefix.get(q, 0))
    kill_at = first.consumed[0][2] + args.kill_after
    return {
        "impl": impl,
        "messages": total,
        "consumed_before_kill": len(before),
        "consumed_repeats_before_kill": len(first.consumed) - len(before),
        "rate_per_s": round(len(before) / args.kill_after, 1),
        "committed_at_kill": [committed.get(q, 0) for q in range(args.queues)],
        "consumed_prefix_at_kill": [prefix.get(q, 0) for q in range(args.queues)],
        "highest_consumed_at_kill": [max((o for q2, o in before if q2 == q), default=-1) for q in range(args.queues)],
        "redelivered": len(redelivered),
        "redelivered_held": held,
        "redelivered_unpersisted": len(redelivered) - held,
        "lost": total - len(before | after),
        "second_run_started_at": [min((o for q2, o, _t in second.consumed if q2 == q), default=-1)
                                  for q in range(args.queues)],
        "first_consumed_per_queue_s": [round(min((t for q2, _o, t in first.consumed if q2 == q), default=-1), 2)
                                       for q in range(args.queues)],
        "kill_at_s": round(kill_at, 1),
        "samples": samples,
    }


@asynccontextmanager
async def servers(kind: str, work: Path, queues: int) -> AsyncIterator[tuple[str, str]]:
    """(namesrv, broker) addresses of running servers with the topic made."""
    from compat_tests.servers import create_topic, java_broker, java_namesrv, start_broker_process, wait_for_route
    from rocketpy.testing import free_broker_port, free_port

    if kind == "ours":
        async with trio.open_nursery() as nursery:
            server = await start_broker_process(nursery, work / "serve")
            try:
                await create_topic(server.broker_addr, TOPIC, queues)
                await wait_for_route(server.namesrv_addr, TOPIC)
                yield server.namesrv_addr, server.broker_addr
            finally:
                await server.stop()
        return
    ref = java_ref_dir()
    async with java_namesrv(ref, free_port(), work) as namesrv:
        port = free_broker_port()
        async with java_broker(ref, port, namesrv, work / "java-store", {"brokerIP1": "127.0.0.1"}):
            broker = f"127.0.0.1:{port}"
            await create_topic(broker, TOPIC, queues)
            await wait_for_route(namesrv, TOPIC)
            yield namesrv, broker


async def fill(namesrv: str, queues: int, per_queue: int) -> None:
    from rocketpy.client import Producer, make_message
    from rocketpy.codecs.bodies import MessageQueue

    async with Producer("PGKill", namesrv=namesrv) as p:
        for q in range(queues):
            mq = MessageQueue(topic=TOPIC, broker_name="broker-a", queue_id=q)
            for i in range(0, per_queue, 50):
                await p.send_batch([make_message(TOPIC, f"{q}:{j}") for j in range(i, min(i + 50, per_queue))],
                                   queue=mq)


def _text(result: dict[str, Any]) -> str:
    lines = [" ".join(f"{k}={v}" for k, v in result.items() if k != "samples")]
    for s in result["samples"]:
        prefix = [s["prefix"][q] for q in sorted(s["prefix"])]
        if "error" in s["committed"]:
            lines.append(f"  t={s['t']}s consumed={s['consumed']} committed=? ({s['committed']['error']})")
            continue
        committed = [s["committed"].get(q, 0) for q in sorted(s["prefix"])]
        lag = [p - c for p, c in zip(prefix, committed, strict=True)]
        lines.append(f"  t={s['t']}s consumed={s['consumed']} committed={committed} prefix={prefix} lag={lag}")
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--impl", choices=["ours", "java", "both"], default="both")
    parser.add_argument("--servers", choices=["ours", "java"], default="ours")
    parser.add_argument("--queues", type=int, default=4)
    parser.add_argument("--per-queue", type=int, default=250)
    parser.add_argument("--sleep", type=float, default=0.5, help="the listener's seconds per message")
    parser.add_argument("--kill-after", type=float, default=12.0, help="seconds after the first message consumed")
    parser.add_argument("--idle", type=float, default=10.0, help="second run: stop after this long with nothing new")
    parser.add_argument("--rocketpy-root", help="another checkout whose client our consumer process runs")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    impls = ["ours", "java"] if args.impl == "both" else [args.impl]
    work = Path(tempfile.mkdtemp(prefix="push-kill-"))
    try:
        classpath = compile_java(work / "classes") if "java" in impls else ""
    except (OSError, subprocess.CalledProcessError) as exc:
        sys.exit(f"push_consumer_kill: cannot build SlowPushConsumer against {java_ref_dir()} "
                 f"(set ROCKETMQ_JAVA_REF; javac needed): {exc}")
    async with servers(args.servers, work, args.queues) as (namesrv, _broker):
        await fill(namesrv, args.queues, args.per_queue)
        for impl in impls:
            result = await run_impl(impl, namesrv, args, work, classpath)
            result["servers"] = args.servers
            result["work"] = str(work)
            print(json.dumps(result) if args.json else _text(result), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]))
    else:
        trio.run(main)
