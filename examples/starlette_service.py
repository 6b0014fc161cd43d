"""An asyncio web service that produces to and consumes from RocketMQ: Starlette under Hypercorn.

``POST /orders`` sends the request body as a message (the native asyncio Producer, on the service's own
loop: no thread), and a push consumer of the same topic writes what it receives into the service, which
``GET /orders`` lists.

    python examples/starlette_service.py [-n 127.0.0.1:9876] [--serve] [--port 8000]

Without ``--serve`` it starts, posts three orders to itself over HTTP, waits until the consumer has them
all, prints them and stops; with ``--serve`` it keeps serving (try ``curl -d 'book' localhost:8000/orders``).
Any ASGI server works the same way (``uvicorn examples.starlette_service:app`` with ROCKETMQ_NAMESRV set).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from rocketpy.client import ConsumeFromWhere, Producer, make_message
from rocketpy.client.facade import AsyncioPushConsumer

NAMESRV = os.environ.get("ROCKETMQ_NAMESRV", "127.0.0.1:9876")
if "-n" in sys.argv:
    NAMESRV = sys.argv[sys.argv.index("-n") + 1]
TOPIC = "ExampleOrders"

received: list[str] = []
arrived = asyncio.Event()


async def on_orders(msgs, ctx):  # type: ignore[no-untyped-def]
    """The consumer's listener: a coroutine run on the service's loop."""
    received.extend(m.body.decode() for m in msgs)
    arrived.set()


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    consumer = AsyncioPushConsumer("example_orders_consumer", on_orders, namesrv=NAMESRV,
                                   consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
    consumer.subscribe(TOPIC)
    async with Producer("example_orders_producer", namesrv=NAMESRV) as producer, consumer:
        app.state.producer = producer
        yield


async def post_order(request: Request) -> Response:
    result = await request.app.state.producer.send(make_message(TOPIC, await request.body()))
    return JSONResponse({"status": result.send_status.name, "msgId": result.msg_id}, status_code=201)


async def list_orders(request: Request) -> Response:
    return JSONResponse(received)


app = Starlette(routes=[Route("/orders", post_order, methods=["POST"]), Route("/orders", list_orders)],
                lifespan=lifespan)


async def http(port: int, method: str, body: bytes = b"") -> tuple[int, bytes]:
    """One HTTP/1.1 request to this service (no client library needed for the demonstration)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{method} /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
                 f"Connection: close\r\n\r\n".encode() + body)
    data = await reader.read()
    writer.close()
    head, _, payload = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), payload


async def main() -> None:
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    port = int(sys.argv[sys.argv.index("--port") + 1]) if "--port" in sys.argv else 0
    if not port:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.accesslog = None
    stop = asyncio.Event()
    server = asyncio.ensure_future(serve(app, config, shutdown_trigger=stop.wait))  # type: ignore[arg-type]
    if "--serve" in sys.argv:
        await server
        return
    try:
        for _ in range(100):  # until the service answers (the lifespan has started the producer and consumer)
            with contextlib.suppress(OSError):
                if (await http(port, "GET"))[0] == 200:
                    break
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.5)  # the consumer's first rebalance: it starts at the topic's end
        orders = ["2 books", "1 lamp", "3 mugs"]
        for order in orders:
            status, payload = await http(port, "POST", order.encode())
            print(f"POST /orders {order!r}: {status} {json.loads(payload)['status']}")
        async with asyncio.timeout(30):
            while sorted(received) != sorted(orders):
                arrived.clear()
                await arrived.wait()
        status, payload = await http(port, "GET")
        print(f"GET /orders: {status} {sorted(json.loads(payload))}")
        print("every order consumed")
    finally:
        stop.set()
        await server


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:  # Ctrl-C: main() was cancelled, the server and the clients stopped on the way out
        print("interrupted")
