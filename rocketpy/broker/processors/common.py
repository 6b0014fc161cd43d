"""Bits shared by the processors."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ...codecs import RemotingCommand
from ...remoting.dispatch import RequestContext, log_handler_error, system_error

log = logging.getLogger("rocketpy.broker")

#: the handler's context: a RequestContext over its server's state (BrokerContext for the broker)
C = TypeVar("C", bound=RequestContext[Any])
AsyncHandler = Callable[[C, RemotingCommand], Awaitable[RemotingCommand | None]]

FAQ_URL = "http://rocketmq.apache.org/docs/faq/"
#: FAQUrl.suggestTodo(...): every FAQ constant points at the same page in 4.9.8
SUGGEST_TODO = f"\nSee {FAQ_URL} for further details."


def host_of(ctx: RequestContext[Any]) -> str:
    """The peer's ``ip:port`` (the born host of what it sends)."""
    addr = str(ctx.remote_addr)
    if addr.startswith("stream-"):
        return "127.0.0.1:0"
    return addr


def deferred(handler: AsyncHandler[C]) -> AsyncHandler[C]:
    """Answer later, from the connection's nursery.

    Connections handle their requests inline (one batch at a time, answers written
    together); a handler that waits on a peer -- possibly the very client whose
    connection is blocked waiting for this answer -- or on the disk must not hold that
    loop. The wrapped handler runs in its own task and sends its answer when done.
    """

    @functools.wraps(handler)
    async def start(ctx: C, request: RemotingCommand) -> RemotingCommand | None:
        if ctx.nursery is None:  # no connection nursery (direct calls in tests): answer inline
            return await handler(ctx, request)
        ctx.nursery.start_soon(_finish, handler, ctx, request)
        return None

    return start


async def _finish(handler: AsyncHandler[C], ctx: C, request: RemotingCommand) -> None:
    try:
        response = await handler(ctx, request)
    except Exception as exc:
        log_handler_error(ctx, request, exc)
        response = system_error(request, exc)
    if response is None:
        return
    try:
        await ctx.reply(request, response)
    except Exception as exc:
        log.warning("answer to %s lost: %s", ctx.remote_addr, exc)
