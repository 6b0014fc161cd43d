"""Test helpers for code that talks to a rocketpy broker (like ``trio.testing``): an
in-process broker (:func:`running_broker`), a small typed client for it (:func:`broker_client`,
:class:`BrokerTestClient`), free loopback ports for servers (:func:`free_port`,
:func:`free_broker_port`), :func:`wait_until` a condition, and :func:`clock_following`, which
puts rocketpy's clock on a ``trio.testing.MockClock``. Our tests, the compat tests and the benchmarks use them.

Built only on our codecs and :class:`rocketpy.remoting.RemotingClient`, so the wire
traffic is what a Java client would send (V2 send headers, JSON or ROCKETMQ headers).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import trio

from .broker.config import BrokerConfig
from .broker.controller import BrokerController
from .clock import now_ms, system_ms, use_clock
from .codecs import RemotingCommand, SerializeType
from .codecs.bodies import (
    ConsumerData,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    ProducerData,
    UnlockBatchRequestBody,
    build_subscription,
)
from .codecs.codes import ConsumeFromWhere, ConsumeType, MessageConst, MessageModel, RequestCode
from .codecs.headers import (
    ConsumerSendMsgBackRequestHeader,
    EndTransactionRequestHeader,
    PullMessageRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SendMessageRequestHeaderV2,
    UpdateConsumerOffsetRequestHeader,
)
from .codecs.message import Message, MessageExt, UniqIdGenerator, decode_messages, encode_batch, properties_to_string
from .javacompat import properties
from .remoting import Dispatcher, RemotingClient

_uniq = UniqIdGenerator()


@contextmanager
def clock_following(clock: trio.abc.Clock) -> Iterator[None]:
    """Make :func:`rocketpy.clock.now_ms` follow ``clock`` (a ``trio.testing.MockClock``) in this
    context: from the system time now, it moves only as far as ``clock`` does. Enter it before
    ``trio.run`` (or in the test task) so that servers and clients started from there inherit it;
    then message timestamps, delays, ages and liveness run on virtual time, like trio's timers.
    """
    base_ms, base = system_ms(), clock.current_time()
    with use_clock(lambda: base_ms + int((clock.current_time() - base) * 1000)):
        yield


async def wait_until(
    condition: Callable[[], object | Awaitable[object]], *, timeout: float = 10.0, tick: float = 0.01
) -> None:
    """Return once ``condition()`` holds, checked every ``tick`` seconds of trio time; trio.TooSlowError
    after ``timeout`` (both virtual on a MockClock: the check then never races the wall clock, but each
    tick waits out the clock's autojump threshold in real time, so long waits want a coarser tick).
    ``condition`` may be async (a query to a server, a page fetch): its result is awaited."""
    with trio.fail_after(timeout):
        while True:
            held = condition()
            if inspect.isawaitable(held):
                held = await held
            if held:
                return
            await trio.sleep(tick)


async def read_until(stream: trio.abc.ReceiveStream, marker: bytes, what: str) -> bytes:
    """What a started process printed on ``stream`` up to and including the chunk holding
    ``marker`` (its "ready" line); RuntimeError, with the last of its output, if it ends first.
    The caller bounds the wait (``trio.fail_after``)."""
    buf = b""
    while marker not in buf:
        chunk = await stream.receive_some(4096)
        if not chunk:
            raise RuntimeError(f"{what} exited before printing {marker!r}: {buf[-2000:]!r}")
        buf += chunk
    return buf


def message_properties(
    tags: str | None = None, keys: str | None = None, extra: dict[str, str] | None = None, wait: bool = True
) -> dict[str, str]:
    props: dict[str, str] = {}
    if keys:
        props[MessageConst.PROPERTY_KEYS] = keys
    props[MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = _uniq.next_id()
    props[MessageConst.PROPERTY_WAIT_STORE_MSG_OK] = "true" if wait else "false"
    if tags:
        props[MessageConst.PROPERTY_TAGS] = tags
    props.update(extra or {})
    return props


class BrokerTestClient:
    """Typed requests to one broker address."""

    def __init__(
        self,
        client: RemotingClient,
        addr: str,
        *,
        serialize_type: SerializeType = SerializeType.JSON,
        client_id: str = "127.0.0.1@test",
    ) -> None:
        self.client = client
        self.addr = addr
        self.serialize_type = serialize_type
        self.client_id = client_id

    async def invoke(
        self, code: int, header: Any = None, body: bytes | None = None, timeout: float = 5.0
    ) -> RemotingCommand:
        req = RemotingCommand.request(code, header, body, serialize_type=self.serialize_type)
        return await self.client.invoke(self.addr, req, timeout)

    async def oneway(self, code: int, header: Any = None, body: bytes | None = None) -> None:
        req = RemotingCommand.request(code, header, body, serialize_type=self.serialize_type)
        await self.client.invoke_oneway(self.addr, req)

    # -- producing -------------------------------------------------------------------------
    def send_header(
        self,
        topic: str,
        props: dict[str, str],
        *,
        group: str = "PG",
        queue_id: int = 0,
        sys_flag: int = 0,
        batch: bool = False,
        reconsume_times: int | None = None,
        max_reconsume_times: int | None = None,
    ) -> SendMessageRequestHeaderV2:
        return SendMessageRequestHeaderV2(
            producer_group=group,
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=queue_id,
            sys_flag=sys_flag,
            born_timestamp=now_ms(),
            flag=0,
            properties=properties_to_string(props),
            reconsume_times=reconsume_times or 0,
            unit_mode=False,
            batch=batch,
            max_reconsume_times=max_reconsume_times,
            broker_name="broker-a",
        )

    async def send(
        self,
        topic: str,
        body: bytes,
        *,
        tags: str | None = None,
        keys: str | None = None,
        queue_id: int = 0,
        props: dict[str, str] | None = None,
        oneway: bool = False,
        group: str = "PG",
        sys_flag: int = 0,
        code: int = RequestCode.SEND_MESSAGE_V2,
        **kw: Any,
    ) -> RemotingCommand | None:
        p = message_properties(tags, keys, props)
        header = self.send_header(topic, p, group=group, queue_id=queue_id, sys_flag=sys_flag, **kw)
        if oneway:
            await self.oneway(code, header, body)
            return None
        return await self.invoke(code, header, body)

    async def send_batch(
        self, topic: str, bodies: list[bytes], *, queue_id: int = 0, tags: str | None = None
    ) -> RemotingCommand:
        msgs = [
            Message(topic=topic, body=b, properties=message_properties(tags, f"k{i}")) for i, b in enumerate(bodies)
        ]
        header = self.send_header(
            topic, {MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "true"}, queue_id=queue_id, batch=True
        )
        return await self.invoke(RequestCode.SEND_BATCH_MESSAGE, header, encode_batch(msgs))

    # -- consuming -------------------------------------------------------------------------
    async def pull(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        max_nums: int = 32,
        suspend_ms: int = 0,
        subscription: str = "*",
        commit_offset: int = 0,
        timeout: float = 10.0,
        expression_type: str = "TAG",
    ) -> tuple[RemotingCommand, list[MessageExt]]:
        sys_flag = 4  # subscription in the request
        if suspend_ms:
            sys_flag |= 2
        if commit_offset:
            sys_flag |= 1
        header = PullMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=sys_flag,
            commit_offset=commit_offset,
            suspend_timeout_millis=suspend_ms,
            subscription=subscription,
            sub_version=now_ms(),
            expression_type=expression_type,
        )
        resp = await self.invoke(RequestCode.PULL_MESSAGE, header, timeout=timeout)
        msgs = decode_messages(resp.body) if resp.body else []
        return resp, msgs

    async def heartbeat(
        self,
        *,
        consumer_groups: dict[str, list[str]] | None = None,
        producer_groups: list[str] | None = None,
        model: MessageModel = MessageModel.CLUSTERING,
    ) -> RemotingCommand:
        consumers = []
        for group, topics in (consumer_groups or {}).items():
            consumers.append(
                ConsumerData(
                    group_name=group,
                    consume_type=ConsumeType.CONSUME_PASSIVELY,
                    message_model=model,
                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                    subscription_data_set=[build_subscription(t, "*") for t in topics],
                )
            )
        data = HeartbeatData(
            client_id=self.client_id,
            consumer_data_set=consumers,
            producer_data_set=[ProducerData(group_name=g) for g in (producer_groups or [])],
        )
        return await self.invoke(RequestCode.HEART_BEAT, None, data.encode())

    async def query_offset(self, group: str, topic: str, queue_id: int) -> RemotingCommand:
        return await self.invoke(
            RequestCode.QUERY_CONSUMER_OFFSET,
            QueryConsumerOffsetRequestHeader(consumer_group=group, topic=topic, queue_id=queue_id),
        )

    async def update_offset(self, group: str, topic: str, queue_id: int, offset: int) -> RemotingCommand:
        return await self.invoke(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            UpdateConsumerOffsetRequestHeader(
                consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset
            ),
        )

    async def send_back(
        self, group: str, msg: MessageExt, delay_level: int = 0, max_times: int | None = None
    ) -> RemotingCommand:
        return await self.invoke(
            RequestCode.CONSUMER_SEND_MSG_BACK,
            ConsumerSendMsgBackRequestHeader(
                offset=msg.commit_log_offset,
                group=group,
                delay_level=delay_level,
                origin_msg_id=msg.msg_id,
                origin_topic=msg.topic,
                max_reconsume_times=max_times,
            ),
        )

    async def lock(self, group: str, mqs: list[MessageQueue], client_id: str | None = None) -> list[MessageQueue]:
        body = LockBatchRequestBody(consumer_group=group, client_id=client_id or self.client_id, mq_set=mqs)
        resp = await self.invoke(RequestCode.LOCK_BATCH_MQ, None, body.encode())
        return list(LockBatchResponseBody.decode(resp.body or b"{}").lock_ok_mq_set)

    async def unlock(self, group: str, mqs: list[MessageQueue], client_id: str | None = None) -> RemotingCommand:
        body = UnlockBatchRequestBody(consumer_group=group, client_id=client_id or self.client_id, mq_set=mqs)
        return await self.invoke(RequestCode.UNLOCK_BATCH_MQ, None, body.encode())

    async def end_transaction(
        self,
        group: str,
        send_resp: RemotingCommand,
        commit_or_rollback: int,
        msg_id: str = "",
        from_check: bool = False,
    ) -> None:
        ext = send_resp.ext_fields or {}
        from .codecs.message import decode_offset_msg_id

        _ip, _port, offset = decode_offset_msg_id(ext["msgId"])
        header = EndTransactionRequestHeader(
            producer_group=group,
            tran_state_table_offset=int(ext["queueOffset"]),
            commit_log_offset=offset,
            commit_or_rollback=commit_or_rollback,
            from_transaction_check=from_check,
            msg_id=msg_id or ext["msgId"],
        )
        await self.oneway(RequestCode.END_TRANSACTION, header)


#: Test servers listen on ports picked below the kernel's ephemeral range (from 32768 on Linux): bind(0)
#: and outgoing connections never take those, so nothing else grabs a picked port before its server
#: binds it; each pytest-xdist worker draws from its own slice, so parallel workers never race for one.
_PORT_RANGE = (20000, 32000)
_port_cursor: list[int] = []


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    import socket

    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(offsets: tuple[int, ...] = (0,)) -> int:
    """A free 127.0.0.1 port ``p`` such that every ``p + offset`` is free too (picked, not bound)."""
    import random

    low, high = _PORT_RANGE[0], min(_PORT_RANGE[1], _ephemeral_low())
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:]
    count = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1))
    size = (high - low) // count
    low += (int(worker) % count if worker.isdigit() else 0) * size
    if not _port_cursor:
        # random start: two test runs on one machine (other checkouts) rarely meet
        _port_cursor.append(random.randrange(low, low + size))
    first, last = min(offsets), max(offsets)
    for step in range(size):
        base = low + (_port_cursor[0] - low + step) % size
        port = base - first
        if port + last >= low + size or port + first < low:
            continue
        if all(_bindable(port + o) for o in offsets):
            # later picks start past this one: ports picked for one test never overlap
            _port_cursor[0] = port + last + 1
            return port
    raise RuntimeError(f"no free port with offsets {offsets} in {low}-{low + size}")


def free_broker_port() -> int:
    """A free 127.0.0.1 listenPort whose VIP port (-2) and HA port (+1) are free too."""
    return free_port((-2, 0, 1))


def broker_test_config(store_dir: str, **props: Any) -> BrokerConfig:
    """A broker config for tests: loopback, port 0, no NameServer, the store under ``store_dir``."""
    given = {
        "brokerName": "broker-a",
        "brokerIP1": "127.0.0.1",
        "brokerIP2": "127.0.0.1",
        "listenPort": "0",
        "listenHost": "127.0.0.1",
        "namesrvAddr": "",
        "storePathRootDir": store_dir,
        "mappedFileSizeCommitLog": str(4 * 1024 * 1024),
        "mappedFileSizeConsumeQueue": str(20 * 3000),
        "maxHashSlotNum": "1000",
        "maxIndexNum": "4000",
        "vipChannelEnable": "false",
    }
    given.update({k: str(v) for k, v in props.items()})
    return BrokerConfig.from_properties(given)


@asynccontextmanager
async def running_broker(
    store_dir: str, *, config_path: str | None = None, **props: Any
) -> AsyncIterator[BrokerController]:
    """A broker on ``broker_test_config``; ``config_path`` is the file it was "started with" (mqbroker -c),
    read for its settings (``props`` on top) and rewritten by UPDATE_BROKER_CONFIG."""
    os.makedirs(store_dir, exist_ok=True)
    if config_path is not None and os.path.exists(config_path):
        props = {**properties.load_file(config_path), **props}
    broker = BrokerController(broker_test_config(store_dir, **props), config_path=config_path)
    async with trio.open_nursery() as nursery:
        await nursery.start(broker.run, None)
        try:
            yield broker
        finally:
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def broker_client(
    addr: str,
    *,
    dispatcher: Dispatcher | None = None,
    state: Any = None,
    serialize_type: SerializeType = SerializeType.JSON,
    client_id: str = "127.0.0.1@test",
) -> AsyncIterator[BrokerTestClient]:
    async with trio.open_nursery() as nursery:
        client = RemotingClient(nursery, dispatcher=dispatcher, state=state)
        try:
            yield BrokerTestClient(client, addr, serialize_type=serialize_type, client_id=client_id)
        finally:
            await client.aclose()
            nursery.cancel_scope.cancel()


async def pull_queues(addr: str, topic: str, queues: int, group: str = "CHECK") -> dict[tuple[int, int], bytes]:
    """Every message a broker serves from ``topic``'s queues 0..queues-1: (queue id, queue offset) -> body.
    Offsets the broker moves a puller past (units of deleted CommitLog files) are followed."""
    from .codecs import ResponseCode

    got: dict[tuple[int, int], bytes] = {}
    async with broker_client(addr) as c:
        for qid in range(queues):
            offset = 0
            while True:
                resp, msgs = await c.pull(group, topic, qid, offset)
                nxt = int((resp.ext_fields or {}).get("nextBeginOffset", offset))
                if resp.code != ResponseCode.SUCCESS:
                    if nxt > offset:
                        offset = nxt
                        continue
                    break
                for m in msgs:
                    got[(qid, m.queue_offset)] = m.body
                offset = nxt
    return got


class SendLoad:
    """Producers sending ``body_size``-byte messages to ``topic`` until told to stop, keeping score:
    what was acknowledged ((queue id, queue offset) -> (body, CommitLog offset)), how many sends were
    refused with SERVICE_NOT_AVAILABLE (14, and the last remark), any other answer by code, sends
    not answered in time, and whether the broker went away (a connection that failed)."""

    def __init__(self, addr: str, topic: str, *, queues: int = 4, body_size: int = 2048) -> None:
        self.addr = addr
        self.topic = topic
        self.queues = queues
        self.body_size = body_size
        self.acked: dict[tuple[int, int], tuple[bytes, int]] = {}
        self.refused = 0
        self.refused_since_ok = 0
        self.refusal_remark = ""
        self.other: dict[int, int] = {}
        self.timeouts = 0
        self.broken = False

    async def producer(self, n: int, stop: trio.Event) -> None:
        from .codecs import ResponseCode
        from .codecs.message import decode_offset_msg_id
        from .remoting.errors import RemotingError, RemotingTimeoutError

        i = 0
        async with broker_client(self.addr) as c:
            while not stop.is_set():
                body = (b"p%d-%d-" % (n, i)).ljust(self.body_size, b"x")
                try:
                    r = await c.send(self.topic, body, queue_id=n % self.queues)
                except RemotingTimeoutError:
                    self.timeouts += 1  # a stalled broker: it may answer again
                    continue
                except (RemotingError, OSError, trio.BrokenResourceError, trio.ClosedResourceError):
                    self.broken = True
                    return
                assert r is not None
                if r.code == ResponseCode.SUCCESS:
                    fields = r.ext_fields or {}
                    phys = decode_offset_msg_id(fields["msgId"])[2]
                    self.acked[(int(fields["queueId"]), int(fields["queueOffset"]))] = (body, phys)
                    self.refused_since_ok = 0
                elif r.code == ResponseCode.SERVICE_NOT_AVAILABLE:
                    self.refused += 1
                    self.refused_since_ok += 1
                    self.refusal_remark = r.remark or ""
                    await trio.sleep(0.01)
                else:
                    self.other[r.code] = self.other.get(r.code, 0) + 1
                i += 1

    async def run_until(self, done: Callable[[], bool], timeout: float, producers: int = 8) -> bool:
        """Send until ``done()`` or the broker went away; False when ``timeout`` seconds passed first."""
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            for n in range(producers):
                nursery.start_soon(self.producer, n, stop)
            with trio.move_on_after(timeout) as scope:
                while not done() and not self.broken:
                    await trio.sleep(0.05)
            stop.set()
        return not scope.cancelled_caught

    def lost(self, got: dict[tuple[int, int], bytes], deleted: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Acknowledged messages not in ``got`` whose CommitLog offset no [start, end) of ``deleted`` covers."""
        return [
            key
            for key, (body, phys) in self.acked.items()
            if got.get(key) != body and not any(a <= phys < b for a, b in deleted)
        ]
