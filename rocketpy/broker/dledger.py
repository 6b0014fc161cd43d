"""A broker in a DLedger group (``enableDLegerCommitLog=true``): its member, its role changes, its sends.

* The member (:class:`rocketpy.dledger.node.DLedgerNode`) runs on this node's ``dLegerPeers`` address over
  the store's ledger; the leader's appends are the store's puts.
* A send is answered once its entry is held by a quorum (DLedgerCommitLog's future), mapped to the put
  statuses Java maps DLedger's codes to.
* Committed entries are dispatched to the ConsumeQueues and the index as the committed index moves, and
  the long polls of their queues are woken (ReputMessageService's notify).
* Role changes as DLedgerRoleChangeHandler: one at a time, in order; a follower (or a candidate that was
  not a slave) becomes a slave with brokerId = node number + 1; a leader first waits until everything it
  holds is committed and dispatched, then takes its queue offsets from the ConsumeQueues and becomes
  the master (brokerId 0, SYNC_MASTER). Each change registers with the NameServers at once (oneway).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING

import trio

from ..codecs.dledger import DLedgerResponseCode
from ..dledger.file_ledger import load_term
from ..dledger.ledger import LedgerError
from ..dledger.member import DLedgerConfig, Role, parse_peers
from ..dledger.node import DLedgerNode
from ..dledger.store import DLedgerMessageStore
from ..store import PutMessageResult, PutMessageStatus

if TYPE_CHECKING:
    from .controller import BrokerController

__all__ = ["BrokerDLedger", "put_status"]

log = logging.getLogger("rocketpy.broker.dledger")

#: how long a send waits for its quorum at most: a deposed leader's entries are never acked nor failed
#: (Java's futures wait for ever; the client gave up after its timeout long before this)
QUORUM_WAIT_CAP_S = 10.0
#: DLedgerRoleChangeHandler's poll while a new leader catches up
LEADER_CATCH_UP_POLL_S = 0.1

_SERVICE_NOT_AVAILABLE = frozenset({
    DLedgerResponseCode.INCONSISTENT_LEADER,
    DLedgerResponseCode.NOT_LEADER,
    DLedgerResponseCode.LEADER_NOT_READY,
    DLedgerResponseCode.DISK_FULL,
})
_PAGECACHE_BUSY = frozenset({DLedgerResponseCode.WAIT_QUORUM_ACK_TIMEOUT, DLedgerResponseCode.LEADER_PENDING_FULL})


def put_status(code: DLedgerResponseCode) -> PutMessageStatus:
    """DLedgerCommitLog's mapping of an append's outcome to the put's status."""
    if code == DLedgerResponseCode.SUCCESS:
        return PutMessageStatus.PUT_OK
    if code in _SERVICE_NOT_AVAILABLE:
        return PutMessageStatus.SERVICE_NOT_AVAILABLE
    if code in _PAGECACHE_BUSY:
        # "Do not return flush_slave_timeout to the client, for the ons client will ignore it."
        return PutMessageStatus.OS_PAGECACHE_BUSY
    return PutMessageStatus.UNKNOWN_ERROR


def member_config(broker: BrokerController) -> DLedgerConfig:
    cfg = broker.config.store
    preferred = cfg.preferred_leader_id
    return DLedgerConfig(
        group=cfg.d_leger_group or "",
        self_id=cfg.d_leger_self_id or "",
        peers=parse_peers(cfg.d_leger_peers or ""),
        preferred_leader_ids=(preferred,) if preferred else (),
    )


class BrokerDLedger:
    def __init__(self, broker: BrokerController, config: DLedgerConfig | None = None) -> None:
        """``config``: the member's settings (tests shorten its timers); from the broker's by default."""
        store = broker.store
        assert isinstance(store, DLedgerMessageStore)
        self.broker = broker
        self.store = store
        self.config = config or member_config(broker)
        #: DLedgerCommitLog.id: the brokerId this member has as a slave
        self.slave_id = int(self.config.self_id[1:]) + 1
        self.node: DLedgerNode | None = None
        self._roles: deque[tuple[int, Role]] = deque()
        self._role_event = trio.Event()

    @property
    def role(self) -> Role | None:
        return self.node.role if self.node is not None else None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        term, vote = await trio.to_thread.run_sync(load_term, self.store.ledger.path)
        node = DLedgerNode(
            self.config, self.store.ledger, ledger_dir=self.store.ledger.path, term=term, vote_for=vote,
            on_role_change=self._on_role_change,
        )
        self.node = node
        self.store.commitlog.append_entry = node.append_now
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(node.run)
                nursery.start_soon(self._dispatch_loop, node)
                nursery.start_soon(self._role_loop)
                task_status.started()
        finally:
            self.store.commitlog.append_entry = None

    # -- sends ---------------------------------------------------------------------------------------
    async def wait_committed(self, result: PutMessageResult) -> PutMessageResult:
        """The put's answer: PUT_OK once a quorum holds its (last) entry, else Java's status."""
        node = self.node
        if result.dledger_entry is None or node is None:
            return result
        term, index = result.dledger_entry
        with trio.move_on_after(QUORUM_WAIT_CAP_S) as scope:
            try:
                await node.wait_acked(term, index)
            except LedgerError as exc:
                result.status = put_status(exc.code)
                if result.status is not PutMessageStatus.PUT_OK:
                    log.warning("send in entry %d of term %d: %s", index, term, exc.code.name)
        if scope.cancelled_caught:
            node.forget(term, index)
            result.status = PutMessageStatus.OS_PAGECACHE_BUSY
        return result

    # -- the dispatch of committed entries --------------------------------------------------------------
    async def _dispatch_loop(self, node: DLedgerNode) -> None:
        hold = self.broker.hold
        while True:
            advanced = node.commit_advanced
            for req in self.store.dispatch_committed():
                if hold.table:
                    hold.notify_arrival(req.topic, req.queue_id, req.tags_code)
            await advanced.wait()

    # -- role changes ------------------------------------------------------------------------------------
    def _on_role_change(self, term: int, role: Role) -> None:
        self._roles.append((term, role))
        self._role_event.set()

    async def _role_loop(self) -> None:
        while True:
            while self._roles:
                term, role = self._roles.popleft()
                try:
                    await self._handle(term, role)
                except Exception:
                    log.exception("[MONITOR]Failed handling broker role change term=%d role=%s", term, role.value)
            await self._role_event.wait()
            self._role_event = trio.Event()

    async def _handle(self, term: int, role: Role) -> None:
        broker = self.broker
        log.info("Begin handling broker role change term=%d role=%s currStoreRole=%s",
                 term, role.value, broker.config.store.broker_role.value)
        done = True
        if role is Role.CANDIDATE:
            if not broker.ha.is_slave:
                await broker.change_to_slave(self.slave_id)
        elif role is Role.FOLLOWER:
            await broker.change_to_slave(self.slave_id)
        else:
            done = await self._caught_up_as_leader()
            if done:
                self.store.recover_topic_queue_table()
                await broker.change_to_master()
        log.info("Finish handling broker role change succ=%s term=%d role=%s currStoreRole=%s",
                 done, term, role.value, broker.config.store.broker_role.value)

    async def _caught_up_as_leader(self) -> bool:
        """Wait until every entry this leader holds is committed and dispatched; False if it stops leading."""
        node = self.node
        ledger = self.store.ledger
        while True:
            if node is None or node.role is not Role.LEADER:
                return False
            if ledger.end_index == -1:
                return True
            if ledger.end_index == ledger.committed_index and self.store.dispatch_behind_bytes() == 0:
                return True
            await trio.sleep(LEADER_CATCH_UP_POLL_S)
