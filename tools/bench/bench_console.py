"""Console page render time with many topics and groups (1,000 topics, 200 groups by default).

Starts a NameServer, a broker and the console in process (rocketpy.console.testing), creates the
topics and groups (each group with committed offsets on one topic, so its lag is computed), then
fetches each page over HTTP from Hypercorn ``--runs`` times and prints the first, median and worst time, and
the median CPU time of the process per fetch (less sensitive to the machine's load than the wall time)
(``/metrics`` is gathered on the first fetch, then reused for 10 s: its first time is the one that counts).
The server, the broker and the HTTP client share one trio loop, so the figures include their cost.

``--metrics`` times only scrapes of ``/metrics``, each a fresh gathering (the console's cache is off): wall and
CPU time, the requests the gathering made to the cluster, the series and the bytes of the answer. One group in
ten has a client online (its running info is asked too).

Run: python tools/bench/bench_console.py [--topics 1000] [--groups 200] [--runs 5] [--metrics]
"""

from __future__ import annotations

import argparse
import statistics
import time
from contextlib import AsyncExitStack
from typing import Any

import trio

from rocketpy.client import Producer, make_message
from rocketpy.client.admin import Admin
from rocketpy.codecs.bodies import SubscriptionGroupConfig, TopicConfig
from rocketpy.console.testing import console_cluster


async def http_get(url: str, path: str) -> tuple[int, int]:
    """(status, body bytes) of one GET on a new connection."""
    host, _, port = url.removeprefix("http://").partition(":")
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = bytearray()
        while chunk := await stream.receive_some(65536):
            data += chunk
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), len(body)


async def main(topics: int, groups: int, runs: int, metrics_only: bool = False) -> None:
    async with console_cluster(metrics_max_age=0.0 if metrics_only else 10.0) as c, Admin(c.namesrv) as admin:
        addr = c.broker.broker_addr
        t0 = time.perf_counter()
        for i in range(topics):
            await admin.create_topic(addr, TopicConfig(topic_name=f"BenchTopic{i:04d}", read_queue_nums=4,
                                                       write_queue_nums=4))
        async with Producer("BenchPG", namesrv=c.namesrv) as p:
            for i in range(20):
                await p.send(make_message("BenchTopic0000", f"m{i}"))
        route = await admin.topic_route("BenchTopic0000")
        mqs = list((await admin.topic_stats("BenchTopic0000")).offset_table)
        master = route.broker_datas[0].master_addr() if route.broker_datas else addr
        for g in range(groups):
            group = f"BenchGroup{g:03d}"
            await admin.update_sub_group(addr, SubscriptionGroupConfig(group_name=group))
            for mq in mqs:
                await admin.client.api.update_consumer_offset(master or addr, group, mq, g % 5)
        print(f"setup: {topics} topics, {groups} groups in {time.perf_counter() - t0:.1f} s")
        if metrics_only:
            await scrapes(c, groups, runs)
            return
        pages = ["/", "/healthz", "/broker/broker-a/0", "/topics", "/topics?page=10",
                 "/topics?type=NORMAL&type=ORDER&type=RETRY&type=DLQ&type=SYSTEM", "/groups",
                 "/topic/BenchTopic0000", "/group/BenchGroup000", "/messages?topic=BenchTopic0000",
                 "/dlq?group=BenchGroup000", "/metrics"]
        print(f"{'page':62} {'first ms':>9} {'median ms':>10} {'max ms':>8} {'cpu ms':>7} {'bytes':>9}")
        for page in pages:
            times, cpu = [], []
            size = 0
            for _ in range(runs):
                start, start_cpu = time.perf_counter(), time.process_time()
                status, size = await http_get(c.url, page)
                times.append((time.perf_counter() - start) * 1000)
                cpu.append((time.process_time() - start_cpu) * 1000)
                assert status == 200, (page, status)
            print(f"{page:62} {times[0]:9.1f} {statistics.median(times):10.1f} {max(times):8.1f} "
                  f"{statistics.median(cpu):7.1f} {size:9d}")


async def scrapes(c: Any, groups: int, runs: int) -> None:
    """``runs`` fresh gatherings of /metrics, with every tenth group online (a push consumer of BenchTopic0000)."""
    from rocketpy.client import ClientConfig, PushConsumer
    from rocketpy.console import metrics_gather

    asked = [0]
    ask = metrics_gather.Gathering.ask

    async def counted(self: Any, *args: Any, **kw: Any) -> Any:
        asked[0] += 1
        return await ask(self, *args, **kw)

    metrics_gather.Gathering.ask = counted  # type: ignore[method-assign]
    config = ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=2.0)
    async with AsyncExitStack() as stack:
        for g in range(0, groups, 10):
            consumer = PushConsumer(f"BenchGroup{g:03d}", lambda msgs, ctx: None, config=config)
            consumer.subscribe("BenchTopic0000", "*")
            await stack.enter_async_context(consumer)
        await trio.sleep(3)  # the consumers' heartbeats and first rebalance
        print(f"{'scrape':>6} {'ms':>8} {'cpu ms':>8} {'requests':>9} {'series':>7} {'bytes':>9}")
        for run in range(runs):
            asked[0] = 0
            start, start_cpu = time.perf_counter(), time.process_time()
            status, size, series = await http_get_text(c.url, "/metrics")
            assert status == 200, status
            print(f"{run + 1:6d} {(time.perf_counter() - start) * 1000:8.1f} "
                  f"{(time.process_time() - start_cpu) * 1000:8.1f} {asked[0]:9d} {series:7d} {size:9d}")


async def http_get_text(url: str, path: str) -> tuple[int, int, int]:
    """(status, body bytes, sample lines) of one GET."""
    host, _, port = url.removeprefix("http://").partition(":")
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = bytearray()
        while chunk := await stream.receive_some(65536):
            data += chunk
    head, _, body = bytes(data).partition(b"\r\n\r\n")
    lines = sum(1 for line in body.split(b"\n") if line and not line.startswith(b"#"))
    return int(head.split(b" ", 2)[1]), len(body), lines


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--metrics", action="store_true", help="time fresh /metrics gatherings only")
    args = parser.parse_args()
    trio.run(main, args.topics, args.groups, args.runs, args.metrics)
