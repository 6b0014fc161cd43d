"""Three of our brokers in one DLedger group (enableDLegerCommitLog=true) behind our NameServer, with our
client: the leader registers as brokerId 0 and the followers as node number + 1, sends are answered once a
quorum holds them and reach every member's ConsumeQueues, a follower refuses sends, and when the leader
stops another one takes over the writes while the old one, back, catches up."""

from __future__ import annotations

import dataclasses
import shutil
from contextlib import asynccontextmanager

import trio
from test_ha import commit_log_bytes, wait_until
from test_ha_cluster import BrokerHandle as _BrokerHandle
from test_ha_cluster import client_config, namesrv

from rocketpy.broker.controller import BrokerController
from rocketpy.broker.dledger import BrokerDLedger, member_config
from rocketpy.client import Producer, make_message
from rocketpy.codecs import RequestCode, ResponseCode
from rocketpy.codecs.bodies import KVTable
from rocketpy.codecs.codes import SendStatus
from rocketpy.dledger.ledger import MemoryLedger
from rocketpy.dledger.member import DLedgerConfig, Role, parse_peers
from rocketpy.dledger.node import DLedgerNode
from rocketpy.testing import broker_client, broker_test_config, free_port, pull_queues

#: heartbeats every second instead of two (a dead leader is noticed after 3 s, not 6); the group runs on
#: the real clock: its members wait on each other's threads, which a virtual clock would jump over
FAST = dict(heart_beat_time_interval_ms=1000)

TOPIC = "DlTopic"


def group_props(ns_addr: str, ports: list[int], node: int, **extra: object) -> dict[str, object]:
    peers = ";".join(f"n{i}-127.0.0.1:{p}" for i, p in enumerate(ports))
    return dict(
        namesrvAddr=ns_addr,
        brokerName="broker-dl",
        enableDLegerCommitLog="true",
        dLegerGroup="broker-dl",
        dLegerPeers=peers,
        dLegerSelfId=f"n{node}",
        **extra,
    )


class BrokerHandle(_BrokerHandle):
    """A group member with DLedger's timers cut, stoppable and startable again on the same store and ports."""

    async def start(self) -> BrokerController:
        broker = self.broker = BrokerController(broker_test_config(self.store_dir, **self.props))
        broker.dledger = BrokerDLedger(broker, dataclasses.replace(member_config(broker), **FAST))
        await self.nursery.start(broker.run)
        return broker


def leader_of(handles: list[BrokerHandle]) -> BrokerController | None:
    for h in handles:
        b = h.broker
        if b is not None and b.nursery is not None and b.dledger is not None and b.dledger.role is Role.LEADER:
            if b.config.broker_id == 0:
                return b
    return None


async def send_all(ns, bodies: list[str]) -> list[str]:  # type: ignore[no-untyped-def]
    ids = []
    async with Producer("DlPG", config=client_config(ns)) as p:
        for body in bodies:
            r = await p.send(make_message(TOPIC, body, tags="A", keys=body))
            assert r.send_status == SendStatus.SEND_OK
            ids.append(r.offset_msg_id)
    return ids


