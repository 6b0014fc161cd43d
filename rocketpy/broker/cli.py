"""``rocketpy broker`` (a broker from a Java broker.conf) and ``rocketpy serve``
(NameServer + broker in one process, store under ./store, loopback by default)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from .controller import BrokerController

log = logging.getLogger("rocketpy.broker")


def add_parsers(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("broker", help="run a broker compatible with RocketMQ 4.9.8 (reads broker.conf)")
    p.add_argument("-c", "--config", help="broker.conf (Java property keys)")
    p.add_argument("-n", "--namesrv-addr", help="NameServer list, host:port;host:port (overrides namesrvAddr)")
    p.add_argument("--host", help="address to bind (default: listenHost, else 0.0.0.0)")
    p.add_argument("-p", "--port", type=int, help="listen port (overrides listenPort)")
    p.add_argument("--store", help="store root (overrides storePathRootDir)")
    p.add_argument("--no-vip", action="store_true", help="do not listen on the VIP port (listenPort - 2)")
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=run_broker)

    s = sub.add_parser("serve", help="NameServer and broker in one process, store under ./store")
    s.add_argument("--host", default="127.0.0.1", help="address to bind both servers (default 127.0.0.1)")
    s.add_argument("--namesrv-port", type=int, default=9876)
    s.add_argument("--broker-port", type=int, default=10911)
    s.add_argument("--store", default="./store", help="store root directory (default ./store)")
    s.add_argument("-c", "--config", help="extra broker.conf settings")
    s.add_argument("--no-vip", action="store_true", help="do not listen on the VIP port (broker port - 2)")
    s.add_argument("-v", "--verbose", action="store_true")
    s.set_defaults(func=run_serve)


def _logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _given(path: str | None) -> dict[str, str]:
    from ..namesrv import properties

    if not path:
        return {}
    with open(path, encoding="utf-8") as f:
        return properties.loads(f.read())


async def _until_signal(cancel_scope: trio.CancelScope, broker: BrokerController | None = None) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("signal %s: shutting down", signal.Signals(signum).name)
            if broker is not None:
                await broker.stop()  # unregister first, on the broker's live connections
            cancel_scope.cancel()
            return


def run_broker(args: argparse.Namespace) -> int:
    from .config import BrokerConfig
    from .controller import BrokerController

    _logging(args.verbose)
    given = _given(args.config)
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
    cfg = BrokerConfig.from_properties(given)
    broker = BrokerController(cfg)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_until_signal, nursery.cancel_scope, broker)
            await nursery.start(broker.run, None)
            print(f"broker {cfg.broker_name} serving on {cfg.listen_host}:{cfg.listen_port}", flush=True)

    trio.run(main)
    return 0


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
    given = _given(getattr(args, "config", None))
    ip = args.host if args.host not in ("0.0.0.0", "::", "") else None
    ns_host = "127.0.0.1" if ip is None else ip
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
    return ns, BrokerConfig.from_properties(given)


def run_serve(args: argparse.Namespace) -> int:
    from ..namesrv.server import NameServer
    from .controller import BrokerController

    _logging(args.verbose)
    ns_cfg, broker_cfg = serve_configs(args)
    os.makedirs(broker_cfg.store.store_path_root_dir, exist_ok=True)

    async def main() -> None:
        async with trio.open_nursery() as outer:
            namesrv = NameServer(ns_cfg)
            await outer.start(namesrv.run)
            broker = BrokerController(broker_cfg)
            # the broker stops first, so it can still unregister from the NameServer
            async with trio.open_nursery() as inner:
                inner.start_soon(_until_signal, inner.cancel_scope, broker)
                await inner.start(broker.run, None)
                print(
                    f"rocketpy serve: NameServer {ns_cfg.listen_host}:{ns_cfg.listen_port}, "
                    f"broker {broker_cfg.broker_name} {broker.broker_addr}, "
                    f"store {broker_cfg.store.store_path_root_dir}",
                    flush=True,
                )
            outer.cancel_scope.cancel()

    trio.run(main)
    return 0
