"""tools/fuzz/traced_server.py's heap report, without a fuzz run: it never takes the server's stderr (its
log) away from the log writer, and it never raises into the server it watches."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rocketpy import heap

TOOL = Path(__file__).resolve().parent.parent / "tools" / "fuzz" / "traced_server.py"
pytestmark = pytest.mark.timeout(60)


def _load(name: str = "traced_server") -> ModuleType:
    """tools/fuzz/NAME.py, with its folder on sys.path while it loads (fuzz_servers imports its siblings)."""
    spec = importlib.util.spec_from_file_location(name, TOOL.parent / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(TOOL.parent))
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(TOOL.parent))
    return mod


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ModuleType]:
    mod = _load()
    monkeypatch.setenv("TRACED_SERVER_DUMP", str(tmp_path / "broker.snap"))
    # walks of every object in the test process: slow
    monkeypatch.setattr(mod, "_big_objects", lambda tracked: [])
    monkeypatch.setattr(mod, "_exception_holders", lambda tracked: [])
    monkeypatch.setattr(mod, "_pool_census", lambda tracked: [])
    monkeypatch.setattr(mod, "_mmapped_chunks", lambda: [])
    yield mod


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/smaps and glibc's mallinfo2")
def test_heap_report_leaves_stderr_to_the_log_writer(traced: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    onto: list[int] = []
    real_dup2 = os.dup2

    def dup2(fd: int, fd2: int, inheritable: bool = True) -> int:
        onto.append(fd2)
        return real_dup2(fd, fd2, inheritable)

    monkeypatch.setattr(os, "dup2", dup2)
    traced._heap(signal.SIGUSR2, None)
    monkeypatch.undo()
    assert 2 not in onto  # redirected, the log listener's lines in that moment would be lost
    report = (tmp_path / "broker.snap.heap.0").read_text()
    assert "# arenas allocated current" in report and "gc objects " in report
    assert "failed" not in report


def test_a_failing_heap_report_says_so_and_does_not_raise(traced: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    def broken() -> dict[str, int]:
        raise OSError("no /proc here")

    monkeypatch.setattr(traced, "_anon_mappings", broken)
    traced._heap(signal.SIGUSR2, None)  # in the server this runs between two bytecodes of its event loop
    assert (tmp_path / "broker.snap.heap.0").read_text() == "heap report failed: OSError('no /proc here')\n"
    traced._heap(signal.SIGUSR2, None)
    assert (tmp_path / "broker.snap.heap.1").exists()


class _Cache:
    """Holds an exception, as the SQL92 compile cache once did."""


def test_the_heap_report_names_kept_exceptions_and_what_grew(traced: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    sys.path.insert(0, str(TOOL.parent))
    try:
        from fuzz_servers import heap_growth
    finally:
        sys.path.remove(str(TOOL.parent))
    monkeypatch.setattr(traced, "CENSUS_TYPES", None)  # every type: the test process has many more numerous
    traced._heap(signal.SIGUSR2, None)
    holder = _Cache()
    try:
        raise KeyError("kept")
    except KeyError as exc:
        holder.error = exc  # type: ignore[attr-defined]
    kept = [_Cache() for _ in range(50)]
    monkeypatch.setattr(traced, "_exception_holders", _load()._exception_holders)
    traced._heap(signal.SIGUSR2, None)
    first, last = ((tmp_path / f"broker.snap.heap.{n}").read_text() for n in (0, 1))
    grown = heap_growth(first, last, limit=None)
    assert f"{__name__}._Cache +{len(kept) + 1}" in grown
    assert "exception KeyError in _Cache 1" in grown


@pytest.mark.skipif(sys.platform != "linux" or sys.implementation.name != "cpython" or sys.maxsize < 2**32
                    or os.environ.get("PYTHONMALLOC", "pymalloc") != "pymalloc",
                    reason="reads pymalloc's pool headers (CPython, 64 bits) from /proc/self/maps' mappings")
def test_the_pool_census_finds_the_blocks_made() -> None:
    census = _load()
    made = [float(n) + 0.5 for n in range(50_000)]  # 24-byte objects: pymalloc's 32-byte size class
    pools = census._pools()
    # every block made is in a pool the scan found, of that size class, which counts it among its used ones
    homes = {id(x) & ~(census.POOL_SIZE - 1) for x in made}
    assert all(home in pools and pools[home][1] == 32 for home in homes)
    assert sum(pools[home][2] for home in homes) >= len(made)
    assert {size for _arena, size, _count, _capacity in pools.values()} <= set(range(16, 513, 16))


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/mem")
def test_the_pool_census_skips_a_region_gone_before_it_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    census = _load()
    real = census._anon_regions
    # the first 64 KiB are never mapped (vm.mmap_min_addr): as a region unmapped by another thread after
    # /proc/self/maps listed it; reading it at its address was a SIGSEGV that killed a fuzz run's broker
    monkeypatch.setattr(census, "_anon_regions", lambda: [(0, 4 * census.POOL_SIZE), *real()])
    made = [float(n) + 0.5 for n in range(5_000)]
    pools = census._pools()
    assert all(id(x) & ~(census.POOL_SIZE - 1) in pools for x in made)
    assert not any(addr < 4 * census.POOL_SIZE for addr in pools)


@pytest.mark.skipif(sys.platform != "linux", reason="reads glibc's chunk headers from /proc/self/mem")
def test_the_heap_report_lists_glibc_mapped_blocks_by_what_they_hold() -> None:
    census = _load()
    # as the servers do: blocks from 128 KiB up get a mapping of their own, when no free space in the heap
    # can take them: these are bigger than all of it
    if not heap.tune():
        pytest.skip("the C library is not glibc")
    size = census._mallinfo2()["fordblks"] + (1 << 20)
    # text some table keeps: bytes, and a str of each width (ASCII, another 1-byte, 2-byte)
    held = [b"x" * size, "t" * size, "\u00e9" * size, "\u20ac" * (size // 2)]
    items = [None] * (size // 8)
    looks_like_a_str = [str] * (size // 8 + 8192)  # its second word is str's address: not a str for that
    found = census._mmapped_chunks()

    def kib(request: int) -> int:  # glibc: the request and its size word, 16-aligned, its own page(s)
        return (((request + 8 + 15) & ~15) + 8 + 4095) // 4096 * 4

    # a str or bytes starts its block: its type, length, holder and start; a list's items are a block
    # of pointers: shown raw
    for text in held:
        kind = type(text).__qualname__
        assert f"mmapped chunk {kib(sys.getsizeof(text))} KiB: {kind} of {len(text)}, held by ['list']: " \
               f"{text[:120]!r}" in found
    for block in (items, looks_like_a_str):
        raw = f"mmapped chunk {kib(len(block) * 8)} KiB: "
        assert any(line.startswith((raw + "b'", raw + 'b"')) for line in found), raw
    assert found[-1].startswith(f"mmapped chunks found {len(found) - 1}, ")


def test_the_peak_watcher_names_the_code_of_a_burst(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from rocketpy.codecs import fastjson

    census = _load()
    monkeypatch.setattr(census, "PEAK_STEP", 20_000)
    text = fastjson.dumps([{"key": str(n), "n": n} for n in range(40_000)])
    stop = threading.Event()
    watcher = threading.Thread(target=census._watch_peaks, args=(threading.get_ident(), stop))
    watcher.start()
    kept = []
    try:
        # the burst, made inside rocketpy: 120,000 objects kept a while. On a busy machine the watcher may
        # not get a core before a parse ends (its one high then finds the test's frame): a few more bursts
        for _ in range(5):
            kept.append(fastjson.loads(text))
            if any("codecs/fastjson.py" in line for line in census._peaks):
                break
    finally:
        stop.set()
        watcher.join(5)
    assert any("codecs/fastjson.py" in line for line in census._peaks), list(census._peaks)
    assert all(len(parsed) == 40_000 for parsed in kept)


def test_the_sparse_holder_sample_reads_containers_only_and_copies_none() -> None:
    import tracemalloc

    census = _load()
    unread = (n for n in range(5))  # a generator the server would still read: a report must not run it
    assert census._sample(unread).startswith("[]") and next(unread) == 0
    assert census._sample([7, 8, 9, 10]).startswith("[7, 8, 9]")
    table = {n: str(n) for n in range(100_000)}
    tracemalloc.start()
    try:
        sample = census._sample(table)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # its first entries, not a copy of every entry (a tuple each: megabytes made on the heap being measured)
    assert sample.startswith("[(0, '0'), (1, '1'), (2, '2')]") and peak < 64 * 1024


def test_the_server_log_scan_takes_a_printed_warning_for_a_finding(tmp_path: Path) -> None:
    # a warning printed to a server's stderr (a coroutine never awaited...) is no traceback, but a defect all
    # the same: after a 30-minute run linecache held source files that only a printed warning or stack reads
    ServerLog = _load("server_process").ServerLog
    log = tmp_path / "broker.log"
    log.write_text(
        "2026-11-27 18:24:47,842 INFO rocketpy.store - [PAGECACHERT] TotalPut 0\n"
        "/x/rocketpy/remoting/connection.py:412: RuntimeWarning: coroutine 'Connection.x' was never awaited\n"
        "  self.start()\n"
        "2026-11-27 18:24:48,001 WARNING rocketpy.broker - TLS handshake with 1.2.3.4:5 failed: Warning: no\n"
        "2026-11-27 18:24:49,001 WARN rocketpy.logs - 7 log records dropped, 2 of them ERROR or above: ...\n"
        "2026-11-27 18:24:50,001 WARN rocketpy.logs - 5 log records dropped, 0 of them ERROR or above: ...\n"
    )
    scanned = ServerLog(log)
    scanned.scan()
    assert (scanned.dropped, scanned.dropped_errors) == (12, 2)  # a traceback may be among the 2
    assert scanned.unique == {"RuntimeWarning@connection.py:412": 1}
    assert scanned.tracebacks == 0
    assert "never awaited" in scanned.examples["RuntimeWarning@connection.py:412"]


def test_the_server_log_scan_finds_a_traceback_inside_an_exception_group(tmp_path: Path) -> None:
    # CPython indents an exception group's report throughout ("  + Exception Group Traceback", "    |
    # Traceback"): a 30-minute run's three such tracebacks went uncounted
    ServerLog = _load("server_process").ServerLog
    group = """2026-11-27 19:51:36,434 ERROR rocketpy.remoting - connection 127.0.0.1:36040 failed
  + Exception Group Traceback (most recent call last):
  |   File "/work/main/rocketpy/remoting/server.py", line 149, in handle_stream
  |     await conn.serve(self.dispatcher, ctx, inline=True)
  |   File "/v/trio/_core/_run.py", line 1117, in __aexit__
  |     raise combined_error_from_nursery
  | ExceptionGroup: Exceptions from Trio nursery (1 sub-exception)
  +-+---------------- 1 ----------------
    | Traceback (most recent call last):
    |   File "/work/main/rocketpy/remoting/connection.py", line 606, in _serve_socket
    |     await trio.lowlevel.wait_readable(raw)
    |   File "/v/outcome/_impl.py", line 213, in unwrap
    |     raise captured_error
    | trio.ClosedResourceError: another task closed this fd
    +------------------------------------
