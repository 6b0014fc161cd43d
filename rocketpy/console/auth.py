"""Logins, sessions and CSRF tokens for the console (stdlib HMAC, no server-side state).

The users file is rocketmq-dashboard's ``users.properties``: ``name=password`` for a
read-only user, ``name=password,1`` for an administrator; ``#`` starts a comment.
A session is a cookie ``sid|user|expiry|mac``; the CSRF token of a form is a MAC of the
session id, so a page of another origin cannot forge one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import secrets
import time

SESSION_COOKIE = "rocketpy_console"
SESSION_SECONDS = 12 * 3600


@dataclasses.dataclass(frozen=True)
class User:
    name: str
    password: str
    admin: bool


def parse_users(text: str) -> dict[str, User]:
    users: dict[str, User] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        name, sep, rest = line.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"users file line {number}: expected name=password[,1]")
        password, _, flag = rest.strip().partition(",")
        users[name.strip()] = User(name.strip(), password, flag.strip() == "1")
    return users


@dataclasses.dataclass(frozen=True)
class Session:
    sid: str
    user: str  # "" when no login is needed


class Sessions:
    def __init__(self, secret: bytes | None = None) -> None:
        self.secret = secret or secrets.token_bytes(32)

    def _mac(self, text: str) -> str:
        return hmac.new(self.secret, text.encode(), hashlib.sha256).hexdigest()

    def issue(self, user: str = "", now: float | None = None) -> str:
        expiry = int((time.time() if now is None else now) + SESSION_SECONDS)
        body = f"{secrets.token_hex(16)}|{user}|{expiry}"
        return f"{body}|{self._mac(body)}"

    def read(self, cookie: str | None, now: float | None = None) -> Session | None:
        if not cookie or cookie.count("|") != 3:
            return None
        body, _, mac = cookie.rpartition("|")
        if not hmac.compare_digest(mac, self._mac(body)):
            return None
        sid, user, expiry = body.split("|")
        if not expiry.isdigit() or int(expiry) < (time.time() if now is None else now):
            return None
        return Session(sid, user)

    def csrf_token(self, session: Session) -> str:
        return self._mac(f"csrf|{session.sid}")

    def check_csrf(self, session: Session | None, token: str | None) -> bool:
        return session is not None and bool(token) and hmac.compare_digest(self.csrf_token(session), token or "")
