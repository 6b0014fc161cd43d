"""SEND_REPLY_MESSAGE(_V2) (ReplyMessageProcessor): a responder's reply is pushed to the
requesting client (REPLY_TO_CLIENT) with PUSH_REPLY_MESSAGE_TO_CLIENT, then stored."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...clock import now_ms
from ...codecs import RemotingCommand, ResponseCode
from ...codecs.codes import MessageConst, RequestCode
from ...codecs.headers import ReplyMessageRequestHeader
from ...codecs.message import string_to_properties
from ...store.types import MessageExtBrokerInner, PutMessageStatus
from ..responses import respond
from .common import host_of
from .send import SendHeader, msg_check, props_string, send_extra

if TYPE_CHECKING:
    from ..context import BrokerContext
    from ..controller import BrokerController

_PUT_OK = (
    PutMessageStatus.PUT_OK,
    PutMessageStatus.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE,
)


async def _push(
    broker: BrokerController, ctx: BrokerContext, h: SendHeader, msg: MessageExtBrokerInner
) -> tuple[bool, str | None]:
    sender = msg.properties.get(MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT)
    if sender is None:
        return False, f"reply message properties[{MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT}] is null"
    channel = broker.producers.find_channel(sender)
    if channel is None or channel.closed:
        return False, f"push reply message fail, channel of <{sender}> not found."
    props = dict(msg.properties)
    props[MessageConst.PROPERTY_PUSH_REPLY_TIME] = str(now_ms())
    header = ReplyMessageRequestHeader(
        producer_group=h.producer_group,
        topic=h.topic,
        default_topic=h.default_topic,
        default_topic_queue_nums=h.default_topic_queue_nums,
        queue_id=h.queue_id,
        sys_flag=h.sys_flag,
        born_timestamp=h.born_timestamp,
        flag=h.flag,
        properties=props_string(props),
        reconsume_times=h.reconsume_times,
        unit_mode=h.unit_mode,
        born_host=host_of(ctx),
        store_host=broker.store_host,
        store_timestamp=now_ms(),
    )
    push = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, header, msg.body)
    try:
        answer = await channel.invoke(push, 3.0)
    except Exception:
        return False, f"push reply message to {sender}fail."
    if answer.code != ResponseCode.SUCCESS:
        return False, f"push reply message to {sender}fail."
    return True, None


async def send_reply_message(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = SendHeader(request)
    tc, err = msg_check(broker, ctx, request, h)
    if err is not None:
        return err
    queue_id = h.queue_id if h.queue_id >= 0 else broker.queue_id_random(tc.write_queue_nums)
    msg = MessageExtBrokerInner(
        topic=h.topic,
        body=request.body or b"",
        flag=h.flag,
        properties=string_to_properties(h.properties),
        properties_string=h.properties or "",
        queue_id=queue_id,
        born_timestamp=h.born_timestamp,
        born_host=host_of(ctx),
        store_host=broker.store_host,
        reconsume_times=h.reconsume_times,
    )
    ok, remark = await _push(broker, ctx, h, msg)
    code = ResponseCode.SUCCESS if ok else ResponseCode.SYSTEM_ERROR
    header: dict[str, str] = {"msgId": "0", "queueId": str(queue_id), "queueOffset": "0"} if ok else {}
    if broker.config.store_reply_message_enable:
        result = await broker.put_message(msg)
        if result.status in _PUT_OK and result.append is not None:
            header = {
                "msgId": result.append.msg_id,
                "queueId": str(queue_id),
                "queueOffset": str(result.append.logics_offset),
            }
    return respond(request, code, remark, header=header, extra=send_extra(broker), fast=True)
