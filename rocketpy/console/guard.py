"""The console's outer ASGI layer: requests for a name the console does not answer to are refused (DNS
rebinding: a page of another site whose name now resolves to this machine would otherwise drive the console
through the operator's browser), and so are state-changing requests sent from a page of another origin.

A request's ``Host`` must be the address the console listens on; when that is loopback, also ``localhost``,
``127.0.0.1`` or ``[::1]``; when it is every interface, any IP address, ``localhost`` or this machine's name;
and always the host of ``--public-url`` (the name a reverse proxy or DNS gives it). Ports are not compared:
port mappings change them, and a rebinding page cannot choose an IP address as its own name. Refused: 421 for
a foreign Host, 403 for a foreign Origin, one log line each.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger("rocketpy.console")

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
DEFAULT_PORTS = {"http": 80, "https": 443}
#: answered with every response: no framing by other sites (clickjacking), no content sniffing
HEADERS = [(b"x-frame-options", b"DENY"), (b"x-content-type-options", b"nosniff"),
           (b"referrer-policy", b"same-origin")]


def split_host(text: str) -> tuple[str, int | None]:
    """``host[:port]`` or ``[v6][:port]`` -> (lower-case host without brackets or a final dot, port or None);
    ValueError when it is not one."""
    text = text.strip().lower()
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(text)
        port = rest[1:]
    else:
        host, _, port = text.partition(":")
        if ":" in port:
            raise ValueError(text)
    if port and not port.isdigit():
        raise ValueError(text)
    host = host.rstrip(".")
    if not host or any(c in host for c in "/\\@ ?#"):
        raise ValueError(text)
    return host, int(port) if port else None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address (127.0.0.0/8, ::1): only this machine reaches it."""
    host = host.strip("[]").lower()
    ip = _ip(host)
    return host == "localhost" or (ip is not None and ip.is_loopback)


class HostRule:
    """Which ``Host`` names a console listening on ``listen_host`` answers to (see the module's docstring)."""

    def __init__(self, listen_host: str, public_url: str | None = None) -> None:
        listen = listen_host.strip("[]").lower() or "0.0.0.0"
        self.names = {listen}
        self.any_ip = False
        ip = _ip(listen)
        if is_loopback(listen):
            self.names |= LOOPBACK_NAMES
        elif ip is not None and ip.is_unspecified:
            self.any_ip = True
            self.names |= {"localhost", socket.gethostname().lower()}
        self.public_origin: tuple[str, str, int] | None = None
        if public_url:
            self.public_origin = public_origin(public_url)
            self.names.add(self.public_origin[1])

    def allows(self, host: str) -> bool:
        return host in self.names or (self.any_ip and _ip(host) is not None)


def public_origin(url: str) -> tuple[str, str, int]:
    """``--public-url`` as (scheme, host, port); ValueError when it is not an http(s) URL with a host."""
    parts = urlsplit(url.strip())
    if parts.scheme not in DEFAULT_PORTS or not parts.netloc or "@" in parts.netloc:
        raise ValueError(f"--public-url wants http(s)://HOST[:PORT][/], got {url!r}")
    host, port = split_host(parts.netloc)
    return parts.scheme, host, port or DEFAULT_PORTS[parts.scheme]


class HostGuard:
    """ASGI middleware around the console's app (lifespan and other scopes pass through)."""

    def __init__(self, app: ASGIApp, listen_host: str, public_url: str | None = None) -> None:
        self.app = app
        self.rule = HostRule(listen_host, public_url)

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Any]],
                       send: Callable[[Any], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in reversed(scope.get("headers") or [])}  # the first of each wins
        raw_host = headers.get(b"host", b"").decode("latin-1")
        try:
            host, port = split_host(raw_host)
        except ValueError:
            host, port = "", None
        if not self.rule.allows(host):
            self._refused(scope, f"Host {raw_host!r} is not this console's address (see --public-url)")
            await _answer(send, 421, "421 Misdirected Request: this console does not answer to that name; "
                                     "start it with --public-url URL to serve it under another one\n")
            return
        if scope["method"] not in SAFE_METHODS and b"origin" in headers:
            origin = headers[b"origin"].decode("latin-1")
            scheme = str(scope.get("scheme") or "http")
            if not self._same_origin(origin, host, port or DEFAULT_PORTS.get(scheme, 80)):
                self._refused(scope, f"Origin {origin!r} is not this console's")
                await _answer(send, 403, "403 Forbidden: a change sent from a page of another site\n")
                return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _same_origin(self, origin: str, host: str, port: int) -> bool:
        parts = urlsplit(origin.strip())
        if parts.scheme not in DEFAULT_PORTS or not parts.netloc:
            return False  # "null" (sandboxed frames, file: pages) and anything odd
        try:
            o_host, o_port = split_host(parts.netloc)
        except ValueError:
            return False
        o_port = o_port or DEFAULT_PORTS[parts.scheme]
        if self.rule.public_origin == (parts.scheme, o_host, o_port):
            return True
        return (o_host, o_port) == (host, port)

    def _refused(self, scope: Scope, why: str) -> None:
        client = scope.get("client") or ("?", 0)
        log.warning("console refused %s %r from %s: %s", scope.get("method"), scope.get("path"), client[0], why)


async def _answer(send: Callable[[Any], Awaitable[None]], status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), *HEADERS]})
    await send({"type": "http.response.body", "body": body})
