"""Client management and consumer offsets: HEART_BEAT, UNREGISTER_CLIENT, CHECK_CLIENT_CONFIG,
GET_CONSUMER_LIST_BY_GROUP, QUERY/UPDATE_CONSUMER_OFFSET, LOCK/UNLOCK_BATCH_MQ
(ClientManageProcessor, ConsumerManageProcessor, AdminBrokerProcessor's lock codes)."""

from __future__ import annotations

import gc
import logging
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import trio

from ...codecs import CodecError, RemotingCommand, ResponseCode
from ...codecs.bodies import (
    ConsumerData,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    SubscriptionData,
    UnlockBatchRequestBody,
)
from ...codecs.codes import MixAll, PermName, TopicSysFlag
from ...codecs.fastjson_steps import loads_steps
from ...codecs.headers import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from ...remoting import java_decode_header
from ..clients import ClientChannelInfo
from ..config_limits import body_refusal, heartbeat_refusal, refuse
from ..filter import check_client_config as filter_verdict
from ..responses import respond

if TYPE_CHECKING:
    from ..context import BrokerContext

log = logging.getLogger("rocketpy.broker")

_QUERY_NOT_FOUND_REMARK = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"


#: heartbeat bodies up to this size are decoded at once (a few ms at most); bigger ones in steps, between
#: which the other connections' requests run (the C JSON scanner would hold the event loop, and the GIL in
#: a worker thread as well, for all of a big one: 0.55 s for 14 MiB, and as long again to build the objects)
HEARTBEAT_DECODE_AT_ONCE = 64 * 1024
#: subscriptions built between two yields to the event loop
_SUBSCRIPTIONS_PER_STEP = 100


def _consumer_data_steps(raw: Any) -> Generator[None, None, ConsumerData]:
    """ConsumerData.from_json, its subscriptions built a few hundred at a time."""
    subs = raw.get("subscriptionDataSet") if isinstance(raw, dict) else None
    if not isinstance(subs, list):
        return ConsumerData.from_json(raw)
    data = ConsumerData.from_json({k: v for k, v in raw.items() if k != "subscriptionDataSet"})
    built: list[SubscriptionData] = []
    for i, sub in enumerate(subs):
        if i % _SUBSCRIPTIONS_PER_STEP == _SUBSCRIPTIONS_PER_STEP - 1:
            yield
        try:
            built.append(None if sub is None else SubscriptionData.from_json(sub))  # type: ignore[arg-type]
        except CodecError as exc:  # worded as the codec words it
            raise CodecError(f"ConsumerData.subscriptionDataSet: {exc}") from None
    data.subscription_data_set = built
    return data


def heartbeat_steps(body: bytes) -> Generator[None, None, HeartbeatData]:
    """HeartbeatData.decode in steps (sans-IO: the generator yields where its driver may let others run);
    the same data, and CodecError for the same bodies."""
    doc = yield from loads_steps(body, every=500)
    consumers = doc.get("consumerDataSet") if isinstance(doc, dict) else None
    if not isinstance(consumers, list):
        return HeartbeatData.from_json(doc)
    data = HeartbeatData.from_json({k: v for k, v in doc.items() if k != "consumerDataSet"})
    built: list[ConsumerData] = []
    for raw in consumers:
        try:
            built.append(None if raw is None else (yield from _consumer_data_steps(raw)))  # type: ignore[arg-type]
        except CodecError as exc:
            raise CodecError(f"HeartbeatData.consumerDataSet: {exc}") from None
    data.consumer_data_set = built
    return data


class _CollectorPause:
    """The cyclic collector off while big heartbeats are decoded. Their objects (tens of thousands for
    10,000 subscriptions) live across many steps, and each full collection they set off went through them
    all and every other connection's in one pass: 230 ms for four such heartbeats decoded side by side.
    Decoding makes no cycles; the broker's periodic scan collects the others' (heap.collect_cycles)."""

    def __init__(self) -> None:
        self.decoding = 0
        self.paused = False

    def __enter__(self) -> None:
        if self.decoding == 0 and gc.isenabled():
            gc.disable()
            self.paused = True
        self.decoding += 1

    def __exit__(self, *exc_info: object) -> None:
        self.decoding -= 1
        if self.decoding == 0 and self.paused:
            self.paused = False
            gc.enable()


_collector_pause = _CollectorPause()


async def decode_heartbeat(body: bytes) -> HeartbeatData:
    """The HEART_BEAT body, decoded at once when small, else in steps with the event loop's other tasks
    run between them."""
    if len(body) <= HEARTBEAT_DECODE_AT_ONCE:
        return HeartbeatData.decode(body)
    steps = heartbeat_steps(body)
    with _collector_pause:
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value
            await trio.sleep(0)


