"""Errors of the remoting transport (codec errors stay rocketpy.codecs.CodecError)."""

from __future__ import annotations


class RemotingError(Exception):
    """Base of every transport failure."""


class RemotingConnectError(RemotingError):
    """The peer could not be reached."""


class RemotingSendRequestError(RemotingError):
    """Writing a request failed; the connection is closed."""


class RemotingTimeoutError(RemotingError):
    """No response arrived in time."""


class ConnectionClosedError(RemotingError):
    """The connection closed while a response was awaited."""
