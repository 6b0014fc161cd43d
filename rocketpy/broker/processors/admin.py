"""Administration codes (AdminBrokerProcessor): topics, subscription groups, stats,
connections, config, and the requests relayed to a consumer client."""

from __future__ import annotations

import hmac
import logging
from typing import TYPE_CHECKING, Any

from ...clock import now_ms
from ...codecs import RemotingCommand, ResponseCode
from ...codecs.bodies import (
    Connection,
    ConsumerConnection,
    ConsumeStats,
    DelayOffsetSerializeWrapper,
    GroupList,
    KVTable,
    MessageQueue,
    MessageQueueForC,
    OffsetWrapper,
    ProducerConnection,
    ResetOffsetBody,
    ResetOffsetBodyForC,
    SubscriptionGroupConfig,
    TopicOffset,
    TopicStatsTable,
)
from ...codecs.codes import LanguageCode, MixAll, MQVersion, RequestCode, TopicFilterType, version_desc
from ...codecs.headers import (
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    ResetOffsetRequestHeader,
)
from ...codecs.message import decode_offset_msg_id
from ...remoting import RemotingTimeoutError, java_decode_header
from ...remoting.dispatch import describe_exception, one_line
from ..config_limits import body_refusal
from ..groups import GROUP_MAX_LENGTH, legal_group_name
from ..responses import NOT_SET_REMARK, error, respond
from ..store_stats import disk_info, human_bytes
from ..topics import new_topic
from .send import validate_topic

if TYPE_CHECKING:
    from ..context import BrokerContext
    from ..controller import BrokerController

log = logging.getLogger("rocketpy.broker")


