"""Kept for the client's imports: java.util.Properties text is :mod:`rocketpy.javacompat.properties`."""

from ..javacompat.properties import ConfigError, PropertiesError, dumps, load_file, loads

__all__ = ["ConfigError", "PropertiesError", "dumps", "load_file", "loads"]
