"""Keep the messages of one order in one queue, so an orderly consumer sees them in sequence.

    python examples/ordered_producer.py [-n 127.0.0.1:9876]
"""

import os
import sys

import trio

from rocketpy.client import Producer, make_message, select_by_hash

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]


async def main() -> None:
    async with Producer("example_ordered_producer", namesrv=NAMESRV) as producer:
        for step in ("created", "paid", "shipped"):
            for order_id in range(3):
                msg = make_message("ExampleOrderTopic", f"order {order_id} {step}", keys=f"order-{order_id}")
                # the same order id always hashes to the same queue (Java's SelectMessageQueueByHash)
                result = await producer.send(msg, selector=select_by_hash, arg=order_id)
                print(f"order {order_id} {step} -> queue {result.message_queue.queue_id}")


try:
    # Ctrl-C raised in main() at an await: the `async with` blocks shut the clients down on the way out
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
except KeyboardInterrupt:
    print("interrupted")