def _check_topic_name(ctx: BrokerContext, request: RemotingCommand, topic: str) -> RemotingCommand | None:
    bad = validate_topic(topic)
    if bad is not None:
        return error(request, ResponseCode.SYSTEM_ERROR, bad)
    # this broker's names count too: `updateTopic -t DefaultCluster` rewrote the 16-queue cluster topic
    if ctx.state.topics.is_system_topic(topic):
        return error(request, ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
    return None


#: the most queues a topic may have here. Java sets no bound, and every per-queue loop (consume stats,
#: topic stats, offsets) then runs that many times: one UPDATE_AND_CREATE_TOPIC with writeQueueNums
#: 2147483647 (the 30-minute fuzz run) held the broker's event loop and took 3 GiB a minute until killed
QUEUE_NUMS_MAX = 1024


def check_queue_nums(name: str, value: int | None) -> None:
    """ValueError (answered SYSTEM_ERROR) unless ``value`` is a queue count this broker takes."""
    if value is not None and not 0 <= value <= QUEUE_NUMS_MAX:
        raise ValueError(f"{name} {value} is out of range [0, {QUEUE_NUMS_MAX}]")


async def update_and_create_topic(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, CreateTopicRequestHeader)
    topic = h.topic or ""
    err = _check_topic_name(ctx, request, topic)
    if err is not None:
        return err
    for name, value in (("readQueueNums", h.read_queue_nums), ("writeQueueNums", h.write_queue_nums), ("perm", h.perm)):
        if value is None:
            # Java unboxes these Integers: a missing or unparsable one fails the request, no topic is made
            raise ValueError(f"the custom field <{name}> is null")
    for name, value in (("readQueueNums", h.read_queue_nums), ("writeQueueNums", h.write_queue_nums)):
        check_queue_nums(name, value)
    tc = new_topic(topic, h.read_queue_nums, h.write_queue_nums, h.perm, h.topic_sys_flag or 0)
    try:
        tc.topic_filter_type = TopicFilterType[h.topic_filter_type or "SINGLE_TAG"]
    except KeyError:
        tc.topic_filter_type = TopicFilterType.SINGLE_TAG
    tc.order = bool(h.order)
    broker.topics.update(tc)
    await broker.config_writer.write_dirty()  # answered once on disk, as Java's handler does
    broker.register_soon()
    # Java leaves the default remark of createResponseCommand(null) on this success
    return respond(request, remark=NOT_SET_REMARK)


async def delete_topic(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, DeleteTopicRequestHeader)
    topic = h.topic or ""
    err = _check_topic_name(ctx, request, topic)
    if err is not None:
        return err
    broker.topics.delete(topic)
    await broker.config_writer.write_dirty()
    broker.store.clean_unused_topic(broker.topics.table.keys())
    return respond(request)


def get_all_topic_config(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    # written from the live table: nothing awaits between here and the answer, so it cannot change meanwhile
    return respond(request, header={}, body=broker.topics.encode())


async def update_and_create_subscription_group(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    refused = body_refusal(ctx, request)
    if refused is not None:
        return refused
    if request.body:
        cfg = SubscriptionGroupConfig.decode(request.body)
        if cfg.group_name is None:
            # Java's table.put(null, ...) throws; a nameless group must not reach subscriptionGroup.json
            raise ValueError("SubscriptionGroupConfig has no groupName")
        check_queue_nums("retryQueueNums", cfg.retry_queue_nums)  # the size of its retry topic
        broker.groups.update(cfg)
        await broker.config_writer.write_dirty()
    return respond(request)


async def delete_subscription_group(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, DeleteSubscriptionGroupRequestHeader)
    broker.groups.delete(h.group_name or "")
    if h.remove_offset:
        broker.offsets.remove_group(h.group_name or "")
    await broker.config_writer.write_dirty()
    return respond(request)


def get_all_subscription_group(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    return respond(request, body=ctx.state.groups.encode())  # from the live table, as get_all_topic_config


def clone_group_offset(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """Java's cloneGroupOffset, less clones into a name no group can have: Java files an empty or illegal
    destination under ``topic@dest`` like any other, and since its removeOffset splits keys on "@", a key
    with an empty group or an "@" in it is never removed again (deleteSubGroup cannot name it)."""
    broker = ctx.state
    h = java_decode_header(request, CloneGroupOffsetRequestHeader)
    src, dest = h.src_group or "", h.dest_group or ""
    if not legal_group_name(dest):
        remark = (f"the destination group[{dest}] is not a legal group name: 1 to {GROUP_MAX_LENGTH} characters"
                  " of ^[%|a-zA-Z0-9_-]+$")
        return error(request, ResponseCode.SYSTEM_ERROR, remark)
    topics = {h.topic} if (h.topic or "").strip() else broker.offsets.topics_of_group(src)
    info = broker.consumers.get(src)
    for topic in topics:
        if broker.topics.get(topic) is None:
            log.warning("[cloneGroupOffset], topic config not exist, %s", topic)
            continue
        if not h.offline and info is not None and info.subscriptions and topic not in info.subscriptions:
            continue
        offsets = broker.offsets.offsets_of(src, topic)
        if offsets:
            for qid, off in offsets.items():
                broker.offsets.commit(dest, topic, qid, off)
    return respond(request)


def get_all_consumer_offset(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    return respond(request, body=ctx.state.offsets.encode())  # from the live table, as get_all_topic_config


def get_all_delay_offset(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    return respond(request, body=DelayOffsetSerializeWrapper(offset_table=dict(broker.schedule.offsets)).encode())


def get_broker_config(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    configuration = ctx.state.configuration
    version = configuration.data_version.encode().decode()
    return respond(request, header={"version": version}, body=configuration.all_configs_text().encode())


async def update_broker_config(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """AdminBrokerProcessor.updateBrokerConfig: the body read as Properties.load reads it, then any key
    but those of the black list (:func:`..configuration.black_list`: Java's, and the paths, bind addresses,
    ACL file, credentials and TLS keys of ``REMOTE_REFUSED_KEYS``), and no key or value with a line
    break; the whole request refused with NO_PERMISSION and Java's remark if one is named. Keys the
    configuration does not have are ignored (mergeIfExist). Who may call it is the ACL hook's business (an
    admin account, when aclEnable=true); a broker with ``adminCredential`` set also wants that credential
    in the request's ``adminCredential`` ext field. An update is persisted (the whole configuration, to the
    file the broker was started with, escaped) before the answer, as Java does; a failed write is logged
    and still answered SUCCESS, as Java's is."""
    broker = ctx.state
    secret = broker.config.admin_credential
    given = (request.ext_fields or {}).get("adminCredential", "")
    if secret and not hmac.compare_digest(secret.encode(), given.encode()):
        return error(request, ResponseCode.NO_PERMISSION,
                     "this broker has an adminCredential: send it as the adminCredential ext field")
    log.info("updateBrokerConfig called by %s", ctx.connection.remote_addr)
    from ...javacompat import properties
    from ...javacompat.properties import ConfigError
    from ..configuration import black_list, refused_key

    if not request.body:  # null in Java (an empty body is not sent): nothing changed, nothing written
        return respond(request)
    refused = body_refusal(ctx, request)
    if refused is not None:
        return refused
    try:
        changes = properties.parse_update(request.body)
    except properties.PropertiesError:
        log.error("string2Properties error")  # Java's line and answer (Properties.load threw)
        return error(request, ResponseCode.SYSTEM_ERROR, "string2Properties error")
    key = refused_key(changes, black_list(broker.config))
    if key is not None:
        log.warning("updateBrokerConfig refused, %s in the black list or with a line break (%d keys)",
                    one_line(repr(key), 200), len(changes))
        return error(request, ResponseCode.NO_PERMISSION, "Can not update config in black list.")
    log.info("updateBrokerConfig, new config: [%s] client: %s", one_line(repr(changes)),
             ctx.connection.remote_addr)
    configuration = broker.configuration
    async with configuration.lock:
        try:
            configuration.update(changes)
        except ConfigError as exc:
            return error(request, ResponseCode.SYSTEM_ERROR, f"bad config value: {exc}")
        await configuration.persist()
    if "brokerPermission" in changes:
        broker.topics.data_version.next_version()
        broker.register_soon()
    return respond(request)


def _dispatch_behind_bytes(broker: Any) -> int:
    """DefaultMessageStore.dispatchBehindBytes: CommitLog bytes the ConsumeQueues do not cover yet. A master
    dispatches each put as it is made (the send lane's before any other request is handled); a slave
    dispatches what replication brought as whole records arrive, a DLedger store what is committed."""
    store = broker.store
    behind = store.dispatch_behind_bytes()
    client = broker.ha.client
    if client is not None and client.reput_offset >= 0:
        behind = max(behind, store.max_phy_offset - client.reput_offset)
    return max(0, behind)


def get_broker_runtime_info(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """AdminBrokerProcessor.prepareRuntimeInfo with DefaultMessageStore.getRuntimeInfo and
    StoreStatsService.getRuntimeInfo: the same keys, the same formats (mqadmin brokerStatus, the exporter)."""
    broker = ctx.state
    store = broker.store
    up = max(0, now_ms() - broker.boot_ms) // 1000
    props = broker.config.props
    table = {
        "brokerVersionDesc": version_desc(int(MQVersion.V4_9_8)),
        "brokerVersion": str(int(MQVersion.V4_9_8)),
        "bootTimestamp": str(broker.boot_ms),
        "runtime": f"[ {up // 86400} days, {up % 86400 // 3600} hours, {up % 3600 // 60} minutes, {up % 60} seconds ]",
        "commitLogMinOffset": str(max(store.min_phy_offset, 0)),
        "commitLogMaxOffset": str(store.max_phy_offset),
        "earliestMessageTimeStamp": str(store.get_earliest_message_time()),
        "dispatchBehindBytes": str(_dispatch_behind_bytes(broker)),
        "remainHowManyDataToFlush": human_bytes(max(0, store.max_phy_offset - store.flushed_offset)),
        "startAcceptSendRequestTimeStamp": props.get("startAcceptSendRequestTimeStamp", "0"),
        "sendThreadPoolQueueCapacity": props.get("sendThreadPoolQueueCapacity", "10000"),
        "pullThreadPoolQueueCapacity": props.get("pullThreadPoolQueueCapacity", "100000"),
        "queryThreadPoolQueueCapacity": props.get("queryThreadPoolQueueCapacity", "20000"),
        "EndTransactionThreadPoolQueueCapacity": props.get("endTransactionPoolQueueCapacity", "100000"),
        # CommitLog.lockTimeMills: how long the put now in progress has held the put lock. Puts run on the event
        # loop, as this handler does, so none is ever in progress here: a put that stalls stalls the loop, and
        # shows as the queues' head wait times (store_stats.LoopWait) instead
        "pageCacheLockTimeMills": "0",
        # no transient store pool: Java answers Integer.MAX_VALUE then
        "remainTransientStoreBufferNumbs": "2147483647",
    }
    table.update(broker.store_stats.runtime_info(broker))
    sc = broker.config.store
    table.update(disk_info(sc.store_path_root_dir, sc.commit_log_dir, sc.consume_queue_dir))
    for level, offset in sorted(broker.schedule.offsets.items()):
        table[f"scheduleMessageOffset_{level}"] = (
            f"{offset},{store.get_max_offset_in_queue(MixAll.RMQ_SYS_SCHEDULE_TOPIC, level - 1)}"
        )
    return respond(request, body=KVTable(table=table).encode())


def get_consume_stats(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, GetConsumeStatsRequestHeader)
    group = h.consumer_group or ""
    topics = broker.offsets.topics_of_group(group) if not (h.topic or "").strip() else {h.topic}
    stats = ConsumeStats()
    info = broker.consumers.get(group)
    for topic in topics:
        tc = broker.topics.get(topic)
        if tc is None:
            continue
        if info is not None and info.subscriptions and topic not in info.subscriptions:
            continue
        for qid in range(tc.read_queue_nums):
            mq = MessageQueue(topic=topic, broker_name=broker.config.broker_name, queue_id=qid)
            broker_off = max(0, broker.store.get_max_offset_in_queue(topic, qid))
            consumer_off = max(0, broker.offsets.query(group, topic, qid))
            w = OffsetWrapper(broker_offset=broker_off, consumer_offset=consumer_off)
            if consumer_off - 1 >= 0:
                ts = broker.store.get_message_store_timestamp(topic, qid, consumer_off - 1)
                if ts > 0:
                    w.last_timestamp = ts
            stats.offset_table[mq] = w
        stats.consume_tps += broker.stats_manager.tps_group_get_nums(group, topic)  # of every topic, as Java's
    return respond(request, body=stats.encode())


def _connection(info: Any) -> Connection:
    return Connection(client_id=info.client_id, client_addr=info.addr, language=info.language, version=info.version)


def get_consumer_connection_list(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, GetConsumerConnectionListRequestHeader)
    info = broker.consumers.get(h.consumer_group or "")
    if info is None:
        return error(request, ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{h.consumer_group}] not online")
    body = ConsumerConnection(
        connection_set=[_connection(c) for c in info.channels.values()],
        subscription_table=dict(info.subscriptions),
        consume_type=info.consume_type,
        message_model=info.message_model,
        consume_from_where=info.consume_from_where,
    )
    return respond(request, body=body.encode())


def get_producer_connection_list(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, GetProducerConnectionListRequestHeader)
    table = broker.producers.groups.get(h.producer_group or "")
    if table is None:
        return error(request, ResponseCode.SYSTEM_ERROR, f"the producer group[{h.producer_group}] not exist")
    body = ProducerConnection(connection_set=[_connection(c) for c in table.values()])
    return respond(request, body=body.encode())


def get_topic_stats_info(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, GetTopicStatsInfoRequestHeader)
    topic = h.topic or ""
    tc = broker.topics.get(topic)
    if tc is None:
        return error(request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
    stats = TopicStatsTable()
    for qid in range(tc.write_queue_nums):
        mq = MessageQueue(topic=topic, broker_name=broker.config.broker_name, queue_id=qid)
        lo = max(0, broker.store.get_min_offset_in_queue(topic, qid))
        hi = max(0, broker.store.get_max_offset_in_queue(topic, qid))
        ts = broker.store.get_message_store_timestamp(topic, qid, hi - 1) if hi > 0 else 0
        stats.offset_table[mq] = TopicOffset(min_offset=lo, max_offset=hi, last_update_timestamp=ts)
    return respond(request, body=stats.encode())


def query_topic_consume_by_who(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, QueryTopicConsumeByWhoRequestHeader)
    groups = set(broker.consumers.groups_of_topic(h.topic or "")) | broker.offsets.groups_of_topic(h.topic or "")
    return respond(request, body=GroupList(group_list=sorted(groups)).encode())


async def _call_consumer(
    broker: BrokerController, code: int, request: RemotingCommand, group: str, client_id: str
) -> RemotingCommand:
    info = broker.consumers.get(group)
    ch = info.find_by_client_id(client_id) if info is not None else None
    if ch is None:
        return error(request, ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
    if ch.version < MQVersion.V3_1_8_SNAPSHOT:
        return error(
            request,
            ResponseCode.SYSTEM_ERROR,
            f"The Consumer <{client_id}> Version <{version_desc(ch.version)}> too low to finish, please "
            "upgrade it to V3_1_8_SNAPSHOT",
        )
    relay = RemotingCommand(code=code, ext_fields=dict(request.ext_fields or {}), body=request.body)
    try:
        answer = await ch.channel.invoke(relay, 10.0)
    except RemotingTimeoutError as exc:
        return error(
            request,
            ResponseCode.CONSUME_MSG_TIMEOUT,
            f"consumer <{group}> <{client_id}> Timeout: {describe_exception(exc)}",
        )
    except Exception as exc:
        return error(
            request,
            ResponseCode.SYSTEM_ERROR,
            f"invoke consumer <{group}> <{client_id}> Exception: {describe_exception(exc)}",
        )
    answer.opaque = request.opaque
    return answer


async def get_consumer_running_info(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    h = java_decode_header(request, GetConsumerRunningInfoRequestHeader)
    return await _call_consumer(
        ctx.state, RequestCode.GET_CONSUMER_RUNNING_INFO, request, h.consumer_group or "", h.client_id or ""
    )


async def consume_message_directly(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, ConsumeMessageDirectlyResultRequestHeader)
    ext = dict(request.ext_fields or {})
    ext["brokerName"] = broker.config.broker_name
    body = request.body
    try:
        _ip, _port, offset = decode_offset_msg_id(h.msg_id or "")
        body = broker.store.select_one_message_by_offset(offset) or body
    except Exception:
        pass
    relay = RemotingCommand(
        code=request.code, ext_fields=ext, body=body, opaque=request.opaque, serialize_type=request.serialize_type
    )
    return await _call_consumer(
        broker, RequestCode.CONSUME_MESSAGE_DIRECTLY, relay, h.consumer_group or "", h.client_id or ""
    )


async def invoke_broker_to_reset_offset(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    """Broker2Client.resetOffset: new offsets by timestamp, pushed oneway to every consumer of the group."""
    broker = ctx.state
    h = java_decode_header(request, ResetOffsetRequestHeader)
    topic, group = h.topic or "", h.group or ""
    tc = broker.topics.get(topic)
    if tc is None:
        return error(
            request,
            ResponseCode.SYSTEM_ERROR,
            f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}",
        )
    table: dict[MessageQueue, int] = {}
    for qid in range(tc.write_queue_nums):
        consumer_off = broker.offsets.query(group, topic, qid)
        if consumer_off == -1:
            return error(request, ResponseCode.SYSTEM_ERROR, f"THe consumer group <{group}> not exist")
        if h.timestamp == -1:
            ts_off = broker.store.get_max_offset_in_queue(topic, qid)
        else:
            ts_off = broker.store.get_offset_in_queue_by_time(topic, qid, h.timestamp)
        ts_off = max(ts_off, 0)
        mq = MessageQueue(topic=topic, broker_name=broker.config.broker_name, queue_id=qid)
        table[mq] = ts_off if (h.is_force or ts_off < consumer_off) else consumer_off
    body = ResetOffsetBody(offset_table=table)
    if request.language == LanguageCode.CPP:
        push_body = ResetOffsetBodyForC(
            offset_table=[
                MessageQueueForC(topic=mq.topic, broker_name=mq.broker_name, queue_id=mq.queue_id, offset=off)
                for mq, off in table.items()
            ]
        ).encode()
    else:
        push_body = body.encode()
    info = broker.consumers.get(group)
    if info is None or not info.channels:
        return error(
            request,
            ResponseCode.CONSUMER_NOT_ONLINE,
            f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} Timestamp: {h.timestamp}",
        )
    for ch in list(info.channels.values()):
        if ch.version < MQVersion.V3_0_7_SNAPSHOT:
            return error(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"the client does not support this feature. version={version_desc(ch.version)}",
            )
        push = RemotingCommand.request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
            ResetOffsetRequestHeader(topic=topic, group=group, timestamp=h.timestamp, is_force=False),
            push_body,
        )
        try:
            await ch.channel.invoke_oneway(push)
        except Exception as exc:
            log.error("[reset-offset] reset offset exception. topic=%s, group=%s: %s", topic, group, exc)
    return respond(request, body=body.encode())
