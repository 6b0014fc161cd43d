"""The Raft member of a DLedger group, sans-IO: MemberState and DLedgerLeaderElector of dledger 0.3.1.2.

Nothing here touches a socket, a file or a clock. The edge (a trio task) feeds it:

* :meth:`Elector.poll` with the time, as Java's StateMaintainer thread does every 10 ms (or at
  :meth:`Elector.next_deadline`);
* the requests a peer sends (:meth:`Elector.handle_vote`, :meth:`Elector.handle_heartbeat`), each
  answered at once with the reply to send back;
* the replies (or failures) of the requests it asked to send (:meth:`Elector.on_vote_reply`,
  :meth:`Elector.on_heartbeat_reply`).

Every call returns the :class:`Output` items to carry out in order: a :class:`PersistTerm` comes
before the reply or request that depends on it (Java writes ``currterm`` before answering ACCEPT),
:class:`Send` items go to peers, :class:`RoleChanged` tells the broker (DLedgerRoleChangeHandler).

Java waits on a latch for a vote or heartbeat round; here a round is an object that is settled by the
replies or by its deadline, and its outcome is parsed exactly as Java parses it.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass, field

from ..codecs.dledger import DLedgerResponseCode, HeartBeatRequest, HeartBeatResponse, VoteRequest, VoteResponse
from ..codecs.dledger import VoteResult as R

__all__ = [
    "DLedgerConfig",
    "Elector",
    "MemberState",
    "Output",
    "PersistTerm",
    "Role",
    "RoleChanged",
    "Send",
    "parse_peers",
]


class Role(enum.Enum):
    CANDIDATE = "CANDIDATE"
    FOLLOWER = "FOLLOWER"
    LEADER = "LEADER"


def parse_peers(peers: str) -> dict[str, str]:
    """``dLegerPeers`` (``n0-127.0.0.1:40911;n1-...``) as id -> address, in the order given."""
    out: dict[str, str] = {}
    for item in peers.split(";"):
        item = item.strip()
        if not item:
            continue
        node, sep, addr = item.partition("-")
        if not sep or not node or not addr:
            raise ValueError(f"dLegerPeers entry {item!r} is not <id>-<host:port>")
        out[node] = addr
    if not out:
        raise ValueError("dLegerPeers names no member")
    return out


@dataclass(frozen=True)
class DLedgerConfig:
    """The DLedgerConfig keys the elector reads, with DLedger 0.3.1.2's defaults."""

    group: str
    self_id: str
    peers: dict[str, str]
    heart_beat_time_interval_ms: int = 2000
    max_heart_beat_leak: int = 3
    min_vote_interval_ms: int = 300
    max_vote_interval_ms: int = 1000
    preferred_leader_ids: tuple[str, ...] = ()
    min_take_leadership_vote_interval_ms: int = 30
    max_take_leadership_vote_interval_ms: int = 100
    max_leadership_transfer_wait_index: int = 1000
    leadership_transfer_wait_timeout_ms: int = 1000

    def __post_init__(self) -> None:
        if self.self_id not in self.peers:
            raise ValueError(f"dLegerSelfId {self.self_id!r} is not one of dLegerPeers {sorted(self.peers)}")


