"""rocketpy vs the Java RocketMQ 4.9.8 servers, under the same Java client load, on 127.0.0.1.

    python tools/bench/bench_vs_java.py [--rounds 2] [--seconds 30] [--threads 32] [--size 1024]
    python tools/bench/bench_vs_java.py --e2e            # the benchmark Consumer beside the Producer
    python tools/bench/bench_vs_java.py --namesrv        # GET_ROUTEINFO_BY_TOPIC load only
    python tools/bench/bench_vs_java.py --flush SYNC_FLUSH --messages 200000
    python tools/bench/bench_vs_java.py --matrix [--json]   # SYNC_FLUSH: threads x body sizes

Needs the Java reference install (``--java-ref DIR``, env ``ROCKETMQ_JAVA_REF``, default
``~/.cache/rocketmq-java-4.9.8`` when it has ``bin/broker.sh``); without one it prints one line and
exits 0. Each round starts a NameServer + broker pair, runs the load, stops the pair, then does the
same for the other implementation (the order alternates between rounds: one pair runs at a time).
Every pair gets free loopback ports and a fresh store in a temp dir (ASYNC_MASTER, ASYNC_FLUSH unless
``--flush SYNC_FLUSH``, autoCreateTopicEnable); the topic is auto-created by the first send.

Send comparison (default), per server and round, two measured phases:

1. the official benchmark Producer (``org.apache.rocketmq.example.benchmark.Producer -w THREADS
   -s SIZE``: sync sends, ROCKETMQ binary headers, the threads share one connection) runs for
   ``--warmup`` + ``--seconds``. It prints a TPS line every 10 s, each over its last ~9 s. The lines
   arriving during the warm-up are dropped (this covers JVM JIT warm-up of client and broker, and the
   topic's creation).
   * ``send/s``: the mean of the Producer's measured TPS lines (its own figure).
   * ``avgRT``: the mean of its "Average RT(ms)" (the Producer has no percentiles).
   * ``cpu us/msg (P)``: the broker process's user+sys CPU (all threads, ``/proc/PID/stat``) between
     the arrival of the last warm-up line and of the last measured line, divided by the messages
     acknowledged in that span (estimated as sum of TPS x line interval).
2. ``tools/bench/java/SendLatency.java`` (ours: the same shape, N threads, sync DefaultMQProducer.send
   of SIZE-byte bodies) warms up ``--lat-warmup`` s, then records every send completed in a
   ``--lat-seconds`` window:
   * ``p50``/``p99`` (ms) of the send latency (System.nanoTime around producer.send), and its own
     ``lat send/s``;
   * ``cpu us/msg (L)``: broker CPU between its MEASURE_START/MEASURE_END lines divided by the exact
     number of acknowledged sends in the window (the more precise CPU figure).

``--e2e``: the topic is created first (one send by RouteLoad), then the official benchmark Consumer
(``-t TOPIC -g GROUP``) starts, then the Producer (phase 1); ``consume/s`` is the mean of the
Consumer's TPS lines (without its first) up to the end of the Producer's measured span, ``B2C ms`` the
mean of its average born-to-consume latency. ``cpu us/msg (P)`` then
includes the broker's work of delivering each message to the Consumer.

``--namesrv``: instead of the send phases, ``tools/bench/java/RouteLoad.java`` (ours) sends one message
(the broker auto-creates the topic and registers it), then THREADS threads call
``MQClientAPIImpl.getTopicRouteInfoFromNameServer`` (GET_ROUTEINFO_BY_TOPIC, JSON headers like any
client, one shared connection) as fast as answers come: ``route req/s`` and the NameServer's CPU
``us/req`` over the measured window, p50/p99 in ms.

``--matrix``: SYNC_FLUSH (unless ``--flush`` says otherwise) at every ``--matrix-threads`` count x
``--matrix-sizes`` body size, phase 1 only (the benchmark Producer, ``--warmup`` 10 s dropped and
``--seconds`` 10 s measured by default). Both pairs are started once and kept for the whole matrix,
unless the stores' filesystem has less than ``--matrix-min-free`` GiB free before a cell: then both start
again on empty stores (a broker on a full disk refuses sends, and the cell would measure that); each
cell runs Java's and ours one after the other (which one first alternates from cell to cell),
and the pair not under load is paused (SIGSTOP of its NameServer and broker, SIGCONT before its turn)
so that it takes no CPU from the other. The table has, per cell, each broker's send/s, the ratio
ours/Java, each broker's CPU us/msg and the 1-minute load average; ``--json`` prints the cells as a
JSON array instead (for scripts). With ``--rounds N`` (default 1 for the matrix) every cell's line
gives the medians over the rounds.

The table gives each round, then the median (min..max) per server and the ratio ours/Java of the
medians (for send/s and req/s higher is better; for CPU and latencies lower is better). The machine's
other load makes single numbers noisy: use several rounds (each round line ends with the 1-minute load
average; above the core count, the single-threaded Python servers lose more than the Java ones, whose
many threads get more of the CPU under contention, so compare CPU per message rather than rates then).
The Java tools are compiled into a temp dir at start (``javac -cp "$(bin/java-cp.sh)"``); the class
files are never kept. Run it with the repository's Python (it imports rocketpy).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from rocketpy.codecs import CodecError, RemotingCommand, RequestCode, ResponseCode

HERE = Path(__file__).resolve().parent
JAVA_TOOLS = HERE / "java"
DEFAULT_REF = Path("~/.cache/rocketmq-java-4.9.8").expanduser()
TOPIC = "BenchVsJava"
_CLK_TCK = os.sysconf("SC_CLK_TCK")

# ---------------------------------------------------------------------------------------
# Parsers for the Java tools' output
# ---------------------------------------------------------------------------------------

_PRODUCER_RE = re.compile(
    r"^(?P<complete>\[Complete\] Send Total: (?P<total>\d+) |Current Time: .*?)"
    r"Send TPS: (?P<tps>\d+) Max RT\(ms\): (?P<max>\d+) Average RT\(ms\):\s*(?P<avg>[-\d.NaInfity]+) "
    r"Send Failed: (?P<failed>\d+) Response Failed: (?P<rfailed>\d+)"
)
_CONSUMER_RE = re.compile(
    r"^Current Time: \d+ TPS: (?P<tps>\d+) FAIL: (?P<fail>\d+) AVG\(B2C\) RT\(ms\):\s*(?P<b2c>[-\d.NaInfity]+) "
    r"AVG\(S2C\) RT\(ms\):\s*(?P<s2c>[-\d.NaInfity]+) MAX\(B2C\) RT\(ms\): (?P<b2cmax>\d+) "
    r"MAX\(S2C\) RT\(ms\): (?P<s2cmax>\d+)"
)
_KV_LINE_RE = re.compile(r"^(?P<tool>SendLatency|RouteLoad) (?P<kv>(?:\w+=\S+ ?)+)$")


def parse_producer_line(line: str) -> dict[str, float] | None:
    """A benchmark Producer stats line ("Current Time: ... Send TPS: ..." or "[Complete] ...")."""
    m = _PRODUCER_RE.match(line.strip())
    if not m:
        return None
    out = {
        "tps": float(m["tps"]),
        "max_rt_ms": float(m["max"]),
        "avg_rt_ms": float(m["avg"]),
        "send_failed": float(m["failed"]),
        "response_failed": float(m["rfailed"]),
        "complete": 1.0 if m["complete"].startswith("[Complete]") else 0.0,
    }
    if m["total"] is not None:
        out["total"] = float(m["total"])
    return out


def parse_consumer_line(line: str) -> dict[str, float] | None:
    """A benchmark Consumer stats line ("Current Time: MILLIS TPS: ... FAIL: ... AVG(B2C) ...")."""
    m = _CONSUMER_RE.match(line.strip())
    if not m:
        return None
    return {k: float(v) for k, v in m.groupdict().items()}


def parse_kv_line(line: str, tool: str) -> dict[str, float] | None:
    """The one result line of SendLatency / RouteLoad: ``TOOL key=value ...``."""
    m = _KV_LINE_RE.match(line.strip())
    if not m or m["tool"] != tool:
        return None
    out = {}
    for item in m["kv"].split():
        k, _, v = item.partition("=")
        try:
            out[k] = float(v)
        except ValueError:
            return None
    return out


# ---------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


class StartError(RuntimeError):
    pass


_LIVE: list[subprocess.Popen[bytes]] = []
_LOGS: dict[int, Path] = {}


def log_tail(proc: subprocess.Popen[bytes]) -> str:
    """The last non-empty line a child wrote to its stderr log, for error messages."""
    log = _LOGS.get(proc.pid)
    with contextlib.suppress(OSError):
        lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()] if log else []
        if lines:
            return f" ({lines[-1][:200]})"
    return ""


def spawn(argv: list[str], env: dict[str, str] | None = None, log: Path | None = None) -> subprocess.Popen[bytes]:
    """A child in its own process group, stdout piped, stderr to ``log`` (or discarded)."""
    err = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115
    try:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, env=env, start_new_session=True
        )
    finally:
        if log:
            err.close()  # type: ignore[union-attr]
    _LIVE.append(proc)
    if log:
        _LOGS[proc.pid] = log
    return proc


def stop(proc: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """SIGTERM the child's process group, SIGKILL after ``grace`` seconds."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # leftovers of the group, if any
    if proc.stdout:
        proc.stdout.close()
    if proc in _LIVE:
        _LIVE.remove(proc)


