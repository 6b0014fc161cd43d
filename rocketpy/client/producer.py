"""The producer (Java's DefaultMQProducer): sync, async, oneway, batch, ordered sends and request-reply.

Sends go through the client instance's route table and connections. A synchronous
send is tried up to ``1 + retry_times`` times, each on a queue chosen by the fault
strategy away from the broker that just failed, within one overall timeout.
"""

from __future__ import annotations

import dataclasses
import logging
import operator
import random
import re
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, cast

import anyio
import trio

from ..clock import now_ms
from ..codecs.bodies import MessageQueue
from ..codecs.codes import MessageConst, MessageSysFlag, MixAll, ResponseCode, SendStatus
from ..codecs.message import (
    DEFAULT_COMPRESS_LEVEL,
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    Message,
    MessageExt,
    UniqIdGenerator,
    compress_body,
    encode_batch,
)
from ..javacompat.hashmap import hashmap_key_order
from ..javacompat.lang import java_hash
from ..remoting import RemotingError, fresh_error
from ..remoting.core import AnswerFuture
from .api import ClientAPI
from .config import ClientConfig
from .errors import MQBrokerError, MQClientError, RequestTimeoutError
from .fault import FaultStrategy
from .instance import ClientInstance, acquire_instance, release_instance
from .java_text import mq_str
from .namespace import (
    queue_with_namespace,
    queue_without_namespace,
    with_namespace,
    without_namespace,
)
from .results import SendResult
from .route import TopicPublishInfo
from .send_frames import PreparedSend, SendFields, SendFrames
from .trace import TraceDispatcher

log = logging.getLogger("rocketpy.client")

MessageQueueSelector = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]

#: response codes after which a synchronous send moves on to another broker
RETRY_RESPONSE_CODES = frozenset({
    ResponseCode.TOPIC_NOT_EXIST, ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SYSTEM_ERROR,
    ResponseCode.NO_PERMISSION, ResponseCode.NO_BUYER_ID, ResponseCode.NOT_IN_CURRENT_UNIT,
})
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
_TOPIC_RE = re.compile(r"^[%|a-zA-Z0-9_-]+$")

_uniq_ids: UniqIdGenerator | None = None


def next_uniq_id(now: int | None = None) -> str:
    """A UNIQ_KEY from the process-wide generator, made on first use (MessageClientIDSetter); ``now``: the
    epoch millis to make it at (a send's born timestamp: one clock reading for both), else the clock's."""
    global _uniq_ids
    ids = _uniq_ids
    if ids is None:
        ids = _uniq_ids = UniqIdGenerator()
    return ids.next_id() if now is None else ids.id_at(now)