@dataclass
class MemberState:
    """MemberState: role, term and vote; ``ledger_end_*`` are set by the store as entries are written."""

    config: DLedgerConfig
    curr_term: int = 0
    curr_vote_for: str | None = None
    role: Role = Role.CANDIDATE
    leader_id: str | None = None
    ledger_end_index: int = -1
    ledger_end_term: int = -1
    known_max_term_in_group: int = -1
    transferee: str | None = None
    term_to_take_leadership: int = -1
    peers_live: dict[str, bool] = field(default_factory=dict)

    @property
    def self_id(self) -> str:
        return self.config.self_id

    @property
    def peer_size(self) -> int:
        return len(self.config.peers)

    def is_quorum(self, n: int) -> bool:
        return n >= self.peer_size // 2 + 1

    def is_peer_member(self, node: str | None) -> bool:
        return node is not None and node in self.config.peers

    def next_term(self) -> int:
        assert self.role is Role.CANDIDATE, self.role
        if self.known_max_term_in_group > self.curr_term:
            self.curr_term = self.known_max_term_in_group
        else:
            self.curr_term += 1
        self.curr_vote_for = None
        return self.curr_term

    def change_to_leader(self, term: int) -> None:
        assert term == self.curr_term
        self.role, self.leader_id = Role.LEADER, self.self_id
        self.peers_live.clear()

    def change_to_follower(self, term: int, leader_id: str) -> None:
        assert term == self.curr_term
        self.role, self.leader_id, self.transferee = Role.FOLLOWER, leader_id, None

    def change_to_candidate(self, term: int) -> None:
        assert term >= self.curr_term
        self.known_max_term_in_group = max(self.known_max_term_in_group, term)
        # the term itself moves on when the candidate next asks for votes
        self.role, self.leader_id, self.transferee = Role.CANDIDATE, None, None


# -- outputs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PersistTerm:
    """Write ``currterm`` (``currTerm``, ``voteLeader``) before what follows goes out."""

    term: int
    vote_for: str | None


@dataclass(frozen=True)
class Send:
    """Send ``request`` to member ``peer``; its reply goes to ``on_vote_reply``/``on_heartbeat_reply``
    with ``round_id``."""

    peer: str
    request: VoteRequest | HeartBeatRequest
    round_id: int


@dataclass(frozen=True)
class RoleChanged:
    term: int
    role: Role


Output = PersistTerm | Send | RoleChanged


class _ParseResult(enum.Enum):
    WAIT_TO_REVOTE = 0
    REVOTE_IMMEDIATELY = 1
    PASSED = 2
    WAIT_TO_VOTE_NEXT = 3


@dataclass
class _VoteRound:
    round_id: int
    term: int
    deadline: int
    waiting: set[str]
    all_num: int = 0
    valid_num: int = 0
    accepted_num: int = 0
    not_ready_num: int = 0
    bigger_ledger_num: int = 0
    already_has_leader: bool = False
    known_max_term: int = 0
    released: bool = False


@dataclass
class _BeatRound:
    round_id: int
    term: int
    leader_id: str
    deadline: int
    waiting: set[str]
    all_num: int = 1
    succ_num: int = 1
    not_ready_num: int = 0
    max_term: int = -1
    inconsistent_leader: bool = False
    released: bool = False


