"""The rest of AdminBrokerProcessor's codes: producer table, consumer status, time spans,
correction offsets, broker-wide consume stats, stats items, consume-queue dumps,
system topics, store maintenance and RESUME_CHECK_HALF_MESSAGE."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ...clock import now_ms as _now_ms
from ...codecs import RemotingCommand, ResponseCode
from ...codecs.bodies import (
    BrokerStatsData,
    BrokerStatsItem,
    ConsumeQueueData,
    ConsumeStats,
    ConsumeStatsList,
    GetConsumerStatusBody,
    MessageQueue,
    OffsetWrapper,
    ProducerInfo,
    ProducerTableInfo,
    QueryConsumeQueueResponseBody,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    QueueTimeSpan,
    TopicList,
)
from ...codecs.bodies.store_config import ConsumerFilterData as ConsumerFilterDataBody
from ...codecs.codes import MessageConst, MixAll, MQVersion, RequestCode, version_desc
from ...codecs.headers import (
    GetConsumerStatusRequestHeader,
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    ResumeCheckHalfMessageRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from ...codecs.message import decode_offset_msg_id
from ...codecs.store_records import CONSUME_QUEUE_UNIT, CQ_STORE_UNIT_SIZE
from ...javacompat.hashmap import hashmap_order
from ...remoting import java_decode_header
from ...store.types import MessageExtBrokerInner
from ..filter import ExpressionFilter
from ..responses import error, respond

if TYPE_CHECKING:
    from ..context import BrokerContext

log = logging.getLogger("rocketpy.broker")


def get_all_producer_info(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    data: dict[str, list[ProducerInfo]] = {}
    for group in hashmap_order(list(broker.producers.groups)):
        data[group] = [
            ProducerInfo(
                client_id=info.client_id,
                remote_ip="/" + info.addr,
                language=info.language,
                version=info.version,
                last_update_timestamp=info.last_update,
            )
            for info in broker.producers.groups[group].values()
        ]
    return respond(request, body=ProducerTableInfo(data=data).encode())


async def get_consumer_status(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (Broker2Client.getConsumeStatus): ask each
    consumer of the group (or the one at ``clientAddr``) for its offsets of the topic."""
    broker = ctx.state
    h = java_decode_header(request, GetConsumerStatusRequestHeader)
    topic, group, origin = h.topic or "", h.group or "", h.client_addr
    log.info("[get-consumer-status] get consumer status by %s. topic=%s, group=%s", ctx.remote_addr, topic, group)
    info = broker.consumers.get(group)
    if info is None or not info.channels:
        return error(request, ResponseCode.SYSTEM_ERROR, f"No Any Consumer online in the consumer group: [{group}]")
    table: dict[str, dict[MessageQueue, int]] = {}
    for ch in list(info.channels.values()):
        if ch.version < MQVersion.V3_0_7_SNAPSHOT:
            return error(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"the client does not support this feature. version={version_desc(ch.version)}",
            )
        if origin and origin != ch.client_id:
            continue
        ask = RemotingCommand.request(
            RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, GetConsumerStatusRequestHeader(topic=topic, group=group)
        )
        try:
            answer = await ch.channel.invoke(ask, 5.0)
            if answer.code == ResponseCode.SUCCESS and answer.body is not None:
                table[ch.client_id] = dict(GetConsumerStatusBody.decode(answer.body).message_queue_table)
        except Exception as exc:
            log.error(
                "[get-consumer-status] get consumer status exception. topic=%s, group=%s, error=%s", topic, group, exc
            )
        if origin:
            break
    return respond(request, body=GetConsumerStatusBody(consumer_table=table).encode())


