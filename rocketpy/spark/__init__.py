"""RocketMQ captures and broker stores as Spark DataFrames, and the forensic jobs built on them.

``register(spark)`` makes the formats ``rocketmq-pcap``, ``rocketmq-commitlog``,
``rocketmq-consumequeue`` and ``rocketmq-index`` available to ``spark.read.format``.
Needs the ``spark`` extra (pyspark 4, pyarrow); the rest of rocketpy does not.
Executors import this package, so it must be installed where they run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["FORMATS", "register"]

FORMATS = ("rocketmq-pcap", "rocketmq-commitlog", "rocketmq-consumequeue", "rocketmq-index")


def register(spark: SparkSession) -> SparkSession:
    """Register every rocketpy data source with ``spark``; returns it for chaining."""
    # Imported here so `import rocketpy.spark` works without pyspark (for --help, tools).
    from .sources import ALL_SOURCES

    for source in ALL_SOURCES:
        spark.dataSource.register(source)
    # The CommitLog source takes filters (pushFilters); Spark refuses such a source unless
    # Python filter pushdown is on.
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    return spark
