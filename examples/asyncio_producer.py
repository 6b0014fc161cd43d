"""The same producer from asyncio code: the client runs natively on the asyncio loop (no thread, no trio).

    python examples/asyncio_producer.py [-n 127.0.0.1:9876]
"""

import asyncio
import os
import sys

from rocketpy.client import make_message
from rocketpy.client.facade import AsyncioProducer

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]


async def main() -> None:
    async with AsyncioProducer("example_asyncio_producer", namesrv=NAMESRV) as producer:
        results = await asyncio.gather(*(producer.send(make_message("ExampleTopic", f"asyncio {i}")) for i in range(5)))
        for result in results:
            print(f"{result.send_status} {result.msg_id}")


try:
    asyncio.run(main())
except KeyboardInterrupt:  # Ctrl-C: main() was cancelled and the producer shut down on the way out
    print("interrupted")