def select_by_hash(mqs: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    """SelectMessageQueueByHash: ``abs(arg.hashCode() % n)`` with Java's hashCode of the argument."""
    value = java_hash(arg)
    n = len(mqs)
    rem = abs(value) % n  # Java's % keeps the dividend's sign, then takes the absolute value
    return mqs[rem]


def _invoke_id() -> int:
    """What Java's sendDefaultImpl names one send's attempts by in its log lines (Random.nextLong)."""
    return random.getrandbits(64) - (1 << 63)


def _log_send_failure(invoke_id: int, rt: int, mq: MessageQueue, exc: Exception, *, resend: bool) -> None:
    """DefaultMQProducerImpl's line for a failed attempt, saying what comes next: "resend at once" when an
    attempt is left for a code that is retried (on another broker only if the topic has one), "throw exception"
    otherwise. It said "retry on another broker" with one broker, and before codes no send retries."""
    log.warning("sendKernelImpl exception, %s, InvokeID: %s, RT: %sms, Broker: %s: %s",
                "resend at once" if resend else "throw exception", invoke_id, rt, mq_str(mq), exc)


def select_by_random(mqs: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    """SelectMessageQueueByRandom."""
    return mqs[random.randrange(len(mqs))]


_WAIT = MessageConst.PROPERTY_WAIT_STORE_MSG_OK
_UNIQ = MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
_PREPARED = MessageConst.PROPERTY_TRANSACTION_PREPARED
_INSTANCE_ID = MessageConst.PROPERTY_INSTANCE_ID
_MESSAGE_TYPE = MessageConst.PROPERTY_MESSAGE_TYPE
_REPLY = MixAll.REPLY_MESSAGE_FLAG
#: a plain send's request code (SEND_MESSAGE_V2)
_SEND_CODE = ClientAPI.send_code()
_COMPRESSED = int(MessageSysFlag.COMPRESSED_FLAG | MessageSysFlag.COMPRESSION_ZLIB_TYPE)
_TRANSACTION_PREPARED = int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)

#: topics that passed check_topic (a producer sends to a few topics again and again)
_CHECKED_TOPICS: set[str] = set()


def check_topic(topic: str) -> None:
    if topic in _CHECKED_TOPICS:
        return
    _check_topic(topic)
    if len(_CHECKED_TOPICS) >= 4096:
        _CHECKED_TOPICS.clear()
    _CHECKED_TOPICS.add(topic)


def _check_topic(topic: str) -> None:
    if not topic or not topic.strip():
        raise MQClientError("The specified topic is blank", ResponseCode.MESSAGE_ILLEGAL)
    if len(topic) > MixAll.TOPIC_MAX_LENGTH:
        raise MQClientError(f"The specified topic is longer than topic max length {MixAll.TOPIC_MAX_LENGTH}.",
                            ResponseCode.MESSAGE_ILLEGAL)
    if not _TOPIC_RE.fullmatch(topic):  # (match's $ would take a last newline)
        raise MQClientError(f"The specified topic[{topic}] contains illegal characters, allowing only "
                            "^[%|a-zA-Z0-9_-]+$", ResponseCode.MESSAGE_ILLEGAL)
    if MixAll.is_not_allowed_send_topic(topic):
        raise MQClientError(f"Sending message to topic[{topic}] is forbidden.", ResponseCode.MESSAGE_ILLEGAL)


def check_message(msg: Message, max_size: int = MAX_MESSAGE_SIZE) -> None:
    """Validators.checkMessage."""
    if msg is None:
        raise MQClientError("the message is null", ResponseCode.MESSAGE_ILLEGAL)
    topic = msg.topic
    if topic not in _CHECKED_TOPICS:
        check_topic(topic)
    body = msg.body
    if body is None:
        raise MQClientError("the message body is null", ResponseCode.MESSAGE_ILLEGAL)
    size = len(body)
    if size == 0:
        raise MQClientError("the message body length is zero", ResponseCode.MESSAGE_ILLEGAL)
    if size > max_size:
        raise MQClientError(f"the message body size over max value, MAX: {max_size}", ResponseCode.MESSAGE_ILLEGAL)


def wire_properties(props: dict[str, str]) -> str:
    """The properties string in java.util.HashMap order, byte for byte what Java sends:
    ``properties_to_string(hashmap_dict(props))`` without the reordered dict. Each key set's order is
    computed once, into a getter of its values in that order and the string with their places (a send's
    properties are then one C call and one %-formatting)."""
    keys = tuple(props)
    known = _WIRE_FORMATS.get(keys)
    if known is None:
        known = _wire_format(keys)
    getter, text = known
    values = getter(props)
    if None in values:  # a property set to None is left out
        return _wire_properties(props)
    return text % values


def _wire_properties(props: dict[str, str]) -> str:
    """wire_properties, the plain way (any values)."""
    return PROPERTY_SEPARATOR.join(
        [f"{k}{NAME_VALUE_SEPARATOR}{v}" for k in hashmap_key_order(tuple(props)) if (v := props[k]) is not None]
    )


#: a key set (in dict order) -> (the getter of its values in HashMap order, the %-string they fill)
_WIRE_FORMATS: dict[tuple[str, ...], tuple[Callable[[dict[str, str]], tuple[str, ...]], str]] = {}


def _wire_format(keys: tuple[str, ...]) -> tuple[Callable[[dict[str, str]], tuple[str, ...]], str]:
    order = hashmap_key_order(keys)
    getter: Callable[[dict[str, str]], tuple[str, ...]]
    if len(order) > 1:
        getter = operator.itemgetter(*order)
    elif order:  # itemgetter of one key gives the value itself, not a tuple
        only = order[0]
        getter = lambda d: (d[only],)  # noqa: E731
    else:
        getter = lambda d: ()  # noqa: E731
    text = PROPERTY_SEPARATOR.join(k.replace("%", "%%") + NAME_VALUE_SEPARATOR + "%s" for k in order)
    if len(_WIRE_FORMATS) >= 4096:
        _WIRE_FORMATS.clear()
    _WIRE_FORMATS[keys] = getter, text
    return getter, text


class SendFuture:
    """An asynchronous send in flight: ``await future.result()`` or use the callbacks."""

    def __init__(self) -> None:
        self._done = anyio.Event()
        self.value: SendResult | None = None
        self.error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def _finish(self, value: SendResult | None, error: BaseException | None) -> None:
        # the error kept without its traceback: that holds the failed send's frames, whose locals and
        # closures hold this future (a cycle), for as long as a caller keeps the future
        self.value, self.error = value, None if error is None else fresh_error(error)
        self._done.set()

    async def result(self) -> SendResult:
        await self._done.wait()
        if self.error is not None:
            # a copy for each caller: the stored one raised again would gather every caller's frames
            raise fresh_error(self.error)
        assert self.value is not None
        return self.value


class Producer:
    """Sends messages of one producer group.

    ``async with Producer("group", namesrv="127.0.0.1:9876") as p: await p.send(msg)``.
    Producers and consumers of one event loop run (trio or asyncio) with equal client configs share one
    ClientInstance; pass ``client=`` to use a started ClientInstance of your own instead.
    """

    def __init__(
        self,
        group: str = MixAll.DEFAULT_PRODUCER_GROUP,
        *,
        namesrv: str | None = None,
        client: ClientInstance | None = None,
        config: ClientConfig | None = None,
        send_timeout: float = 3.0,
        retry_times: int = 2,
        retry_times_async: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        compress_over: int = 4096,
        compress_level: int = DEFAULT_COMPRESS_LEVEL,
        max_message_size: int = MAX_MESSAGE_SIZE,
        create_topic_key: str = MixAll.AUTO_CREATE_TOPIC_KEY_TOPIC,
        default_topic_queue_nums: int = 4,
        send_latency_fault_enable: bool = False,
        enable_msg_trace: bool = False,
        customized_trace_topic: str | None = None,
    ) -> None:
        self.group = group
        self.enable_msg_trace = enable_msg_trace
        self.customized_trace_topic = customized_trace_topic
        self.trace: TraceDispatcher | None = None
        self._own_client = client is None
        if client is None:
            if config is None:
                config = ClientConfig(namesrv_addr=namesrv) if namesrv else ClientConfig()
            # not started: start() swaps in the instance shared with equal configs of the loop run
            client = ClientInstance(config)
        self._config = config if config is not None else client.config
        self.client = client
        #: the config's namespace (Java's ClientConfig.namespace): topics and the group get it on the wire
        self.namespace = self._config.namespace
        self.send_timeout = send_timeout
        self.retry_times = retry_times
        self.retry_times_async = retry_times_async
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        self.compress_over = compress_over
        self.compress_level = compress_level
        self.max_message_size = max_message_size
        self.create_topic_key = create_topic_key
        self.default_topic_queue_nums = default_topic_queue_nums
        self.fault = FaultStrategy(send_latency_fault_enable)
        self.publish_info: dict[str, TopicPublishInfo] = {}
        self.started = False
        self._frames: SendFrames | None = None

    # -- lifecycle -----------------------------------------------------------------------------
    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def start(self) -> None:
        if self.started:
            return
        user_group = self.group
        self.group = with_namespace(self.namespace, self.group)  # at start, as DefaultMQProducer.start does
        if self._own_client:
            self.client = await acquire_instance(self._config, "producer", self.group, self.client)
            try:
                self.client.register_producer(self.group, self)
            except BaseException:
                await release_instance(self.client, "producer", self.group)
                raise
        else:
            self.client.register_producer(self.group, self)
        self.publish_info.setdefault(self.create_topic_key, TopicPublishInfo())
        self.started = True
        if self.enable_msg_trace:  # the records name the group as the user did (Java's dispatcher is made so)
            self.trace = TraceDispatcher(self.client, user_group, self.customized_trace_topic, producer_class=Producer)
            await self.trace.start()
        with anyio.move_on_after(self.client.config.mq_client_api_timeout):
            await self.client.send_heartbeat_to_all_brokers()

    async def shutdown(self) -> None:
        if not self.started:
            return
        self.started = False
        if self.trace is not None:
            await self.trace.aclose()
            self.trace = None
        with anyio.CancelScope(shield=True):
            await self.client.unregister_producer(self.group)
        if self._own_client:
            await release_instance(self.client, "producer", self.group)

    @property
    def api(self) -> ClientAPI:
        return self.client.api

    # -- routes (called by the instance) -------------------------------------------------------
    def update_publish_info(self, topic: str, info: TopicPublishInfo) -> None:
        if topic in self.publish_info:
            old = self.publish_info[topic]
            info.counter = old.counter  # keep the round-robin position across refreshes
            self.publish_info[topic] = info

    def needs_route(self, topic: str) -> bool:
        info = self.publish_info.get(topic)
        return info is None or not info.ok

    def publish_topics(self) -> list[str]:
        return list(self.publish_info)

    async def find_publish_info(self, topic: str) -> TopicPublishInfo:
        """tryToFindTopicPublishInfo: the topic's own route, else the auto-create topic's."""
        info = self.publish_info.get(topic)
        if info is None or not info.ok:
            self.publish_info.setdefault(topic, TopicPublishInfo())
            await self.client.update_topic_route(topic)
            info = self.publish_info[topic]
        if info.have_route or info.ok:
            return info
        await self.client.update_topic_route(topic, self.create_topic_key, self.default_topic_queue_nums)
        return self.publish_info[topic]

    async def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """fetchPublishMessageQueues: the topic's queues, named as the user names them (without the namespace)."""
        queues = await self._publish_queues(with_namespace(self.namespace, topic))
        return [queue_without_namespace(self.namespace, q) for q in queues] if self.namespace else queues

    async def _publish_queues(self, topic: str) -> list[MessageQueue]:
        info = await self.find_publish_info(topic)
        if not info.ok:
            raise MQClientError(f"No route info of this topic: {topic}", ResponseCode.TOPIC_NOT_EXIST)
        return list(info.queues)

    # -- namespaces -----------------------------------------------------------------------------------
    def _to_namespace(self, msg: Message, queue: MessageQueue | None,
                      instance_id: bool = True) -> tuple[Message, MessageQueue | None]:
        """The message as it goes on the wire, a copy in the namespace, and the given queue in it. The user's
        message keeps its topic (Java's sendKernelImpl gives it back after each attempt) and shares its
        properties with the copy, so it gets the UNIQ_KEY, and INSTANCE_ID (the namespace), as Java's does."""
        if instance_id:
            msg.properties[_INSTANCE_ID] = self.namespace or ""
        wire = dataclasses.replace(msg, topic=with_namespace(self.namespace, msg.topic))
        return wire, None if queue is None else queue_with_namespace(self.namespace, queue)

    def _user_result(self, result: SendResult) -> SendResult:
        """The result's queue named without the namespace (MQClientAPIImpl.processSendResponse)."""
        result.message_queue = queue_without_namespace(self.namespace, result.message_queue)
        return result

    # -- the kernel: one attempt on one queue ----------------------------------------------------
    def _send_frames(self) -> SendFrames:
        """The frame maker for this group's sends, JSON headers (made again when the group's send settings
        change: compared one by one, no key tuple made per send)."""
        frames = self._frames
        if (frames is None or frames.group != self.group or frames.default_topic != self.create_topic_key
                or frames.default_topic_queue_nums != self.default_topic_queue_nums):
            frames = self._frames = SendFrames(self.group, self.create_topic_key, self.default_topic_queue_nums)
        return frames

    def _prepare(self, msg: Message, batch: bool, now: int) -> tuple[bytes, int, dict[str, str], str | None]:
        """(body, sysFlag, the properties sent, UNIQ_KEY): the message as sendKernelImpl sends it (WAIT set,
        UNIQ_KEY given, made at ``now``, a large body compressed)."""
        props = dict(msg.properties)
        if not batch:
            if _WAIT not in props:
                props[_WAIT] = "true"
            uniq = props.get(_UNIQ)
            if uniq is None:
                uniq = props[_UNIQ] = msg.properties[_UNIQ] = next_uniq_id(now)
        else:
            uniq = props.get(_UNIQ)
        body = msg.body
        sys_flag = 0
        if not batch and len(body) > self.compress_over:
            body = compress_body(body, self.compress_level)
            sys_flag = _COMPRESSED
        if props.get(_PREPARED) == "true":
            sys_flag |= _TRANSACTION_PREPARED
        return body, sys_flag, props, uniq

    async def _send_kernel(
        self, msg: Message, mq: MessageQueue, timeout: float, *, oneway: bool = False,
        batch_msgs: Sequence[Message] | None = None,
    ) -> SendResult | None:
        addr = self.client.master_addr(mq.broker_name or "")
        if addr is None:
            await self.find_publish_info(mq.topic or msg.topic)
            addr = self.client.master_addr(mq.broker_name or "")
        if addr is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist", ResponseCode.SYSTEM_ERROR)
        request, fields, uniq = self._request(msg, mq, batch_msgs is not None)
        if oneway:
            await self.api.invoke_oneway(addr, request)
            return None
        response = await self.client.api.invoke(addr, request, timeout)
        if batch_msgs is not None:
            uniq = ",".join(m.properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "")
                            for m in batch_msgs)
        result = ClientAPI.send_result(response, addr, mq, uniq)
        if self.trace is not None and batch_msgs is None:
            born = fields.born_timestamp
            self.trace.on_send(msg, result, addr, now_ms() - born, born)
        return self._user_result(result) if self.namespace else result

    def _request(self, msg: Message, mq: MessageQueue, batch: bool) -> tuple[PreparedSend, SendFields, str | None]:
        """The send request of ``msg`` to ``mq`` (sendKernelImpl's header and body), its fields and UNIQ_KEY."""
        born = now_ms()  # the born timestamp, and the UNIQ_KEY's time (one clock reading for both)
        body, sys_flag, props, uniq = self._prepare(msg, batch, born)
        # topic, queue_id, sys_flag, born_timestamp, flag, properties, reconsume_times, max_reconsume_times,
        # batch, broker_name: positional, which costs a third of the keyword call on every send
        fields = SendFields(msg.topic, mq.queue_id, sys_flag, born, msg.flag, "", 0, None, batch, mq.broker_name)
        if msg.topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX):
            reconsume = props.pop(MessageConst.PROPERTY_RECONSUME_TIME, None)
            if reconsume is not None:
                fields.reconsume_times = int(reconsume)
            max_times = props.pop(MessageConst.PROPERTY_MAX_RECONSUME_TIMES, None)
            if max_times is not None:
                fields.max_reconsume_times = int(max_times)
        fields.properties = wire_properties(props)
        reply = props.get(_MESSAGE_TYPE) == _REPLY
        code = ClientAPI.send_code(batch=batch, reply=reply) if batch or reply else _SEND_CODE
        request = self._send_frames().prepare(code, fields, body)
        return request, fields, uniq

    # -- the retry loop -------------------------------------------------------------------------
    async def _send_default(self, msg: Message, timeout: float, times_total: int, *, oneway: bool = False,
                            batch_msgs: Sequence[Message] | None = None, begin: float | None = None,
                            tried: Sequence[str] = (), last_error: Exception | None = None,
                            check: bool = False, invoke_id: int | None = None) -> SendResult | None:
        """``tried``: the brokers of attempts already made since ``begin`` (the last failed with ``last_error``);
        ``check``: send()'s checks first (send returns this coroutine); ``invoke_id``: what the log lines of
        this send's failures name it (made on the first)."""
        if check:
            self._need_started()
            check_message(msg, self.max_message_size)
        clock = self.client.clock
        now: float | None = clock()
        if begin is None:
            begin = now
        assert begin is not None
        info = self.publish_info.get(msg.topic)
        if info is None or not info.ok:  # a known route needs no lookup (find_publish_info returns it as is)
            info = await self.find_publish_info(msg.topic)
            now = None
            if not info.ok:
                raise MQClientError(f"No route info of this topic: {msg.topic}", ResponseCode.TOPIC_NOT_EXIST)
        last_broker: str | None = tried[-1] if tried else None
        result: SendResult | None = None
        brokers_sent: list[str] = list(tried)
        for attempt in range(len(tried), times_total):
            mq = self.fault.select(info, last_broker)
            last_broker = mq.broker_name
            brokers_sent.append(mq.broker_name or "")
            start = clock() if now is None else now
            now = None
            remaining = timeout - (start - begin)
            if remaining <= 0:
                raise MQClientError("sendDefaultImpl call timeout")
            try:
                addr = self.client.master_addr(mq.broker_name or "")
                if addr is None or oneway or batch_msgs is not None or self.trace is not None:
                    result = await self._send_kernel(msg, mq, remaining, oneway=oneway, batch_msgs=batch_msgs)
                else:  # _send_kernel's common case, without a coroutine of its own for the send to pass through
                    request, _fields, uniq = self._request(msg, mq, False)
                    result = ClientAPI.send_result(await self.client.api.remoting.invoke(addr, request, remaining),
                                                   addr, mq, uniq)
                    if self.namespace:
                        self._user_result(result)
                if self.fault.enabled:  # the latency only matters to the fault strategy
                    self.fault.update(mq.broker_name or "", int((clock() - start) * 1000), False)
            except (RemotingError, MQClientError) as exc:
                rt = int((clock() - start) * 1000)
                self.fault.update(mq.broker_name or "", rt, True)
                last_error = exc
                if invoke_id is None:
                    invoke_id = _invoke_id()
                if isinstance(exc, MQBrokerError) and exc.response_code not in RETRY_RESPONSE_CODES:
                    _log_send_failure(invoke_id, rt, mq, exc, resend=False)
                    raise
                _log_send_failure(invoke_id, rt, mq, exc, resend=attempt + 1 < times_total)
                continue
            if oneway or result is None:
                return result
            if self.retry_another_broker_when_not_store_ok and result.send_status != SendStatus.SEND_OK:
                continue
            return result
        if result is not None:
            return result
        raise MQClientError(f"Send [{times_total}] times, still failed, cost "
                            f"[{int((clock() - begin) * 1000)}]ms, Topic: {msg.topic}, "
                            f"BrokersSent: {brokers_sent}: {last_error}",
                            getattr(last_error, "response_code", -1)) from last_error

    # -- public API --------------------------------------------------------------------------------
    def _need_started(self) -> None:
        if not self.started:
            raise MQClientError("The producer service state not OK, maybe started once, RUNNING")

    def send(
        self,
        msg: Message,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> Coroutine[Any, Any, SendResult]:
        """Send and wait for the broker's answer (``await producer.send(msg)``); ``queue`` or ``selector`` pins
        the queue (ordered sends). Unpinned, the coroutine to await is the retry loop's own (a coroutine less
        for every send to pass through)."""
        timeout = self.send_timeout if timeout is None else timeout
        if self.namespace:
            msg, queue = self._to_namespace(msg, queue)
        if queue is None and selector is None:
            # never None: only a oneway send gives no result
            return cast(Coroutine[Any, Any, SendResult],
                        self._send_default(msg, timeout, 1 + self.retry_times, check=True))
        return self._send_pinned(msg, queue, selector, arg, timeout)

    async def _send_pinned(self, msg: Message, queue: MessageQueue | None, selector: MessageQueueSelector | None,
                           arg: Any, timeout: float) -> SendResult:
        self._need_started()
        check_message(msg, self.max_message_size)
        mq = await self._pick(msg, queue, selector, arg)
        result = await self._send_kernel(msg, mq, timeout)
        assert result is not None
        return result

    async def _pick(self, msg: Message, queue: MessageQueue | None, selector: MessageQueueSelector | None,
                    arg: Any) -> MessageQueue:
        if queue is not None:
            if queue.topic != msg.topic:
                raise MQClientError(f"message's topic not equal mq's topic: {msg.topic} != {queue.topic}")
            return queue
        queues = await self._publish_queues(msg.topic)
        assert selector is not None
        if self.namespace:  # the selector sees the user's names (sendSelectImpl's userMessage)
            user_msg = dataclasses.replace(msg, topic=without_namespace(msg.topic, self.namespace))
            mq = selector([queue_without_namespace(self.namespace, q) for q in queues], user_msg, arg)
            if mq is not None:
                mq = queue_with_namespace(self.namespace, mq)
        else:
            mq = selector(queues, msg, arg)
        if mq is None:
            raise MQClientError("select message queue return null.")
        return mq

    async def send_oneway(self, msg: Message, *, queue: MessageQueue | None = None,
                          selector: MessageQueueSelector | None = None, arg: Any = None) -> None:
        """Send without waiting for any answer."""
        self._need_started()
        if self.namespace:
            msg, queue = self._to_namespace(msg, queue)
        check_message(msg, self.max_message_size)
        if queue is not None or selector is not None:
            mq = await self._pick(msg, queue, selector, arg)
            await self._send_kernel(msg, mq, self.send_timeout, oneway=True)
        else:
            await self._send_default(msg, self.send_timeout, 1, oneway=True)

    def send_async(
        self,
        msg: Message,
        on_success: Callable[[SendResult], Any] | None = None,
        on_exception: Callable[[BaseException], Any] | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        timeout: float | None = None,
    ) -> SendFuture:
        """Start a send in the client's nursery and return at once.

        The callbacks (plain or async functions) get the result or the error; the
        returned future can be awaited instead. Failures are retried
        ``retry_times_async`` times on other brokers.
        """
        self._need_started()
        if self.namespace:
            msg, queue = self._to_namespace(msg, queue)
        future = SendFuture()
        timeout = self.send_timeout if timeout is None else timeout
        if queue is None and selector is None and self._send_async_now(msg, future, on_success, on_exception,
                                                                       timeout):
            return future

        async def run() -> None:
            try:
                check_message(msg, self.max_message_size)
                if queue is not None or selector is not None:
                    mq = await self._pick(msg, queue, selector, arg)
                    result = await self._send_kernel(msg, mq, timeout)
                else:
                    result = await self._send_default(msg, timeout, 1 + self.retry_times_async)
                assert result is not None
            except (RemotingError, MQClientError, trio.TooSlowError, TimeoutError) as exc:
                await _settle(future, None, exc, on_success, on_exception)
                return
            await _settle(future, result, None, on_success, on_exception)

        self.client.spawn("async send", run)
        return future

    def _send_async_now(self, msg: Message, future: SendFuture, on_success: Callable[[SendResult], Any] | None,
                        on_exception: Callable[[BaseException], Any] | None, timeout: float) -> bool:
        """The first attempt of an async send written at once on the open connection to the broker, its answer
        handled where it is read (Java's invokeAsync), with no task per send; a failure it may retry goes on
        in a task the way every send retries. False (nothing done) when the usual task must do it all: no
        route or connection yet, a bad message, tracing, or retries on SEND_OK's absence."""
        if self.trace is not None or self.retry_another_broker_when_not_store_ok:
            return False
        info = self.publish_info.get(msg.topic)
        remoting = self.client.remoting
        if info is None or not info.ok or remoting is None:
            return False
        try:
            check_message(msg, self.max_message_size)
        except MQClientError:
            return False  # the task reports it as always
        clock = self.client.clock
        begin = clock()
        mq = self.fault.select(info, None)
        broker = mq.broker_name or ""
        addr = self.client.master_addr(broker)
        if addr is None or not remoting.is_open(addr):
            return False
        request, _fields, uniq = self._request(msg, mq, False)

        def answered(answer: AnswerFuture) -> None:
            latency = int((clock() - begin) * 1000)
            try:
                if answer.error is not None:
                    raise answer.error
                assert answer.response is not None
                result = ClientAPI.send_result(answer.response, addr, mq, uniq)
                if self.namespace:
                    self._user_result(result)
            except (RemotingError, MQClientError) as exc:
                self.fault.update(broker, latency, True)
                invoke_id = _invoke_id()
                if isinstance(exc, MQBrokerError) and exc.response_code not in RETRY_RESPONSE_CODES:
                    _log_send_failure(invoke_id, latency, mq, exc, resend=False)
                    future._finish(None, exc)
                    self._callback(on_exception, exc)
                else:  # the other attempts, as _send_default makes them
                    _log_send_failure(invoke_id, latency, mq, exc, resend=self.retry_times_async > 0)
                    self.client.spawn("async send", self._send_async_rest, msg, future, on_success, on_exception,
                                      timeout, begin, broker, exc, invoke_id)
                return
            if self.fault.enabled:
                self.fault.update(broker, latency, False)
            future._finish(result, None)
            self._callback(on_success, result)

        return remoting.send_soon(addr, request, timeout, answered) is not None

    async def _send_async_rest(self, msg: Message, future: SendFuture, on_success: Callable[[SendResult], Any] | None,
                               on_exception: Callable[[BaseException], Any] | None, timeout: float, begin: float,
                               broker: str, error: Exception, invoke_id: int) -> None:
        try:
            result = await self._send_default(msg, timeout, 1 + self.retry_times_async, begin=begin, tried=(broker,),
                                              last_error=error, invoke_id=invoke_id)
            assert result is not None
        except (RemotingError, MQClientError, trio.TooSlowError, TimeoutError) as exc:
            await _settle(future, None, exc, on_success, on_exception)
            return
        await _settle(future, result, None, on_success, on_exception)

    def _callback(self, cb: Callable[[Any], Any] | None, value: Any) -> None:
        """A send callback called where the answer is read; an async one gets a task to run in."""
        if cb is None:
            return
        try:
            out = cb(value)
        except Exception:
            log.exception("send callback failed")
            return
        if isinstance(out, Awaitable):
            self.client.spawn("send callback", _awaited, out)

    async def send_batch(self, msgs: Sequence[Message], *, queue: MessageQueue | None = None,
                         timeout: float | None = None) -> SendResult:
        """Send messages of one topic as one SEND_BATCH_MESSAGE (MessageBatch.generateFromList)."""
        self._need_started()
        if self.namespace:  # INSTANCE_ID goes on the batch, as sendKernelImpl puts it on the MessageBatch
            msgs = [self._to_namespace(m, None, instance_id=False)[0] for m in msgs]
            queue = None if queue is None else queue_with_namespace(self.namespace, queue)
        batch = self.batch(msgs)
        if self.namespace:
            batch.properties[_INSTANCE_ID] = self.namespace or ""
        timeout = self.send_timeout if timeout is None else timeout
        if queue is not None:
            result = await self._send_kernel(batch, queue, timeout, batch_msgs=msgs)
        else:
            result = await self._send_default(batch, timeout, 1 + self.retry_times, batch_msgs=msgs)
        assert result is not None
        return result

    def batch(self, msgs: Sequence[Message]) -> Message:
        """The one message a batch travels as; each member gets its UNIQ_KEY here."""
        if not msgs:
            raise MQClientError("the message list is empty")
        first = msgs[0]
        for m in msgs:
            if m.delay_time_level > 0:
                raise MQClientError("TimeDelayLevel is not supported for batching")
            if m.topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX):
                raise MQClientError("Retry Group is not supported for batching")
            if m.topic != first.topic:
                raise MQClientError("The topic of the messages in one batch should be the same")
            if m.wait_store_msg_ok != first.wait_store_msg_ok:
                raise MQClientError("The waitStoreMsgOK of the messages in one batch should the same")
            check_message(m, self.max_message_size)
            if MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX not in m.properties:
                m.properties[MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = next_uniq_id()
        body = encode_batch(msgs)
        if len(body) > self.max_message_size:
            raise MQClientError(f"the message body size over max value, MAX: {self.max_message_size}",
                                ResponseCode.MESSAGE_ILLEGAL)
        return Message(topic=first.topic, body=body, properties={
            MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "true" if first.wait_store_msg_ok else "false"})

    # -- request-reply ---------------------------------------------------------------------------------
    async def request(self, msg: Message, timeout: float = 3.0, *, selector: MessageQueueSelector | None = None,
                      arg: Any = None, queue: MessageQueue | None = None) -> MessageExt:
        """Send a request message and wait for the reply a consumer sends back through the broker."""
        self._need_started()
        begin = anyio.current_time()
        correlation_id = str(uuid.uuid4())
        msg.properties[MessageConst.PROPERTY_CORRELATION_ID] = correlation_id
        msg.properties[MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT] = self.client.client_id
        msg.properties[MessageConst.PROPERTY_MESSAGE_TTL] = str(int(timeout * 1000))
        got = anyio.Event()
        box: list[MessageExt] = []

        def arrive(reply: MessageExt) -> None:
            box.append(reply)
            got.set()

        self.client.reply_waiters[correlation_id] = arrive
        try:
            await self.send(msg, queue=queue, selector=selector, arg=arg, timeout=timeout)
            remaining = timeout - (anyio.current_time() - begin)
            with anyio.move_on_after(max(remaining, 0)):
                await got.wait()
            if not box:
                raise RequestTimeoutError(f"send request message to <{msg.topic}> OK, but wait reply message "
                                          f"timeout, {int(timeout * 1000)} ms.")
            return box[0]
        finally:
            self.client.reply_waiters.pop(correlation_id, None)


async def _awaited(out: Awaitable[Any]) -> None:
    try:
        await out
    except Exception:
        log.exception("send callback failed")


async def _settle(future: SendFuture, result: SendResult | None, error: BaseException | None,
                  on_success: Callable[[SendResult], Any] | None,
                  on_exception: Callable[[BaseException], Any] | None) -> None:
    """An async send's outcome: the future finished, then the callback of that outcome called."""
    future._finish(result, error)
    if error is not None:
        await _call(on_exception, error)
    else:
        await _call(on_success, result)


async def _call(cb: Callable[[Any], Any] | None, value: Any) -> None:
    if cb is None:
        return
    try:
        out = cb(value)
        if isinstance(out, Awaitable):
            await out
    except Exception:
        log.exception("send callback failed")
