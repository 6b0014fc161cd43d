"""A consumer's in-memory view of one queue it is consuming (Java's ProcessQueue), sans-IO.

Pulled messages wait here, ordered by queue offset, until consumed; the offset that
may be committed is always the smallest one still waiting (or one past the
largest seen), so a crash never skips an unconsumed message.
"""

from __future__ import annotations

import time
from bisect import bisect_left, insort
from collections.abc import Iterable

from ..codecs.bodies import ProcessQueueInfo
from ..codecs.codes import MessageConst
from ..codecs.message import MessageExt

#: how long a broker lock lives without renewal (REBALANCE_LOCK_MAX_LIVE_TIME)
LOCK_MAX_LIVE = 30.0
#: how often locks are renewed (REBALANCE_LOCK_INTERVAL)
LOCK_INTERVAL = 20.0
#: a queue not pulled for this long is considered stuck (PULL_MAX_IDLE_TIME)
PULL_MAX_IDLE = 120.0


def _now() -> float:
    return time.monotonic()


class ProcessQueue:
    def __init__(self) -> None:
        self._msgs: dict[int, MessageExt] = {}
        self._offsets: list[int] = []
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0
        self.dropped = False
        self.consuming = False
        self.locked = False
        self.last_lock_time = 0.0
        self.try_unlock_times = 0
        self.last_pull_time = _now()
        self.last_consume_time = _now()
        self.msg_acc_cnt = 0
        #: orderly consumption: messages taken but not yet committed
        self._taken: dict[int, MessageExt] = {}

    # -- state ------------------------------------------------------------------------------
    def is_lock_expired(self, now: float | None = None) -> bool:
        return ((now if now is not None else _now()) - self.last_lock_time) > LOCK_MAX_LIVE

    def is_pull_expired(self, now: float | None = None) -> bool:
        return ((now if now is not None else _now()) - self.last_pull_time) > PULL_MAX_IDLE

    def max_span(self) -> int:
        return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    def first_offset(self) -> int | None:
        return self._offsets[0] if self._offsets else None

    @property
    def empty(self) -> bool:
        return not self._offsets

    # -- concurrent consumption -------------------------------------------------------------------
    def put_messages(self, msgs: Iterable[MessageExt]) -> bool:
        """Add pulled messages; True when an orderly consumer should start consuming."""
        valid = size = 0
        last: MessageExt | None = None
        held, offsets = self._msgs, self._offsets
        top = offsets[-1] if offsets else None
        highest = self.queue_offset_max
        for msg in msgs:
            off = msg.queue_offset
            if off in held:
                continue
            held[off] = msg
            if top is None or off > top:  # pulled in offset order, mostly: appended
                offsets.append(off)
                top = off
            else:
                insort(offsets, off)
            valid += 1
            if off > highest:
                highest = off
            size += len(msg.body)
            last = msg
        self.queue_offset_max = highest
        self.msg_size += size
        self.msg_count += valid
        dispatch = False
        if self._offsets and not self.consuming:
            dispatch = True
            self.consuming = True
        if last is not None:
            max_prop = last.properties.get(MessageConst.PROPERTY_MAX_OFFSET)
            if max_prop is not None:
                self.msg_acc_cnt = max(int(max_prop) - last.queue_offset, 0)
        return dispatch

    def remove_messages(self, msgs: Iterable[MessageExt]) -> int:
        """Forget consumed messages; returns the offset now safe to commit, or -1 when nothing was held."""
        if not self._offsets:
            return -1
        self.last_consume_time = _now()
        result = self.queue_offset_max + 1
        held, offsets = self._msgs, self._offsets
        removed = size = 0
        for m in msgs:
            off = m.queue_offset
            msg = held.pop(off, None)
            if msg is None:
                continue
            removed += 1
            size += len(msg.body)
            # consumed in offset order, mostly: the lowest offset first
            i = 0 if offsets[0] == off else bisect_left(offsets, off)
            del offsets[i]
        self.msg_size -= size
        self.msg_count -= removed
        if self._offsets:
            result = self._offsets[0]
        return result

    # -- orderly consumption ----------------------------------------------------------------------------
    def take_messages(self, n: int) -> list[MessageExt]:
        """Move the ``n`` lowest-offset messages into the in-flight set; empty means the queue is drained."""
        self.last_consume_time = _now()
        out: list[MessageExt] = []
        while self._offsets and len(out) < n:
            off = self._offsets.pop(0)
            msg = self._msgs.pop(off)
            self._taken[off] = msg
            out.append(msg)
        if not out:
            self.consuming = False
        return out

    def commit(self) -> int:
        """Messages taken were consumed: the next offset to commit, or -1."""
        if not self._taken:
            return -1
        offset = max(self._taken) + 1
        self.msg_count -= len(self._taken)
        self.msg_size -= sum(len(m.body) for m in self._taken.values())
        self._taken.clear()
        return offset

    def make_message_to_consume_again(self, msgs: Iterable[MessageExt]) -> None:
        for msg in msgs:
            if self._taken.pop(msg.queue_offset, None) is not None:
                self._msgs[msg.queue_offset] = msg
                insort(self._offsets, msg.queue_offset)

    def rollback(self) -> None:
        self.make_message_to_consume_again(list(self._taken.values()))

    def clear(self) -> None:
        self._msgs.clear()
        self._offsets.clear()
        self._taken.clear()
        self.msg_count = self.msg_size = 0

    def info(self, commit_offset: int = 0) -> ProcessQueueInfo:
        return ProcessQueueInfo(
            commit_offset=commit_offset,
            cached_msg_min_offset=self._offsets[0] if self._offsets else 0,
            cached_msg_max_offset=self._offsets[-1] if self._offsets else 0,
            cached_msg_count=self.msg_count,
            cached_msg_size_in_mib=self.msg_size // (1024 * 1024),
            locked=self.locked,
            try_unlock_times=self.try_unlock_times,
            last_lock_timestamp=int(self.last_lock_time * 1000),
            droped=self.dropped,
            last_pull_timestamp=int(self.last_pull_time * 1000),
            last_consume_timestamp=int(self.last_consume_time * 1000),
        )
