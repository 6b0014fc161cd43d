"""Save a PNG of each console page under docs/screenshots/ (the README shows them).

Starts a NameServer, a broker and the console in process, fills them with a little data
(topics, an order topic, messages with keys, a traced producer and consumer, a group behind by a
few messages, dead letters) and photographs each page with Debian's chromium through Playwright.

    python tools/screenshots.py [--out docs/screenshots] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def _fill(namesrv: str) -> Any:
    async def run() -> dict[str, str]:
        import trio

        from rocketpy.client import Producer, make_message
        from rocketpy.client.admin import Admin
        from rocketpy.codecs.bodies import SubscriptionGroupConfig, TopicConfig

        async with Admin(namesrv) as admin:
            for addr in await admin.master_addrs():
                for topic in ("OrderEvents", "PaymentEvents", "AuditLog"):
                    await admin.create_topic(addr, TopicConfig(topic_name=topic, read_queue_nums=4,
                                                               write_queue_nums=4))
                await admin.create_topic(addr, TopicConfig(topic_name="LedgerEntries", read_queue_nums=2,
                                                           write_queue_nums=2, order=True))
                await admin.update_sub_group(addr, SubscriptionGroupConfig(group_name="billing"))
        await trio.sleep(0.5)  # the broker registers the new topics
        ids = {}
        async with Producer("orders-producer", namesrv=namesrv, enable_msg_trace=True) as p:
            for i in range(40):
                body = json.dumps({"order": 1000 + i, "amount": round(9.5 * i, 2), "currency": "EUR"})
                r = await p.send(make_message("OrderEvents", body, tags="created", keys=f"order-{1000 + i}"))
                ids.setdefault("order", r.msg_id or "")
            for i in range(12):
                r = await p.send(make_message("PaymentEvents", json.dumps({"payment": i, "status": "declined"}),
                                              tags="paid", keys=f"pay-{i}"))
                if i % 4 == 0:  # billing gave these up after its last retry: they are its dead letters
                    async with Admin(namesrv) as admin:
                        msg = await admin.view_message(r.msg_id or "", "PaymentEvents")
                        await admin.client.api.send_message_back(msg.store_host, msg, "billing", -1, 16, None)
        return ids

    return run


def _online_consumer(namesrv: str, stop: Any, seen: list[int]) -> Any:
    """The "shipping" group consuming OrderEvents (traced) until ``stop`` is set: online on the group pages."""

    async def run() -> None:
        import trio

        from rocketpy.client import ClientConfig, ConsumeFromWhere, PushConsumer

        config = ClientConfig(namesrv_addr=namesrv, rebalance_interval=1.0, persist_consumer_offset_interval=0.3)
        consumer = PushConsumer("shipping", lambda msgs, ctx: seen.extend(1 for _ in msgs), config=config,
                                enable_msg_trace=True, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("OrderEvents", "*")
        async with consumer:
            while not stop.is_set():
                await trio.sleep(0.1)

    return run


def _steady_load(namesrv: str, stop: Any) -> Any:
    """A few messages a second until ``stop`` is set, so the TPS columns and the chart have data."""

    async def run() -> None:
        import trio

        from rocketpy.client import Producer, make_message

        async with Producer("load-producer", namesrv=namesrv) as p:
            i = 0
            while not stop.is_set():
                await p.send(make_message("AuditLog", f"audit {i}", keys=f"audit-{i}"))
                i += 1
                await trio.sleep(0.2)

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "docs" / "screenshots"))
    parser.add_argument("--chromium", default=shutil.which("chromium") or shutil.which("chromium-browser"))
    args = parser.parse_args()
    if not args.chromium:
        print("screenshots: no chromium (apt-get install chromium)", file=sys.stderr)
        return 1
    try:
        from playwright.sync_api import sync_playwright
    except ModuleNotFoundError:
        print("screenshots: pip install playwright", file=sys.stderr)
        return 1
    from rocketpy.console.testing import threaded_console_cluster

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with threaded_console_cluster() as c, sync_playwright() as p:
        import threading

        stop = threading.Event()
        load = c.portal.submit(_steady_load(c.namesrv, stop))
        ids = c.run(_fill(c.namesrv))
        seen: list[int] = []
        online = c.portal.submit(_online_consumer(c.namesrv, stop, seen))
        deadline = time.monotonic() + 20
        while len(seen) < 40 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.5)  # the offsets and the trace records reach the broker
        browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        shots = {
            "topics": "/topics?type=NORMAL&type=ORDER&type=RETRY&type=DLQ",
            "topic": "/topic/OrderEvents",
            "groups": "/groups",
            "group": "/group/shipping",
            "messages": "/messages?topic=OrderEvents",
            "dlq": "/dlq?group=billing",
            "broker": "/broker/broker-a/0",
            "message": f"/message?topic=OrderEvents&id={ids['order']}",
            "trace": f"/trace?id={ids['order']}",
            "producers": "/producers?group=orders-producer&topic=OrderEvents",
            "acl": "/acl",
            "cluster": "/",  # last: the 10 s TPS window is full by now
        }
        for name, path in shots.items():
            page.goto(c.url + path)
            if name == "cluster":
                time.sleep(11)  # a few chart polls under the steady load
            # the long pages (every broker key, the last hour's messages) as the window shows them
            page.screenshot(path=str(out / f"{name}.png"), full_page=name not in ("broker", "messages"))
            print(out / f"{name}.png")
        browser.close()
        stop.set()
        load.result(10)
        online.result(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
