"""Headers of transactional messages: commit/rollback, the broker's check-back, half-message resume."""

from __future__ import annotations

from ..codes import MessageSysFlag
from ..errors import CodecError
from .base import CommandHeader, jfield
from .rpc import RpcRequestHeader

_END_TRANSACTION_TYPES = frozenset(
    {
        MessageSysFlag.TRANSACTION_NOT_TYPE,
        MessageSysFlag.TRANSACTION_COMMIT_TYPE,
        MessageSysFlag.TRANSACTION_ROLLBACK_TYPE,
    }
)
_CHECK_RESULT_TYPES = frozenset({MessageSysFlag.TRANSACTION_COMMIT_TYPE, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE})


class EndTransactionRequestHeader(RpcRequestHeader):
    """END_TRANSACTION request: commit or roll back a prepared message."""

    java_class = "org.apache.rocketmq.common.protocol.header.EndTransactionRequestHeader"

    producer_group: str | None = jfield("String", required=True)
    tran_state_table_offset: int | None = jfield("Long", required=True)
    commit_log_offset: int | None = jfield("Long", required=True)
    commit_or_rollback: int | None = jfield("Integer", required=True)
    from_transaction_check: bool | None = jfield("Boolean", default=False)
    msg_id: str | None = jfield("String", required=True)
    transaction_id: str | None = jfield("String")
    bname: str | None = jfield("String", doc="target broker name, inherited from RpcRequestHeader")


    def check_fields(self) -> None:
        """Java's checkFields: commitOrRollback must be NOT_TYPE, COMMIT or ROLLBACK."""
        if self.commit_or_rollback not in _END_TRANSACTION_TYPES:
            raise CodecError(f"{type(self).__name__}: field <commitOrRollback> is wrong: {self.commit_or_rollback!r}")


class EndTransactionResponseHeader(CommandHeader):
    """Declared for END_TRANSACTION responses (no fields); 4.9.8 sends none."""

    java_class = "org.apache.rocketmq.common.protocol.header.EndTransactionResponseHeader"


class CheckTransactionStateRequestHeader(RpcRequestHeader):
    """CHECK_TRANSACTION_STATE request (broker to producer): ask for a prepared message's fate."""

    java_class = "org.apache.rocketmq.common.protocol.header.CheckTransactionStateRequestHeader"

    tran_state_table_offset: int | None = jfield("Long", required=True)
    commit_log_offset: int | None = jfield("Long", required=True)
    msg_id: str | None = jfield("String")
    transaction_id: str | None = jfield("String")
    offset_msg_id: str | None = jfield("String")
    bname: str | None = jfield("String", doc="target broker name, inherited from RpcRequestHeader")


class CheckTransactionStateResponseHeader(CommandHeader):
    """Declared as a check-back answer; 4.9.8 never sends it (producers answer with END_TRANSACTION)."""

    java_class = "org.apache.rocketmq.common.protocol.header.CheckTransactionStateResponseHeader"

    producer_group: str | None = jfield("String", required=True)
    tran_state_table_offset: int | None = jfield("Long", required=True)
    commit_log_offset: int | None = jfield("Long", required=True)
    commit_or_rollback: int | None = jfield("Integer", required=True)


    def check_fields(self) -> None:
        """Java's checkFields: commitOrRollback must be COMMIT or ROLLBACK."""
        if self.commit_or_rollback not in _CHECK_RESULT_TYPES:
            raise CodecError(f"{type(self).__name__}: field <commitOrRollback> is wrong: {self.commit_or_rollback!r}")


class ResumeCheckHalfMessageRequestHeader(CommandHeader):
    """RESUME_CHECK_HALF_MESSAGE request: re-enable checking of one half message."""

    java_class = "org.apache.rocketmq.common.protocol.header.ResumeCheckHalfMessageRequestHeader"

    msg_id: str | None = jfield("String")
