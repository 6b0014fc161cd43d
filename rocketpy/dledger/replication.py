"""Entry replication of a DLedger group, sans-IO: DLedgerEntryPusher of dledger 0.3.1.2 (non-batch).

The leader side (:class:`Pusher`) keeps one dispatcher per follower, each in COMPARE, TRUNCATE,
APPEND or COMMIT as Java's EntryDispatcher, and the quorum ack checker: an entry appended by the
leader is acknowledged (:class:`Acked`, the broker then answers the send) once a quorum of water
marks reached it, or fails with WAIT_QUORUM_ACK_TIMEOUT after ``maxWaitAckTimeMs``, or with
TERM_CHANGED when the term moved on. The follower side (:class:`EntryHandler`) orders pushes by
index and appends, compares, truncates and commits as Java's EntryHandler.

As with the elector, Java's blocking waits (a COMPARE or TRUNCATE waits up to 3 s for its reply)
are states with a deadline, and every call returns the outputs to carry out in order.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..codecs.dledger import (
    DLedgerEntry,
    DLedgerEntryBean,
    DLedgerResponseCode,
    PushEntryRequest,
    PushEntryResponse,
    PushType,
)
from .ledger import Ledger, LedgerError
from .member import MemberState, Role

__all__ = ["AckFailed", "Acked", "EntryHandler", "PushReply", "Pusher", "ReplicationConfig", "SendPush"]

C = DLedgerResponseCode

#: the deadline of a pending append answered WAIT_QUORUM_ACK_TIMEOUT: its future is done, it stays in the
#: map (and counts for LEADER_PENDING_FULL) until the quorum passes it or the term changes, as Java's
_ANSWERED = -1


@dataclass(frozen=True)
class ReplicationConfig:
    """DLedgerConfig's replication keys, with 0.3.1.2's defaults."""

    max_wait_ack_ms: int = 2500
    max_push_timeout_ms: int = 1000
    max_pending_requests_num: int = 10000
    #: EntryDispatcher.maxPendingSize
    max_pending_size: int = 1000
    #: how long a COMPARE or TRUNCATE waits for its reply, and the pause after a failed one
    rpc_wait_ms: int = 3000
    error_pause_ms: int = 500
    #: a follower's TimeoutFuture for an APPEND it cannot place yet
    follower_append_timeout_ms: int = 1000
    #: maxBatchPushSize: a batched APPEND push is sent once its entries reach this many bytes. Our leader
    #: always batches what accumulated since its last turn (DLedger 0.3.1.2 followers, Java's too, take
    #: batched APPENDs whatever the leader's enableBatchPush says); Java's 4 KiB default would cap a push
    #: at four 1 KiB messages, and each push costs a Python member far more than its bytes do.
    max_batch_push_size: int = 32 * 1024


@dataclass(frozen=True)
class SendPush:
    peer: str
    request: PushEntryRequest
    token: int


@dataclass(frozen=True)
class PushReply:
    """The follower's answer to the push that came with ``token``."""

    token: object
    response: PushEntryResponse


@dataclass(frozen=True)
class Acked:
    """Entry ``index`` of ``term`` is committed by a quorum: the send it carries may be answered."""

    term: int
    index: int
    pos: int


@dataclass(frozen=True)
class AckFailed:
    term: int
    index: int
    code: DLedgerResponseCode


ReplicationOutput = SendPush | PushReply | Acked | AckFailed


def _entries(req: PushEntryRequest) -> list[DLedgerEntry]:
    """A push's entries: its batch, or its one entry."""
    if req.batch_entry:
        return [DLedgerEntry.from_bean(b) for b in req.batch_entry]
    return [] if req.entry is None else [DLedgerEntry.from_bean(req.entry)]


def _entry_bean(entry: DLedgerEntry | None) -> DLedgerEntryBean | None:
    return None if entry is None else entry.to_bean()


@dataclass
class _Waiting:
    token: int
    kind: PushType
    index: int
    deadline: int


