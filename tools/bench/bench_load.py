"""Heavy-load scenarios against a broker in a subprocess (issue #13): its memory (RSS) and throughput.

* ``conns``: N connections (3,000) each sending a producer HEART_BEAT every ``--hb-interval`` s and
  reading the answers, while producers send 1 KiB messages;
* ``longpoll``: C consumers (200) long-polling one topic (each its own group, so each must see every
  message of its queue), while producers send; nothing may be lost;
* ``slow``: one consumer whose socket buffer is 4 KiB and who reads 16 KiB every 50 ms pulls 32 x 64 KiB
  batches, while producers send;
* ``flood``: 4 connections send requests and never read an answer.

Each reports the broker's RSS (before, peak, after), throughput, and whether anything was lost.
Numbers measured on a shared machine are indicative only.

    python tools/bench/bench_load.py --scenario all --seconds 10
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import trio

from rocketpy.codecs import FrameSplitter, RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketpy.codecs.bodies import HeartbeatData, ProducerData
from rocketpy.codecs.headers import PullMessageRequestHeader
from rocketpy.testing import broker_client, now_ms

sys.path.insert(0, str(Path(__file__).parent))
from bench_broker import start_subprocess  # noqa: E402

TOPIC = "LoadTopic"
QUEUES = 4  # what auto-creation gives (defaultTopicQueueNums)


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """Resident memory; RssAnon leaves out the store's mapped files (which VmRSS counts as they are touched)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


class RssWatch:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before = rss_mib(pid)
        self.peak = self.before
        self.anon_before = rss_mib(pid, "RssAnon")
        self.anon_peak = self.anon_before

    async def run(self) -> None:
        while True:
            self.peak = max(self.peak, rss_mib(self.pid))
            self.anon_peak = max(self.anon_peak, rss_mib(self.pid, "RssAnon"))
            await trio.sleep(0.25)

    def report(self) -> dict[str, float]:
        return {"rss_before_mib": round(self.before, 1), "rss_peak_mib": round(self.peak, 1),
                "rss_after_mib": round(rss_mib(self.pid), 1), "anon_before_mib": round(self.anon_before, 1),
                "anon_peak_mib": round(self.anon_peak, 1)}


#: send failures of the producers (timeouts under load), reported with each scenario
errors: list[str] = []


async def produce(addr: str, seconds: float, producers: int, size: int, acked: dict[int, list[int]]) -> int:
    """Synchronous 1 KiB sends from ``producers`` tasks; ``acked``: queue -> acknowledged offsets."""
    body = b"p" * size
    sent = 0
    deadline = trio.current_time() + seconds
    async with broker_client(addr, serialize_type=SerializeType.ROCKETMQ) as c:

        async def one(n: int) -> None:
            nonlocal sent
            while trio.current_time() < deadline:
                q = n % QUEUES
                try:
                    r = await c.send(TOPIC, body, queue_id=q)
                except Exception as exc:  # counted: an overloaded broker is a result, not a crash
                    errors.append(repr(exc))
                    await trio.sleep(0.1)
                    continue
                if r is not None and r.code == ResponseCode.SUCCESS:
                    acked.setdefault(q, []).append(int(r.ext_fields["queueOffset"]))
                    sent += 1

        async with trio.open_nursery() as nursery:
            for n in range(producers):
                nursery.start_soon(one, n)
    return sent


async def read_frames(stream: trio.SocketStream, splitter: FrameSplitter) -> list[bytes]:
    data = await stream.receive_some(65536)
    if not data:
        raise EOFError
    splitter.feed(data)
    return list(splitter)


