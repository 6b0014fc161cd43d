"""The client's features beyond plain sends and consumption, on both event loops (see test_client_loops.py):
message trace, orderly push consumption, lite-pull assign and seek, broadcasting offsets, ACL-signed
requests, TLS and namespaces (Java's ClientConfig.namespace). Each test body runs once under trio and once
under asyncio against real in-process servers, and checks what a user relies on (what the brokers hold, what
a listener got, what a refused client is told)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import loops
import pytest
import trustme
from clusters import make_topic, threaded_cluster
from loops import name, run, wait_for

from rocketpy.client import (
    ClientConfig,
    ConsumeFromWhere,
    ConsumeStatus,
    LitePullConsumer,
    OrderlyStatus,
    Producer,
    PushConsumer,
    make_message,
    select_by_hash,
)
from rocketpy.client.admin import Admin
from rocketpy.client.errors import MQBrokerError, MQClientError
from rocketpy.codecs import ResponseCode
from rocketpy.codecs.bodies import MessageQueue
from rocketpy.codecs.bodies.store_config import OffsetSerializeWrapper
from rocketpy.codecs.codes import MessageModel, MixAll
from rocketpy.codecs.trace import TraceRecord, decode_trace_data
from rocketpy.pytest_plugin import Cluster
from rocketpy.remoting.tls import TlsConfig

pytestmark = pytest.mark.timeout(120)

loop = loops.loop  # the fixture every test here takes: trio, then asyncio


def fast(cluster: Cluster, **kw: object) -> ClientConfig:
    """Client settings that make tests quick: frequent rebalance, route refresh and offset persistence."""
    return ClientConfig(namesrv_addr=cluster.namesrv, rebalance_interval=1.0, persist_consumer_offset_interval=0.5,
                        poll_name_server_interval=1.0, **kw)  # type: ignore[arg-type]


# -- message trace --------------------------------------------------------------------------------------


def test_message_trace_is_written_to_the_trace_topic(loop: str, rocketmq_session_cluster: Cluster) -> None:
    cluster = rocketmq_session_cluster
    topic, pg, cg = name("LoopTrace"), name("PGTrace"), name("CGTrace")

    async def main() -> tuple[str, list[TraceRecord]]:
        seen: list[str] = []
        async with Producer(pg, namesrv=cluster.namesrv, enable_msg_trace=True) as producer:
            result = await producer.send(make_message(topic, "traced", tags="T1", keys="trace-key"))
            consumer = PushConsumer(cg, lambda msgs, ctx: seen.extend(m.uniq_key for m in msgs),
                                    config=fast(cluster), enable_msg_trace=True,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe(topic)
            async with consumer:
                await wait_for(lambda: result.msg_id in seen, "consumed")
        # the dispatchers flushed at shutdown; the records are found by the traced message's id, as mqadmin
        # queryMsgTraceById finds them (QUERY_MESSAGE on the trace topic's index)
        records: list[TraceRecord] = []
        async with Admin(cluster.namesrv) as admin:
            with anyio.fail_after(20):
                while {r.trace_type for r in records} != {"Pub", "SubBefore", "SubAfter"}:
                    await anyio.sleep(0.05)
                    found = await admin.query_messages(MixAll.RMQ_SYS_TRACE_TOPIC, result.msg_id)
                    records = [r for m in found for r in decode_trace_data(m.body.decode())
                               if r.msg_id == result.msg_id]
        return result.msg_id, records

    msg_id, records = run(loop, main)
    by_type = {r.trace_type: r for r in records}
    assert len(records) == 3
    pub = by_type["Pub"]
    assert (pub.group, pub.topic, pub.tags, pub.keys, pub.msg_type, pub.success) == \
        (pg, topic, "T1", "trace-key", "Normal_Msg", True)
    assert pub.store_host == cluster.broker_addr and pub.body_length == len(b"traced")
    before, after = by_type["SubBefore"], by_type["SubAfter"]
    assert before.group == cg == after.group and before.request_id == after.request_id
    assert after.success and after.context_code == 0  # SUCCESS


# -- orderly push consumption ---------------------------------------------------------------------------


def test_orderly_consumption_keeps_each_queues_order(loop: str, rocketmq_session_cluster: Cluster) -> None:
    cluster = rocketmq_session_cluster
    topic, group = name("LoopOrder"), name("CGOrder")

    async def main() -> tuple[dict[int, list[int]], set[int], set[str], bool]:
        await make_topic(cluster, topic, 4)
        per_order: dict[int, list[int]] = {}
        suspended: set[int] = set()

        def listener(msgs, ctx):  # type: ignore[no-untyped-def]  # a plain function: run in a worker thread
            for m in msgs:
                order, seq = (int(x) for x in m.body.split(b":"))
                if seq == 2 and order not in suspended:  # once per key: the batch comes again, in place
                    suspended.add(order)
                    ctx.suspend_current_queue_time = 0.05
                    return OrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                per_order.setdefault(order, []).append(seq)
            return OrderlyStatus.SUCCESS

        async with Producer(name("PG"), namesrv=cluster.namesrv) as producer:
            for seq in range(4):
                for order in range(6):
                    await producer.send(make_message(topic, f"{order}:{seq}"), selector=select_by_hash, arg=order)
        consumer = PushConsumer(group, listener, orderly=True, config=fast(cluster),
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe(topic)
        async with consumer:
            await wait_for(lambda: sum(map(len, per_order.values())) == 24, "consumed")
            held = cluster.broker.locks.table.get(group, {})
            locked = {mq.queue_id for mq in held if mq.topic == topic}
            owners = {e.client_id for mq, e in held.items() if mq.topic == topic}
            assert owners == {consumer.client.client_id}
        assert not consumer._mq_locks  # no queue's consume lock kept once nothing consumes it
        released = not any(mq.topic == topic for mq in cluster.broker.locks.table.get(group, {}))
        return per_order, locked, owners, released

    per_order, locked, _owners, released = run(loop, main)
    assert per_order == {order: [0, 1, 2, 3] for order in range(6)}  # each key in order, none twice
    assert locked == {0, 1, 2, 3}  # every queue consumed under the broker's lock
    assert released  # and unlocked at shutdown


# -- lite pull: assign, seek, commit --------------------------------------------------------------------


def test_lite_pull_assign_seek_and_commit(loop: str, rocketmq_session_cluster: Cluster) -> None:
    cluster = rocketmq_session_cluster
    topic, group = name("LoopSeek"), name("CGSeek")

    async def main() -> None:
        await make_topic(cluster, topic, 2)
        consumer = LitePullConsumer(group, config=fast(cluster), auto_commit=False,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        async with consumer:
            queues = sorted(await consumer.fetch_queues(topic), key=lambda q: q.queue_id)
            assert [q.queue_id for q in queues] == [0, 1]
            mq = queues[0]
            async with Producer(name("PG"), namesrv=cluster.namesrv) as producer:
                for i in range(8):
                    await producer.send(make_message(topic, f"l{i}"), queue=mq)
                await producer.send(make_message(topic, "other queue"), queue=queues[1])
            await consumer.assign([mq])

            async def poll_bodies(count: int) -> list[bytes]:
                got: list[bytes] = []
                with anyio.fail_after(20):
                    while len(got) < count:
                        got += [m.body for m in await consumer.poll(0.5)]
                return got

            assert await poll_bodies(8) == [f"l{i}".encode() for i in range(8)]  # queue 1 is not assigned
            await consumer.seek(mq, 5)
            assert await poll_bodies(3) == [b"l5", b"l6", b"l7"]
            await consumer.seek_to_begin(mq)
            assert (await poll_bodies(8))[:2] == [b"l0", b"l1"]
            await consumer.seek(mq, 6)
            assert (await poll_bodies(2)) == [b"l6", b"l7"]
            await consumer.commit()
            assert await consumer.committed(mq) == 8
            await consumer.seek_to_end(mq)
            assert await consumer.poll(0.3) == []
        offsets = cluster.broker.offsets.table.get(f"{topic}@{group}", {})
        assert offsets == {0: 8}  # committed on the broker for the assigned queue only

    run(loop, main)


# -- broadcasting: offsets in the local file ------------------------------------------------------------


def test_broadcast_consumers_each_get_everything_and_keep_offsets_on_disk(loop: str, tmp_path: Path,
                                                                          rocketmq_session_cluster: Cluster) -> None:
    cluster = rocketmq_session_cluster
    topic, group = name("LoopBc"), name("CGBc")

    def consumer(i: int, into: list[bytes]) -> PushConsumer:
        async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
            into.extend(m.body for m in msgs)

        c = PushConsumer(group, listener, config=fast(cluster, instance_name=f"{group}-{i}"),
                         message_model=MessageModel.BROADCASTING, offset_store_dir=str(tmp_path),
                         consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        c.subscribe(topic)
        return c

    async def main() -> tuple[list[list[bytes]], list[bytes], str]:
        await make_topic(cluster, topic, 2)
        got: list[list[bytes]] = [[], []]
        async with Producer(name("PG"), namesrv=cluster.namesrv) as producer:
            for i in range(6):
                await producer.send(make_message(topic, f"b{i}"))
            first, second = consumer(0, got[0]), consumer(1, got[1])
            async with first, second:
                await wait_for(lambda: len(got[0]) >= 6 and len(got[1]) >= 6, "both consumed")
            client_id = first.client.client_id
            # the same client again: it goes on from the offsets in its file, so only the new messages come
            for i in range(6, 8):
                await producer.send(make_message(topic, f"b{i}"))
            again: list[bytes] = []
            async with consumer(0, again):
                await wait_for(lambda: len(again) >= 2, "consumed after the restart")
                await anyio.sleep(0.3)  # nothing older comes after them
        return got, again, client_id

    got, again, client_id = run(loop, main)
    everything = sorted(f"b{i}".encode() for i in range(6))
    assert sorted(got[0]) == everything == sorted(got[1])
    assert sorted(again) == [b"b6", b"b7"]
    text = (tmp_path / client_id / group / "offsets.json").read_text()
    assert text.startswith('{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",')  # Java's pretty fastjson
    table = OffsetSerializeWrapper.decode(text).offset_table
    assert sum(table.values()) == 8 and {mq.queue_id for mq in table} == {0, 1}
    assert all(isinstance(mq, MessageQueue) and mq.topic == topic for mq in table)
    assert f"{topic}@{group}" not in cluster.broker.offsets.table  # nothing committed to the broker


# -- ACL: signed requests -------------------------------------------------------------------------------

ACL_USER, ACL_SECRET = "LoopUser", "loopSecret1"
PLAIN_ACL = f"""\
accounts:
  - accessKey: {ACL_USER}
    secretKey: {ACL_SECRET}
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: SUB
"""


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A broker with aclEnable=true and one account; loopback is in no white list, so every request is checked."""
    home = tmp_path_factory.mktemp("acl-home")
    (home / "conf").mkdir()
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL)
    with threaded_cluster(aclEnable="true", rocketmqHome=str(home)) as cluster:
        yield cluster


