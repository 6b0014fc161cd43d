"""Send messages and wait for each broker answer.

    python examples/producer_sync.py [-n 127.0.0.1:9876]   (or set ROCKETMQ_NAMESRV)
"""

import os
import sys

import trio

from rocketpy.client import Producer, make_message

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]


async def main() -> None:
    async with Producer("example_producer_group", namesrv=NAMESRV) as producer:
        for i in range(5):
            msg = make_message("ExampleTopic", f"Hello RocketMQ {i}", tags="TagA", keys=f"key-{i}",
                               properties={"index": str(i)})
            result = await producer.send(msg)
            print(f"{result.send_status} msgId={result.msg_id} queue={result.message_queue.queue_id} "
                  f"offset={result.queue_offset}")
        # level 2 = 5 seconds later (the broker's messageDelayLevel)
        result = await producer.send(make_message("ExampleTopic", "delayed", delay_level=2))
        print(f"delayed {result.send_status}")


try:
    # Ctrl-C raised in main() at an await: the `async with` blocks shut the clients down on the way out
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
except KeyboardInterrupt:
    print("interrupted")
