"""CPU cost of the broker's hot path: server CPU microseconds per message, over TCP.

Three servers, each in its own subprocess, driven from this process on 127.0.0.1 with
ROCKETMQ binary headers (what the Java benchmark producer sends) and many requests in
flight per connection (so the server sees several frames per receive and batching
matters):

* ``floor``: a bare Trio server answering every SEND_MESSAGE_V2 frame with a fixed
  SEND response (only the opaque patched in), all answers of a receive in one send_all.
* ``send``:  the broker (``python -m rocketpy.cli broker``), SEND_MESSAGE_V2 with 1 KiB bodies.
* ``pull``:  the same broker answering PULL_MESSAGE for 32 messages of a pre-filled topic.

The server's CPU time (user + system, all threads: what ``resource.getrusage`` /
``time.process_time()`` report inside it) is read from ``/proc/<pid>/stat`` before and
after a bounded run and divided by the messages answered. Each case runs ``--repeat``
times; the table shows the median (and the spread).

The default load is one connection with 64 requests in flight (the Java benchmark
producer's 64 threads share one connection); ``--connections 32 --inflight 1`` is the
other extreme, one frame per receive, where the per-receive cost of Trio dominates.
``--profile DIR`` runs the servers under cProfile.

    python tools/bench/bench_hotpath.py [--seconds 4] [--repeat 3] [--cases floor,send,pull]
    python tools/bench/bench_hotpath.py --connections 32 --inflight 1
"""

from __future__ import annotations

import argparse
import os
import selectors
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from rocketpy.codecs import RemotingCommand, RequestCode, SerializeType
from rocketpy.codecs.headers import PullMessageRequestHeader, SendMessageRequestHeaderV2
from rocketpy.codecs.message import properties_to_string

TOPIC = "BenchHotTopic"
GROUP = "BenchHotCG"
QUEUES = 4
PULL_BATCH = 32
_LEN = struct.Struct(">i")
_CLK_TCK = os.sysconf("SC_CLK_TCK")

# ---------------------------------------------------------------------------------------
# The bare Trio server (runs in a subprocess: ``bench_hotpath.py --serve-floor``)
# ---------------------------------------------------------------------------------------


def serve_floor() -> None:
    import trio

    # the answer a broker gives a send, encoded once; only the opaque changes
    resp = RemotingCommand(
        code=0,
        opaque=0x7A7A7A7A,
        flag=1,
        ext_fields={
            "msgId": "7F00000100002A9F0000000000000000",
            "queueId": "0",
            "queueOffset": "0",
            "MSG_REGION": "DefaultRegion",
            "TRACE_ON": "true",
        },
        serialize_type=SerializeType.ROCKETMQ,
    ).encode()
    at = resp.index(b"\x7a\x7a\x7a\x7a")
    head, tail = resp[:at], resp[at + 4 :]
    unpack_len = _LEN.unpack_from

    async def handle(stream: trio.SocketStream) -> None:
        buf = bytearray()
        while True:
            data = await stream.receive_some(256 * 1024)
            if not data:
                return
            buf += data
            out = []
            pos = 0
            end = len(buf)
            while end - pos >= 4:
                (n,) = unpack_len(buf, pos)
                if end - pos - 4 < n:
                    break
                # ROCKETMQ header: length, header info, code(2) language(1) version(2), opaque(4)
                out.append(head + buf[pos + 13 : pos + 17] + tail)
                pos += 4 + n
            del buf[:pos]
            if out:
                await stream.send_all(b"".join(out))

    async def main() -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listeners[0].socket.getsockname()[1]
        print(f"floor serving on 127.0.0.1:{port}", flush=True)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, handle, listeners)
            with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    return

    trio.run(main)


# ---------------------------------------------------------------------------------------
# Servers and their CPU clocks
# ---------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


def start_server(argv: list[str]) -> tuple[subprocess.Popen[bytes], tuple[str, int]]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline().decode()
        if not line:
            break
        if "serving on" in line:
            host, port = line.strip().rsplit(" ", 1)[1].rsplit(":", 1)
            return proc, (host, int(port))
    proc.kill()
    raise RuntimeError(f"server {argv} did not start")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start_broker(store: str, profile: str | None = None) -> tuple[subprocess.Popen[bytes], tuple[str, int]]:
    conf = os.path.join(store, "hotpath-broker.conf")
    with open(conf, "w") as f:
        f.write(
            "brokerName = bench\nbrokerIP1 = 127.0.0.1\nlistenHost = 127.0.0.1\nlistenPort = 0\n"
            f"vipChannelEnable = false\nstorePathRootDir = {store}/store\nflushDiskType = ASYNC_FLUSH\n"
            f"mappedFileSizeCommitLog = {256 * 1024 * 1024}\nnamesrvAddr =\n"
        )
    return start_server(_python(profile) + ["-m", "rocketpy.cli", "broker", "-c", conf])


def _python(profile: str | None) -> list[str]:
    """The interpreter command line, under cProfile writing ``profile`` when asked."""
    if profile is None:
        return [sys.executable]
    return [sys.executable, "-m", "cProfile", "-o", profile]


