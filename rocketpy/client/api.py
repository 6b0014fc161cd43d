"""Typed requests a client sends (Java's MQClientAPIImpl): one coroutine per request code.

Every method builds the headers Java 4.9.8 sends (checked against the golden captures),
invokes through the shared RemotingClient and turns error codes into MQBrokerError.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Coroutine, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from ..accel import compiled
from ..codecs import RemotingCommand, RequestCode, ResponseCode, SerializeType
from ..codecs.bodies import (
    ConsumerConnection,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    TopicRouteData,
    UnlockBatchRequestBody,
)
from ..codecs.codes import LanguageCode, MessageSysFlag, PullStatus, SendStatus
from ..codecs.frame import frame_parts
from ..codecs.headers import (
    ConsumerSendMsgBackRequestHeader,
    EndTransactionRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from ..codecs.message import MessageExt, decode_messages
from ..codecs.record import inflate_pulled, pulled_messages
from ..remoting import RemotingClient, RemotingTimeoutError
from ..remoting.aio import AsyncioRemotingClient
from ..remoting.client_connection import Request, encode_request
from ..remoting.core import AnswerFuture
from .errors import MQBrokerError, MQClientError
from .results import PullResult, SendResult

log = logging.getLogger("rocketpy.client")

_SEND_STATUS = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}
_PULL_STATUS = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


def _plain_int(text: object, bits: int) -> int | None:
    """``text`` as a Java int/long when it is plain ASCII digits (with a minus) in range, else None."""
    if type(text) is not str or not 0 < len(text) <= 20 or not text.isascii():
        return None
    if not (text.isdigit() or (text[0] == "-" and text[1:].isdigit())):
        return None
    value = int(text)
    limit = 1 << (bits - 1)
    return value if -limit <= value < limit else None


def _plain_send_fields(ext: dict[str, str]) -> tuple[str, int, int, str | None] | None:
    """(msgId, queueId, queueOffset, transactionId) of a send's answer when all are plain, else None."""
    get = ext.get
    msg_id, transaction_id = get("msgId"), get("transactionId")
    if type(msg_id) is not str or not (transaction_id is None or type(transaction_id) is str):
        return None
    queue_id, queue_offset = get("queueId"), get("queueOffset")
    # up to 9 and up to 18 ASCII digits: an int and a long whatever they say, below 10**9 and 10**18
    if (type(queue_id) is str and type(queue_offset) is str and 0 < len(queue_id) <= 9 and 0 < len(queue_offset) <= 18
            and queue_id.isascii() and queue_id.isdigit() and queue_offset.isascii() and queue_offset.isdigit()):
        return msg_id, int(queue_id), int(queue_offset), transaction_id
    qid, qoff = _plain_int(queue_id, 32), _plain_int(queue_offset, 64)
    if qid is None or qoff is None:
        return None
    return msg_id, qid, qoff, transaction_id


#: a send answer's (msgId, queueId, queueOffset, transactionId, region, traceOn): what a SendResult takes from it
SendAnswerFields = tuple[str | None, int, int, str | None, str, bool]


def send_answer_fields_py(ext: dict[str, str]) -> SendAnswerFields | None:
    """The SendAnswerFields of a send's answer when its header fields are all plain (see _plain_send_fields), else
    None: what ClientAPI.send_result puts in the SendResult."""
    plain = _plain_send_fields(ext)
    if plain is None:
        return None
    return (*plain, ext.get("MSG_REGION") or "DefaultRegion", ext.get("TRACE_ON") != "false")


#: the compiled SendResultMaker (None when not built): send_result of a plain send answer, None for any other answer
#: (which the path through _send_answer_fields_checked reads)
_make_send_result: Callable[[SendStatus, str | None, str | None, str | None, dict[str, str] | None],
                            SendResult | None] | None = (
    _maker(SendResult, MessageQueue) if (_maker := compiled("SendResultMaker")) is not None else None
)


