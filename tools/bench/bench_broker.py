"""Broker throughput and latency on 127.0.0.1.

1. Synchronous sends of 1 KiB messages from 32 concurrent producers (SEND_MESSAGE_V2
   with ROCKETMQ binary headers, like the Java benchmark producer): messages/s, p50/p99.
2. End to end: the same producers while consumers long-poll every queue; messages/s
   consumed and the produce->consume latency.

The broker runs in a subprocess (``python -m rocketpy.cli broker``) unless
``--in-process``. Bounded by ``--messages`` and ``--seconds``.

    python tools/bench/bench_broker.py --messages 20000 --seconds 20
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

import trio

from rocketpy.codecs import ResponseCode, SerializeType
from rocketpy.codecs.bodies import TopicConfig  # noqa: F401  (warm import)
from rocketpy.testing import broker_client, read_until, running_broker

TOPIC = "BenchTopic"
QUEUES = 4  # DefaultMQProducer.defaultTopicQueueNums: what auto-creation gives


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


async def start_subprocess(store: str, flush: str) -> tuple[trio.Process, str]:
    conf = os.path.join(store, "bench-broker.conf")
    with open(conf, "w") as f:
        f.write(
            f"brokerName = bench\nbrokerIP1 = 127.0.0.1\nlistenHost = 127.0.0.1\nlistenPort = 0\n"
            f"vipChannelEnable = false\nstorePathRootDir = {store}/store\nflushDiskType = {flush}\n"
            f"mappedFileSizeCommitLog = {256 * 1024 * 1024}\nnamesrvAddr =\n"
        )
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "rocketpy.cli", "broker", "-c", conf], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    with trio.fail_after(30):
        buf = await read_until(proc.stdout, b"serving on", "broker")
    line = next(ln for ln in buf.decode().splitlines() if "serving on" in ln)
    return proc, line.rsplit(" ", 1)[1]


async def bench_send(addr: str, producers: int, total: int, seconds: float, size: int) -> dict[str, float]:
    body = b"x" * size
    lat: list[float] = []
    errors = 0
    sent = 0
    deadline = time.perf_counter() + seconds
    async with broker_client(addr, serialize_type=SerializeType.ROCKETMQ) as c:
        # create the topic first (auto-create answers the first send)
        await c.send(TOPIC, body, queue_id=0)

        async def producer(n: int) -> None:
            nonlocal sent, errors
            while sent < total and time.perf_counter() < deadline:
                sent += 1
                t0 = time.perf_counter()
                r = await c.send(TOPIC, body, queue_id=n % QUEUES)
                lat.append(time.perf_counter() - t0)
                if r is None or r.code != ResponseCode.SUCCESS:
                    errors += 1

        t0 = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for n in range(producers):
                nursery.start_soon(producer, n)
        elapsed = time.perf_counter() - t0
    return {
        "messages": len(lat),
        "errors": errors,
        "seconds": elapsed,
        "msgs_per_s": len(lat) / elapsed,
        "p50_ms": pct(lat, 0.50) * 1000,
        "p99_ms": pct(lat, 0.99) * 1000,
    }


async def bench_e2e(addr: str, producers: int, total: int, seconds: float, size: int) -> dict[str, float]:
    topic = TOPIC + "E2E"
    body_pad = b"y" * max(0, size - 24)
    produced = 0
    consumed = 0
    e2e: list[float] = []
    deadline = time.perf_counter() + seconds
    done = trio.Event()
    async with (
        broker_client(addr, serialize_type=SerializeType.ROCKETMQ) as prod,
        broker_client(addr, serialize_type=SerializeType.ROCKETMQ) as cons,
    ):
        for q in range(QUEUES):
            await prod.send(topic, b"warm", queue_id=q)
        start_offsets = {q: 1 for q in range(QUEUES)}

        async def producer(n: int) -> None:
            nonlocal produced
            while produced < total and time.perf_counter() < deadline:
                produced += 1
                stamp = f"{time.perf_counter():.9f}".encode().rjust(24)
                await prod.send(topic, stamp + body_pad, queue_id=n % QUEUES)

        async def consumer(q: int) -> None:
            nonlocal consumed
            offset = start_offsets[q]
            while not done.is_set():
                resp, msgs = await cons.pull("BenchCG", topic, q, offset, suspend_ms=1000, max_nums=32)
                now = time.perf_counter()
                for m in msgs:
                    e2e.append(now - float(m.body[:24]))
                consumed += len(msgs)
                if resp.ext_fields and "nextBeginOffset" in resp.ext_fields:
                    offset = int(resp.ext_fields["nextBeginOffset"])

        t0 = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for q in range(QUEUES):
                nursery.start_soon(consumer, q)
            async with trio.open_nursery() as pn:
                for n in range(producers):
                    pn.start_soon(producer, n)
            with trio.move_on_after(10):
                while consumed < produced:
                    await trio.sleep(0.01)
            elapsed = time.perf_counter() - t0
            done.set()
            nursery.cancel_scope.cancel()
    return {
        "produced": produced,
        "consumed": consumed,
        "seconds": elapsed,
        "msgs_per_s": consumed / elapsed,
        "e2e_p50_ms": pct(e2e, 0.5) * 1000,
        "e2e_p99_ms": pct(e2e, 0.99) * 1000,
    }


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        if args.in_process:
            async with running_broker(
                os.path.join(tmp, "store"), flushDiskType=args.flush, mappedFileSizeCommitLog=256 * 1024 * 1024
            ) as broker:
                await run_all(broker.address, args)
        else:
            proc, addr = await start_subprocess(tmp, args.flush)
            try:
                await run_all(addr, args)
            finally:
                proc.send_signal(signal.SIGTERM)
                with trio.move_on_after(20):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()


async def run_all(addr: str, args: argparse.Namespace) -> None:
    where = "in-process" if args.in_process else "subprocess"
    print(
        f"broker {addr} ({where}, {args.flush}), {args.producers} producers, {args.size} B bodies, "
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    s = await bench_send(addr, args.producers, args.messages, args.seconds, args.size)
    print(
        f"sync send : {s['messages']:.0f} msgs in {s['seconds']:.2f} s = {s['msgs_per_s']:.0f} msg/s, "
        f"p50 {s['p50_ms']:.2f} ms, p99 {s['p99_ms']:.2f} ms, errors {s['errors']:.0f}"
    )
    e = await bench_e2e(addr, args.producers, args.messages, args.seconds, args.size)
    print(
        f"end to end: {e['consumed']:.0f}/{e['produced']:.0f} msgs in {e['seconds']:.2f} s = "
        f"{e['msgs_per_s']:.0f} msg/s consumed, latency p50 {e['e2e_p50_ms']:.2f} ms, p99 {e['e2e_p99_ms']:.2f} ms"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--producers", type=int, default=32)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--flush", default="ASYNC_FLUSH", choices=["ASYNC_FLUSH", "SYNC_FLUSH"])
    ap.add_argument("--in-process", action="store_true")
    trio.run(main, ap.parse_args())
