"""Console sessions end on the server (issue #46, finding 4: after POST /logout the old cookie still worked for
12 h, a stateless MAC). Logging out ends that session; a password change, on the password page or in the
users file, ends every session of that user; the cookie alone lets nobody back in.

rocketmq-dashboard (the Java console) keeps sessions server-side too, but has no password change."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

pytest.importorskip("starlette")

from rocketpy.console.app import ConsoleSettings, build_app  # noqa: E402
from rocketpy.console.auth import SESSION_COOKIE, Sessions, parse_users  # noqa: E402
from rocketpy.console.data import Clusters  # noqa: E402
from rocketpy.console.testing import AsgiClient  # noqa: E402
from rocketpy.testing import free_port  # noqa: E402

USERS = "# console users\nadmin=first-password,1\n\nviewer=viewer-password\n"


@asynccontextmanager
async def console_app(users_file: Path | None = None) -> AsyncIterator[tuple[Any, ConsoleSettings]]:
    """The console's app over a NameServer address nothing listens on: a page answers 200 with the error shown
    to a logged-in browser, and a redirect to /login to any other."""
    gone, other = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"  # two: every page has the switcher's form
    clusters = Clusters([gone, other])
    text = users_file.read_text() if users_file else USERS
    file = {"users_file": str(users_file)} if users_file else {}
    settings = ConsoleSettings(namesrv=gone, other_namesrvs=[other], users=parse_users(text), **file)
    try:
        yield build_app(settings, clusters), settings
    finally:
        await clusters.aclose()


async def logged_in(app: Any, user: str, password: str) -> AsgiClient:
    browser = AsgiClient(app)
    answer = await browser.request("POST", "/login", {"user": user, "password": password})
    assert answer.status == 303 and SESSION_COOKIE in browser.cookies, answer.text
    return browser


def replay(app: Any, browser: AsgiClient) -> AsgiClient:
    """Another browser holding a copy of ``browser``'s cookies (a stolen or saved cookie)."""
    other = AsgiClient(app)
    other.cookies = dict(browser.cookies)
    return other


async def is_in(browser: AsgiClient) -> bool:
    answer = await browser.get("/topics")
    if answer.status == 303:
        assert answer.header("location", ).startswith("/login")
        return False
    assert answer.status == 200, answer.status
    return True


@pytest.mark.timeout(30)
async def test_logout_ends_the_session_on_the_server():
    async with console_app() as (app, _):
        browser = await logged_in(app, "admin", "first-password")
        saved = replay(app, browser)
        token = (await browser.get("/topics")).csrf()
        assert await is_in(saved)
        answer = await browser.request("POST", "/logout", {"csrf": token})
        assert answer.status == 303 and answer.header("location") == "/login"
        assert SESSION_COOKIE not in browser.cookies
        # the cookie as it was before the logout: no page, no metrics, no change
        assert not await is_in(saved)
        assert (await saved.get("/metrics")).status == 401
        assert (await saved.get("/api/cluster")).status == 401
        change = await saved.request("POST", "/topics/save", {"topic": "TAfterLogout", "csrf": token})
        assert change.status == 403


@pytest.mark.timeout(30)
async def test_logout_needs_the_pages_token():
    """A page of another site cannot log the user out (nor anything else): the form carries the CSRF token."""
    async with console_app() as (app, _):
        browser = await logged_in(app, "viewer", "viewer-password")
        assert (await browser.request("POST", "/logout", {})).status == 403
        assert await is_in(browser)


@pytest.mark.timeout(30)
async def test_a_password_change_ends_every_session_of_that_user(tmp_path: Path):
    users = tmp_path / "console-users.properties"
    users.write_text(USERS)
    users.chmod(0o600)
    async with console_app(users) as (app, _):
        here = await logged_in(app, "admin", "first-password")
        elsewhere = await logged_in(app, "admin", "first-password")
        before = replay(app, here)
        viewer = await logged_in(app, "viewer", "viewer-password")
        page = await here.get("/password")
        assert page.status == 200 and 'id="password-form"' in page.text
        answer = await here.request("POST", "/password", {"csrf": page.csrf(), "current": "first-password",
                                                          "new": "second-password", "again": "second-password"})
        assert answer.status == 303, answer.text
        assert "password changed" in (await here.get(answer.header("location") or "/")).text
        assert await is_in(here)  # this browser got a new session
        assert not await is_in(before) and not await is_in(elsewhere)
        assert await is_in(viewer)  # another user's session is not touched
        assert (await AsgiClient(app).request("POST", "/login", {"user": "admin", "password": "first-password"})
                ).status == 401
        await logged_in(app, "admin", "second-password")
    # written to the users file, the rest of it as it was
    assert users.read_text() == USERS.replace("admin=first-password,1", "admin=second-password,1")
    assert users.stat().st_mode & 0o777 == 0o600


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("current", "new", "again", "status", "said"), [
    ("wrong-password", "second-password", "second-password", 403, "the current password is wrong"),
    ("first-password", "second-password", "other-password", 400, "the two new passwords differ"),
    ("first-password", "short", "short", 400, "at least 8 characters"),
    ("first-password", "with,comma", "with,comma", 400, "may not contain"),
])
async def test_a_refused_password_change_changes_nothing(tmp_path: Path, current: str, new: str, again: str,
                                                         status: int, said: str):
    users = tmp_path / "console-users.properties"
    users.write_text(USERS)
    async with console_app(users) as (app, _):
        browser = await logged_in(app, "admin", "first-password")
        answer = await browser.request("POST", "/password", {"csrf": (await browser.get("/password")).csrf(),
                                                             "current": current, "new": new, "again": again})
        assert answer.status == status and said in answer.text, answer.text
        assert await is_in(browser)
    assert users.read_text() == USERS


@pytest.mark.timeout(30)
async def test_an_edited_users_file_ends_the_sessions_of_changed_and_removed_users(tmp_path: Path, virtual_clock):
    from rocketpy.console.server import watch_users_file

    users = tmp_path / "console-users.properties"
    users.write_text(USERS + "gone=gone-password\n")
    async with console_app(users) as (app, settings), trio.open_nursery() as nursery:
        nursery.start_soon(watch_users_file, settings, app.state.sessions, 1.0)
        await trio.sleep(0.5)
        admin = await logged_in(app, "admin", "first-password")
        viewer = await logged_in(app, "viewer", "viewer-password")
        gone = await logged_in(app, "gone", "gone-password")
        users.write_text(USERS.replace("first-password", "edited-password") + "new=new-password\n")
        await trio.sleep(3)
        assert not await is_in(admin) and not await is_in(gone)
        assert await is_in(viewer)
        await logged_in(app, "admin", "edited-password")
        await logged_in(app, "new", "new-password")
        # a broken edit is not used: everyone stays as they were
        users.write_text("admin: no equals sign on this line\n")
        await trio.sleep(3)
        assert await is_in(viewer)
        nursery.cancel_scope.cancel()


def test_a_users_sessions_are_bounded():
    from rocketpy.console.auth import SESSIONS_PER_USER

    sessions = Sessions()
    cookies = [sessions.issue("admin") for _ in range(SESSIONS_PER_USER + 8)]
    alive = [c for c in cookies if sessions.read(c) is not None]
    assert alive == cookies[8:]  # the oldest ended
    assert sessions.end_user("admin") == SESSIONS_PER_USER
    assert all(sessions.read(c) is None for c in cookies)
