"""Consume each queue in order, holding the broker's lock on it (run ordered_producer.py first, or not:
this script sends a few orders itself).

    python examples/orderly_consumer.py [-n 127.0.0.1:9876]
"""

import os
import sys
import uuid

import trio

from rocketpy.client import ConsumeFromWhere, OrderlyStatus, Producer, PushConsumer, make_message, select_by_hash

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]
RUN = uuid.uuid4().hex[:8]


async def main() -> None:
    steps: dict[str, list[str]] = {}
    done = trio.Event()

    async def listener(msgs, context):
        for msg in msgs:
            if msg.properties.get("run") != RUN:
                continue  # messages of earlier runs
            order, step = msg.body.decode().split(" ")
            steps.setdefault(order, []).append(step)
            print(f"queue {context.message_queue.queue_id}: order {order} {step}")
        if sum(len(v) for v in steps.values()) == 9:
            done.set()
        return OrderlyStatus.SUCCESS

    async with Producer("example_ordered_producer", namesrv=NAMESRV) as producer:
        for step in ("created", "paid", "shipped"):
            for order in range(3):
                await producer.send(make_message("ExampleOrderTopic", f"{order} {step}", properties={"run": RUN}),
                                    selector=select_by_hash, arg=order)
    consumer = PushConsumer("example_orderly_group", listener, orderly=True, namesrv=NAMESRV,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe("ExampleOrderTopic", "*")
    async with consumer:
        with trio.fail_after(30):
            await done.wait()
    assert all(v == ["created", "paid", "shipped"] for v in steps.values()), steps
    print("every order arrived in sequence")


try:
    # Ctrl-C raised in main() at an await: the `async with` blocks shut the clients down on the way out
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
except KeyboardInterrupt:
    print("interrupted")