def query_consume_time_span(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, QueryConsumeTimeSpanRequestHeader)
    topic = h.topic or ""
    tc = broker.topics.get(topic)
    if tc is None:
        return error(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
    store = broker.store
    spans = []
    for qid in range(tc.write_queue_nums):
        mq = MessageQueue(topic=topic, broker_name=broker.config.broker_name, queue_id=qid)
        min_time = store.get_earliest_message_time(topic, qid)
        max_offset = store.get_max_offset_in_queue(topic, qid)
        max_time = store.get_message_store_timestamp(topic, qid, max_offset - 1)
        consumer_offset = broker.offsets.query(h.group or "", topic, qid)
        consume_time = (
            store.get_message_store_timestamp(topic, qid, consumer_offset - 1) if consumer_offset > 0 else min_time
        )
        span = QueueTimeSpan(
            message_queue=mq, min_time_stamp=min_time, max_time_stamp=max_time, consume_time_stamp=consume_time
        )
        if consumer_offset < max_offset:
            span.delay_time = _now_ms() - store.get_message_store_timestamp(topic, qid, consumer_offset)
        spans.append(span)
    return respond(request, body=QueryConsumeTimeSpanBody(consume_time_span_set=spans).encode())


def get_system_topic_list_from_broker(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    # TopicValidator's set: the fixed system topics and those the topic manager added (cluster, broker name, ...)
    topics = hashmap_order(sorted(MixAll.SYSTEM_TOPIC_SET | set(ctx.state.topics.system_topics)))
    return respond(request, body=TopicList(topic_list=topics).encode())


def clean_expired_consume_queue(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    log.warning("invoke cleanExpiredConsumeQueue start.")
    ctx.state.store.clean_expired_consumer_queue()
    log.warning("invoke cleanExpiredConsumeQueue end.")
    return respond(request)


def delete_expired_commit_log(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """executeDeleteFilesManually: expired CommitLog files go now, whatever deleteWhen says."""
    log.warning("invoke deleteExpiredCommitLog start.")
    ctx.state.store.clean_expired(force=True)
    log.warning("invoke deleteExpiredCommitLog end.")
    return respond(request)


def clean_unused_topic(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    log.warning("invoke cleanUnusedTopic start.")
    broker.store.clean_unused_topic(broker.topics.table.keys())
    log.warning("invoke cleanUnusedTopic end.")
    return respond(request)


def query_correction_offset(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """The smallest committed offset per queue over all groups but ``filterGroups``;
    Long.MAX_VALUE where that exceeds ``compareGroup``'s offset.

    Java 4.9.8 also deletes the filter groups' offsets from its offset table while
    computing this (it iterates the table's live key set); that is not reproduced."""
    broker = ctx.state
    h = java_decode_header(request, QueryCorrectionOffsetHeader)
    topic = h.topic or ""
    skip = set(h.filter_groups.split(",")) if h.filter_groups and h.filter_groups.strip() else set()
    correction: dict[int, int] = {}
    for key, offsets in broker.offsets.table.items():
        t, _, group = key.partition("@")
        if t != topic or group in skip:
            continue
        for qid, off in offsets.items():
            if off >= broker.store.get_min_offset_in_queue(topic, qid):
                correction[qid] = min(off, correction.get(qid, off))
    if h.compare_group not in skip:
        for qid, off in broker.offsets.offsets_of(h.compare_group or "", topic).items():
            if qid in correction and correction[qid] > off:
                correction[qid] = (1 << 63) - 1
    ordered = {q: correction[q] for q in hashmap_order(list(correction))}
    return respond(request, body=QueryCorrectionOffsetBody(correction_offsets=ordered).encode())


def view_broker_stats_data(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, ViewBrokerStatsDataRequestHeader)
    item = broker.stats_manager.get(h.stats_name, h.stats_key)
    if item is None:
        return error(request, ResponseCode.SYSTEM_ERROR, f"The stats <{h.stats_name}> <{h.stats_key}> not exist")

    def view(snap: Any) -> BrokerStatsItem:
        return BrokerStatsItem(sum=snap.sum, tps=snap.tps, avgpt=snap.avgpt)

    data = BrokerStatsData(
        stats_minute=view(item.in_minute()), stats_hour=view(item.in_hour()), stats_day=view(item.in_day())
    )
    return respond(request, body=data.encode())


def get_broker_consume_stats(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """GET_BROKER_CONSUME_STATS (fetchAllConsumeStatsInBroker): every subscription group's
    lag on every topic it has offsets for."""
    broker = ctx.state
    h = java_decode_header(request, GetConsumeStatsInBrokerHeader)
    store = broker.store
    body = ConsumeStatsList(broker_addr=broker.broker_addr)

    def groups() -> Iterator[dict[str, list[ConsumeStats]]]:
        # one group's stats at a time: the body is written as they come (encode_streamed), so what the
        # broker holds at once is one group's, not every group's on every topic
        for group in list(broker.groups.table):
            per_group: list[ConsumeStats] = []
            info = broker.consumers.get(group)
            for topic in broker.offsets.topics_of_group(group):
                tc = broker.topics.get(topic)
                if tc is None:
                    log.warning("consumeStats, topic config not exist, %s", topic)
                    continue
                if h.is_order and not tc.order:
                    continue
                if info is not None and info.subscriptions and topic not in info.subscriptions:
                    log.warning("consumeStats, the consumer group[%s], topic[%s] not exist", group, topic)
                    continue
                stats = ConsumeStats()
                for qid in range(tc.write_queue_nums):
                    mq = MessageQueue(topic=topic, broker_name=broker.config.broker_name, queue_id=qid)
                    broker_off = max(0, store.get_max_offset_in_queue(topic, qid))
                    consumer_off = max(0, broker.offsets.query(group, topic, qid))
                    w = OffsetWrapper(broker_offset=broker_off, consumer_offset=consumer_off)
                    if consumer_off - 1 >= 0:
                        ts = store.get_message_store_timestamp(topic, qid, consumer_off - 1)
                        if ts > 0:
                            w.last_timestamp = ts
                    stats.offset_table[mq] = w
                stats.consume_tps = broker.stats_manager.tps_group_get_nums(group, topic)
                body.total_diff += stats.total_diff()
                per_group.append(stats)
            yield {group: per_group}

    return respond(request, body=body.encode_streamed("consume_stats_list", groups()))


def query_consume_queue(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """QUERY_CONSUME_QUEUE: ``count`` raw entries of a consume queue from ``index``."""
    broker = ctx.state
    h = java_decode_header(request, QueryConsumeQueueRequestHeader)
    topic, qid = h.topic or "", h.queue_id
    cq = broker.store.find_consume_queue(topic, qid)
    if cq is None:
        return error(request, ResponseCode.SYSTEM_ERROR, f"{qid}@{topic} is not exist!")
    body = QueryConsumeQueueResponseBody(max_queue_index=cq.max_offset_in_queue, min_queue_index=cq.min_offset_in_queue)
    if h.consumer_group is not None:
        sub = broker.consumers.find_subscription(h.consumer_group, topic)
        body.subscription_data = sub
        if sub is None:
            body.filter_data = f"{h.consumer_group}@{topic} is not online!"
        else:
            data = broker.filters.get(topic, h.consumer_group)
            body.filter_data = _filter_data_json(data)
            ExpressionFilter(data)  # Java evaluates it only on consume-queue ext units, which are not kept
    units = cq.read_units(h.index, h.count * CQ_STORE_UNIT_SIZE) if h.count > 0 else b""
    if units is None:
        return respond(request, remark=f"Index {h.index} of {qid}@{topic} is not exist!")
    end = min(len(units), h.count * CQ_STORE_UNIT_SIZE)
    end -= end % CQ_STORE_UNIT_SIZE
    body.queue_data = [
        ConsumeQueueData(physic_offset=phy, physic_size=size, tags_code=tags)
        for phy, size, tags in CONSUME_QUEUE_UNIT.iter_unpack(memoryview(units)[:end])
    ]
    return respond(request, body=body.encode())


def _filter_data_json(data: Any) -> str:
    if data is None:
        return "null"
    doc = ConsumerFilterDataBody(
        consumer_group=data.consumer_group,
        topic=data.topic,
        expression=data.expression,
        expression_type=data.expression_type,
        born_time=data.born_time,
        dead_time=data.dead_time,
        client_version=data.client_version,
    )
    return doc.encode(pretty=True).decode("utf-8")


async def resume_check_half_message(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """Put a half message back into RMQ_SYS_TRANS_HALF_TOPIC with TRANSACTION_CHECK_TIMES=0."""
    broker = ctx.state
    h = java_decode_header(request, ResumeCheckHalfMessageRequestHeader)
    try:
        _ip, _port, offset = decode_offset_msg_id(h.msg_id or "")
        msg = broker.store.look_message_by_offset(offset)
        if msg is None:
            raise LookupError(offset)
        props = dict(msg.properties)
        props[MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES] = "0"
        from ..transaction import _props_string

        stored = _props_string(props)
        props[MessageConst.PROPERTY_WAIT_STORE_MSG_OK] = "false"  # in the map only, as Java's setter does
        inner = MessageExtBrokerInner(
            topic=MixAll.RMQ_SYS_TRANS_HALF_TOPIC,
            body=msg.body,
            flag=msg.flag,
            properties=props,
            properties_string=stored,
            queue_id=0,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_host=msg.store_host,
            reconsume_times=msg.reconsume_times,
        )
        result = await broker.put_message(inner)
    except Exception as exc:
        log.error("Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC: %s", exc)
        return error(
            request,
            ResponseCode.SYSTEM_ERROR,
            "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC.",
        )
    if not result.is_ok:
        log.error("Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
        return error(request, ResponseCode.SYSTEM_ERROR, "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
    log.info("Put message back to RMQ_SYS_TRANS_HALF_TOPIC. real topic=%s", props.get(MessageConst.PROPERTY_REAL_TOPIC))
    return respond(request)
