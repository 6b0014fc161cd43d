"""The remoting transport on trio: connections, dispatch, servers and clients."""

from .client import RemotingClient, open_remoting_client, split_address
from .connection import CommandReader, Connection, ResponseFuture
from .dispatch import Dispatcher, RequestContext, java_decode_header
from .errors import (
    ConnectionClosedError,
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingTimeoutError,
    fresh_error,
)
from .server import RemotingServer, serve_remoting

__all__ = [
    "CommandReader",
    "Connection",
    "ConnectionClosedError",
    "Dispatcher",
    "RemotingClient",
    "RemotingConnectError",
    "RemotingError",
    "RemotingSendRequestError",
    "RemotingServer",
    "RemotingTimeoutError",
    "RequestContext",
    "ResponseFuture",
    "fresh_error",
    "java_decode_header",
    "open_remoting_client",
    "serve_remoting",
    "split_address",
]