async def heart_beat(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """ClientManageProcessor.heartBeat, within the limits of :mod:`..config_limits` (a body over
    heartbeatMaxBodySize is refused undecoded; more groups or subscriptions than heartbeatMaxGroups or
    heartbeatMaxSubscriptions are refused before any is registered)."""
    broker = ctx.state
    refused = body_refusal(ctx, request)
    if refused is not None:
        return refused
    data = await decode_heartbeat(request.body or b"{}")
    if data.consumer_data_set is None or data.producer_data_set is None:
        # "consumerDataSet":null: Java's loop over it fails the heartbeat (NullPointerException)
        raise ValueError("HeartbeatData holds a null consumerDataSet or producerDataSet")
    if any(d is None for d in (*data.consumer_data_set, *data.producer_data_set)):
        # Java's loops dereference each entry: a null one fails the heartbeat (NullPointerException)
        raise ValueError("HeartbeatData holds a null ConsumerData or ProducerData")
    cause = heartbeat_refusal(broker.config, data)
    if cause is not None:
        return refuse(ctx, request, cause)
    conn = ctx.connection
    cid = data.client_id or ""
    for cd in data.consumer_data_set:
        group = cd.group_name or ""
        sub_cfg = broker.groups.find(group)
        notify = True
        if sub_cfg is not None:
            notify = sub_cfg.notify_consumer_ids_changed_enable
            sys_flag = TopicSysFlag.build_sys_flag(False, True) if cd.unit_mode else 0
            broker.topics.create_in_send_back(
                MixAll.get_retry_topic(group),
                sub_cfg.retry_queue_nums,
                int(PermName.PERM_WRITE | PermName.PERM_READ),
                sys_flag,
            )
        info = ClientChannelInfo(conn, cid, request.language, request.version)
        changed = broker.consumers.register(
            group,
            info,
            cd.consume_type,
            cd.message_model,
            cd.consume_from_where,
            list(cd.subscription_data_set),
            notify,
        )
        if changed:
            log.info("registerConsumer info changed %s %s", group, cid)
    for pd in data.producer_data_set:
        broker.producers.register(pd.group_name or "", ClientChannelInfo(conn, cid, request.language, request.version))
    return respond(request)


def unregister_client(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, UnregisterClientRequestHeader)
    conn = ctx.connection
    if h.producer_group:
        broker.producers.unregister(h.producer_group, conn)
    if h.consumer_group:
        sub_cfg = broker.groups.find(h.consumer_group)
        notify = sub_cfg.notify_consumer_ids_changed_enable if sub_cfg is not None else True
        broker.consumers.unregister(h.consumer_group, conn, notify)
    return respond(request, header={})


def check_client_config(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    refused = body_refusal(ctx, request)
    if refused is not None:
        return refused
    from ...codecs.bodies import CheckClientRequestBody

    body = CheckClientRequestBody.decode(request.body or b"{}")
    code, remark = filter_verdict(body.subscription_data, broker.config.enable_property_filter)
    if code != ResponseCode.SUCCESS:
        return respond(request, code, remark)
    return respond(request)


def get_consumer_list_by_group(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, GetConsumerListByGroupRequestHeader)
    info = broker.consumers.get(h.consumer_group or "")
    if info is not None:
        ids = info.client_ids
        if ids:
            body = GetConsumerListByGroupResponseBody(consumer_id_list=ids).encode()
            return respond(request, header={}, body=body)
    return respond(request, ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {h.consumer_group}", header={})


def query_consumer_offset(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, QueryConsumerOffsetRequestHeader)  # numbers checked by the dispatcher
    group, topic, queue_id = h.consumer_group or "", h.topic or "", h.queue_id
    offset = broker.offsets.query(group, topic, queue_id)
    if offset >= 0:
        return respond(request, header={"offset": str(offset)})
    # a new group starts at 0 while the queue's first message is still in memory
    store = broker.store
    min_offset = store.get_min_offset_in_queue(topic, queue_id)
    if min_offset <= 0 and not store.check_in_disk_by_consume_offset(topic, queue_id, 0):
        return respond(request, header={"offset": "0"})
    return respond(request, ResponseCode.QUERY_NOT_FOUND, _QUERY_NOT_FOUND_REMARK, header={})


def update_consumer_offset(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """Commit an offset; the dispatcher has refused numbers beyond their Java type. An offset for a
    group this broker does not have and cannot auto-create (an illegal name, or autoCreateSubscriptionGroup
    off), a topic it does not have, or a queue the topic does not have is refused, as Java 5's
    ConsumerManageProcessor refuses the group and topic: 4.9.8 stored and persisted any of them, so a
    stream of random names grew the table, its stats and consumerOffset.json without bound."""
    broker = ctx.state
    h = java_decode_header(request, UpdateConsumerOffsetRequestHeader)
    group = h.consumer_group or ""
    if broker.groups.find(group) is None:
        return respond(request, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group {group} not exist!", header={})
    topic = h.topic or ""
    tc = broker.topics.get(topic)
    if tc is None:
        return respond(request, ResponseCode.TOPIC_NOT_EXIST, f"Topic {topic} not exist!", header={})
    queues = max(tc.read_queue_nums, tc.write_queue_nums)
    if not 0 <= h.queue_id < queues:
        remark = f"queueId[{h.queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{queues}]"
        return respond(request, ResponseCode.SYSTEM_ERROR, remark, header={})
    broker.offsets.commit(group, topic, h.queue_id, h.commit_offset)
    return respond(request, header={})


def _check_queues(mqs: Any) -> None:
    # a null queue makes Java's ConcurrentHashMap throw; it must not become a lock table key. A null set
    # fails Java's loop over it the same way (NullPointerException)
    if mqs is None:
        raise ValueError("mqSet is null")
    if any(mq is None for mq in mqs):
        raise ValueError("mqSet holds a null MessageQueue")


def lock_batch_mq(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    refused = body_refusal(ctx, request)
    if refused is not None:
        return refused
    body = LockBatchRequestBody.decode(request.body or b"{}")
    _check_queues(body.mq_set)
    locked = broker.locks.try_lock_batch(body.consumer_group or "", body.mq_set, body.client_id or "")
    return respond(request, body=LockBatchResponseBody(lock_ok_mq_set=list(locked)).encode())


def unlock_batch_mq(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    refused = body_refusal(ctx, request)
    if refused is not None:
        return refused
    body = UnlockBatchRequestBody.decode(request.body or b"{}")
    _check_queues(body.mq_set)
    broker.locks.unlock_batch(body.consumer_group or "", body.mq_set, body.client_id or "")
    return respond(request)