class Elector:
    """DLedgerLeaderElector over a :class:`MemberState`; times are milliseconds of one clock."""

    def __init__(self, state: MemberState, *, rng: random.Random | None = None, now: int = 0) -> None:
        self.state = state
        self.config = state.config
        self.rng = rng or random.Random()
        self.last_leader_heartbeat = -1
        self.last_send_heartbeat = -1
        self.last_succ_heartbeat = -1
        self.next_time_to_request_vote = -1
        self.need_increase_term_immediately = False
        self.last_parse_result = _ParseResult.WAIT_TO_REVOTE
        self._round_ids = 0
        self._vote: _VoteRound | None = None
        self._beat: _BeatRound | None = None
        self._now = now
        #: the last (term, role) told as RoleChanged: a repeat is not told again
        self._told: tuple[int, Role] | None = None

    # -- the peers' requests ---------------------------------------------------------------------
    def handle_heartbeat(self, req: HeartBeatRequest, now: int) -> tuple[HeartBeatResponse, list[Output]]:
        self._now = now
        st = self.state
        out: list[Output] = []

        def reply(code: DLedgerResponseCode = DLedgerResponseCode.SUCCESS, term: int | None = None):
            r = HeartBeatResponse(code=int(code))
            if term is not None:
                r.term = term
            return r, out

        if not st.is_peer_member(req.leader_id):
            return reply(DLedgerResponseCode.UNKNOWN_MEMBER, st.curr_term)
        if req.leader_id == st.self_id:
            return reply(DLedgerResponseCode.UNEXPECTED_MEMBER, st.curr_term)
        if req.term < st.curr_term:
            return reply(DLedgerResponseCode.EXPIRED_TERM, st.curr_term)
        if req.term == st.curr_term:
            if st.leader_id is None:
                assert req.leader_id is not None
                self._change_to_follower(req.term, req.leader_id, out)
                return reply()
            if req.leader_id == st.leader_id:
                self.last_leader_heartbeat = now
                return reply()
            return reply(DLedgerResponseCode.INCONSISTENT_LEADER)
        # a larger term: candidate first, the maintainer moves the term on
        self._change_to_candidate(req.term, out)
        self.need_increase_term_immediately = True
        return reply(DLedgerResponseCode.TERM_NOT_READY)

    def handle_vote(self, req: VoteRequest, now: int, *, self_vote: bool = False) -> tuple[VoteResponse, list[Output]]:
        self._now = now
        st = self.state
        out: list[Output] = []

        def reply(result: R, term: int | None = None) -> tuple[VoteResponse, list[Output]]:
            r = VoteResponse(
                code=req.code,
                group=req.group,
                leader_id=req.leader_id,
                local_id=req.local_id,
                remote_id=req.remote_id,
                term=st.curr_term if term is None else term,
                vote_result=result,
            )
            return r, out

        if not st.is_peer_member(req.leader_id):
            return reply(R.REJECT_UNKNOWN_LEADER)
        if not self_vote and req.leader_id == st.self_id:
            return reply(R.REJECT_UNEXPECTED_LEADER)
        if req.ledger_end_term < st.ledger_end_term:
            return reply(R.REJECT_EXPIRED_LEDGER_TERM)
        if req.ledger_end_term == st.ledger_end_term and req.ledger_end_index < st.ledger_end_index:
            return reply(R.REJECT_SMALL_LEDGER_END_INDEX)
        if req.term < st.curr_term:
            return reply(R.REJECT_EXPIRED_VOTE_TERM)
        if req.term == st.curr_term:
            if st.curr_vote_for is not None and st.curr_vote_for != req.leader_id:
                return reply(R.REJECT_ALREADY_HAS_LEADER if st.leader_id is not None else R.REJECT_ALREADY_VOTED)
        else:
            self._change_to_candidate(req.term, out)
            self.need_increase_term_immediately = True
            return reply(R.REJECT_TERM_NOT_READY)
        if req.term < st.ledger_end_term:
            return reply(R.REJECT_TERM_SMALL_THAN_LEDGER, st.ledger_end_term)
        if (
            not self_vote
            and self._taking_leadership()
            and req.ledger_end_term == st.ledger_end_term
            and st.ledger_end_index >= req.ledger_end_index
        ):
            return reply(R.REJECT_TAKING_LEADERSHIP)
        st.curr_vote_for = req.leader_id
        out.append(PersistTerm(st.curr_term, st.curr_vote_for))
        return reply(R.ACCEPT)

    # -- the maintainer ----------------------------------------------------------------------------
    def poll(self, now: int) -> list[Output]:
        """One turn of StateMaintainer.doWork: settle a round whose deadline passed, then maintain."""
        self._now = now
        out: list[Output] = []
        if self._vote is not None and now >= self._vote.deadline:
            self._finish_vote(self._vote, out)
        if self._beat is not None and now >= self._beat.deadline:
            self._finish_beat(self._beat, out)
        if self._vote is not None or self._beat is not None:
            return out  # Java's maintainer is blocked on the round's latch
        role = self.state.role
        if role is Role.LEADER:
            self._maintain_as_leader(out)
        elif role is Role.FOLLOWER:
            self._maintain_as_follower(out)
        else:
            self._maintain_as_candidate(out)
        return out

    def next_deadline(self) -> int:
        """The latest time :meth:`poll` may next be called without changing what happens."""
        st, cfg = self.state, self.config
        if self._vote is not None:
            return self._vote.deadline
        if self._beat is not None:
            return self._beat.deadline
        if st.role is Role.LEADER:
            return self.last_send_heartbeat + cfg.heart_beat_time_interval_ms + 1
        if st.role is Role.FOLLOWER:
            return self.last_leader_heartbeat + cfg.max_heart_beat_leak * cfg.heart_beat_time_interval_ms + 1
        if self.need_increase_term_immediately:
            return self._now
        return max(self._now, self.next_time_to_request_vote)

    def _maintain_as_leader(self, out: list[Output]) -> None:
        cfg = self.config
        if self._now - self.last_send_heartbeat <= cfg.heart_beat_time_interval_ms:
            return
        st = self.state
        self.last_send_heartbeat = self._now
        assert st.leader_id is not None
        peers = [p for p in cfg.peers if p != st.self_id]
        rnd = _BeatRound(self._next_round(), st.curr_term, st.leader_id, self._now + cfg.heart_beat_time_interval_ms,
                         set(peers))
        self._beat = rnd
        for peer in peers:
            req = HeartBeatRequest(group=cfg.group, local_id=st.self_id, remote_id=peer, leader_id=st.leader_id,
                                   term=st.curr_term)
            out.append(Send(peer, req, rnd.round_id))
        if not peers:
            self._finish_beat(rnd, out)

    def _maintain_as_follower(self, out: list[Output]) -> None:
        cfg = self.config
        if self._now - self.last_leader_heartbeat > cfg.max_heart_beat_leak * cfg.heart_beat_time_interval_ms:
            self._change_to_candidate(self.state.curr_term, out)  # [HeartBeatTimeOut]: told, as Java's

    def _maintain_as_candidate(self, out: list[Output]) -> None:
        st, cfg = self.state, self.config
        if self._now < self.next_time_to_request_vote and not self.need_increase_term_immediately:
            return
        if self.last_parse_result is _ParseResult.WAIT_TO_VOTE_NEXT or self.need_increase_term_immediately:
            term = st.next_term()
            out.append(PersistTerm(st.curr_term, st.curr_vote_for))
            self.last_parse_result = _ParseResult.WAIT_TO_REVOTE
        else:
            term = st.curr_term
        if self.need_increase_term_immediately:
            self.next_time_to_request_vote = self._next_time_to_request_vote()
            self.need_increase_term_immediately = False
            return
        rnd = _VoteRound(
            self._next_round(),
            term,
            self._now + 2000 + self.rng.randrange(cfg.max_vote_interval_ms),
            set(cfg.peers),
            known_max_term=term,
        )
        self._vote = rnd
        own: VoteResponse | None = None
        for peer in cfg.peers:
            req = VoteRequest(group=cfg.group, ledger_end_index=st.ledger_end_index, ledger_end_term=st.ledger_end_term,
                              leader_id=st.self_id, term=term, remote_id=peer, local_id=st.self_id)
            if peer == st.self_id:
                own, more = self.handle_vote(req, self._now, self_vote=True)
                out.extend(more)
            else:
                out.append(Send(peer, req, rnd.round_id))
        if own is not None:  # counted once every request is out, as Java's latch is
            self._count_vote(rnd, st.self_id, own, out)

    # -- replies to our requests -------------------------------------------------------------------
    def on_vote_reply(self, round_id: int, peer: str, resp: VoteResponse | None, now: int) -> list[Output]:
        """A peer's reply to a vote request, or None when the request failed (timeout, connection)."""
        self._now = now
        out: list[Output] = []
        rnd = self._vote
        if rnd is not None and rnd.round_id == round_id and peer in rnd.waiting:
            self._count_vote(rnd, peer, resp, out)
        return out

    def on_heartbeat_reply(self, round_id: int, peer: str, resp: HeartBeatResponse | None, now: int) -> list[Output]:
        self._now = now
        out: list[Output] = []
        rnd = self._beat
        if rnd is None or rnd.round_id != round_id or peer not in rnd.waiting:
            return out
        rnd.waiting.discard(peer)
        st = self.state
        if resp is None:
            st.peers_live[peer] = False
        else:
            code = resp.code
            if code == DLedgerResponseCode.SUCCESS:
                rnd.succ_num += 1
            elif code == DLedgerResponseCode.EXPIRED_TERM:
                rnd.max_term = resp.term
            elif code == DLedgerResponseCode.INCONSISTENT_LEADER:
                rnd.inconsistent_leader = True
            elif code == DLedgerResponseCode.TERM_NOT_READY:
                rnd.not_ready_num += 1
            st.peers_live[peer] = code != DLedgerResponseCode.NETWORK_ERROR
            if st.is_quorum(rnd.succ_num) or st.is_quorum(rnd.succ_num + rnd.not_ready_num):
                rnd.released = True
        rnd.all_num += 1
        if rnd.all_num == st.peer_size:
            rnd.released = True
        if rnd.released:
            self._finish_beat(rnd, out)
        return out

    def _count_vote(self, rnd: _VoteRound, peer: str, resp: VoteResponse | None, out: list[Output]) -> None:
        rnd.waiting.discard(peer)
        st = self.state
        if resp is not None:
            result = resp.vote_result
            if result is not R.UNKNOWN:
                rnd.valid_num += 1
            if result is R.ACCEPT:
                rnd.accepted_num += 1
            elif result is R.REJECT_ALREADY_HAS_LEADER:
                rnd.already_has_leader = True
            elif result in (R.REJECT_TERM_SMALL_THAN_LEDGER, R.REJECT_EXPIRED_VOTE_TERM):
                rnd.known_max_term = max(rnd.known_max_term, resp.term)
            elif result in (R.REJECT_EXPIRED_LEDGER_TERM, R.REJECT_SMALL_LEDGER_END_INDEX):
                rnd.bigger_ledger_num += 1
            elif result is R.REJECT_TERM_NOT_READY:
                rnd.not_ready_num += 1
            if (
                rnd.already_has_leader
                or st.is_quorum(rnd.accepted_num)
                or st.is_quorum(rnd.accepted_num + rnd.not_ready_num)
            ):
                rnd.released = True
        rnd.all_num += 1
        if rnd.all_num == st.peer_size:
            rnd.released = True
        if rnd.released and rnd is self._vote:
            self._finish_vote(rnd, out)  # replies still to come are too late for this round, as in Java

    def _finish_vote(self, rnd: _VoteRound, out: list[Output]) -> None:
        self._vote = None
        st, cfg = self.state, self.config
        if rnd.known_max_term > rnd.term:
            parse = _ParseResult.WAIT_TO_VOTE_NEXT
            self.next_time_to_request_vote = self._next_time_to_request_vote()
            self._change_to_candidate(rnd.known_max_term, out)
        elif rnd.already_has_leader:
            parse = _ParseResult.WAIT_TO_REVOTE
            self.next_time_to_request_vote = (
                self._next_time_to_request_vote() + cfg.heart_beat_time_interval_ms * cfg.max_heart_beat_leak
            )
        elif not st.is_quorum(rnd.valid_num):
            parse = _ParseResult.WAIT_TO_REVOTE
            self.next_time_to_request_vote = self._next_time_to_request_vote()
        elif not st.is_quorum(rnd.valid_num - rnd.bigger_ledger_num):
            parse = _ParseResult.WAIT_TO_REVOTE
            self.next_time_to_request_vote = self._next_time_to_request_vote() + cfg.max_vote_interval_ms
        elif st.is_quorum(rnd.accepted_num):
            parse = _ParseResult.PASSED
        elif st.is_quorum(rnd.accepted_num + rnd.not_ready_num):
            parse = _ParseResult.REVOTE_IMMEDIATELY
        else:
            parse = _ParseResult.WAIT_TO_VOTE_NEXT
            self.next_time_to_request_vote = self._next_time_to_request_vote()
        self.last_parse_result = parse
        if parse is _ParseResult.PASSED and st.role is Role.CANDIDATE and st.curr_term == rnd.term:
            st.change_to_leader(rnd.term)
            self.last_send_heartbeat = -1
            self._tell(rnd.term, Role.LEADER, out)

    def _finish_beat(self, rnd: _BeatRound, out: list[Output]) -> None:
        self._beat = None
        st, cfg = self.state, self.config
        if st.is_quorum(rnd.succ_num):
            self.last_succ_heartbeat = self._now
            return
        if st.is_quorum(rnd.succ_num + rnd.not_ready_num):
            self.last_send_heartbeat = -1
        elif rnd.max_term > rnd.term:
            self._change_to_candidate(rnd.max_term, out)
        elif rnd.inconsistent_leader:
            self._change_to_candidate(rnd.term, out)
        elif self._now - self.last_succ_heartbeat > cfg.max_heart_beat_leak * cfg.heart_beat_time_interval_ms:
            self._change_to_candidate(rnd.term, out)

    # -- leadership transfer -----------------------------------------------------------------------
    def take_leadership(self, term: int, now: int) -> tuple[DLedgerResponseCode | None, list[Output]]:
        """handleTakeLeadership: the transferee stands at once for ``term + 1`` (None and the outputs), or
        the code it refuses with."""
        st = self.state
        if st.curr_term != term:
            return DLedgerResponseCode.INCONSISTENT_TERM, []
        self._now = now
        st.term_to_take_leadership = term + 1
        out: list[Output] = []
        self._change_to_candidate(term + 1, out)
        self.need_increase_term_immediately = True
        return None, out

    # -- role changes ------------------------------------------------------------------------------
    def _change_to_candidate(self, term: int, out: list[Output]) -> None:
        st = self.state
        if term < st.curr_term:
            return
        st.change_to_candidate(term)
        self._tell(term, Role.CANDIDATE, out)

    def _change_to_follower(self, term: int, leader_id: str, out: list[Output]) -> None:
        self.last_parse_result = _ParseResult.WAIT_TO_REVOTE
        self.state.change_to_follower(term, leader_id)
        self.last_leader_heartbeat = self._now
        self._tell(term, Role.FOLLOWER, out)

    def _tell(self, term: int, role: Role, out: list[Output]) -> None:
        """handleRoleChange, once a change: Java calls it (and logs [ChangeRoleToCandidate]) on every
        changeRoleToCandidate, and a member still at the lower term calls that for every vote request and
        heartbeat of the higher one (21 times in 100 ms at a group's start); the role and term are the same,
        the handlers would do nothing new, so only a change of role or term is told."""
        if self._told != (term, role):
            self._told = (term, role)
            out.append(RoleChanged(term, role))

    def _taking_leadership(self) -> bool:
        st = self.state
        return (
            bool(self.config.preferred_leader_ids)
            and st.term_to_take_leadership == st.curr_term
            and st.self_id in self.config.preferred_leader_ids
        )

    def _next_time_to_request_vote(self) -> int:
        cfg = self.config
        if self._taking_leadership():
            lo, hi = cfg.min_take_leadership_vote_interval_ms, cfg.max_take_leadership_vote_interval_ms
        else:
            lo, hi = cfg.min_vote_interval_ms, cfg.max_vote_interval_ms
        return self._now + lo + self.rng.randrange(hi - lo)

    def _next_round(self) -> int:
        self._round_ids += 1
        return self._round_ids
