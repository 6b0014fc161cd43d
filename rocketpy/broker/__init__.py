"""The RocketMQ 4.9.8-compatible broker on trio: BrokerController and its processors."""

from .config import BrokerConfig
from .controller import BrokerController

__all__ = ["BrokerConfig", "BrokerController"]
