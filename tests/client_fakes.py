"""An in-process fake broker built from our codecs, beside our real NameServer.

Used by the client tests until ``rocketpy.broker`` can serve them. It keeps messages
in memory and answers what the client sends: sends (single, batch, reply, half
messages), pulls with long polling and tag filtering, offsets, heartbeats with
NOTIFY_CONSUMER_IDS_CHANGED, queue locks, send-back to retry and DLQ topics,
END_TRANSACTION with back-checks, and the admin requests the CLI uses. Delays are
scaled down (``delay_scale``) so retry and delay tests run in milliseconds.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import trio

from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode
from rocketpy.codecs.bodies import (
    ClusterInfo,
    ConsumerConnection,
    ConsumerData,
    ConsumeStats,
    DataVersion,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    KVTable,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageQueue,
    OffsetWrapper,
    ProducerConnection,
    RegisterBrokerBody,
    ResetOffsetBody,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicOffset,
    TopicStatsTable,
    UnlockBatchRequestBody,
)
from rocketpy.codecs.bodies import (
    Connection as ConnBody,
)
from rocketpy.codecs.codes import LanguageCode, MessageConst, MessageSysFlag, MixAll, PermName, PullSysFlag
from rocketpy.codecs.headers import (
    CheckTransactionStateRequestHeader,
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    EndTransactionRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    RegisterBrokerRequestHeader,
    ReplyMessageRequestHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketpy.codecs.message import (
    MessageExt,
    create_offset_msg_id,
    decode_batch,
    encode_message,
    string_to_properties,
)
from rocketpy.remoting import Connection, Dispatcher, RemotingServer, RequestContext
from rocketpy.remoting.client import open_remoting_client

DELAY_LEVELS = [1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclasses.dataclass
class ClientEntry:
    client_id: str
    conn: Connection
    data: ConsumerData | None = None
    last_seen: float = 0.0


class FakeBroker:
    """One master broker in memory."""

    def __init__(self, name: str = "broker-a", cluster: str = "DefaultCluster", *, namesrv: str | None = None,
                 delay_scale: float = 0.01, check_interval: float = 0.2, max_suspend: float = 2.0) -> None:
        self.name = name
        self.cluster = cluster
        self.namesrv = namesrv
        self.delay_scale = delay_scale
        self.check_interval = check_interval
        self.max_suspend = max_suspend
        self.topics: dict[str, TopicConfig] = {}
        self.queues: dict[tuple[str, int], list[MessageExt]] = {}
        self.by_offset: dict[int, MessageExt] = {}
        self.commit_offset = 0
        self.offsets: dict[tuple[str, str, int], int] = {}
        self.consumers: dict[str, dict[str, ClientEntry]] = {}
        self.producers: dict[str, dict[str, ClientEntry]] = {}
        self.locks: dict[tuple[str, MessageQueue], tuple[str, float]] = {}
        self.half: dict[int, MessageExt] = {}
        self.sub_groups: dict[str, SubscriptionGroupConfig] = {}
        self.arrivals = trio.Event()
        self.requests: list[RemotingCommand] = []
        self.fail_sends = 0  # answer this many sends with SYSTEM_BUSY-like errors
        self.server: RemotingServer | None = None
        self._ns_client: Any = None
        self._version = 0
        self.nursery: trio.Nursery | None = None
        for t in (MixAll.AUTO_CREATE_TOPIC_KEY_TOPIC,):
            self.topics[t] = TopicConfig(topic_name=t, read_queue_nums=8, write_queue_nums=8, perm=7)
        reply = MixAll.get_reply_topic(cluster)
        self.topics[reply] = TopicConfig(topic_name=reply, read_queue_nums=1, write_queue_nums=1, perm=6)

    @property
    def addr(self) -> str:
        assert self.server is not None
        return self.server.address

    # -- lifecycle --------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[FakeBroker] = trio.TASK_STATUS_IGNORED) -> None:
        async with open_remoting_client() as ns_client, trio.open_nursery() as nursery:
            self.nursery = nursery
            self._ns_client = ns_client
            self.server = RemotingServer(self.dispatcher(), state=self, on_close=self._on_close)
            await nursery.start(self.server.serve, "127.0.0.1", 0)
            if self.namesrv:
                await self.register()
                nursery.start_soon(self._register_loop)
            nursery.start_soon(self._check_loop)
            task_status.started(self)

    async def register(self) -> None:
        if not self.namesrv:
            return
        self._version += 1  # the name server takes topics only from a new data version
        wrapper = TopicConfigSerializeWrapper(topic_config_table=dict(self.topics),
                                              data_version=DataVersion(timestamp=now_ms(), counter=self._version))
        body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=[]).encode(compress=False)
        header = RegisterBrokerRequestHeader(broker_name=self.name, broker_addr=self.addr, cluster_name=self.cluster,
                                             ha_server_addr=self.addr, broker_id=0, compressed=False, body_crc32=0)
        # one lasting connection: the name server forgets a broker whose connection closes
        assert self._ns_client is not None
        await self._ns_client.invoke(self.namesrv, RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body))

    async def _register_loop(self) -> None:
        while True:
            await trio.sleep(10)
            await self.register()

    def _on_close(self, conn: Connection) -> None:
        for table in (self.consumers, self.producers):
            for group, entries in table.items():
                gone = [cid for cid, e in entries.items() if e.conn is conn]
                for cid in gone:
                    del entries[cid]
                if gone and table is self.consumers and self.nursery is not None:
                    self.nursery.start_soon(self._notify, group)

    async def _notify(self, group: str) -> None:
        for entry in list(self.consumers.get(group, {}).values()):
            req = RemotingCommand(code=RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, ext_fields={"consumerGroup": group})
            try:
                await entry.conn.invoke_oneway(req)
            except Exception:
                pass

    # -- storage ------------------------------------------------------------------------
    def create_topic(self, topic: str, queues: int = 4, perm: int = 6) -> TopicConfig:
        cfg = self.topics.get(topic)
        if cfg is None:
            cfg = TopicConfig(topic_name=topic, read_queue_nums=queues, write_queue_nums=queues, perm=perm)
            self.topics[topic] = cfg
            if self.nursery is not None and self.namesrv:
                self.nursery.start_soon(self.register)
        return cfg

    def queue(self, topic: str, qid: int) -> list[MessageExt]:
        return self.queues.setdefault((topic, qid), [])

    def put(self, msg: MessageExt) -> MessageExt:
        """Append to the queue; the message gets its offsets, store host and CLUSTER property."""
        q = self.queue(msg.topic, msg.queue_id)
        msg.queue_offset = len(q)
        msg.store_host = self.addr
        msg.store_timestamp = now_ms()
        msg.commit_log_offset = self.commit_offset
        msg.properties.setdefault(MessageConst.PROPERTY_CLUSTER, self.cluster)
        msg._raw_properties = None
        msg.store_size = len(encode_message(msg))
        self.commit_offset += msg.store_size
        self.by_offset[msg.commit_log_offset] = msg
        q.append(msg)
        self.arrivals.set()
        self.arrivals = trio.Event()
        return msg

    def max_offset(self, topic: str, qid: int) -> int:
        return len(self.queues.get((topic, qid), []))

    # -- dispatch ------------------------------------------------------------------------
    def dispatcher(self) -> Dispatcher:
        d = Dispatcher()
        for code, fn in {
            RequestCode.SEND_MESSAGE: self.send, RequestCode.SEND_MESSAGE_V2: self.send,
            RequestCode.SEND_BATCH_MESSAGE: self.send, RequestCode.SEND_REPLY_MESSAGE: self.send_reply,
            RequestCode.SEND_REPLY_MESSAGE_V2: self.send_reply, RequestCode.PULL_MESSAGE: self.pull,
            RequestCode.QUERY_CONSUMER_OFFSET: self.query_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.update_offset,
            RequestCode.GET_MAX_OFFSET: self.get_max_offset, RequestCode.GET_MIN_OFFSET: self.get_min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset, RequestCode.HEART_BEAT: self.heartbeat,
            RequestCode.UNREGISTER_CLIENT: self.unregister, RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.consumer_ids,
            RequestCode.LOCK_BATCH_MQ: self.lock, RequestCode.UNLOCK_BATCH_MQ: self.unlock,
            RequestCode.CONSUMER_SEND_MSG_BACK: self.send_back, RequestCode.END_TRANSACTION: self.end_transaction,
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.admin_create_topic,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.admin_delete_topic,
            RequestCode.GET_TOPIC_STATS_INFO: self.admin_topic_stats,
            RequestCode.GET_CONSUME_STATS: self.admin_consume_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.admin_consumer_conns,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.admin_producer_conns,
            RequestCode.VIEW_MESSAGE_BY_ID: self.admin_view, RequestCode.QUERY_MESSAGE: self.admin_query,
            RequestCode.GET_BROKER_CONFIG: self.admin_broker_config,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.admin_runtime_info,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.admin_update_group,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.admin_delete_group,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.admin_reset_offset,
        }.items():
            d.register(code, self._recording(fn))
        return d

    def _recording(self, fn: Any) -> Any:
        async def handler(ctx: RequestContext, req: RemotingCommand) -> RemotingCommand | None:
            self.requests.append(req)
            out = fn(ctx, req)
            if inspect.isawaitable(out):
                out = await out
            return out

        return handler

    # -- sending ---------------------------------------------------------------------------
    def _send_header(self, req: RemotingCommand) -> SendMessageRequestHeader:
        if req.code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2):
            return req.decode_header(SendMessageRequestHeaderV2).to_v1()
        return req.decode_header(SendMessageRequestHeader)

    def send(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        if self.fail_sends > 0:
            self.fail_sends -= 1
            return req.response(ResponseCode.SYSTEM_ERROR, remark="fake broker told to fail")
        h = self._send_header(req)
        topic = h.topic or ""
        cfg = self.topics.get(topic)
        if cfg is None:
            if topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX):
                cfg = self.create_topic(topic, 1)
            elif h.default_topic in self.topics:
                cfg = self.create_topic(topic, min(h.default_topic_queue_nums or 4, 8))
            else:
                return req.response(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist")
        if not PermName.is_writeable(cfg.perm):
            return req.response(ResponseCode.NO_PERMISSION, remark=f"the topic[{topic}] sending message is forbidden")
        qid = (h.queue_id or 0) % cfg.write_queue_nums
        props = string_to_properties(h.properties)
        born = f"{ctx.remote_addr}"
        if h.batch:
            stored = []
            for m in decode_batch(req.body or b"", topic):
                ext = MessageExt(topic=topic, body=m.body, flag=m.flag, properties=m.properties, queue_id=qid,
                                 born_timestamp=h.born_timestamp or 0, born_host=born)
                stored.append(self.put(ext))
            header = SendMessageResponseHeader(msg_id=",".join(m.msg_id for m in stored), queue_id=qid,
                                               queue_offset=stored[0].queue_offset)
            return self._send_ok(req, header)
        msg = MessageExt(topic=topic, body=req.body or b"", flag=h.flag or 0, properties=props, queue_id=qid,
                         sys_flag=h.sys_flag or 0, born_timestamp=h.born_timestamp or 0, born_host=born,
                         reconsume_times=h.reconsume_times or 0)
        if MessageSysFlag.transaction_value(msg.sys_flag) == MessageSysFlag.TRANSACTION_PREPARED_TYPE:
            return self._half(req, msg)
        level = msg.delay_time_level
        if level > 0:
            msg.properties.pop(MessageConst.PROPERTY_DELAY_TIME_LEVEL, None)
            qoff = self.max_offset(topic, qid)
            assert self.nursery is not None
            self.nursery.start_soon(self._deliver_later, msg, DELAY_LEVELS[min(level, 18) - 1] * self.delay_scale)
            fake_id = create_offset_msg_id(self.addr, self.commit_offset)
            return self._send_ok(req, SendMessageResponseHeader(msg_id=fake_id, queue_id=qid, queue_offset=qoff))
        stored_msg = self.put(msg)
        return self._send_ok(req, SendMessageResponseHeader(msg_id=stored_msg.msg_id, queue_id=qid,
                                                            queue_offset=stored_msg.queue_offset))

    async def _deliver_later(self, msg: MessageExt, delay: float) -> None:
        await trio.sleep(delay)
        self.put(msg)

    def _send_ok(self, req: RemotingCommand, header: SendMessageResponseHeader) -> RemotingCommand:
        resp = req.response(ResponseCode.SUCCESS, header=header)
        resp.ext_fields = {**(resp.ext_fields or {}), "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"}
        return resp

    # -- transactions --------------------------------------------------------------------------
    def _half(self, req: RemotingCommand, msg: MessageExt) -> RemotingCommand:
        msg.store_host = self.addr
        msg.commit_log_offset = self.commit_offset
        msg.queue_offset = len(self.half)
        msg.store_timestamp = now_ms()
        msg.properties.setdefault(MessageConst.PROPERTY_CLUSTER, self.cluster)
        msg.store_size = len(encode_message(msg))
        self.commit_offset += msg.store_size
        self.half[msg.commit_log_offset] = msg
        return self._send_ok(req, SendMessageResponseHeader(msg_id=msg.msg_id, queue_id=msg.queue_id,
                                                            queue_offset=msg.queue_offset))

    def end_transaction(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand | None:
        h = req.decode_header(EndTransactionRequestHeader)
        msg = self.half.get(h.commit_log_offset)
        if msg is None:
            return req.response(ResponseCode.SYSTEM_ERROR, remark="half message not found")
        if h.commit_or_rollback == MessageSysFlag.TRANSACTION_COMMIT_TYPE:
            del self.half[h.commit_log_offset]
            committed = dataclasses.replace(msg, sys_flag=MessageSysFlag.reset_transaction_value(
                msg.sys_flag, MessageSysFlag.TRANSACTION_COMMIT_TYPE), properties=dict(msg.properties))
            committed.properties.pop(MessageConst.PROPERTY_TRANSACTION_PREPARED, None)
            self.put(committed)
        elif h.commit_or_rollback == MessageSysFlag.TRANSACTION_ROLLBACK_TYPE:
            del self.half[h.commit_log_offset]
        return req.response(ResponseCode.SUCCESS)

    async def _check_loop(self) -> None:
        while True:
            await trio.sleep(self.check_interval)
            for offset, msg in list(self.half.items()):
                if now_ms() - msg.store_timestamp < self.check_interval * 1000:
                    continue
                group = msg.properties.get(MessageConst.PROPERTY_PRODUCER_GROUP, "")
                entries = list(self.producers.get(group, {}).values())
                if not entries:
                    continue
                times = int(msg.properties.get(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES, "0")) + 1
                msg.properties[MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES] = str(times)
                if times > 15:
                    del self.half[offset]
                    continue
                header = CheckTransactionStateRequestHeader(
                    tran_state_table_offset=msg.queue_offset, commit_log_offset=offset, msg_id=msg.uniq_key,
                    transaction_id=msg.uniq_key, offset_msg_id=msg.msg_id)
                msg._raw_properties = None
                req = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, header, encode_message(msg))
                try:
                    await entries[0].conn.invoke_oneway(req)
                except Exception:
                    pass

    # -- request-reply ------------------------------------------------------------------------------
    def send_reply(self, ctx: RequestContext, req: RemotingCommand) -> None:
        # pushing to the requester waits for its answer: do it beside the connection's reader
        assert ctx.nursery is not None
        ctx.nursery.start_soon(self._send_reply, ctx, req)

    async def _send_reply(self, ctx: RequestContext, req: RemotingCommand) -> None:
        await ctx.reply(req, await self._reply(ctx, req))

    async def _reply(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = self._send_header(req)
        props = string_to_properties(h.properties)
        target = props.get(MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT)
        entry = self._client(target)
        if entry is None:
            return req.response(ResponseCode.SYSTEM_ERROR,
                                remark=f"push reply message fail, channel of <{target}> not found.")
        props[MessageConst.PROPERTY_PUSH_REPLY_TIME] = str(now_ms())
        from rocketpy.codecs.message import properties_to_string

        rh = ReplyMessageRequestHeader(
            producer_group=h.producer_group, topic=h.topic, default_topic=h.default_topic,
            default_topic_queue_nums=h.default_topic_queue_nums, queue_id=h.queue_id, sys_flag=h.sys_flag,
            born_timestamp=h.born_timestamp, flag=h.flag, properties=properties_to_string(props),
            reconsume_times=h.reconsume_times, unit_mode=False, born_host=ctx.remote_addr, store_host=self.addr,
            store_timestamp=now_ms())
        push = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, rh, req.body)
        resp = await entry.conn.invoke(push, 3.0)
        if resp.code != ResponseCode.SUCCESS:
            return req.response(ResponseCode.SYSTEM_ERROR, remark=f"push reply message to {target}fail.")
        return self._send_ok(req, SendMessageResponseHeader(msg_id="0", queue_id=h.queue_id, queue_offset=0))

    def _client(self, client_id: str | None) -> ClientEntry | None:
        for table in (self.consumers, self.producers):
            for entries in table.values():
                if client_id in entries:
                    return entries[client_id]
        return None

    # -- pulling -----------------------------------------------------------------------------------
    def pull(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand | None:
        h = req.decode_header(PullMessageRequestHeader)
        topic, qid, group = h.topic or "", h.queue_id or 0, h.consumer_group or ""
        if topic not in self.topics:
            return req.response(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{topic}] not exist")
        if PullSysFlag.has_commit_offset_flag(h.sys_flag or 0):
            self.offsets[(group, topic, qid)] = h.commit_offset or 0
        answer = self._pull_answer(req, h)
        if answer is not None or not PullSysFlag.has_suspend_flag(h.sys_flag or 0):
            return answer or self._pull_resp(req, ResponseCode.PULL_NOT_FOUND, h.queue_offset or 0,
                                             self.max_offset(topic, qid))
        # long polling: answer later, so the connection keeps serving the client's other requests
        assert ctx.nursery is not None
        ctx.nursery.start_soon(self._suspended_pull, ctx, req, h)
        return None

    async def _suspended_pull(self, ctx: RequestContext, req: RemotingCommand, h: PullMessageRequestHeader) -> None:
        deadline = trio.current_time() + min((h.suspend_timeout_millis or 0) / 1000, self.max_suspend)
        answer = None
        while answer is None and trio.current_time() < deadline:
            with trio.move_on_at(deadline):
                await self.arrivals.wait()
            answer = self._pull_answer(req, h)
        if answer is None:
            answer = self._pull_resp(req, ResponseCode.PULL_NOT_FOUND, h.queue_offset or 0,
                                     self.max_offset(h.topic or "", h.queue_id or 0))
        try:
            await ctx.reply(req, answer)
        except Exception:
            pass

    def _pull_answer(self, req: RemotingCommand, h: PullMessageRequestHeader) -> RemotingCommand | None:
        topic, qid = h.topic or "", h.queue_id or 0
        tags = self._tags(h.consumer_group or "", topic, h)
        offset = h.queue_offset or 0
        q = self.queues.get((topic, qid), [])
        if offset < 0 or offset > len(q):
            return self._pull_resp(req, ResponseCode.PULL_OFFSET_MOVED, 0 if offset < 0 else len(q), len(q))
        if offset == len(q):
            return None
        found, nxt = [], offset
        for m in q[offset:]:
            nxt = m.queue_offset + 1
            if tags is None or m.tags in tags:
                found.append(m)
                if len(found) >= (h.max_msg_nums or 32):
                    break
        if not found:
            return self._pull_resp(req, ResponseCode.PULL_RETRY_IMMEDIATELY, nxt, len(q))
        body = b"".join(encode_message(m) for m in found)
        return self._pull_resp(req, ResponseCode.SUCCESS, nxt, len(q), body, "FOUND")

    def _tags(self, group: str, topic: str, h: PullMessageRequestHeader) -> set[str] | None:
        expr = h.subscription
        if expr is None:
            for entry in self.consumers.get(group, {}).values():
                for sd in entry.data.subscription_data_set if entry.data else []:
                    if sd.topic == topic:
                        expr = sd.sub_string
        if not expr or expr.strip() == "*":
            return None
        return {t.strip() for t in expr.split("||") if t.strip()}

    def _pull_resp(self, req: RemotingCommand, code: int, nxt: int, max_off: int, body: bytes | None = None,
                   remark: str | None = None) -> RemotingCommand:
        header = PullMessageResponseHeader(suggest_which_broker_id=0, next_begin_offset=nxt, min_offset=0,
                                           max_offset=max_off)
        return req.response(code, header=header, body=body, remark=remark)

    # -- offsets --------------------------------------------------------------------------------------
    def query_offset(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(QueryConsumerOffsetRequestHeader)
        off = self.offsets.get((h.consumer_group, h.topic, h.queue_id))
        # like the Java broker: no offset yet and nothing ever deleted from the queue -> 0
        return req.response(ResponseCode.SUCCESS, header=QueryConsumerOffsetResponseHeader(offset=off or 0))

    def update_offset(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(UpdateConsumerOffsetRequestHeader)
        self.offsets[(h.consumer_group, h.topic, h.queue_id)] = h.commit_offset
        return req.response(ResponseCode.SUCCESS)

    def _offset_resp(self, req: RemotingCommand, value: int) -> RemotingCommand:
        resp = req.response(ResponseCode.SUCCESS)
        resp.ext_fields = {"offset": str(value)}
        return resp

    def get_max_offset(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(GetMaxOffsetRequestHeader)
        return self._offset_resp(req, self.max_offset(h.topic, h.queue_id))

    def get_min_offset(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        req.decode_header(GetMinOffsetRequestHeader)
        return self._offset_resp(req, 0)

    def search_offset(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(SearchOffsetRequestHeader)
        q = self.queues.get((h.topic, h.queue_id), [])
        for m in q:
            if m.store_timestamp >= h.timestamp:
                return self._offset_resp(req, m.queue_offset)
        return self._offset_resp(req, len(q))

    # -- clients ------------------------------------------------------------------------------------------
    async def heartbeat(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        data = HeartbeatData.decode(req.body or b"{}")
        cid = data.client_id or ""
        for pd in data.producer_data_set:
            self.producers.setdefault(pd.group_name or "", {})[cid] = ClientEntry(cid, ctx.connection, None,
                                                                                 trio.current_time())
        for cd in data.consumer_data_set:
            group = cd.group_name or ""
            entries = self.consumers.setdefault(group, {})
            is_new = cid not in entries
            entries[cid] = ClientEntry(cid, ctx.connection, cd, trio.current_time())
            retry = MixAll.get_retry_topic(group)
            if str(cd.message_model) == "CLUSTERING" and retry not in self.topics:
                # like the Java broker: the retry topic is registered before the heartbeat is answered
                self.topics[retry] = TopicConfig(topic_name=retry, read_queue_nums=1, write_queue_nums=1, perm=6)
                await self.register()
            if is_new:
                await self._notify(group)
        return req.response(ResponseCode.SUCCESS)

    async def unregister(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(UnregisterClientRequestHeader)
        if h.producer_group:
            self.producers.get(h.producer_group, {}).pop(h.client_id, None)
        if h.consumer_group and self.consumers.get(h.consumer_group, {}).pop(h.client_id, None) is not None:
            await self._notify(h.consumer_group)
        return req.response(ResponseCode.SUCCESS)

    def consumer_ids(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(GetConsumerListByGroupRequestHeader)
        ids = list(self.consumers.get(h.consumer_group or "", {}))
        if not ids:
            return req.response(ResponseCode.SYSTEM_ERROR, remark=f"no consumer for this group, {h.consumer_group}")
        body = GetConsumerListByGroupResponseBody(consumer_id_list=ids).encode()
        return req.response(ResponseCode.SUCCESS, body=body)

    # -- locks ------------------------------------------------------------------------------------------------
    def lock(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        body = LockBatchRequestBody.decode(req.body or b"{}")
        ok = []
        now = trio.current_time()
        for mq in body.mq_set:
            key = (body.consumer_group or "", mq)
            holder = self.locks.get(key)
            if holder is None or holder[0] == body.client_id or now - holder[1] > 60:
                self.locks[key] = (body.client_id or "", now)
                ok.append(mq)
        return req.response(ResponseCode.SUCCESS, body=LockBatchResponseBody(lock_ok_mq_set=ok).encode())

    def unlock(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        body = UnlockBatchRequestBody.decode(req.body or b"{}")
        for mq in body.mq_set:
            key = (body.consumer_group or "", mq)
            if self.locks.get(key, ("",))[0] == body.client_id:
                del self.locks[key]
        return req.response(ResponseCode.SUCCESS)

    # -- retry ------------------------------------------------------------------------------------------------------
    def send_back(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(ConsumerSendMsgBackRequestHeader)
        orig = self.by_offset.get(h.offset)
        if orig is None:
            return req.response(ResponseCode.SYSTEM_ERROR, remark=f"look message by offset failed, {h.offset}")
        group = h.group or ""
        props = dict(orig.properties)
        props.setdefault(MessageConst.PROPERTY_RETRY_TOPIC, orig.topic)
        props.setdefault(MessageConst.PROPERTY_ORIGIN_MESSAGE_ID, h.origin_msg_id or orig.msg_id)
        max_times = h.max_reconsume_times if h.max_reconsume_times is not None else 16
        delay = h.delay_level or 0
        if orig.reconsume_times >= max_times or delay < 0:
            topic = MixAll.get_dlq_topic(group)
            self.create_topic(topic, 1, perm=2)
            delay = 0
        else:
            topic = MixAll.get_retry_topic(group)
            self.create_topic(topic, 1)
            if delay == 0:
                delay = 3 + orig.reconsume_times
        msg = MessageExt(topic=topic, body=orig.body, flag=orig.flag, properties=props, queue_id=0,
                         sys_flag=orig.sys_flag, born_timestamp=orig.born_timestamp, born_host=orig.born_host,
                         reconsume_times=orig.reconsume_times + 1)
        if delay > 0:
            assert self.nursery is not None
            self.nursery.start_soon(self._deliver_later, msg, DELAY_LEVELS[min(delay, 18) - 1] * self.delay_scale)
        else:
            self.put(msg)
        return req.response(ResponseCode.SUCCESS)

    # -- admin ------------------------------------------------------------------------------------------------------
    def admin_create_topic(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(CreateTopicRequestHeader)
        self.topics[h.topic] = TopicConfig(topic_name=h.topic, read_queue_nums=h.read_queue_nums,
                                           write_queue_nums=h.write_queue_nums, perm=h.perm, order=bool(h.order))
        assert self.nursery is not None
        self.nursery.start_soon(self.register)
        return req.response(ResponseCode.SUCCESS)

    def admin_delete_topic(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(DeleteTopicRequestHeader)
        self.topics.pop(h.topic, None)
        assert self.nursery is not None
        self.nursery.start_soon(self.register)
        return req.response(ResponseCode.SUCCESS)

    def admin_topic_stats(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(GetTopicStatsInfoRequestHeader)
        cfg = self.topics.get(h.topic)
        if cfg is None:
            return req.response(ResponseCode.TOPIC_NOT_EXIST, remark=f"topic[{h.topic}] not exist")
        table = {}
        for i in range(cfg.write_queue_nums):
            q = self.queues.get((h.topic, i), [])
            table[MessageQueue(topic=h.topic, broker_name=self.name, queue_id=i)] = TopicOffset(
                min_offset=0, max_offset=len(q), last_update_timestamp=q[-1].store_timestamp if q else 0)
        return req.response(ResponseCode.SUCCESS, body=TopicStatsTable(offset_table=table).encode())

    def admin_consume_stats(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(GetConsumeStatsRequestHeader)
        table = {}
        for (group, topic, qid), off in self.offsets.items():
            if group == h.consumer_group and (not h.topic or topic == h.topic):
                table[MessageQueue(topic=topic, broker_name=self.name, queue_id=qid)] = OffsetWrapper(
                    broker_offset=self.max_offset(topic, qid), consumer_offset=off)
        return req.response(ResponseCode.SUCCESS, body=ConsumeStats(offset_table=table).encode())

    def admin_consumer_conns(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(GetConsumerConnectionListRequestHeader)
        entries = self.consumers.get(h.consumer_group or "", {})
        if not entries:
            return req.response(ResponseCode.CONSUMER_NOT_ONLINE, remark="the consumer group not online")
        cc = ConsumerConnection(connection_set=[self._conn(e) for e in entries.values()])
        first = next(iter(entries.values())).data
        if first is not None:
            cc.subscription_table = {sd.topic: sd for sd in first.subscription_data_set}
            cc.consume_type, cc.message_model = first.consume_type, first.message_model
            cc.consume_from_where = first.consume_from_where
        return req.response(ResponseCode.SUCCESS, body=cc.encode())

    @staticmethod
    def _conn(e: ClientEntry) -> ConnBody:
        return ConnBody(client_id=e.client_id, client_addr=e.conn.remote_addr, language=LanguageCode.JAVA,
                        version=409)

    def admin_producer_conns(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(GetProducerConnectionListRequestHeader)
        entries = self.producers.get(h.producer_group or "", {})
        pc = ProducerConnection(connection_set=[self._conn(e) for e in entries.values()])
        return req.response(ResponseCode.SUCCESS, body=pc.encode())

    def admin_view(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(ViewMessageRequestHeader)
        msg = self.by_offset.get(h.offset)
        if msg is None:
            return req.response(ResponseCode.SYSTEM_ERROR, remark=f"can not find message by the offset, {h.offset}")
        return req.response(ResponseCode.SUCCESS, body=encode_message(msg))

    def admin_query(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(QueryMessageRequestHeader)
        unique = (req.ext_fields or {}).get("_UNIQUE_KEY_QUERY") == "true"
        found = []
        for m in self.by_offset.values():
            if m.topic != h.topic or not h.begin_timestamp <= m.store_timestamp <= h.end_timestamp:
                continue
            if (unique and m.uniq_key == h.key) or (not unique and h.key in m.keys):
                found.append(m)
        if not found:
            return req.response(ResponseCode.QUERY_NOT_FOUND,
                                remark="can not find message, maybe time range not correct")
        body = b"".join(encode_message(m) for m in found[: h.max_num])
        header = QueryMessageResponseHeader(index_last_update_timestamp=now_ms(), index_last_update_phyoffset=0)
        return req.response(ResponseCode.SUCCESS, header=header, body=body)

    def admin_broker_config(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        text = (f"brokerName={self.name}\nbrokerClusterName={self.cluster}\nbrokerId=0\nautoCreateTopicEnable=true\n"
                f"listenPort={self.addr.rsplit(':', 1)[1]}\n")
        resp = req.response(ResponseCode.SUCCESS, body=text.encode())
        resp.ext_fields = {"version": "0"}
        return resp

    def admin_runtime_info(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        table = {"brokerVersionDesc": "V4_9_8", "brokerVersion": "409", "msgPutTotalTodayNow": str(len(self.by_offset)),
                 "putTps": "0.0 0.0 0.0", "getTransferedTps": "0.0 0.0 0.0"}
        return req.response(ResponseCode.SUCCESS, body=KVTable(table=table).encode())

    def admin_update_group(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        cfg = SubscriptionGroupConfig.decode(req.body or b"{}")
        self.sub_groups[cfg.group_name or ""] = cfg
        return req.response(ResponseCode.SUCCESS)

    def admin_delete_group(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(DeleteSubscriptionGroupRequestHeader)
        self.sub_groups.pop(h.group_name or "", None)
        return req.response(ResponseCode.SUCCESS)

    async def admin_reset_offset(self, ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = req.decode_header(ResetOffsetRequestHeader)
        cfg = self.topics.get(h.topic)
        table: dict[MessageQueue, int] = {}
        for i in range(cfg.read_queue_nums if cfg else 0):
            q = self.queues.get((h.topic, i), [])
            off = next((m.queue_offset for m in q if m.store_timestamp >= h.timestamp), len(q))
            if h.timestamp < 0:
                off = len(q)
            table[MessageQueue(topic=h.topic, broker_name=self.name, queue_id=i)] = off
            self.offsets[(h.group, h.topic, i)] = off
        body = ResetOffsetBody(offset_table=table).encode()
        for entry in list(self.consumers.get(h.group or "", {}).values()):
            push = RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, h, body)
            try:
                await entry.conn.invoke_oneway(push)
            except Exception:
                pass
        return req.response(ResponseCode.SUCCESS, body=body)


#: broker settings that keep tests quick on the real broker: short delay levels and transaction checks
FAST_BROKER = {
    "messageDelayLevel": " ".join(["100ms"] * 18),
    "transactionCheckInterval": "300",
    "transactionTimeOut": "300",
    "autoCreateTopicEnable": "true",
}


def real_broker_available() -> bool:
    """Whether rocketpy.broker exists. Once it does, a broken import must fail the tests that
    use it (an ImportError swallowed here used to turn them into silent skips)."""
    import importlib.util

    if importlib.util.find_spec("rocketpy.broker") is None:
        return False
    from rocketpy.broker.controller import BrokerController  # noqa: F401
    from rocketpy.broker.testing import broker_test_config  # noqa: F401

    return True


@asynccontextmanager
async def real_cluster(broker_names: tuple[str, ...] = ("broker-a",), **props: Any) -> AsyncIterator[Cluster]:
    """Our NameServer and our real broker(s) (rocketpy.broker), stores in a temporary directory."""
    import tempfile

    from rocketpy.broker.controller import BrokerController
    from rocketpy.broker.testing import broker_test_config
    from rocketpy.namesrv.config import NamesrvConfig
    from rocketpy.namesrv.server import NameServer

    with tempfile.TemporaryDirectory(prefix="rocketpy-real-") as tmp:
        config = NamesrvConfig(listen_port=0, kv_config_path=f"{tmp}/kvConfig.json",
                               config_store_path=f"{tmp}/namesrv.properties")
        async with trio.open_nursery() as nursery:
            ns = await nursery.start(NameServer(config).run, "127.0.0.1", 0)
            brokers = []
            for name in broker_names:
                settings = {**FAST_BROKER, "brokerName": name, "namesrvAddr": ns.address, **props}
                broker = BrokerController(broker_test_config(f"{tmp}/{name}", **settings))
                brokers.append(await nursery.start(broker.run, None))
            await _wait_registered(ns, len(brokers))
            try:
                yield Cluster(ns.address, brokers, kind="rocketpy")  # type: ignore[arg-type]
            finally:
                nursery.cancel_scope.cancel()


async def _wait_registered(ns: Any, count: int) -> None:
    with trio.fail_after(10):
        while len(ns.routes.broker_live_table) < count:
            await trio.sleep(0.02)


@contextmanager
def threaded_cluster(*, real: bool = False, **opts: Any) -> Iterator[Cluster]:
    """A fake cluster served by a trio loop on its own thread, for code that runs its own event loop
    (blocking scripts, asyncio, the CLI, examples in subprocesses)."""
    import concurrent.futures
    import threading

    from rocketpy.client.facade import TrioPortal

    portal = TrioPortal()
    ready: concurrent.futures.Future[Cluster] = concurrent.futures.Future()
    stop = threading.Event()

    async def host() -> None:
        async with (real_cluster if real else fake_cluster)(**opts) as c:
            ready.set_result(c)
            while not stop.is_set():
                await trio.sleep(0.05)

    done = portal.submit(host)
    try:
        yield ready.result(10)
    finally:
        stop.set()
        done.result(10)
        portal.close()


@dataclasses.dataclass
class Cluster:
    namesrv: str
    brokers: list[Any]
    kind: str = "fake"

    @property
    def broker(self) -> Any:
        return self.brokers[0]

    @property
    def broker_addr(self) -> str:
        b = self.brokers[0]
        return b.addr if isinstance(b, FakeBroker) else b.broker_addr


@asynccontextmanager
async def fake_cluster(broker_names: tuple[str, ...] = ("broker-a",), **broker_opts: Any) -> AsyncIterator[Cluster]:
    """Our NameServer and fake brokers on 127.0.0.1 ports chosen by the OS; all stop on exit."""
    import tempfile

    from rocketpy.namesrv.config import NamesrvConfig
    from rocketpy.namesrv.server import NameServer

    with tempfile.TemporaryDirectory(prefix="rocketpy-ns-") as tmp:
        config = NamesrvConfig(listen_port=0, kv_config_path=f"{tmp}/kvConfig.json",
                               config_store_path=f"{tmp}/namesrv.properties")
        async with _cluster(NameServer(config), broker_names, broker_opts) as cluster:
            yield cluster


@asynccontextmanager
async def _cluster(ns_server: Any, broker_names: tuple[str, ...], broker_opts: dict[str, Any]) -> AsyncIterator[
        Cluster]:
    async with trio.open_nursery() as nursery:
        ns = await nursery.start(ns_server.run, "127.0.0.1", 0)
        brokers = []
        for name in broker_names:
            brokers.append(await nursery.start(FakeBroker(name, namesrv=ns.address, **broker_opts).run))
        try:
            yield Cluster(ns.address, brokers)
        finally:
            nursery.cancel_scope.cancel()


__all__ = ["Cluster", "ClusterInfo", "FakeBroker", "fake_cluster"]
