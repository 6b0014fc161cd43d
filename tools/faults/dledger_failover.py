"""The DLedger failover run of issue 26: a three-broker group under faults, with the official Java benchmark Producer.

A NameServer (Java's) and three brokers of one ``brokerName`` with ``enableDLegerCommitLog=true`` (configs from
``examples/dledger/broker-n0.conf``, the ports, store dirs and peers replaced), then two producers:

* the official benchmark Producer (``bin/run-client.sh org.apache.rocketmq.example.benchmark.Producer``) on
  one topic, for load; its "Send TPS" lines give the group's send rate;
* ``compat_tests/clients/java/AckProducer.java`` on another topic: sync sends whose every acknowledgement
  (SEND_OK: key, time, msgId, offsetMsgId, queue, offset) is logged, so what was acknowledged is known.

Then ``--cycles`` faults, in turn: kill -9 the leader (restarted once a new leader took sends); SIGSTOP a
follower for ``--pause`` seconds, then SIGCONT; SIGSTOP the leader past the election timeout, then SIGCONT (it
must step down: register as a slave again); restart a member (SIGTERM, start again; the leader every other
time). Between cycles the group must be whole again (three members registered, one master). At the end
every queue of the acknowledged topic is read from the master and from each member's store
(``rocketpy store dump``), and the report says: acknowledged, lost (acknowledged but not read), duplicates
(a key read more than once; the producer retries at most ``--retries`` times, so more copies than
``1 + retries`` is beyond its retries), the time from each leader's death (or stop) to the first
acknowledged send through the new leader (min/median/max), the send rates, and each member's role changes
from its log.

    python tools/faults/dledger_failover.py [--impl java|rocketpy|mixed] [--cycles 20] [--json]

``mixed`` runs two groups: one rocketpy + two Java members, then two rocketpy + one Java. Our brokers run as
``python -m rocketpy broker -c CONF`` with the same broker.conf a Java user writes. Needs the Java reference
build (ROCKETMQ_JAVA_REF, default ~/.cache/rocketmq-java-4.9.8) and a JDK (javac) for AckProducer.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocketpy.testing import free_broker_port, free_port  # noqa: E402

TEMPLATE = ROOT / "examples" / "dledger" / "broker-n0.conf"


class RocketpyRoot:
    """Where our brokers' code comes from (``--rocketpy-root``: another checkout, to try its broker)."""

    path = ROOT
GROUP = "broker-dl"
ACK_TOPIC = "DlFailoverAcked"
BENCH_TOPIC = "DlFailoverBench"
QUEUES = 4
FAULTS = ("kill_leader", "stop_follower", "stop_leader", "restart_member")
# what DLedgerRoleChangeHandler logs on a role change (read from ours too, where it logs the same words)
_ROLE_CHANGE = re.compile(
    r"Finish handling broker role change succ=(\w+) term=(\d+) role=(\w+)\S*(?: currStoreRole=\w+)?(?: cost=(\d+))?"
)
_TPS = re.compile(r"Send TPS:\s*([\d.]+)")


def java_ref_dir() -> Path:
    return Path(os.environ.get("ROCKETMQ_JAVA_REF", "~/.cache/rocketmq-java-4.9.8")).expanduser()


def load_template(path: Path = TEMPLATE) -> list[tuple[str, str] | str]:
    """The example broker.conf as lines: (key, value) for settings, comment and blank lines as they are."""
    out: list[tuple[str, str] | str] = []
    for line in path.read_text().splitlines():
        text = line.strip()
        if not text or text.startswith(("#", "!")) or "=" not in text:
            out.append(line)
            continue
        key, value = text.split("=", 1)
        out.append((key.strip(), value.strip()))
    return out


def render_conf(template: list[tuple[str, str] | str], values: dict[str, str]) -> str:
    """The template with ``values`` in place of its own (keys it lacks are added at the end)."""
    lines, seen = [], set()
    for item in template:
        if isinstance(item, str):
            lines.append(item)
            continue
        key, value = item
        seen.add(key)
        lines.append(f"{key} = {values.get(key, value)}")
    lines.extend(f"{k} = {v}" for k, v in values.items() if k not in seen)
    return "\n".join(lines) + "\n"