def stop_all() -> None:
    for proc in list(reversed(_LIVE)):
        stop(proc, grace=10.0)


class LineReader:
    """Reads a child's stdout in a thread; each line is kept with its arrival time and a CPU sample."""

    def __init__(self, proc: subprocess.Popen[bytes], cpu_pid: int | None = None, echo: str | None = None):
        self.proc = proc
        self.cpu_pid = cpu_pid
        self.echo = echo
        self.lines: list[tuple[float, float, str]] = []  # (monotonic, cpu seconds of cpu_pid, text)
        self.cond = threading.Condition()
        self.eof = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        assert self.proc.stdout is not None
        try:
            for raw in self.proc.stdout:
                now = time.monotonic()
                cpu = float("nan")
                if self.cpu_pid is not None:
                    with contextlib.suppress(OSError, ValueError, IndexError):
                        cpu = cpu_seconds(self.cpu_pid)
                text = raw.decode(errors="replace").rstrip("\n")
                if self.echo:
                    print(f"    [{self.echo}] {text}", flush=True)
                with self.cond:
                    self.lines.append((now, cpu, text))
                    self.cond.notify_all()
        except ValueError:  # closed under us
            pass
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def wait_for(self, pred, timeout: float, start: int = 0) -> int | None:  # type: ignore[no-untyped-def]
        """Index of the first line from ``start`` on satisfying ``pred``, or None at EOF/timeout."""
        deadline = time.monotonic() + timeout
        i = start
        with self.cond:
            while True:
                while i < len(self.lines):
                    if pred(self.lines[i][2]):
                        return i
                    i += 1
                left = deadline - time.monotonic()
                if self.eof or left <= 0:
                    return None
                self.cond.wait(min(left, 0.5))


