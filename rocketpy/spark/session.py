"""Building the SparkSession the jobs run in: local by default, a cluster when spark-submit says so."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

# The JVM options of a local session's driver, whose JVM get_session starts itself. Without
# tiered compilation the JIT compiles only what stays hot: each query of a scan through a
# Python data source otherwise spends 0.4-2 s of CPU compiling (C1, then C2) the code it
# generates, on the same cores the Python workers decode on (tools/bench/bench_spark.py).
LOCAL_JAVA_OPTIONS = "-XX:-TieredCompilation"


def _is_local(master: str) -> bool:
    return master.startswith("local")


def get_session(app_name: str, master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """A session with the rocketpy data sources registered.

    ``master`` wins; else whatever spark-submit configured (``--master``); else
    ``local[*]``. In local mode the Python workers are pointed at this interpreter:
    they must import rocketpy and pyarrow, which a bare ``python3`` on the PATH may
    lack. On a cluster the executors' interpreter is the cluster's business
    (``spark.pyspark.python``, or rocketpy[spark] installed on the nodes).
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from . import register

    # spark-submit hands its settings (--master, --conf) to the JVM it starts; a SparkConf
    # sees them only once the gateway to that JVM is up, else it would fall back to local.
    SparkContext._ensure_initialized(conf=_launch_conf(master, conf or {}))
    spark_conf = SparkConf()  # picks up spark-submit's settings
    chosen = master or spark_conf.get("spark.master", None) or DEFAULT_MASTER
    builder = SparkSession.builder.appName(app_name).master(chosen)
    if _is_local(chosen) and not (os.environ.get("PYSPARK_PYTHON") or spark_conf.get("spark.pyspark.python", None)):
        os.environ["PYSPARK_PYTHON"] = sys.executable
        builder = builder.config("spark.pyspark.python", sys.executable)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    return register(spark)


def _launch_conf(master: str | None, conf: dict[str, str]) -> SparkConf | None:
    """What the JVM must be started with, when this process starts it (no spark-submit, no
    gateway yet): the driver's settings in ``conf`` (memory, Java options) take effect only
    there, and a local session gets :data:`LOCAL_JAVA_OPTIONS` unless Java options are given."""
    from pyspark import SparkConf, SparkContext

    if SparkContext._gateway is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None  # spark-submit, or an earlier session, started the JVM
    launch = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        if key.startswith("spark.driver."):
            launch.set(key, value)
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    given = "spark.driver.extraJavaOptions" in conf or any(
        option in submit_args for option in ("java-options", "extraJavaOptions")
    )
    local = _is_local(master) if master else "--master" not in submit_args
    if local and not given:
        launch.set("spark.driver.extraJavaOptions", LOCAL_JAVA_OPTIONS)
    return launch
