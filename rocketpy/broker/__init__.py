"""The RocketMQ 4.9.8-compatible broker on trio: BrokerController and its processors.

The two names below load on first use, so pure modules of this package (``acl``,
``sql92``) import without trio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import BrokerConfig
    from .controller import BrokerController

__all__ = ["BrokerConfig", "BrokerController"]


def __getattr__(name: str) -> Any:
    if name == "BrokerConfig":
        from .config import BrokerConfig

        return BrokerConfig
    if name == "BrokerController":
        from .controller import BrokerController

        return BrokerController
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
