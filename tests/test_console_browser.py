"""The console in a real browser (Debian's chromium driven by Playwright) against a NameServer and
broker with data: create a topic, send, find by key and id, see a group's lag drop as its consumer
catches up, reset its offset, see a trace timeline. Skipped when chromium or Playwright is missing."""

from __future__ import annotations

import datetime
import os
import re
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette")
sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright (pip install playwright) is not installed")

CHROMIUM = os.environ.get("ROCKETPY_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield b
        finally:
            b.close()


def _offsets_to_zero(namesrv: str, group: str, topic: str) -> Any:
    async def run() -> None:
        from rocketpy.client.admin import Admin

        async with Admin(namesrv) as admin:
            route = await admin.topic_route(topic)
            masters = {bd.broker_name: bd.master_addr() for bd in route.broker_datas or []}
            for mq in (await admin.topic_stats(topic)).offset_table:
                await admin.client.api.update_consumer_offset(masters[mq.broker_name], group, mq, 0)

    return run


def _send_traced(namesrv: str, topic: str, count: int) -> Any:
    async def run() -> list[str]:
        from rocketpy.client import Producer, make_message

        async with Producer("PG_browser", namesrv=namesrv, enable_msg_trace=True) as p:
            return [(await p.send(make_message(topic, f"traced {i}", keys=f"tk-{i}"))).msg_id or ""
                    for i in range(count)]

    return run


def _lag(page: Any, group: str) -> str:
    return page.inner_text(f'td.lag[data-group="{group}"]').strip()


@pytest.mark.timeout(90)
def test_click_through_the_console(browser: Any) -> None:
    from rocketpy.client import ClientConfig, ConsumeFromWhere, PushConsumer
    from rocketpy.client.facade import Hosted
    from rocketpy.console.testing import reload_until, threaded_console_cluster

    before = datetime.datetime.now() - datetime.timedelta(seconds=2)
    with threaded_console_cluster() as c:
        page = browser.new_page()
        page.set_default_timeout(10_000)
        page.goto(c.url)
        assert "broker-a" in page.inner_text("#brokers") and "V4_9_8" in page.inner_text("#brokers")
        page.wait_for_function("document.getElementById('put-line').getAttribute('points') !== ''")

        # create a topic, send a message with a key from its page
        page.click("#nav-topics")
        page.fill("#new-topic", "TBrowser")
        page.click("#create-topic")
        assert "topic TBrowser saved" in page.inner_text("#flash")
        reload_until(page, lambda: page.locator("#queues tr").count() > 1)  # routed once the broker re-registers
        page.fill("#send-keys", "browser-key")
        page.fill("#send-body", '{"hello": "browser"}')
        page.click("#send-button")
        flash = page.inner_text("#flash")
        assert "SEND_OK" in flash, flash
        msg_id = re.search(r"msgId=(\w+)", flash).group(1)  # type: ignore[union-attr]

        # find it by key, open it, then by id
        page.click("#nav-messages")
        page.fill("#key-topic", "TBrowser")
        page.fill("#key-value", "browser-key")
        page.click("#key-search")
        assert msg_id in page.inner_text("#results")
        page.click(f"a.msg-link:has-text('{msg_id}')")
        assert page.inner_text("#msg-id") == msg_id and page.inner_text("#msg-keys") == "browser-key"
        assert '"hello": "browser"' in page.text_content("pre.body-json")
        page.click("#nav-messages")
        page.fill("#id-topic", "TBrowser")
        page.fill("#id-value", msg_id)
        page.click("#id-search")
        assert msg_id in page.inner_text("#results")

        # a group behind by 4 (1 + 3 traced), then its consumer catches up
        traced = c.run(_send_traced(c.namesrv, "TBrowser", 3))
        c.run(_offsets_to_zero(c.namesrv, "GBrowser", "TBrowser"))
        page.click("#nav-groups")
        page.fill("#new-group", "GBrowser")
        page.click("#create-group")
        assert "group GBrowser saved" in page.inner_text("#flash")
        page.click("#nav-groups")
        assert _lag(page, "GBrowser") == "4"
        config = ClientConfig(namesrv_addr=c.namesrv, rebalance_interval=1.0, persist_consumer_offset_interval=0.3,
                              poll_name_server_interval=1.0)
        consumer = PushConsumer("GBrowser", lambda msgs, ctx: None, config=config, enable_msg_trace=True,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe("TBrowser", "*")
        hosted = Hosted(consumer, c.portal)
        hosted.start()
        try:
            reload_until(page, lambda: _lag(page, "GBrowser") == "0")
            page.click("a:has-text('GBrowser')")
            assert "TBrowser" in page.inner_text("#progress") and consumer.client.client_id in page.inner_text(
                "#connections")
        finally:
            hosted.shutdown()

        # reset the offsets to before the sends: the whole topic is behind again
        page.goto(f"{c.url}/group/GBrowser")
        page.fill("#reset-topic", "TBrowser")
        page.fill("#reset-time", before.strftime("%Y-%m-%dT%H:%M:%S"))
        page.click("#reset-button")
        assert "offsets of TBrowser for GBrowser reset" in page.inner_text("#flash"), page.inner_text("main")
        assert page.inner_text("#group-lag") == "4"

        # the trace of a traced message: sent, consumed start and end
        page.click("#nav-trace")
        page.fill("#trace-id", traced[0])
        page.click("#trace-search")
        reload_until(page, lambda: page.locator("tr.step-SubAfter").count() > 0)
        steps = [s.get_attribute("class") for s in page.locator("#timeline tr[class^=step-]").all()]
        assert steps == ["step-Pub", "step-SubBefore", "step-SubAfter"]
        assert "GBrowser" in page.inner_text("#timeline") and "PG_browser" in page.inner_text("#timeline")

        # the console's own producer (it sent the test message) is connected; the other pages render
        page.goto(f"{c.url}/producers?group=SELF_TEST_P_GROUP&topic=TBrowser")
        producers = page.inner_text("#producer-list")
        assert re.search(r"\n127\.0\.0\.1@\S+\t127\.0\.0\.1:\d+\t[A-Z]+\tV4_9_8", producers), producers
        for path in ("/acl", "/topics?system=1", "/groups?system=1", "/metrics"):
            page.goto(c.url + path)
            assert page.locator("#error").count() == 0, path
        page.close()


@pytest.mark.timeout(120)
def test_every_page_and_its_changes(browser: Any) -> None:
    """The walks the Java compat test runs too (rocketpy.console.testing: every page, then what needs a client
    online), then the NameServer switcher."""
    from rocketpy.console.testing import fill_scenario, threaded_console_cluster, walk_pages, walk_with_a_consumer

    with threaded_console_cluster(namesrv_alias=True) as c:
        sc = c.run(fill_scenario, c.namesrv)
        page = browser.new_page()
        page.set_default_timeout(10_000)
        walk_pages(page, c.url, sc)

        walk_with_a_consumer(page, c.url, sc, c.namesrv, c.portal)

        # the switcher: the same NameServer under a second name, chosen for this browser only
        page.goto(c.url)
        alias = c.namesrv.replace("127.0.0.1", "localhost")
        page.select_option("#namesrv-select", alias)
        page.wait_for_selector("#flash")
        assert alias in page.inner_text("#flash") and "broker-a" in page.inner_text("#brokers")
        assert page.eval_on_selector("#namesrv-select", "s => s.value") == alias
        other = browser.new_page()
        other.goto(c.url)
        assert other.eval_on_selector("#namesrv-select", "s => s.value") == c.namesrv
        other.close()
        page.close()


@pytest.mark.timeout(60)
def test_login_page_and_roles(browser: Any) -> None:
    """With a users file: the login page, a viewer without forms, an administrator with them, /healthz open."""
    from rocketpy.console.auth import parse_users
    from rocketpy.console.testing import threaded_console_cluster

    with threaded_console_cluster(users=parse_users("admin=secret,1\nviewer=look\n")) as c:
        page = browser.new_page()
        page.set_default_timeout(10_000)
        page.goto(f"{c.url}/topics")
        assert "/login" in page.url
        page.fill("input[name=user]", "viewer")
        page.fill("input[name=password]", "wrong")
        page.click("button")
        assert "wrong user or password" in page.inner_text("#error")
        page.fill("input[name=user]", "viewer")
        page.fill("input[name=password]", "look")
        page.click("button")
        assert page.url.endswith("/topics") and page.locator("#topic-create").count() == 0
        page.goto(f"{c.url}/dlq")
        assert page.locator("#dlq-group").count() == 1  # reading is allowed
        page.click("text=log out")
        assert "/login" in page.url
        page.fill("input[name=user]", "admin")
        page.fill("input[name=password]", "secret")
        page.click("button")
        assert page.url.endswith("/") and page.locator("#brokers").count() == 1
        page.goto(f"{c.url}/topics")
        assert page.locator("#topic-create").count() == 1
        other = browser.new_page()  # no session: orchestrators probe without one
        response = other.goto(f"{c.url}/healthz")
        assert response is not None and response.status == 200
        other.close()
        page.close()
