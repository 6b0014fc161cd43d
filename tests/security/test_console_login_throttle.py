"""The console's login is throttled per client address and per account (issue #46, finding 4: 1,000 wrong
passwords in 2.1 s were all answered, none slowed). Times are trio's MockClock (virtual_clock); the app is
called in process (rocketpy.console.testing.AsgiClient), from the addresses each test names.

rocketmq-dashboard (the Java console) has no throttle either: its login answers every attempt at once."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

pytest.importorskip("starlette")

from rocketpy.console.app import ConsoleSettings, build_app  # noqa: E402
from rocketpy.console.auth import parse_users  # noqa: E402
from rocketpy.console.data import Clusters  # noqa: E402
from rocketpy.console.testing import AsgiClient  # noqa: E402
from rocketpy.testing import free_port  # noqa: E402

USERS = "admin=right-password,1\nviewer=viewer-password\n"


@asynccontextmanager
async def console_app(**settings: Any) -> AsyncIterator[Any]:
    """The console's app over a NameServer address nothing listens on: logins need no cluster."""
    gone = f"127.0.0.1:{free_port()}"
    clusters = Clusters([gone])
    try:
        yield build_app(ConsoleSettings(namesrv=gone, users=parse_users(USERS), **settings), clusters)
    finally:
        await clusters.aclose()


async def login(app: Any, user: str, password: str, client: str = "127.0.0.1") -> Any:
    return await AsgiClient(app, client=client).request("POST", "/login", {"user": user, "password": password})


def failure_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "wrong password" in r.getMessage()]


@pytest.mark.timeout(30)
async def test_the_sixth_wrong_password_in_a_row_is_refused_then_allowed_after_the_delay(virtual_clock, caplog):
    caplog.set_level(logging.INFO, logger="rocketpy.console")
    async with console_app() as app:
        for _ in range(5):
            assert (await login(app, "admin", "guess")).status == 401
        sixth = await login(app, "admin", "right-password")  # even the right one: not checked while throttled
        assert sixth.status == 429 and sixth.header("retry-after") == "1", sixth.status
        assert "too many wrong passwords" in sixth.text
        await trio.sleep(1.01)
        ok = await login(app, "admin", "right-password")
        assert ok.status == 303 and ok.header("location") == "/"
    lines = failure_lines(caplog)
    assert len(lines) == 5, lines  # each failure once; the refused attempt is no password check
    assert "user 'admin' from 127.0.0.1 (5 in a row; the next attempt waits 1 s)" in lines[-1], lines[-1]


@pytest.mark.timeout(30)
async def test_a_thousand_guesses_get_five_checks_and_delays_double(virtual_clock):
    """The finding's 1,000 wrong passwords in a burst: five are checked, the rest refused; a guesser who waits
    as told gets 1 s, 2 s, 4 s ... up to 15 minutes between guesses."""
    async with console_app() as app:
        statuses = [(await login(app, "admin", f"guess-{i}")).status for i in range(1000)]
        assert statuses[:5] == [401] * 5 and set(statuses[5:]) == {429}
        waits = []
        for i in range(14):
            answer = await login(app, "admin", f"late-{i}")
            while answer.status == 429:
                waits.append(int(answer.header("retry-after")))
                await trio.sleep(int(answer.header("retry-after")))
                answer = await login(app, "admin", f"late-{i}")
            assert answer.status == 401
        assert waits == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900, 900, 900], waits


@pytest.mark.timeout(30)
async def test_one_account_guessed_from_many_addresses_is_throttled(virtual_clock):
    async with console_app() as app:
        for i in range(5):
            assert (await login(app, "admin", "guess", client=f"127.0.0.{10 + i}")).status == 401
        assert (await login(app, "admin", "guess", client="127.0.0.99")).status == 429
        # another account, from an address that has not failed, is not slowed
        assert (await login(app, "viewer", "viewer-password", client="127.0.0.200")).status == 303


@pytest.mark.timeout(30)
async def test_many_accounts_guessed_from_one_address_are_throttled(virtual_clock):
    async with console_app() as app:
        for i in range(5):
            assert (await login(app, f"user{i}", "guess", client="127.0.0.7")).status == 401
        assert (await login(app, "viewer", "viewer-password", client="127.0.0.7")).status == 429
        assert (await login(app, "viewer", "viewer-password", client="127.0.0.8")).status == 303


@pytest.mark.timeout(30)
async def test_a_good_password_forgets_the_accounts_failures(virtual_clock):
    async with console_app() as app:
        for _ in range(4):
            assert (await login(app, "viewer", "typo", client="127.0.0.2")).status == 401
        assert (await login(app, "viewer", "viewer-password", client="127.0.0.2")).status == 303
        # the account starts again from zero; the address still remembers its four failures
        assert (await login(app, "viewer", "typo", client="127.0.0.3")).status == 401
        assert (await login(app, "viewer", "viewer-password", client="127.0.0.3")).status == 303


def test_the_throttle_holds_a_bounded_number_of_addresses_and_names():
    from rocketpy.console.auth import LoginThrottle

    now = [0.0]
    throttle = LoginThrottle(max_keys=100, clock=lambda: now[0])
    for i in range(5000):
        now[0] += 0.001
        throttle.failed(f"10.0.{i // 256}.{i % 256}", f"name-{i}" * 50)
    assert throttle.tracked() == (100, 100)
    # the most recent ones are the ones kept: the last address is still counted
    assert throttle.wait("10.0.19.135", "someone") == 0.0
    for _ in range(4):
        throttle.failed("10.0.19.135", "someone")
    assert throttle.wait("10.0.19.135", "anyone") > 0