def free_port(span: tuple[int, ...] = (0,)) -> int:
    """A port P such that P+d is free on 127.0.0.1 for every d in ``span``."""
    for _ in range(200):
        base = random.randint(20000, 60000)
        socks = []
        try:
            for d in span:
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", base + d))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise StartError("no free port")


def route_lookup(addr: str, topic: str, timeout: float = 3.0) -> int:
    """One GET_ROUTEINFO_BY_TOPIC over a fresh connection: the response code."""
    from rocketpy.codecs.headers.namesrv import GetRouteInfoRequestHeader

    req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic))
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(req.encode())
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[:4], "big"):
            chunk = s.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            buf += chunk
    return RemotingCommand.decode(buf[: 4 + int.from_bytes(buf[:4], "big")]).code


def wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise StartError(f"{what} exited with code {proc.returncode}{log_tail(proc)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.2)
    raise StartError(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s{log_tail(proc)}")


# ---------------------------------------------------------------------------------------
# The two server pairs
# ---------------------------------------------------------------------------------------


@dataclass
class Pair:
    kind: str  # "java" | "ours"
    namesrv: subprocess.Popen[bytes]
    broker: subprocess.Popen[bytes]
    namesrv_addr: str
    tmp: Path
    readers: list[LineReader] = field(default_factory=list)
    paused: bool = False

    def pause(self) -> None:
        """SIGSTOP both servers (their process groups): an idle pair takes no CPU from the measured one."""
        self._signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        self._signal(signal.SIGCONT)
        self.paused = False

    def _signal(self, signum: int) -> None:
        for proc in (self.namesrv, self.broker):
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signum)

    def stop(self) -> None:
        if self.paused:
            self.resume()  # a stopped process would hold its SIGTERM until continued
        stop(self.broker)
        stop(self.namesrv)
        shutil.rmtree(self.tmp, ignore_errors=True)


class Bench:
    def __init__(self, args: argparse.Namespace, ref: Path, work: Path):
        self.args = args
        self.ref = ref
        self.work = work
        self.classes = work / "classes"

    # -- Java helpers
    def java_cmd(self, main: str, main_args: list[str], extra_cp: str = "") -> list[str]:
        cp = "$(tools_classpath)" + (f":{extra_cp}" if extra_cp else "")
        script = (
            f'source "{self.ref}/bin/env.sh"; exec "$JAVA" -Xms512m -Xmx1g $COMMON_OPTS '
            f'-Drocketmq.client.logRoot="{self.work}/clientlogs" ${{JAVA_OPT_EXT:-}} -cp "{cp}" "$@"'
        )
        return ["bash", "-c", script, "java-client", main, *main_args]

    def compile_tools(self) -> None:
        self.classes.mkdir(parents=True, exist_ok=True)
        cp = subprocess.run(
            [str(self.ref / "bin/java-cp.sh")], capture_output=True, text=True, check=True
        ).stdout.strip()
        javac = shutil.which("javac") or "javac"
        srcs = [str(JAVA_TOOLS / "SendLatency.java"), str(JAVA_TOOLS / "RouteLoad.java")]
        r = subprocess.run(
            [javac, "-nowarn", "-proc:none", "-cp", cp, "-d", str(self.classes), *srcs], capture_output=True, text=True
        )
        if r.returncode != 0:
            raise StartError("javac failed: " + (r.stderr.strip().splitlines() or ["?"])[0])

    # -- servers
    def start_pair(self, kind: str) -> Pair:
        tmp = Path(tempfile.mkdtemp(prefix=f"vsjava-{kind}-", dir=self.work))
        ns_port = free_port()
        br_port = free_port((-2, 0, 1))
        flush = self.args.flush
        if kind == "java":
            env = dict(os.environ, NAMESRV_PORT=str(ns_port))
            ns = spawn([str(self.ref / "bin/namesrv.sh")], env, tmp / "namesrv.err")
            try:
                wait_port(ns_port, ns, 60, "Java NameServer")
            except StartError:
                stop(ns)
                raise
            env = dict(
                os.environ,
                BROKER_PORT=str(br_port),
                NAMESRV_ADDR=f"127.0.0.1:{ns_port}",
                STORE_DIR=str(tmp / "store"),
                BROKER_NAME="broker-a",
                BROKER_CONF_EXTRA=f"flushDiskType={flush}",
            )
            br = spawn([str(self.ref / "bin/broker.sh")], env, tmp / "broker.err")
        else:
            env = dict(os.environ, HOME=str(tmp))  # kvConfig.json etc. under the temp dir
            ns = spawn(
                [sys.executable, "-m", "rocketpy.cli", "namesrv", "--listen", f"127.0.0.1:{ns_port}"],
                env,
                tmp / "namesrv.err",
            )
            try:
                wait_port(ns_port, ns, 60, "rocketpy NameServer")
            except StartError:
                stop(ns)
                raise
            conf = tmp / "broker.conf"
            store = tmp / "store"
            conf.write_text(
                "brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=0\nbrokerIP1=127.0.0.1\n"
                f"brokerIP2=127.0.0.1\nlistenPort={br_port}\nnamesrvAddr=127.0.0.1:{ns_port}\n"
                f"storePathRootDir={store}\nstorePathCommitLog={store}/commitlog\nbrokerRole=ASYNC_MASTER\n"
                f"flushDiskType={flush}\nautoCreateTopicEnable=true\nautoCreateSubscriptionGroup=true\n"
            )
            br = spawn([sys.executable, "-m", "rocketpy.cli", "broker", "-c", str(conf)], env, tmp / "broker.err")
        pair = Pair(kind, ns, br, f"127.0.0.1:{ns_port}", tmp)
        try:
            wait_port(br_port, br, 90, f"{kind} broker")
            # registered with the NameServer: the Java broker prints "boot success" after registering
            self._wait_registered(pair)
        except StartError:
            pair.stop()
            raise
        return pair

    def _wait_registered(self, pair: Pair, timeout: float = 60.0) -> None:
        """Until the NameServer has a route for TBW102 (what a producer auto-creating a topic asks for)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pair.broker.poll() is not None:
                raise StartError(f"{pair.kind} broker exited with code {pair.broker.returncode}{log_tail(pair.broker)}")
            with contextlib.suppress(OSError, CodecError):
                if route_lookup(pair.namesrv_addr, "TBW102") == ResponseCode.SUCCESS:
                    return
            time.sleep(0.5)
        raise StartError(f"{pair.kind} broker did not register with its NameServer within {timeout:.0f} s")

    # -- phases
    def run_producer(
        self, pair: Pair, rnd: int | str, *, threads: int | None = None, size: int | None = None
    ) -> dict[str, float]:
        a = self.args
        topic = f"{TOPIC}{rnd}"
        threads = a.threads if threads is None else threads
        size = a.size if size is None else size
        pargs = ["-n", pair.namesrv_addr, "-t", topic, "-w", str(threads), "-s", str(size)]
        if a.messages:
            pargs += ["-q", str(a.messages)]
        echo = "producer" if a.verbose else None
        consumer = creader = None
        if a.e2e:
            # the topic first (RouteLoad --seconds 0 sends one message and waits for its route), so
            # the Consumer, started before the Producer, finds its queues at once with no backlog
            self.create_topic(pair, topic)
            consumer = spawn(
                self.java_cmd(
                    "org.apache.rocketmq.example.benchmark.Consumer",
                    ["-n", pair.namesrv_addr, "-t", topic, "-g", f"BenchVsJavaCG{rnd}"],
                ),
                log=pair.tmp / "consumer.err",
            )
            creader = LineReader(consumer, echo="consumer" if a.verbose else None)
            if creader.wait_for(lambda s: "Consumer Started" in s, 90) is None:
                stop(consumer, grace=5)
                raise StartError(f"the benchmark Consumer did not start against {pair.kind}")
            time.sleep(3)  # first rebalance
        prod = spawn(
            self.java_cmd("org.apache.rocketmq.example.benchmark.Producer", pargs), log=pair.tmp / "producer.err"
        )
        reader = LineReader(prod, cpu_pid=pair.broker.pid, echo=echo)
        try:
            warm_lines = max(1, round(a.warmup / 10))
            want = warm_lines + max(1, round(a.seconds / 10)) if not a.messages else None
            stats: list[tuple[float, float, dict[str, float]]] = []
            idx = 0
            limit = time.monotonic() + 60 + a.warmup + (a.seconds if not a.messages else a.max_seconds)
            while want is None or len(stats) < want:
                i = reader.wait_for(
                    lambda s: parse_producer_line(s) is not None, max(1.0, limit - time.monotonic()), idx
                )
                if i is None:
                    break
                t, cpu, text = reader.lines[i]
                parsed = parse_producer_line(text)
                assert parsed is not None
                if parsed["complete"] and len(stats) > warm_lines:
                    break  # a -q run ended; its last window overlaps the previous line
                stats.append((t, cpu, parsed))
                idx = i + 1
                if parsed["complete"]:
                    break
            if pair.broker.poll() is not None:
                raise StartError(f"{pair.kind} broker died during the Producer run")
        finally:
            stop(prod, grace=5)
            if consumer:
                stop(consumer, grace=5)
        if len(stats) <= warm_lines:
            raise StartError(f"the benchmark Producer printed {len(stats)} stats lines against {pair.kind}: too few")
        measured = stats[warm_lines:]
        t0, c0 = stats[warm_lines - 1][0], stats[warm_lines - 1][1]
        msgs = 0.0
        prev = t0
        for t, _c, p in measured:
            msgs += p["tps"] * (t - prev)
            prev = t
        cpu = measured[-1][1] - c0
        out = {
            "send_tps": statistics.fmean(p["tps"] for _t, _c, p in measured),
            "avg_rt_ms": statistics.fmean(p["avg_rt_ms"] for _t, _c, p in measured),
            "max_rt_ms": measured[-1][2]["max_rt_ms"],
            "send_failed": measured[-1][2]["send_failed"],
            "cpu_us_p": cpu / msgs * 1e6 if msgs else float("nan"),
            "measured_s": measured[-1][0] - t0,
        }
        if creader is not None:
            # the Consumer's lines (each over its last ~9 s) up to the end of the measured span,
            # without its first one (JVM start, rebalance)
            hi = measured[-1][0] + 1.0
            cons = [c for t, _cpu, s in creader.lines if t <= hi and (c := parse_consumer_line(s)) is not None][1:]
            out["consume_tps"] = statistics.fmean(c["tps"] for c in cons) if cons else float("nan")
            out["b2c_ms"] = statistics.fmean(c["b2c"] for c in cons) if cons else float("nan")
        return out

    def run_marked(
        self, pair: Pair, main: str, margs: list[str], cpu_pid: int, tool: str, budget: float
    ) -> dict[str, float]:
        proc = spawn(self.java_cmd(main, margs, str(self.classes)), log=pair.tmp / f"{tool}.err")
        reader = LineReader(proc, cpu_pid=cpu_pid, echo=tool if self.args.verbose else None)
        try:
            i0 = reader.wait_for(lambda s: s == "MEASURE_START", budget)
            i1 = reader.wait_for(lambda s: s == "MEASURE_END", budget, (i0 or 0))
            i2 = reader.wait_for(lambda s: parse_kv_line(s, tool) is not None, 30, (i1 or 0))
        finally:
            stop(proc, grace=5)
        if i0 is None or i1 is None or i2 is None:
            err = (pair.tmp / f"{tool}.err").read_text(errors="replace").strip().splitlines()
            why = next((ln for ln in err if "Exception" in ln), err[-1] if err else "")
            raise StartError(f"{tool} against {pair.kind} gave no result" + (f": {why.strip()[:300]}" if why else ""))
        res = parse_kv_line(reader.lines[i2][2], tool)
        assert res is not None
        cpu = reader.lines[i1][1] - reader.lines[i0][1]
        res["cpu_s"] = cpu
        return res

    def create_topic(self, pair: Pair, topic: str) -> None:
        proc = spawn(
            self.java_cmd("RouteLoad", ["-n", pair.namesrv_addr, "-t", topic, "--seconds", "0"], str(self.classes)),
            log=pair.tmp / "create-topic.err",
        )
        reader = LineReader(proc)
        try:
            done = reader.wait_for(lambda s: s.startswith("RouteLoad created"), 120)
        finally:
            stop(proc, grace=5)
        if done is None:
            raise StartError(f"could not create topic {topic} on the {pair.kind} broker")

    def run_latency(self, pair: Pair, rnd: int) -> dict[str, float]:
        a = self.args
        margs = ["-n", pair.namesrv_addr, "-t", f"{TOPIC}{rnd}", "-w", str(a.threads), "-s", str(a.size)]
        margs += ["--warmup", str(a.lat_warmup), "--seconds", str(a.lat_seconds)]
        r = self.run_marked(
            pair, "SendLatency", margs, pair.broker.pid, "SendLatency", 90 + a.lat_warmup + a.lat_seconds
        )
        return {
            "lat_tps": r["tps"],
            "p50_ms": r["p50_ms"],
            "p99_ms": r["p99_ms"],
            "p999_ms": r["p999_ms"],
            "lat_errors": r["errors"],
            "cpu_us_l": r["cpu_s"] / r["count"] * 1e6 if r["count"] else float("nan"),
        }

    def run_routes(self, pair: Pair, rnd: int) -> dict[str, float]:
        a = self.args
        margs = ["-n", pair.namesrv_addr, "-t", f"{TOPIC}Route{rnd}", "-w", str(a.threads)]
        margs += ["--warmup", str(a.lat_warmup), "--seconds", str(a.lat_seconds)]
        r = self.run_marked(pair, "RouteLoad", margs, pair.namesrv.pid, "RouteLoad", 120 + a.lat_warmup + a.lat_seconds)
        return {
            "route_rps": r["rps"],
            "ns_cpu_us": r["cpu_s"] / r["count"] * 1e6 if r["count"] else float("nan"),
            "route_p50_ms": r["p50_ms"],
            "route_p99_ms": r["p99_ms"],
            "route_errors": r["errors"],
        }

    def one(self, kind: str, rnd: int) -> dict[str, float]:
        pair = self.start_pair(kind)
        try:
            if self.args.namesrv:
                return self.run_routes(pair, rnd)
            res = self.run_producer(pair, rnd)
            if not self.args.no_latency:
                res.update(self.run_latency(pair, rnd))
            return res
        finally:
            pair.stop()

    def matrix(
        self, kinds: list[str], threads: list[int], sizes: list[int], rounds: int, on_cell: Callable[[Cell], None]
    ) -> list[Cell]:
        """Every threads x size cell, both pairs up the whole time, the idle one paused (see --matrix)."""
        pairs: dict[str, Pair] = {}
        cells: list[Cell] = []
        try:
            for kind in kinds:
                pairs[kind] = self.start_pair(kind)
                pairs[kind].pause()
            turn = 0
            for size in sizes:
                for n in threads:
                    free = _free_bytes(self.work)
                    if free < self.args.matrix_min_free * 2**30:
                        # a broker on a full disk refuses sends (or dies): both start again on empty stores
                        print(f"bench_vs_java: {free / 2**30:.1f} GiB free before cell {n} x {size}: both pairs "
                              f"restarted on empty stores", file=sys.stderr, flush=True)
                        for kind in kinds:
                            pairs.pop(kind).stop()
                            pairs[kind] = self.start_pair(kind)
                            pairs[kind].pause()
                    cell = Cell(n, size)
                    for rnd in range(rounds):
                        for kind in kinds if turn % 2 == 0 else kinds[::-1]:
                            pair = pairs[kind]
                            pair.resume()
                            try:
                                self._wait_registered(pair)
                                res = self.run_producer(pair, f"M{n}x{size}r{rnd}", threads=n, size=size)
                            finally:
                                pair.pause()
                            res["load"] = os.getloadavg()[0]
                            cell.runs[kind].append(res)
                        turn += 1
                    cells.append(cell)
                    on_cell(cell)
        finally:
            for pair in pairs.values():
                pair.stop()
        return cells


def _free_bytes(path: Path) -> int:
    """The bytes an unprivileged writer may still put on the filesystem of ``path``."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


@dataclass
class Cell:
    """One --matrix cell: the Producer's results per broker, one per round."""

    threads: int
    size: int
    runs: dict[str, list[dict[str, float]]] = field(default_factory=lambda: {"java": [], "ours": []})

    def median(self, kind: str, key: str) -> float:
        vals = [r[key] for r in self.runs[kind] if key in r]
        return statistics.median(vals) if vals else float("nan")

    @property
    def ratio(self) -> float:
        java = self.median("java", "send_tps")
        return self.median("ours", "send_tps") / java if java else float("nan")

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"threads": self.threads, "size": self.size, "ratio": self.ratio}
        for kind, runs in self.runs.items():
            if runs:
                out[kind] = {
                    "send_tps": self.median(kind, "send_tps"),
                    "cpu_us_per_msg": self.median(kind, "cpu_us_p"),
                    "avg_rt_ms": self.median(kind, "avg_rt_ms"),
                    "runs": runs,
                }
        return out