async def test_group_elects_replicates_and_fails_over(tmp_path):
    async with namesrv(tmp_path) as ns, trio.open_nursery() as nursery:
        ports = [free_port() for _ in range(3)]
        handles = [
            BrokerHandle(nursery, str(tmp_path / f"n{i}"), **group_props(ns.address, ports, i)) for i in range(3)
        ]
        for h in handles:
            await h.start()
        await wait_until(lambda: leader_of(handles) is not None, what="a leader registered as master")
        leader = leader_of(handles)
        assert leader is not None
        followers = [h.broker for h in handles if h.broker is not leader]
        await wait_until(lambda: all(f is not None and f.ha.is_slave for f in followers), what="two slaves")
        # brokerId: 0 for the leader, node number + 1 for the followers (DLedgerCommitLog.id)
        for f in followers:
            assert f is not None
            assert f.config.broker_id == int(f.config.store.d_leger_self_id[1:]) + 1
        route_ids = lambda: set(ns.routes.broker_addr_table["broker-dl"].broker_addrs)  # noqa: E731
        await wait_until(lambda: route_ids() == {0, *(f.config.broker_id for f in followers if f)},
                         what="the NameServer knows the roles")

        ids = await send_all(ns, [f"m{i}" for i in range(20)])
        # every member has the entries and dispatched them into its own ConsumeQueues
        end = leader.store.commitlog.max_offset
        await wait_until(lambda: all(f is not None and f.store.commitlog.max_offset == end for f in followers),
                         what="followers committed")
        for f in followers:
            assert f is not None
            assert commit_log_bytes(f, end) == commit_log_bytes(leader, end)
            await wait_until(lambda f=f: f.store.get_max_offset_in_queue(TOPIC, 0) >= 0 and sum(
                f.store.get_max_offset_in_queue(TOPIC, q) for q in range(4)) == 20, what="follower dispatch")
        # offset message ids name the record inside the entry: pos + 48
        first = leader.store.ledger.get(0)
        assert first is not None and int(ids[0][16:], 16) == first.pos + 48

        # a follower refuses sends as a Java slave does
        f0 = followers[0]
        assert f0 is not None
        async with broker_client(f0.address) as c:
            resp = await c.send(TOPIC, b"x", queue_id=0)
            assert resp.code == ResponseCode.SERVICE_NOT_AVAILABLE

        # the leader goes away: another member is elected and takes the writes
        old = next(h for h in handles if h.broker is leader)
        await old.stop()
        await wait_until(lambda: leader_of(handles) not in (None, leader), timeout=60, what="a new leader")
        new_leader = leader_of(handles)
        assert new_leader is not None
        ids += await send_all(ns, [f"m{i}" for i in range(20, 40)])

        # the old leader comes back as a follower and catches up
        back = await old.start()
        await wait_until(lambda: back.ha.is_slave and back.store.commitlog.max_offset
                         == new_leader.store.commitlog.max_offset, timeout=60, what="the old leader caught up")
        got = await pull_queues(new_leader.address, TOPIC, 4)
        assert sorted(b.decode() for b in got.values()) == sorted(f"m{i}" for i in range(40))
        got_back = await pull_queues(back.address, TOPIC, 4)
        assert got_back == got
        for h in handles:
            await h.stop()
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def led_by_our_broker(tmp_path):  # type: ignore[no-untyped-def]
    """Our broker n0 leading a group of three whose other members are bare DLedger members (no broker): yields
    the broker and the others' cancel scopes, once both follow it."""
    ports = [free_port() for _ in range(3)]
    props = group_props("", ports, 0, preferredLeaderId="n0")
    peers = parse_peers(str(props["dLegerPeers"]))
    async with trio.open_nursery() as nursery:
        bare = {}
        for m in ("n1", "n2"):
            node = DLedgerNode(DLedgerConfig(group="broker-dl", self_id=m, peers=peers, preferred_leader_ids=("n0",)),
                               MemoryLedger(), checkpoint_interval_s=float("inf"))
            scope = trio.CancelScope()

            async def run(node=node, scope=scope, task_status=trio.TASK_STATUS_IGNORED) -> None:
                with scope:
                    await node.run(task_status=task_status)

            await nursery.start(run)
            bare[m] = (node, scope)
        broker = BrokerController(broker_test_config(str(tmp_path / "n0"), **props))
        await nursery.start(broker.run)
        await wait_until(lambda: broker.dledger is not None and broker.dledger.role is Role.LEADER
                         and broker.config.broker_id == 0 and not broker.ha.is_slave
                         and all(n.role is Role.FOLLOWER and n.leader_id == "n0" for n, _ in bare.values()),
                         timeout=60, tick=0.1, what="our broker leads the others")
        yield broker, [scope for _, scope in bare.values()]
        await broker.stop()
        nursery.cancel_scope.cancel()


async def test_a_dledger_leader_reports_its_earliest_message_time(tmp_path, virtual_clock):
    """brokerStatus' earliestMessageTimeStamp is the first message's store time (clusterList's #Hour), not -1."""
    async with led_by_our_broker(tmp_path) as (broker, _), broker_client(broker.address) as c:
        empty = KVTable.decode((await c.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)).body or b"{}").table
        assert empty["earliestMessageTimeStamp"] == "-1"
        sent = []
        for i in range(3):
            resp = await c.invoke(RequestCode.SEND_MESSAGE_V2, c.send_header(TOPIC, {}), b"m%d" % i, timeout=15)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            sent.append(int((resp.ext_fields or {})["msgId"][16:], 16))
            await trio.sleep(1)
        first = broker.store.look_message_by_offset(sent[0])
        assert first is not None and first.body == b"m0"
        table = KVTable.decode((await c.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)).body or b"{}").table
        assert table["earliestMessageTimeStamp"] == str(first.store_timestamp)


