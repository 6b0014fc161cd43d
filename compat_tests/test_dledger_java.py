"""Mixed DLedger groups: our members beside members running the official openmessaging/dledger 0.3.1.2 (the
library RocketMQ 4.9.8 ships), on 127.0.0.1, with real clocks.

Runs when ROCKETMQ_JAVA_REF names the reference install (its jars); skips with the reason otherwise. Each
Java member is ``clients/java/DLedgerMember.java`` (our small driver of DLedgerServer) in a subprocess.
Leaders are killed (kill -9 for Java, cancellation for ours) until each side has led at least once; every
acknowledged entry must be on every member afterwards, and the ledgers byte-identical.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import trio

from rocketpy.dledger.file_ledger import FileLedger
from rocketpy.dledger.member import DLedgerConfig, parse_peers
from rocketpy.dledger.node import DLedgerNode
from rocketpy.store.dledger_ledger import DLedgerLedger
from rocketpy.testing import free_port

HERE = Path(__file__).parent
GROUP = "dl"
DATA_SIZE = 1 << 20
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def dledger_java(java_ref: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(java command prefix, classpath) to run DLedgerMember, compiled once against the reference jars."""
    for tool in ("javac", "java"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    env = java_ref / "bin" / "env.sh"
    cp = subprocess.run(["bash", "-c", f'source "{env}"; server_classpath'], capture_output=True, text=True,
                        check=True).stdout.strip()
    opts = subprocess.run(["bash", "-c", f'source "{env}"; echo "$COMMON_OPTS"'], capture_output=True, text=True,
                          check=True).stdout.split()
    out = tmp_path_factory.mktemp("dledger-java")
    javac = subprocess.run(["javac", "-nowarn", "-proc:none", "-cp", cp, "-d", str(out),
                            str(HERE / "clients" / "java" / "DLedgerMember.java")], capture_output=True, text=True)
    if javac.returncode != 0:
        pytest.fail("javac DLedgerMember failed: " + javac.stderr[-2000:])
    quiet = out / "logback-quiet.xml"  # the library logs at DEBUG to stdout otherwise, which is our channel
    quiet.write_text('<configuration><root level="OFF"/></configuration>\n')
    return " ".join(["java", "-Xmx128m", f"-Dlogback.configurationFile={quiet}", *opts]), f"{out}{os.pathsep}{cp}"


class JavaMember:
    def __init__(self, java: tuple[str, str], node: str, peers: str, store: Path, ref: Path) -> None:
        self.node, self.store = node, store
        env = dict(os.environ, LD_PRELOAD=str(ref / "lib" / "native" / "libbind-loopback.so"))
        self.proc = subprocess.Popen(
            [*java[0].split(), "-cp", java[1], "DLedgerMember", GROUP, node, peers, str(store), str(DATA_SIZE)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)

    async def ask(self, line: str, want: str) -> list[str]:
        def talk() -> str:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            while True:
                out = self.proc.stdout.readline()
                if not out or out.startswith(want):
                    return out
        out = await trio.to_thread.run_sync(talk)
        assert out, f"Java member {self.node} ended"
        return out.split()

    async def ready(self) -> None:
        def wait() -> str:
            assert self.proc.stdout is not None
            while (line := self.proc.stdout.readline()) and not line.startswith("READY"):
                pass
            return line
        line = await trio.to_thread.run_sync(wait)
        assert line.startswith("READY"), line

    async def state(self) -> tuple[str, int, str]:
        parts = await self.ask("state", "STATE")
        return parts[1], int(parts[2]), parts[3]

    async def quit(self) -> None:
        """A clean shutdown (checkpoint written), as SIGTERM stops a broker."""
        def stop() -> None:
            assert self.proc.stdin is not None
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=30)
        await trio.to_thread.run_sync(stop)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def ledger_dir(self) -> Path:
        return self.store / f"dledger-{self.node}"


async def ours(
    nursery: trio.Nursery, node: str, peers: dict[str, str], store: Path
) -> tuple[DLedgerNode, trio.CancelScope]:
    d = store / f"dledger-{node}"
    d.mkdir(parents=True, exist_ok=True)
    ledger = FileLedger(d, DATA_SIZE)
    ledger.load()
    member = DLedgerNode(DLedgerConfig(group=GROUP, self_id=node, peers=peers), ledger, ledger_dir=d)
    scope = trio.CancelScope()

    async def run(task_status=trio.TASK_STATUS_IGNORED) -> None:
        try:
            with scope:
                await member.run(task_status=task_status)
        finally:
            ledger.close()

    await nursery.start(run)
    return member, scope


@pytest.mark.parametrize("java_ids", [("n1", "n2"), ("n2",)], ids=["1-rocketpy-2-java", "2-rocketpy-1-java"])
async def test_mixed_group_elects_replicates_and_fails_over(dledger_java, java_ref, tmp_path, java_ids) -> None:
    peers_text = ";".join(f"n{i}-127.0.0.1:{free_port()}" for i in range(3))
    peers = parse_peers(peers_text)
    java: dict[str, JavaMember] = {}
    mine: dict[str, tuple[DLedgerNode, trio.CancelScope]] = {}
    acked: list[bytes] = []
    led: set[str] = set()

    async def leader() -> str | None:
        views = {}
        for m, j in java.items():
            if j.proc.poll() is None:
                role, term, lead = await j.state()
                views[m] = (role, term, lead)
        for m, (n, scope) in mine.items():
            if not scope.cancel_called:
                views[m] = (n.role.value, n.state.curr_term, n.leader_id or "null")
        leaders = [m for m, v in views.items() if v[0] == "LEADER"]
        if len(leaders) != 1 or len(views) < 2:
            return None
        term = views[leaders[0]][1]
        if all(v[2] == leaders[0] and v[1] == term for v in views.values()):
            return leaders[0]
        return None

    async def wait_leader() -> str:
        with trio.fail_after(60):
            while (found := await leader()) is None:
                await trio.sleep(0.2)
        return found

    async def append(lead: str, text: str) -> bool:
        if lead in java:
            code = int((await java[lead].ask(f"append {text}", "APPEND"))[1])
            return code == 200
        try:
            await mine[lead][0].append(text.encode())
            return True
        except Exception:
            return False

    try:
        async with trio.open_nursery() as nursery:
            for m in peers:
                if m in java_ids:
                    java[m] = JavaMember(dledger_java, m, peers_text, tmp_path / m, java_ref)
                    await java[m].ready()
                else:
                    mine[m] = await ours(nursery, m, peers, tmp_path / m)
            for cycle in range(6):
                lead = await wait_leader()
                led.add(lead)
                for i in range(10):
                    text = f"c{cycle}-m{i}"
                    if await append(lead, text):
                        acked.append(text.encode())
                if any(m in java for m in led) and any(m in mine for m in led) and cycle >= 1:
                    break
                # the leader dies; it comes back as a follower (Java: a new process on its store)
                if lead in java:
                    java[lead].kill()
                else:
                    mine[lead][1].cancel()
                await trio.sleep(0.5)
                nxt = await wait_leader()
                assert nxt != lead
                if lead in java:
                    java[lead] = JavaMember(dledger_java, lead, peers_text, tmp_path / lead, java_ref)
                    await java[lead].ready()
                else:
                    mine[lead] = await ours(nursery, lead, peers, tmp_path / lead)
            assert acked, "nothing was acknowledged"
            # everyone catches up
            with trio.fail_after(60):
                while True:
                    ends = [int((await j.ask("state", "STATE"))[4]) for j in java.values()]
                    ends += [n.ledger.end_index for n, _ in mine.values()]
                    if len(set(ends)) == 1 and ends[0] >= len(acked) - 1:
                        break
                    await trio.sleep(0.3)
            for j in java.values():
                await j.quit()
            nursery.cancel_scope.cancel()
    finally:
        for j in java.values():
            j.kill()
    assert any(m in java for m in led) and any(m in mine for m in led), f"leaders seen: {sorted(led)}"
    ledgers = {m: [(e.index, e.term, e.pos, e.body) for e in DLedgerLedger(tmp_path / m / f"dledger-{m}").entries()]
               for m in peers}
    first = next(iter(ledgers.values()))
    assert all(v == first for v in ledgers.values()), {m: len(v) for m, v in ledgers.items()}
    bodies = [b for _, _, _, b in first]
    assert all(a in bodies for a in acked)  # no acknowledged entry lost
    for m in peers:
        assert DLedgerLedger(tmp_path / m / f"dledger-{m}").check() == []
    # byte for byte: the data files up to the last entry's end, and the index units
    last = first[-1]
    end = last[2] + 48 + len(last[3])
    data = {m: (tmp_path / m / f"dledger-{m}" / "data" / "00000000000000000000").read_bytes()[:end] for m in peers}
    units = {m: (tmp_path / m / f"dledger-{m}" / "index" / "00000000000000000000").read_bytes()[: 32 * len(first)]
             for m in peers}
    assert len(set(data.values())) == 1 and len(set(units.values())) == 1
    print(f"leaders seen: {sorted(led)}; entries {len(first)}; acknowledged {len(acked)}")
