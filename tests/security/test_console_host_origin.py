"""The console answers only to its own name and takes changes only from its own pages (issue #46, finding 4:
without --users it answered any ``Host``, so a DNS-rebinding page could create topics through a browser on the
operator's machine). A foreign ``Host`` gets 421, a POST with a foreign ``Origin`` 403, one log line each.

rocketmq-dashboard (the Java console, Spring Boot) checks neither header."""

from __future__ import annotations

import http.client
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

pytest.importorskip("starlette")

from rocketpy.console.app import ConsoleSettings, build_app  # noqa: E402
from rocketpy.console.data import Clusters  # noqa: E402
from rocketpy.console.server import run_console  # noqa: E402
from rocketpy.console.testing import AsgiClient  # noqa: E402
from rocketpy.testing import free_port  # noqa: E402


@asynccontextmanager
async def guarded(listen_host: str, public_url: str | None = None) -> AsyncIterator[Any]:
    """The console's app without a users file (as ``rocketpy console`` serves it) behind its guard; two
    NameServers nothing listens on, so that every page has a form with the CSRF token (the switcher)."""
    from rocketpy.console.guard import HostGuard

    gone, other = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    clusters = Clusters([gone, other])
    try:
        yield HostGuard(build_app(ConsoleSettings(namesrv=gone, other_namesrvs=[other]), clusters), listen_host,
                        public_url)
    finally:
        await clusters.aclose()


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "console refused" in r.getMessage()]


async def create_topic(app: Any, host: str, origin: str | None = None) -> Any:
    """What a page would post to create a topic: the CSRF token of a page it loaded from ``host``."""
    browser = AsgiClient(app, host=host)
    token = (await browser.get("/topics")).csrf()
    headers = {"origin": origin} if origin else {}
    return await browser.request("POST", "/topics/save", {"topic": "TRebound", "csrf": token}, headers)


@pytest.mark.timeout(30)
async def test_a_rebinding_name_is_refused_on_loopback(caplog):
    caplog.set_level(logging.INFO, logger="rocketpy.console")
    async with guarded("127.0.0.1") as app:
        answer = await AsgiClient(app, host="attacker.example:8080").get("/topics")
        assert answer.status == 421 and "--public-url" in answer.text
        assert (await AsgiClient(app, host="attacker.example:8080").request(
            "POST", "/topics/save", {"topic": "TRebound", "csrf": "x"})).status == 421
        assert len(refusals(caplog)) == 2
        assert "Host 'attacker.example:8080'" in refusals(caplog)[0]
        for host in ("127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "127.0.0.1"):
            answer = await AsgiClient(app, host=host).get("/topics")
            assert answer.status == 200 and answer.header("x-frame-options") == "DENY", host
        for host in ("", "127.0.0.2:8080", "localhost.attacker.example", "127.0.0.1@attacker.example"):
            assert (await AsgiClient(app, host=host).get("/topics")).status == 421, host


@pytest.mark.timeout(30)
async def test_every_interface_answers_ip_addresses_and_the_public_url_only():
    async with guarded("0.0.0.0", "https://console.example.com/") as app:
        for host in ("192.0.2.7:8080", "[2001:db8::1]:8080", "localhost:8080", "console.example.com"):
            assert (await AsgiClient(app, host=host).get("/topics")).status == 200, host
        for host in ("attacker.example", "console.example.com.attacker.example", "example.com"):
            assert (await AsgiClient(app, host=host).get("/topics")).status == 421, host
    from rocketpy.console.guard import HostRule

    rule = HostRule("10.1.2.3")
    assert rule.allows("10.1.2.3") and not rule.allows("localhost") and not rule.allows("10.1.2.4")


@pytest.mark.timeout(30)
async def test_a_change_posted_from_another_origin_is_refused(caplog):
    caplog.set_level(logging.INFO, logger="rocketpy.console")
    async with guarded("127.0.0.1", "https://console.example.com") as app:
        for origin in ("http://attacker.example", "http://127.0.0.1:9999", "null", "http://127.0.0.1"):
            answer = await create_topic(app, "127.0.0.1:8080", origin)
            assert answer.status == 403 and "another site" in answer.text, origin
        assert len(refusals(caplog)) == 4 and "Origin 'http://attacker.example'" in refusals(caplog)[0]
        # its own pages: the same origin, the public URL's, or none (not a browser); the CSRF token still holds
        for host, origin in (("127.0.0.1:8080", "http://127.0.0.1:8080"), ("console.example.com", None),
                             ("console.example.com", "https://console.example.com")):
            answer = await create_topic(app, host, origin)
            assert answer.status == 303, (host, origin, answer.text[:200])


def _get(port: int, path: str, host: str | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.putrequest("GET", path, skip_host=host is not None)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


@pytest.mark.timeout(30)
async def test_the_served_console_refuses_a_foreign_host():
    port = free_port()
    async with trio.open_nursery() as nursery:
        await nursery.start(run_console, ConsoleSettings(namesrv=f"127.0.0.1:{free_port()}"), f"127.0.0.1:{port}")
        status, _ = await trio.to_thread.run_sync(_get, port, "/login", f"attacker.example:{port}")
        assert status == 421
        status, page = await trio.to_thread.run_sync(_get, port, "/login", None)
        assert status == 200 and "<form" in page
        nursery.cancel_scope.cancel()