2026-11-27 19:51:36,436 WARN rocketpy.remoting - process request refused: code 11 from 127.0.0.1:1 answered
Traceback (most recent call last):
  File "/work/main/rocketpy/broker/stats.py", line 3, in f
    x()
KeyError: 'k'
"""
    log = tmp_path / "broker.log"
    log.write_text(group)
    scanned = ServerLog(log)
    scanned.scan()
    assert scanned.tracebacks == 2
    assert scanned.unique == {"trio.ClosedResourceError@connection.py:606": 1, "KeyError@stats.py:3": 1}


async def test_the_clean_up_deletes_what_the_run_made_and_nothing_else(tmp_path: Path) -> None:
    # the after-clean-up memory sample counts what no request asked the servers to keep: the clean-up must
    # take away the run's topics, groups (with their offsets) and KV configs, and leave what was there
    import trio

    from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode
    from rocketpy.codecs.headers import PutKVConfigRequestHeader
    from rocketpy.namesrv import NameServer, NamesrvConfig
    from rocketpy.testing import broker_client, running_broker, wait_until

    fuzz = _load("fuzz_servers")
    kv_path = tmp_path / "kvConfig.json"
    config = NamesrvConfig(listen_port=0, kv_config_path=str(kv_path),
                           config_store_path=str(tmp_path / "namesrv.properties"))
    async with trio.open_nursery() as nursery:
        namesrv = await nursery.start(NameServer(config).run)
        async with running_broker(str(tmp_path / "broker")) as broker, broker_client(broker.address) as c:

            async def put_kv(namespace: str, key: str) -> None:
                header = PutKVConfigRequestHeader(namespace=namespace, key=key, value="v")
                request = RemotingCommand.request(RequestCode.PUT_KV_CONFIG, header)
                assert (await c.client.invoke(namesrv.address, request)).code == ResponseCode.SUCCESS

            assert (await c.send("TKept", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            assert (await c.update_offset("GKept", "TKept", 0, 1)).code == ResponseCode.SUCCESS
            await put_kv("NsKept", "k")
            await wait_until(lambda: kv_path.exists() and "NsKept" in kv_path.read_text())
            before, kv_before = await fuzz.broker_tables(broker.address), frozenset(fuzz.kv_configs(kv_path))
            assert kv_before == {("NsKept", "k")}

            assert (await c.send("TMade", b"x", queue_id=0)).code == ResponseCode.SUCCESS
            assert (await c.update_offset("GMade", "TKept", 0, 1)).code == ResponseCode.SUCCESS
            await put_kv("NsMade", "k2")
            await put_kv("NsKept", "k3")
            await wait_until(lambda: "k3" in kv_path.read_text())
            cleaned = await fuzz.clean_up(namesrv.address, broker.address, before, kv_path, kv_before)
            assert (cleaned["topics deleted"], cleaned["groups deleted"], cleaned["kv configs deleted"]) == (1, 1, 2)
            assert set(broker.topics.table) == before["topics"]
            assert set(broker.offsets.table) == {"TKept@GKept"}
            # a namespace stays, empty, after its last key went (Java's deleteKVConfig keeps its map too)
            assert {ns: set(kv) for ns, kv in namesrv.kv.table.items()} == {"NsKept": {"k"}, "NsMade": set()}
        nursery.cancel_scope.cancel()


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/PID/status")
async def test_the_restart_sample_measures_both_servers_on_what_the_run_left_and_stops_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rocketpy.codecs import ResponseCode
    from rocketpy.testing import broker_client

    fuzz = _load("fuzz_servers")
    servers = sys.modules["server_process"]
    ns, broker = await servers.start_servers(tmp_path)
    try:
        async with broker_client(broker.addr) as c:
            assert (await c.send("TLeft", b"x", queue_id=0)).code == ResponseCode.SUCCESS
    finally:
        for p in (ns, broker):
            await servers.stop_server(p)
    (tmp_path / "broker.snap.heap.0").write_text("the run's report, read already")
    stopped: list[int | None] = []

    async def stop(p: object) -> int:
        code = await servers.stop_server(p)
        stopped.append(p.proc.returncode)  # type: ignore[attr-defined]
        return code

    monkeypatch.setattr(fuzz, "stop_server", stop)
    memory = await fuzz.restarted_memory(tmp_path, traced=False, heap=False, out=tmp_path)
    assert set(memory) == {"namesrv", "broker"}
    assert all(m["RssAnon"] > 0 for m in memory.values())
    assert len(stopped) == 2 and None not in stopped
    assert not (tmp_path / "broker.snap.heap.0").exists()


def _second_loopback_address() -> bool:
    """127.0.0.2 reaches a loopback listener (Linux routes all of 127/8 to lo)."""
    import socket

    try:
        with socket.socket() as listener, socket.socket() as client:
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            client.bind(("127.0.0.2", 0))
            client.connect(listener.getsockname())
        return True
    except OSError:
        return False


needs_127_0_0_2 = pytest.mark.skipif(not _second_loopback_address(), reason="127.0.0.2 does not reach loopback")


async def _acl_escalation_run(tmp_path: Path, guards: str, seconds: float) -> tuple[int, dict[str, Any]]:
    import argparse
    import json

    _load("fuzz_servers")  # (its folder on sys.path while it imports acl_escalation and server_process)
    acl = sys.modules["acl_escalation"]
    args = argparse.Namespace(seed=46, duration=seconds, servers="inprocess", guards=guards)
    code = await acl.run(args, tmp_path)
    return code, json.loads((tmp_path / "stats.json").read_text())[-1]


@needs_127_0_0_2
@pytest.mark.timeout(180)
async def test_the_acl_escalation_mode_gets_nowhere_against_our_servers(tmp_path: Path) -> None:
    """--mode acl-escalation against the servers as they start by default: every attempt of the issue was
    sent and refused, nothing changed, exit 0."""
    code, stats = await _acl_escalation_run(tmp_path, "on", 4)
    assert (code, stats["escalations"], stats["unique_findings"], stats["tracebacks"]) == (0, 0, [], [])
    attempts = stats["attempts"]
    assert len(attempts) == 15 and all(a["sent"] >= 1 and a["escalations"] == 0 for a in attempts.values())
    for name, entry in attempts.items():
        assert not any(answer.startswith("0 SUCCESS") for answer in entry["answers"]), (name, entry["answers"])
        if name.startswith("NameServer"):
            assert all(a.startswith("16 NO_PERMISSION") for a in entry["answers"]), entry["answers"]
    assert set(attempts["HA port from an unknown address"]["answers"]) == {"closed, nothing sent"}


@needs_127_0_0_2
@pytest.mark.timeout(240)
async def test_the_acl_escalation_mode_finds_the_escalations_with_the_guards_off(tmp_path: Path) -> None:
    """--guards off (aclStrictAdmin, aclStrictBatchSend, aclStrictReads false, every allow-list *: Java's
    behaviour): the mode can fail. One round; the attempts that get through Java whatever their random values
    are all found, and the run exits 1."""
    code, stats = await _acl_escalation_run(tmp_path, "off", 0)
    assert code == 1 and stats["rounds"] == 1
    found = {key.split(": ")[1] for key in stats["unique_findings"]}
    always = {
        "UPDATE_AND_CREATE_ACL_CONFIG (50)", "DELETE_ACL_CONFIG (51)", "SEND_BATCH_MESSAGE into a denied topic",
        "VIEW_MESSAGE_BY_ID of a denied topic", "GET_MAX_OFFSET of a denied topic", "HA port from an unknown address",
        *(f"NameServer {c} from an unknown address" for c in ("REGISTER_BROKER", "PUT_KV_CONFIG", "DELETE_KV_CONFIG",
                                                             "WIPE_WRITE_PERM_OF_BROKER", "DELETE_TOPIC_IN_NAMESRV")),
    }  # fmt: skip
    assert always <= found, always - found
