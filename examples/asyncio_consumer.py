"""A push consumer in asyncio code: the client runs natively on the asyncio loop (no thread, no trio), and the
listener is a coroutine function run on that loop. Ctrl-C stops it cleanly: asyncio.run cancels main(), and
leaving ``async with`` commits the offsets and unregisters the client.

    python examples/asyncio_consumer.py [-n 127.0.0.1:9876]
"""

import asyncio
import os
import sys
import uuid

from rocketpy.client import ConsumeFromWhere, Producer, PushConsumer, make_message

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]
TOPIC = "ExampleAsyncioTopic"
RUN = uuid.uuid4().hex[:8]  # this run's messages (the topic may hold earlier runs')


async def main() -> None:
    async with Producer("example_asyncio_producer", namesrv=NAMESRV) as producer:
        await asyncio.gather(*(producer.send(make_message(TOPIC, f"asyncio {i}", properties={"run": RUN}))
                               for i in range(5)))
    seen: set[str] = set()
    all_seen = asyncio.Event()

    async def listener(msgs, context):  # on this loop; returning acknowledges, raising asks for redelivery
        for msg in msgs:
            if msg.properties.get("run") == RUN:
                print(f"got {msg.body.decode()!r} (keys {msg.keys}, queue {msg.queue_id})")
                seen.add(msg.body.decode())
        if len(seen) == 5:
            all_seen.set()

    consumer = PushConsumer("example_asyncio_group", listener, namesrv=NAMESRV,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(TOPIC, "*")
    async with consumer:
        await asyncio.wait_for(all_seen.wait(), timeout=60)
    print("all consumed")


try:
    asyncio.run(main())
except KeyboardInterrupt:  # Ctrl-C: main() was cancelled and the consumer shut down on the way out
    print("interrupted")