def _send_answer_fields_checked(ext: dict[str, str] | None) -> SendAnswerFields:
    """The SendAnswerFields of any answer: through the typed header when a field is unusual (which refuses what
    Java's decodeCommandCustomHeader refuses)."""
    fields = send_answer_fields_py(ext) if ext is not None else None
    if fields is not None:
        return fields
    h = SendMessageResponseHeader.from_ext_fields(ext)
    assert h.queue_id is not None and h.queue_offset is not None  # required: decoding refuses an answer without
    ext = ext or {}
    return (h.msg_id, h.queue_id, h.queue_offset, h.transaction_id, ext.get("MSG_REGION") or "DefaultRegion",
            ext.get("TRACE_ON") != "false")


def send_response_header(ext: dict[str, str] | None) -> SendMessageResponseHeader:
    """The SendMessageResponseHeader of a send's answer: the usual all-plain fields read directly, anything
    else (a missing field, a value Java parses unusually) through the typed header's own decoding."""
    plain = _plain_send_fields(ext) if ext is not None else None
    if plain is not None:
        return SendMessageResponseHeader(msg_id=plain[0], queue_id=plain[1], queue_offset=plain[2],
                                         transaction_id=plain[3])
    return SendMessageResponseHeader.from_ext_fields(ext)


def check(response: RemotingCommand, addr: str | None, *ok: int) -> RemotingCommand:
    """The response when its code is SUCCESS (or one of ``ok``), else MQBrokerError."""
    if response.code == ResponseCode.SUCCESS or response.code in ok:
        return response
    raise MQBrokerError(response.code, response.remark, addr)