@dataclass
class Member:
    """One broker of the group: its config, process and log."""

    self_id: str
    impl: str  # java or rocketpy
    port: int
    peer_port: int
    work: Path
    conf: Path = field(init=False)
    log: Path = field(init=False)
    proc: subprocess.Popen[bytes] | None = None
    stopped: bool = False  # SIGSTOPped

    def __post_init__(self) -> None:
        self.conf = self.work / f"broker-{self.self_id}.conf"
        self.log = self.work / f"broker-{self.self_id}.out"

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def store(self) -> Path:
        return self.work / f"store-{self.self_id}"

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def write_conf(self, template: list[tuple[str, str] | str], peers: str, namesrv: str) -> None:
        self.conf.write_text(
            render_conf(
                template,
                {
                    "listenPort": str(self.port),
                    "namesrvAddr": namesrv,
                    "storePathRootDir": str(self.store),
                    "storePathCommitLog": str(self.store / "commitlog"),
                    "dLegerPeers": peers,
                    "dLegerSelfId": self.self_id,
                    # small files: a fault run writes a few hundred MiB at most
                    "mappedFileSizeCommitLog": str(64 << 20),
                    "mappedFileSizeConsumeQueue": str(300000 * 20),
                },
            )
        )

    def command(self) -> list[str]:
        if self.impl == "rocketpy":
            return [sys.executable, "-m", "rocketpy", "broker", "-c", str(self.conf)]
        ref = java_ref_dir()
        home = self.work / f"home-{self.self_id}"  # the member's logs: home/logs/rocketmqlogs/
        home.mkdir(exist_ok=True)
        script = (
            f'source "{ref}/bin/env.sh"; server_preload; '
            f'exec "$JAVA" $SERVER_OPTS_BASE $COMMON_OPTS $SERVER_EXTRA_OPTS -Duser.home="{home}" '
            f'-cp "$(server_classpath)" org.apache.rocketmq.broker.BrokerStartup -c "{self.conf}"'
        )
        return ["bash", "-c", script]

    def start(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(RocketpyRoot.path))
        with open(self.log, "ab") as out:
            # run in the work directory: ``python -m`` puts the current directory first on sys.path, where a
            # checkout would win over --rocketpy-root
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True, cwd=self.work)
        self.stopped = False

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, sig)  # bash exec'd the JVM: the pid is the broker's
        if sig == signal.SIGSTOP:
            self.stopped = True
        elif sig == signal.SIGCONT:
            self.stopped = False

    def kill9(self) -> None:
        if self.stopped:
            self.signal(signal.SIGCONT)
        self.signal(signal.SIGKILL)
        assert self.proc is not None
        self.proc.wait()

    def stop(self, timeout: float = 40) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        if self.stopped:
            self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.proc.wait()

    def role_changes(self) -> list[str]:
        """The role changes its log records ("term/ROLE/cost", in order; a LEADER's cost is how long it waited
        for its ledger to be committed and dispatched before it became master)."""
        texts = [self.log.read_text(errors="replace")] if self.log.exists() else []
        java_log = self.work / f"home-{self.self_id}" / "logs" / "rocketmqlogs" / "broker.log"
        if java_log.exists():
            texts.append(java_log.read_text(errors="replace"))
        return [
            f"{term}/{role}" + (f"/{cost}ms" if cost else "")
            for text in texts
            for ok, term, role, cost in _ROLE_CHANGE.findall(text)
            if ok.lower() == "true"
        ]


