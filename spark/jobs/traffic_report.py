#!/usr/bin/env python3
"""Traffic report from captures: throughput, latency percentiles, error codes.

    spark-submit spark/jobs/traffic_report.py --help
    spark-submit --master spark://host:7077 spark/jobs/traffic_report.py ...
    python spark/jobs/traffic_report.py ...          # local[*]

The job itself lives in rocketpy.spark.jobs.traffic_report (importable, tested); this file is
the spark-submit entry point.
"""

import sys

from rocketpy.spark.jobs.traffic_report import main

if __name__ == "__main__":
    sys.exit(main())
