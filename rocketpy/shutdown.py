"""``mqshutdown broker|namesrv``: Java's bin/mqshutdown for rocketpy's servers.

Java's script finds the JVM whose command line names BrokerStartup (NamesrvStartup) and sends it SIGTERM,
saying so in its words. Here the processes are found through /proc by their command lines: ``mqbroker``,
``rocketpy broker`` (also as ``python -m rocketpy``), ``mqnamesrv``, ``rocketpy namesrv``; only this user's
(Java's ``ps ax`` lists everyone's, whose kill then fails), never this process. ``rocketpy serve`` holds both
servers in one process and is left alone: stopping it is not stopping one of them.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator, Sequence

#: the role -> the launcher name Java's messages give it
LAUNCHERS = {"broker": "mqbroker", "namesrv": "mqnamesrv"}
_MODULES = {"rocketpy": None, "rocketpy.cli": None, "rocketpy.__main__": None, "rocketpy.namesrv.cli": "namesrv"}
#: interpreter options that take the next argument as their value (python -X dev, -W error ...)
_VALUED = frozenset({"-X", "-W", "-Q"})


def server_role(argv: Sequence[str]) -> str | None:
    """"broker" or "namesrv" when ``argv`` (a /proc/PID/cmdline) runs that rocketpy server, else None."""
    args = list(argv)
    if args and os.path.basename(args[0]).startswith("python"):
        args = args[1:]
        while args and args[0].startswith("-") and args[0] != "-m":
            if args[0] == "-c" or args[0] == "-":
                return None  # code given inline: nothing says what it runs
            args = args[2:] if args[0] in _VALUED else args[1:]
        if args and args[0] == "-m":
            if len(args) < 2 or args[1] not in _MODULES:
                return None
            fixed = _MODULES[args[1]]
            return fixed if fixed is not None else _subcommand(args[2:])
    if not args:
        return None
    name = os.path.basename(args[0])
    for role, launcher in LAUNCHERS.items():
        if name == launcher:
            return role
    return _subcommand(args[1:]) if name == "rocketpy" else None


def _subcommand(args: Sequence[str]) -> str | None:
    first = next((a for a in args if not a.startswith("-")), None)
    return first if first in LAUNCHERS else None


def find_servers(role: str, proc: str = "/proc") -> list[int]:
    """The pids of this user's rocketpy ``role`` servers (not this process), in pid order."""
    uid, me = os.getuid(), os.getpid()
    found = []
    for pid, argv in _processes(proc):
        if pid == me:
            continue
        try:
            if os.stat(os.path.join(proc, str(pid))).st_uid != uid:
                continue
        except OSError:
            continue  # gone meanwhile
        if server_role(argv) == role:
            found.append(pid)
    return sorted(found)


def _processes(proc: str) -> Iterator[tuple[int, list[str]]]:
    try:
        names = os.listdir(proc)
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(os.path.join(proc, name, "cmdline"), "rb") as f:
                raw = f.read()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if raw:
            yield int(name), [a.decode(errors="replace") for a in raw.rstrip(b"\0").split(b"\0")]


def main(argv: Sequence[str] | None = None, *, proc: str = "/proc") -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    role = args[0] if args else ""
    if role not in LAUNCHERS:
        print("Useage: mqshutdown broker | namesrv")  # Java's text, typo and all (it exits 0; a mistake is 1 here)
        return 1
    launcher = LAUNCHERS[role]
    pids = find_servers(role, proc)
    if not pids:
        print(f"No {launcher} running.")
        return 255  # Java's `exit -1`
    status = 0
    for pid in pids:
        print(f"The {launcher}({pid}) is running...")
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError as exc:  # it ended meanwhile, or is not ours: Java's kill says so too, then claims OK
            print(f"mqshutdown: cannot send SIGTERM to {launcher}({pid}): {exc.strerror or exc}", file=sys.stderr)
            status = 1
            continue
        print(f"Send shutdown request to {launcher}({pid}) OK")
    return status


if __name__ == "__main__":
    sys.exit(main())
