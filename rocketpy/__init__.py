"""rocketpy: the Apache RocketMQ 4.x remoting protocol in Python."""

__version__ = "0.1.0"
