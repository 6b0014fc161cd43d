"""Logins, sessions, CSRF tokens and the login throttle of the console (stdlib HMAC).

The users file is rocketmq-dashboard's ``users.properties``: ``name=password`` for a
read-only user, ``name=password,1`` for an administrator; ``#`` starts a comment.
A session is a cookie ``sid|user|expiry|mac``; the CSRF token of a form is a MAC of the
session id, so a page of another origin cannot forge one. A logged-in user's session ids
are also kept server-side, so logging out or changing the password ends them there: the
cookie alone no longer lets anyone in.
"""

from __future__ import annotations

import collections
import dataclasses
import errno
import hashlib
import hmac
import math
import os
import secrets
import tempfile
import time
from collections.abc import Callable

SESSION_COOKIE = "rocketpy_console"
SESSION_SECONDS = 12 * 3600
SESSIONS_PER_USER = 32  # a user's oldest session ends when a newer login would exceed this
MIN_PASSWORD = 8


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


def check_new_password(password: str) -> None:
    """What the users file can hold: no ``,`` (it starts the admin flag), no line break, no spaces around."""
    if len(password) < MIN_PASSWORD:
        raise ValueError(f"the new password needs at least {MIN_PASSWORD} characters")
    if "," in password or "\n" in password or "\r" in password or password != password.strip():
        raise ValueError("the new password may not contain ',' or line breaks, nor begin or end with a space")


def with_password(text: str, name: str, password: str) -> str:
    """The users file ``text`` with ``name``'s password replaced (its flag, comments and other lines kept)."""
    check_new_password(password)
    lines = text.splitlines(keepends=True)
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, _, rest = line.partition("=")
        if key.strip() == name:
            _, comma, flag = rest.strip().partition(",")
            end = raw[len(raw.rstrip("\r\n")):] or "\n"
            lines[i] = f"{name}={password}{comma}{flag}{end}"
            return "".join(lines)
    raise ValueError(f"user {name} is not in the users file")


def write_users_file(path: str, name: str, password: str) -> None:
    """Replace ``name``'s password in the users file at ``path``: a new file beside it renamed over it, with the
    old one's permissions, so a reader never sees half a file; rewritten in place where it cannot be renamed
    over (a file bind-mounted into a container). Blocking: run it in a thread."""
    with open(path, encoding="utf-8") as f:
        text = with_password(f.read(), name, password)
    mode = os.stat(path).st_mode & 0o7777
    try:
        fd, tmp = tempfile.mkstemp(prefix=".users-", dir=os.path.dirname(os.path.abspath(path)))
    except PermissionError:
        fd, tmp = -1, ""
    if fd >= 0:
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, path)
            return
        except OSError as exc:
            if exc.errno not in (errno.EBUSY, errno.EXDEV):
                raise
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    with open(path, "r+", encoding="utf-8") as f:
        f.write(text)
        f.truncate()
        f.flush()
        os.fsync(f.fileno())


@dataclasses.dataclass(frozen=True)
class Session:
    sid: str
    user: str  # "" when no login is needed


class Sessions:
    """Signed cookies. Those of a logged-in user are valid only while their id is in the table (at most
    ``per_user`` a user, for users of the users file only, so the table is bounded by it)."""

    def __init__(self, secret: bytes | None = None, *, per_user: int = SESSIONS_PER_USER) -> None:
        self.secret = secret or secrets.token_bytes(32)
        self.per_user = per_user
        self._live: dict[str, dict[str, int]] = {}  # user -> session id -> expiry, oldest first

    def _mac(self, text: str) -> str:
        return hmac.new(self.secret, text.encode(), hashlib.sha256).hexdigest()

    def issue(self, user: str = "", now: float | None = None) -> str:
        now = time.time() if now is None else now
        expiry = int(now + SESSION_SECONDS)
        sid = secrets.token_hex(16)
        if user:
            live = self._live.setdefault(user, {})
            for old in [s for s, e in live.items() if e < now]:
                del live[old]
            while len(live) >= self.per_user:
                del live[next(iter(live))]
            live[sid] = expiry
        body = f"{sid}|{user}|{expiry}"
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
        if user and sid not in self._live.get(user, ()):
            return None  # logged out, password changed, or pushed out by newer logins
        return Session(sid, user)

    def end(self, session: Session) -> None:
        """Logout: this session's cookie stops working."""
        self._live.get(session.user, {}).pop(session.sid, None)

    def end_user(self, user: str) -> int:
        """A password change (or the user removed): every session of ``user`` ends; how many there were."""
        return len(self._live.pop(user, {}))

    def csrf_token(self, session: Session) -> str:
        return self._mac(f"csrf|{session.sid}")

    def check_csrf(self, session: Session | None, token: str | None) -> bool:
        return session is not None and bool(token) and hmac.compare_digest(self.csrf_token(session), token or "")


