"""Errors of the remoting transport (codec errors stay rocketpy.codecs.CodecError)."""

from __future__ import annotations

import copy
from typing import TypeVar

E = TypeVar("E", bound=BaseException)


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


def fresh_error(error: E) -> E:
    """A new exception with the type, args, attributes and cause of ``error`` and no traceback.

    To raise a stored exception in each of its waiters: raising the one object in each would gather all
    their frames in its ``__traceback__``, and whoever keeps it would keep them all.
    """
    try:
        fresh = copy.copy(error)  # the class called with args, then the attributes (OSError's too)
    except TypeError:  # a constructor that takes other arguments than args (MQBrokerError)
        cls = type(error)
        fresh = cls.__new__(cls, *error.args)
        fresh.args = error.args
        fresh.__dict__.update(error.__dict__)
    fresh.__cause__ = error.__cause__
    fresh.__context__ = error.__context__
    fresh.__suppress_context__ = error.__suppress_context__
    return fresh