@dataclass
class _Dispatcher:
    peer: str
    type: PushType = PushType.COMPARE
    term: int = -1
    leader_id: str | None = None
    compare_index: int = -1
    write_index: int = -1
    last_push_commit: int = -1
    last_check_leak: int = 0
    #: APPEND pushes in flight: first index -> (sent at, entry count), as Java's batchPendingMap
    pending: dict[int, tuple[int, int]] = field(default_factory=dict)
    waiting: _Waiting | None = None
    pause_until: int = -1


class Pusher:
    """The leader's side; also answers nothing while this member is not the leader."""

    def __init__(self, state: MemberState, ledger: Ledger, config: ReplicationConfig | None = None) -> None:
        self.state = state
        self.ledger = ledger
        self.config = config or ReplicationConfig()
        self.dispatchers = {p: _Dispatcher(p) for p in state.config.peers if p != state.self_id}
        self.water_marks: dict[int, dict[str, int]] = {}
        self.pending_acks: dict[int, dict[int, tuple[int, int]]] = {}  # term -> index -> (pos, deadline)
        self.last_quorum_index = -1
        self.last_check_leak = 0
        #: where checkResponseFuturesTimeout's walk goes on: the entries from quorum_index + 1 below it were
        #: answered WAIT_QUORUM_ACK_TIMEOUT already (they stay pending, as Java's completed futures stay in the map)
        self._timeout_walk = (-1, 0)  # (term, index)
        self._tokens = 0
        self._by_token: dict[int, tuple[str, PushType, int]] = {}

    # -- the broker's appends ------------------------------------------------------------------
    def append(self, body: bytes, now: int) -> DLedgerEntry:
        """appendAsLeader + waitAck: the entry, whose outcome comes later as Acked or AckFailed."""
        st = self.state
        if st.role is not Role.LEADER:
            raise LedgerError(C.NOT_LEADER)
        if st.transferee is not None:
            raise LedgerError(C.LEADER_TRANSFERRING)
        term = st.curr_term
        if len(self.pending_acks.get(term, {})) > self.config.max_pending_requests_num:
            raise LedgerError(C.LEADER_PENDING_FULL)
        entry = self.ledger.append_as_leader(body, term)
        st.ledger_end_index, st.ledger_end_term = self.ledger.end_index, self.ledger.end_term
        self._update_water_mark(term, st.self_id, entry.index)
        self.pending_acks.setdefault(term, {})[entry.index] = (entry.pos, now + self.config.max_wait_ack_ms)
        return entry

    # -- the loop --------------------------------------------------------------------------------
    def poll(self, now: int) -> list[ReplicationOutput]:
        out: list[ReplicationOutput] = []
        for d in self.dispatchers.values():
            self._do_work(d, now, out)
        self._check_quorum(now, out)
        return out

    def on_push_reply(self, token: int, resp: PushEntryResponse | None, now: int) -> list[ReplicationOutput]:
        """The reply to a push, or None when it failed (timeout, connection)."""
        out: list[ReplicationOutput] = []
        sent = self._by_token.pop(token, None)
        if sent is None:
            return out
        peer, kind, index = sent
        d = self.dispatchers[peer]
        if kind is PushType.APPEND:
            if resp is not None and resp.code == C.SUCCESS and resp.index is not None:
                d.pending.pop(resp.index, None)
                # a batch's reply counts its entries; Java's follower answers a single entry with count 1
                self._update_water_mark(resp.term, peer, resp.index + max(resp.count, 1) - 1)
            elif resp is not None and resp.code == C.INCONSISTENT_STATE:
                self._change_state(d, -1, PushType.COMPARE)
        elif d.waiting is not None and d.waiting.token == token:
            d.waiting = None
            if kind is PushType.COMPARE:
                self._on_compare(d, index, resp, now, out)
            else:
                self._on_truncate(d, index, resp, now)
        self._do_work(d, now, out)
        self._check_quorum(now, out)
        return out

    # -- EntryDispatcher -------------------------------------------------------------------------
    def _fresh(self, d: _Dispatcher) -> bool:
        st = self.state
        if st.role is not Role.LEADER:
            return False
        if d.term != st.curr_term or d.leader_id != st.leader_id:
            d.term, d.leader_id = st.curr_term, st.self_id
            d.waiting, d.pause_until = None, -1
            self._change_state(d, -1, PushType.COMPARE)
        return True

    def _do_work(self, d: _Dispatcher, now: int, out: list[ReplicationOutput]) -> None:
        if not self._fresh(d):
            return
        if d.waiting is not None:
            if now >= d.waiting.deadline:  # Java's get(3, SECONDS) threw
                self._by_token.pop(d.waiting.token, None)
                self._fail(d, now)
            return
        if now < d.pause_until:
            return
        if d.type is PushType.APPEND:
            self._do_append(d, now, out)
        else:
            self._do_compare(d, now, out)

    def _fail(self, d: _Dispatcher, now: int) -> None:
        d.waiting = None
        self._change_state(d, -1, PushType.COMPARE)
        d.pause_until = now + self.config.error_pause_ms

    def _request(self, d: _Dispatcher, entry: DLedgerEntry | None, kind: PushType,
                 batch: list[DLedgerEntry] | None = None) -> PushEntryRequest:
        st = self.state
        req = PushEntryRequest(
            group=st.config.group,
            remote_id=d.peer,
            leader_id=d.leader_id,
            local_id=st.self_id,
            term=d.term,
            entry=_entry_bean(entry),
            type=kind,
            commit_index=self.ledger.committed_index,
        )
        if batch:  # addEntry's fields: the entries and their total size
            req.batch_entry = [e.to_bean() for e in batch]
            req.total_size = sum(e.size for e in batch)
        return req

    def _send(self, d: _Dispatcher, entry: DLedgerEntry | None, kind: PushType, index: int,
              out: list[ReplicationOutput], batch: list[DLedgerEntry] | None = None) -> int:
        self._tokens += 1
        token = self._tokens
        if kind is not PushType.COMMIT:  # COMMIT's replies are ignored, as Java's
            self._by_token[token] = (d.peer, kind, index)
        out.append(SendPush(d.peer, self._request(d, entry, kind, batch), token))
        return token

    def _do_append(self, d: _Dispatcher, now: int, out: list[ReplicationOutput]) -> None:
        cfg = self.config
        while d.type is PushType.APPEND:
            if d.write_index > self.ledger.end_index:
                if now - d.last_push_commit > 1000:
                    self._send(d, None, PushType.COMMIT, -1, out)
                    d.last_push_commit = now
                self._check_append_response(d, now, out)
                return
            if len(d.pending) >= cfg.max_pending_size or now - d.last_check_leak > 1000:
                mark = self._water_mark(d.term, d.peer)
                for i in [i for i, (_, n) in d.pending.items() if i + n - 1 <= mark]:
                    del d.pending[i]
                d.last_check_leak = now
            if len(d.pending) >= cfg.max_pending_size:
                self._check_append_response(d, now, out)
                return
            sent = self._append_inner(d, d.write_index, self.ledger.end_index, now, out)
            if not sent:
                return
            d.write_index += sent

    def _append_inner(self, d: _Dispatcher, index: int, last: int, now: int, out: list[ReplicationOutput]) -> int:
        """One APPEND push of the entries from ``index`` (up to ``last``, within maxBatchPushSize): a single
        entry as Java's plain push, more as its batch push. The number of entries sent (0: none to send)."""
        batch: list[DLedgerEntry] = []
        size = 0
        for i in range(index, last + 1):
            entry = self.ledger.get(i)
            if entry is None:
                break
            batch.append(entry)
            size += entry.size
            if size >= self.config.max_batch_push_size:
                break
        if not batch:
            self._change_state(d, -1, PushType.COMPARE)  # gone below the ledger's begin: compare again
            return 0
        if len(batch) == 1:
            self._send(d, batch[0], PushType.APPEND, index, out)
        else:
            self._send(d, None, PushType.APPEND, index, out, batch)
        d.pending[index] = (now, len(batch))
        d.last_push_commit = now
        return len(batch)

    def _check_append_response(self, d: _Dispatcher, now: int, out: list[ReplicationOutput]) -> None:
        """doCheckBatchAppendResponse: the push after the follower's water mark went unanswered too long;
        sent again, with the entries it had."""
        nxt = self._water_mark(d.term, d.peer) + 1
        sent = d.pending.get(nxt)
        if sent is not None and now - sent[0] > self.config.max_push_timeout_ms:
            self._append_inner(d, nxt, nxt + sent[1] - 1, now, out)

    def _do_compare(self, d: _Dispatcher, now: int, out: list[ReplicationOutput]) -> None:
        led = self.ledger
        if d.type not in (PushType.COMPARE, PushType.TRUNCATE):
            return
        if d.compare_index == -1 and led.end_index == -1:
            return
        if d.compare_index == -1 or not led.begin_index <= d.compare_index <= led.end_index:
            d.compare_index = led.end_index
        entry = led.get(d.compare_index)
        if entry is None:
            self._fail(d, now)
            return
        token = self._send(d, entry, PushType.COMPARE, d.compare_index, out)
        d.waiting = _Waiting(token, PushType.COMPARE, d.compare_index, now + self.config.rpc_wait_ms)

    def _on_compare(self, d: _Dispatcher, index: int, resp: PushEntryResponse | None, now: int,
                    out: list[ReplicationOutput]) -> None:
        led = self.ledger
        if resp is None or resp.code not in (C.SUCCESS, C.INCONSISTENT_STATE):
            self._fail(d, now)
            return
        truncate = -1
        if resp.code == C.SUCCESS:
            if index == resp.end_index:
                self._change_state(d, index, PushType.APPEND)
                return
            truncate = index
        elif resp.end_index < led.begin_index or resp.begin_index > led.end_index:
            truncate = led.begin_index  # no overlap at all
        elif index < resp.begin_index:
            truncate = led.begin_index
        elif index > resp.end_index:
            d.compare_index = resp.end_index
        else:
            d.compare_index -= 1
        if d.compare_index < led.begin_index:
            truncate = led.begin_index
        if truncate != -1:
            self._change_state(d, truncate, PushType.TRUNCATE)
            entry = led.get(truncate)
            if entry is None:
                self._fail(d, now)
                return
            token = self._send(d, entry, PushType.TRUNCATE, truncate, out)
            d.waiting = _Waiting(token, PushType.TRUNCATE, truncate, now + self.config.rpc_wait_ms)

    def _on_truncate(self, d: _Dispatcher, index: int, resp: PushEntryResponse | None, now: int) -> None:
        if resp is None or resp.code != C.SUCCESS:
            self._fail(d, now)
            return
        d.last_push_commit = now
        self._change_state(d, index, PushType.APPEND)

    def _change_state(self, d: _Dispatcher, index: int, target: PushType) -> None:
        if target is PushType.APPEND:
            d.compare_index = -1
            self._update_water_mark(d.term, d.peer, index)
            d.write_index = index + 1
        elif target is PushType.COMPARE:
            if d.type is PushType.APPEND:
                d.compare_index = -1
                d.pending.clear()
        elif target is PushType.TRUNCATE:
            d.compare_index = -1
        d.type = target

    # -- water marks and the quorum -------------------------------------------------------------
    def _marks(self, term: int) -> dict[str, int]:
        marks = self.water_marks.get(term)
        if marks is None:
            marks = self.water_marks[term] = {p: -1 for p in self.state.config.peers}
        return marks

    def _water_mark(self, term: int, peer: str) -> int:
        return self._marks(term)[peer]

    def peer_water_mark(self, term: int, peer: str) -> int:
        """The last index ``peer`` is known to hold in ``term`` (getPeerWaterMark; -1 when none)."""
        return self._marks(term).get(peer, -1)

    def _update_water_mark(self, term: int, peer: str, index: int) -> None:
        marks = self._marks(term)
        if marks.get(peer, -1) < index:
            marks[peer] = index

    def _check_quorum(self, now: int, out: list[ReplicationOutput]) -> None:
        st = self.state
        if st.role is not Role.LEADER:
            return
        term = st.curr_term
        for old in [t for t in self.pending_acks if t != term]:
            for index, (_, deadline) in self.pending_acks.pop(old).items():
                if deadline != _ANSWERED:
                    out.append(AckFailed(old, index, C.TERM_CHANGED))
        for old in [t for t in self.water_marks if t != term]:
            del self.water_marks[old]
        pending = self.pending_acks.setdefault(term, {})
        marks = sorted(self._marks(term).values(), reverse=True)
        quorum_index = marks[len(marks) // 2]
        self.ledger.update_committed_index(term, quorum_index)
        acked = 0
        need_check = False
        for i in range(quorum_index, self.last_quorum_index, -1):
            got = pending.pop(i, None)
            if got is None:
                need_check = True
                break
            if got[1] != _ANSWERED:
                out.append(Acked(term, i, got[0]))
            acked += 1
        if acked == 0:
            self._check_timeouts(term, pending, quorum_index + 1, now, out)
        if now - self.last_check_leak > 1000 or need_check:
            self._update_water_mark(term, st.self_id, self.ledger.end_index)
            for i in sorted(i for i in pending if i <= quorum_index):
                pos, deadline = pending.pop(i)
                if deadline != _ANSWERED:
                    out.append(Acked(term, i, pos))
            self.last_check_leak = now
        self.last_quorum_index = quorum_index

    def _check_timeouts(self, term: int, pending: dict[int, tuple[int, int]], begin: int, now: int,
                        out: list[ReplicationOutput]) -> None:
        """checkResponseFuturesTimeout(begin): every pending append from ``begin`` on that is past its deadline
        is answered WAIT_QUORUM_ACK_TIMEOUT, in index order, up to the first one still in time. The answered
        stay pending (Java completes the future and leaves it in the map), so the next pass walks over them to
        the later ones instead of stopping at a gap; it starts where this one stopped."""
        walk_term, walked = self._timeout_walk
        i = max(begin, walked) if walk_term == term else begin
        while True:
            got = pending.get(i)
            if got is None or now < got[1]:
                break
            if got[1] != _ANSWERED:
                pending[i] = (got[0], _ANSWERED)
                out.append(AckFailed(term, i, C.WAIT_QUORUM_ACK_TIMEOUT))
            i += 1
        self._timeout_walk = (term, i)


@dataclass
class _Write:
    request: PushEntryRequest
    token: object
    deadline: int


class EntryHandler:
    """The follower's side: pushes in, replies out, the ledger appended in index order."""

    QUEUE_LIMIT = 1024

    def __init__(self, state: MemberState, ledger: Ledger, config: ReplicationConfig | None = None) -> None:
        self.state = state
        self.ledger = ledger
        self.config = config or ReplicationConfig()
        self.writes: dict[int, _Write] = {}
        self.queue: deque[tuple[PushEntryRequest, object]] = deque()
        self.last_fast_forward_check = 0

    def handle_push(self, req: PushEntryRequest, token: object, now: int) -> list[PushReply]:
        st = self.state
        out: list[PushReply] = []
        if req.remote_id != st.self_id:
            out.append(PushReply(token, self._response(req, C.UNKNOWN_MEMBER)))
        elif req.group != st.config.group:
            out.append(PushReply(token, self._response(req, C.UNKNOWN_GROUP)))
        elif req.type is PushType.APPEND:
            if req.entry is None and not req.batch_entry:
                out.append(PushReply(token, self._response(req, C.UNEXPECTED_ARGUMENT)))
            elif req.first_index() in self.writes:
                out.append(PushReply(token, self._response(req, C.REPEATED_PUSH)))
            else:
                self.writes[req.first_index()] = _Write(req, token, now + self.config.follower_append_timeout_ms)
        else:
            if req.type is not PushType.COMMIT:
                if req.entry is None:
                    out.append(PushReply(token, self._response(req, C.UNEXPECTED_ARGUMENT)))
                    return out
                self.writes.clear()
            if len(self.queue) >= self.QUEUE_LIMIT:
                out.append(PushReply(token, self._response(req, C.PUSH_REQUEST_IS_FULL)))
            else:
                self.queue.append((req, token))
        return out + self.poll(now)

    def poll(self, now: int) -> list[PushReply]:
        out: list[PushReply] = []
        if self.state.role is not Role.FOLLOWER:
            while self.queue:
                req, token = self.queue.popleft()
                out.append(PushReply(token, self._response(req, C.NOT_FOLLOWER)))
            return out
        while self.queue:
            req, token = self.queue.popleft()
            out.append(PushReply(token, self._compare_truncate_commit(req)))
        while True:
            write = self.writes.pop(self.ledger.end_index + 1, None)
            if write is None:
                break
            out.append(PushReply(write.token, self._append(write.request)))
        if now - self.last_fast_forward_check >= 1000:
            self.last_fast_forward_check = now
            self._check_abnormal(now, out)
        return out

    def _response(self, req: PushEntryRequest, code: DLedgerResponseCode) -> PushEntryResponse:
        resp = PushEntryResponse(group=req.group, code=int(code), term=req.term)
        if req.type is not PushType.COMMIT:
            resp.index = req.first_index()
            resp.count = req.entry_count()
        resp.begin_index, resp.end_index = self.ledger.begin_index, self.ledger.end_index
        return resp

    def _check_leader(self, req: PushEntryRequest) -> None:
        st = self.state
        if req.term != st.curr_term:
            raise LedgerError(C.INCONSISTENT_TERM)
        if req.leader_id != st.leader_id:
            raise LedgerError(C.INCONSISTENT_LEADER)

    def _synced(self) -> None:
        self.state.ledger_end_index, self.state.ledger_end_term = self.ledger.end_index, self.ledger.end_term

    def _append(self, req: PushEntryRequest) -> PushEntryResponse:
        """handleDoAppend, or handleDoBatchAppend for a batch: every entry, in order."""
        try:
            self._check_leader(req)
            for entry in _entries(req):
                self.ledger.append_as_follower(entry)
        except LedgerError:
            self._synced()
            return self._response(req, C.INCONSISTENT_STATE)
        self._synced()
        resp = self._response(req, C.SUCCESS)
        self.ledger.update_committed_index(req.term, req.commit_index)
        return resp

    def _compare_truncate_commit(self, req: PushEntryRequest) -> PushEntryResponse:
        if req.type is PushType.COMMIT:
            self.ledger.update_committed_index(req.term, req.commit_index)
            return self._response(req, C.SUCCESS)
        assert req.entry is not None
        entry = DLedgerEntry.from_bean(req.entry)
        if req.type is PushType.COMPARE:
            ok = entry.same(self.ledger.get(entry.index))
            return self._response(req, C.SUCCESS if ok else C.INCONSISTENT_STATE)
        try:
            self._check_leader(req)
            index = self.ledger.truncate(entry)
        except LedgerError:
            return self._response(req, C.INCONSISTENT_STATE)
        self._synced()
        if index != entry.index:
            return self._response(req, C.INCONSISTENT_STATE)
        resp = self._response(req, C.SUCCESS)
        self.ledger.update_committed_index(req.term, req.commit_index)
        return resp

    def _check_abnormal(self, now: int, out: list[PushReply]) -> None:
        """checkAppendFuture: answer pushes the ledger already holds, and the first stuck one."""
        end = self.ledger.end_index
        stuck: int | None = None
        for first in sorted(self.writes):
            write = self.writes[first]
            if write.request.last_index() <= end:
                same = all(e.same(self.ledger.get(e.index)) for e in _entries(write.request))
                out.append(PushReply(write.token, self._response(write.request, C.SUCCESS if same else
                                                                 C.INCONSISTENT_STATE)))
                del self.writes[first]
            elif now >= write.deadline and stuck is None:
                stuck = first
        if stuck is not None:
            write = self.writes.pop(stuck)
            out.append(PushReply(write.token, self._response(write.request, C.INCONSISTENT_STATE)))
