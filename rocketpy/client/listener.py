"""What a push consumer's listener answers and is given (Java's consumer.listener package)."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..codecs.bodies import MessageQueue
from ..codecs.message import MessageExt

#: ConsumeConcurrentlyContext.ackIndex's default: every message of a successful batch acknowledged
ACK_ALL = 2**31 - 1


class ConsumeStatus(enum.Enum):
    """Answer of a concurrent listener (ConsumeConcurrentlyStatus)."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class OrderlyStatus(enum.Enum):
    """Answer of an orderly listener (ConsumeOrderlyStatus)."""

    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


@dataclass
class ConsumeContext:
    """What a listener learns about, and may change for, the batch it is given."""

    message_queue: MessageQueue
    #: concurrent: 0 lets the broker pick the retry delay (3 + reconsume times), -1 sends straight to the DLQ
    delay_level_when_next_consume: int = 0
    #: orderly: how long to pause the queue after SUSPEND (seconds, -1 for the consumer's default)
    suspend_current_queue_time: float = -1.0
    #: concurrent, on CONSUME_SUCCESS: the index of the batch's last acknowledged message; the messages after
    #: it go back for redelivery (ConsumeConcurrentlyContext.ackIndex; the default acknowledges them all)
    ack_index: int = ACK_ALL


Listener = Callable[[list[MessageExt], ConsumeContext], Any]
