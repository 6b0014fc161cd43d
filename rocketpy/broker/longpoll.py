"""Long polling (PullRequestHoldService + NotifyMessageArrivingListener).

A PULL that finds nothing, with the suspend flag set, is held per ``topic@queueId``
until a matching message arrives (the send path calls :meth:`notify_arrival`) or its
suspend timeout passes (shortPollingTimeMills when longPollingEnable=false). Then the
pull runs again without suspending and its answer is sent on the held connection.
Unlike Java's 5 s check period, the timer task sleeps exactly until the nearest deadline.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from ..clock import now_ms
from ..codecs import RemotingCommand
from ..remoting.dispatch import fix_response

if TYPE_CHECKING:
    from .context import BrokerContext
    from .controller import BrokerController

log = logging.getLogger("rocketpy.broker")


#: held pulls one connection may have at a time; past it a pull is answered at once (no new message yet).
#: Java holds any number: a peer flooding suspended pulls would grow the table without end
HELD_PER_CONNECTION = 4096
#: woken answers waiting for one connection to take them; past it the peer is not reading: it is closed
PENDING_ANSWERS_PER_CONNECTION = 1024


def _addr(conn: Any) -> str:
    return str(getattr(conn, "remote_addr", conn))


@dataclasses.dataclass(eq=False)
class HeldPull:
    request: RemotingCommand
    ctx: BrokerContext  # the connection to answer on
    timeout_ms: int
    suspend_ts: int
    pull_from_offset: int
    message_filter: Any
    #: how the pull is answered when woken (the pull processor's, so this module does not import it back)
    resume: Callable[[BrokerController, HeldPull], RemotingCommand | None]

    @property
    def deadline_ms(self) -> int:
        return self.suspend_ts + self.timeout_ms


class PullRequestHoldService:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.table: dict[tuple[str, int], list[HeldPull]] = {}
        self._wakeup = trio.Event()
        self._next_check_ms = 0
        self._held_by: dict[Any, int] = {}  # connection -> pulls held for it

    @property
    def held_count(self) -> int:
        return sum(len(v) for v in self.table.values())

    def suspend(self, topic: str, queue_id: int, held: HeldPull) -> None:
        # a message may have landed between the pull's read and now: answer at once then
        if self.broker.store.get_max_offset_in_queue(topic, queue_id) > held.pull_from_offset:
            self._wake(held)
            return
        conn = held.ctx.connection
        count = self._held_by.get(conn, 0)
        if count >= HELD_PER_CONNECTION:
            if count == HELD_PER_CONNECTION:
                log.warning("%s holds %d pulls already; further ones are answered at once", _addr(conn), count)
                self._held_by[conn] = count + 1  # logged: once per connection
            self._wake(held)
            return
        self._held_by[conn] = count + 1
        self.table.setdefault((topic, queue_id), []).append(held)
        if held.deadline_ms < self._next_check_ms:
            self._wakeup.set()  # the timer sleeps past this one's deadline: re-arm it

    def notify_arrival(self, topic: str, queue_id: int, tags_code: int | None = None) -> None:
        """A message reached ``topic``/``queue_id``: wake the held pulls it satisfies."""
        waiting = self.table.get((topic, queue_id))
        if not waiting:
            return
        max_offset = self.broker.store.get_max_offset_in_queue(topic, queue_id)
        keep = []
        for held in waiting:
            if max_offset > held.pull_from_offset:
                flt = held.message_filter
                if tags_code is None or flt is None or flt.is_matched_by_consume_queue(tags_code):
                    self._wake(self._released(held))
                    continue
            keep.append(held)
        if keep:
            self.table[(topic, queue_id)] = keep
        else:
            del self.table[(topic, queue_id)]

    def _released(self, held: HeldPull) -> HeldPull:
        """``held`` leaves the table: one fewer for its connection."""
        conn = held.ctx.connection
        count = self._held_by.get(conn, 0)
        if count > HELD_PER_CONNECTION:
            count = HELD_PER_CONNECTION  # the warning mark: below the cap again
        if count <= 1:
            self._held_by.pop(conn, None)
        else:
            self._held_by[conn] = count - 1
        return held

    def drop_channel(self, conn: Any) -> None:
        self._held_by.pop(conn, None)
        for key, waiting in list(self.table.items()):
            left = [h for h in waiting if h.ctx.connection is not conn]
            if left:
                self.table[key] = left
            else:
                del self.table[key]

    def _wake(self, held: HeldPull) -> None:
        try:
            response = held.resume(self.broker, held)
        except Exception:
            log.exception("execute request when wakeup failed")
            return
        if response is None:
            return
        fix_response(held.request, response)
        self.broker.spawn(self._send, held, response)

    @staticmethod
    async def _send(held: HeldPull, response: RemotingCommand) -> None:
        conn = held.ctx.connection
        if conn.closed:
            return
        # answers queue behind the connection's send lock while the peer does not read: bound them
        pending = conn.attributes.get("pending_pull_answers", 0)
        if pending >= PENDING_ANSWERS_PER_CONNECTION:
            log.warning("%s reads none of its %d pending pull answers; closing the connection", conn.remote_addr,
                        pending)
            await conn.aclose()
            return
        conn.attributes["pending_pull_answers"] = pending + 1
        try:
            await conn.send_command(response)
        except Exception as exc:
            log.warning("held pull answer to %s lost: %s", conn.remote_addr, exc)
        finally:
            conn.attributes["pending_pull_answers"] -= 1

    def check_all(self) -> None:
        """Re-check every held pull: new messages (missed notifications) and deadlines."""
        now = now_ms()
        store = self.broker.store
        for key in list(self.table):
            waiting = self.table.pop(key)
            max_offset = store.get_max_offset_in_queue(*key)
            keep = []
            for held in waiting:
                if max_offset > held.pull_from_offset or now >= held.deadline_ms:
                    self._wake(self._released(held))
                else:
                    keep.append(held)
            if keep:
                self.table.setdefault(key, []).extend(keep)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            # sleep until the nearest deadline, and re-check at least every 5 s like Java
            # (covers a notification that could not be matched)
            next_check = now_ms() + 5000
            for waiting in self.table.values():
                for h in waiting:
                    next_check = min(next_check, h.deadline_ms)
            self._next_check_ms = next_check
            with trio.move_on_after(max(0.0, (next_check - now_ms()) / 1000)):
                await self._wakeup.wait()
            self._wakeup = trio.Event()
            self.check_all()
