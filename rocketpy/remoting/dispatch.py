"""Request dispatch: one table per server, request code -> small handler.

Answers follow Java's NettyRemotingAbstract.processRequestCommand: an unknown code
gets REQUEST_CODE_NOT_SUPPORTED (even for a oneway request, as Java does), a handler
that raises gets SYSTEM_ERROR with a one-line description, and a oneway request's
answer is dropped.

Before any handler runs, the request's extFields are checked against the Java types of
its code's header class (CommandHeader.check_wire_values): a number beyond its type or a
missing boxed @CFNotNull field is refused with SYSTEM_ERROR and Java's exception text.
A refusal of bad input (a ValueError, CodecError included, or a failed call onwards) is
one log line with the code, the peer and the cause; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import trio

from ..codecs import RemotingCommand, RequestCode, ResponseCode, SerializeType
from ..codecs.command import RESPONSE_FLAG
from ..codecs.headers.registry import REQUEST_HEADERS
from .errors import RemotingError

if TYPE_CHECKING:
    from .connection import Connection

log = logging.getLogger("rocketpy.remoting")

#: what a handler raises to refuse bad input (Java's RemotingCommandException, NumberFormatException,
#: IllegalArgumentException) or when a peer it calls on fails: answered SYSTEM_ERROR with one log line
REFUSALS: tuple[type[Exception], ...] = (ValueError, RemotingError)

AsyncHandler = Callable[["RequestContext[Any]", RemotingCommand], Awaitable[RemotingCommand | None]]
SyncHandler = Callable[["RequestContext[Any]", RemotingCommand], RemotingCommand | None]
Handler = AsyncHandler | SyncHandler
RequestHook = Callable[["RequestContext[Any]", RemotingCommand], None]
H = TypeVar("H", bound=Callable[..., Any])
#: the server state a context carries (BrokerController, NameServer, a client instance)
S = TypeVar("S")


@dataclasses.dataclass(slots=True, eq=False)
class RequestContext(Generic[S]):
    """What a handler may touch besides the request: its connection and the server state."""

    connection: Connection
    remote_addr: str
    state: S = None  # type: ignore[assignment]  # every server passes its own; None only in bare tests
    #: the connection's nursery, for work that answers later (see :meth:`reply`)
    nursery: trio.Nursery | None = None

    async def reply(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """Send a response produced outside the handler's return (deferred answers)."""
        if request.is_oneway:
            return
        fix_response(request, response)
        await self.connection.send_command(response)

    async def reply_all(self, answers: list[tuple[RemotingCommand, RemotingCommand]]) -> None:
        """:meth:`reply` for several (request, response) pairs of this connection: one write."""
        responses = []
        for request, response in answers:
            if not request.is_oneway:
                fix_response(request, response)
                responses.append(response)
        if responses:
            await self.connection.send_commands(responses)


def fix_response(request: RemotingCommand, response: RemotingCommand) -> None:
    """What Java sets on every answer: the request's opaque and serialize type, the response flag."""
    response.opaque = request.opaque
    response.flag |= RESPONSE_FLAG
    response.serialize_type = request.serialize_type
    response.request_code = request.code


def not_supported(request: RemotingCommand) -> RemotingCommand:
    # Java builds this one with createResponseCommand: default (JSON) serialize type
    return RemotingCommand(
        code=ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        opaque=request.opaque,
        flag=RESPONSE_FLAG,
        remark=f" request type {request.code} not supported",
        request_code=request.code,
    )


def describe_exception(exc: BaseException) -> str:
    """One line like Java's RemotingHelper.exceptionSimpleDesc: the error and where it was raised.

    An exception standing for a Java one may carry that line itself (``remote_desc``)."""
    desc = getattr(exc, "remote_desc", None)
    if isinstance(desc, str):
        return desc
    text = f"{type(exc).__module__}.{type(exc).__qualname__}"
    if str(exc):
        text += f": {exc}"
    tb = exc.__traceback__
    if tb is not None:
        while tb.tb_next is not None:  # the innermost frame, without reading source files (linecache)
            tb = tb.tb_next
        code = tb.tb_frame.f_code
        text += f", {code.co_name}({code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno})"
    return text


def system_error(request: RemotingCommand, exc: BaseException) -> RemotingCommand:
    return RemotingCommand(
        code=ResponseCode.SYSTEM_ERROR,
        opaque=request.opaque,
        flag=RESPONSE_FLAG,
        remark=describe_exception(exc),
        serialize_type=SerializeType.JSON,
        request_code=request.code,
    )


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: how much of a refusal's cause a log line carries (a hostile value may be megabytes)
LOG_CAUSE_CHARS = 400


def one_line(text: str, limit: int = LOG_CAUSE_CHARS) -> str:
    """``text`` fit for one log line: control characters escaped (a value with a newline must not
    forge a second line), cut at ``limit`` characters."""
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text)} chars)"
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def log_refusal(logger: logging.Logger, remote_addr: str, request: RemotingCommand, cause: str) -> None:
    """The one line of a request refused (bad input, a limit passed) and answered SYSTEM_ERROR for ``cause``."""
    logger.warning("process request refused: code %d from %s answered SYSTEM_ERROR: %s", request.code,
                   remote_addr, one_line(cause))


