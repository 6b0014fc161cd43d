"""get_session: the driver's settings reach the JVM it starts, which is quiet and keeps its UI on loopback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("pyspark")

_PROBE = """
from rocketpy.spark.session import get_session
spark = get_session("rocketpy-test-session", "local[1]", {
    "spark.driver.extraJavaOptions": "-Drocketpy.probe=reached",
    "spark.ui.showConsoleProgress": "false",
}, log_level="ERROR")
system = spark.sparkContext._jvm.java.lang.System
print("probe:", system.getProperty("rocketpy.probe"))
print("ui:", spark.sparkContext.uiWebUrl)
print("rows:", spark.range(5).count())
spark.stop()
"""


@pytest.mark.timeout(180)
def test_driver_java_options_given_to_get_session_reach_the_jvm() -> None:
    """A local session's JVM is started by get_session: settings such as the driver's Java options
    or memory only count at that start (set on the builder afterwards, Spark ignores them)."""
    drop = ("PYSPARK_SUBMIT_ARGS", "PYSPARK_GATEWAY_PORT", "SPARK_LOCAL_IP")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYSPARK_PYTHON"] = sys.executable
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=170, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "probe: reached" in out.stdout
    assert "rows: 5" in out.stdout
    # quiet from the JVM's first line: no INFO start-up lines, no announcement of the level
    assert " INFO " not in out.stderr and "Setting default log level" not in out.stderr, out.stderr[-2000:]
    assert "Using Spark's default log4j profile" not in out.stderr
    # the UI listens on loopback only (SPARK_LOCAL_IP), not on every interface
    assert "ui: http://127.0.0.1:" in out.stdout