async def test_an_isolated_leader_answers_every_pending_send_at_its_quorum_deadline(tmp_path, virtual_clock):
    """Our broker leads a group whose other members then go away: each send still pending is answered at its
    own maxWaitAckTimeMs (2.5 s) with Java's answer to WAIT_QUORUM_ACK_TIMEOUT (CODE 1, [PC_SYNCHRONIZED]...),
    in order, not the first one only with the rest left to the broker's 10 s cap."""
    async with led_by_our_broker(tmp_path) as (broker, others), broker_client(broker.address) as c:
        ok = await c.invoke(RequestCode.SEND_MESSAGE_V2, c.send_header(TOPIC, {}), b"before", timeout=15)
        assert ok.code == ResponseCode.SUCCESS, ok.remark
        for scope in others:
            scope.cancel()
        answers: dict[int, tuple[float, float, int, str]] = {}

        async def send(i: int) -> None:
            t0 = trio.current_time()
            resp = await c.invoke(RequestCode.SEND_MESSAGE_V2, c.send_header(TOPIC, {}), b"alone-%d" % i,
                                  timeout=15)
            answers[i] = (t0, trio.current_time(), resp.code, resp.remark or "")

        async with trio.open_nursery() as sends:
            for i in range(4):
                sends.start_soon(send, i)
                await trio.sleep(0.3)
    assert sorted(answers) == [0, 1, 2, 3]
    for i, (t0, t1, code, remark) in answers.items():
        assert code == ResponseCode.SYSTEM_ERROR and remark.startswith("[PC_SYNCHRONIZED]"), (i, code, remark)
        assert 2.4 <= t1 - t0 <= 2.8, (i, t1 - t0)
    assert [answers[i][1] for i in range(4)] == sorted(answers[i][1] for i in range(4))


