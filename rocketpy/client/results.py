"""What sends and pulls return."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..codecs.bodies import MessageQueue
from ..codecs.codes import PullStatus, SendStatus
from ..codecs.message import MessageExt


@dataclass(slots=True)
class SendResult:
    """Where a sent message went (Java's SendResult)."""

    send_status: SendStatus
    msg_id: str | None
    message_queue: MessageQueue
    queue_offset: int
    offset_msg_id: str | None = None
    transaction_id: str | None = None
    region_id: str = "DefaultRegion"
    trace_on: bool = True

    def to_dict(self) -> dict[str, object]:
        return {
            "status": str(self.send_status),
            "msgId": self.msg_id,
            "offsetMsgId": self.offset_msg_id,
            "broker": self.message_queue.broker_name,
            "topic": self.message_queue.topic,
            "queueId": self.message_queue.queue_id,
            "queueOffset": self.queue_offset,
        }


@dataclass(slots=True)
class PullResult:
    """One PULL_MESSAGE answer, messages decoded and filtered (Java's PullResultExt)."""

    pull_status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)
    suggest_which_broker_id: int = 0
