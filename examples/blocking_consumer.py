"""Consumers from a plain blocking script (no async code): a push consumer whose listener is a plain function
run in worker threads, then a lite pull consumer polled in a loop. Ctrl-C stops either cleanly: leaving the
``with`` block commits the offsets and unregisters the client.

    python examples/blocking_consumer.py [-n 127.0.0.1:9876]
"""

import os
import sys
import threading
import time
import uuid

from rocketpy.client import ConsumeFromWhere, make_message
from rocketpy.client.facade import BlockingLitePullConsumer, BlockingProducer, BlockingPushConsumer

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]
TOPIC = "ExampleBlockingTopic"
RUN = uuid.uuid4().hex[:8]  # this run's messages (the topic may hold earlier runs')
BODIES = {f"blocking {i}" for i in range(3)}


def push() -> None:
    seen: set[str] = set()
    all_seen = threading.Event()

    def listener(msgs, context):  # a worker thread; returning acknowledges, raising asks for redelivery
        for msg in msgs:
            if msg.properties.get("run") == RUN:
                print(f"push: {msg.body.decode()!r} from queue {msg.queue_id}")
                seen.add(msg.body.decode())
        if seen == BODIES:
            all_seen.set()

    consumer = BlockingPushConsumer("example_blocking_push", listener, namesrv=NAMESRV,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(TOPIC, "*")
    with consumer:
        if not all_seen.wait(timeout=60):
            sys.exit(f"push: only {sorted(seen)} arrived")
    print("push: all consumed")


def pull() -> None:
    got: set[str] = set()
    consumer = BlockingLitePullConsumer("example_blocking_pull", namesrv=NAMESRV,
                                        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(TOPIC, "*")
    with consumer:
        deadline = time.monotonic() + 60
        while got != BODIES and time.monotonic() < deadline:
            for msg in consumer.poll(timeout=1.0):  # what arrived, or [] after a second
                if msg.properties.get("run") == RUN:
                    print(f"pull: {msg.body.decode()!r} at offset {msg.queue_offset}")
                    got.add(msg.body.decode())
        consumer.commit()  # also done every 5 s and at shutdown (auto_commit)
    print("pull: all polled" if got == BODIES else f"pull: only {sorted(got)} arrived")


try:
    with BlockingProducer("example_blocking_producer", namesrv=NAMESRV) as producer:
        for body in sorted(BODIES):
            producer.send(make_message(TOPIC, body, properties={"run": RUN}))
    push()
    pull()
except KeyboardInterrupt:  # Ctrl-C: the consumer's `with` has shut it down on the way here
    print("interrupted")
