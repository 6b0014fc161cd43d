"""The ``mqadmin`` command: Java's ``mqadmin SUBCOMMAND ...`` with its help texts, running ``rocketpy admin``'s
subcommands (``--json`` and the TLS/ACL options included).

As MQAdminStartup: no argument lists the subcommands, ``help NAME`` prints a subcommand's usage, a bad option
prints that usage and exits 1. Unlike it, an unknown subcommand or a failure exits 1 (Java exits 0)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from .cli import add_commands
from .core import COMMANDS
from .usage import command_list, usage


class JavaUsageParser(argparse.ArgumentParser):
    """A subcommand's parser that answers -h and mistakes with mqadmin's usage text."""

    def _name(self) -> str:
        return self.prog.split()[-1]

    def print_help(self, file: object = None) -> None:
        sys.stdout.write(usage(self._name(), self))

    def error(self, message: str) -> NoReturn:
        sys.stdout.write(usage(self._name(), self))
        sys.stdout.flush()
        sys.stderr.write(f"mqadmin {self._name()}: {message}\n")
        raise SystemExit(1)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mqadmin", add_help=False)
    parser.set_defaults(_launcher="mqadmin")  # failures name "mqadmin updateTopic", not "rocketpy admin ..."
    cmds = parser.add_subparsers(dest="admin_command", required=True, parser_class=JavaUsageParser)
    add_commands(cmds)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from ..cli import parse, run

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv == ["help"]:
        sys.stdout.write(command_list())
        return 0
    name = argv[1] if argv[0] == "help" else argv[0]
    if name not in COMMANDS:
        sys.stdout.write(f"The sub command {name} not exist.\n")
        return 1
    parser = build_parser()
    if argv[0] == "help":
        sub = parser._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr,index]
        sys.stdout.write(usage(name, sub))
        return 0
    return run(parse(parser, argv))


if __name__ == "__main__":
    sys.exit(main())
