"""Client throughput and CPU per message: sends (sync one at a time, sync concurrent, async, oneway, batch),
push and lite-pull consumption, optionally beside the Java benchmark Producer and Consumer.

    python tools/bench/bench_client.py                      # ours alone, against `rocketpy serve`
    python tools/bench/bench_client.py --vs-java --rounds 3 # the comparison of issue #28 (quiet machine)
    python tools/bench/bench_client.py --profile sync32     # cProfile of one phase, top entries
    python tools/bench/bench_client.py --apis all --phases sync,sync32,async --rounds 2   # trio, asyncio, blocking

The server is ``rocketpy serve`` (NameServer + broker) in a subprocess on free ports, one for the
whole run; ``-n ADDR`` uses a running server instead (``--in-process`` runs ours on a thread here, which
puts the server's CPU into the figures). Every phase is bounded by ``--count`` and ``--seconds``.
Each line gives the rate and the client process's CPU per message (user+sys of this process over the
phase, divided by the messages: with a subprocess server that is the client's own cost).

Phases (``--phases``, comma separated): ``sync`` (one send at a time), ``sync32`` (``--senders``
concurrent senders), ``async`` (send_async, ``--window`` in flight), ``oneway``, ``batch``
(send_batch of ``--batch`` messages; msgs/s), ``push`` (a PushConsumer of a fresh group drains the
topic's backlog: msgs/s from its first message to the last), ``litepull`` (a LitePullConsumer drains
it the same way).

Consumption is measured on a backlog of at least ``--backlog`` messages (default 300,000, several
seconds of draining for every consumer): before the first consume phase the topic is topped up with
oneway sends and the backlog is then read from the broker (the queues' max offsets). Every consumer's
rate is taken over the middle of its drain, from the moment 10 % of the backlog is consumed to the
moment 90 % is (``--span``): the start-up, the rebalance and the tail are left out alike.

``--vs-java``: in each of ``--rounds`` rounds, the official benchmark Producer of the Java reference build
(``run-client.sh org.apache.rocketmq.example.benchmark.Producer -w SENDERS -s SIZE``) runs against the same
server beside our ``sync32`` phase (and with ``-w 1`` beside ``sync``: what one Java thread sending one at a
time gets from the same server), and the benchmark Consumer (a fresh group draining the same backlog as
ours) beside ``push`` (``litepull`` is compared with it too); the order alternates between rounds. The Java
Producer's rate is the mean of its TPS lines after the first (JVM warm-up); its CPU per message is the Java
process's CPU over those lines' span. The Java Consumer's progress is read from the group's offsets on the
broker, polled every 0.05 s: the push consumer sends its consumed offset with every pull request, and while
a backlog drains it pulls continually, so the broker's offsets follow its consumption closely (its own TPS
lines cover 10 s windows and its timed offset commit runs every 5 s, both too coarse for a drain of seconds;
the commit's lag is why the end of the drain is not used: the last pull is suspended, and its offset arrives
up to 5 s late). Its CPU per message is the Java process's over the same span. The ratios ours/Java are
printed at the end. Without the Java reference it says so in one line and measures ours alone. The machine's
other load shows in every line (``load``: 1-minute average).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import os
import pstats
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio
import trio

from rocketpy.client import ClientConfig, ConsumeFromWhere, LitePullConsumer, Producer, PushConsumer, make_message
from rocketpy.client.admin import Admin
from rocketpy.client.loop import clock as loop_clock
from rocketpy.codecs.bodies import TopicConfig

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_vs_java as vsj  # noqa: E402  (the Java tools' drivers: spawn, LineReader, parsers)

PHASES = ("sync", "sync32", "async", "oneway", "batch", "push", "litepull")
SEND_PHASES = ("sync", "sync32", "async", "oneway", "batch")
#: the client APIs --apis compares: the trio client, the native asyncio one, the blocking one (threads)
APIS = ("trio", "asyncio", "blocking")
#: what the blocking API measures of the send phases (its async and oneway calls are the trio client's)
BLOCKING_PHASES = ("sync", "sync32")
#: the send phases the Java benchmark Producer runs beside, and its threads for each (one for one at a time)
JAVA_THREADS: dict[str, Callable[[argparse.Namespace], int]] = {"sync": lambda a: 1, "sync32": lambda a: a.senders}


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


def load() -> float:
    return os.getloadavg()[0]


class Result(dict[str, float]):
    """rate (msgs/s), cpu_us (client CPU per message; user_us of it in user mode), msgs, load."""


def cpu_now() -> tuple[float, float]:
    """This process's (user + system, user) CPU seconds. The system part includes the loopback's delivery
    to the server (and, on a busy machine, softirq work of others' traffic): user is the steadier figure."""
    t = os.times()
    return t.user + t.system, t.user


def result(msgs: int, wall: float, cpu: tuple[float, float]) -> Result:
    per = 1e6 / msgs if msgs else float("nan")
    return Result(rate=msgs / wall if wall > 0 else 0.0, cpu_us=cpu[0] * per, user_us=cpu[1] * per,
                  msgs=float(msgs), load=load())


async def timed(run: Callable[[], Awaitable[int]], profile: bool = False) -> Result:
    """Run a phase body (it returns the messages it handled) and time it, wall and process CPU."""
    prof = cProfile.Profile() if profile else None
    c0, t0 = cpu_now(), time.perf_counter()
    if prof:
        prof.enable()
    n = await run()
    if prof:
        prof.disable()
    c1 = cpu_now()
    res = result(n, time.perf_counter() - t0, (c1[0] - c0[0], c1[1] - c0[1]))
    if prof:
        print(f"--- profile ({n} messages) ---")
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    return res


class Ours:
    """Our client's phases against one server (one producer for the send phases)."""

    def __init__(self, namesrv: str, args: argparse.Namespace) -> None:
        self.namesrv = namesrv
        self.args = args
        self.body = b"x" * args.size
        self.topic = f"BenchClient_{uuid.uuid4().hex[:8]}"
        self.produced = 0  # messages stored in self.topic (the backlog the consumers drain)

    async def setup(self, java: bool) -> None:
        await wait_route(self.namesrv, self.topic, self.args.queues)
        if java:  # the Java Producer's own topic, so that the consumers' backlog is ours alone
            await wait_route(self.namesrv, self.topic + "_java", self.args.queues)

    async def send_phase(self, phase: str, profile: bool = False) -> Result:
        """One send phase, on whichever loop runs it (trio or asyncio: the phases are written with anyio)."""
        a = self.args
        topic, body = self.topic, self.body
        now = loop_clock()
        async with Producer(f"bench_client_pg_{phase}", namesrv=self.namesrv) as producer:
            for _ in range(50):  # routes, connections and caches warm
                await producer.send(make_message(topic, body))
            self.produced += 50
            deadline = now() + a.seconds

            async def sync() -> int:
                n = 0
                while n < a.count and now() < deadline:
                    await producer.send(make_message(topic, body))
                    n += 1
                return n

            async def sync_concurrent() -> int:
                done = 0

                async def sender() -> None:
                    nonlocal done
                    while done < a.count and now() < deadline:
                        await producer.send(make_message(topic, body))
                        done += 1

                async with anyio.create_task_group() as group:
                    for _ in range(a.senders):
                        group.start_soon(sender)
                return done

            async def send_async() -> int:
                settled = 0  # answered or failed
                room = anyio.Semaphore(a.window)
                idle = anyio.Event()

                def finished(_value: object) -> None:
                    nonlocal settled
                    settled += 1
                    room.release()
                    if room.value == a.window:
                        idle.set()

                n = 0
                while n < a.count and now() < deadline:
                    try:
                        room.acquire_nowait()  # a tight loop, as a Java thread calling send(msg, callback)
                    except anyio.WouldBlock:
                        await room.acquire()  # the window is full: wait for answers
                    producer.send_async(make_message(topic, body), finished, finished)
                    n += 1
                if room.value < a.window:
                    await idle.wait()
                return settled

            async def oneway() -> int:
                n = 0
                while n < a.count and now() < deadline:
                    await producer.send_oneway(make_message(topic, body))
                    n += 1
                return n

            async def batch() -> int:
                n = 0
                while n < a.count and now() < deadline:
                    await producer.send_batch([make_message(topic, body) for _ in range(a.batch)])
                    n += a.batch
                return n

            run = {"sync": sync, "sync32": sync_concurrent, "async": send_async, "oneway": oneway,
                   "batch": batch}[phase]
            res = await timed(run, profile)
            self.produced += int(res["msgs"])
        return res

    def blocking_send_phase(self, phase: str) -> Result:
        """A send phase through the blocking API (BlockingProducer) from plain threads: ``sync`` one thread,
        ``sync32`` ``--senders`` threads; the other phases are the async API's."""
        from rocketpy.client.facade import BlockingProducer

        a = self.args
        topic, body = self.topic, self.body
        threads = a.senders if phase == "sync32" else 1
        with BlockingProducer(f"bench_client_pg_blk_{phase}", namesrv=self.namesrv) as producer:
            for _ in range(50):
                producer.send(make_message(topic, body))
            self.produced += 50
            done = 0
            lock = threading.Lock()
            deadline = time.monotonic() + a.seconds

            def sender() -> None:
                nonlocal done
                while time.monotonic() < deadline:
                    with lock:
                        if done >= a.count:
                            return
                        done += 1
                    producer.send(make_message(topic, body))

            workers = [threading.Thread(target=sender) for _ in range(threads)]
            c0, t0 = cpu_now(), time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            c1 = cpu_now()
            res = result(done, time.perf_counter() - t0, (c1[0] - c0[0], c1[1] - c0[1]))
            self.produced += done
        return res

    async def consume_phase(self, phase: str, profile: bool = False) -> Result:
        """One consume phase (a fresh group drains the topic), on whichever loop runs it."""
        a = self.args
        total = self.produced
        config = ClientConfig(namesrv_addr=self.namesrv, rebalance_interval=1.0)
        group = f"bench_client_cg_{uuid.uuid4().hex[:6]}"
        received = 0
        lo, hi = round(total * a.span[0]), round(total * a.span[1])
        drain_limit = a.seconds + 10 + total / 10_000  # a consumer of 10k msgs/s at least
        first = last = 0.0
        base = top = 0
        c0 = c1 = (0.0, 0.0)

        def count(n: int) -> None:  # the middle span of the drain: from lo messages to hi
            nonlocal received, first, last, c0, c1, base, top
            received += n
            if not first and received >= lo:
                first, c0, base = time.perf_counter(), cpu_now(), received
            elif not last and received >= hi:
                last, c1, top = time.perf_counter(), cpu_now(), received

        prof = cProfile.Profile() if profile else None
        if prof:
            prof.enable()
        if phase == "push":
            def listener(msgs, ctx):  # type: ignore[no-untyped-def]
                count(len(msgs))

            consumer = PushConsumer(group, listener, config=config, consume_batch_size=a.consume_batch,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe(self.topic)
            async with consumer:
                with anyio.move_on_after(drain_limit):
                    while not last:  # the listener may run on a worker thread: poll
                        await anyio.sleep(0.005)
        else:
            lite = LitePullConsumer(group, config=config, pull_batch_size=32,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            lite.subscribe(self.topic)
            async with lite:
                with anyio.move_on_after(drain_limit):
                    while not last:
                        msgs = await lite.poll(1.0)
                        if msgs:
                            count(len(msgs))
        if prof:
            prof.disable()
            print(f"--- profile ({received} messages) ---")
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        if not last:
            raise vsj.StartError(f"bench_client: {phase} consumed {received} of {total} messages")
        return result(top - base, last - first, (c1[0] - c0[0], c1[1] - c0[1]))

    async def fill(self, backlog: int) -> None:
        """Top the topic up to ``backlog`` messages (batches of 32: a one-by-one fill took minutes), then take
        the backlog from the broker."""
        missing = backlog - self.produced
        if missing > 0:
            async with Producer("bench_client_pg_fill", namesrv=self.namesrv) as producer:
                for start in range(0, missing, 32):
                    await producer.send_batch([make_message(self.topic, self.body)
                                               for _ in range(min(32, missing - start))])
        async with Admin(self.namesrv) as admin:
            stored = -1
            while True:  # the broker may still be storing the last oneway sends
                stats = await admin.topic_stats(self.topic)
                now = sum(o.max_offset - o.min_offset for o in stats.offset_table.values())
                if now == stored:
                    break
                stored = now
                await trio.sleep(0.5)
        self.produced = stored


# ---------------------------------------------------------------------------------------------------------
# The Java benchmark tools, from the reference build
# ---------------------------------------------------------------------------------------------------------


class Java:
    def __init__(self, ref: Path, work: Path, namesrv: str, args: argparse.Namespace) -> None:
        self.ref, self.work, self.namesrv, self.args = ref, work, namesrv, args

    def cmd(self, main: str, margs: list[str]) -> list[str]:
        return [str(self.ref / "bin/run-client.sh"), main, *margs]

    def producer(self, topic: str, threads: int) -> Result:
        """The benchmark Producer (sync sends, ``threads`` threads): mean TPS of its lines after the first."""
        a = self.args
        lines = max(1, round(a.java_seconds / 10))
        proc = vsj.spawn(self.cmd("org.apache.rocketmq.example.benchmark.Producer",
                                  ["-n", self.namesrv, "-t", topic, "-w", str(threads), "-s", str(a.size)]),
                         env=dict(os.environ, JAVA_OPT_EXT="-Drocketmq.client.logRoot=" + str(self.work)),
                         log=self.work / "producer.err")
        reader = vsj.LineReader(proc, cpu_pid=proc.pid)
        stats: list[tuple[float, float, dict[str, float]]] = []
        try:
            idx = 0
            while len(stats) < 1 + lines:
                i = reader.wait_for(lambda s: vsj.parse_producer_line(s) is not None, 60, idx)
                if i is None:
                    break
                t, cpu, text = reader.lines[i]
                parsed = vsj.parse_producer_line(text)
                assert parsed is not None
                stats.append((t, cpu, parsed))
                idx = i + 1
        finally:
            vsj.stop(proc, grace=5)
        if len(stats) < 2:
            raise vsj.StartError(f"the Java benchmark Producer printed {len(stats)} stats lines{vsj.log_tail(proc)}")
        (t0, c0, _), measured = stats[0], stats[1:]
        msgs, prev = 0.0, t0
        for t, _c, p in measured:
            msgs += p["tps"] * (t - prev)
            prev = t
        return Result(rate=statistics.fmean(p["tps"] for _t, _c, p in measured),
                      cpu_us=(measured[-1][1] - c0) / msgs * 1e6 if msgs else float("nan"), user_us=float("nan"),
                      msgs=msgs, load=load())

    async def consumer(self, topic: str, total: int) -> Result:
        """The benchmark Consumer of a fresh group drains ``total`` messages (the broker starts a new group at
        offset 0 while the queue's first message is in memory); progress from the group's committed offsets."""
        group = f"bench_java_cg_{uuid.uuid4().hex[:6]}"
        proc = vsj.spawn(self.cmd("org.apache.rocketmq.example.benchmark.Consumer",
                                  ["-n", self.namesrv, "-t", topic, "-g", group]),
                         env=dict(os.environ, JAVA_OPT_EXT="-Drocketmq.client.logRoot=" + str(self.work)),
                         log=self.work / "consumer.err")
        lo, hi = round(total * self.args.span[0]), round(total * self.args.span[1])
        first = last = c0 = c1 = 0.0
        base = top = 0
        try:
            async with Admin(self.namesrv) as admin:
                with trio.move_on_after(60 + self.args.seconds + total / 10_000):
                    while not last:
                        await trio.sleep(0.05)
                        if proc.poll() is not None:
                            break
                        try:
                            stats = await admin.consume_stats(group, topic)
                        except Exception:
                            continue
                        now, cpu = time.perf_counter(), vsj.cpu_seconds(proc.pid)
                        done = sum(max(w.consumer_offset, 0) for w in stats.offset_table.values())
                        if not first and done >= lo:
                            first, c0, base = now, cpu, done
                        elif first and done >= hi:
                            last, c1, top = now, cpu, done
        finally:
            vsj.stop(proc, grace=5)
        if not last:
            raise vsj.StartError(f"the Java benchmark Consumer did not drain the backlog{vsj.log_tail(proc)}")
        return result(top - base, last - first, (c1 - c0, float("nan")))


# ---------------------------------------------------------------------------------------------------------


def line(who: str, phase: str, r: Result) -> str:
    return (f"  {who:<5} {phase:<9} {r['rate']:>9.0f} msgs/s  {r['cpu_us']:>7.1f} us cpu/msg "
            f"({r['user_us']:.1f} user)  ({r['msgs']:.0f} msgs, load {r['load']:.2f})")


def parse_phases(args: argparse.Namespace) -> list[str]:
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    for p in phases:
        if p not in PHASES:
            raise SystemExit(f"bench_client: unknown phase {p!r} (known: {', '.join(PHASES)})")
    if args.profile and args.profile not in phases:
        phases.append(args.profile)
    return phases


async def trio_round(ours: Ours, phases: list[str], args: argparse.Namespace, java: Java | None,
                     java_first: bool, out: dict[str, dict[str, list[Result]]]) -> None:
    """One round of the trio client's phases, the Java tools beside them (``--vs-java``)."""

    async def java_beside(phase: str) -> None:
        """The Java tool's run beside ``phase`` (the Producer for JAVA_THREADS' phases, the Consumer for push)."""
        if java is None:
            return
        if phase in JAVA_THREADS:
            r = await trio.to_thread.run_sync(java.producer, ours.topic + "_java", JAVA_THREADS[phase](args))
        elif phase == "push":
            r = await java.consumer(ours.topic, ours.produced)
        else:
            return
        out["java"].setdefault(phase, []).append(r)
        print(line("java", phase, r), flush=True)

    for phase in phases:
        if phase in ("push", "litepull") and ours.produced < args.backlog:
            await ours.fill(args.backlog)
            print(f"  backlog {ours.produced} msgs (load {load():.2f})", flush=True)
        if java_first:
            await java_beside(phase)
        if phase in ("push", "litepull"):
            r = await ours.consume_phase(phase, profile=args.profile == phase)
        else:
            r = await ours.send_phase(phase, profile=args.profile == phase)
        out["ours"].setdefault(phase, []).append(r)
        print(line("ours", phase, r), flush=True)
        if not java_first:
            await java_beside(phase)


async def asyncio_round(ours: Ours, phases: list[str], profile: str | None,
                        out: dict[str, dict[str, list[Result]]]) -> None:
    """Every phase through the native asyncio client (the same phase code, on an asyncio loop); the backlog of
    the consume phases was filled before (fill_backlog)."""
    for phase in phases:
        if phase in SEND_PHASES:
            r = await ours.send_phase(phase, profile=profile == phase)
        else:
            r = await ours.consume_phase(phase, profile=profile == phase)
        out["asyncio"].setdefault(phase, []).append(r)
        print(line("aio", phase, r), flush=True)


def run(namesrv: str, args: argparse.Namespace, java: Java | None) -> dict[str, dict[str, list[Result]]]:
    """Every round: each API of ``--apis`` in turn against the same server (the order reversed every other round),
    the trio client's round with the Java tools beside it."""
    phases = parse_phases(args)
    apis = [a.strip() for a in args.apis.split(",")] if args.apis != "all" else list(APIS)
    for api in apis:
        if api not in APIS:
            raise SystemExit(f"bench_client: unknown API {api!r} (known: {', '.join(APIS)})")
    out: dict[str, dict[str, list[Result]]] = {"ours": {}, "java": {}, "asyncio": {}, "blocking": {}}
    for rnd in range(args.rounds):
        ours = Ours(namesrv, args)
        trio.run(ours.setup, java is not None)
        for api in apis if rnd % 2 == 0 else apis[::-1]:
            if api == "trio":
                trio.run(trio_round, ours, phases, args, java, rnd % 2 == 1, out)
            elif api == "asyncio":
                if any(p in ("push", "litepull") for p in phases) and ours.produced < args.backlog:
                    trio.run(ours.fill, args.backlog)
                    print(f"  backlog {ours.produced} msgs (load {load():.2f})", flush=True)
                anyio.run(asyncio_round, ours, phases, args.profile, out, backend="asyncio",
                          backend_options={"use_uvloop": args.uvloop})
            else:
                for phase in phases:
                    if phase in BLOCKING_PHASES:
                        r = ours.blocking_send_phase(phase)
                        out["blocking"].setdefault(phase, []).append(r)
                        print(line("blk", phase, r), flush=True)
        if args.rounds > 1:
            print(f"round {rnd + 1} done (load {load():.2f})", flush=True)
    return out


def summary(out: dict[str, dict[str, list[Result]]]) -> list[str]:
    lines = ["median (min..max) over rounds:"]
    for phase, results in out["ours"].items():
        rates = [r["rate"] for r in results]
        cpus = [r["cpu_us"] for r in results]
        users = [r["user_us"] for r in results]
        text = (f"  {phase:<9} ours {statistics.median(rates):>8.0f} msgs/s ({min(rates):.0f}..{max(rates):.0f}) "
                f"{statistics.median(cpus):6.1f} us cpu/msg ({statistics.median(users):.1f} user)")
        jres = out["java"].get("push" if phase == "litepull" else phase)
        if jres:
            jr = statistics.median(r["rate"] for r in jres)
            jc = statistics.median(r["cpu_us"] for r in jres)
            text += (f" | java {jr:>8.0f} msgs/s {jc:6.1f} us cpu/msg | ours/java rate "
                     f"{statistics.median(rates) / jr:4.2f} cpu {statistics.median(cpus) / jc:4.2f}")
        lines.append(text)
    for api, label in (("asyncio", "asyncio"), ("blocking", "blocking")):
        for phase, results in out.get(api, {}).items():
            rates = [r["rate"] for r in results]
            cpus = [r["cpu_us"] for r in results]
            text = (f"  {phase:<9} {label} {statistics.median(rates):>8.0f} msgs/s ({min(rates):.0f}..{max(rates):.0f})"
                    f" {statistics.median(cpus):6.1f} us cpu/msg")
            trio_results = out["ours"].get(phase)
            if trio_results:
                tr = statistics.median(r["rate"] for r in trio_results)
                tc = statistics.median(r["cpu_us"] for r in trio_results)
                cpu_ratio = f"{statistics.median(cpus) / tc:4.2f}" if tc > 0 else "n/a"  # too short to tick
                text += f" | {label}/trio rate {statistics.median(rates) / tr:4.2f} cpu {cpu_ratio}"
            lines.append(text)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", "--namesrv", help="use this running server instead of starting one")
    parser.add_argument("--in-process", action="store_true", help="run the NameServer and broker on a thread here")
    parser.add_argument("--phases", default=",".join(PHASES), help=f"comma separated, of: {', '.join(PHASES)}")
    parser.add_argument("--count", type=int, default=20000, help="messages per send phase at most")
    parser.add_argument("--seconds", type=float, default=10.0, help="upper bound of each phase")
    parser.add_argument("--size", type=int, default=1024, help="message body bytes")
    parser.add_argument("--senders", type=int, default=32, help="concurrent senders of sync32 (and Java threads)")
    parser.add_argument("--window", type=int, default=256, help="async sends in flight")
    parser.add_argument("--batch", type=int, default=32, help="messages per send_batch")
    parser.add_argument("--queues", type=int, default=4, help="queues of the bench topic")
    parser.add_argument("--consume-batch", type=int, default=1, help="PushConsumer consume_batch_size")
    parser.add_argument("--backlog", type=int, default=300_000, help="messages the consumers drain, at least")
    parser.add_argument("--span", type=lambda t: tuple(float(x) for x in t.split(",")), default=(0.1, 0.9),
                        help="the part of the drain measured, as fractions LO,HI of the backlog")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--vs-java", action="store_true", help="the Java benchmark Producer/Consumer beside ours")
    parser.add_argument("--java-ref", help="the Java reference build (default ~/.cache/rocketmq-java-4.9.8)")
    parser.add_argument("--java-seconds", type=float, default=10.0, help="measured seconds of the Java Producer")
    parser.add_argument("--profile", choices=PHASES, help="cProfile this phase and print its top entries")
    parser.add_argument("--api", "--apis", dest="apis", default="trio",
                        help=f"the client APIs to measure, comma separated, of: {', '.join(APIS)}; or 'all' "
                             "(one after the other against the same server, ratios to trio's printed)")
    parser.add_argument("--uvloop", action="store_true", help="the asyncio API on uvloop's loop")
    args = parser.parse_args(argv)
    if args.uvloop:
        try:
            import uvloop  # noqa: F401
        except ImportError:
            print("bench_client: --uvloop needs the uvloop package (pip install uvloop)", file=sys.stderr)
            return 2

    ref = vsj.find_ref(args.java_ref) if args.vs_java else None
    if args.vs_java and ref is None:
        print(f"bench_client: no Java reference build ({vsj.DEFAULT_REF}, --java-ref): measuring ours alone")
    if args.namesrv:
        ctx: contextlib.AbstractContextManager[str] = contextlib.nullcontext(args.namesrv)
        kind = f"server at {args.namesrv}"
    elif args.in_process:
        ctx, kind = in_process_server(), "in-process NameServer and broker (their CPU counts as the client's)"
    else:
        ctx, kind = serve_subprocess(), "rocketpy serve (subprocess)"
    print(f"bench_client: {kind}; {args.size} B bodies, {args.senders} senders, {args.rounds} round(s), "
          f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {open('/proc/loadavg').read().strip()}",
          flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench-client-"))
    try:
        with ctx as namesrv:
            java = Java(ref, work, namesrv, args) if ref is not None else None
            out = run(namesrv, args, java)
    except vsj.StartError as exc:
        print(f"bench_client: {exc}", file=sys.stderr)
        return 1
    finally:
        vsj.stop_all()
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    for text in summary(out):
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