class ClientAPI:
    """The request side of one client instance."""

    def __init__(self, remoting: RemotingClient | AsyncioRemotingClient, timeout: float = 3.0) -> None:
        self.remoting = remoting
        self.timeout = timeout
        #: a pull header's fixed fields -> its frame's template (None: no template fits, the command is encoded)
        self._pull_templates: dict[tuple[Any, ...], tuple[bytes, tuple[int, ...]] | None] = {}

    def invoke(self, addr: str, request: Request, timeout: float | None = None) -> Coroutine[Any, Any, RemotingCommand]:
        """The remoting client's invoke with this API's default timeout (its coroutine, to await: no coroutine of
        its own in between, which every send would pass through twice)."""
        return self.remoting.invoke(addr, request, self.timeout if timeout is None else timeout)

    async def invoke_oneway(self, addr: str, request: Request) -> None:
        await self.remoting.invoke_oneway(addr, request)

    # -- name server ---------------------------------------------------------------
    async def get_topic_route(self, namesrv: str, topic: str, timeout: float | None = None) -> TopicRouteData | None:
        """The route of ``topic``, or None when the name server knows no such topic."""
        req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic))
        resp = await self.invoke(namesrv, req, timeout)
        if resp.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        check(resp, namesrv)
        return TopicRouteData.decode(resp.body or b"{}")

    # -- sending ---------------------------------------------------------------------
    @staticmethod
    def send_code(*, batch: bool = False, reply: bool = False) -> int:
        """SEND_MESSAGE_V2, or SEND_BATCH_MESSAGE, SEND_REPLY_MESSAGE_V2: the short header's codes, as Java's
        sendSmartMsg default uses."""
        return _REPLY_V2 if reply else (_BATCH if batch else _SEND_V2)

    @staticmethod
    def send_request(
        header: SendMessageRequestHeader, body: bytes, *, batch: bool = False, reply: bool = False
    ) -> RemotingCommand:
        """The send request the typed header makes (the reference of the producer's SendFrames)."""
        code = ClientAPI.send_code(batch=batch, reply=reply)
        return RemotingCommand.request(code, SendMessageRequestHeaderV2.from_v1(header), body)

    @staticmethod
    def send_result(
        response: RemotingCommand, addr: str, mq: MessageQueue, uniq_id: str | None
    ) -> SendResult:
        status = _SEND_STATUS.get(response.code)  # type: ignore[call-overload]
        if status is None:
            raise MQBrokerError(response.code, response.remark, addr)
        ext = response.ext_fields
        if _make_send_result is not None:  # the usual answer, read and made by compiled code
            result: SendResult | None = _make_send_result(status, uniq_id, mq.topic, mq.broker_name, ext)
            if result is not None:
                return result
        msg_id, queue_id, queue_offset, transaction_id, region, trace_on = _send_answer_fields_checked(ext)
        return SendResult(status, uniq_id, MessageQueue.of(mq.topic, mq.broker_name, queue_id), queue_offset, msg_id,
                          transaction_id, region, trace_on)

    # -- pulling ---------------------------------------------------------------------
    def pull_request(self, header: PullMessageRequestHeader) -> Request:
        """The PULL_MESSAGE request of ``header``: a queue's pulls differ in their offsets and flags only, so
        their frames come from a template made once per queue (PreparedPull), the command where none fits."""
        key = (header.consumer_group, header.topic, header.queue_id, header.max_msg_nums,
               header.suspend_timeout_millis, header.subscription, header.sub_version, header.expression_type,
               header.bname)
        templates = self._pull_templates
        if key in templates:
            template = templates[key]
        else:
            if len(templates) >= _PULL_TEMPLATES_MAX:
                templates.clear()
            template = templates[key] = _pull_template(header)
        if template is None or header.queue_offset is None or header.commit_offset is None or \
                header.sys_flag is None:
            return RemotingCommand.request(RequestCode.PULL_MESSAGE, header)
        return PreparedPull(header, template)

    async def pull(self, addr: str, header: PullMessageRequestHeader, timeout: float) -> tuple[PullResult, bytes]:
        """PULL_MESSAGE; the messages are left undecoded (the caller filters and decodes)."""
        resp = await self.invoke(addr, self.pull_request(header), timeout)
        return self.pull_answer(resp, addr)

    def pull_soon(self, addr: str, header: PullMessageRequestHeader,
                  timeout: float) -> AnswerFuture | None:
        """PULL_MESSAGE written at once (when no other write is under way), without waiting: :meth:`pull_answered`
        takes its answer later (a consumer asks for a queue's next messages, then decodes the last ones while the
        broker looks for them). None, and nothing sent, when no connection to ``addr`` is open."""
        return self.remoting.send_soon(addr, self.pull_request(header), timeout, _no_callback, now=True)

    async def pull_answered(self, addr: str, future: AnswerFuture) -> tuple[PullResult, bytes]:
        """The answer of a :meth:`pull_soon`, as :meth:`pull` gives it (a timeout closes the connection, as an
        invoke's does)."""
        try:
            resp = await future.wait()
        except RemotingTimeoutError:
            if self.remoting.close_on_timeout:
                await self.remoting.close_connection(addr)
            raise
        return self.pull_answer(resp, addr)

    @staticmethod
    def pull_answer(resp: RemotingCommand, addr: str) -> tuple[PullResult, bytes]:
        """A PULL_MESSAGE answer's result and its undecoded messages; MQBrokerError for an error code."""
        status = _PULL_STATUS.get(resp.code)  # type: ignore[call-overload]
        if status is None:
            raise MQBrokerError(resp.code, resp.remark, addr)
        h = resp.decode_header(PullMessageResponseHeader)
        result = PullResult(status, h.next_begin_offset, h.min_offset, h.max_offset,
                            suggest_which_broker_id=h.suggest_which_broker_id or 0)
        return result, resp.body or b""

    # -- offsets -----------------------------------------------------------------------
    async def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int:
        h = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id,
                                             bname=mq.broker_name)
        resp = check(await self.invoke(addr, RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, h)), addr)
        return resp.decode_header(QueryConsumerOffsetResponseHeader).offset

    async def update_consumer_offset_oneway(self, addr: str, group: str, mq: MessageQueue, offset: int) -> None:
        h = UpdateConsumerOffsetRequestHeader(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id,
                                              commit_offset=offset, bname=mq.broker_name)
        await self.invoke_oneway(addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, h))

    async def update_consumer_offset(self, addr: str, group: str, mq: MessageQueue, offset: int) -> None:
        h = UpdateConsumerOffsetRequestHeader(consumer_group=group, topic=mq.topic, queue_id=mq.queue_id,
                                              commit_offset=offset, bname=mq.broker_name)
        check(await self.invoke(addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, h)), addr)

    async def _offset(self, code: int, header: object, addr: str) -> int:
        resp = check(await self.invoke(addr, RemotingCommand.request(code, header)), addr)
        return int((resp.ext_fields or {}).get("offset", "0"))

    async def get_max_offset(self, addr: str, mq: MessageQueue) -> int:
        h = GetMaxOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name)
        return await self._offset(RequestCode.GET_MAX_OFFSET, h, addr)

    async def get_min_offset(self, addr: str, mq: MessageQueue) -> int:
        h = GetMinOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name)
        return await self._offset(RequestCode.GET_MIN_OFFSET, h, addr)

    async def search_offset(self, addr: str, mq: MessageQueue, timestamp_ms: int) -> int:
        h = SearchOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, timestamp=timestamp_ms,
                                      bname=mq.broker_name)
        return await self._offset(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, h, addr)

    # -- membership --------------------------------------------------------------------
    async def heartbeat(self, addr: str, data: HeartbeatData, language: LanguageCode = LanguageCode.PYTHON) -> int:
        """HEART_BEAT; returns the broker's version. As Java's client, only the heartbeat carries the configured
        language: it is what the broker shows for the client (consumerConnection, producerConnection)."""
        request = RemotingCommand.request(RequestCode.HEART_BEAT, body=data.encode())
        request.language = language
        resp = check(await self.invoke(addr, request), addr)
        return resp.version

    async def unregister_client(self, addr: str, client_id: str, producer_group: str | None = None,
                                consumer_group: str | None = None) -> None:
        h = UnregisterClientRequestHeader(client_id=client_id, producer_group=producer_group,
                                          consumer_group=consumer_group)
        check(await self.invoke(addr, RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, h)), addr)

    async def get_consumer_ids(self, addr: str, group: str) -> list[str]:
        h = GetConsumerListByGroupRequestHeader(consumer_group=group)
        resp = check(await self.invoke(addr, RemotingCommand.request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, h)),
                     addr)
        if not resp.body:
            return []
        return GetConsumerListByGroupResponseBody.decode(resp.body).consumer_id_list or []

    async def get_consumer_connection(self, addr: str, group: str) -> ConsumerConnection:
        from ..codecs.headers import GetConsumerConnectionListRequestHeader

        h = GetConsumerConnectionListRequestHeader(consumer_group=group)
        resp = check(await self.invoke(addr, RemotingCommand.request(RequestCode.GET_CONSUMER_CONNECTION_LIST, h)),
                     addr)
        return ConsumerConnection.decode(resp.body or b"{}")

    # -- orderly locks -----------------------------------------------------------------
    async def lock_batch(self, addr: str, group: str, client_id: str, mqs: Sequence[MessageQueue],
                         timeout: float = 1.0) -> list[MessageQueue]:
        body = LockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=list(mqs)).encode()
        resp = check(await self.invoke(addr, RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, body=body), timeout),
                     addr)
        return LockBatchResponseBody.decode(resp.body or b"{}").lock_ok_mq_set

    async def unlock_batch(self, addr: str, group: str, client_id: str, mqs: Sequence[MessageQueue],
                           oneway: bool = False) -> None:
        body = UnlockBatchRequestBody(consumer_group=group, client_id=client_id, mq_set=list(mqs)).encode()
        req = RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, body=body)
        if oneway:
            await self.invoke_oneway(addr, req)
        else:
            check(await self.invoke(addr, req, 1.0), addr)

    # -- retry and transactions --------------------------------------------------------
    async def send_message_back(self, addr: str, msg: MessageExt, group: str, delay_level: int,
                                max_reconsume_times: int, broker_name: str | None) -> None:
        h = ConsumerSendMsgBackRequestHeader(
            offset=msg.commit_log_offset, group=group, delay_level=delay_level, origin_msg_id=msg.client_msg_id,
            origin_topic=msg.topic, unit_mode=False, max_reconsume_times=max_reconsume_times, bname=broker_name)
        check(await self.invoke(addr, RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, h), 5.0), addr)

    async def end_transaction_oneway(self, addr: str, header: EndTransactionRequestHeader,
                                     remark: str | None = None) -> None:
        req = RemotingCommand.request(RequestCode.END_TRANSACTION, header)
        req.remark = remark
        await self.invoke_oneway(addr, req)


