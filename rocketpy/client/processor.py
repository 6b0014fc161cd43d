"""Requests brokers send to clients (Java's ClientRemotingProcessor)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..clock import now_ms
from ..codecs import RemotingCommand, RequestCode, ResponseCode
from ..codecs.bodies import ResetOffsetBody
from ..codecs.codes import MessageConst, MessageSysFlag
from ..codecs.headers import (
    CheckTransactionStateRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    ReplyMessageRequestHeader,
    ResetOffsetRequestHeader,
)
from ..codecs.message import MessageExt, decode_message, decompress_body, string_to_properties
from ..remoting import Dispatcher, RequestContext, java_decode_header
from .namespace import without_namespace

if TYPE_CHECKING:
    from .instance import ClientInstance

log = logging.getLogger("rocketpy.client")


def build_dispatcher(instance: ClientInstance) -> Dispatcher:
    d = Dispatcher()

    @d.route(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED)
    def notify_ids_changed(ctx: RequestContext, req: RemotingCommand) -> None:
        h = java_decode_header(req, NotifyConsumerIdsChangedRequestHeader)
        log.info("receive broker's notification[%s], the consumer group: %s changed, rebalance immediately",
                 ctx.remote_addr, h.consumer_group)
        instance.rebalance_immediately()
        return None

    @d.route(RequestCode.CHECK_TRANSACTION_STATE)
    def check_transaction(ctx: RequestContext, req: RemotingCommand) -> None:
        h = java_decode_header(req, CheckTransactionStateRequestHeader)
        if not req.body:
            log.warning("checkTransactionState without a message body")
            return None
        msg = decode_message(req.body)
        msg.topic = without_namespace(msg.topic, instance.config.namespace)  # the listener sees the user's name
        group = msg.properties.get(MessageConst.PROPERTY_PRODUCER_GROUP)
        producer = instance.producers.get(group or "")
        check = getattr(producer, "check_transaction_state", None)
        if check is None:
            log.debug("checkTransactionState, pick producer by group[%s] failed", group)
            return None
        # answered later with END_TRANSACTION; the check may take its time
        instance.spawn("check transaction state", check, ctx.remote_addr, msg, h)
        return None

    @d.route(RequestCode.RESET_CONSUMER_CLIENT_OFFSET)
    async def reset_offset(ctx: RequestContext, req: RemotingCommand) -> None:
        h = java_decode_header(req, ResetOffsetRequestHeader)
        table = ResetOffsetBody.decode(req.body).offset_table if req.body else {}
        consumer = instance.consumers.get(h.group or "")
        if consumer is not None and hasattr(consumer, "reset_offset"):
            await consumer.reset_offset(h.topic, table or {})
        return None

    @d.route(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT)
    def consumer_status(ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        from ..codecs.bodies import GetConsumerStatusBody

        h = java_decode_header(req, GetConsumerStatusRequestHeader)
        consumer = instance.consumers.get(h.group or "")
        table = consumer.offsets_of(h.topic) if consumer is not None and hasattr(consumer, "offsets_of") else {}
        return req.response(ResponseCode.SUCCESS, body=GetConsumerStatusBody(message_queue_table=table).encode())

    @d.route(RequestCode.GET_CONSUMER_RUNNING_INFO)
    def running_info(ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = java_decode_header(req, GetConsumerRunningInfoRequestHeader)
        consumer = instance.consumers.get(h.consumer_group or "")
        if consumer is None or not hasattr(consumer, "running_info"):
            return req.response(ResponseCode.SYSTEM_ERROR,
                                remark=f"The Consumer Group <{h.consumer_group}> not exist in this consumer")
        info = consumer.running_info()
        info.properties["PROP_NAMESERVER_ADDR"] = instance.config.namesrv_addr
        info.properties["PROP_CLIENT_VERSION"] = "V4_9_8"
        return req.response(ResponseCode.SUCCESS, body=info.encode())

    @d.route(RequestCode.CONSUME_MESSAGE_DIRECTLY)
    async def consume_directly(ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = java_decode_header(req, ConsumeMessageDirectlyResultRequestHeader)
        consumer = instance.consumers.get(h.consumer_group or "")
        if consumer is None or not hasattr(consumer, "consume_directly") or not req.body:
            return req.response(ResponseCode.SYSTEM_ERROR,
                                remark=f"The Consumer Group <{h.consumer_group}> not exist in this consumer")
        msg = decode_message(req.body)
        result = await consumer.consume_directly(msg, h.broker_name)
        return req.response(ResponseCode.SUCCESS, body=result.encode())

    @d.route(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT)
    def receive_reply(ctx: RequestContext, req: RemotingCommand) -> RemotingCommand:
        h = java_decode_header(req, ReplyMessageRequestHeader)
        body = req.body or b""
        sys_flag = h.sys_flag or 0
        if sys_flag & MessageSysFlag.COMPRESSED_FLAG:
            body = decompress_body(body)
            sys_flag &= ~int(MessageSysFlag.COMPRESSED_FLAG)
        msg = MessageExt(
            topic=without_namespace(h.topic or "", instance.config.namespace), body=body, flag=h.flag or 0,
            properties=string_to_properties(h.properties),
            queue_id=h.queue_id or 0, sys_flag=sys_flag, born_timestamp=h.born_timestamp or 0,
            born_host=h.born_host or "127.0.0.1:0", store_host=h.store_host or "127.0.0.1:0",
            store_timestamp=h.store_timestamp, reconsume_times=h.reconsume_times or 0,
        )
        msg.properties[MessageConst.PROPERTY_REPLY_MESSAGE_ARRIVE_TIME] = str(now_ms())
        cid = msg.properties.get(MessageConst.PROPERTY_CORRELATION_ID)
        waiter = instance.reply_waiters.pop(cid or "", None)
        if waiter is None:
            log.warning("receive reply message, but not matched any request, CorrelationId: %s", cid)
        else:
            waiter(msg)
        return req.response(ResponseCode.SUCCESS)

    return d
