"""The ``rocketpy`` command."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from . import __version__


def _cmd_codes(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from .codecs import codes

    tables = {
        "request": codes.RequestCode,
        "response": codes.ResponseCode,
        "language": codes.LanguageCode,
        "version": codes.MQVersion,
    }
    if not sys.stdout.isatty():  # a pipe or file: plain rows, no box characters
        for member in tables[args.table]:
            sys.stdout.write(f"{int(member):>5}  {member.name}\n")
        return 0
    table = Table(title=f"{args.table} codes (RocketMQ 4.9.8)")
    table.add_column("code", justify="right")
    table.add_column("name")
    for member in tables[args.table]:
        table.add_row(str(int(member)), member.name)
    Console().print(table)
    return 0


#: packages that add subcommands: each has a ``cli`` module with ``add_parsers(subparsers)``
_PROVIDERS = ("rocketpy.namesrv.cli", "rocketpy.store.cli", "rocketpy.sniffer.cli", "rocketpy.broker.cli",
              "rocketpy.client.cli", "rocketpy.console.cli", "rocketpy.spark.cli")


def _add_providers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    import importlib

    for name in _PROVIDERS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and name.startswith(exc.name):
                continue  # that part is not built yet
            raise
        module.add_parsers(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rocketpy", description="RocketMQ 4.x remoting protocol tools")
    parser.add_argument("--version", action="version", version=f"rocketpy {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("codes", help="print a code table (request, response, language, version)")
    p.add_argument("table", choices=["request", "response", "language", "version"])
    p.set_defaults(func=_cmd_codes)
    _add_providers(sub)
    return parser


def only(exc: BaseException, kind: type[BaseException]) -> bool:
    """Is ``exc`` a ``kind``, or a group (trio's nurseries make them) of nothing but ``kind``?"""
    if isinstance(exc, BaseExceptionGroup):
        return all(only(e, kind) for e in exc.exceptions)
    return isinstance(exc, kind)


def _silence_stdout() -> None:
    """The reader went away (``| head``): later writes and the exit flush go nowhere, quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # stdout is no file (tests): nothing will flush to a closed pipe


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BaseException as exc:
        if only(exc, BrokenPipeError):
            _silence_stdout()
            return 141  # as a shell reports a command ended by SIGPIPE
        if only(exc, KeyboardInterrupt):
            return 130  # Ctrl-C: as the shell reports SIGINT, without a traceback
        raise


if __name__ == "__main__":
    sys.exit(main())
