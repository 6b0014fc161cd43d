"""The same producer from a plain blocking script.

    python examples/blocking_producer.py [-n 127.0.0.1:9876]
"""

import os
import sys

from rocketpy.client import make_message
from rocketpy.client.facade import BlockingProducer

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]

try:
    with BlockingProducer("example_blocking_producer", namesrv=NAMESRV) as producer:
        for i in range(5):
            result = producer.send(make_message("ExampleTopic", f"blocking {i}"))
            print(f"{result.send_status} {result.msg_id}")
        future = producer.send_async(make_message("ExampleTopic", "blocking async"))
        future.add_done_callback(lambda f: print("callback:", f.result().send_status))
        future.result()
except KeyboardInterrupt:  # Ctrl-C: leaving `with` has shut the producer down
    print("interrupted")
