"""Save a PNG of each console page under docs/screenshots/ (the README shows them).

Starts a NameServer, a broker and the console in process, fills them with a little data
(a topic, messages with keys, a traced producer and consumer, a group behind by a few
messages) and photographs each page with Debian's chromium through Playwright.

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

        from rocketpy.client import ClientConfig, ConsumeFromWhere, Producer, PushConsumer, make_message
        from rocketpy.client.admin import Admin
        from rocketpy.codecs.bodies import SubscriptionGroupConfig, TopicConfig

        async with Admin(namesrv) as admin:
            for addr in await admin.master_addrs():
                for topic in ("OrderEvents", "PaymentEvents", "AuditLog"):
                    await admin.create_topic(addr, TopicConfig(topic_name=topic, read_queue_nums=4,
                                                               write_queue_nums=4))
                await admin.update_sub_group(addr, SubscriptionGroupConfig(group_name="billing"))
        await trio.sleep(0.5)  # the broker registers the new topics
        ids = {}
        async with Producer("orders-producer", namesrv=namesrv, enable_msg_trace=True) as p:
            for i in range(40):
                body = json.dumps({"order": 1000 + i, "amount": round(9.5 * i, 2), "currency": "EUR"})
                r = await p.send(make_message("OrderEvents", body, tags="created", keys=f"order-{1000 + i}"))
                ids.setdefault("order", r.msg_id or "")
            for i in range(12):
                await p.send(make_message("PaymentEvents", f"payment {i}", tags="paid", keys=f"pay-{i}"))
        config = ClientConfig(namesrv_addr=namesrv, rebalance_interval=1.0, persist_consumer_offset_interval=0.3)
        seen: list[int] = []
        consumer = PushConsumer("shipping", lambda msgs, ctx: seen.extend(1 for _ in msgs), config=config,
                                enable_msg_trace=True, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("OrderEvents", "*")
        async with consumer:
            with trio.move_on_after(15):
                while len(seen) < 40:
                    await trio.sleep(0.1)
            await trio.sleep(1)
        return ids

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
        browser = p.chromium.launch(executable_path=args.chromium, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        shots = {
            "topics": "/topics",
            "topic": "/topic/OrderEvents",
            "groups": "/groups",
            "group": "/group/shipping",
            "messages": "/messages?topic=OrderEvents&key=order-1003",
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
            page.screenshot(path=str(out / f"{name}.png"), full_page=True)
            print(out / f"{name}.png")
        browser.close()
        stop.set()
        load.result(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