async def scenario_conns(addr: str, watch: RssWatch, args: argparse.Namespace) -> dict[str, object]:
    host, port = addr.rsplit(":", 1)
    sent = answered = failed = 0
    streams: list[trio.SocketStream] = []
    for _ in range(args.connections):
        streams.append(await trio.open_tcp_stream(host, int(port)))
    opened = len(streams)
    rss_connected = rss_mib(watch.pid)
    acked: dict[int, list[int]] = {}

    async def heartbeats(i: int, stream: trio.SocketStream) -> None:
        nonlocal sent, answered, failed
        body = HeartbeatData(client_id=f"127.0.0.1@load{i}", producer_data_set=[ProducerData(group_name=f"PG{i % 50}")])
        frame = RemotingCommand.request(RequestCode.HEART_BEAT, None, body.encode(), opaque=i).encode()
        splitter = FrameSplitter()
        await trio.sleep(args.hb_interval * (i / opened))  # spread them like real clients
        while True:
            await stream.send_all(frame)
            sent += 1
            with trio.move_on_after(10):
                frames = await read_frames(stream, splitter)
                answered += len(frames)
                await trio.sleep(args.hb_interval)
                continue
            failed += 1

    async with trio.open_nursery() as nursery:
        for i, s in enumerate(streams):
            nursery.start_soon(heartbeats, i, s)
        produced = await produce(addr, args.seconds, args.producers, args.size, acked)
        nursery.cancel_scope.cancel()
    for s in streams:
        await s.aclose()
    return {"connections": opened, "rss_connected_mib": round(rss_connected, 1), "heartbeats_sent": sent,
            "heartbeats_answered": answered, "heartbeat_timeouts": failed, "produced": produced,
            "produce_msgs_per_s": round(produced / args.seconds)}


def pull_frame(group: str, queue: int, offset: int, opaque: int, suspend_ms: int, max_nums: int = 32) -> bytes:
    header = PullMessageRequestHeader(
        consumer_group=group, topic=TOPIC, queue_id=queue, queue_offset=offset, max_msg_nums=max_nums,
        sys_flag=(2 if suspend_ms else 0) | 4, commit_offset=0, suspend_timeout_millis=suspend_ms, subscription="*",
        sub_version=now_ms(), expression_type="TAG")
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, header, opaque=opaque,
                                   serialize_type=SerializeType.ROCKETMQ).encode()


async def scenario_longpoll(addr: str, watch: RssWatch, args: argparse.Namespace) -> dict[str, object]:
    from rocketpy.codecs.message import decode_messages

    acked: dict[int, list[int]] = {}
    got: dict[int, dict[int, set[int]]] = {}  # consumer -> queue -> offsets
    start = {}
    async with broker_client(addr) as c:
        for q in range(QUEUES):
            r = await c.send(TOPIC, b"start", queue_id=q)
            start[q] = int(r.ext_fields["queueOffset"]) + 1
    host, port = addr.rsplit(":", 1)
    stop = trio.Event()
    delivered = 0

    async def consumer(i: int) -> None:
        nonlocal delivered
        q = i % QUEUES
        mine = got.setdefault(i, {}).setdefault(q, set())
        stream = await trio.open_tcp_stream(host, int(port))
        splitter = FrameSplitter()
        offset = start[q]
        async with stream:
            while not stop.is_set():
                await stream.send_all(pull_frame(f"LoadCG{i}", q, offset, 1, 15_000))
                frames: list[bytes] = []
                while not frames:
                    frames = await read_frames(stream, splitter)
                resp = RemotingCommand.decode(frames[0])
                if resp.code == ResponseCode.SUCCESS and resp.body:
                    for m in decode_messages(resp.body):
                        mine.add(m.queue_offset)
                        delivered += 1
                if resp.ext_fields and "nextBeginOffset" in resp.ext_fields:
                    offset = int(resp.ext_fields["nextBeginOffset"])

    t0 = time.perf_counter()
    async with trio.open_nursery() as nursery:
        for i in range(args.consumers):
            nursery.start_soon(consumer, i)
        await trio.sleep(1)
        produced = await produce(addr, args.seconds, args.producers, args.size, acked)
        with trio.move_on_after(20):  # let every consumer catch up
            while any(not set(acked.get(i % QUEUES, [])) <= got.get(i, {}).get(i % QUEUES, set())
                      for i in range(args.consumers)):
                await trio.sleep(0.1)
        stop.set()
        nursery.cancel_scope.cancel()
    elapsed = time.perf_counter() - t0
    lost = sum(len(set(acked.get(i % QUEUES, [])) - got.get(i, {}).get(i % QUEUES, set()))
               for i in range(args.consumers))
    return {"consumers": args.consumers, "produced": produced, "produce_msgs_per_s": round(produced / args.seconds),
            "delivered": delivered, "delivered_msgs_per_s": round(delivered / elapsed), "lost": lost}


