"""``rocketpy console -n NAMESRV [--listen 127.0.0.1:8080] [--users FILE] [--public-url URL]
[--tls-cert PEM --tls-key PEM]``."""

from __future__ import annotations

import argparse
import logging
import ssl
import sys

import trio

DEFAULT_LISTEN = "127.0.0.1:8080"


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("console", help="web console and /metrics for a RocketMQ cluster (any 4.x NameServer)")
    p.add_argument("-n", "--namesrv", required=True, action="append",
                   help="NameServer address(es) of a cluster, host:port[;host:port]; repeat -n for more clusters "
                        "(the console switches between them; the first is the default)")
    add_console_options(p)
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=run)


def add_console_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    p.add_argument(f"--{prefix}listen", default=DEFAULT_LISTEN,
                   help=f"address to serve on (default {DEFAULT_LISTEN}: this machine only)")
    p.add_argument(f"--{prefix}users", metavar="FILE",
                   help="users file (name=password, name=password,1 for an administrator): login required")
    p.add_argument(f"--{prefix}read-only", action="store_true", help="refuse every change")
    p.add_argument(f"--{prefix}public-url", metavar="URL",
                   help="the URL browsers use when it is not the listen address (a DNS name, a reverse proxy): "
                        "requests for any other name are refused (DNS rebinding)")
    p.add_argument(f"--{prefix}tls-cert", metavar="PEM", help="serve HTTPS with this certificate chain "
                   "(with --tls-key); cookies are then Secure")
    p.add_argument(f"--{prefix}tls-key", metavar="PEM", help="the private key of --tls-cert")


def settings_from(args: argparse.Namespace, namesrv: str | list[str], prefix: str = "") -> object:
    from .app import ConsoleSettings
    from .auth import parse_users
    from .guard import public_origin

    users = None
    path = getattr(args, f"{prefix}users")
    if path:
        with open(path, encoding="utf-8") as f:
            users = parse_users(f.read())
        if not users:
            raise ValueError(f"users file {path} names no user (name=password, name=password,1 for an administrator)")
    public_url = getattr(args, f"{prefix}public_url", None)
    if public_url:
        public_origin(public_url)
    cert, key = getattr(args, f"{prefix}tls_cert", None), getattr(args, f"{prefix}tls_key", None)
    if bool(cert) != bool(key):
        raise ValueError(f"--{prefix}tls-cert and --{prefix}tls-key go together")
    if cert:
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"cannot use --{prefix}tls-cert {cert} --{prefix}tls-key {key}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
    first, *others = [namesrv] if isinstance(namesrv, str) else namesrv
    return ConsoleSettings(namesrv=first, other_namesrvs=others, read_only=getattr(args, f"{prefix}read_only"),
                           users=users, users_file=path or None, public_url=public_url, tls_cert=cert, tls_key=key)


def _fail(text: str) -> int:
    print(f"rocketpy console: {text}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    try:
        from .server import run_console, split_listen
    except ModuleNotFoundError as exc:
        return _fail(f"{exc.name} is missing: pip install 'rocketpy[console]'")
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        split_listen(args.listen)
        settings = settings_from(args, args.namesrv)
    except (OSError, ValueError) as exc:
        return _fail(str(exc))

    from ..cli import run_server

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(run_console, settings, args.listen)
            print(f"rocketpy console: {url} (NameServer {' | '.join(args.namesrv)})", flush=True)

    return run_server(main, "console", f"cannot serve on {args.listen}")
