"""tools/bench/bench_vs_java.py without Java: its output parsers and the skip path."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "bench" / "bench_vs_java.py"
pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_vs_java", TOOL)
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules["bench_vs_java"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("bench_vs_java", None)


def test_producer_periodic_line(bench):
    line = (
        "Current Time: 2026-11-23 21:54:15,478 Send TPS: 5917 Max RT(ms): 2836 Average RT(ms):   5.461 "
        "Send Failed: 0 Response Failed: 3"
    )
    p = bench.parse_producer_line(line + "\n")
    assert p == {
        "tps": 5917.0,
        "max_rt_ms": 2836.0,
        "avg_rt_ms": 5.461,
        "send_failed": 0.0,
        "response_failed": 3.0,
        "complete": 0.0,
    }


def test_producer_complete_line(bench):
    line = (
        "[Complete] Send Total: 400000 Send TPS: 21234 Max RT(ms): 412 Average RT(ms):   1.503 "
        "Send Failed: 2 Response Failed: 0"
    )
    p = bench.parse_producer_line(line)
    assert p is not None
    assert p["complete"] == 1.0 and p["total"] == 400000.0 and p["tps"] == 21234.0 and p["send_failed"] == 2.0


def test_producer_other_lines(bench):
    assert bench.parse_producer_line("asyncEnable: false") is None
    assert bench.parse_producer_line("[Complete] Send Total: 12 Send Failed: 0 Response Failed: 0") is None
    assert (
        bench.parse_producer_line(
            "topic: T threadCount: 32 messageSize: 1024 keyEnable: false propertySize: 0 tagCount: 0 "
            "traceEnable: false aclEnable: false messageQuantity: 0"
        )
        is None
    )


def test_consumer_line(bench):
    c = bench.parse_consumer_line(
        "Current Time: 1795471134119 TPS: 2632 FAIL: 0 AVG(B2C) RT(ms): 207.991 AVG(S2C) RT(ms): 198.062 "
        "MAX(B2C) RT(ms): 6577 MAX(S2C) RT(ms): 6568"
    )
    assert c == {"tps": 2632.0, "fail": 0.0, "b2c": 207.991, "s2c": 198.062, "b2cmax": 6577.0, "s2cmax": 6568.0}
    idle = bench.parse_consumer_line(
        "Current Time: 1795471018726 TPS: 0 FAIL: 0 AVG(B2C) RT(ms):     NaN AVG(S2C) RT(ms):     NaN "
        "MAX(B2C) RT(ms): 0 MAX(S2C) RT(ms): 0"
    )
    assert idle is not None and idle["tps"] == 0.0 and idle["b2c"] != idle["b2c"]  # NaN
    assert bench.parse_consumer_line("Consumer Started.") is None


def test_kv_lines(bench):
    s = bench.parse_kv_line(
        "SendLatency count=15417 errors=0 seconds=5.003 tps=3081.7 p50_ms=6.709 p90_ms=18.050 p99_ms=68.872 "
        "p999_ms=316.423 max_ms=386.059",
        "SendLatency",
    )
    assert s is not None and s["count"] == 15417 and s["p99_ms"] == 68.872 and s["tps"] == 3081.7
    r = bench.parse_kv_line(
        "RouteLoad count=105510 errors=0 seconds=10.000 rps=10550.5 p50_ms=2.766 p99_ms=9.165 max_ms=17.066 "
        "brokers=1 queues=1",
        "RouteLoad",
    )
    assert r is not None and r["rps"] == 10550.5 and r["brokers"] == 1
    assert bench.parse_kv_line("RouteLoad count=1 rps=2", "SendLatency") is None
    assert bench.parse_kv_line("MEASURE_START", "RouteLoad") is None
    assert bench.parse_kv_line("SendLatency count=abc", "SendLatency") is None


def test_summary_ratio(bench):
    results = {
        "java": [{"send_tps": 100.0, "p99_ms": 4.0}, {"send_tps": 300.0, "p99_ms": 2.0}],
        "ours": [{"send_tps": 300.0, "p99_ms": 1.0}, {"send_tps": 500.0, "p99_ms": 3.0}],
    }
    lines = bench.summarize(results)
    assert len(lines) == 2
    assert "java 200 (100..300)" in lines[0] and "ours 400 (300..500)" in lines[0] and "ours/java  2.00" in lines[0]


def test_free_port(bench):
    p = bench.free_port((-2, 0, 1))
    assert 20000 <= p <= 60000


def test_skips_without_java_reference(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ROCKETMQ_JAVA_REF": str(tmp_path / "nope")}
    r = subprocess.run(
        [sys.executable, str(TOOL), "--java-ref", str(tmp_path / "missing")],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert r.returncode == 0
    assert r.stdout.startswith("bench_vs_java: skipped:") and len(r.stdout.strip().splitlines()) == 1
    assert r.stderr == ""


def test_wait_port_reports_a_dead_server(bench, tmp_path):
    log = tmp_path / "err.log"
    proc = bench.spawn(
        [sys.executable, "-c", "import sys; sys.stderr.write('boom: bad config\\n'); sys.exit(3)"], log=log
    )
    try:
        with pytest.raises(bench.StartError, match=r"exited with code 3 \(boom: bad config\)"):
            bench.wait_port(bench.free_port(), proc, 20, "test server")
    finally:
        bench.stop(proc)
    assert proc not in bench._LIVE


def test_matrix_options(bench):
    assert bench.int_list("1,4, 8") == [1, 4, 8]
    for bad in ("", "1,x", "0,2"):
        with pytest.raises(bench.argparse.ArgumentTypeError):
            bench.int_list(bad)
    with pytest.raises(SystemExit):
        bench.main(["--matrix", "--namesrv"])  # the matrix runs the Producer alone


def test_matrix_cell_row_and_json(bench):
    cell = bench.Cell(8, 256)
    cell.runs["java"] += [{"send_tps": 3000.0, "cpu_us_p": 90.0, "load": 2.0}, {"send_tps": 4000.0, "load": 4.0}]
    cell.runs["ours"] += [{"send_tps": 3500.0, "cpu_us_p": 50.0, "load": 3.0}]
    assert cell.ratio == 1.0  # 3500 / median(3000, 4000)
    row = bench.matrix_row(cell).split()
    assert row == ["8", "256", "3500", "3500", "1.00", "90.0", "50.0", "3.0"]
    assert len(bench.matrix_row(cell)) == len(bench.MATRIX_HEADER)
    only = bench.Cell(1, 1024)
    only.runs["ours"].append({"send_tps": 10.0, "cpu_us_p": float("nan")})
    out = bench.json_safe({"flush": "SYNC_FLUSH", **only.as_dict()})
    assert out["ratio"] is None and "java" not in out and out["ours"]["cpu_us_per_msg"] is None
    assert bench.json.loads(bench.json.dumps(out)) == out  # strict JSON: no NaN


def test_matrix_restarts_both_pairs_on_empty_stores_when_the_disk_runs_low(bench, tmp_path, monkeypatch):
    """A cell never runs on a nearly full disk: before it, both pairs start again on empty stores."""
    started: list[str] = []
    stopped: list[str] = []

    class FakePair:
        def __init__(self, kind):
            self.kind = kind
            started.append(kind)

        def pause(self):
            pass

        def resume(self):
            pass

        def stop(self):
            stopped.append(self.kind)

    free = iter([100, 10, 100])  # GiB before each of the three cells
    monkeypatch.setattr(bench, "_free_bytes", lambda path: next(free) * 2**30)
    b = bench.Bench.__new__(bench.Bench)
    b.args = bench.argparse.Namespace(matrix_min_free=40.0)
    b.work = tmp_path
    monkeypatch.setattr(b, "start_pair", FakePair, raising=False)
    monkeypatch.setattr(b, "_wait_registered", lambda pair: None, raising=False)
    monkeypatch.setattr(b, "run_producer", lambda pair, name, threads, size: {"send_tps": 1.0}, raising=False)
    cells = b.matrix(["java", "ours"], [1, 4, 8], [256], 1, lambda cell: None)
    assert len(cells) == 3 and all(len(c.runs["java"]) == len(c.runs["ours"]) == 1 for c in cells)
    # the pairs of the start, the two restarted before the second cell, then the four stops
    assert started == ["java", "ours", "java", "ours"]
    assert sorted(stopped) == ["java", "java", "ours", "ours"]
