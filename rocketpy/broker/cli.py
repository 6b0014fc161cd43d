"""``rocketpy broker`` (a broker from a Java broker.conf) and ``rocketpy serve``
(NameServer + broker in one process, store under ./store, loopback by default)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import trio

from .. import heap, logs
from ..cli import command_label, run_server
from ..logs import add_log_options

if TYPE_CHECKING:
    from .controller import BrokerController

log = logging.getLogger("rocketpy.broker")


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("broker", help="run a broker compatible with RocketMQ 4.9.8 (reads broker.conf)")
    p.add_argument("-c", "--config", help="broker.conf (Java property keys)")
    p.add_argument("-n", "--namesrv", "--namesrv-addr", dest="namesrv_addr",
                   help="NameServer list, host:port;host:port (overrides namesrvAddr)")
    p.add_argument("--host", help="address to bind (default: listenHost, else 0.0.0.0)")
    p.add_argument("-p", "--port", type=int, help="listen port (overrides listenPort)")
    p.add_argument("--store", help="store root (overrides storePathRootDir)")
    p.add_argument("--no-vip", action="store_true", help="do not listen on the VIP port (listenPort - 2)")
    p.add_argument("-v", "--verbose", action="store_true")
    add_log_options(p)
    p.set_defaults(func=run_broker)

    s = sub.add_parser("serve", help="NameServer and broker in one process, store under ./store")
    s.add_argument("--host", default="127.0.0.1", help="address to bind both servers (default 127.0.0.1)")
    s.add_argument("--namesrv-port", type=int, default=9876)
    s.add_argument("--broker-port", type=int, default=10911)
    s.add_argument("--store", default="./store", help="store root directory (default ./store)")
    s.add_argument("-c", "--config", help="extra broker.conf settings")
    s.add_argument("--no-vip", action="store_true", help="do not listen on the VIP port (broker port - 2)")
    s.add_argument("--console", action="store_true", help="also serve the web console (rocketpy console)")
    try:
        from ..console.cli import add_console_options
    except ModuleNotFoundError:  # the console extra is not installed
        pass
    else:
        add_console_options(s, prefix="console-")
    s.add_argument("-v", "--verbose", action="store_true")
    add_log_options(s)
    s.set_defaults(func=run_serve)


def _logging(args: argparse.Namespace, role: str) -> None:
    """Java's log files under ~/logs/rocketmqlogs (or --log-dir), and stderr."""
    logs.setup(role, log_format=getattr(args, "log_format", "text"), log_dir=getattr(args, "log_dir", None),
               files=not getattr(args, "no_log_files", False),
               level=logging.DEBUG if getattr(args, "verbose", False) else logging.INFO)


def _given(path: str | None) -> dict[str, str]:
    from ..javacompat import properties

    if not path:
        return {}
    return properties.load_file(path)


def _check_store_dirs(cfg: Any) -> None:
    """ConfigError unless the store directories can be created and written (before anything starts)."""
    import tempfile

    from ..javacompat.properties import ConfigError

    store = cfg.store
    for key, path in (("storePathRootDir", store.store_path_root_dir), ("storePathCommitLog", store.commit_log_dir)):
        try:
            os.makedirs(path, exist_ok=True)
            with tempfile.TemporaryFile(dir=path):
                pass
        except OSError as exc:
            raise ConfigError(f"{key} {path} is not a writable directory: {exc.strerror or exc}") from None


def _fail(command: str, message: str) -> int:
    logs.say(f"{command_label(command)}: {message}", sys.stderr)
    return 2


def _config_errors() -> tuple[type[BaseException], ...]:
    from ..javacompat.properties import ConfigError

    return (ConfigError, OSError)


async def _until_signal(
    signals: AsyncIterator[int], cancel_scope: trio.CancelScope, broker: BrokerController | None = None
) -> None:
    """Stop on the first signal. The receiver belongs to the caller and stays open until everything has
    stopped: a second Ctrl-C meanwhile waits in it instead of interrupting the shutdown."""
    async for signum in signals:
        log.info("signal %s: shutting down", signal.Signals(signum).name)
        if broker is not None:
            await broker.stop()  # unregister first, on the broker's live connections
        cancel_scope.cancel()
        return


