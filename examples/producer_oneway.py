"""Fire and forget: no answer from the broker (logs, metrics).

    python examples/producer_oneway.py [-n 127.0.0.1:9876]
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
            await producer.send_oneway(make_message("ExampleTopic", f"oneway {i}", tags="TagLog"))
        print("sent 5 oneway messages")


try:
    # Ctrl-C raised in main() at an await: the `async with` blocks shut the clients down on the way out
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
except KeyboardInterrupt:
    print("interrupted")
