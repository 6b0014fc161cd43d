"""DLedger replication, sans-IO: leaders push, followers append, compare and truncate, quorum acks;
whole groups of elector + pusher + handler on a simulated network and clock, as in captures/16-dledger."""

from __future__ import annotations

import heapq
import random

import pytest

from rocketpy.codecs.dledger import DLedgerResponseCode, PushEntryRequest, PushType, VoteRequest
from rocketpy.dledger.ledger import LedgerError, MemoryLedger
from rocketpy.dledger.member import DLedgerConfig, Elector, MemberState, PersistTerm, Role, Send, parse_peers
from rocketpy.dledger.replication import Acked, AckFailed, EntryHandler, Pusher, PushReply, SendPush

PEERS = parse_peers("n0-127.0.0.1:40911;n1-127.0.0.1:40912;n2-127.0.0.1:40913")


class Node:
    def __init__(self, node_id: str, seed: int, ledger: MemoryLedger | None = None, term: int = 0,
                 vote: str | None = None) -> None:
        self.id = node_id
        self.ledger = ledger or MemoryLedger()
        self.state = MemberState(DLedgerConfig(group="broker-dl", self_id=node_id, peers=PEERS), curr_term=term,
                                 curr_vote_for=vote, ledger_end_index=self.ledger.end_index,
                                 ledger_end_term=self.ledger.end_term)
        self.elector = Elector(self.state, rng=random.Random(seed))
        self.pusher = Pusher(self.state, self.ledger)
        self.handler = EntryHandler(self.state, self.ledger)
        self.persisted = (term, vote)


class Group:
    """1 ms each way; a down member's peers see their requests fail 1 ms later; 10 ms turns, as Java's threads."""

    def __init__(self, seed: int = 0) -> None:
        self.nodes = {m: Node(m, seed * 10 + i) for i, m in enumerate(PEERS)}
        self.down: set[str] = set()
        self.cut: set[frozenset[str]] = set()
        self.now = 0
        self._q: list = []
        self._n = 0
        self.acked: dict[int, Acked] = {}
        self.failed: list[AckFailed] = []
        self.pushes: list[tuple[str, str, PushEntryRequest]] = []
        self.replies: list[tuple[str, str, PushEntryRequest, object]] = []

    def at(self, t, fn) -> None:
        self._n += 1
        heapq.heappush(self._q, (t, self._n, fn))

    def reachable(self, a: str, b: str) -> bool:
        return b not in self.down and frozenset((a, b)) not in self.cut

    def carry(self, src: str, outputs) -> None:
        node = self.nodes[src]
        for o in outputs:
            if isinstance(o, PersistTerm):
                node.persisted = (o.term, o.vote_for)
            elif isinstance(o, Send):
                self.at(self.now + 1, lambda o=o, src=src: self._vote_or_beat(src, o))
            elif isinstance(o, SendPush):
                self.pushes.append((src, o.peer, o.request))
                self.at(self.now + 1, lambda o=o, src=src: self._push(src, o))
            elif isinstance(o, PushReply):
                self.at(self.now + 1, lambda o=o: o.token(o.response))
            elif isinstance(o, Acked):
                self.acked[o.index] = o
            elif isinstance(o, AckFailed):
                self.failed.append(o)

    def _vote_or_beat(self, src: str, s: Send) -> None:
        if src in self.down:
            return
        sender = self.nodes[src]
        reply = None
        if self.reachable(src, s.peer):
            dst = self.nodes[s.peer]
            h = dst.elector.handle_vote if isinstance(s.request, VoteRequest) else dst.elector.handle_heartbeat
            reply, out = h(s.request, self.now)
            self.carry(s.peer, out)
        on = sender.elector.on_vote_reply if isinstance(s.request, VoteRequest) else sender.elector.on_heartbeat_reply
        self.at(self.now + 1, lambda: src in self.down or self.carry(src, on(s.round_id, s.peer, reply, self.now)))

    def _push(self, src: str, s: SendPush) -> None:
        if src in self.down:
            return
        sender = self.nodes[src]
        if not self.reachable(src, s.peer):
            self.at(self.now + 1, lambda: src in self.down or self.carry(src, sender.pusher.on_push_reply(
                s.token, None, self.now)))
            return

        def answer(resp, src=src, s=s, sender=sender) -> None:
            self.replies.append((src, s.peer, s.request, resp))
            if src not in self.down:
                self.carry(src, sender.pusher.on_push_reply(s.token, resp, self.now))

        self.carry(s.peer, self.nodes[s.peer].handler.handle_push(s.request, answer, self.now))

    def run(self, until: int) -> None:
        while self.now < until:
            tick = self.now + 10 - self.now % 10
            self.now = min(self._q[0][0], tick) if self._q else tick
            while self._q and self._q[0][0] <= self.now:
                heapq.heappop(self._q)[2]()
            if self.now % 10 == 0:
                for m, n in self.nodes.items():
                    if m not in self.down:
                        self.carry(m, n.elector.poll(self.now))
                        self.carry(m, n.pusher.poll(self.now))
                        self.carry(m, n.handler.poll(self.now))

    def leader(self) -> Node:
        leaders = [n for m, n in self.nodes.items() if m not in self.down and n.state.role is Role.LEADER]
        assert len(leaders) == 1, [n.id for n in leaders]
        return leaders[0]

    def send(self, n: int, prefix: bytes = b"msg") -> list[int]:
        leader = self.leader()
        return [leader.pusher.append(prefix + b"-%d" % i, self.now).index for i in range(n)]

    def kill(self, m: str) -> None:
        self.down.add(m)

    def restart(self, m: str, seed: int = 99) -> None:
        old = self.nodes[m]
        term, vote = old.persisted
        self.nodes[m] = Node(m, seed, ledger=old.ledger, term=term, vote=vote)
        self.down.discard(m)


