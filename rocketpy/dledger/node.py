"""A DLedger member on the network: the sans-IO elector, pusher and entry handler driven by trio.

It listens on its own ``dLegerPeers`` address for VOTE, HEART_BEAT and PUSH (RemotingCommand frames,
replies with header code 200 and the result in the body, as DLedgerRpcNettyService), asks its peers
over one pooled connection each, turns the state machines every 10 ms as Java's threads do, writes
``currterm`` before a vote that depends on it leaves, and persists the checkpoint every
``checkPointInterval``. :meth:`DLedgerNode.append` is the leader's append that returns once a quorum
holds the entry.

File writes (``currterm``, ``checkpoint``, flushes) run in worker threads, off the event loop.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from ..codecs import RemotingCommand
from ..codecs.dledger import (
    REPLY_HEADER_CODE,
    DLedgerEntry,
    DLedgerRequestCode,
    DLedgerResponseCode,
    HeartBeatRequest,
    HeartBeatResponse,
    LeadershipTransferRequest,
    LeadershipTransferResponse,
    PushEntryRequest,
    PushEntryResponse,
    VoteRequest,
    VoteResponse,
)
from ..codecs.errors import CodecError
from ..remoting.client import RemotingClient, open_remoting_client, split_address
from ..remoting.connection import ResponseFuture
from ..remoting.dispatch import Dispatcher, RequestContext
from ..remoting.errors import RemotingError
from ..remoting.server import RemotingServer
from .file_ledger import persist_term
from .ledger import Ledger, LedgerError
from .member import DLedgerConfig, Elector, MemberState, PersistTerm, Role, RoleChanged, Send
from .replication import Acked, AckFailed, EntryHandler, Pusher, PushReply, ReplicationConfig, SendPush

__all__ = ["AppendResult", "DLedgerNode"]

log = logging.getLogger("rocketpy.dledger")

#: DLedgerRpcNettyService's request timeout
RPC_TIMEOUT_S = 3.0
#: the longest pause between turns: replies and appends turn the machines at once, the elector says when
#: it needs the next turn; the rest (COMMIT pushes, resends after 1 s) is good to this much
MAX_TICK_MS = 100


@dataclass(frozen=True)
class AppendResult:
    index: int
    term: int
    pos: int


class _Waiter:
    __slots__ = ("event", "result")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.result: Acked | AckFailed | None = None


class DLedgerNode:
    """One member; ``ledger_dir`` holds ``currterm`` (None: terms are not persisted, for tests)."""

    def __init__(
        self,
        config: DLedgerConfig,
        ledger: Ledger,
        *,
        ledger_dir: str | Path | None = None,
        term: int = 0,
        vote_for: str | None = None,
        replication: ReplicationConfig | None = None,
        on_role_change: Callable[[int, Role], Any] | None = None,
        checkpoint_interval_s: float = 3.0,
    ) -> None:
        self.config = config
        self.ledger = ledger
        self.ledger_dir = Path(ledger_dir) if ledger_dir is not None else None
        self.state = MemberState(
            config, curr_term=term, curr_vote_for=vote_for,
            ledger_end_index=ledger.end_index, ledger_end_term=ledger.end_term,
        )
        self.elector = Elector(self.state)
        self.pusher = Pusher(self.state, ledger, replication)
        self.handler = EntryHandler(self.state, ledger, replication)
        self.on_role_change = on_role_change
        self.checkpoint_interval_s = checkpoint_interval_s
        self.server: RemotingServer | None = None
        self._client: RemotingClient | None = None
        self._nursery: trio.Nursery | None = None
        self._waiters: dict[tuple[int, int], _Waiter] = {}
        self._lock = trio.Lock()  # one carry at a time: outputs go out in the order they were made
        #: set (and replaced) whenever the committed index moves: the broker dispatches what it covers
        self.commit_advanced = trio.Event()
        self._committed_seen = ledger.committed_index
        self._kick = trio.Event()  # an append wants its push now, not at the next turn
        #: push replies (token, response or None) that arrived since the last turn, taken together
        self._push_replies: list[tuple[int, PushEntryResponse | None]] = []
        #: the transferee's answer to the leader's take-leadership request, settled by its role changes
        self._take: _TakeLeadership | None = None

    # -- the clock Java's threads read ------------------------------------------------------------
    @staticmethod
    def now() -> int:
        return int(trio.current_time() * 1000)

    @property
    def role(self) -> Role:
        return self.state.role

    @property
    def leader_id(self) -> str | None:
        return self.state.leader_id

    # -- running -------------------------------------------------------------------------------------
    async def run(self, *, task_status: trio.TaskStatus[DLedgerNode] = trio.TASK_STATUS_IGNORED) -> None:
        host, port = split_address(self.config.peers[self.config.self_id])
        dispatcher = Dispatcher()
        dispatcher.register(DLedgerRequestCode.VOTE, self._on_vote)
        dispatcher.register(DLedgerRequestCode.HEART_BEAT, self._on_heartbeat)
        dispatcher.register(DLedgerRequestCode.PUSH, self._on_push)
        dispatcher.register(DLedgerRequestCode.LEADERSHIP_TRANSFER, self._on_leadership_transfer)
        self.server = RemotingServer(dispatcher, state=self)
        try:
            async with open_remoting_client(close_on_timeout=False) as client, trio.open_nursery() as nursery:
                self._client, self._nursery = client, nursery
                await nursery.start(self.server.serve, host, port)
                nursery.start_soon(self._maintain)
                nursery.start_soon(self._checkpoints)
                if self.config.preferred_leader_ids:
                    nursery.start_soon(self._check_preferred_leader)
                log.info("DLedger member %s of %s on %s:%d", self.config.self_id, self.config.group, host, port)
                task_status.started(self)
        finally:
            for w in self._waiters.values():
                w.event.set()
            with trio.CancelScope(shield=True):
                await self._persist_checkpoint()

    async def _maintain(self) -> None:
        while True:
            now = self.now()
            if self._push_replies:
                replies, self._push_replies = self._push_replies, []
                out: list[Any] = []
                for token, resp in replies:
                    out += self.pusher.on_push_reply(token, resp, now)
                await self._carry(out)
            await self._carry(self.elector.poll(now))
            await self._carry(self.pusher.poll(now))
            await self._carry(self.handler.poll(now))
            wake = min(self.elector.next_deadline(), now + MAX_TICK_MS)
            with trio.move_on_after(max(1, wake - self.now()) / 1000):
                await self._kick.wait()
            self._kick = trio.Event()

    async def _checkpoints(self) -> None:
        if self.checkpoint_interval_s == math.inf:
            return
        while True:
            await trio.sleep(self.checkpoint_interval_s)
            await self._persist_checkpoint()

    async def _persist_checkpoint(self) -> None:
        persist = getattr(self.ledger, "persist_checkpoint", None)
        flush = getattr(self.ledger, "flush", None)
        if persist is None:
            return

        def write() -> None:
            if flush is not None:
                flush()
            persist()

        try:
            await trio.to_thread.run_sync(write)
        except OSError as exc:
            log.error("DLedger %s: persisting the checkpoint failed: %s", self.config.self_id, exc)

    # -- outputs ----------------------------------------------------------------------------------------
    async def _carry(self, outputs: list[Any]) -> None:
        if outputs:
            async with self._lock:
                replies: list[PushReply] = []
                waiters = self._waiters
                for o in outputs:
                    kind = type(o)
                    if kind is Acked or kind is AckFailed:  # one a message: settled here, without the await
                        w = waiters.pop((o.term, o.index), None)
                        if w is not None:
                            w.result = o
                            w.event.set()
                    elif kind is PushReply:
                        replies.append(o)
                    elif not await self._carry_one(o):
                        break  # what followed depended on it (a vote on an unpersisted term): not sent
                if replies:
                    # written by a task of their own: a leader that stops reading (SIGSTOP) fills the socket, and the
                    # write would hold the member's turns, its elector included, until the leader came back
                    assert self._nursery is not None
                    self._nursery.start_soon(self._reply, replies)
        # a commit comes with no output at times (a new leader's quorum over inherited entries): seen here too
        committed = self.ledger.committed_index
        if committed != self._committed_seen:
            self._committed_seen = committed
            self.commit_advanced.set()
            self.commit_advanced = trio.Event()

    async def _carry_one(self, o: Any) -> bool:
        """Carry out one output; False when the outputs after it must not go out."""
        nursery = self._nursery
        assert nursery is not None
        if isinstance(o, PersistTerm):
            if self.ledger_dir is not None:
                try:
                    await trio.to_thread.run_sync(persist_term, self.ledger_dir, o.term, o.vote_for)
                except OSError as exc:
                    log.error("DLedger %s: cannot persist term %d: %s", self.config.self_id, o.term, exc)
                    return False
        elif isinstance(o, Send):
            nursery.start_soon(self._ask, o)
        elif isinstance(o, SendPush):
            self._send_push(o)
        elif isinstance(o, RoleChanged):
            log.info("DLedger %s: %s in term %d (leader %s)", self.config.self_id, o.role.value, o.term,
                     self.state.leader_id)
            self._check_take(o.term, o.role)
            if self.on_role_change is not None:
                self.on_role_change(o.term, o.role)
        return True

    @staticmethod
    async def _reply(replies: list[PushReply]) -> None:
        """The answers to pushes, those of one connection in one write."""
        by_ctx: dict[int, tuple[RequestContext[Any], list[tuple[RemotingCommand, RemotingCommand]]]] = {}
        for r in replies:
            ctx: RequestContext[Any]
            request: RemotingCommand
            ctx, request = r.token  # type: ignore[misc]
            answer = request.response(code=REPLY_HEADER_CODE, body=r.response.encode())
            by_ctx.setdefault(id(ctx), (ctx, []))[1].append((request, answer))
        for ctx, answers in by_ctx.values():
            try:
                await ctx.reply_all(answers)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, RemotingError):
                pass  # the leader went away; it will push again

    async def _invoke(self, peer: str, code: int, body: bytes) -> RemotingCommand | None:
        client = self._client
        assert client is not None
        request = RemotingCommand.request(code, body=body)
        try:
            resp = await client.invoke(self.config.peers[peer], request, RPC_TIMEOUT_S)
        except Exception as exc:  # refused, reset, timed out: to the state machines a failed request
            log.debug("DLedger %s -> %s %d failed: %s", self.config.self_id, peer, code, exc)
            return None
        if resp.code != REPLY_HEADER_CODE:
            return None
        return resp

    async def _ask(self, s: Send) -> None:
        if isinstance(s.request, VoteRequest):
            raw = await self._invoke(s.peer, DLedgerRequestCode.VOTE, s.request.encode())
            vote = _decode(VoteResponse, raw)
            await self._carry(self.elector.on_vote_reply(s.round_id, s.peer, vote, self.now()))
        else:
            raw = await self._invoke(s.peer, DLedgerRequestCode.HEART_BEAT, s.request.encode())
            beat = _decode(HeartBeatResponse, raw)
            await self._carry(self.elector.on_heartbeat_reply(s.round_id, s.peer, beat, self.now()))

    def _send_push(self, s: SendPush) -> None:
        """A push joins this turn's write to the follower, its reply taken at the next turn (no task per push);
        the first push to a follower (or one after its connection broke) connects, in a task."""
        client = self._client
        assert client is not None and self._nursery is not None
        request = RemotingCommand.request(DLedgerRequestCode.PUSH, body=s.request.encode())
        token = s.token

        def done(future: ResponseFuture) -> None:
            resp = future.response
            self._push_replies.append((token, _decode(PushEntryResponse, resp if resp is not None and
                                                      resp.code == REPLY_HEADER_CODE else None)))
            self._kick.set()

        try:
            sent = client.send_soon(self.config.peers[s.peer], request, RPC_TIMEOUT_S, done)
        except RuntimeError:
            # the follower just left: its connection's nursery closed before the connection says it is closed
            # (trio closes it as its last task ends; the connection learns it when its reader task resumes)
            sent = None
        if sent is None:
            self._nursery.start_soon(self._push, s)

    async def _push(self, s: SendPush) -> None:
        raw = await self._invoke(s.peer, DLedgerRequestCode.PUSH, s.request.encode())
        await self._carry(self.pusher.on_push_reply(s.token, _decode(PushEntryResponse, raw), self.now()))

    # -- the peers' requests --------------------------------------------------------------------
    def _checked(self, ctx: RequestContext[Any], request: RemotingCommand, cls: type[Any]) -> Any:
        try:
            body = cls.decode(request.body or b"")
        except CodecError as exc:
            log.warning("DLedger %s: bad %s from %s: %s", self.config.self_id, cls.__name__, ctx.remote_addr, exc)
            return None
        return body

    def _refusal(self, body: Any, response_cls: type[Any]) -> Any:
        """DLedgerServer's checks: the request is for this member of this group."""
        st = self.state
        if body.remote_id != st.self_id:
            return response_cls(code=int(DLedgerResponseCode.UNKNOWN_MEMBER), group=body.group, term=st.curr_term)
        if body.group != self.config.group:
            return response_cls(code=int(DLedgerResponseCode.UNKNOWN_GROUP), group=body.group, term=st.curr_term)
        return None

    def _unexpected(self, request: RemotingCommand, response_cls: type[Any]) -> RemotingCommand:
        """The answer to a body that does not decode (DLedgerServer's UNEXPECTED_ARGUMENT)."""
        body = response_cls(code=int(DLedgerResponseCode.UNEXPECTED_ARGUMENT)).encode()
        return request.response(code=REPLY_HEADER_CODE, body=body)

    async def _elector_request(
        self, ctx: RequestContext[Any], request: RemotingCommand, request_cls: type[Any], response_cls: type[Any],
        handle: Callable[[Any, int], tuple[Any, list[Any]]],
    ) -> RemotingCommand:
        """A VOTE or HEART_BEAT: checked, answered by the elector, its outputs carried first."""
        body = self._checked(ctx, request, request_cls)
        if body is None:
            return self._unexpected(request, response_cls)
        resp = self._refusal(body, response_cls)
        if resp is None:
            resp, out = handle(body, self.now())
            await self._carry(out)
        return request.response(code=REPLY_HEADER_CODE, body=resp.encode())

    async def _on_vote(self, ctx: RequestContext[Any], request: RemotingCommand) -> RemotingCommand | None:
        return await self._elector_request(ctx, request, VoteRequest, VoteResponse, self.elector.handle_vote)

    async def _on_heartbeat(self, ctx: RequestContext[Any], request: RemotingCommand) -> RemotingCommand | None:
        return await self._elector_request(ctx, request, HeartBeatRequest, HeartBeatResponse,
                                           self.elector.handle_heartbeat)

    async def _on_push(self, ctx: RequestContext[Any], request: RemotingCommand) -> RemotingCommand | None:
        body = self._checked(ctx, request, PushEntryRequest)
        if body is None:
            return self._unexpected(request, PushEntryResponse)
        # answered when the entry handler gets to it (an APPEND may wait for the ones before it)
        await self._carry(self.handler.handle_push(body, (ctx, request), self.now()))
        return None

    # -- leadership transfer ---------------------------------------------------------------------------
    async def _on_leadership_transfer(
        self, ctx: RequestContext[Any], request: RemotingCommand
    ) -> RemotingCommand | None:
        body = self._checked(ctx, request, LeadershipTransferRequest)
        if body is None:
            return self._unexpected(request, LeadershipTransferResponse)
        resp = self._refusal(body, LeadershipTransferResponse)
        if resp is None:
            st = self.state
            if body.transfer_id == st.self_id:
                resp = await self.transfer_leadership(body.transferee_id or "", body.term)
            elif body.transferee_id == st.self_id:
                resp = await self._take_leadership(body)
            else:
                resp = self._transfer_answer(DLedgerResponseCode.UNEXPECTED_ARGUMENT)
        return request.response(code=REPLY_HEADER_CODE, body=resp.encode())

    def _transfer_answer(self, code: DLedgerResponseCode) -> LeadershipTransferResponse:
        st = self.state
        return LeadershipTransferResponse(code=int(code), group=self.config.group, term=st.curr_term,
                                          leader_id=st.leader_id, local_id=st.self_id)

    def _fall_behind(self, peer: str) -> int:
        st = self.state
        return self.ledger.end_index - self.pusher.peer_water_mark(st.curr_term, peer)

    async def transfer_leadership(self, transferee: str, term: int | None = None) -> LeadershipTransferResponse:
        """As the leader, hand leadership to ``transferee`` (DLedgerServer/DLedgerLeaderElector's
        handleLeadershipTransfer): appends are refused meanwhile, and the transferee, once caught up,
        stands for the next term at once."""
        st = self.state
        term = st.curr_term if term is None else term
        if not st.is_peer_member(transferee):
            return self._transfer_answer(DLedgerResponseCode.UNKNOWN_MEMBER)
        if st.curr_term != term:
            return self._transfer_answer(DLedgerResponseCode.INCONSISTENT_TERM)
        if st.role is not Role.LEADER:
            return self._transfer_answer(DLedgerResponseCode.NOT_LEADER)
        if self._fall_behind(transferee) >= self.config.max_leadership_transfer_wait_index:
            return self._transfer_answer(DLedgerResponseCode.FALL_BEHIND_TOO_MUCH)
        if st.transferee is not None:
            return self._transfer_answer(DLedgerResponseCode.LEADER_TRANSFERRING)
        st.transferee = transferee
        take = LeadershipTransferRequest(
            group=self.config.group, leader_id=st.leader_id, local_id=st.self_id, remote_id=transferee, term=term,
            take_leadership_ledger_index=st.ledger_end_index, transfer_id=st.self_id, transferee_id=transferee,
        )
        raw = await self._invoke(transferee, DLedgerRequestCode.LEADERSHIP_TRANSFER, take.encode())
        resp = _decode(LeadershipTransferResponse, raw) or self._transfer_answer(DLedgerResponseCode.NETWORK_ERROR)
        if resp.code != DLedgerResponseCode.SUCCESS or (st.curr_term == term and st.transferee is not None):
            log.warning("DLedger %s: leadership transfer to %s failed (%s)", st.self_id, transferee, resp.code)
            st.transferee = None
        return resp

    async def _take_leadership(self, req: LeadershipTransferRequest) -> LeadershipTransferResponse:
        """The transferee's side: wait to hold what the leader held, then stand at once; answered when the
        election it starts is decided (TakeLeadershipTask)."""
        st = self.state
        if req.transfer_id != st.leader_id:
            return self._transfer_answer(DLedgerResponseCode.INCONSISTENT_LEADER)
        with trio.move_on_after(self.config.leadership_transfer_wait_timeout_ms / 1000) as waited:
            while req.take_leadership_ledger_index > st.ledger_end_index:
                await trio.sleep(0.01)
        if waited.cancelled_caught:
            return self._transfer_answer(DLedgerResponseCode.TAKE_LEADERSHIP_FAILED)
        code, out = self.elector.take_leadership(req.term, self.now())
        if code is not None:
            return self._transfer_answer(code)
        take = self._take = _TakeLeadership()
        await self._carry(out)
        self._kick.set()
        with trio.move_on_after(RPC_TIMEOUT_S):
            await take.done.wait()
        return take.response or self._transfer_answer(DLedgerResponseCode.TAKE_LEADERSHIP_FAILED)

    def _check_take(self, term: int, role: Role) -> None:
        """TakeLeadershipTask.check: a role change settles the pending take-leadership answer."""
        take = self._take
        target = self.state.term_to_take_leadership
        if take is None or target == -1:
            return
        if term > target:
            code = DLedgerResponseCode.EXPIRED_TERM
        elif term == target:
            if role is Role.CANDIDATE:
                return
            code = DLedgerResponseCode.SUCCESS if role is Role.LEADER else DLedgerResponseCode.TAKE_LEADERSHIP_FAILED
        else:
            code = DLedgerResponseCode.TAKE_LEADERSHIP_FAILED if role is Role.FOLLOWER else \
                DLedgerResponseCode.INTERNAL_ERROR
        take.response = LeadershipTransferResponse(code=int(code), group=self.config.group, term=term,
                                                   local_id=self.state.self_id)
        take.done.set()
        self.state.term_to_take_leadership = -1
        self._take = None

    async def _check_preferred_leader(self) -> None:
        """DLedgerServer.checkPreferredLeader, every second: a leader that is not preferred hands over to
        the live preferred member that is least behind."""
        while True:
            await trio.sleep(1)
            st = self.state
            preferred = self.config.preferred_leader_ids
            if st.role is not Role.LEADER or st.transferee is not None or st.self_id in preferred:
                continue
            live = [p for p in preferred if st.is_peer_member(p) and st.peers_live.get(p, False)]
            if not live:
                continue
            best = min(live, key=self._fall_behind)
            if self._fall_behind(best) < self.config.max_leadership_transfer_wait_index:
                log.info("DLedger %s: preferred leader %s is %d behind: transferring", st.self_id, best,
                         self._fall_behind(best))
                resp = await self.transfer_leadership(best)
                log.info("DLedger %s: leadership transfer to %s answered %d", st.self_id, best, resp.code)

    # -- the broker's side ----------------------------------------------------------------------------
    def append_now(self, body: bytes) -> DLedgerEntry:
        """Append as the leader (DLedgerServer.handleAppend): the entry is written and its push starts at
        once; :meth:`wait_acked` waits for the quorum. LedgerError (NOT_LEADER, LEADER_PENDING_FULL,
        DISK_FULL...) when it cannot be appended."""
        entry = self.pusher.append(body, self.now())
        self._waiters[(entry.term, entry.index)] = _Waiter()
        self._kick.set()
        return entry

    async def wait_acked(self, term: int, index: int) -> AppendResult:
        """Wait until a quorum holds the entry :meth:`append_now` gave; LedgerError with Java's code
        (WAIT_QUORUM_ACK_TIMEOUT, or the member stepping down) otherwise."""
        waiter = self._waiters.get((term, index))
        if waiter is None:
            raise LedgerError(DLedgerResponseCode.UNKNOWN, f"entry {index} of term {term} is not awaited")
        await waiter.event.wait()
        result = waiter.result
        if isinstance(result, Acked):
            return AppendResult(result.index, result.term, result.pos)
        code = result.code if isinstance(result, AckFailed) else DLedgerResponseCode.INTERNAL_ERROR
        raise LedgerError(code, f"entry {index} of term {term}")

    def forget(self, term: int, index: int) -> None:
        """Stop waiting for an entry (its sender gave up): what its waiter held is let go."""
        self._waiters.pop((term, index), None)

    async def append(self, body: bytes) -> AppendResult:
        """Append as the leader and wait for a quorum; LedgerError with Java's code otherwise."""
        entry = self.append_now(body)
        return await self.wait_acked(entry.term, entry.index)


class _TakeLeadership:
    __slots__ = ("done", "response")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.response: LeadershipTransferResponse | None = None


def _decode(cls: Any, raw: RemotingCommand | None) -> Any:
    if raw is None or not raw.body:
        return None
    try:
        return cls.decode(raw.body)
    except CodecError:
        return None
