"""Request-reply: send a request and wait for the answer a consumer sends back through the broker.

    python examples/request_reply.py [-n 127.0.0.1:9876]
"""

import os
import sys

import trio

from rocketpy.client import ConsumeFromWhere, Producer, PushConsumer, create_reply_message, make_message

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]


async def main() -> None:
    async with Producer("example_requester", namesrv=NAMESRV) as requester, \
            Producer("example_responder", namesrv=NAMESRV) as responder:

        async def answer(msgs, context):
            for msg in msgs:
                if "REPLY_TO_CLIENT" in msg.properties:  # only requests can be answered
                    await responder.send(create_reply_message(msg, b"pong: " + msg.body))

        await requester.send(make_message("ExampleRequestTopic", "warm up"))  # makes sure the topic exists
        consumer = PushConsumer("example_reply_group", answer, namesrv=NAMESRV,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
        consumer.subscribe("ExampleRequestTopic")
        async with consumer:
            await trio.sleep(1)  # let the consumer take its queues
            reply = await requester.request(make_message("ExampleRequestTopic", "ping"), timeout=10.0)
            print("reply:", reply.body.decode())


try:
    # Ctrl-C raised in main() at an await: the `async with` blocks shut the clients down on the way out
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
except KeyboardInterrupt:
    print("interrupted")
