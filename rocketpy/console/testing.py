"""A NameServer, a broker and the console in one trio run, on loopback ports the OS picks
(browser tests, tools/screenshots.py, tools/bench). ``threaded_console_cluster`` hosts it on a
thread for synchronous callers such as Playwright's sync API. :func:`fill_scenario` and
:func:`walk_pages` are the browser walk the tests run against our servers and the Java ones."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import tempfile
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any, TypeVar

import trio

from ..broker.controller import BrokerController
from ..namesrv.config import NamesrvConfig
from ..namesrv.server import NameServer
from ..testing import broker_test_config
from .app import ConsoleSettings
from .server import run_console

T = TypeVar("T")

BROKER_PROPS = {
    "autoCreateTopicEnable": "true",
    "traceTopicEnable": "true",
    "messageDelayLevel": " ".join(["100ms"] * 18),
}


@dataclasses.dataclass
class ConsoleCluster:
    namesrv: str
    broker: BrokerController
    url: str
    portal: Any = None

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``await fn(*args)`` on the cluster's trio thread (threaded use only)."""
        return self.portal.run(fn, *args)


@asynccontextmanager
async def console_cluster(store_dir: str | None = None, *, namesrv_alias: bool = False,
                          **settings: Any) -> AsyncIterator[ConsoleCluster]:
    """``namesrv_alias``: the console also offers the NameServer as ``localhost:PORT``, a second entry for its
    switcher (the same cluster under another name)."""
    with tempfile.TemporaryDirectory(prefix="rocketpy-console-") as tmp:
        root = store_dir or tmp
        ns_config = NamesrvConfig(listen_port=0, kv_config_path=f"{root}/kvConfig.json",
                                  config_store_path=f"{root}/namesrv.properties")
        async with trio.open_nursery() as nursery:
            ns = await nursery.start(NameServer(ns_config).run, "127.0.0.1", 0)
            broker = BrokerController(broker_test_config(f"{root}/broker-a", namesrvAddr=ns.address, **BROKER_PROPS))
            await nursery.start(broker.run, None)
            with trio.fail_after(10):
                while not ns.routes.broker_live_table:
                    await trio.sleep(0.02)
            if namesrv_alias:
                settings["other_namesrvs"] = [ns.address.replace("127.0.0.1", "localhost")]
            url = await nursery.start(run_console, ConsoleSettings(namesrv=ns.address, **settings), "127.0.0.1:0")
            try:
                yield ConsoleCluster(ns.address, broker, url)
            finally:
                nursery.cancel_scope.cancel()


@contextmanager
def hosted(make: Callable[[], AbstractAsyncContextManager[T]]) -> Iterator[tuple[T, Any]]:
    """Enter ``make()`` on a trio thread and yield what it gives with the portal (``portal.run(fn, *args)``
    runs ``fn`` there) to synchronous code such as Playwright's sync API; leaving exits it there."""
    from ..client.facade import TrioPortal

    portal = TrioPortal()
    ready: concurrent.futures.Future[T] = concurrent.futures.Future()
    stop = threading.Event()

    async def host() -> None:
        try:
            async with make() as value:
                ready.set_result(value)
                while not stop.is_set():
                    await trio.sleep(0.05)
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    done = portal.submit(host)
    try:
        yield ready.result(120), portal
    finally:
        stop.set()
        try:
            done.result(30)
        finally:
            portal.close()


@contextmanager
def threaded_console_cluster(**settings: Any) -> Iterator[ConsoleCluster]:
    with hosted(lambda: console_cluster(**settings)) as (c, portal):
        c.portal = portal
        yield c


@dataclasses.dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    text: str

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name.lower()), None)

    def csrf(self) -> str:
        """The CSRF token of the page's first change form."""
        import re

        found = re.search(r'name="csrf" value="([^"]+)"', self.text)
        assert found, "the page has no change form"
        return found.group(1)


