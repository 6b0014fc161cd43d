"""END_TRANSACTION (EndTransactionProcessor): commit or roll back a half message."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...codecs import RemotingCommand, ResponseCode
from ...codecs.codes import BrokerRole, MessageConst, MessageSysFlag
from ...codecs.headers import EndTransactionRequestHeader
from ...remoting import java_decode_header
from ...store.types import PutMessageResult, PutMessageStatus
from ..responses import error, respond

if TYPE_CHECKING:
    from ..context import BrokerContext

log = logging.getLogger("rocketpy.broker")

_NOT = int(MessageSysFlag.TRANSACTION_NOT_TYPE)
_COMMIT = int(MessageSysFlag.TRANSACTION_COMMIT_TYPE)
_ROLLBACK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)


#: EndTransactionProcessor.sendFinalMessage: a put that stored the message answers SUCCESS (its half is then
#: marked done: FLUSH_DISK_TIMEOUT answered as a send answers it left the half to be checked back and committed
#: twice), the others their own code and remark, which differ from the send path's
_STORED = frozenset({PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT,
                     PutMessageStatus.FLUSH_SLAVE_TIMEOUT, PutMessageStatus.SLAVE_NOT_AVAILABLE})
_FINAL_FAILURES = {
    PutMessageStatus.CREATE_MAPEDFILE_FAILED: (ResponseCode.SYSTEM_ERROR, "Create mapped file failed."),
    PutMessageStatus.SERVICE_NOT_AVAILABLE: (ResponseCode.SERVICE_NOT_AVAILABLE, "Service not available now."),
    PutMessageStatus.OS_PAGECACHE_BUSY: (ResponseCode.SYSTEM_ERROR, "OS page cache busy, please try another machine"),
    PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
}


def final_message_answer(result: PutMessageResult | None, max_message_size: int) -> tuple[int, str | None]:
    """(code, remark) of the committed message's put, as sendFinalMessage answers it."""
    if result is None:
        return ResponseCode.SYSTEM_ERROR, "store putMessage return null"
    status = result.status
    if status in _STORED:
        return ResponseCode.SUCCESS, None
    if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
        return ResponseCode.MESSAGE_ILLEGAL, (
            "The message is illegal, maybe msg body or properties length not matched. msg body length limit "
            f"{max_message_size}B, msg properties length limit 32KB.")
    return _FINAL_FAILURES.get(status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT"))


def _check_prepare(request: RemotingCommand, half: Any, h: EndTransactionRequestHeader) -> RemotingCommand | None:
    if half is None:
        return error(request, ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
    if half.properties.get(MessageConst.PROPERTY_PRODUCER_GROUP) != h.producer_group:
        return error(request, ResponseCode.SYSTEM_ERROR, "The producer group wrong")
    if half.queue_offset != h.tran_state_table_offset:
        return error(request, ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong")
    if half.commit_log_offset != h.commit_log_offset:
        return error(request, ResponseCode.SYSTEM_ERROR, "The commit log offset wrong")
    return None


async def end_transaction(ctx: BrokerContext, request: RemotingCommand) -> RemotingCommand | None:
    broker = ctx.state
    h = java_decode_header(request, EndTransactionRequestHeader)
    if broker.config.store.broker_role == BrokerRole.SLAVE:
        return respond(request, ResponseCode.SLAVE_NOT_AVAILABLE)
    kind = h.commit_or_rollback
    if kind == _NOT or kind not in (_COMMIT, _ROLLBACK):
        # UNKNOWN from the producer: nothing to do, the back-check will ask again
        log.info("transaction %s left unknown by %s", h.transaction_id, ctx.remote_addr)
        return None
    txs = broker.transactions
    half = txs.half_message(h.commit_log_offset or 0)
    err = _check_prepare(request, half, h)
    if err is not None:
        return err
    assert half is not None
    if kind == _COMMIT:
        msg = txs.end_message(half)
        msg.sys_flag = (msg.sys_flag & ~_ROLLBACK) | _COMMIT
        msg.prepared_transaction_offset = h.commit_log_offset or 0
        result = await broker.put_message(msg)
        code, remark = final_message_answer(result, broker.config.store.max_message_size)
        if code == ResponseCode.SUCCESS:
            await txs.write_op(half)
            return respond(request)
        return error(request, code, remark or "")
    await txs.write_op(half)
    return respond(request)
