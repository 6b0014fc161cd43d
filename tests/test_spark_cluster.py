"""The store audit on a Spark standalone cluster: a master and a worker on 127.0.0.1, the
job submitted to them with spark-submit (the way a user runs spark/jobs/): the export into a
lake runs in executor processes of their own, then the audit's queries over it.

Kept to one small run (the golden store, one worker of 2 cores): Spark tests are the
slowest part of CI. Skipped, with the reason, where pyspark's launch scripts or Java are missing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
    pytest.skip("no Java runtime: Spark needs java on PATH or JAVA_HOME", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
STORE = ROOT / "protocol" / "golden" / "store-dump"
SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
SPARK_SUBMIT = SPARK_HOME / "bin" / "spark-submit"
if not (SPARK_CLASS.exists() and SPARK_SUBMIT.exists()):
    pytest.skip("pyspark has no bin/spark-class or bin/spark-submit", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_DAEMON_MEMORY="256m",  # the master and worker JVMs need little
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(tmp / "logs"),
        SPARK_WORKER_DIR=str(tmp / "work"),
        # Keep the executors' directories after the job: the test reads their logs.
        SPARK_WORKER_OPTS="-Dspark.worker.cleanup.enabled=false",
    )
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)  # polling a log file of another process: no clock to mock here
    raise AssertionError(f"{log.name}: no {text!r} within {timeout}s:\n{log.read_text(errors='replace')[-3000:]}")


def _stop(proc: subprocess.Popen) -> None:
    # Each daemon leads its own process group (start_new_session): end that group only.
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture
def cluster(tmp_path) -> Iterator[tuple[str, dict[str, str]]]:
    env = _env(tmp_path)
    port = _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    try:
        master_log = tmp_path / "master.log"
        with master_log.open("wb") as out:
            master = subprocess.Popen(
                [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master"]
                + ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port())],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        procs.append(master)
        _wait_for(master_log, "I have been elected leader", master, 120)
        worker_log = tmp_path / "worker.log"
        with worker_log.open("wb") as out:
            worker = subprocess.Popen(
                [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker"]
                + ["--host", "127.0.0.1", "--cores", "2", "--memory", "1g", "--webui-port", str(_free_port())]
                + ["--work-dir", str(tmp_path / "work"), master_url],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        procs.append(worker)
        _wait_for(worker_log, "Successfully registered with master", worker, 120)
        yield master_url, env
    finally:
        for proc in reversed(procs):
            _stop(proc)


@pytest.mark.timeout(420)
def test_store_audit_on_a_standalone_cluster(cluster, tmp_path):
    master_url, env = cluster
    out = subprocess.run(
        [str(SPARK_SUBMIT), "--master", master_url]
        + ["--conf", "spark.ui.enabled=false", "--conf", "spark.executor.memory=512m"]
        + ["--conf", "spark.sql.adaptive.enabled=false"]  # on a small store it only adds jobs
        + ["--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.sql.shuffle.partitions=2"]
        + [str(ROOT / "spark" / "jobs" / "store_audit.py"), str(STORE), "--out", str(tmp_path / "audit")]
        + ["--lake", str(tmp_path / "lake")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    (tmp_path / "submit.log").write_text(out.stderr)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = json.loads((tmp_path / "audit" / "summary.json").read_text())
    manifest = json.loads((STORE / "manifest.json").read_text())
    assert summary["records"] == manifest["store"]["records"]
    assert "findings: 6" in out.stdout  # the golden store's known damage, as spark-submit prints it
    # The audit exported the store into the lake first (tasks writing Parquet), then queried it.
    from rocketpy.spark.lake import Lake

    lake = Lake(str(tmp_path / "lake"))
    assert lake.rows("messages") == summary["records"] + summary.get("corruptRegions", 0)
    assert lake.rows("consume_queues") > 0
    # The tasks ran in the worker's executor processes, not in the driver.
    executors = list((tmp_path / "work").glob("app-*/*/stderr"))
    assert executors, "no executor ran on the worker"
    assert any("Finished task" in p.read_text(errors="replace") for p in executors)