class AsgiClient:
    """Calls an ASGI app in process as a browser at address ``client`` would, with ``Host: host``, keeping its
    cookies (tests: no socket, so trio's MockClock runs it)."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1:8080", client: str = "127.0.0.1",
                 scheme: str = "http") -> None:
        self.app, self.host, self.client, self.scheme = app, host, client, scheme
        self.cookies: dict[str, str] = {}

    async def request(self, method: str, path: str, form: dict[str, str] | None = None,
                      headers: dict[str, str] | None = None) -> Answer:
        from urllib.parse import unquote, urlencode

        path, _, query = path.partition("?")
        body = urlencode(form or {}).encode()
        hdrs = [(b"host", self.host.encode())]
        if self.cookies:
            hdrs.append((b"cookie", "; ".join(f"{k}={v}" for k, v in self.cookies.items()).encode()))
        if form is not None:
            hdrs += [(b"content-type", b"application/x-www-form-urlencoded"),
                     (b"content-length", str(len(body)).encode())]
        hdrs += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": self.scheme, "path": unquote(path), "raw_path": path.encode(),
                 "query_string": query.encode(), "root_path": "", "headers": hdrs, "client": (self.client, 50000),
                 "server": ("127.0.0.1", 8080)}
        out: dict[str, Any] = {"body": b"", "headers": [], "status": 0}
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await trio.sleep_forever()
            raise AssertionError

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                out["status"] = message["status"]
                out["headers"] = [(k.decode().lower(), v.decode()) for k, v in message["headers"]]
            elif message["type"] == "http.response.body":
                out["body"] += message.get("body", b"")

        with trio.fail_after(30):
            await self.app(scope, receive, send)
        for k, v in out["headers"]:
            if k == "set-cookie":
                name, _, rest = v.partition("=")
                value = rest.split(";")[0].strip('"')
                if value and "max-age=0" not in v.lower():
                    self.cookies[name] = value
                else:
                    self.cookies.pop(name, None)
        return Answer(out["status"], out["headers"], out["body"].decode("utf-8", "replace"))

    async def get(self, path: str) -> Answer:
        return await self.request("GET", path)

    async def post(self, path: str, form: dict[str, str], *, csrf_from: str = "/") -> Answer:
        """Submit like a page would: with the CSRF token of the page ``csrf_from`` (not followed on redirect)."""
        token = (await self.get(csrf_from)).csrf()
        return await self.request("POST", path, {**form, "csrf": token})


# -- a scenario and a walk through every page, for the browser tests (ours and the Java servers) -------------
@dataclasses.dataclass
class Scenario:
    """What :func:`fill_scenario` made: ``topic`` with ``sent`` messages (keys ``key-0``...), ``group`` behind by
    all of them (offsets committed at 0, never online), ``dead`` given up into ``%DLQ%dlq_group``."""

    topic: str
    group: str
    dlq_group: str
    sent: list[str]
    dead: list[str]


async def make_topic_and_groups(admin: Any, topic: str, *groups: str, queues: int = 2) -> None:
    """``topic`` (``queues`` read and write queues) and ``groups`` on every master, once the NameServer routes
    the topic (the brokers register new topics in the background)."""
    from ..codecs.bodies import SubscriptionGroupConfig, TopicConfig

    for addr in await admin.master_addrs():
        await admin.create_topic(addr, TopicConfig(topic_name=topic, read_queue_nums=queues,
                                                   write_queue_nums=queues))
        for g in groups:
            await admin.update_sub_group(addr, SubscriptionGroupConfig(group_name=g))
    with trio.fail_after(30):
        while True:
            try:
                await admin.topic_route(topic)
                return
            except Exception:
                await trio.sleep(0.2)


async def fill_scenario(namesrv: str, n: int = 6, topic: str = "TWalk", group: str = "GWalk",
                        dlq_group: str = "GWalkDead") -> Scenario:
    """Through the admin protocol and a producer of its own (not the console's client), on any 4.x cluster."""
    from ..client import ClientConfig, Producer, make_message
    from ..client.admin import Admin

    async with Admin(namesrv) as admin:
        await make_topic_and_groups(admin, topic, group, dlq_group)
        async with Producer("PWalk", config=ClientConfig(namesrv_addr=namesrv)) as p:
            sent = [(await p.send(make_message(topic, f'{{"n": {i}}}', tags="TagW", keys=f"key-{i}"))).msg_id or ""
                    for i in range(n)]
            dead = [(await p.send(make_message(topic, f"dead {i}", keys=f"dead-{i}"))).msg_id or "" for i in range(2)]
        for msg_id in dead:  # a consumer's last failure: CONSUMER_SEND_MSG_BACK with delay level -1 -> the DLQ
            msg = await admin.view_message(msg_id, topic)
            await admin.client.api.send_message_back(msg.store_host, msg, dlq_group, -1, 16, None)
        masters = dict(await admin.topic_masters(topic))
        for mq in (await admin.topic_stats(topic)).offset_table:
            await admin.client.api.update_consumer_offset(masters[mq.broker_name or ""], group, mq, 0)
    return Scenario(topic, group, dlq_group, sent, dead)


def walk_pages(page: Any, url: str, sc: Scenario) -> None:
    """Every page of the console in a browser (Playwright's sync ``page``), with its changes: asserts what a user
    would check on each. ``sc`` is what :func:`fill_scenario` made on the console's cluster."""
    import csv
    import io
    import json
    import re
    import time

    total = len(sc.sent) + len(sc.dead)
    page.on("dialog", lambda d: d.accept())  # the confirm() of skip and delete

    # cluster: the chart draws from the page's own sample, before any poll
    page.goto(url)
    assert "V4_9_8" in page.inner_text("#brokers")
    assert len(page.get_attribute("#put-line", "points").split()) >= 2
    page.click("a.broker-link")
    runtime = page.inner_text("#runtime-table")
    assert re.search(r"brokerVersionDesc\s+V4_9_8", runtime) and "msgPutTotalTodayNow" in runtime, runtime
    assert re.search(r"brokerName\s+broker-a", page.inner_text("#config-table"))

    # topics: kinds and counts, the message numbers, then only the DLQ ones
    page.click("#nav-topics")
    row = page.locator(f'#topic-list tr[data-topic="{sc.topic}"]')
    assert row.locator("td.kind").inner_text() == "NORMAL" and row.locator("td.messages").inner_text() == str(total)
    assert int(page.inner_text('.kind-count[data-kind="DLQ"]').strip("()")) >= 1
    page.uncheck("#kind-NORMAL")
    page.uncheck("#kind-ORDER")
    page.check("#kind-DLQ")
    page.click("#topic-filter-button")
    page.wait_for_url("**/topics?*type=DLQ*")
    kinds = set(page.locator("#topic-list td.kind").all_inner_texts())
    assert kinds == {"DLQ"} and f"%DLQ%{sc.dlq_group}" in page.inner_text("#topic-list"), kinds
    # an order topic made here: ORDER on Java's brokers too (mqadmin's order conf in the NameServers' KV)
    page.fill("#new-topic", f"{sc.topic}Order")
    page.check("#new-order")
    page.click("#create-topic")
    assert f"topic {sc.topic}Order saved" in page.inner_text("#flash")
    page.goto(f"{url}/topics?type=ORDER")  # the brokers register new topics (ours in the background)
    reload_until(page, lambda: page.locator(f'#topic-list tr[data-topic="{sc.topic}Order"]').count() == 1)
    assert page.inner_text(f'#topic-list tr[data-topic="{sc.topic}Order"] td.kind') == "ORDER"
    page.goto(f"{url}/topic/{sc.topic}")
    assert page.locator("#queues tr").count() == 3  # a header and two queues
    assert page.inner_text(f'#topic-groups tr[data-group="{sc.group}"] td.lag') == str(total)
    # reset from the topic's page to a minute from now: each queue to its last message (a search by time finds
    # the last message stored before it, on Java's brokers as on ours), then back to the start
    page.select_option("#topic-reset-group", sc.group)
    page.fill("#topic-reset-time", time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 60)))
    page.click("#topic-reset-button")
    assert f"offsets of {sc.topic} for {sc.group} reset" in page.inner_text("#flash"), page.inner_text("main")
    assert page.inner_text(f'#topic-groups tr[data-group="{sc.group}"] td.lag') == "2", page.inner_text("#flash")
    page.select_option("#topic-reset-group", sc.group)
    page.fill("#topic-reset-time", "1970-01-02T00:00:00")
    page.click("#topic-reset-button")
    assert page.inner_text(f'#topic-groups tr[data-group="{sc.group}"] td.lag') == str(total)

    # messages by time on a console that never sent: every one of them, then one opened
    page.click("#nav-messages")
    page.fill("#by-time input[name=topic]", sc.topic)
    page.click("#by-time button")
    assert re.search(rf"^{total} found", page.inner_text("h3")), page.inner_text("main")
    page.click(f"a.msg-link:has-text('{sc.sent[0]}')")
    assert page.inner_text("#msg-keys") == "key-0" and '"n": 0' in page.text_content("pre.body-json")

    # the group: behind by everything, its config edited, then its accumulated messages skipped
    page.click("#nav-groups")
    assert page.inner_text(f'td.lag[data-group="{sc.group}"]') == str(total)
    page.click(f"a:has-text('{sc.group}')")
    assert page.inner_text('#group-config td[data-key="retryMaxTimes"]') == "16"
    page.fill("#cfg-retryMaxTimes", "5")
    page.uncheck("#cfg-consumeBroadcastEnable")
    page.click("#config-button")
    assert "config of" in page.inner_text("#flash"), page.inner_text("main")
    assert page.inner_text('#group-config td[data-key="retryMaxTimes"]') == "5"
    assert page.inner_text('#group-config td[data-key="consumeBroadcastEnable"]') == "false"
    page.select_option("#skip-topic", sc.topic)
    page.click("#skip-button")
    assert "skipped" in page.inner_text("#flash"), page.inner_text("main")
    assert page.inner_text("#group-lag") == "0"

    # dead letters: listed with their origin, one exported as CSV
    page.click("#nav-dlq")
    page.fill("#dlq-group", sc.dlq_group)
    page.click("#dlq-button")
    assert page.inner_text("#dlq-count") == str(len(sc.dead)), page.inner_text("main")
    assert all(i in page.inner_text("#dlq-results") for i in sc.dead)
    page.check(f'input.dlq-pick[value="{sc.dead[0]}"]')
    with page.expect_download() as got:
        page.click("#dlq-export-selected")
    with open(got.value.path(), encoding="utf-8") as f:
        rows = list(csv.DictReader(io.StringIO(f.read())))
    assert [(r["msgId"], r["originTopic"], r["body"]) for r in rows] == [(sc.dead[0], sc.topic, "dead 0")], rows
    page.click(f"a.msg-link:has-text('{sc.dead[0]}')")  # a dead letter opened: found by its id in the DLQ topic
    assert page.inner_text("#msg-id") == sc.dead[0] and page.text_content("pre.body-text") == "dead 0"

    # the read-only pages render, and /healthz answers
    page.goto(f"{url}/producers?group=PWalk&topic={sc.topic}")  # gone by now: said so on the page
    assert page.locator("#producer-none").count() == 1 or "PWalk" in page.inner_text("#producer-list")
    page.goto(f"{url}/trace?id={sc.sent[0]}")
    assert page.locator("#no-trace").count() == 1  # the producer did not trace
    page.goto(url + "/acl")
    assert page.locator("#acl tr").count() >= 2
    response = page.goto(url + "/healthz")
    assert response.status == 200 and json.loads(page.inner_text("body"))["status"] == "UP"


