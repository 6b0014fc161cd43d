"""Broadcasting: every consumer of the group gets every message; progress is kept in a local file.

    python examples/broadcast_consumer.py [-n 127.0.0.1:9876]
"""

import os
import sys
import uuid

import trio

from rocketpy.client import ClientConfig, ConsumeFromWhere, MessageModel, Producer, PushConsumer, make_message

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]
RUN = uuid.uuid4().hex[:8]


async def main() -> None:
    counts = [0, 0]
    done = trio.Event()

    def listener_for(i: int):
        async def listener(msgs, context):
            counts[i] += sum(1 for m in msgs if m.properties.get("run") == RUN)
            if counts == [3, 3]:
                done.set()
        return listener

    async with Producer("example_producer_group", namesrv=NAMESRV) as producer:
        for i in range(3):
            await producer.send(make_message("ExampleBroadcastTopic", f"news {i}", properties={"run": RUN}))
    consumers = [
        PushConsumer("example_broadcast_group", listener_for(i), message_model=MessageModel.BROADCASTING,
                     config=ClientConfig(namesrv_addr=NAMESRV, instance_name=f"broadcast-{RUN}-{i}"),
                     consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        for i in range(2)
    ]
    for c in consumers:
        c.subscribe("ExampleBroadcastTopic")
    async with consumers[0], consumers[1]:
        with trio.fail_after(30):
            await done.wait()
    print(f"both consumers got all 3 messages; offsets in {consumers[0].offset_store.path}")


try:
    # Ctrl-C raised in main() at an await: the `async with` blocks shut the clients down on the way out
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
except KeyboardInterrupt:
    print("interrupted")
