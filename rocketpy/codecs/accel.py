"""Kept for the Spark package's imports: the accelerated build's switch is :mod:`rocketpy.accel`."""

from ..accel import compiled

__all__ = ["compiled"]
