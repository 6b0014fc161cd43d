"""Building the SparkSession the jobs run in: local by default, a cluster when spark-submit says so."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"


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
    SparkContext._ensure_initialized(conf=_launch_conf(conf or {}))
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


def _launch_conf(conf: dict[str, str]) -> SparkConf | None:
    """The driver's settings in ``conf`` (memory, Java options), when this process starts the
    JVM (no spark-submit, no gateway yet): they take effect only at its launch, and a
    builder's config set after it would be silently ignored."""
    from pyspark import SparkConf, SparkContext

    if SparkContext._gateway is not None or os.environ.get("PYSPARK_GATEWAY_PORT"):
        return None  # spark-submit, or an earlier session, started the JVM
    launch = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        if key.startswith("spark.driver."):
            launch.set(key, value)
    return launch
