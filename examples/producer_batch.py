"""Send several messages of one topic in one request.

    python examples/producer_batch.py [-n 127.0.0.1:9876]
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
        batch = [make_message("ExampleTopic", f"batch {i}", tags="TagBatch", keys=f"batch-{i}") for i in range(10)]
        result = await producer.send_batch(batch)
        print(f"{result.send_status}: {len(result.msg_id.split(','))} messages in queue "
              f"{result.message_queue.queue_id} from offset {result.queue_offset}")


try:
    # Ctrl-C raised in main() at an await: the `async with` blocks shut the clients down on the way out
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
except KeyboardInterrupt:
    print("interrupted")
