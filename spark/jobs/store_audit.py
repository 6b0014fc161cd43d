#!/usr/bin/env python3
"""Audit a broker store: ConsumeQueue units against CommitLog records.

    spark-submit spark/jobs/store_audit.py --help
    spark-submit --master spark://host:7077 spark/jobs/store_audit.py ...
    python spark/jobs/store_audit.py ...          # local[*]

The job itself lives in rocketpy.spark.jobs.store_audit (importable, tested); this file is
the spark-submit entry point.
"""

import sys

from rocketpy.spark.jobs.store_audit import main

if __name__ == "__main__":
    sys.exit(main())