# ---------------------------------------------------------------------------------------
# Requests (encoded once) and the pipelined load generator
# ---------------------------------------------------------------------------------------


def send_frames(n: int, size: int) -> list[bytes]:
    body = b"x" * size
    frames = []
    for i in range(n):
        props = {"UNIQ_KEY": f"7F0000010C2B18B4AAC2{i:012X}", "WAIT": "true"}
        header = SendMessageRequestHeaderV2(
            producer_group="benchmark_producer",
            topic=TOPIC,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=i % QUEUES,
            sys_flag=0,
            born_timestamp=1795299411940 + i,
            flag=0,
            properties=properties_to_string(props),
            reconsume_times=0,
            unit_mode=False,
            batch=False,
            broker_name="bench",
        )
        req = RemotingCommand.request(
            RequestCode.SEND_MESSAGE_V2, header, body, opaque=i + 1, serialize_type=SerializeType.ROCKETMQ
        )
        frames.append(req.encode())
    return frames


def pull_frames(per_queue: int) -> list[bytes]:
    frames = []
    i = 0
    for start in range(0, per_queue - PULL_BATCH + 1, PULL_BATCH):
        for q in range(QUEUES):
            i += 1
            header = PullMessageRequestHeader(
                consumer_group=GROUP,
                topic=TOPIC,
                queue_id=q,
                queue_offset=start,
                max_msg_nums=PULL_BATCH,
                sys_flag=4,  # subscription in the request, no suspend, no commit
                commit_offset=0,
                suspend_timeout_millis=0,
                subscription="*",
                sub_version=1795299411940,
                expression_type="TAG",
                bname="bench",
            )
            req = RemotingCommand.request(
                RequestCode.PULL_MESSAGE, header, opaque=i, serialize_type=SerializeType.ROCKETMQ
            )
            frames.append(req.encode())
    return frames


def _count_records(frame: bytes | bytearray, pos: int, end: int) -> int:
    """Messages in a response frame's body (0 if none)."""
    (info,) = _LEN.unpack_from(frame, pos + 4)
    body = pos + 8 + (info & 0xFFFFFF)
    n = 0
    while body < end:
        (size,) = _LEN.unpack_from(frame, body)
        if size <= 0:
            break
        body += size
        n += 1
    return n


class Load:
    """Keeps ``inflight`` requests outstanding on each of ``conns`` connections."""

    def __init__(self, addr: tuple[str, int], conns: int, inflight: int) -> None:
        self.socks = []
        for _ in range(conns):
            s = socket.create_connection(addr)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.socks.append(s)
        self.inflight = inflight

    def close(self) -> None:
        for s in self.socks:
            s.close()

    def run(
        self, frames: list[bytes], seconds: float, max_answers: int, count_messages: bool
    ) -> tuple[int, int, int, float]:
        """(answers, messages, errors, elapsed): requests cycled from ``frames`` until time or count."""
        sel = selectors.DefaultSelector()
        nframes = len(frames)
        state = {}
        sent = 0
        for k, s in enumerate(self.socks):
            s.setblocking(True)
            first = [frames[(sent + j) % nframes] for j in range(self.inflight)]
            sent += self.inflight
            s.sendall(b"".join(first))
            s.setblocking(False)
            state[s.fileno()] = [s, bytearray(), self.inflight]
            sel.register(s, selectors.EVENT_READ, k)
        answers = messages = errors = 0
        start = time.perf_counter()
        deadline = start + seconds
        stopping = False
        outstanding = self.inflight * len(self.socks)
        unpack = _LEN.unpack_from
        while outstanding:
            for key, _ in sel.select(1.0):
                s, buf, _n = st = state[key.fd]
                try:
                    data = s.recv(1 << 20)
                except BlockingIOError:
                    continue
                if not data:
                    raise RuntimeError("server closed the connection")
                buf += data
                pos = 0
                end = len(buf)
                got = 0
                while end - pos >= 4:
                    (n,) = unpack(buf, pos)
                    if end - pos - 4 < n:
                        break
                    if buf[pos + 8 : pos + 10] != b"\x00\x00":  # response code SUCCESS
                        errors += 1
                    elif count_messages:
                        messages += _count_records(buf, pos, pos + 4 + n)
                    got += 1
                    pos += 4 + n
                del buf[:pos]
                if not got:
                    continue
                answers += got
                outstanding -= got
                st[2] -= got
                if not stopping and (answers >= max_answers or time.perf_counter() >= deadline):
                    stopping = True
                if not stopping:
                    more = b"".join([frames[(sent + j) % nframes] for j in range(got)])
                    sent += got
                    outstanding += got
                    st[2] += got
                    s.setblocking(True)
                    s.sendall(more)
                    s.setblocking(False)
        elapsed = time.perf_counter() - start
        sel.close()
        for s in self.socks:
            s.setblocking(True)
        return answers, messages if count_messages else answers - errors, errors, elapsed


