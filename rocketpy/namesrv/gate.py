"""Who may send the NameServer's state-changing requests: an address allow-list per kind of request.

Java 4.9.8's NameServer has no ACL and answers every request from any address, so one forged
REGISTER_BROKER redirects a topic's routes and one DELETE_TOPIC_IN_NAMESRV removes them. Here
registrations (``registerAllowedAddresses``) and administration (``adminAllowedAddresses``) are served
only to the addresses listed (default ``loopback,private``; ``*`` is Java's behaviour); anything else is
answered NO_PERMISSION with one log line. Reads (routes, cluster info, KV and config reads) stay open:
clients on any network ask for routes.

The gate wraps the handlers of those codes (not a dispatcher before-hook, which would turn off the route
lookups' fast path).
"""

from __future__ import annotations

import functools
import inspect
import logging
from typing import TYPE_CHECKING, Any

from ..allowlist import AllowList, host_of
from ..codecs import RemotingCommand, RequestCode, ResponseCode
from ..remoting.dispatch import Handler, one_line

if TYPE_CHECKING:
    from .processor import NamesrvContext

log = logging.getLogger("rocketpy.namesrv")

#: the broker's own requests
REGISTER_CODES = frozenset({RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER, RequestCode.QUERY_DATA_VERSION})
#: what mqadmin and the consoles change
ADMIN_CODES = frozenset(
    {
        RequestCode.PUT_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.UPDATE_NAMESRV_CONFIG,
    }
)

_FALLBACK = AllowList.parse("loopback")


@functools.lru_cache(maxsize=16)
def allow_list(text: str) -> AllowList:
    """The parsed list; a list that does not parse (a file is checked at start, so only a NameServer built
    in code) allows loopback only: refusing too much is the safe mistake."""
    try:
        return AllowList.parse(text)
    except ValueError as exc:
        log.error("%s; allowing loopback only", exc)
        return _FALLBACK


def _refusal(ctx: NamesrvContext, request: RemotingCommand, key: str) -> RemotingCommand | None:
    host = host_of(ctx.remote_addr)
    if allow_list(getattr(ctx.state.config, _ATTRS[key])).allows(host):
        return None
    name = _name(request.code)
    log.warning("%s from %s refused: not in %s", name, one_line(ctx.remote_addr), key)
    return request.response(
        ResponseCode.NO_PERMISSION,
        remark=f"{name} is not allowed from {host}: add the address to the NameServer's {key}",
    )


_ATTRS = {"registerAllowedAddresses": "register_allowed_addresses", "adminAllowedAddresses": "admin_allowed_addresses"}


def _name(code: int) -> str:
    try:
        return RequestCode(code).name
    except ValueError:
        return str(code)


def gated(code: int, handler: Handler) -> Handler:
    """``handler`` behind the allow-list of its code, or ``handler`` itself for a code anyone may send."""
    if code in REGISTER_CODES:
        key = "registerAllowedAddresses"
    elif code in ADMIN_CODES:
        key = "adminAllowedAddresses"
    else:
        return handler
    if inspect.iscoroutinefunction(handler):

        async def gate_async(ctx: NamesrvContext, request: RemotingCommand) -> Any:
            refused = _refusal(ctx, request, key)
            return refused if refused is not None else await handler(ctx, request)

        return functools.wraps(handler)(gate_async)

    def gate(ctx: NamesrvContext, request: RemotingCommand) -> Any:
        refused = _refusal(ctx, request, key)
        return refused if refused is not None else handler(ctx, request)

    return functools.wraps(handler)(gate)
