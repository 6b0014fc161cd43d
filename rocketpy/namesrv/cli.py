"""``rocketpy namesrv``: run a NameServer (options like Java's mqnamesrv, plus --listen)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence

import trio

from .. import heap, logs
from ..cli import first_leaf
from ..javacompat.properties import ConfigError
from ..logs import add_log_options
from .config import NamesrvConfig
from .kv_config import KVConfigError
from .server import NameServer

log = logging.getLogger("rocketpy.namesrv")


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    if not port.isdigit() or not 0 <= int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def configure_parser(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("-c", "--configFile", dest="config_file", help="NameServer config properties file (Java keys)")
    p.add_argument(
        "--listen",
        type=_listen,
        metavar="HOST:PORT",
        help="address to listen on (default 127.0.0.1:9876, or listenPort from the config file)",
    )
    p.add_argument("-p", "--printConfigItem", dest="print_config", action="store_true", help="print all config items")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    add_log_options(p)
    p.set_defaults(func=run_cli)
    return p


def add_parsers(sub: argparse._SubParsersAction) -> None:
    configure_parser(sub.add_parser("namesrv", help="run a NameServer compatible with RocketMQ 4.9.8"))


def load_config(args: argparse.Namespace) -> NamesrvConfig:
    config = NamesrvConfig.from_file(args.config_file, strict=True) if args.config_file else NamesrvConfig()
    if args.listen:
        config.listen_host, config.listen_port = args.listen
    elif getattr(args, "all_interfaces", False) and "listenHost" not in _file_keys(args.config_file):
        config.listen_host = "0.0.0.0"  # mqnamesrv: as Java's, on every interface
    return config


def _file_keys(path: str | None) -> dict[str, str]:
    from ..javacompat.properties import load_file

    return load_file(path) if path else {}


async def serve_until_signal(server: NameServer) -> None:
    """Run ``server`` until SIGINT or SIGTERM, then stop everything it started."""
    # the receiver stays open until the server has stopped: a second Ctrl-C meanwhile waits in it
    # instead of interrupting the shutdown (trio hands it back once everything has stopped)
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            heap.own_process()
            logs.say(f"The Name Server boot success. serializeType=JSON, listening on {server.address}")
            log.info("The Name Server boot success. serializeType=JSON")
            async for signum in signals:
                log.info("signal %s: shutting down", signal.Signals(signum).name)
                break
            nursery.cancel_scope.cancel()


def run_cli(args: argparse.Namespace) -> int:
    logs.setup("namesrv", log_format=args.log_format, log_dir=args.log_dir, files=not args.no_log_files,
               level=getattr(logging, str(args.log_level).upper(), logging.INFO))
    try:
        config = load_config(args)
    except OSError as exc:
        logs.say(f"cannot read config file: {exc}", sys.stderr)
        return 2
    except ConfigError as exc:
        logs.say(f"bad config file {args.config_file}: {exc}", sys.stderr)
        return 2
    if args.print_config:
        for key, value in config.to_properties().items():
            print(f"{key}={value}")
        return 0
    server = NameServer(config)
    try:
        server.kv.load()
    except KVConfigError as exc:
        logs.say(str(exc), sys.stderr)
        return 3
    status = 0
    try:
        trio.run(serve_until_signal, server)
    except* OSError as group:
        first = first_leaf(group)  # nurseries nest: name the OSError itself
        logs.say(f"cannot listen on {config.listen_host}:{config.listen_port}: {first}", sys.stderr)
        status = 1
    except* KeyboardInterrupt:
        log.info("stopped")  # a second Ctrl-C while stopping, handed back by trio's signal receiver
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # stopped: a late Ctrl-C must not turn into a traceback
    return status


def mqnamesrv(argv: Sequence[str] | None = None) -> int:
    """The ``mqnamesrv`` command: Java's launcher flags (-c, -p, -n), on every interface, port 9876."""
    from ..cli import parse, run

    return run(parse(mqnamesrv_parser(), argv))


def mqnamesrv_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mqnamesrv", description="run a NameServer as Java's mqnamesrv does")
    p.add_argument("-c", "--configFile", dest="config_file", help="Name server config properties file")
    p.add_argument("-p", "--printConfigItem", dest="print_config", action="store_true", help="Print all config items")
    p.add_argument("-n", "--namesrvAddr", dest="namesrv_addr",
                   help="Name server address list (taken, unused: as Java's mqnamesrv)")
    p.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    add_log_options(p)
    p.set_defaults(func=run_cli, listen=None, all_interfaces=True)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = configure_parser(argparse.ArgumentParser(prog="rocketpy namesrv", description=__doc__))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
