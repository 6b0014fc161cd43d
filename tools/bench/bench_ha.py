"""Master/slave replication cost on 127.0.0.1: SYNC_MASTER against ASYNC_MASTER, and slave lag.

Each run starts a master (``--role``) and its slave as ``rocketpy broker`` subprocesses, then
sends 1 KiB messages synchronously from ``--producers`` concurrent senders for ``--seconds``.
While they run, both brokers' CommitLog max offsets are sampled every 10 ms
(GET_BROKER_RUNTIME_INFO): the slave's lag is how many bytes it is behind at a sample (bytes) and
how long after the master reached an offset the slave reached it (ms, 10 ms resolution).
Reported: sends/s, send latency p50/p99, lag p50/p99/max (bytes and ms). ``--runs`` repeats.

    python tools/bench/bench_ha.py --roles SYNC_MASTER ASYNC_MASTER --seconds 10 --runs 3
"""

from __future__ import annotations

import argparse
import bisect
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import trio

from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketpy.codecs.bodies import KVTable
from rocketpy.codecs.message import decode_offset_msg_id
from rocketpy.remoting import open_remoting_client
from rocketpy.testing import broker_client, free_broker_port, read_until

TOPIC = "BenchHaTopic"
QUEUES = 4
SAMPLE = float(os.environ.get("BENCH_HA_SAMPLE", "0.01"))  # seconds between offset samples


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


async def start(conf_text: str, path: str) -> trio.Process:
    with open(path, "w") as f:
        f.write(conf_text)
    proc = await trio.lowlevel.open_process(
        [sys.executable, "-m", "rocketpy.cli", "broker", "-c", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    with trio.fail_after(30):
        await read_until(proc.stdout, b"serving on", "broker")
    return proc


def conf(store: str, port: int, role: str, extra: str = "") -> str:
    return (
        f"brokerName = bench-ha\nbrokerIP1 = 127.0.0.1\nbrokerIP2 = 127.0.0.1\nlistenHost = 127.0.0.1\n"
        f"listenPort = {port}\nvipChannelEnable = false\nstorePathRootDir = {store}\nflushDiskType = ASYNC_FLUSH\n"
        f"mappedFileSizeCommitLog = {256 * 1024 * 1024}\nnamesrvAddr =\nbrokerRole = {role}\n{extra}"
    )


async def max_offset(client, addr: str) -> int:  # type: ignore[no-untyped-def]
    answer = await client.invoke(addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO), 3.0)
    return int(KVTable.decode(answer.body).table["commitLogMaxOffset"])


async def one_run(role: str, seconds: float, producers: int, size: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        mport, sport = free_broker_port(), free_broker_port()
        master = await start(conf(f"{tmp}/m", mport, role), f"{tmp}/m.conf")
        slave = await start(
            conf(f"{tmp}/s", sport, "SLAVE", f"brokerId = 1\nhaMasterAddress = 127.0.0.1:{mport + 1}\n"),
            f"{tmp}/s.conf",
        )
        maddr, saddr = f"127.0.0.1:{mport}", f"127.0.0.1:{sport}"
        try:
            async with open_remoting_client() as rc, broker_client(maddr, serialize_type=SerializeType.ROCKETMQ) as c:
                # the slave's first report comes 5 s after it connects: wait until it is in sync
                with trio.fail_after(30):
                    while True:
                        r = await c.send(TOPIC, b"warm", queue_id=0)
                        if r.code == ResponseCode.SUCCESS and await max_offset(rc, saddr) == await max_offset(
                            rc, maddr
                        ):
                            break
                        await trio.sleep(0.2)
                body = os.urandom(size)
                latencies: list[float] = []
                acks: list[tuple[float, int]] = []  # (time of SEND_OK, CommitLog offset of the record)
                slave_samples: list[tuple[float, int]] = []
                failures = 0
                deadline = time.monotonic() + seconds

                async def sender(n: int) -> None:
                    nonlocal failures
                    q = n % QUEUES
                    while time.monotonic() < deadline:
                        t0 = time.perf_counter()
                        r = await c.send(TOPIC, body, queue_id=q)
                        latencies.append(time.perf_counter() - t0)
                        if r.code != ResponseCode.SUCCESS:
                            failures += 1
                            continue
                        acks.append((time.monotonic(), decode_offset_msg_id(r.ext_fields["msgId"])[2]))

                async def sampler() -> None:
                    # only the slave is asked (the master is the one under load)
                    while time.monotonic() < deadline + 1.0:
                        slave_samples.append((time.monotonic(), await max_offset(rc, saddr)))
                        await trio.sleep(SAMPLE)

                start_t = time.monotonic()
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(sampler)
                    for i in range(producers):
                        nursery.start_soon(sender, i)
                elapsed = min(time.monotonic(), deadline) - start_t
        finally:
            for proc in (slave, master):
                proc.send_signal(signal.SIGTERM)
            for proc in (slave, master):
                with trio.move_on_after(20):
                    await proc.wait()
    # a record ends where the next acknowledged one starts (the last one is left out)
    offsets = sorted(o for _, o in acks)
    end_of = dict(zip(offsets, offsets[1:], strict=False))
    slave_t = [t for t, _ in slave_samples]
    slave_o = [o for _, o in slave_samples]
    for i in range(1, len(slave_o)):
        slave_o[i] = max(slave_o[i], slave_o[i - 1])
    # ms: from SEND_OK until a slave sample shows the whole record (<= 0 under SYNC_MASTER, up to one
    # sample interval of resolution)
    lag_ms: list[float] = []
    for t, off in acks:
        end = end_of.get(off)
        if end is None:
            continue
        i = bisect.bisect_left(slave_o, end)
        if i < len(slave_t):
            lag_ms.append(max(0.0, (slave_t[i] - t) * 1000))
    # bytes: at each slave sample, acknowledged bytes the slave did not have yet
    ack_t = sorted(acks)
    lag_bytes: list[float] = []
    best = 0
    j = 0
    for t, off in slave_samples:
        while j < len(ack_t) and ack_t[j][0] <= t:
            best = max(best, end_of.get(ack_t[j][1], ack_t[j][1]))
            j += 1
        if best and t <= deadline:
            lag_bytes.append(max(0, best - off))
    return {
        "sends_per_s": len(latencies) / max(elapsed, 1e-9),
        "p50_ms": pct(latencies, 0.5) * 1000,
        "p99_ms": pct(latencies, 0.99) * 1000,
        "failures": failures,
        "lag_bytes_p50": pct(lag_bytes, 0.5),
        "lag_bytes_p99": pct(lag_bytes, 0.99),
        "lag_bytes_max": max(lag_bytes or [0]),
        "lag_ms_p50": pct(lag_ms, 0.5),
        "lag_ms_p99": pct(lag_ms, 0.99),
        "lag_ms_max": max(lag_ms or [0]),
    }


async def main(args: argparse.Namespace) -> None:
    for role in args.roles:
        runs = [await one_run(role, args.seconds, args.producers, args.size) for _ in range(args.runs)]
        keys = runs[0].keys()
        print(f"{role}: {args.runs} runs x {args.seconds:.0f} s, {args.producers} producers, {args.size} B bodies")
        for k in keys:
            vals = [r[k] for r in runs]
            print(f"  {k:14s} median {statistics.median(vals):12.1f}   runs {', '.join(f'{v:.1f}' for v in vals)}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--roles", nargs="+", default=["SYNC_MASTER", "ASYNC_MASTER"])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--producers", type=int, default=32)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--runs", type=int, default=3)
    trio.run(main, p.parse_args())
