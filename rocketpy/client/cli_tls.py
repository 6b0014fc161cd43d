"""The client commands' TLS options (``--tls``, ``--tls-config``), shared by produce/consume and admin."""

from __future__ import annotations

import argparse
from typing import Any

from ..remoting.tls import TlsConfig


def add_tls_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tls", action="store_true", help="use TLS (as -Dtls.enable=true; the Java servers accept it "
                   "by default); settings from --tls-config")
    p.add_argument("--tls-config", metavar="FILE", default=None,
                   help="tls.client.* settings, as Java's tls.config.file (default /etc/rocketmq/tls.properties)")


def tls_options(args: argparse.Namespace) -> dict[str, Any]:
    """ClientConfig keywords of --tls / --tls-config."""
    if not getattr(args, "tls", False):
        return {}
    props = {"tls.config.file": args.tls_config} if args.tls_config else {}
    return {"use_tls": True, "tls": TlsConfig.from_properties(props)}