#: pull templates kept at most (one per queue and subscription: a consumer has a few hundred at most)
_PULL_TEMPLATES_MAX = 4096
#: values no real pull carries, each written once into a template's reference frame and then replaced by a
#: placeholder: queueOffset, commitOffset, sysFlag, opaque
_PULL_SENTINELS = (7_341_592_653_589_793_238, 7_271_828_182_845_904_523, 1_414_213_562, 1_732_050_807)


def _pull_template(header: PullMessageRequestHeader) -> tuple[bytes, tuple[int, ...]] | None:
    """The JSON header of ``header``'s request with %d where the offsets, the flags and the opaque go, and which
    of them each placeholder takes; None when a value is not found exactly once (the command is encoded then).
    Only the values change between a queue's pulls: the keys, and so their HashMap order, stay."""
    probe = copy.copy(header)
    probe.queue_offset, probe.commit_offset, probe.sys_flag = _PULL_SENTINELS[:3]
    command = RemotingCommand.request(RequestCode.PULL_MESSAGE, probe, opaque=_PULL_SENTINELS[3])
    if command.serialize_type != SerializeType.JSON:
        return None
    text = command.encode_header().replace(b"%", b"%%")
    found = []
    for i, sentinel in enumerate(_PULL_SENTINELS):
        digits = b"%d" % sentinel
        if text.count(digits) != 1:
            return None
        found.append((text.index(digits), i))
        text = text.replace(digits, b"%d")
    return text, tuple(i for _pos, i in sorted(found))