async def scenario_slow(addr: str, watch: RssWatch, args: argparse.Namespace) -> dict[str, object]:
    from rocketpy.codecs.message import decode_messages

    acked: dict[int, list[int]] = {}
    async with broker_client(addr) as c:
        for _ in range(256):  # a backlog of 16 MiB to pull
            await c.send(TOPIC, b"s" * 65536, queue_id=0)
    host, port = addr.rsplit(":", 1)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
    await stream.socket.connect((host, int(port)))
    slow_bytes = 0
    slow_msgs = 0

    async def slow() -> None:
        nonlocal slow_bytes, slow_msgs
        splitter = FrameSplitter()
        offset = 0
        async with stream:
            while True:
                await stream.send_all(pull_frame("SlowCG", 0, offset, 1, 0))
                frames: list[bytes] = []
                while not frames:
                    data = await stream.receive_some(16384)
                    slow_bytes += len(data)
                    splitter.feed(data)
                    frames = list(splitter)
                    await trio.sleep(0.05)
                resp = RemotingCommand.decode(frames[0])
                if resp.body:
                    slow_msgs += len(decode_messages(resp.body))
                offset = int(resp.ext_fields.get("nextBeginOffset", offset))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(slow)
        produced = await produce(addr, args.seconds, args.producers, args.size, acked)
        nursery.cancel_scope.cancel()
    return {"produced_meanwhile": produced, "produce_msgs_per_s": round(produced / args.seconds),
            "slow_consumer_kib_per_s": round(slow_bytes / 1024 / args.seconds), "slow_consumer_msgs": slow_msgs}


async def scenario_flood(addr: str, watch: RssWatch, args: argparse.Namespace) -> dict[str, object]:
    host, port = addr.rsplit(":", 1)
    frame = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, opaque=1).encode()
    batch = frame * 1000
    sent = 0

    async def flooder() -> None:
        nonlocal sent
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
        await stream.socket.connect((host, int(port)))
        async with stream:
            while True:
                await stream.send_all(batch)
                sent += 1000

    async with trio.open_nursery() as nursery:
        for _ in range(4):
            nursery.start_soon(flooder)
        await trio.sleep(args.seconds)
        rss_during = rss_mib(watch.pid)
        t0 = time.perf_counter()
        async with broker_client(addr) as c:  # a fresh connection is still answered
            r = await c.invoke(RequestCode.GET_BROKER_RUNTIME_INFO, timeout=10)
        fresh_ms = (time.perf_counter() - t0) * 1000
        nursery.cancel_scope.cancel()
    return {"requests_sent_unread": sent, "rss_during_mib": round(rss_during, 1),
            "fresh_connection_answered": r.code == ResponseCode.SUCCESS, "fresh_answer_ms": round(fresh_ms, 1)}


SCENARIOS = {"conns": scenario_conns, "longpoll": scenario_longpoll, "slow": scenario_slow, "flood": scenario_flood}


async def main(args: argparse.Namespace) -> None:
    names = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    for name in names:
        with tempfile.TemporaryDirectory(prefix="rocketpy-load-") as tmp:
            proc, addr = await start_subprocess(tmp, "ASYNC_FLUSH")
            try:
                async with broker_client(addr) as c:  # the topic, with QUEUES queues
                    for q in range(QUEUES):
                        await c.send(TOPIC, b"warm", queue_id=q)
                watch = RssWatch(proc.pid)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(watch.run)
                    result = await SCENARIOS[name](addr, watch, args)
                    nursery.cancel_scope.cancel()
                print(json.dumps({"scenario": name, **result, "send_errors": len(errors), **watch.report()}),
                      flush=True)
                errors.clear()
            finally:
                proc.terminate()
                with trio.move_on_after(10):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", choices=["all", *SCENARIOS], default="all")
    ap.add_argument("--seconds", type=float, default=10.0, help="producing time per scenario")
    ap.add_argument("--connections", type=int, default=3000)
    ap.add_argument("--hb-interval", type=float, default=5.0,
                    help="seconds between one connection's heartbeats (Java clients: 30)")
    ap.add_argument("--consumers", type=int, default=200)
    ap.add_argument("--producers", type=int, default=8)
    ap.add_argument("--size", type=int, default=1024)
    trio.run(main, ap.parse_args())
    os._exit(0)
