"""``rocketpy admin``'s parsers: every subcommand of :data:`core.COMMANDS` (registered by the topic modules
on import, see the package) with the options all of them share."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from ..client.admin import Admin
from ..client.cli import DefaultsHelp
from ..client.cli_tls import add_tls_options, tls_options
from ..client.config import default_namesrv
from ..client.errors import BadArgument
from .core import COMMANDS, Command, Out
from .credentials import acl_credentials, add_acl_options

__all__ = ["add_commands", "add_parser", "add_parsers"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    admin = sub.add_parser("admin", help="mqadmin's commands (updateTopic, topicList, clusterList, ...)")
    cmds = admin.add_subparsers(dest="admin_command", metavar="SUBCOMMAND")
    admin.set_defaults(func=_list_commands)
    add_commands(cmds)


def _list_commands(args: argparse.Namespace) -> int:
    """``rocketpy admin`` alone: the subcommands, as ``mqadmin`` alone lists them."""
    from .usage import command_list

    sys.stdout.write(command_list("rocketpy admin", "<command> -h"))
    return 0


def add_commands(cmds: argparse._SubParsersAction) -> None:
    """Every subcommand as a parser of ``cmds`` (``rocketpy admin``'s, or the ``mqadmin`` launcher's)."""
    for name, (help_text, options, fn) in COMMANDS.items():
        p = cmds.add_parser(name, help=help_text, description=help_text,
                            formatter_class=DefaultsHelp)
        p.add_argument("-n", "--namesrvAddr", "--namesrv", dest="namesrv", default=None,
                       help=f"name server address list, ';' separated (default: $ROCKETMQ_NAMESRV or "
                            f"{default_namesrv()})")
        p.add_argument("--json", action="store_true", help="print the result as JSON (for scripts)")
        add_tls_options(p)
        add_acl_options(p)
        options(p)
        p.set_defaults(func=_runner(name, fn))


def _runner(name: str, fn: Command) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from ..client.cli import run_quietly

        out = Out(args.json)
        try:
            credentials = acl_credentials(args)
        except BadArgument as exc:
            from ..client.cli import fail

            return fail(f"admin {name}", str(exc), 2)

        async def main() -> int:
            admin = Admin(args.namesrv or default_namesrv())
            for key, value in {**tls_options(args), **credentials}.items():
                setattr(admin.client.config, key, value)
            async with admin:
                return (await fn(admin, args, out)) or 0

        status = run_quietly(f"admin {name}", main)
        if status == 0 and args.json:
            sys.stdout.write(json.dumps(out.data, ensure_ascii=False, indent=1) + "\n")
        sys.stdout.flush()
        return status

    return run


add_parsers = add_parser  # the name rocketpy.cli looks for
