"""The console over HTTPS (issue #46, finding 4: no TLS option, and cookies without ``Secure``). With
``--tls-cert/--tls-key`` Hypercorn serves TLS 1.2+ only; the session cookie is ``Secure`` then (and behind an
``https`` ``--public-url``), so a browser never sends it over plain HTTP. Test certificates from trustme.

rocketmq-dashboard (the Java console) serves HTTPS through Spring Boot's ``server.ssl.*`` settings."""

from __future__ import annotations

import http.client
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import trio

pytest.importorskip("starlette")
trustme = pytest.importorskip("trustme")

from rocketpy.console.app import ConsoleSettings  # noqa: E402
from rocketpy.console.auth import parse_users  # noqa: E402
from rocketpy.console.server import run_console  # noqa: E402
from rocketpy.console.testing import AsgiClient  # noqa: E402
from rocketpy.testing import free_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def certificates(tmp_path: Path) -> tuple[Any, str, str]:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "console.pem"))
    cert.private_key_pem.write_to_path(str(tmp_path / "console.key"))
    return ca, str(tmp_path / "console.pem"), str(tmp_path / "console.key")


def _login(port: int, context: ssl.SSLContext) -> tuple[int, str, str]:
    """POST /login over TLS: (status, Set-Cookie, the TLS version)."""
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
    try:
        body = urlencode({"user": "admin", "password": "right-password"})
        conn.request("POST", "/login", body, {"content-type": "application/x-www-form-urlencoded"})
        response = conn.getresponse()
        response.read()
        assert conn.sock is not None
        return response.status, response.getheader("set-cookie") or "", conn.sock.version() or ""
    finally:
        conn.close()


def _plain(port: int) -> int | str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/login")
        return conn.getresponse().status
    except (OSError, http.client.HTTPException) as exc:
        return type(exc).__name__
    finally:
        conn.close()


@pytest.mark.timeout(60)
async def test_served_over_tls_with_secure_cookies(tmp_path: Path):
    ca, cert, key = certificates(tmp_path)
    settings = ConsoleSettings(namesrv=f"127.0.0.1:{free_port()}", users=parse_users("admin=right-password,1"),
                               tls_cert=cert, tls_key=key)
    port = free_port()
    async with trio.open_nursery() as nursery:
        url = await nursery.start(run_console, settings, f"127.0.0.1:{port}")
        assert url == f"https://127.0.0.1:{port}"
        context = ssl.create_default_context()
        ca.configure_trust(context)
        status, cookie, version = await trio.to_thread.run_sync(_login, port, context)
        assert status == 303 and version in ("TLSv1.2", "TLSv1.3")
        assert "rocketpy_console=" in cookie and "Secure" in cookie and "HttpOnly" in cookie, cookie
        assert await trio.to_thread.run_sync(_plain, port) != 200  # no plain HTTP on the TLS port
        nursery.cancel_scope.cancel()


@pytest.mark.timeout(30)
async def test_cookies_are_secure_behind_an_https_public_url_and_only_then():
    from rocketpy.console.app import build_app
    from rocketpy.console.data import Clusters

    clusters = Clusters([f"127.0.0.1:{free_port()}"])
    try:
        for public_url, secure in (("https://console.example.com", True), (None, False),
                                   ("http://console.example.com", False)):
            app = build_app(ConsoleSettings(namesrv=clusters.default, users=parse_users("admin=right-password,1"),
                                            public_url=public_url), clusters)
            answer = await AsgiClient(app).request("POST", "/login", {"user": "admin", "password": "right-password"})
            assert answer.status == 303
            assert ("Secure" in (answer.header("set-cookie") or "")) is secure, public_url
    finally:
        await clusters.aclose()


@pytest.mark.parametrize(("extra", "said"), [
    (["--tls-cert", "console.pem"], "--tls-cert and --tls-key go together"),
    (["--tls-cert", "missing.pem", "--tls-key", "missing.key"], "cannot use --tls-cert missing.pem"),
    (["--public-url", "console.example.com"], "--public-url wants http(s)://HOST"),
])
def test_bad_tls_or_public_url_options_are_one_line(tmp_path: Path, extra: list[str], said: str) -> None:
    done = subprocess.run([sys.executable, "-m", "rocketpy", "console", "-n", "127.0.0.1:9876", *extra],
                          cwd=tmp_path, capture_output=True, text=True, timeout=30,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1 and len(lines) == 1 and said in lines[0], done.stderr