def entries(node: Node) -> list[tuple[int, int, int, bytes]]:
    return [(e.index, e.term, e.pos, e.body) for e in node.ledger.entries]


def test_first_entries_go_compare_truncate_append_as_in_the_capture() -> None:
    g = Group()
    g.run(10_000)
    leader = g.leader()
    assert not g.pushes or all(r.type is PushType.COMMIT for _, _, r in g.pushes)  # nothing while empty
    g.send(1)  # as in the capture, one send at a time
    g.run(g.now + 100)
    g.send(29)
    g.run(g.now + 2_000)
    assert sorted(g.acked) == list(range(30))
    for follower in (m for m in PEERS if m != leader.id):
        kinds = [(r.type, r.first_index() if r.entry_count() else None) for s, d, r in g.pushes
                 if s == leader.id and d == follower and r.type is not PushType.COMMIT]
        assert kinds[:3] == [(PushType.COMPARE, 0), (PushType.TRUNCATE, 0), (PushType.APPEND, 1)]
        first = next(resp for s, d, r, resp in g.replies if d == follower and r.type is PushType.COMPARE)
        assert (first.code, first.end_index) == (DLedgerResponseCode.INCONSISTENT_STATE, -1)
    assert entries(g.nodes["n0"]) == entries(g.nodes["n1"]) == entries(g.nodes["n2"])
    g.run(g.now + 3_000)  # idle: COMMIT pushes carry the committed index to the followers
    assert {n.ledger.committed_index for n in g.nodes.values()} == {29}
    commits = [r for s, _, r in g.pushes if r.type is PushType.COMMIT and r.commit_index == 29]
    assert commits and all(r.entry is None for r in commits)
    # the 29 sent together went out in batched APPENDs (Java's batch push), not one push an entry
    appends = [r for s, d, r in g.pushes if s == leader.id and r.type is PushType.APPEND]
    assert any(r.entry_count() > 1 and r.entry is None for r in appends)
    assert sum(r.entry_count() for r in appends) == 2 * 29 and len(appends) < 2 * 29


def test_push_bodies_round_trip_as_java_writes_them() -> None:
    g = Group()
    g.run(10_000)
    g.send(3)
    g.run(g.now + 1_000)
    for _, _, req in g.pushes:
        again = PushEntryRequest.decode(req.encode())
        assert again.encode() == req.encode()
        assert again.count == req.entry_count()


def test_acks_need_a_quorum_and_time_out_without_one() -> None:
    g = Group()
    g.run(10_000)
    leader = g.leader()
    one, two = (m for m in PEERS if m != leader.id)
    g.kill(one)
    g.send(5)
    g.run(g.now + 500)
    assert sorted(g.acked) == list(range(5))  # the leader and one follower are a quorum of three
    g.cut.add(frozenset((leader.id, two)))
    before = g.now
    g.send(2, b"lost")
    g.run(before + 2_400)
    assert sorted(g.acked) == list(range(5)) and not g.failed
    g.run(before + 2_600)
    assert [(f.index, f.code) for f in g.failed] == [(5, DLedgerResponseCode.WAIT_QUORUM_ACK_TIMEOUT),
                                                     (6, DLedgerResponseCode.WAIT_QUORUM_ACK_TIMEOUT)]


