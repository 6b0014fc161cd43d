"""The transactional producer (Java's TransactionMQProducer).

A half message is sent first; the local transaction runs; its outcome goes to the
broker as END_TRANSACTION (oneway). When the outcome was UNKNOW, or never arrived,
the broker asks back with CHECK_TRANSACTION_STATE and ``check_local_transaction``
answers, again with END_TRANSACTION.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

import anyio

from ..codecs.codes import LocalTransactionState, MessageConst, SendStatus
from ..codecs.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader
from ..codecs.message import Message, MessageExt, decode_offset_msg_id
from ..remoting import RemotingError
from .api import transaction_flag
from .errors import MQClientError
from .producer import Producer
from .results import SendResult

log = logging.getLogger("rocketpy.client")

LocalTransaction = Callable[[Message, Any], Any]
CheckTransaction = Callable[[MessageExt], Any]


async def _run(fn: Callable[..., Any], *args: Any) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(*args)
    return await anyio.to_thread.run_sync(fn, *args)


def _state(value: Any) -> LocalTransactionState:
    if value is None:
        return LocalTransactionState.UNKNOW
    return LocalTransactionState(str(value))


class TransactionProducer(Producer):
    """``execute_local_transaction(msg, arg)`` and ``check_local_transaction(msg)`` return a
    LocalTransactionState (COMMIT_MESSAGE, ROLLBACK_MESSAGE or UNKNOW); plain or async functions."""

    def __init__(self, group: str, execute_local_transaction: LocalTransaction,
                 check_local_transaction: CheckTransaction, **kwargs: Any) -> None:
        super().__init__(group, **kwargs)
        self.execute_local_transaction = execute_local_transaction
        self.check_local_transaction = check_local_transaction

    async def send_in_transaction(self, msg: Message, arg: Any = None) -> tuple[SendResult, LocalTransactionState]:
        """Send ``msg`` as a half message, run the local transaction, report its outcome."""
        self._need_started()
        if msg.delay_time_level:
            msg.properties.pop(MessageConst.PROPERTY_DELAY_TIME_LEVEL, None)
        msg.properties[MessageConst.PROPERTY_TRANSACTION_PREPARED] = "true"
        msg.properties[MessageConst.PROPERTY_PRODUCER_GROUP] = self.group
        result = await self.send(msg)
        state = LocalTransactionState.UNKNOW
        error: BaseException | None = None
        if result.send_status == SendStatus.SEND_OK:
            if result.transaction_id is None and msg.uniq_key:
                result.transaction_id = msg.uniq_key
            try:
                state = _state(await _run(self.execute_local_transaction, msg, arg))
            except Exception as exc:  # the broker will ask back later
                log.info("executeLocalTransactionBranch exception: %s", exc)
                error = exc
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        try:
            await self.end_transaction(result, state, error)
        except (RemotingError, MQClientError) as exc:
            log.warning("local transaction %s, but end broker transaction failed: %s", state, exc)
        return result, state

    async def end_transaction(self, result: SendResult, state: LocalTransactionState,
                              error: BaseException | None = None) -> None:
        offset_id = result.offset_msg_id or result.msg_id or ""
        _, _, commit_log_offset = decode_offset_msg_id(offset_id)
        addr = self.client.master_addr(result.message_queue.broker_name or "")
        if addr is None:
            raise MQClientError(f"The broker[{result.message_queue.broker_name}] not exist")
        header = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=result.queue_offset,
            commit_log_offset=commit_log_offset, commit_or_rollback=transaction_flag(state),
            from_transaction_check=False, msg_id=result.msg_id, transaction_id=None,
            bname=result.message_queue.broker_name)
        remark = f"executeLocalTransactionBranch exception: {error}" if error is not None else None
        await self.api.end_transaction_oneway(addr, header, remark)

    async def check_transaction_state(self, addr: str, msg: MessageExt, h: CheckTransactionStateRequestHeader) -> None:
        """The broker asks what became of a half message: ask the application, then tell the broker."""
        error: BaseException | None = None
        try:
            state = _state(await _run(self.check_local_transaction, msg))
        except Exception as exc:
            log.error("Broker call checkTransactionState, but checkLocalTransactionState exception: %s", exc)
            state, error = LocalTransactionState.UNKNOW, exc
        uniq = msg.uniq_key or msg.msg_id
        header = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=h.tran_state_table_offset,
            commit_log_offset=h.commit_log_offset, commit_or_rollback=transaction_flag(state),
            from_transaction_check=True, msg_id=uniq, transaction_id=h.transaction_id, bname=h.bname)
        remark = f"checkLocalTransactionState Exception: {error}" if error is not None else None
        try:
            await self.api.end_transaction_oneway(addr, header, remark)
        except (RemotingError, MQClientError) as exc:
            log.error("endTransactionOneway exception: %s", exc)