def test_acl_signed_clients_are_served_and_others_refused(loop: str, acl_cluster: Cluster) -> None:
    cluster = acl_cluster
    topic, group = name("LoopAcl"), name("CGAcl")
    signed = fast(cluster, access_key=ACL_USER, secret_key=ACL_SECRET)

    async def main() -> tuple[list[bytes], MQClientError, MQClientError, MQBrokerError]:
        got: list[bytes] = []
        async with Producer(name("PG"), config=signed) as producer:  # every send mode signs its request
            await producer.send(make_message(topic, "a0"))
            await producer.send_async(make_message(topic, "a1")).result()
            await producer.send_oneway(make_message(topic, "a2"))
            await producer.send_batch([make_message(topic, "a3"), make_message(topic, "a4")])

            async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
                got.extend(m.body for m in msgs)

            consumer = PushConsumer(group, listener, config=signed,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe(topic)
            async with consumer:
                await wait_for(lambda: len(got) >= 5, "consumed")
        async with Producer(name("PG"), namesrv=cluster.namesrv) as unsigned:
            with pytest.raises(MQClientError) as no_key:
                await unsigned.send(make_message(topic, "unsigned"))
        wrong = fast(cluster, access_key=ACL_USER, secret_key="notTheSecret")
        async with Producer(name("PG"), config=wrong) as bad:
            with pytest.raises(MQClientError) as bad_signature:
                await bad.send(make_message(topic, "wrong secret"))
        lite = LitePullConsumer(name("CGAclBad"), config=wrong)
        async with lite:
            mq = (await lite.fetch_queues(topic))[0]  # the NameServer checks no ACL
            await lite.assign([mq])
            with pytest.raises(MQBrokerError) as refused_read:
                await lite.seek_to_end(mq)
        return got, no_key.value, bad_signature.value, refused_read.value

    got, no_key, bad_signature, refused_read = run(loop, main)
    assert sorted(got) == [b"a0", b"a1", b"a2", b"a3", b"a4"]
    # Java's broker answers a request its ACL refuses with SYSTEM_ERROR and the AclException's text; the
    # producer tries every attempt (SYSTEM_ERROR is a retried code), then reports that code
    assert no_key.response_code == ResponseCode.SYSTEM_ERROR
    assert "AclException: No accessKey is configured" in str(no_key)
    assert bad_signature.response_code == ResponseCode.SYSTEM_ERROR
    assert f"Check signature failed for accessKey={ACL_USER}" in str(bad_signature)
    assert refused_read.response_code == ResponseCode.SYSTEM_ERROR
    assert refused_read.remark is not None and f"Check signature failed for accessKey={ACL_USER}" in refused_read.remark
    assert sum(cluster.broker.offsets.table.get(f"{topic}@{group}", {}).values()) == 5


# -- TLS ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """PEM files of a CA, a server certificate (127.0.0.1) and a client certificate it signed, and a file of
    another CA."""
    ca, other = trustme.CA(), trustme.CA()
    server, client = ca.issue_cert("localhost", "127.0.0.1"), ca.issue_cert("client.example")
    d = tmp_path_factory.mktemp("certs")
    paths = {k: str(d / f"{k}.pem") for k in ("ca", "other_ca", "server", "server_key", "client", "client_key")}
    ca.cert_pem.write_to_path(paths["ca"])
    other.cert_pem.write_to_path(paths["other_ca"])
    server.cert_chain_pems[0].write_to_path(paths["server"])
    server.private_key_pem.write_to_path(paths["server_key"])
    client.cert_chain_pems[0].write_to_path(paths["client"])
    client.private_key_pem.write_to_path(paths["client_key"])
    paths["none"] = str(d / "none.properties")
    return paths


@pytest.fixture(scope="module")
def tls_cluster(certs: dict[str, str]) -> Iterator[Cluster]:
    """A NameServer and a broker whose ports speak TLS only (tls.server.mode=enforcing) with the CA's server
    certificate; the broker asks every client for a certificate of that CA (need.client.auth=require)."""
    server = {"tls.server.mode": "enforcing", "tls.test.mode.enable": "false", "tls.config.file": certs["none"],
              "tls.server.certPath": certs["server"], "tls.server.keyPath": certs["server_key"]}
    broker = {**server, "tls.server.need.client.auth": "require", "tls.server.authClient": "true",
              "tls.server.trustCertPath": certs["ca"]}
    with threaded_cluster(namesrv_props=server, **broker) as cluster:
        yield cluster


def tls_client(certs: dict[str, str], trust: str = "ca", with_cert: bool = True) -> TlsConfig:
    """The tls.client.* settings of a client that checks the servers' certificate against ``trust``."""
    props = {"tls.test.mode.enable": "false", "tls.client.authServer": "true",
             "tls.client.trustCertPath": certs[trust], "tls.config.file": certs["none"]}
    if with_cert:
        props |= {"tls.client.certPath": certs["client"], "tls.client.keyPath": certs["client_key"]}
    return TlsConfig.from_properties(props)


def test_tls_clients_produce_and_consume(loop: str, tls_cluster: Cluster, certs: dict[str, str]) -> None:
    cluster = tls_cluster
    topic, group = name("LoopTls"), name("CGTls")
    over_tls = fast(cluster, use_tls=True, tls=tls_client(certs))

    async def main() -> list[bytes]:
        got: list[bytes] = []
        async with Producer(name("PG"), config=over_tls) as producer:
            for i in range(3):
                await producer.send(make_message(topic, f"t{i}"))

            async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
                got.extend(m.body for m in msgs)

            consumer = PushConsumer(group, listener, config=over_tls,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe(topic)
            async with consumer:
                await wait_for(lambda: len(got) >= 3, "consumed")
        return got

    assert sorted(run(loop, main)) == [b"t0", b"t1", b"t2"]


@pytest.mark.parametrize("client", ["plain", "no certificate", "other CA"])
def test_tls_servers_refuse_plain_and_unverified_clients(loop: str, client: str, tls_cluster: Cluster,
                                                          certs: dict[str, str],
                                                          caplog: pytest.LogCaptureFixture) -> None:
    cluster = tls_cluster
    topic = name("LoopTlsNo")
    config = {
        "plain": fast(cluster),
        "no certificate": fast(cluster, use_tls=True, tls=tls_client(certs, with_cert=False)),
        "other CA": fast(cluster, use_tls=True, tls=tls_client(certs, trust="other_ca")),
    }[client]
    config.mq_client_api_timeout = 1.0

    async def main() -> str:
        async with Producer(name("PG"), config=config) as producer:
            with pytest.raises(MQClientError) as refused:
                await producer.send(make_message(topic, "refused"), timeout=3.0)
        return str(refused.value)

    with caplog.at_level("WARNING", logger="rocketpy.client"):
        text = run(loop, main)
    route_failures = {r.getMessage().split(" failed: ", 1)[1] for r in caplog.records
                      if r.getMessage().startswith("updateTopicRouteInfoFromNameServer")}
    # one line each, worded alike by both drivers
    if client == "no certificate":  # the NameServer serves it; the broker closes the connection after the handshake
        assert text.startswith("Send [3] times, still failed") and \
            text.endswith(f"connection to {cluster.broker_addr} closed"), text
    else:  # no route: the NameServer's connection is closed (plain) or its certificate refused (another CA)
        assert text == f"No route info of this topic: {topic}"
        reason = "connection to {} closed" if client == "plain" else \
            "connect to {} failed: TLS handshake failed: CERTIFICATE_VERIFY_FAILED"
        assert route_failures == {"no name server answered: " + reason.format(cluster.namesrv)}, route_failures


# -- namespaces -----------------------------------------------------------------------------------------

NAMESPACE = "MQ_INST_loops"


def test_a_namespace_prefixes_topics_and_groups_on_the_wire_only(loop: str,
                                                                 rocketmq_session_cluster: Cluster) -> None:
    cluster = rocketmq_session_cluster
    topic, pg, cg, lg = name("LoopNs"), name("PGNs"), name("CGNs"), name("CGNsLite")
    wire_topic, wire_group = f"{NAMESPACE}%{topic}", f"{NAMESPACE}%{cg}"
    config = fast(cluster, namespace=NAMESPACE)

    async def main() -> dict[str, object]:
        seen: dict[str, object] = {}
        got: list[tuple[str, bytes, int]] = []
        selected: list[str] = []

        def pick(queues, msg, arg):  # type: ignore[no-untyped-def]
            selected.extend([msg.topic, *{q.topic for q in queues}])
            return queues[0]

        async with Producer(pg, config=config) as producer:
            msg = make_message(topic, "n0")
            result = await producer.send(msg)
            seen["result topic"], seen["message topic"] = result.message_queue.topic, msg.topic
            seen["instance id"] = msg.properties.get("INSTANCE_ID")
            await producer.send(make_message(topic, "n1"), selector=pick)
            seen["selected"] = selected
            seen["producer group"] = producer.group

            async def listener(msgs, ctx):  # type: ignore[no-untyped-def]
                for m in msgs:
                    got.append((m.topic, m.body, m.reconsume_times))
                    if m.body == b"n0" and m.reconsume_times == 0:
                        return ConsumeStatus.RECONSUME_LATER  # back through %RETRY%<namespace>%<group>
                return ConsumeStatus.CONSUME_SUCCESS

            consumer = PushConsumer(cg, listener, config=config,
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe(topic)
            async with consumer:
                await wait_for(lambda: len(got) >= 3, "consumed, n0 twice")
                seen["consumer group"] = consumer.group
                seen["registered"] = cluster.broker.consumers.get(wire_group) is not None
                seen["subscribed"] = set(consumer.subscriptions)
        lite = LitePullConsumer(lg, config=config, auto_commit=False)
        async with lite:
            queues = await lite.fetch_queues(topic)
            mq = next(q for q in queues if q.queue_id == result.message_queue.queue_id)
            await lite.assign([mq])
            await lite.seek(mq, result.queue_offset)
            with anyio.fail_after(20):
                polled = []
                while not polled:
                    polled = await lite.poll(0.5)
            await lite.commit()
            seen["lite queues"] = {q.topic for q in queues}
            seen["lite polled"] = (polled[0].topic, polled[0].body)
            seen["lite next"] = (mq.queue_id, polled[-1].queue_offset + 1)
            seen["lite committed"] = await lite.committed(mq)
        seen["got"] = got
        return seen

    seen = run(loop, main)
    # as Java's: the message keeps the user's topic and gets the namespace as INSTANCE_ID
    assert seen["message topic"] == topic and seen["result topic"] == topic and seen["instance id"] == NAMESPACE
    assert seen["selected"] == [topic, topic]  # the selector sees the user's names
    assert seen["producer group"] == f"{NAMESPACE}%{pg}" and seen["consumer group"] == wire_group
    assert seen["registered"] and seen["subscribed"] == {wire_topic, f"%RETRY%{NAMESPACE}%{cg}"}
    assert sorted(seen["got"]) == [(topic, b"n0", 0), (topic, b"n0", 1), (topic, b"n1", 0)]  # type: ignore[type-var]
    assert seen["lite queues"] == {topic} and seen["lite polled"] == (topic, b"n0")
    broker = cluster.broker
    assert wire_topic in broker.topics.table and topic not in broker.topics.table
    assert f"%RETRY%{NAMESPACE}%{cg}" in broker.topics.table
    assert sum(broker.offsets.table.get(f"{wire_topic}@{wire_group}", {}).values()) == 2
    queue_id, next_offset = seen["lite next"]  # type: ignore[misc]
    assert seen["lite committed"] == next_offset
    assert broker.offsets.table.get(f"{wire_topic}@{NAMESPACE}%{lg}") == {queue_id: next_offset}
