"""Lookups: QUERY_MESSAGE (by key), VIEW_MESSAGE_BY_ID, GET_MAX/MIN_OFFSET,
GET_EARLIEST_MSG_STORETIME, SEARCH_OFFSET_BY_TIMESTAMP."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...codecs import RemotingCommand, ResponseCode
from ...codecs.codes import MixAll
from ...codecs.headers import QueryMessageRequestHeader
from ...codecs.record import parse_record_fields
from ...remoting import java_decode_header
from ..responses import error, respond

if TYPE_CHECKING:
    from ..context import BrokerContext


def _tq(request: RemotingCommand) -> tuple[str, int]:
    ext = request.ext_fields or {}
    if "topic" not in ext or "queueId" not in ext:
        missing = "topic" if "topic" not in ext else "queueId"
        raise ValueError(f"the custom field <{missing}> is null")
    return ext["topic"], int(ext["queueId"])


def query_message(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    h = java_decode_header(request, QueryMessageRequestHeader)
    max_num = h.max_num or 32
    if (request.ext_fields or {}).get(MixAll.UNIQUE_MSG_QUERY_FLAG) == "true":
        max_num = broker.config.store.default_query_max_num
    result = broker.store.query_message(
        h.topic or "",
        h.key or "",
        max_num,
        h.begin_timestamp or 0,
        h.end_timestamp if h.end_timestamp is not None else 2**63 - 1,
    )
    acl = broker.acl
    if acl is not None and acl.strict.reads:
        # the index matches keys by hash: other topics' messages come too, which the ACL let nobody read
        result.messages = [m for m in result.messages if _topic_of(m) == (h.topic or "")]
    header = {
        "indexLastUpdateTimestamp": str(result.index_last_update_timestamp),
        "indexLastUpdatePhyoffset": str(result.index_last_update_phyoffset),
    }
    if result.buffer_total_size > 0:
        return respond(request, header=header, body=result.body())
    return respond(
        request, ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", header=header
    )


def _topic_of(record: bytes) -> str | None:
    fields = parse_record_fields(bytes(record))
    return None if fields is None else bytes(fields[16]).decode("utf-8", "replace")


def view_message_by_id(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    broker = ctx.state
    offset = int((request.ext_fields or {}).get("offset", "-1"))
    data = broker.store.select_one_message_by_offset(offset) if offset >= 0 else None
    if data is None:
        return error(request, ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
    return respond(request, body=data)


def get_max_offset(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    topic, qid = _tq(request)
    return respond(request, header={"offset": str(ctx.state.store.get_max_offset_in_queue(topic, qid))})


def get_min_offset(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    topic, qid = _tq(request)
    return respond(request, header={"offset": str(ctx.state.store.get_min_offset_in_queue(topic, qid))})


def get_earliest_msg_storetime(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    topic, qid = _tq(request)
    return respond(request, header={"timestamp": str(ctx.state.store.get_earliest_message_time(topic, qid))})


def search_offset_by_timestamp(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand:
    topic, qid = _tq(request)
    ts = int((request.ext_fields or {}).get("timestamp", "0"))
    return respond(request, header={"offset": str(ctx.state.store.get_offset_in_queue_by_time(topic, qid, ts))})
