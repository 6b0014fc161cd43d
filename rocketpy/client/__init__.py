"""The RocketMQ 4.x client on trio: producers, push and lite-pull consumers, transactions.

Typical use::

    async with Producer("my-group", namesrv="127.0.0.1:9876") as producer:
        result = await producer.send(make_message("TopicTest", b"hello", tags="TagA"))

See ``examples/`` for every mode, and :mod:`rocketpy.client.facade` for blocking
and asyncio use.
"""

from ..codecs.codes import ConsumeFromWhere, LocalTransactionState, MessageModel, SendStatus
from ..codecs.message import Message, MessageExt
from .admin import Admin
from .allocate import AllocateAveragely, AllocateAveragelyByCircle, AllocateConsistentHash, strategy_by_name
from .config import ClientConfig
from .errors import MQBrokerError, MQClientError, RequestTimeoutError
from .instance import ClientInstance
from .lite_pull import LitePullConsumer
from .message import create_reply_message, make_message
from .producer import Producer, SendFuture, select_by_hash, select_by_random
from .push_consumer import ConsumeContext, ConsumeStatus, OrderlyStatus, PushConsumer
from .results import PullResult, SendResult
from .transaction import TransactionProducer

__all__ = [
    "Admin",
    "AllocateAveragely",
    "AllocateAveragelyByCircle",
    "AllocateConsistentHash",
    "ClientConfig",
    "ClientInstance",
    "ConsumeContext",
    "ConsumeFromWhere",
    "ConsumeStatus",
    "LitePullConsumer",
    "LocalTransactionState",
    "MQBrokerError",
    "MQClientError",
    "Message",
    "MessageExt",
    "MessageModel",
    "OrderlyStatus",
    "Producer",
    "PullResult",
    "PushConsumer",
    "RequestTimeoutError",
    "SendFuture",
    "SendResult",
    "SendStatus",
    "TransactionProducer",
    "create_reply_message",
    "make_message",
    "select_by_hash",
    "select_by_random",
    "strategy_by_name",
]
