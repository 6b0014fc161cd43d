"""A NameServer wire-compatible with Apache RocketMQ 4.9.8's (routes, KV config, broker liveness)."""

from .config import NamesrvConfig
from .kv_config import KVConfigManager
from .route_info import RouteInfoManager
from .server import NameServer, run_namesrv

__all__ = ["KVConfigManager", "NameServer", "NamesrvConfig", "RouteInfoManager", "main", "run_namesrv"]


def main(argv: list[str] | None = None) -> int:
    """``rocketpy namesrv`` arguments -> exit status."""
    from .cli import main as cli_main

    return cli_main(argv)