def run_broker(args: argparse.Namespace) -> int:
    from .config import BrokerConfig
    from .controller import BrokerController

    if not (getattr(args, "print_config", False) or getattr(args, "print_important", False)):
        _logging(args, "broker")
    try:
        given = _given(args.config)
    except _config_errors() as exc:
        return _fail("broker", f"bad config file {args.config}: {exc}")
    if args.namesrv_addr:
        given["namesrvAddr"] = args.namesrv_addr
    if args.port is not None:
        given["listenPort"] = str(args.port)
    if args.store:
        given["storePathRootDir"] = os.path.abspath(args.store)
        given.pop("storePathCommitLog", None)
    if args.host:
        given["listenHost"] = args.host
    if args.no_vip:
        given["vipChannelEnable"] = "false"
    advertise_listen_host(given)
    try:
        _warn_config("broker", given)
        cfg = BrokerConfig.from_properties(given, strict=True, log_unknown=False)
        if getattr(args, "print_config", False) or getattr(args, "print_important", False):
            return _print_config(cfg, important=not args.print_config)
        _check_store_dirs(cfg)
        broker = BrokerController(cfg, config_path=args.config)
    except _config_errors() as exc:
        return _fail("broker", f"bad config: {exc}")

    async def main() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_until_signal, signals, nursery.cancel_scope, broker)
                await nursery.start(broker.run, None)
                heap.own_process()
                logs.say(f"broker {cfg.broker_name} serving on {cfg.listen_host}:{cfg.listen_port}, "
                         f"registered as {broker.broker_addr}")

    return run_server(main, "broker", f"cannot run on {cfg.listen_host}:{cfg.listen_port}")


def _print_config(cfg: Any, important: bool) -> int:
    """mqbroker -p (every setting) / -m (the @ImportantField ones): key=value lines, then exit."""
    from .java_defaults import IMPORTANT_KEYS

    keys = IMPORTANT_KEYS if important else tuple(cfg.props)
    for key in keys:
        value = cfg.props.get(key)
        sys.stdout.write(f"{key}={'' if value is None else value}\n")
    return 0


def mqbroker(argv: Sequence[str] | None = None) -> int:
    """The ``mqbroker`` command: Java's launcher flags (-c broker.conf, -n, -p, -m); NAMESRV_ADDR and
    ROCKETMQ_HOME from the environment as Java reads them; every interface, listenPort 10911."""
    from ..cli import parse, run

    return run(parse(mqbroker_parser(), argv))


def mqbroker_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mqbroker", description="run a broker as Java's mqbroker does")
    p.add_argument("-c", "--configFile", dest="config", help="Broker config properties file")
    p.add_argument("-n", "--namesrvAddr", dest="namesrv_addr",
                   help="Name server address list, eg: '192.168.0.1:9876;192.168.0.2:9876'")
    p.add_argument("-p", "--printConfigItem", dest="print_config", action="store_true", help="Print all config items")
    p.add_argument("-m", "--printImportantConfig", dest="print_important", action="store_true",
                   help="Print important config items")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    add_log_options(p)
    p.set_defaults(func=run_broker, host=None, port=None, store=None, no_vip=False, _launcher="mqbroker")
    return p


def _warn_config(command: str, given: dict[str, str]) -> None:
    """A stderr line per warning (unknown keys too), all before the ConfigError for what the broker refuses
    (see config_check): printed here, not logged, so none comes after the fatal line."""
    from .config_check import check_given

    def warn(warning: str) -> None:
        logs.say(f"{command_label(command)}: warning: {warning}", sys.stderr)

    check_given(given, warn)


def advertise_listen_host(given: dict[str, str]) -> None:
    """A broker bound to one specific address registers that address, unless brokerIP1 says otherwise:
    the default (the host's default-route address) would not be reachable on it."""
    host = given.get("listenHost", "").strip()
    if host and host not in ("0.0.0.0", "::") and not given.get("brokerIP1", "").strip():
        given["brokerIP1"] = host
        given.setdefault("brokerIP2", host)


