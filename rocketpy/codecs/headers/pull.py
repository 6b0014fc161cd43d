"""Headers of PULL_MESSAGE."""

from __future__ import annotations

from .base import CommandHeader, jfield
from .rpc import RpcRequestHeader


class PullMessageRequestHeader(RpcRequestHeader):
    """PULL_MESSAGE request: which queue, from where, how many, and the subscription."""

    java_class = "org.apache.rocketmq.common.protocol.header.PullMessageRequestHeader"
    fast_codes = True

    consumer_group: str | None = jfield("String", required=True)
    topic: str | None = jfield("String", required=True)
    queue_id: int | None = jfield("Integer", required=True)
    queue_offset: int | None = jfield("Long", required=True)
    max_msg_nums: int | None = jfield("Integer", required=True)
    sys_flag: int | None = jfield("Integer", required=True)
    commit_offset: int | None = jfield("Long", required=True)
    suspend_timeout_millis: int | None = jfield("Long", required=True)
    subscription: str | None = jfield("String")
    sub_version: int | None = jfield("Long", required=True)
    expression_type: str | None = jfield("String")
    bname: str | None = jfield("String", doc="target broker name, inherited from RpcRequestHeader")


class PullMessageResponseHeader(CommandHeader):
    """PULL_MESSAGE response: the next offset and the queue's bounds."""

    java_class = "org.apache.rocketmq.common.protocol.header.PullMessageResponseHeader"
    fast_codes = True

    suggest_which_broker_id: int | None = jfield("Long", required=True)
    next_begin_offset: int | None = jfield("Long", required=True)
    min_offset: int | None = jfield("Long", required=True)
    max_offset: int | None = jfield("Long", required=True)