def body_over_limit(request: RemotingCommand, key: str, limit: int) -> str | None:
    """Why ``request``'s body is refused under the limit ``key`` of ``limit`` bytes (0 or less lifts it), or
    None when it is within it."""
    if request.body and 0 < limit < len(request.body):
        return f"{RequestCode(request.code).name} body of {len(request.body)} bytes is over {key}={limit}"
    return None


def log_handler_error(ctx: RequestContext, request: RemotingCommand, exc: Exception) -> None:
    """One line for a refusal of bad input; the traceback for anything else (a bug to fix)."""
    if isinstance(exc, REFUSALS):
        log_refusal(log, ctx.remote_addr, request, describe_exception(exc))
    else:
        log.exception("process request exception: code %d from %s", request.code, ctx.remote_addr)


class FastPath(Protocol):
    """Requests a server answers beside its handlers, from their undecoded frames (the NameServer's
    repeated route lookups, the broker's plain sends). The connection asks ``takes(frame)`` of each
    request frame (cheap: a look at its first bytes); a frame taken is given to ``answer(ctx, frame)``,
    which returns the encoded answer (b"" for none) or None: the frame is then decoded and dispatched as
    usual, so the fast path may pass on anything it does not handle exactly as the handlers would.
    ``settle()`` finishes what answering deferred: the connection calls it before any handler runs and
    once per receive, before writing the answers. While before-hooks (ACL) are set, frames are not offered.
    """

    def takes(self, frame: bytes) -> bool: ...

    def answer(self, ctx: RequestContext, frame: bytes) -> bytes | None: ...

    def settle(self) -> None: ...


class Dispatcher:
    """Request code -> handler ``(ctx, request) -> response | None``, sync or async."""

    def __init__(self, handlers: Mapping[int, Handler] | None = None, *, default: Handler | None = None) -> None:
        self._handlers: dict[int, tuple[Handler, bool]] = {}
        self._default: tuple[Handler, bool] | None = None
        #: checks run before every request, known code or not (Java's server RPC hooks);
        #: one that raises refuses the request with SYSTEM_ERROR
        self.before: list[RequestHook] = []
        #: offered the request frames it takes first, while no before-hook is set (see FastPath)
        self.fast_path: FastPath | None = None
        for code, handler in (handlers or {}).items():
            self.register(code, handler)
        if default is not None:
            self.set_default(default)

    @staticmethod
    def _entry(handler: Handler) -> tuple[Handler, bool]:
        return handler, inspect.iscoroutinefunction(handler)

    def register(self, code: int, handler: Handler) -> None:
        self._handlers[int(code)] = self._entry(handler)

    def add_before_hook(self, hook: RequestHook) -> None:
        """Run ``hook(ctx, request)`` before each request (RPCHook.doBeforeRequest)."""
        self.before.append(hook)

    def set_default(self, handler: Handler) -> None:
        """The handler of codes with no entry (Java's registerDefaultProcessor)."""
        self._default = self._entry(handler)

    def route(self, *codes: int) -> Callable[[H], H]:
        """Decorator form of :meth:`register`."""

        def deco(handler: H) -> H:
            for code in codes:
                self.register(code, handler)
            return handler

        return deco

    def __contains__(self, code: int) -> bool:
        return int(code) in self._handlers

    @property
    def codes(self) -> list[int]:
        return sorted(self._handlers)

    async def dispatch(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        if self.before:
            try:
                for hook in self.before:
                    hook(ctx, request)
            except Exception as exc:
                cause = one_line(describe_exception(exc))
                log.error("request code %d from %s refused: %s", request.code, ctx.remote_addr, cause)
                return None if request.is_oneway else system_error(request, exc)
        entry = self._handlers.get(request.code) or self._default
        if entry is None:
            log.error("%s request type %d not supported", ctx.remote_addr, request.code)
            return not_supported(request)
        handler, is_async = entry
        try:
            header_class = REQUEST_HEADERS.get(request.code)
            if header_class is not None:
                header_class.check_wire_values(request.ext_fields)
            if is_async:
                response = await handler(ctx, request)  # type: ignore[misc]
            else:
                response = handler(ctx, request)
        except trio.Cancelled:
            raise
        except Exception as exc:
            log_handler_error(ctx, request, exc)
            if request.is_oneway:
                return None
            return system_error(request, exc)
        if response is None or request.is_oneway:
            return None
        fix_response(request, response)
        return response


def java_decode_header(request: RemotingCommand, cls: type[Any]) -> Any:
    """A typed header decoded as Java 4.9.8's decodeCommandCustomHeader does on a server
    (lenient: see CommandHeader.from_ext_fields); a checkFields CodecError is answered by the
    dispatcher with SYSTEM_ERROR, as Java answers its RemotingCommandException."""
    return cls.from_ext_fields(request.ext_fields, lenient=True)
