#!/usr/bin/env python3
"""Consumer lag of every group in a broker store: committed offsets against the ConsumeQueues.

    spark-submit spark/jobs/consumer_lag.py --help
    spark-submit --master spark://host:7077 spark/jobs/consumer_lag.py ...
    python spark/jobs/consumer_lag.py ...          # local[*]

The job itself lives in rocketpy.spark.jobs.consumer_lag (importable, tested); this file is
the spark-submit entry point.
"""

import sys

from rocketpy.spark.jobs.consumer_lag import main

if __name__ == "__main__":
    sys.exit(main())