class PreparedPull:
    """A PULL_MESSAGE request framed from its queue's template (the PreparedRequest of the remoting client)."""

    __slots__ = ("header", "_template")
    code = int(RequestCode.PULL_MESSAGE)

    def __init__(self, header: PullMessageRequestHeader, template: tuple[bytes, tuple[int, ...]]) -> None:
        self.header = header
        self._template = template

    def frame(self, opaque: int, oneway: bool = False) -> bytes:
        if oneway:  # pulls are never oneway; the command knows the flag
            return encode_request(self.command(), opaque, oneway)
        h = self.header
        text, order = self._template
        values = (h.queue_offset, h.commit_offset, h.sys_flag, opaque)
        encoded = text % tuple(values[i] for i in order)
        return b"".join(frame_parts(int(SerializeType.JSON), encoded, None))

    def command(self) -> RemotingCommand:
        return RemotingCommand.request(RequestCode.PULL_MESSAGE, self.header)


def _no_callback(_future: AnswerFuture) -> None:
    """pull_soon's answers are awaited, not called back."""


# plain ints: an IntFlag's & (and an enum member's lookup) is a Python call per message
_COMPRESSED = int(MessageSysFlag.COMPRESSED_FLAG)
_SEND_V2, _BATCH = int(RequestCode.SEND_MESSAGE_V2), int(RequestCode.SEND_BATCH_MESSAGE)
_REPLY_V2 = int(RequestCode.SEND_REPLY_MESSAGE_V2)


def decode_pulled(body: bytes, tags: Sequence[str] | None, class_filter: bool = False) -> list[MessageExt]:
    """The messages of a FOUND answer, kept only when their tag matches (PullAPIWrapper.processPullResult).

    Bodies come inflated, as Java's client decodes them (getBody() is the payload); the
    compression bit is cleared so ``decompressed_body()`` stays consistent.
    """
    wanted = set(tags) if tags and not class_filter else None
    if type(body) is bytes:  # plain records (the usual body) in one pass
        kept = pulled_messages(body, wanted)
        if kept is not None:
            return kept
    return decode_pulled_general(body, wanted)


def decode_pulled_general(body: bytes, wanted: AbstractSet[str] | None) -> list[MessageExt]:
    """decode_pulled of any body, step by step: every record decoded, the compressed ones inflated, then
    those whose TAGS is not in ``wanted`` dropped (None: all kept)."""
    msgs = decode_messages(body)
    for m in msgs:
        if m.sys_flag & _COMPRESSED:
            inflate_pulled(m)
    if wanted is not None:
        msgs = [m for m in msgs if m.tags is not None and m.tags in wanted]
    return msgs


def transaction_flag(state: str) -> int:
    from ..codecs.codes import LocalTransactionState

    if state == LocalTransactionState.COMMIT_MESSAGE:
        return int(MessageSysFlag.TRANSACTION_COMMIT_TYPE)
    if state == LocalTransactionState.ROLLBACK_MESSAGE:
        return int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
    return int(MessageSysFlag.TRANSACTION_NOT_TYPE)


__all__ = ["ClientAPI", "MQClientError", "check", "decode_pulled", "transaction_flag"]