MATRIX_HEADER = (
    f"{'threads':>7} {'size':>6}  {'java send/s':>11} {'ours send/s':>11} {'ours/java':>9}  "
    f"{'java us/msg':>11} {'ours us/msg':>11}  {'load':>5}"
)


def matrix_row(cell: Cell) -> str:
    loads = [r["load"] for runs in cell.runs.values() for r in runs if "load" in r]
    load = statistics.fmean(loads) if loads else float("nan")
    return (
        f"{cell.threads:>7} {cell.size:>6}  {cell.median('java', 'send_tps'):>11.0f} "
        f"{cell.median('ours', 'send_tps'):>11.0f} {cell.ratio:>9.2f}  {cell.median('java', 'cpu_us_p'):>11.1f} "
        f"{cell.median('ours', 'cpu_us_p'):>11.1f}  {load:>5.1f}"
    )


def json_safe(value: object) -> object:
    """``value`` with NaN (a figure that could not be measured) as null: strict JSON has no NaN."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value


def int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"needs positive integers: {text!r}")
    return values


# ---------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------

COLUMNS = [
    # key, label, format
    ("send_tps", "send/s", "{:8.0f}"),
    ("avg_rt_ms", "avgRT", "{:6.2f}"),
    ("cpu_us_p", "cpu us/msg(P)", "{:8.1f}"),
    ("consume_tps", "consume/s", "{:8.0f}"),
    ("b2c_ms", "B2C ms", "{:7.1f}"),
    ("lat_tps", "lat send/s", "{:8.0f}"),
    ("p50_ms", "p50 ms", "{:6.2f}"),
    ("p99_ms", "p99 ms", "{:6.2f}"),
    ("cpu_us_l", "cpu us/msg(L)", "{:8.1f}"),
    ("route_rps", "route req/s", "{:8.0f}"),
    ("ns_cpu_us", "ns cpu us/req", "{:7.1f}"),
    ("route_p50_ms", "p50 ms", "{:6.2f}"),
    ("route_p99_ms", "p99 ms", "{:6.2f}"),
]


def fmt(key: str, value: float) -> str:
    for k, _label, f in COLUMNS:
        if k == key:
            return f.format(value).strip()
    return f"{value:g}"


def summarize(results: dict[str, list[dict[str, float]]]) -> list[str]:
    keys = [k for k, _l, _f in COLUMNS if any(k in r for rs in results.values() for r in rs)]
    lines = []
    for key in keys:
        label = next(lbl for k, lbl, _f in COLUMNS if k == key)
        meds = {}
        cells = []
        for kind in ("java", "ours"):
            vals = [r[key] for r in results[kind] if key in r]
            if not vals:
                cells.append(f"{kind} -")
                continue
            med = statistics.median(vals)
            meds[kind] = med
            cells.append(f"{kind} {fmt(key, med)} ({fmt(key, min(vals))}..{fmt(key, max(vals))})")
        ratio = meds["ours"] / meds["java"] if len(meds) == 2 and meds["java"] else float("nan")
        lines.append(f"  {label:<14} {cells[0]:<30} {cells[1]:<30} ours/java {ratio:5.2f}")
    return lines


def run_matrix(bench: Bench, args: argparse.Namespace, kinds: list[str], ref: Path, out: TextIO) -> int:
    print(
        f"bench_vs_java --matrix: sync send, {args.flush}, threads {args.matrix_threads} x body sizes "
        f"{args.matrix_sizes}, Producer {args.warmup:.0f} s warm-up + {args.seconds:.0f} s measured per broker and "
        f"cell, {args.rounds} round(s), java ref {ref}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs",
        file=out,
        flush=True,
    )
    print(MATRIX_HEADER, file=out, flush=True)
    cells = bench.matrix(
        kinds,
        args.matrix_threads,
        args.matrix_sizes,
        args.rounds,
        lambda cell: print(matrix_row(cell), file=out, flush=True),
    )
    if len(kinds) == 2 and cells:
        low = min(cells, key=lambda c: c.ratio)
        print(f"lowest ours/java: {low.ratio:.2f} ({low.threads} threads, {low.size} B)", file=out)
    if args.json:
        print(json.dumps(json_safe([{"flush": args.flush, **c.as_dict()} for c in cells])))
    return 0


def find_ref(arg: str | None) -> Path | None:
    for cand in (arg, os.environ.get("ROCKETMQ_JAVA_REF"), str(DEFAULT_REF)):
        if cand:
            p = Path(cand).expanduser()
            if (p / "bin/broker.sh").is_file():
                return p
            if cand == arg:  # an explicit --java-ref that is not one
                return None
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--java-ref", help="the Java reference install (with bin/broker.sh)")
    ap.add_argument("--rounds", type=int, help="rounds (default 2; 1 with --matrix)")
    ap.add_argument("--threads", type=int, default=32, help="client threads (Producer -w, SendLatency, RouteLoad)")
    ap.add_argument("--size", type=int, default=1024, help="message body bytes")
    ap.add_argument(
        "--seconds", type=float, help="measured Producer seconds (multiple of 10; default 30, 10 with --matrix)"
    )
    ap.add_argument("--messages", type=int, default=0, help="run the Producer with -q N instead of --seconds")
    ap.add_argument("--max-seconds", type=float, default=600, help="give up on a --messages run after this")
    ap.add_argument("--warmup", type=float, default=10, help="Producer warm-up seconds (TPS lines dropped)")
    ap.add_argument("--lat-warmup", type=float, default=5, help="SendLatency/RouteLoad warm-up seconds")
    ap.add_argument("--lat-seconds", type=float, default=15, help="SendLatency/RouteLoad measured seconds")
    ap.add_argument("--no-latency", action="store_true", help="skip the SendLatency phase")
    ap.add_argument(
        "--flush",
        choices=["ASYNC_FLUSH", "SYNC_FLUSH"],
        help="flushDiskType (default ASYNC_FLUSH; SYNC_FLUSH with --matrix)",
    )
    ap.add_argument("--matrix", action="store_true", help="the Producer at every --matrix-threads x --matrix-sizes")
    ap.add_argument("--matrix-threads", type=int_list, default=[1, 4, 8, 32, 128], help="default 1,4,8,32,128")
    ap.add_argument("--matrix-sizes", type=int_list, default=[256, 1024, 16384], help="default 256,1024,16384")
    ap.add_argument(
        "--matrix-min-free", type=float, default=40.0,
        help="GiB free on the stores' filesystem before a cell, else both pairs restart on empty stores "
        "(default 40: a 128 x 16 KiB cell of 2 rounds writes about 34 GB)",
    )
    ap.add_argument("--json", action="store_true", help="print the results as JSON (progress goes to stderr)")
    ap.add_argument("--e2e", action="store_true", help="run the benchmark Consumer beside the Producer")
    ap.add_argument("--namesrv", action="store_true", help="GET_ROUTEINFO_BY_TOPIC load instead of sends")
    ap.add_argument("--only", choices=["java", "ours"], help="run one implementation only")
    ap.add_argument("--verbose", "-v", action="store_true", help="echo the Java tools' output")
    args = ap.parse_args(argv)
    if args.rounds is None:
        args.rounds = 1 if args.matrix else 2
    if args.seconds is None:
        args.seconds = 10 if args.matrix else 30
    if args.flush is None:
        args.flush = "SYNC_FLUSH" if args.matrix else "ASYNC_FLUSH"
    if args.matrix and (args.namesrv or args.e2e or args.messages):
        ap.error("--matrix runs the Producer alone: not with --namesrv, --e2e or --messages")

    ref = find_ref(args.java_ref)
    if ref is None:
        print(
            "bench_vs_java: skipped: no Java RocketMQ reference (--java-ref, ROCKETMQ_JAVA_REF or "
            f"{DEFAULT_REF} with bin/broker.sh)"
        )
        return 0
    if shutil.which("java") is None and not os.environ.get("REF_JAVA"):
        print("bench_vs_java: skipped: no java on PATH")
        return 0

    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    work = Path(tempfile.mkdtemp(prefix="bench-vs-java-"))
    results: dict[str, list[dict[str, float]]] = {"java": [], "ours": []}
    out = sys.stderr if args.json else sys.stdout  # with --json, stdout has the JSON alone
    try:
        bench = Bench(args, ref, work)
        bench.compile_tools()
        kinds = [args.only] if args.only else ["java", "ours"]
        if args.matrix:
            return run_matrix(bench, args, kinds, ref, out)
        what = (
            "GET_ROUTEINFO_BY_TOPIC (RouteLoad)"
            if args.namesrv
            else (
                f"sync send {args.size} B, {'-q ' + str(args.messages) if args.messages else f'{args.seconds:.0f} s'}"
                f"{' + Consumer' if args.e2e else ''}, {args.flush}"
            )
        )
        print(
            f"bench_vs_java: {what}, {args.threads} threads, {args.rounds} rounds, java ref {ref}, "
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs",
            file=out,
            flush=True,
        )
        for rnd in range(args.rounds):
            order = kinds if rnd % 2 == 0 else kinds[::-1]
            for kind in order:
                res = bench.one(kind, rnd)
                res["load"] = os.getloadavg()[0]
                results[kind].append(res)
                cells = "  ".join(f"{lbl} {fmt(k, res[k])}" for k, lbl, _f in COLUMNS if k in res)
                print(f"round {rnd + 1} {kind:<4}  {cells}  (load avg {res['load']:.1f})", file=out, flush=True)
        print("median (min..max) over rounds:", file=out)
        for line in summarize(results):
            print(line, file=out)
        if args.json:
            print(json.dumps(json_safe(results)))
        return 0
    except StartError as exc:
        print(f"bench_vs_java: {exc}", file=sys.stderr)
        if results["java"] or results["ours"]:
            print("median (min..max) over the rounds done:")
            for line in summarize(results):
                print(line)
        return 1
    except KeyboardInterrupt:
        print("bench_vs_java: interrupted", file=sys.stderr)
        return 130
    finally:
        stop_all()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