def test_an_isolated_leader_answers_every_pending_append_at_its_deadline_in_order() -> None:
    """QuorumAckChecker's checkResponseFuturesTimeout: each pending append past maxWaitAckTimeMs is answered
    WAIT_QUORUM_ACK_TIMEOUT and the walk goes on to the next, so appends made 300 ms apart are each answered
    at their own deadline, in index order, long before the leader steps down (and the broker's 10 s cap)."""
    g = Group()
    g.run(10_000)
    g.send(3)
    g.run(g.now + 500)
    assert sorted(g.acked) == [0, 1, 2]
    leader = g.leader()
    for other in PEERS:
        if other != leader.id:
            g.cut.add(frozenset((leader.id, other)))
    sent_at = {}
    for _ in range(5):
        sent_at[g.send(1, b"alone")[0]] = g.now
        g.run(g.now + 300)
    answered_at: dict[int, int] = {}
    while g.now < max(sent_at.values()) + 3_000:
        g.run(g.now + 10)
        for f in g.failed:
            answered_at.setdefault(f.index, g.now)
    assert g.leader() is leader  # still leading: the answers came from the quorum check, not a step-down
    assert [(f.index, f.code) for f in g.failed] == [(i, DLedgerResponseCode.WAIT_QUORUM_ACK_TIMEOUT)
                                                     for i in sorted(sent_at)]
    for i, t in sent_at.items():
        assert 2_500 <= answered_at[i] - t <= 2_520, (i, answered_at[i] - t)
    assert sorted(g.acked) == [0, 1, 2]
    g.run(g.now + 10_000)  # the step-down answers nothing twice
    assert len(g.failed) == 5


def test_a_follower_refuses_appends_and_a_member_that_is_not_leader_refuses_sends() -> None:
    g = Group()
    g.run(10_000)
    follower = next(n for n in g.nodes.values() if n.state.role is Role.FOLLOWER)
    with pytest.raises(LedgerError) as err:
        follower.pusher.append(b"x", g.now)
    assert err.value.code is DLedgerResponseCode.NOT_LEADER


@pytest.mark.parametrize("seed", range(4))
def test_failover_keeps_every_acknowledged_entry_and_drops_what_was_never_committed(seed: int) -> None:
    g = Group(seed)
    g.run(10_000)
    g.send(30)
    g.run(g.now + 1_000)
    assert sorted(g.acked) == list(range(30))
    old = g.leader()
    # the old leader takes one more entry but dies before any follower has it
    for other in PEERS:
        if other != old.id:
            g.cut.add(frozenset((old.id, other)))
    g.send(1, b"never-committed")
    g.run(g.now + 50)
    assert 30 not in g.acked and old.ledger.end_index == 30
    g.kill(old.id)
    g.cut.clear()
    died = g.now
    g.run(died + 12_000)
    new = g.leader()
    assert new.id != old.id and new.state.curr_term > old.state.curr_term
    g.send(20, b"after")
    g.run(g.now + 1_000)
    assert sorted(g.acked) == list(range(50))
    # the new leader's first push to the surviving follower compares at 29 and appends from 30 on
    survivor = next(m for m in PEERS if m not in (old.id, new.id))
    after = [(r.type, r.first_index()) for s, d, r in g.pushes
             if s == new.id and d == survivor and r.entry_count() and r.term == new.state.curr_term]
    assert after[0] == (PushType.COMPARE, 29) and after[1] == (PushType.APPEND, 30)
    # the old leader rejoins: its never-committed entry 30 (old term) is replaced by the new leader's
    g.restart(old.id)
    g.run(g.now + 15_000)
    assert g.leader().id == new.id
    assert entries(g.nodes[old.id]) == entries(new) == entries(g.nodes[survivor])
    assert all(b"never-committed" not in e.body for e in g.nodes[old.id].ledger.entries)
    assert any(r.type is PushType.TRUNCATE for s, d, r in g.pushes if d == old.id and r.term == new.state.curr_term)
