"""The trio client from blocking scripts and from asyncio code.

(The producer needs none of this under asyncio: :class:`Producer` runs natively on an asyncio loop, and
:class:`AsyncioProducer` is that; the consumers below are still hosted on the trio portal.)

The client runs in one trio event loop on a background thread (a *portal*); each
producer or consumer lives in a host task there, so its nursery opens and closes in
one task as trio requires. Blocking wrappers wait on ``trio.from_thread``; asyncio
wrappers await ``concurrent.futures`` results through ``asyncio.wrap_future``, so an
asyncio loop never blocks. Listeners given to wrapped consumers are plain functions
(run in worker threads) or, for the asyncio consumer, coroutine functions run on the
caller's asyncio loop.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import trio

from ..codecs.message import Message, MessageExt
from .lite_pull import LitePullConsumer
from .loop_thread import LoopThread
from .producer import Producer
from .push_consumer import ConsumeContext, PushConsumer
from .results import SendResult

T = TypeVar("T")
C = TypeVar("C")


class TrioPortal:
    """A trio loop on a daemon thread that runs coroutines for other threads."""

    _shared: TrioPortal | None = None
    _shared_lock = threading.Lock()

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._token: trio.lowlevel.TrioToken | None = None
        self._nursery: trio.Nursery | None = None
        self._stop: trio.Event | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main,), name="rocketpy-trio", daemon=True)
        self._thread.start()
        self._ready.wait()

    @classmethod
    def shared(cls) -> TrioPortal:
        """The process-wide portal, started on first use and stopped at exit."""
        with cls._shared_lock:
            if cls._shared is None or not cls._shared._thread.is_alive():
                cls._shared = cls()
                atexit.register(cls._shared.close)
            return cls._shared

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    def run(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run ``await fn(*args, **kwargs)`` on the portal and wait for it (blocking)."""
        return trio.from_thread.run(functools.partial(fn, *args, **kwargs), trio_token=self._token)

    def submit(self, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        """Start ``fn`` on the portal; its outcome arrives in the returned future."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        async def runner() -> None:
            try:
                result = await fn(*args, **kwargs)
            except BaseException as exc:  # noqa: B036 - handed to the waiting thread
                future.set_exception(exc)
                if isinstance(exc, trio.Cancelled):
                    raise
            else:
                future.set_result(result)

        trio.from_thread.run_sync(self._start, runner, trio_token=self._token)
        return future

    def _start(self, fn: Callable[[], Awaitable[None]]) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(fn)

    def close(self) -> None:
        if self._thread.is_alive() and self._stop is not None:
            try:
                trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
            except trio.RunFinishedError:
                pass
            self._thread.join(5)


class Hosted(Generic[C]):
    """A trio client object kept open by a host task on the portal."""

    def __init__(self, obj: Any, portal: TrioPortal | None = None) -> None:
        self.obj = obj
        self.portal = portal or TrioPortal.shared()
        self._stop: trio.Event | None = None
        self._done: concurrent.futures.Future[None] | None = None

    def start(self) -> None:
        started: concurrent.futures.Future[None] = concurrent.futures.Future()

        async def host() -> None:
            self._stop = trio.Event()
            try:
                async with self.obj:
                    started.set_result(None)
                    await self._stop.wait()
            except BaseException as exc:
                if not started.done():
                    started.set_exception(exc)
                raise

        self._done = self.portal.submit(host)
        started.result()

    def shutdown(self) -> None:
        if self._stop is not None and self._done is not None:
            trio.from_thread.run_sync(self._stop.set, trio_token=self.portal._token)
            self._done.result()
            self._stop = None

    async def astart(self) -> None:
        await asyncio.to_thread(self.start)

    async def ashutdown(self) -> None:
        await asyncio.to_thread(self.shutdown)

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return self.portal.run(getattr(self.obj, method), *args, **kwargs)

    async def acall(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.wrap_future(self.portal.submit(getattr(self.obj, method), *args, **kwargs))


# -- blocking ------------------------------------------------------------------------------------------
class BlockingProducer:
    """``with BlockingProducer("group", namesrv=...) as p: p.send(msg)`` from plain threads.

    The Producer runs natively on a shared asyncio loop thread (:class:`~rocketpy.client.loop_thread.LoopThread`):
    a call is one hand-over to that thread, and the calls of many threads wake it once per burst. ``portal`` is
    accepted for compatibility and not used."""

    def __init__(self, group: str, *, portal: TrioPortal | None = None, loop: LoopThread | None = None,
                 **kwargs: Any) -> None:
        self.producer = Producer(group, **kwargs)
        self._loop = loop or LoopThread.shared()

    def start(self) -> None:
        self._loop.run(self.producer.start)

    def shutdown(self) -> None:
        self._loop.run(self.producer.shutdown)

    def __enter__(self) -> BlockingProducer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def send(self, msg: Message, **kwargs: Any) -> SendResult:
        return self._loop.run(functools.partial(self.producer.send, msg, **kwargs))

    def send_oneway(self, msg: Message, **kwargs: Any) -> None:
        self._loop.run(functools.partial(self.producer.send_oneway, msg, **kwargs))

    def send_batch(self, msgs: list[Message], **kwargs: Any) -> SendResult:
        return self._loop.run(functools.partial(self.producer.send_batch, msgs, **kwargs))

    def send_async(self, msg: Message, **kwargs: Any) -> concurrent.futures.Future[SendResult]:
        """A future of the result; ``future.add_done_callback`` gives Java-style callbacks."""
        return self._loop.submit(functools.partial(self.producer.send, msg, **kwargs))

    def request(self, msg: Message, timeout: float = 3.0, **kwargs: Any) -> MessageExt:
        return self._loop.run(functools.partial(self.producer.request, msg, timeout, **kwargs))


class BlockingPushConsumer:
    """A push consumer whose plain-function listener runs in worker threads."""

    def __init__(self, group: str, listener: Callable[[list[MessageExt], ConsumeContext], Any], *,
                 portal: TrioPortal | None = None, **kwargs: Any) -> None:
        self.consumer = PushConsumer(group, listener, listener_in_thread=True, **kwargs)
        self._host: Hosted[PushConsumer] = Hosted(self.consumer, portal)

    def subscribe(self, topic: str, expression: str = "*") -> None:
        self.consumer.subscribe(topic, expression)

    def start(self) -> None:
        self._host.start()

    def shutdown(self) -> None:
        self._host.shutdown()

    def __enter__(self) -> BlockingPushConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class BlockingLitePullConsumer:
    def __init__(self, group: str, *, portal: TrioPortal | None = None, **kwargs: Any) -> None:
        self.consumer = LitePullConsumer(group, **kwargs)
        self._host: Hosted[LitePullConsumer] = Hosted(self.consumer, portal)

    def subscribe(self, topic: str, expression: str = "*") -> None:
        self.consumer.subscribe(topic, expression)

    def start(self) -> None:
        self._host.start()

    def shutdown(self) -> None:
        self._host.shutdown()

    def __enter__(self) -> BlockingLitePullConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def poll(self, timeout: float | None = None) -> list[MessageExt]:
        return self._host.call("poll", timeout)

    def commit(self) -> None:
        self._host.call("commit")


# -- asyncio --------------------------------------------------------------------------------------------
class AsyncioProducer:
    """``async with AsyncioProducer("group", namesrv=...) as p: await p.send(msg)`` in asyncio code.

    Native: the Producer itself runs on the caller's asyncio loop (remoting.aio's connections, no thread and no
    trio loop); this class keeps the earlier facade's name and methods. ``portal`` is accepted and ignored."""

    def __init__(self, group: str, *, portal: TrioPortal | None = None, **kwargs: Any) -> None:
        self.producer = Producer(group, **kwargs)

    async def __aenter__(self) -> AsyncioProducer:
        await self.producer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.producer.shutdown()

    async def send(self, msg: Message, **kwargs: Any) -> SendResult:
        return await self.producer.send(msg, **kwargs)

    async def send_oneway(self, msg: Message, **kwargs: Any) -> None:
        await self.producer.send_oneway(msg, **kwargs)

    async def send_batch(self, msgs: list[Message], **kwargs: Any) -> SendResult:
        return await self.producer.send_batch(msgs, **kwargs)

    async def request(self, msg: Message, timeout: float = 3.0, **kwargs: Any) -> MessageExt:
        return await self.producer.request(msg, timeout, **kwargs)


class AsyncioPushConsumer:
    """A push consumer whose listener is an asyncio coroutine function (or a plain function)."""

    def __init__(self, group: str, listener: Callable[[list[MessageExt], ConsumeContext], Any], *,
                 portal: TrioPortal | None = None, **kwargs: Any) -> None:
        self._listener = listener
        self._loop: asyncio.AbstractEventLoop | None = None
        self.consumer = PushConsumer(group, self._bridge, listener_in_thread=True, **kwargs)
        self._host: Hosted[PushConsumer] = Hosted(self.consumer, portal)

    def _bridge(self, msgs: list[MessageExt], ctx: ConsumeContext) -> Any:
        # runs in a trio worker thread: hop onto the asyncio loop and wait there
        if inspect.iscoroutinefunction(self._listener):
            assert self._loop is not None
            return asyncio.run_coroutine_threadsafe(self._listener(msgs, ctx), self._loop).result()
        return self._listener(msgs, ctx)

    def subscribe(self, topic: str, expression: str = "*") -> None:
        self.consumer.subscribe(topic, expression)

    async def __aenter__(self) -> AsyncioPushConsumer:
        self._loop = asyncio.get_running_loop()
        await self._host.astart()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._host.ashutdown()
