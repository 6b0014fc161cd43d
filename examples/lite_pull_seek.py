"""Pull at your own pace: assign a queue, poll, seek back, commit.

    python examples/lite_pull_seek.py [-n 127.0.0.1:9876]
"""

import os
import sys

import trio

from rocketpy.client import LitePullConsumer, Producer, make_message

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]


async def main() -> None:
    async with Producer("example_producer_group", namesrv=NAMESRV) as producer:
        first = await producer.send(make_message("ExampleLiteTopic", "lite 0"))
        mq = first.message_queue
        for i in range(1, 5):
            await producer.send(make_message("ExampleLiteTopic", f"lite {i}"), queue=mq)
    async with LitePullConsumer("example_lite_group", namesrv=NAMESRV, auto_commit=False) as consumer:
        await consumer.assign([mq])
        await consumer.seek(mq, first.queue_offset)
        got = []
        while len(got) < 5:
            got += await consumer.poll(timeout=5.0)
        print("polled:", [m.body.decode() for m in got])
        await consumer.seek(mq, first.queue_offset + 3)  # read the last two again
        again = await consumer.poll(timeout=5.0)
        print("after seek:", [m.body.decode() for m in again])
        await consumer.commit()
        print("committed offset", await consumer.committed(mq))


try:
    # Ctrl-C raised in main() at an await: the `async with` blocks shut the clients down on the way out
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
except KeyboardInterrupt:
    print("interrupted")