def _serve_allowed_addresses(host: str | None) -> str:
    """``rocketpy serve``'s NameServer allow-lists: loopback, and the addresses of ``--host`` when it names one
    (its broker registers from there)."""
    import ipaddress

    if host is None:
        return "loopback"
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(host, None)}
    except OSError:
        found = set()
    addresses = []
    for address in sorted(found):
        try:
            addresses.append(str(ipaddress.ip_address(address)))
        except ValueError:  # a scoped link-local address: not a list entry
            continue
    return ",".join(["loopback", *addresses])


def serve_configs(args: Any) -> tuple[Any, Any]:
    """The NameServer and broker settings of ``rocketpy serve``."""
    from ..namesrv.config import NamesrvConfig
    from .config import BrokerConfig

    store = os.path.abspath(args.store)
    ns = NamesrvConfig()
    ns.listen_host = args.host
    ns.listen_port = args.namesrv_port
    ns.kv_config_path = os.path.join(store, "namesrv", "kvConfig.json")
    ns.config_store_path = os.path.join(store, "namesrv", "namesrv.properties")
    given = _given(getattr(args, "config", None))  # ConfigError / OSError for run_serve to report
    # tls.* are JVM-wide system properties in Java: both servers of one process read them
    ns.extra.update({k: v for k, v in given.items() if k.startswith("tls.")})
    ip = args.host if args.host not in ("0.0.0.0", "::", "") else None
    ns_host = "127.0.0.1" if ip is None else ip
    # the broker of this process registers from ns_host: only it (and tools on this host) may change the routes
    ns.register_allowed_addresses = ns.admin_allowed_addresses = _serve_allowed_addresses(ip)
    given.setdefault("brokerName", "broker-a")
    given["listenHost"] = args.host
    given["listenPort"] = str(args.broker_port)
    given["namesrvAddr"] = f"{ns_host}:{args.namesrv_port}"
    given["storePathRootDir"] = store
    given.pop("storePathCommitLog", None)
    if ip is not None:
        given.setdefault("brokerIP1", ip)
        given.setdefault("brokerIP2", ip)
    if getattr(args, "no_vip", False):
        given["vipChannelEnable"] = "false"
    _warn_config("serve", given)
    return ns, BrokerConfig.from_properties(given, strict=True, log_unknown=False)


def run_serve(args: argparse.Namespace) -> int:
    from ..namesrv.server import NameServer
    from .controller import BrokerController

    _logging(args, "serve")
    try:
        ns_cfg, broker_cfg = serve_configs(args)
        _check_store_dirs(broker_cfg)
    except _config_errors() as exc:
        return _fail("serve", f"bad config: {exc}")
    console_settings = None
    if getattr(args, "console", False):
        try:
            from ..console.cli import settings_from
            from ..console.server import run_console
        except ModuleNotFoundError as exc:
            return _fail("serve", f"--console needs {exc.name}: pip install 'rocketpy[console]'")
        ns_addr = broker_cfg.props["namesrvAddr"]
        try:
            console_settings = settings_from(args, ns_addr, prefix="console_")
        except (OSError, ValueError) as exc:
            return _fail("serve", f"bad console option: {exc}")

    async def main() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as outer:
                namesrv = NameServer(ns_cfg)
                await outer.start(namesrv.run)
                broker = BrokerController(broker_cfg)
                # the broker stops first, so it can still unregister from the NameServer
                async with trio.open_nursery() as inner:
                    inner.start_soon(_until_signal, signals, inner.cancel_scope, broker)
                    await inner.start(broker.run, None)
                    heap.own_process()
                    logs.say(
                        f"rocketpy serve: NameServer {ns_cfg.listen_host}:{ns_cfg.listen_port}, "
                        f"broker {broker_cfg.broker_name} {broker.broker_addr}, "
                        f"store {broker_cfg.store.store_path_root_dir}"
                    )
                    if console_settings is not None:
                        url = await inner.start(run_console, console_settings, args.console_listen)
                        logs.say(f"rocketpy serve: console {url}")
                outer.cancel_scope.cancel()

    return run_server(main, "serve", "cannot run")
