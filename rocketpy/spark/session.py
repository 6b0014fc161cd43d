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


def get_session(
    app_name: str, master: str | None = None, conf: dict[str, str] | None = None, log_level: str = "WARN"
) -> SparkSession:
    """A session with the rocketpy data sources registered.

    ``master`` wins; else whatever spark-submit configured (``--master``); else
    ``local[*]``. In local mode the Python workers are pointed at this interpreter:
    they must import rocketpy and pyarrow, which a bare ``python3`` on the PATH may
    lack. On a cluster the executors' interpreter is the cluster's business
    (``spark.pyspark.python``, or rocketpy[spark] installed on the nodes).

    When this process starts the JVM, Spark logs at ``log_level`` from its first line (no
    INFO start-up chatter), and in local mode its UI binds to 127.0.0.1 (unless
    ``SPARK_LOCAL_IP`` says otherwise).
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    from . import register

    # spark-submit hands its settings (--master, --conf) to the JVM it starts; a SparkConf
    # sees them only once the gateway to that JVM is up, else it would fall back to local.
    conf = dict(conf or {})
    if _launching() and _is_local(master or DEFAULT_MASTER):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the UI binds to it, else to every interface
        conf.setdefault("spark.driver.host", "127.0.0.1")
    if _launching():
        quiet = f"-Dlog4j2.configurationFile=file:{_log_config(log_level)}"
        conf["spark.driver.extraJavaOptions"] = f"{conf.get('spark.driver.extraJavaOptions', '')} {quiet}".strip()
    SparkContext._ensure_initialized(conf=_launch_conf(conf))
    spark_conf = SparkConf()  # picks up spark-submit's settings
    chosen = master or spark_conf.get("spark.master", None) or DEFAULT_MASTER
    builder = SparkSession.builder.appName(app_name).master(chosen)
    if _is_local(chosen) and not (os.environ.get("PYSPARK_PYTHON") or spark_conf.get("spark.pyspark.python", None)):
        os.environ["PYSPARK_PYTHON"] = sys.executable
        builder = builder.config("spark.pyspark.python", sys.executable)
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level)
    return register(spark)


def _launching() -> bool:
    """Whether this process is about to start the JVM (no spark-submit, no session before)."""
    from pyspark import SparkContext

    return SparkContext._gateway is None and not os.environ.get("PYSPARK_GATEWAY_PORT")


_LOG4J2 = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n%ex
logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop.level = error
logger.plans.name = org.apache.spark.util.SparkStringUtils
logger.plans.level = error
"""


def _log_config(level: str) -> str:
    """A log4j2 configuration file logging at ``level`` to stderr (Spark's own starts at INFO)."""
    import tempfile

    # A pyspark JVM counts as a shell: at a root level other than WARN, Spark announces the
    # shell's level on stderr; quieter levels are set once the context is up.
    level = "WARN" if level.upper() in ("ERROR", "FATAL", "OFF") else level.upper()
    path = os.path.join(tempfile.gettempdir(), f"rocketpy-spark-log4j2-{level.lower()}-{os.getuid()}.properties")
    text = _LOG4J2.format(level=level.lower())
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return path
    except OSError:
        pass
    staged = f"{path}.{os.getpid()}"
    with open(staged, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(staged, path)
    return path


def _launch_conf(conf: dict[str, str]) -> SparkConf | None:
    """The driver's settings in ``conf`` (memory, Java options), when this process starts the
    JVM (no spark-submit, no gateway yet): they take effect only at its launch, and a
    builder's config set after it would be silently ignored."""
    from pyspark import SparkConf

    if not _launching():
        return None  # spark-submit, or an earlier session, started the JVM
    launch = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        if key.startswith("spark.driver."):
            launch.set(key, value)
    return launch