class Group:
    def __init__(self, impls: list[str], work: Path, namesrv: str) -> None:
        self.work = work
        self.namesrv = namesrv
        ports = [free_broker_port() for _ in impls]
        peer_ports = [free_port() for _ in impls]
        self.members = [
            Member(f"n{i}", impl, ports[i], peer_ports[i], work) for i, impl in enumerate(impls)
        ]
        peers = ";".join(f"{m.self_id}-127.0.0.1:{m.peer_port}" for m in self.members)
        template = load_template()
        for m in self.members:
            m.write_conf(template, peers, namesrv)

    def by_addr(self, addr: str) -> Member | None:
        return next((m for m in self.members if m.addr == addr), None)

    def by_port(self, port: int) -> Member | None:
        return next((m for m in self.members if m.port == port), None)

    async def registered(self) -> dict[int, str]:
        """brokerId -> address of the group as the NameServer has it ({} when it cannot say)."""
        from rocketpy.client.admin import Admin

        try:
            with trio.fail_after(5):
                async with Admin(self.namesrv) as admin:
                    info = await admin.cluster_info()
        except Exception:  # the NameServer is only asked; any failure means "not known now"
            return {}
        data = (info.broker_addr_table or {}).get(GROUP)
        return {int(k): v for k, v in ((data.broker_addrs or {}) if data is not None else {}).items()}

    async def leader(self) -> Member | None:
        addrs = await self.registered()
        return self.by_addr(addrs[0]) if 0 in addrs else None

    async def wait_leader(self, timeout: float, not_member: Member | None = None) -> Member:
        with trio.fail_after(timeout):
            while True:
                m = await self.leader()
                if m is not None and m is not not_member and m.alive and not m.stopped:
                    return m
                await trio.sleep(0.1)

    async def wait_whole(self, timeout: float) -> Member:
        """Until every member is registered (one master, two slaves) and alive."""
        with trio.fail_after(timeout):
            while True:
                addrs = await self.registered()
                live = {m.addr for m in self.members if m.alive and not m.stopped}
                if 0 in addrs and set(addrs.values()) == live == {m.addr for m in self.members}:
                    m = self.by_addr(addrs[0])
                    assert m is not None
                    return m
                await trio.sleep(0.2)


class AckLog:
    """The AckProducer's lines as they come: acknowledgements with their time and storing broker."""

    def __init__(self) -> None:
        self.acked: dict[str, tuple[int, int]] = {}  # key -> (epoch ms, store port)
        self.ack_times: list[tuple[int, int]] = []  # (epoch ms, store port), in arrival order
        self.nok = Counter[str]()
        self.failed = Counter[str]()
        self.ready = trio.Event()

    def feed(self, line: str) -> None:
        parts = line.split()
        if not parts:
            return
        if parts[0] == "ACK" and len(parts) >= 7:
            port = int(parts[4][8:16], 16)  # offsetMsgId: store ip (8 hex), port (8 hex), offset (16 hex)
            self.acked[parts[1]] = (int(parts[2]), port)
            self.ack_times.append((int(parts[2]), port))
        elif parts[0] == "NOK":
            self.nok[parts[3]] += 1
        elif parts[0] == "FAIL":
            self.failed[parts[3]] += 1
        elif parts[0] == "READY":
            self.ready.set()

    def first_ack_after(self, t_ms: int, not_port: int) -> int | None:
        for t, port in self.ack_times:
            if t >= t_ms and port != not_port:
                return t
        return None


def _classpath() -> str:
    return subprocess.run(["bash", str(java_ref_dir() / "bin" / "java-cp.sh")], capture_output=True, text=True,
                          check=True).stdout.strip()


def compile_ack_producer(out: Path) -> str:
    cp = _classpath()
    out.mkdir(parents=True, exist_ok=True)
    src = ROOT / "compat_tests" / "clients" / "java" / "AckProducer.java"
    subprocess.run(["javac", "-nowarn", "-proc:none", "-encoding", "UTF-8", "-cp", cp, "-d", str(out), str(src)],
                   check=True, capture_output=True)
    return f"{out}:{cp}"


async def _pump_lines(stream: Any, sink: Any, log: Path) -> None:
    buf = b""
    with open(log, "ab") as f:
        while True:
            chunk = await stream.receive_some(65536)
            if not chunk:
                return
            f.write(chunk)
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                sink(line.decode(errors="replace"))


async def create_topics(group: Group) -> None:
    from compat_tests.servers import create_topic

    for m in group.members:
        for topic in (ACK_TOPIC, BENCH_TOPIC):
            with trio.fail_after(10):
                await create_topic(m.addr, topic, QUEUES)


async def wait_port(member: Member, timeout: float) -> None:
    """Until the member listens on its port; a member that exits first is an error naming its last words."""
    with trio.fail_after(timeout):
        while True:
            if not member.alive:
                tail = member.log.read_text(errors="replace").strip().splitlines()[-1:] if member.log.exists() else []
                raise RuntimeError(f"{member.self_id} ({member.impl}) exited: {' '.join(tail) or 'no output'}")
            try:
                s = await trio.open_tcp_stream("127.0.0.1", member.port)
                await s.aclose()
                return
            except OSError:
                await trio.sleep(0.2)


