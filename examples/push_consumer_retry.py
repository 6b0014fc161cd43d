"""A push consumer: the listener gets messages as they arrive; a failure makes the broker redeliver later.

    python examples/push_consumer_retry.py [-n 127.0.0.1:9876]
"""

import os
import sys
import uuid

import trio

from rocketpy.client import ConsumeFromWhere, ConsumeStatus, Producer, PushConsumer, make_message

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]
RUN = uuid.uuid4().hex[:8]


async def main() -> None:
    seen: set[str] = set()
    done = trio.Event()

    async def listener(msgs, context):
        for msg in msgs:
            if msg.properties.get("run") != RUN:
                continue
            body = msg.body.decode()
            print(f"got {body!r} (reconsume times {msg.reconsume_times})")
            if body == "fails once" and msg.reconsume_times == 0:
                return ConsumeStatus.RECONSUME_LATER  # back to the broker; it comes again via %RETRY%group
            seen.add(body)
        if len(seen) == 3:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    async with Producer("example_producer_group", namesrv=NAMESRV) as producer:
        for body in ("first", "fails once", "last"):
            await producer.send(make_message("ExampleRetryTopic", body, tags="TagA", properties={"run": RUN}))
    consumer = PushConsumer("example_retry_group", listener, namesrv=NAMESRV,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe("ExampleRetryTopic", "TagA || TagB")
    async with consumer:
        with trio.fail_after(60):  # a Java broker redelivers after 10 s (delay level 3)
            await done.wait()
    print("all consumed")


try:
    # Ctrl-C raised in main() at an await: the `async with` blocks shut the clients down on the way out
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
except KeyboardInterrupt:
    print("interrupted")
