"""Client throughput: sync sends/s (one at a time and with concurrent senders) and push-consume msgs/s.

Run against a running server:   python tools/bench/bench_client.py -n 127.0.0.1:9876
or let it start ``rocketpy serve`` (NameServer + broker) in a subprocess on free ports:
                                python tools/bench/bench_client.py [--count 5000] [--seconds 60]
``--in-process`` runs our NameServer and broker in this process instead (on their own thread).
Every phase is bounded by --count and --seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import trio

from rocketpy.client import ClientConfig, ConsumeFromWhere, Producer, PushConsumer, make_message
from rocketpy.client.admin import Admin
from rocketpy.codecs.bodies import TopicConfig

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_subprocess() -> Iterator[str]:
    ns_port, broker_port = free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="rocketpy-bench-") as store:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rocketpy.cli", "serve", "--namesrv-port", str(ns_port), "--broker-port",
             str(broker_port), "--store", store, "--no-vip"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=store)
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", broker_port), 0.2):
                    break
                time.sleep(0.1)
            yield f"127.0.0.1:{ns_port}"
        finally:
            proc.terminate()
            proc.wait(10)


@contextlib.contextmanager
def in_process_server() -> Iterator[str]:
    sys.path.insert(0, str(ROOT / "tests"))
    from clusters import threaded_cluster  # type: ignore[import-not-found]

    with threaded_cluster() as c:
        yield c.namesrv


async def wait_route(namesrv: str, topic: str, queues: int) -> None:
    async with Admin(namesrv) as admin:
        with trio.fail_after(30):
            while True:
                try:
                    addrs = await admin.master_addrs("DefaultCluster")
                    break
                except Exception:
                    await trio.sleep(0.2)
        for addr in addrs:
            await admin.create_topic(addr, TopicConfig(topic_name=topic, read_queue_nums=queues,
                                                       write_queue_nums=queues, perm=6))
        with trio.fail_after(30):
            while await admin.client.fetch_route(topic) is None:
                await trio.sleep(0.1)


async def bench(namesrv: str, count: int, seconds: float, size: int, senders: int) -> dict[str, float]:
    topic = f"BenchClient_{uuid.uuid4().hex[:8]}"
    await wait_route(namesrv, topic, 4)
    body = b"x" * size
    out: dict[str, float] = {}
    async with Producer("bench_client_pg", namesrv=namesrv) as producer:
        await producer.send(make_message(topic, body))  # routes and connections warm
        sent = 0
        start = trio.current_time()
        with trio.move_on_after(seconds):
            while sent < count:
                await producer.send(make_message(topic, body))
                sent += 1
        out["sync_send_per_s"] = sent / (trio.current_time() - start)
        total = 1 + sent

        per_sender = count // senders
        done = 0
        start = trio.current_time()
        with trio.move_on_after(seconds):
            async def sender() -> None:
                nonlocal done
                for _ in range(per_sender):
                    await producer.send(make_message(topic, body))
                    done += 1

            async with trio.open_nursery() as nursery:
                for _ in range(senders):
                    nursery.start_soon(sender)
        out[f"sync_send_{senders}_concurrent_per_s"] = done / (trio.current_time() - start)
        total += done
    received = 0
    all_in = trio.Event()

    async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
        nonlocal received
        received += len(msgs)
        if received >= total:
            all_in.set()

    config = ClientConfig(namesrv_addr=namesrv, rebalance_interval=1.0)
    consumer = PushConsumer("bench_client_cg", listener, config=config, consume_batch_size=32,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic)
    start = trio.current_time()
    async with consumer:
        with trio.move_on_after(seconds):
            while not consumer.pq_table:
                await trio.sleep(0.01)
            start = trio.current_time()
            await all_in.wait()
        elapsed = trio.current_time() - start
    out["consume_per_s"] = received / elapsed if elapsed > 0 else 0.0
    out["consumed"] = received
    out["produced"] = total
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--namesrv", help="use this running server instead of starting one")
    parser.add_argument("--in-process", action="store_true", help="run the NameServer and broker on a thread here")
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--seconds", type=float, default=60.0, help="upper bound of each phase")
    parser.add_argument("--size", type=int, default=128, help="message body bytes")
    parser.add_argument("--senders", type=int, default=16, help="concurrent senders of the second phase")
    args = parser.parse_args()
    if args.namesrv:
        ctx: contextlib.AbstractContextManager[str] = contextlib.nullcontext(args.namesrv)
        kind = f"server at {args.namesrv}"
    elif args.in_process:
        ctx, kind = in_process_server(), "in-process NameServer and broker"
    else:
        ctx, kind = serve_subprocess(), "rocketpy serve (subprocess)"
    with ctx as namesrv:
        result = trio.run(bench, namesrv, args.count, args.seconds, args.size, args.senders)
    print(f"client benchmark against {kind}: {args.count} messages of {args.size} B, cpu count {os.cpu_count()}")
    for key, value in result.items():
        print(f"  {key:<32} {value:>10.0f}")


if __name__ == "__main__":
    main()