def replace_users(users: dict[str, User], new: dict[str, User], sessions: Sessions) -> list[str]:
    """The users file read again: ``users`` updated in place to ``new``; the sessions of each user whose password
    changed or who is gone end. Returns those users' names."""
    ended = sorted(name for name, user in users.items() if name not in new or new[name].password != user.password)
    users.clear()
    users.update(new)
    for name in ended:
        sessions.end_user(name)
    return ended


class LoginThrottle:
    """Failed logins counted per client address and per account name. After ``free`` failures in a row of
    either, each further attempt waits ``base * 2**(n - free)`` seconds (at most ``cap``) after the last failure
    and is refused until then, without the password being checked. Failures are forgotten after ``forget``
    seconds without one; at most ``max_keys`` addresses and as many names are tracked (least recent dropped)."""

    def __init__(self, *, free: int = 5, base: float = 1.0, cap: float = 900.0, forget: float = 3600.0,
                 max_keys: int = 10_000, clock: Callable[[], float] | None = None) -> None:
        self.free, self.base, self.cap, self.forget, self.max_keys = free, base, cap, forget, max_keys
        self.clock = clock or _trio_time
        # key -> (failures in a row, time of the last one); least recently failed first
        self._addrs: collections.OrderedDict[str, tuple[int, float]] = collections.OrderedDict()
        self._names: collections.OrderedDict[str, tuple[int, float]] = collections.OrderedDict()

    def _delay(self, failures: int) -> float:
        if failures < self.free:
            return 0.0
        return min(self.cap, self.base * 2.0 ** min(failures - self.free, 64))

    def _wait(self, table: collections.OrderedDict[str, tuple[int, float]], key: str, now: float) -> float:
        failures, last = table.get(key, (0, -math.inf))
        if now - last > self.forget:
            return 0.0
        return max(0.0, last + self._delay(failures) - now)

    def wait(self, addr: str, name: str) -> float:
        """Seconds until a login from ``addr`` as ``name`` may be tried (0: now)."""
        now = self.clock()
        return max(self._wait(self._addrs, addr, now), self._wait(self._names, name[:256], now))

    def _fail(self, table: collections.OrderedDict[str, tuple[int, float]], key: str, now: float) -> int:
        failures, last = table.pop(key, (0, -math.inf))
        failures = 1 if now - last > self.forget else failures + 1
        table[key] = (failures, now)
        while len(table) > self.max_keys:
            table.popitem(last=False)
        return failures

    def failed(self, addr: str, name: str) -> tuple[int, float]:
        """A wrong password: (failures in a row, the larger of the address's and the name's), and the seconds
        the next attempt must wait."""
        now = self.clock()
        count = max(self._fail(self._addrs, addr, now), self._fail(self._names, name[:256], now))
        return count, self.wait(addr, name)

    def tracked(self) -> tuple[int, int]:
        """How many addresses and names the throttle holds (each at most ``max_keys``)."""
        return len(self._addrs), len(self._names)

    def succeeded(self, name: str) -> None:
        """The account's failures are forgotten (the address's are not: one account's good password must not
        reset the count of guesses at the others)."""
        self._names.pop(name[:256], None)


def _trio_time() -> float:
    import trio

    return trio.current_time()  # the console runs on trio; tests move it with MockClock