def reload_until(page: Any, check: Callable[[], bool], timeout: float = 15.0) -> None:
    """Reload ``page`` until ``check()`` holds (the cluster changes behind the page)."""
    import time

    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out on {page.url}")
        page.wait_for_timeout(250)
        page.reload()


def walk_with_a_consumer(page: Any, url: str, sc: Scenario, namesrv: str, portal: Any) -> None:
    """What needs a client online, with a Python push consumer of ``sc.dlq_group`` hosted on ``portal``: the queues
    it holds on the group page, its running info, and a dead letter resent to it."""
    from ..client import ClientConfig, ConsumeFromWhere, PushConsumer
    from ..client.facade import Hosted

    got: list[bytes] = []
    config = ClientConfig(namesrv_addr=namesrv, rebalance_interval=1.0, poll_name_server_interval=1.0,
                          persist_consumer_offset_interval=0.5)
    consumer = PushConsumer(sc.dlq_group, lambda msgs, ctx: got.extend(m.body for m in msgs), config=config,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET)
    consumer.subscribe(sc.topic, "NoSuchTag")  # holds the topic's queues; no message of it matches
    hosted: Hosted[PushConsumer] = Hosted(consumer, portal)
    hosted.start()
    try:
        client_id = consumer.client.client_id
        page.goto(f"{url}/group/{sc.dlq_group}")
        reload_until(page, lambda: page.locator(f'#progress td.client:has-text("{client_id}")').count() == 2)
        page.click("a.client-link")
        assert page.inner_text("#client-id") == client_id
        assert "NoSuchTag" in page.inner_text("#client-subs")
        assert page.locator(f'#client-queues tr:has-text("{sc.topic}")').count() == 2  # and its retry queue

        page.goto(f"{url}/dlq?group={sc.dlq_group}")
        page.check(f'input.dlq-pick[value="{sc.dead[1]}"]')
        page.click("#dlq-resend")
        assert f"{sc.dead[1]}: CR_SUCCESS" in page.inner_text("#flash"), page.inner_text("main")
        assert got == [b"dead 1"]
    finally:
        hosted.shutdown()
