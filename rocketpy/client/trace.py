"""enableMsgTrace: trace records written to the trace topic as the Java client's AsyncTraceDispatcher does.

A producer records a Pub per sent message; a push consumer a SubBefore per message
before its listener runs and a SubAfter once it returns. Records are queued without
waiting and sent in batches by one task in the client's nursery, through an inner
producer (group ``_INNER_TRACE_PRODUCER-<group>``) on the same client instance; each
trace message's keys are the traced message ids and keys, so QUERY_MESSAGE by a message
id finds its trace (the console's timeline, mqadmin queryMsgTraceById).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from ..clock import now_ms
from ..codecs.codes import MessageConst, MixAll
from ..codecs.trace import TraceRecord, encode_pub, encode_sub_after, encode_sub_before
from .namespace import strip_namespace

if TYPE_CHECKING:
    from ..codecs.message import Message, MessageExt
    from .instance import ClientInstance
    from .producer import Producer
    from .results import SendResult

log = logging.getLogger(__name__)

INNER_TRACE_PRODUCER_PREFIX = "_INNER_TRACE_PRODUCER-"
#: ConsumeReturnType ordinals for SubAfter's context code
CONTEXT_SUCCESS, CONTEXT_EXCEPTION, CONTEXT_FAILED = 0, 2, 4
MAX_BATCH_BYTES = 128 * 1024  # Java: maxMsgSize of the trace producer
FLUSH_DELAY = 0.05  # how long a first record waits for company


def _java(value: str | None) -> str:
    # StringBuilder.append(null) writes "null": Java's decoder expects a field there (its split drops
    # trailing empty ones)
    return "null" if value is None or value == "" else value


def _msg_type(msg: Message) -> str:
    if msg.properties.get(MessageConst.PROPERTY_TRANSACTION_PREPARED) == "true":
        return "Trans_Msg_Half"
    if msg.properties.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL, "0") not in ("", "0"):
        return "Delay_Msg"
    return "Normal_Msg"


class TraceDispatcher:
    def __init__(self, client: ClientInstance, group: str, trace_topic: str | None = None, *,
                 producer_class: Callable[..., Producer]) -> None:
        """``producer_class`` makes the dispatcher's own producer (the caller's Producer: no import cycle)."""
        self.client = client
        self._producer_class = producer_class
        self.group = group
        self.trace_topic = trace_topic or MixAll.RMQ_SYS_TRACE_TOPIC
        self.region = "DefaultRegion"
        self._pending: list[tuple[str, list[str]]] = []
        self._wake = anyio.Event()
        # a batch popped from _pending is invisible there while it is sent: shutdown waits for these too
        self._in_flight = 0
        self._idle = anyio.Event()
        self._idle.set()
        self._producer: Any = None
        self._scope: anyio.CancelScope | None = None

    # -- lifecycle ----------------------------------------------------------------------------------
    async def start(self) -> None:
        self._producer = self._producer_class(INNER_TRACE_PRODUCER_PREFIX + self.group, client=self.client)
        self._producer.namespace = None  # as Java's trace producer: a customized trace topic is used as given
        await self._producer.start()
        assert self.client.nursery is not None
        self.client.nursery.start_soon(self._run)

    async def aclose(self, timeout: float = 3.0) -> None:
        """Send what is queued and let sends under way finish (bounded), then stop."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(timeout):
            while self._pending or self._in_flight:
                if self._pending:
                    await self._flush()
                else:
                    await self._idle.wait()
        if self._scope is not None:
            self._scope.cancel()
        if self._producer is not None:
            await self._producer.shutdown()

    async def _run(self) -> None:
        with anyio.CancelScope() as self._scope:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                await anyio.sleep(FLUSH_DELAY)
                while self._pending:
                    await self._flush()

    async def _flush(self) -> None:
        from .message import make_message

        batch: list[tuple[str, list[str]]] = []
        size = 0
        while self._pending and (not batch or size + len(self._pending[0][0]) < MAX_BATCH_BYTES):
            data, keys = self._pending.pop(0)
            batch.append((data, keys))
            size += len(data)
        body = "".join(d for d, _ in batch)
        all_keys: list[str] = []
        for _, ks in batch:
            all_keys += [k for k in ks if k and k not in all_keys]
        self._in_flight += 1
        if self._in_flight == 1:
            self._idle = anyio.Event()
        try:
            await self._producer.send(make_message(self.trace_topic, body.encode(), keys=" ".join(all_keys)))
        except Exception as exc:  # a trace is best effort, like Java's: log and drop
            log.warning("trace data of %d records not sent to %s: %s", len(batch), self.trace_topic, exc)
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    def _add(self, data: str, keys: list[str]) -> None:
        self._pending.append((data, keys))
        self._wake.set()

    # -- hooks ------------------------------------------------------------------------------------------
    def on_send(self, msg: Message, result: SendResult, store_host: str, cost_ms: int, born_ms: int) -> None:
        if msg.topic == self.trace_topic:
            return
        r = TraceRecord("Pub", result.msg_id or "", born_ms, result.region_id or self.region, self.group,
                        topic=strip_namespace(msg.topic), tags=_java(msg.tags), keys=_java(msg.keys_string),
                        store_host=store_host, body_length=len(msg.body), cost_time=cost_ms, msg_type=_msg_type(msg),
                        offset_msg_id=result.offset_msg_id or "", success=True)
        self._add(encode_pub(r), [r.msg_id, *msg.keys])

    def before_consume(self, msgs: list[MessageExt]) -> tuple[str, int] | None:
        msgs = [m for m in msgs if m.topic != self.trace_topic]
        if not msgs:
            return None
        request_id = uuid.uuid4().hex.upper()
        now = now_ms()
        data = "".join(encode_sub_before(TraceRecord(
            "SubBefore", m.uniq_key or m.msg_id, now, m.properties.get(MessageConst.PROPERTY_MSG_REGION,
                                                                      self.region), self.group,
            request_id=request_id, retry_times=m.reconsume_times, keys=_java(m.keys_string))) for m in msgs)
        self._add(data, [k for m in msgs for k in (m.uniq_key or m.msg_id, *m.keys)])
        return request_id, now

    def after_consume(self, msgs: list[MessageExt], token: tuple[str, int] | None, success: bool,
                      context_code: int) -> None:
        if token is None:
            return
        msgs = [m for m in msgs if m.topic != self.trace_topic]
        request_id, began = token
        now = now_ms()
        cost = (now - began) // max(1, len(msgs))
        data = "".join(encode_sub_after(TraceRecord(
            "SubAfter", m.uniq_key or m.msg_id, now, group=self.group, request_id=request_id, cost_time=cost,
            success=success, keys=_java(m.keys_string), context_code=context_code)) for m in msgs)
        self._add(data, [k for m in msgs for k in (m.uniq_key or m.msg_id, *m.keys)])
