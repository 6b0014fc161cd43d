#!/usr/bin/env python3
"""Compare a master's CommitLog with its slave's, record by record.

    spark-submit spark/jobs/replica_audit.py --help
    spark-submit --master spark://host:7077 spark/jobs/replica_audit.py ...
    python spark/jobs/replica_audit.py ...          # local[*]

The job itself lives in rocketpy.spark.jobs.replica_audit (importable, tested); this file is
the spark-submit entry point.
"""

import sys

from rocketpy.spark.jobs.replica_audit import main

if __name__ == "__main__":
    sys.exit(main())
