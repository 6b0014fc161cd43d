"""GET_ROUTEINFO_BY_TOPIC requests/s against an in-process NameServer on 127.0.0.1.

16 connections (by default) each send one request at a time and wait for its answer,
as Java clients do; ``--pipeline N`` keeps N requests in flight per connection.
Clients share the server's trio loop, so the figure includes their cost.

Run: python tools/bench/bench_namesrv.py [--connections 16] [--seconds 5] [--requests 200000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import trio

from rocketpy.codecs import FrameSplitter, RemotingCommand, RequestCode
from rocketpy.codecs.bodies.register import DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from rocketpy.codecs.headers.namesrv import GetRouteInfoRequestHeader, RegisterBrokerRequestHeader
from rocketpy.namesrv import NameServer, NamesrvConfig
from rocketpy.remoting import open_remoting_client

TOPICS = [f"bench_topic_{i}" for i in range(64)]


def register_request(broker: str, addr: str) -> RemotingCommand:
    table = {t: TopicConfig(topic_name=t, read_queue_nums=8, write_queue_nums=8, perm=6) for t in TOPICS}
    body = RegisterBrokerBody(
        topic_config_serialize_wrapper=TopicConfigSerializeWrapper(
            topic_config_table=table, data_version=DataVersion(timestamp=1, counter=1)
        )
    )
    header = RegisterBrokerRequestHeader(
        broker_name=broker, broker_addr=addr, cluster_name="BenchCluster", ha_server_addr=addr, broker_id=0
    )
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body.encode())


async def connection_loop(port: int, index: int, pipeline: int, deadline: float, budget: list[int]) -> int:
    """Send lookups until the shared budget or the deadline runs out; returns answers received."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    frames = [
        RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC,
            GetRouteInfoRequestHeader(topic=TOPICS[(index + i) % len(TOPICS)]),
            opaque=i,
        ).encode()
        for i in range(pipeline)
    ]
    splitter = FrameSplitter()
    done = 0
    try:
        in_flight = 0
        while True:
            if budget[0] > 0 and time.perf_counter() < deadline:
                send = min(pipeline - in_flight, budget[0])
                if send:
                    budget[0] -= send
                    in_flight += send
                    await stream.send_all(b"".join(frames[:send]))
            if in_flight == 0:
                break
            data = await stream.receive_some(1 << 16)
            if not data:
                raise RuntimeError("server closed the connection")
            splitter.feed(data)
            for _ in splitter:
                in_flight -= 1
                done += 1
    finally:
        await stream.aclose()
    return done


async def bench(connections: int, seconds: float, requests: int, pipeline: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        config = NamesrvConfig(listen_port=0, kv_config_path=str(Path(tmp) / "kv.json"))
        async with trio.open_nursery() as nursery:
            ns: NameServer = await nursery.start(NameServer(config).run)
            async with open_remoting_client() as client:
                for i in range(2):
                    resp = await client.invoke(ns.address, register_request(f"broker-{i}", f"127.0.0.1:{10911 + i}"))
                    assert resp.code == 0, resp
            budget = [requests]
            results: list[int] = []

            async def one(i: int) -> None:
                results.append(await connection_loop(ns.port, i, pipeline, deadline, budget))

            start = time.perf_counter()
            deadline = start + seconds
            async with trio.open_nursery() as clients:
                for i in range(connections):
                    clients.start_soon(one, i)
            elapsed = time.perf_counter() - start
            nursery.cancel_scope.cancel()
    total = sum(results)
    print(
        f"GET_ROUTEINFO_BY_TOPIC: {total} answers in {elapsed:.2f} s over {connections} connections "
        f"(pipeline {pipeline}): {total / elapsed:,.0f} requests/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0, help="stop sending after this long")
    parser.add_argument("--requests", type=int, default=200_000, help="stop after this many requests")
    parser.add_argument("--pipeline", type=int, default=1, help="requests in flight per connection")
    args = parser.parse_args()
    trio.run(bench, args.connections, args.seconds, args.requests, args.pipeline)


if __name__ == "__main__":
    main()
