#!/usr/bin/env python3
"""Follow a message by id or key across captures and a broker store.

    spark-submit spark/jobs/message_trace.py --help
    spark-submit --master spark://host:7077 spark/jobs/message_trace.py ...
    python spark/jobs/message_trace.py ...          # local[*]

The job itself lives in rocketpy.spark.jobs.message_trace (importable, tested); this file is
the spark-submit entry point.
"""

import sys

from rocketpy.spark.jobs.message_trace import main

if __name__ == "__main__":
    sys.exit(main())
