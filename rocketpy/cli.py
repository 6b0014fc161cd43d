"""The ``rocketpy`` command."""

from __future__ import annotations

import argparse
import contextvars
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence

from . import __version__, logs


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
              "rocketpy.client.cli", "rocketpy.mqadmin.cli", "rocketpy.console.cli", "rocketpy.health",
              "rocketpy.spark.cli")


def _add_providers(sub: argparse._SubParsersAction) -> None:
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


#: the Java launcher a command runs as (``mqbroker``, ``mqadmin``: the ``_launcher`` default of its parser),
#: whose name its messages then carry, as an operator typed it
_launcher: contextvars.ContextVar[str | None] = contextvars.ContextVar("launcher", default=None)


def command_label(command: str) -> str:
    """How a message names ``command`` ("broker", "admin updateTopic"): ``rocketpy broker``, ``rocketpy admin
    updateTopic``, or under a Java launcher its name in the subcommand's place (``mqbroker``, ``mqadmin
    updateTopic``)."""
    launcher = _launcher.get()
    if launcher is None:
        return f"rocketpy {command}"
    _sub, _, rest = command.partition(" ")
    return f"{launcher} {rest}" if rest else launcher


def run_server(main: Callable[[], Awaitable[object]], command: str, what: str) -> int:
    """``trio.run(main)`` for a server command: an OSError (the port is taken, the store cannot be opened ...)
    is one line on stderr and status 1; a Ctrl-C while stopping is logged, not a traceback."""
    import signal

    import trio

    from .store.types import StoreError

    failure: BaseException | None = None
    try:
        trio.run(main)
    except* (OSError, StoreError) as group:  # StoreError: the store is in use by another process ...
        failure = first_leaf(group)
    except* KeyboardInterrupt:
        # a second Ctrl-C while stopping: trio hands it back when the signal receiver closes; the
        # shutdown (shielded) has run by the time it gets here
        logging.getLogger(f"rocketpy.{command}").info("stopped")
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # stopped: a late Ctrl-C must not turn into a traceback
    if failure is not None:
        from .store.config_files import ConfigFileUnreadable

        if isinstance(failure, ConfigFileUnreadable):
            what = "cannot start"  # the file is the cause, not the address
        logs.stop()  # the log lines queued before the failure go out first: this line is the last
        logs.say(f"{command_label(command)}: {what}: {failure}", sys.stderr)
        return 1
    return 0


def first_leaf(exc: BaseException) -> BaseException:
    """The first exception inside ``exc``'s groups (nurseries nest them): the one to name on one line."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


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
    return run(parse(build_parser(), argv))


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """parse_args, except that an unknown option is reported with the usage of the subcommand it was
    given to (argparse would show the top-level usage)."""
    _mark_leaves(parser)
    args, extras = parser.parse_known_args(argv)
    if extras:
        getattr(args, "_parser", parser).error("unrecognized arguments: " + " ".join(extras))
    return args


def _mark_leaves(parser: argparse.ArgumentParser) -> None:
    """Each subcommand's parser records itself in the namespace it fills (the innermost one wins)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(_parser=sub)
                _mark_leaves(sub)


def run(args: argparse.Namespace) -> int:
    """Run a parsed command: a closed pipe, Ctrl-C are quiet exits with the shell's status, not tracebacks."""
    token = _launcher.set(getattr(args, "_launcher", None))
    try:
        return int(args.func(args) or 0)
    except BaseException as exc:
        if only(exc, BrokenPipeError):
            _silence_stdout()
            return 141  # as a shell reports a command ended by SIGPIPE
        if only(exc, KeyboardInterrupt):
            return 130  # Ctrl-C: as the shell reports SIGINT, without a traceback
        raise
    finally:
        _launcher.reset(token)
        logs.stop()  # a server command's log files: flushed and closed as it returns


if __name__ == "__main__":
    sys.exit(main())