def measure(
    pid: int, load: Load, frames: list[bytes], seconds: float, max_answers: int, count_messages: bool
) -> dict[str, float]:
    cpu0 = cpu_seconds(pid)
    answers, msgs, errors, elapsed = load.run(frames, seconds, max_answers, count_messages)
    cpu = cpu_seconds(pid) - cpu0
    if errors:
        print(f"  warning: {errors} error answers", file=sys.stderr)
    return {
        "answers": answers,
        "messages": msgs,
        "seconds": elapsed,
        "cpu": cpu,
        "us_per_msg": cpu / max(msgs, 1) * 1e6,
        "msgs_per_s": msgs / elapsed,
    }


# ---------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------


def case_floor(args: argparse.Namespace, frames: list[bytes]) -> dict[str, float]:
    proc, addr = start_server(_python(args.profile_to("floor")) + [os.path.abspath(__file__), "--serve-floor"])
    try:
        load = Load(addr, args.connections, args.inflight)
        try:
            load.run(frames, 0.5, 10**9, False)  # warm up
            return measure(proc.pid, load, frames, args.seconds, args.max_messages, False)
        finally:
            load.close()
    finally:
        stop_server(proc)


def case_send(args: argparse.Namespace, frames: list[bytes]) -> dict[str, float]:
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        proc, addr = start_broker(tmp, args.profile_to("send"))
        try:
            load = Load(addr, args.connections, args.inflight)
            try:
                load.run(frames, 1.0, 10**9, False)  # topic auto-creation, warm caches
                return measure(proc.pid, load, frames, args.seconds, args.max_messages, False)
            finally:
                load.close()
        finally:
            stop_server(proc)


def case_pull(args: argparse.Namespace, frames: list[bytes]) -> dict[str, float]:
    per_queue = args.pull_depth
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        proc, addr = start_broker(tmp, args.profile_to("pull"))
        try:
            load = Load(addr, args.connections, args.inflight)
            try:
                # fill: per_queue messages in each queue (frames cycle over the queues)
                answers, *_ = load.run(frames, 120.0, per_queue * QUEUES, False)
                if answers < per_queue * QUEUES:
                    raise RuntimeError("could not fill the topic")
            finally:
                load.close()
            pulls = pull_frames(per_queue)
            load = Load(addr, args.connections, max(1, args.inflight // 8))
            try:
                load.run(pulls, 0.5, 10**9, True)  # warm up
                return measure(proc.pid, load, pulls, args.seconds, args.max_messages // PULL_BATCH, True)
            finally:
                load.close()
        finally:
            stop_server(proc)


CASES: dict[str, tuple[str, Callable[[argparse.Namespace, list[bytes]], dict[str, float]]]] = {
    "floor": ("bare Trio server, SEND_MESSAGE_V2 -> fixed answer", case_floor),
    "send": ("broker SEND_MESSAGE_V2, 1 KiB", case_send),
    "pull": (f"broker PULL_MESSAGE, {PULL_BATCH} msgs/pull", case_pull),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=4.0, help="length of one measured run")
    ap.add_argument("--max-messages", type=int, default=200_000, help="bound on the messages of one run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--connections", type=int, default=1)
    ap.add_argument("--inflight", type=int, default=64, help="requests outstanding per connection (pulls: /8)")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--pull-depth", type=int, default=2048, help="messages per queue before the pull runs")
    ap.add_argument("--cases", default="floor,send,pull")
    ap.add_argument("--dir", default=None, help="where the broker stores (default: the temp dir)")
    ap.add_argument("--profile", metavar="DIR", help="run the servers under cProfile, stats in DIR/<case>.prof")
    ap.add_argument("--serve-floor", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.profile_to = lambda case: os.path.join(args.profile, f"{case}.prof") if args.profile else None
    if args.serve_floor:
        serve_floor()
        return
    frames = send_frames(4096, args.size)
    load_avg = os.getloadavg()
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {load_avg[0]:.2f}; {args.connections} "
        f"connections x {args.inflight} in flight, {args.seconds:g} s runs, median of {args.repeat}"
    )
    rows = []
    for name in args.cases.split(","):
        label, fn = CASES[name]
        runs = [fn(args, frames) for _ in range(args.repeat)]
        us = [r["us_per_msg"] for r in runs]
        rate = [r["msgs_per_s"] for r in runs]
        rows.append((name, label, statistics.median(us), min(us), max(us), statistics.median(rate)))
        print(
            f"  {name}: " + ", ".join(f"{r['us_per_msg']:.1f} us/msg {r['msgs_per_s']:.0f} msg/s" for r in runs),
            flush=True,
        )
    print()
    print(f"{'case':<6} {'what':<48} {'CPU us/msg':>10} {'(min-max)':>13} {'msgs/s':>9}")
    for name, label, med, lo, hi, rate in rows:
        print(f"{name:<6} {label:<48} {med:>10.1f} {f'({lo:.1f}-{hi:.1f})':>13} {rate:>9.0f}")


if __name__ == "__main__":
    main()
