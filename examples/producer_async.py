"""Send without waiting: callbacks, or futures you await later.

    python examples/producer_async.py [-n 127.0.0.1:9876]
"""

import os
import sys

import trio

from rocketpy.client import Producer, SendResult, make_message

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]


def on_success(result: SendResult) -> None:
    print(f"callback: {result.send_status} {result.msg_id}")


def on_exception(error: BaseException) -> None:
    print(f"callback: failed: {error}")


async def main() -> None:
    async with Producer("example_producer_group", namesrv=NAMESRV) as producer:
        futures = [producer.send_async(make_message("ExampleTopic", f"async {i}"), on_success, on_exception)
                   for i in range(5)]
        # or run sends as tasks of your own nursery
        async with trio.open_nursery() as nursery:
            for i in range(3):
                nursery.start_soon(producer.send, make_message("ExampleTopic", f"task {i}"))
        for future in futures:
            result = await future.result()
            print(f"future: {result.send_status} queue={result.message_queue.queue_id}")


try:
    # Ctrl-C raised in main() at an await: the `async with` blocks shut the clients down on the way out
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
except KeyboardInterrupt:
    print("interrupted")
