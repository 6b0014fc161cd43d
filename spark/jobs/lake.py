#!/usr/bin/env python3
"""Export a store or captures into a Parquet lake, or query one: ``rocketpy lake`` under spark-submit.

    spark-submit spark/jobs/lake.py export /var/rocketmq/store --lake /shared/lake
    spark-submit --master spark://host:7077 spark/jobs/lake.py export caps/ --lake /shared/lake
    spark-submit spark/jobs/lake.py sql --lake /shared/lake "SELECT topic, count(*) FROM messages GROUP BY topic"
    python spark/jobs/lake.py --help

The command lives in rocketpy.spark.cli (``rocketpy lake`` runs the same); this file is the
spark-submit entry point.
"""

import sys

from rocketpy.spark.cli import main

if __name__ == "__main__":
    sys.exit(main())
