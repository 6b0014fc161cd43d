"""Moved to :mod:`rocketpy.testing`; this name stays only until the branches written against it are merged."""

from ..testing import *  # noqa: F403
from ..testing import BrokerTestClient, broker_client, broker_test_config, free_broker_port, free_port, running_broker

__all__ = ["BrokerTestClient", "broker_client", "broker_test_config", "free_broker_port", "free_port", "running_broker"]