async def run_group(impls: list[str], cycles: int, pause: float, retries: int, threads: int,
                    bench_threads: int, steady: float, keep: bool) -> dict[str, Any]:
    from compat_tests.servers import java_namesrv

    work = Path(tempfile.mkdtemp(prefix="dledger-failover-"))
    ref = java_ref_dir()
    classpath = compile_ack_producer(work / "classes")
    report: dict[str, Any] = {"impls": impls, "work": str(work)}
    async with java_namesrv(ref, free_port(), work) as namesrv:
        group = Group(impls, work, namesrv)
        for m in group.members:
            m.start()
        try:
            for m in group.members:
                await wait_port(m, 120)
            first = await group.wait_whole(120)
            report["first_leader"] = first.self_id
            await create_topics(group)
            from compat_tests.servers import wait_for_route

            for topic in (ACK_TOPIC, BENCH_TOPIC):
                await wait_for_route(namesrv, topic, timeout=60)
            report.update(await _drive(group, namesrv, classpath, work, cycles, pause, retries, threads,
                                       bench_threads, steady))
        except (RuntimeError, trio.TooSlowError) as exc:  # the group never formed: say so, in one line
            report["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            for m in group.members:
                m.stop()
            report["role_changes"] = {m.self_id: m.role_changes() for m in group.members}
    if not keep and not report.get("error"):
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return report


async def _drive(group: Group, namesrv: str, classpath: str, work: Path, cycles: int, pause: float,
                 retries: int, threads: int, bench_threads: int, steady: float) -> dict[str, Any]:
    ref = java_ref_dir()
    acks = AckLog()
    client_opts = [f"-Drocketmq.client.logRoot={work}/client-logs", f"-Duser.home={work}"]
    producer = await trio.lowlevel.open_process(
        ["java", "-Xms128m", "-Xmx512m", *client_opts, "-cp", classpath, "AckProducer", namesrv, ACK_TOPIC,
         str(threads), "512", str(retries), "1000"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    bench_out = work / "bench-producer.out"
    bench = subprocess.Popen(
        ["bash", str(ref / "bin" / "run-client.sh"), "org.apache.rocketmq.example.benchmark.Producer", "-n",
         namesrv, "-t", BENCH_TOPIC, "-w", str(bench_threads), "-s", "1024"],
        stdout=open(bench_out, "ab"), stderr=subprocess.STDOUT, start_new_session=True,
        env=dict(os.environ, JAVA_OPT_EXT="-Xms128m -Xmx512m"),
    )
    out: dict[str, Any] = {}
    t_start = time.time()
    async with trio.open_nursery() as nursery:
        assert producer.stdout is not None
        nursery.start_soon(_pump_lines, producer.stdout, acks.feed, work / "ack-producer.out")
        try:
            with trio.fail_after(60):
                await acks.ready.wait()
                while not acks.acked:
                    await trio.sleep(0.2)
            # the group's send rate, before any fault: acks/s of AckProducer and the benchmark's TPS lines
            await trio.sleep(10)  # warm-up: the benchmark prints every 10 s
            lines_before = len(_TPS.findall(bench_out.read_text(errors="replace")))
            acked_before, t_steady = len(acks.acked), time.time()
            await trio.sleep(steady)
            tps = [float(x) for x in _TPS.findall(bench_out.read_text(errors="replace"))[lines_before:]]
            out["steady_send_rate"] = {
                "seconds": steady,
                "ack_producer_per_s": round((len(acks.acked) - acked_before) / (time.time() - t_steady), 1),
                "bench_producer_tps": tps,
            }
            for i in range(cycles):
                kind = FAULTS[i % len(FAULTS)]
                rec = await _cycle(group, acks, kind, i, pause)
                out.setdefault("cycles", []).append(rec)
                print(json.dumps(rec), file=sys.stderr, flush=True)
            await trio.sleep(3)  # acks in flight settle
        except Exception as exc:  # the report says where the run stopped, with what it had
            out["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            t_end = time.time()
            os.killpg(bench.pid, signal.SIGTERM)
            bench.wait()
            assert producer.stdin is not None
            await producer.stdin.aclose()
            with trio.move_on_after(30):
                await producer.wait()
            if producer.returncode is None:
                producer.kill()
                await producer.wait()
    out["seconds"] = round(t_end - t_start, 1)
    out.update(await _verify(group, acks, retries))
    tps = [float(x) for x in _TPS.findall(bench_out.read_text(errors="replace"))]
    out["send_rate"] = {  # over the whole run, faults included
        "bench_producer_tps_mean": round(statistics.mean(tps), 1) if tps else None,
        "ack_producer_per_s": round(len(acks.acked) / max(1e-9, t_end - t_start), 1),
    }
    out["loadavg"] = Path("/proc/loadavg").read_text().split()[:3]
    return out


async def _cycle(group: Group, acks: AckLog, kind: str, i: int, pause: float) -> dict[str, Any]:
    leader = await group.wait_whole(120)
    followers = [m for m in group.members if m is not leader]
    rec: dict[str, Any] = {"cycle": i + 1, "fault": kind, "leader": leader.self_id}
    t0 = int(time.time() * 1000)
    round_ = i // len(FAULTS)  # restarts alternate between the leader and a follower, round by round
    if kind == "kill_leader" or (kind == "restart_member" and round_ % 2 == 0):
        victim = leader
        if kind == "kill_leader":
            victim.kill9()
        else:
            victim.stop()
        rec["member"] = victim.self_id
        new = await group.wait_leader(60, not_member=victim)
        rec["new_leader"] = new.self_id
        rec["to_new_master_ms"] = int(time.time() * 1000) - t0
        rec["to_first_ack_ms"] = await _first_ack(acks, t0, victim.port, 60)
        victim.start()
        await wait_port(victim, 120)
    elif kind == "stop_follower" or kind == "restart_member":
        victim = followers[round_ % 2]
        rec["member"] = victim.self_id
        if kind == "stop_follower":
            victim.signal(signal.SIGSTOP)
            await trio.sleep(pause)
            victim.signal(signal.SIGCONT)
        else:
            victim.stop()
            victim.start()
            await wait_port(victim, 120)
        acked_before = len(acks.acked)
        with trio.fail_after(60):
            while len(acks.acked) == acked_before:
                await trio.sleep(0.1)
    else:  # stop_leader: frozen past the election timeout (3 missed 2 s heartbeats), then resumed
        victim = leader
        rec["member"] = victim.self_id
        victim.signal(signal.SIGSTOP)
        new = await group.wait_leader(60, not_member=victim)
        rec["new_leader"] = new.self_id
        rec["to_new_master_ms"] = int(time.time() * 1000) - t0
        rec["to_first_ack_ms"] = await _first_ack(acks, t0, victim.port, 60)
        left = pause - (time.time() * 1000 - t0) / 1000
        if left > 0:
            await trio.sleep(left)
        victim.signal(signal.SIGCONT)
        t_cont = time.time()
        # it must step down: registered again, as a slave (brokerId != 0), with the other still master
        stepped = False
        with trio.move_on_after(60):
            while True:
                addrs = await group.registered()
                if victim.addr in addrs.values() and addrs.get(0) not in (None, victim.addr):
                    stepped = True
                    break
                await trio.sleep(0.2)
        rec["stepped_down"] = stepped
        rec["step_down_s"] = round(time.time() - t_cont, 1) if stepped else None
    whole = await group.wait_whole(120)
    rec["leader_after"] = whole.self_id
    rec["seconds"] = round(time.time() - t0 / 1000, 1)
    return rec


async def _first_ack(acks: AckLog, t0: int, not_port: int, timeout: float) -> int | None:
    with trio.move_on_after(timeout):
        while True:
            t = acks.first_ack_after(t0, not_port)
            if t is not None:
                return t - t0
            await trio.sleep(0.05)
    return None


async def _verify(group: Group, acks: AckLog, retries: int) -> dict[str, Any]:
    """Read everything back: from the master (PULL) and from each member's store (rocketpy store dump)."""
    from rocketpy.testing import pull_queues

    out: dict[str, Any] = {}
    leader = await group.wait_whole(120)
    await trio.sleep(5)  # followers apply the last commits
    got = await pull_queues(leader.addr, ACK_TOPIC, QUEUES, group="DlFailoverCheck")
    keys = Counter(body.split(b"|", 1)[0].decode() for body in got.values())
    acked = set(acks.acked)
    lost = sorted(acked - set(keys))
    dups = {k: n for k, n in keys.items() if n > 1}
    out.update(
        acknowledged=len(acked),
        consumed=sum(keys.values()),
        consumed_distinct=len(keys),
        lost=len(lost),
        lost_keys=lost[:20],
        duplicates=sum(n - 1 for n in dups.values()),
        duplicates_beyond_retries=sum(1 for n in dups.values() if n > 1 + retries),
        not_ok_answers=dict(acks.nok),
        failed_sends=dict(acks.failed),
    )
    for m in group.members:
        m.stop()
    # every member's store read back (the three dumps side by side: each takes minutes for 500k records)
    dumps = {
        m.self_id: subprocess.Popen(
            [sys.executable, "-m", "rocketpy", "store", "dump", "--json", "--topic", ACK_TOPIC, str(m.store)],
            stdout=open(group.work / f"dump-{m.self_id}.jsonl", "wb"), stderr=subprocess.DEVNULL,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        for m in group.members
    }
    stores = {}
    for self_id, proc in dumps.items():
        code = await trio.to_thread.run_sync(proc.wait)
        have: Counter[str] = Counter()
        with open(group.work / f"dump-{self_id}.jsonl", "rb") as f:
            for line in f:
                if line.startswith(b"{"):
                    have[json.loads(line).get("keys")] += 1
        stores[self_id] = {"records": sum(have.values()), "acked_missing": len(acked - set(have)), "dump_exit": code}
    out["stores"] = stores
    out["ledgers"] = _ledgers_agree(group)
    return out


def _ledgers_agree(group: Group) -> dict[str, Any]:
    """Whether the members' ledgers are byte-identical up to the end of the lowest committed entry (data
    files and index units), and each one's committed/end index and term (from its checkpoint files)."""
    from rocketpy.codecs.dledger import DLEDGER_INDEX_UNIT, INDEX_UNIT_SIZE
    from rocketpy.store.dledger_ledger import DLedgerLedger, find_ledger_dirs

    states, dirs = {}, {}
    for m in group.members:
        found = find_ledger_dirs(m.store)
        if not found:
            return {"error": f"{m.self_id}: no ledger under {m.store}"}
        dirs[m.self_id] = found[0]
        st = DLedgerLedger(found[0]).state()
        states[m.self_id] = {"committed": st.committed_index, "end": st.end_index, "term": st.current_term}
    upto = min(s["committed"] for s in states.values())
    if upto < 0:
        return {"members": states, "same_up_to_committed": True, "bytes_compared": 0}
    any_dir = next(iter(dirs.values()))
    unit_at = upto * INDEX_UNIT_SIZE
    index_files = sorted((int(p.name), p) for p in (any_dir / "index").iterdir() if p.name.isdigit())
    base, path = [(b, p) for b, p in index_files if b <= unit_at][-1]
    with open(path, "rb") as f:
        f.seek(unit_at - base)
        unit = DLEDGER_INDEX_UNIT.parse(f.read(INDEX_UNIT_SIZE))
    data_end = unit.pos + unit.size

    def same(sub: str, end: int) -> bool:
        names = sorted(p.name for p in (any_dir / sub).iterdir() if p.name.isdigit())
        for name in names:
            lo = int(name)
            if lo >= end:
                break
            n = end - lo
            blobs = set()
            for d in dirs.values():
                with open(d / sub / name, "rb") as f:
                    blobs.add(f.read(n))
            if len(blobs) != 1:
                return False
        return True

    return {
        "members": states,
        "same_up_to_committed": same("data", data_end) and same("index", unit_at + INDEX_UNIT_SIZE),
        "bytes_compared": data_end,
    }


def _spread(values: list[int]) -> dict[str, Any]:
    return {
        "n": len(values),
        "min": min(values) if values else None,
        "median": statistics.median(values) if values else None,
        "max": max(values) if values else None,
    }


def _summary(report: dict[str, Any]) -> dict[str, Any]:
    cycles = report.get("cycles", [])
    failovers = [c for c in cycles if c.get("new_leader") is not None]
    steps = [c.get("stepped_down") for c in cycles if c["fault"] == "stop_leader"]
    return {
        "to_first_ack_ms": _spread([c["to_first_ack_ms"] for c in failovers if c.get("to_first_ack_ms") is not None]),
        "to_first_ack_ms_by_fault": {
            kind: _spread([c["to_first_ack_ms"] for c in failovers if c["fault"] == kind and c.get("to_first_ack_ms")])
            for kind in sorted({c["fault"] for c in failovers})
        },
        "to_new_master_ms": _spread([c["to_new_master_ms"] for c in failovers if "to_new_master_ms" in c]),
        "stop_leader_stepped_down": f"{sum(1 for s in steps if s)}/{len(steps)}",
        "leaders_by_term": {
            m: sorted({int(rc.split("/")[0]) for rc in changes if rc.split("/")[1] == "LEADER"})
            for m, changes in report.get("role_changes", {}).items()
        },
        "leader_to_master_ms": _spread([
            int(rc.split("/")[2][:-2]) for changes in report.get("role_changes", {}).values() for rc in changes
            if rc.split("/")[1] == "LEADER" and rc.count("/") == 2
        ]),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--impl", choices=("java", "rocketpy", "mixed"), default="java")
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--pause", type=float, default=10.0, help="seconds a SIGSTOPped member stays stopped")
    ap.add_argument("--retries", type=int, default=2, help="the AckProducer's retryTimesWhenSendFailed")
    ap.add_argument("--threads", type=int, default=4, help="AckProducer threads")
    ap.add_argument("--bench-threads", type=int, default=8, help="benchmark Producer threads (-w)")
    ap.add_argument("--steady", type=float, default=30.0, help="seconds of sends measured before the first fault")
    ap.add_argument("--rocketpy-root", type=Path, default=ROOT,
                    help="the checkout our brokers run from (default: this one)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (stores, logs)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    RocketpyRoot.path = args.rocketpy_root.resolve()
    groups = {
        "java": [["java"] * 3],
        "rocketpy": [["rocketpy"] * 3],
        "mixed": [["rocketpy", "java", "java"], ["rocketpy", "rocketpy", "java"]],
    }[args.impl]
    reports = []
    for impls in groups:
        rep = trio.run(run_group, impls, args.cycles, args.pause, args.retries, args.threads, args.bench_threads,
                       args.steady, args.keep)
        rep["summary"] = _summary(rep)
        reports.append(rep)
    failed = any(r.get("error") or r.get("lost") or r.get("duplicates_beyond_retries") for r in reports)
    if args.json:
        print(json.dumps(reports if len(reports) > 1 else reports[0], indent=1))
    else:
        for r in reports:
            s = r["summary"]
            w = s["to_first_ack_ms"]
            print(f"group {'+'.join(r['impls'])}: {len(r.get('cycles', []))} cycles in {r.get('seconds')} s"
                  f"{'; ERROR ' + r['error'] if r.get('error') else ''}")
            if r.get("error"):
                print(f"  logs and stores kept in {r['work']}")
            if "acknowledged" not in r:
                continue  # it never got to sending
            print(f"  acknowledged {r.get('acknowledged')}, lost {r.get('lost')}, duplicates {r.get('duplicates')}"
                  f" (beyond retries {r.get('duplicates_beyond_retries')}), failed sends {r.get('failed_sends')}")
            print(f"  leader death/stop -> first ack via the new leader: min {w['min']} ms, median {w['median']} ms,"
                  f" max {w['max']} ms over {w['n']}; SIGSTOPped leaders stepped down {s['stop_leader_stepped_down']}")
            print(f"  by fault: {s['to_first_ack_ms_by_fault']}; new master in the NameServer: {s['to_new_master_ms']}")
            print(f"  send rate before faults: {r.get('steady_send_rate')}; over the run: {r.get('send_rate')};"
                  f" load {r.get('loadavg')}")
            print(f"  stores: {r.get('stores')}; ledgers: {r.get('ledgers')}")
            print(f"  terms led (from the role changes in the logs): {s['leaders_by_term']}; elected leader to"
                  f" master (waiting for its ledger to be committed and dispatched): {s['leader_to_master_ms']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