async def test_a_plain_broker_becomes_a_dledger_member_with_its_messages_and_consumer_offsets(tmp_path):
    """The divided CommitLog: a broker that ran plain (messages sent, some consumed and committed) is restarted
    with enableDLegerCommitLog=true as a group of one; every old message is still consumable, the group's
    committed offsets hold (it goes on where it stopped), and new sends go into the ledger above the old
    CommitLog."""
    from rocketpy.client import LitePullConsumer
    from rocketpy.codecs.bodies import MessageQueue

    store = str(tmp_path / "store")
    ports = [free_port()]
    async with namesrv(tmp_path) as ns, trio.open_nursery() as nursery:
        plain = _BrokerHandle(nursery, store, namesrvAddr=ns.address, brokerName="broker-dl")
        await plain.start()
        await send_all(ns, [f"old{i}" for i in range(20)])
        queues = [MessageQueue(topic=TOPIC, broker_name="broker-dl", queue_id=q) for q in range(4)]
        async with LitePullConsumer("DlCG", config=client_config(ns), auto_commit=False,
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET") as lp:
            await lp.assign(queues)
            consumed: list[bytes] = []
            with trio.fail_after(20):
                while len(consumed) < 8:
                    consumed += [m.body for m in await lp.poll(1.0)]
            await lp.commit()
            committed = {mq.queue_id: await lp.committed(mq) for mq in queues}
        assert sum(committed.values()) == len(consumed)
        await plain.stop()

        member = BrokerHandle(nursery, store, **group_props(ns.address, ports, 0))
        broker = await member.start()
        await wait_until(lambda: broker.dledger is not None and broker.dledger.role is Role.LEADER
                         and broker.config.broker_id == 0 and not broker.ha.is_slave, timeout=30, what="the leader")
        assert broker.store.commitlog.divided_offset > 0
        # every old message, from the start of each queue
        got = await pull_queues(broker.address, TOPIC, 4)
        assert sorted(got.values()) == sorted(f"old{i}".encode() for i in range(20))
        await send_all(ns, [f"new{i}" for i in range(10)])
        async with LitePullConsumer("DlCG", config=client_config(ns), auto_commit=False,
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET") as lp:
            await lp.assign(queues)
            assert {mq.queue_id: await lp.committed(mq) for mq in queues} == committed
            rest: list[bytes] = []
            with trio.fail_after(20):
                while len(rest) < 20 - len(consumed) + 10:
                    rest += [m.body for m in await lp.poll(1.0)]
        assert sorted(consumed + rest) == sorted([f"old{i}".encode() for i in range(20)] +
                                                 [f"new{i}".encode() for i in range(10)])
        first_new = broker.store.look_message_by_offset(broker.store.commitlog.divided_offset + 48)
        assert first_new is not None and first_new.body.startswith(b"new")
        await member.stop()
        nursery.cancel_scope.cancel()


async def test_a_master_slave_pair_moves_to_a_dledger_group_as_readme_says(tmp_path):
    """README's migration: a SYNC_MASTER and its slave stopped, the master's store copied to a third member and
    its config/ over the slave's, the three restarted as one DLedger group: each seals the same old CommitLog
    at the same divided offset, every old message is consumable from the leader, the committed offsets hold,
    and new sends are replicated to all three above it."""
    from test_ha import FAST_HA

    from rocketpy.client import LitePullConsumer
    from rocketpy.codecs.bodies import MessageQueue

    queues = [MessageQueue(topic=TOPIC, broker_name="broker-dl", queue_id=q) for q in range(4)]
    stores = [tmp_path / f"n{i}" for i in range(3)]
    async with namesrv(tmp_path) as ns, trio.open_nursery() as nursery:
        common = dict(namesrvAddr=ns.address, brokerName="broker-dl", **FAST_HA)
        master = _BrokerHandle(nursery, str(stores[0]), brokerRole="SYNC_MASTER", **common)
        m = await master.start()
        slave = _BrokerHandle(nursery, str(stores[1]), brokerRole="SLAVE", brokerId="1", **common)
        s = await slave.start()
        await wait_until(lambda: m.ha.service.connection_count == 1, what="the slave connected")
        await send_all(ns, [f"old{i}" for i in range(20)])  # SYNC_MASTER: the slave holds each one acked
        async with LitePullConsumer("DlCG", config=client_config(ns), auto_commit=False,
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET") as lp:
            await lp.assign(queues)
            consumed: list[bytes] = []
            with trio.fail_after(20):
                while len(consumed) < 8:
                    consumed += [msg.body for msg in await lp.poll(1.0)]
            await lp.commit()
            committed = {mq.queue_id: await lp.committed(mq) for mq in queues}
        end = m.store.max_phy_offset
        await wait_until(lambda: s.store.max_phy_offset == end, what="the slave caught up")
        await master.stop()
        await slave.stop()
        shutil.copytree(stores[0], stores[2], ignore=shutil.ignore_patterns("lock", "abort"))
        shutil.rmtree(stores[1] / "config")
        shutil.copytree(stores[0] / "config", stores[1] / "config")

        ports = [free_port() for _ in range(3)]
        handles = [BrokerHandle(nursery, str(stores[i]), **group_props(ns.address, ports, i)) for i in range(3)]
        for h in handles:
            await h.start()
        await wait_until(lambda: leader_of(handles) is not None, timeout=60, what="a leader registered as master")
        leader = leader_of(handles)
        assert leader is not None
        divided = {h.broker.store.commitlog.divided_offset for h in handles if h.broker is not None}
        assert len(divided) == 1 and divided.pop() > 0
        got = await pull_queues(leader.address, TOPIC, 4)
        assert sorted(got.values()) == sorted(f"old{i}".encode() for i in range(20))
        await send_all(ns, [f"new{i}" for i in range(10)])
        new_end = leader.store.commitlog.max_offset
        await wait_until(lambda: all(h.broker is not None and h.broker.store.commitlog.max_offset == new_end
                                     for h in handles), what="the followers have the new entries")

        def entries(h: BrokerHandle) -> list[tuple[int, int, bytes]]:
            assert h.broker is not None
            ledger = h.broker.store.ledger
            return [(e.pos, e.term, e.body) for e in map(ledger.get, range(ledger.end_index + 1)) if e is not None]

        assert len(entries(handles[0])) == 10 and entries(handles[0]) == entries(handles[1]) == entries(handles[2])
        async with LitePullConsumer("DlCG", config=client_config(ns), auto_commit=False,
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET") as lp:
            await lp.assign(queues)
            assert {mq.queue_id: await lp.committed(mq) for mq in queues} == committed
            rest: list[bytes] = []
            with trio.fail_after(20):
                while len(rest) < 20 - len(consumed) + 10:
                    rest += [msg.body for msg in await lp.poll(1.0)]
        assert sorted(consumed + rest) == sorted([f"old{i}".encode() for i in range(20)] +
                                                 [f"new{i}".encode() for i in range(10)])
        for h in handles:
            await h.stop()
        nursery.cancel_scope.cancel()
