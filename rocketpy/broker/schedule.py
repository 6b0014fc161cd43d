"""Delayed delivery (ScheduleMessageService).

The store already rewrites a message with a delay level to SCHEDULE_TOPIC_XXXX queue
``level-1``, with its deliver time as the ConsumeQueue tags code. This task walks each
level's queue from the offset kept in delayOffset.json and, once a message is due,
stores it again under its real topic and queue (without the delay). When nothing is
due it sleeps until the earliest deliver time (at most 100 ms, like Java's poll).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import trio

from ..clock import now_ms
from ..codecs.bodies import DelayOffsetSerializeWrapper
from ..codecs.codes import MessageConst, MixAll
from ..store.config import DelayLevels
from ..store.types import MessageExtBrokerInner
from .persist import TableSnapshot, load_json, persist_json
from .processors.send import props_string

if TYPE_CHECKING:
    from .controller import BrokerController

log = logging.getLogger("rocketpy.broker")

POLL_SECONDS = 0.1


class ScheduleMessageService:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.levels = DelayLevels(broker.config.store.message_delay_level)
        self.offsets: dict[int, int] = {}
        cdir = broker.config.config_dir
        self.path: str | None = os.path.join(cdir, "delayOffset.json")
        #: delivered since last written (the broker's ConfigWriter writes it every flush interval)
        self.dirty = False

    def load(self) -> None:
        doc = load_json(self.path, DelayOffsetSerializeWrapper) if self.path else None
        if doc is not None:
            self.offsets = {int(k): int(v) for k, v in doc.offset_table.items()}
        else:
            self.dirty = True  # a store without delayOffset.json gets one, as Java's does

    def wrapper(self) -> DelayOffsetSerializeWrapper:
        return DelayOffsetSerializeWrapper(offset_table=dict(self.offsets))

    def snapshot(self) -> TableSnapshot:
        """delayOffset.json's content as it is now (a copy: deliveries move the offsets meanwhile)."""
        return TableSnapshot(DelayOffsetSerializeWrapper(offset_table={}), "offset_table", dict(self.offsets))

    def persist(self) -> None:
        """Write delayOffset.json now (blocking: for tools and tests, not the event loop)."""
        if self.path is not None:
            self.dirty = False
            persist_json(self.path, self.snapshot())

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            next_due = await self.deliver_due()
            wait = POLL_SECONDS if next_due is None else min(POLL_SECONDS, max(0.0, (next_due - now_ms()) / 1000))
            await trio.sleep(wait)

    async def deliver_due(self) -> int | None:
        """Deliver every due message; returns the earliest pending deliver time, if any."""
        store = self.broker.store
        earliest: int | None = None
        for level, delay in self.levels.table.items():
            cq = store.find_consume_queue(MixAll.RMQ_SYS_SCHEDULE_TOPIC, level - 1)
            if cq is None:
                continue
            offset = max(self.offsets.get(level, 0), cq.min_offset_in_queue)
            end = cq.max_offset_in_queue
            while offset < end:
                unit = cq.get_unit(offset)
                if unit is None:
                    break
                now = now_ms()
                deliver = unit.tags_code
                if deliver > now + delay:  # a clock moved back: never wait longer than the level says
                    deliver = now
                if deliver > now:
                    earliest = deliver if earliest is None else min(earliest, deliver)
                    break
                msg = store.look_message_by_offset(unit.commit_log_offset, unit.size)
                if msg is not None:
                    inner = self._time_up(msg)
                    if inner is None:
                        log.error("[BUG] the real topic of schedule msg is %s, discard the msg", msg.topic)
                    else:
                        result = await self.broker.put_message(inner)
                        if not result.is_ok:
                            log.error(
                                "ScheduleMessageService, a message time up, but reput it failed: %s", result.status
                            )
                            earliest = now + 1000  # retry a bit later, keep the offset
                            break
                offset += 1
                self.offsets[level] = offset
                self.dirty = True
        return earliest

    def _time_up(self, msg: object) -> MessageExtBrokerInner | None:
        props = dict(msg.properties)  # type: ignore[attr-defined]
        stored = props_string(props)  # Java stores the string made before DELAY is cleared
        real_topic = props.get(MessageConst.PROPERTY_REAL_TOPIC)
        real_qid = props.get(MessageConst.PROPERTY_REAL_QUEUE_ID)
        if real_topic is None or real_qid is None or real_topic == MixAll.RMQ_SYS_TRANS_HALF_TOPIC:
            return None
        props.pop(MessageConst.PROPERTY_DELAY_TIME_LEVEL, None)
        props[MessageConst.PROPERTY_WAIT_STORE_MSG_OK] = "false"
        return MessageExtBrokerInner(
            topic=real_topic,
            body=msg.body,  # type: ignore[attr-defined]
            flag=msg.flag,  # type: ignore[attr-defined]
            properties=props,
            properties_string=stored,
            queue_id=int(real_qid),
            sys_flag=msg.sys_flag,  # type: ignore[attr-defined]
            born_timestamp=msg.born_timestamp,  # type: ignore[attr-defined]
            born_host=msg.born_host,  # type: ignore[attr-defined]
            store_host=msg.store_host,  # type: ignore[attr-defined]
            reconsume_times=msg.reconsume_times,  # type: ignore[attr-defined]
        )
