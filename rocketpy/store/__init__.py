"""A RocketMQ 4.9.8-compatible message store: CommitLog, ConsumeQueues, index, recovery.

No network code. Files are read and written in the Java layout, so a store
directory can move between a Java broker and rocketpy. See
:mod:`rocketpy.store.message_store` for the threading/async contract and
:mod:`rocketpy.store.services` for the trio flush and retention tasks.
"""

from .config import BrokerRole, DelayLevels, FlushDiskType, MessageStoreConfig
from .config_files import BrokerConfigFiles, ConfigFile
from .message_store import CleanResult, MessageFilter, MessageStore, TagFilter
from .recovery import RecoveryReport
from .types import (
    AppendMessageResult,
    AppendMessageStatus,
    DispatchRequest,
    GetMessageResult,
    GetMessageStatus,
    MessageExtBatch,
    MessageExtBrokerInner,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
    StoreError,
    java_properties_string,
)

__all__ = [
    "AppendMessageResult",
    "AppendMessageStatus",
    "BrokerConfigFiles",
    "BrokerRole",
    "CleanResult",
    "ConfigFile",
    "DelayLevels",
    "DispatchRequest",
    "FlushDiskType",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageExtBatch",
    "MessageExtBrokerInner",
    "MessageFilter",
    "MessageStore",
    "MessageStoreConfig",
    "PutMessageResult",
    "PutMessageStatus",
    "QueryMessageResult",
    "RecoveryReport",
    "StoreError",
    "TagFilter",
    "java_properties_string",
]
