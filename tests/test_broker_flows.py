"""Broker flows over real sockets: retry and DLQ, delayed delivery, transactions,
request-reply, NameServer registration and ``rocketpy serve``.

Timed flows run on the ``virtual_clock`` fixture (trio's MockClock, which rocketpy's clock
follows): delays and check intervals pass in virtual time, and "nothing more happened" is
checked after a virtual wait, never after a real one.
"""

from __future__ import annotations

import trio

from rocketpy.clock import now_ms
from rocketpy.codecs import RemotingCommand, ResponseCode
from rocketpy.codecs.codes import MessageConst, MessageSysFlag, RequestCode
from rocketpy.codecs.headers import EndTransactionRequestHeader
from rocketpy.codecs.message import decode_message
from rocketpy.remoting import Dispatcher
from rocketpy.testing import broker_client, message_properties, running_broker, wait_until

FAST_DELAYS = "100ms 200ms 300ms 400ms 500ms 600ms 700ms 800ms 900ms 1s 1s 1s 1s 1s 1s 1s 1s 1s"


async def _pull_until(c, group, topic, qid, offset=0, count=1, timeout=10.0, **kw):
    """Long-poll pulls (the broker answers when a message arrives) until ``count`` messages came."""
    msgs = []
    with trio.fail_after(timeout):
        while len(msgs) < count:
            resp, got = await c.pull(group, topic, qid, offset + len(msgs), suspend_ms=1000, **kw)
            msgs.extend(got)
            if resp.code not in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND):
                await trio.sleep(0.05)  # answered at once (no such topic yet): not held, try again later
    return msgs


async def test_delay_retry_and_dlq(tmp_path, virtual_clock):
    async with running_broker(str(tmp_path), messageDelayLevel=FAST_DELAYS) as broker:
        async with broker_client(broker.address) as c:
            await c.heartbeat(consumer_groups={"RG": ["TR"]})
            # a delayed send comes out after its level's delay
            t0 = trio.current_time()
            r = await c.send("TR", b"later", props={"DELAY": "2"}, queue_id=0)
            assert r.code == ResponseCode.SUCCESS and r.ext_fields["queueId"] == "0"
            (msg,) = await _pull_until(c, "RG", "TR", 0)
            assert msg.body == b"later" and 0.19 <= trio.current_time() - t0 < 1.2  # level 2: 200 ms
            # give it back: %RETRY%RG after delay level 1
            r = await c.send_back("RG", msg, delay_level=1)
            assert r.code == ResponseCode.SUCCESS
            (retry,) = await _pull_until(c, "RG", "%RETRY%RG", 0)
            assert retry.body == b"later" and retry.reconsume_times == 1
            assert retry.properties[MessageConst.PROPERTY_RETRY_TOPIC] == "TR"
            assert retry.properties[MessageConst.PROPERTY_ORIGIN_MESSAGE_ID] == msg.msg_id
            # past maxReconsumeTimes: straight to the DLQ
            r = await c.send_back("RG", retry, delay_level=0, max_times=1)
            assert r.code == ResponseCode.SUCCESS
            (dead,) = await _pull_until(c, "RG", "%DLQ%RG", 0)
            assert dead.body == b"later" and dead.reconsume_times == 2
            assert broker.topics.get("%DLQ%RG") is not None
            # a client resending to the retry topic past its max also lands in the DLQ
            r = await c.send("%RETRY%RG", b"resent", queue_id=0, reconsume_times=5, max_reconsume_times=3)
            assert r.code == ResponseCode.SUCCESS
            dead2 = await _pull_until(c, "RG", "%DLQ%RG", 0, count=2)
            assert dead2[1].body == b"resent"
            assert broker.schedule.offsets  # delayOffset table advanced


async def test_delay_offsets_persist(tmp_path, virtual_clock):
    store = str(tmp_path)
    async with running_broker(store, messageDelayLevel=FAST_DELAYS) as broker:
        async with broker_client(broker.address) as c:
            await c.send("TD", b"d", props={"DELAY": "1"})
            await _pull_until(c, "G", "TD", 0)
    async with running_broker(store, messageDelayLevel=FAST_DELAYS) as broker:
        assert broker.schedule.offsets.get(1) == 1
        await trio.sleep(2)  # virtual: long past the level's 100 ms and the schedule's polls
        async with broker_client(broker.address) as c:
            resp, msgs = await c.pull("G", "TD", 0, 0)
            assert len(msgs) == 1  # not delivered twice


def _tx_props(group: str) -> dict[str, str]:
    return {MessageConst.PROPERTY_TRANSACTION_PREPARED: "true", MessageConst.PROPERTY_PRODUCER_GROUP: group}


async def test_transactions_commit_rollback_and_check(tmp_path, virtual_clock):
    prepared = int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)
    commit = int(MessageSysFlag.TRANSACTION_COMMIT_TYPE)
    rollback = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
    checks: list[RemotingCommand] = []
    checked = trio.Event()
    disp = Dispatcher()

    @disp.route(RequestCode.CHECK_TRANSACTION_STATE)
    def on_check(ctx, request):
        checks.append(request)
        checked.set()

    async with running_broker(str(tmp_path), transactionCheckInterval="200", transactionTimeOut="300") as broker:
        async with broker_client(broker.address, dispatcher=disp, client_id="127.0.0.1@txp") as c:
            await c.heartbeat(producer_groups=["TXG"])
            r1 = await c.send("TTx", b"commit me", props=_tx_props("TXG"), sys_flag=prepared, group="TXG")
            r2 = await c.send("TTx", b"roll me back", props=_tx_props("TXG"), sys_flag=prepared, group="TXG")
            assert r1.code == r2.code == ResponseCode.SUCCESS
            resp, msgs = await c.pull("G", "TTx", 0, 0)
            assert msgs == []  # half messages are invisible
            await c.end_transaction("TXG", r1, commit)
            await c.end_transaction("TXG", r2, rollback)
            (msg,) = await _pull_until(c, "G", "TTx", 0)
            # like Java, the committed message keeps the half's properties string (REAL_TOPIC, TRAN_MSG...)
            assert msg.body == b"commit me" and msg.properties["REAL_TOPIC"] == "TTx"
            assert msg.transaction_type == commit
            # an unresolved one gets checked back, then committed from the check
            t0 = trio.current_time()
            r3 = await c.send("TTx", b"ask me", props=_tx_props("TXG"), sys_flag=prepared, group="TXG")
            assert r3.code == ResponseCode.SUCCESS
            with trio.fail_after(10):
                await checked.wait()
            # not before transactionTimeOut, and by the first check pass after it
            assert 0.3 <= trio.current_time() - t0 <= 0.3 + 0.2 + 0.05
            check = checks[0]
            half = decode_message(check.body)
            assert half.body == b"ask me" and half.topic == "TTx"
            assert half.properties["TRANSACTION_CHECK_TIMES"] == "1"
            ext = check.ext_fields
            assert ext["msgId"] == ext["transactionId"] == half.uniq_key
            header = EndTransactionRequestHeader(
                producer_group="TXG",
                tran_state_table_offset=int(ext["tranStateTableOffset"]),
                commit_log_offset=int(ext["commitLogOffset"]),
                commit_or_rollback=commit,
                from_transaction_check=True,
                msg_id=ext["msgId"],
                transaction_id=ext["transactionId"],
            )
            await c.oneway(RequestCode.END_TRANSACTION, header)
            msgs = await _pull_until(c, "G", "TTx", 0, count=2)
            assert [m.body for m in msgs] == [b"commit me", b"ask me"]
            # resolved halves are not checked again
            n = len(checks)
            await trio.sleep(1)  # virtual: five check passes
            assert len(checks) == n
            # a wrong commit is refused
            bad = EndTransactionRequestHeader(
                producer_group="OTHER",
                tran_state_table_offset=0,
                commit_log_offset=int(ext["commitLogOffset"]),
                commit_or_rollback=commit,
                msg_id="x",
            )
            resp = await c.invoke(RequestCode.END_TRANSACTION, bad)
            assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark == "The producer group wrong"


async def test_request_reply(tmp_path):
    pushed: list[RemotingCommand] = []
    disp = Dispatcher()

    @disp.route(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT)
    def on_push(ctx, request):
        pushed.append(request)
        return request.response(ResponseCode.SUCCESS)

    async with running_broker(str(tmp_path)) as broker:
        async with (
            broker_client(broker.address, dispatcher=disp, client_id="127.0.0.1@req") as requester,
            broker_client(broker.address, client_id="127.0.0.1@resp") as responder,
        ):
            await requester.heartbeat(producer_groups=["REQG"])
            props = {
                MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT: "127.0.0.1@req",
                MessageConst.PROPERTY_CORRELATION_ID: "corr-1",
                MessageConst.PROPERTY_MESSAGE_TYPE: "reply",
            }
            r = await responder.send(
                "DefaultCluster_REPLY_TOPIC", b"pong", props=props, code=RequestCode.SEND_REPLY_MESSAGE_V2
            )
            assert r.code == ResponseCode.SUCCESS
            assert list(r.ext_fields) == ["queueId", "TRACE_ON", "MSG_REGION", "msgId", "queueOffset"]
            (push,) = pushed
            assert push.body == b"pong" and push.ext_fields["topic"] == "DefaultCluster_REPLY_TOPIC"
            assert "PUSH_REPLY_TIME" in push.ext_fields["properties"]
            props[MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT] = "127.0.0.1@gone"
            r = await responder.send(
                "DefaultCluster_REPLY_TOPIC", b"pong", props=props, code=RequestCode.SEND_REPLY_MESSAGE_V2
            )
            assert r.code == ResponseCode.SYSTEM_ERROR
            assert r.remark == "push reply message fail, channel of <127.0.0.1@gone> not found."


async def test_trace_topic_messages(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            r = await c.send("RMQ_SYS_TRACE_TOPIC", b"Pub\x01trace", queue_id=0)
            assert r.code == ResponseCode.SUCCESS
            _, msgs = await c.pull("G", "RMQ_SYS_TRACE_TOPIC", 0, 0)
            assert msgs[0].body == b"Pub\x01trace"


async def test_registration_with_namesrv_and_serve(tmp_path, virtual_clock):
    from rocketpy.broker.cli import serve_configs
    from rocketpy.broker.controller import BrokerController
    from rocketpy.namesrv.server import NameServer

    class Args:
        host = "127.0.0.1"
        namesrv_port = 0
        broker_port = 0
        store = str(tmp_path / "store")
        config = None
        no_vip = True

    ns_cfg, broker_cfg = serve_configs(Args)
    async with trio.open_nursery() as nursery:
        namesrv = NameServer(ns_cfg)
        await nursery.start(namesrv.run)
        broker_cfg.namesrv_addr = namesrv.address
        broker_cfg.compressed_register = True
        broker = BrokerController(broker_cfg)
        scope = trio.CancelScope()

        async def run_broker(task_status=trio.TASK_STATUS_IGNORED):
            with scope:
                await broker.run(task_status=task_status)

        await nursery.start(run_broker)
        await wait_until(lambda: broker.outer.registrations > 0)
        view = namesrv.routes.pickup_topic_route_data("TBW102")
        assert view is not None
        # auto-creating a topic re-registers it (oneway)
        async with broker_client(broker.address) as c:
            await c.send("TAuto", b"x")
        await wait_until(lambda: namesrv.routes.pickup_topic_route_data("TAuto") is not None, timeout=5)
        scope.cancel()  # a broker that stops unregisters at once (long before the 120 s liveness)
        await wait_until(lambda: namesrv.routes.pickup_topic_route_data("TBW102") is None, timeout=5)
        nursery.cancel_scope.cancel()


async def test_a_half_within_its_own_immunity_is_put_back_and_the_check_walks_on(tmp_path):
    # Java's checkPrepareQueueOffset: a half whose CHECK_IMMUNITY_TIME_IN_SECONDS has not passed is not
    # checked but done if an op record names the offset it was first stored at, else put back (WAIT=false)
    # with that offset; the halves behind it are checked. A first offset Long.parseLong refuses stops the
    # walk, unless the half was born in the future: that one is checked
    prepared = int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)
    rollback = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
    immune = {**_tx_props("TXI"), MessageConst.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS: "3600"}
    first, wait = MessageConst.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET, MessageConst.PROPERTY_WAIT_STORE_MSG_OK
    future = now_ms() + 3_600_000
    sends = [
        ({**immune, first: "7"}, None),  # 0: done by the op record of 7
        ({**immune, first: "9"}, None),  # 1: put back, first stored at 9
        (immune, None),  # 2: put back, first stored at 2
        (_tx_props("TXI"), None),  # 3: no immunity of its own, checked at once (timeout 0)
        ({**immune, first: "x"}, future),  # 4: checked
        ({**immune, first: "x"}, None),  # 5: the walk stops here
        (_tx_props("TXI"), None),  # 6
        (_tx_props("TXI"), None),  # 7: rolled back
    ]
    checks: list[RemotingCommand] = []
    disp = Dispatcher()

    @disp.route(RequestCode.CHECK_TRANSACTION_STATE)
    def on_check(ctx, request):
        checks.append(request)

    half, op = "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC"
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address, dispatcher=disp) as c:
            await c.heartbeat(producer_groups=["TXI"])
            for props, born in sends:
                header = c.send_header("TTxI", message_properties(extra=props), group="TXI", sys_flag=prepared)
                header.born_timestamp = born or header.born_timestamp
                r = await c.invoke(RequestCode.SEND_MESSAGE_V2, header, b"half")
                assert r.code == ResponseCode.SUCCESS
            await c.end_transaction("TXI", r, rollback)
            await trio.sleep(0.01)  # stored before the check starts
            await broker.transactions.check(0, 15)
            # sent in the order of the walk, on one connection: a check of an immune half came before these
            await wait_until(lambda: len(checks) >= 2, tick=0.01)
            assert [int(x.ext_fields["tranStateTableOffset"]) for x in checks] == [10, 11]
        store = broker.store

        def half_at(offset):
            unit = store.find_consume_queue(half, 0).get_unit(offset)
            return store.look_message_by_offset(unit.commit_log_offset, unit.size).properties

        assert store.get_max_offset_in_queue(half, 0) == 12
        copies = [half_at(o) for o in range(8, 12)]
        assert [p.get(first) for p in copies] == ["9", "2", None, "x"]
        assert [p[wait] for p in copies] == ["false", "false", "true", "true"]  # as Java stores them
        assert {p["TRANSACTION_CHECK_TIMES"] for p in copies} == {"1"}
        assert broker.offsets.query("CID_RMQ_SYS_TRANS", half, 0) == 5
        assert broker.offsets.query("CID_RMQ_SYS_TRANS", op, 0) == 1  # its one record is done


async def test_transaction_discarded_after_check_max(tmp_path, virtual_clock):
    prepared = int(MessageSysFlag.TRANSACTION_PREPARED_TYPE)
    checks: list[RemotingCommand] = []
    disp = Dispatcher()

    @disp.route(RequestCode.CHECK_TRANSACTION_STATE)
    def on_check(ctx, request):
        checks.append(request)  # never answers: the broker asks again, then gives up

    conf = {"transactionCheckInterval": "150", "transactionTimeOut": "100", "transactionCheckMax": "2"}
    async with running_broker(str(tmp_path), **conf) as broker:
        async with broker_client(broker.address, dispatcher=disp) as c:
            await c.heartbeat(producer_groups=["TXD"])
            r = await c.send("TTxD", b"never", props=_tx_props("TXD"), sys_flag=prepared, group="TXD")
            assert r.code == ResponseCode.SUCCESS

            def discarded() -> bool:
                return broker.store.get_max_offset_in_queue("TRANS_CHECK_MAX_TIME_TOPIC", 0) >= 1

            await wait_until(discarded, tick=0.05)
            assert len(checks) == 2
            assert [decode_message(x.body).properties["TRANSACTION_CHECK_TIMES"] for x in checks] == ["1", "2"]
            # the Java broker's CHECK_TRANSACTION_STATE lists its header fields in this order
            assert list(checks[0].ext_fields) == [
                "commitLogOffset",
                "msgId",
                "tranStateTableOffset",
                "offsetMsgId",
                "transactionId",
            ]
            assert checks[0].is_oneway


def test_end_transaction_answers_the_final_put_as_java() -> None:
    """EndTransactionProcessor.sendFinalMessage's table, not the send path's: a stored message is SUCCESS (its
    half then marked done; FLUSH_DISK_TIMEOUT left it to be checked back and committed twice), the size
    refusal names maxMessageSize (it said "128k"), the others their own remarks."""
    from rocketpy.broker.processors.transaction import final_message_answer
    from rocketpy.store.types import PutMessageResult
    from rocketpy.store.types import PutMessageStatus as S

    def answer(status: S) -> tuple[int, str | None]:
        return final_message_answer(PutMessageResult(status), 1024)

    for stored in (S.PUT_OK, S.FLUSH_DISK_TIMEOUT, S.FLUSH_SLAVE_TIMEOUT, S.SLAVE_NOT_AVAILABLE):
        assert answer(stored) == (ResponseCode.SUCCESS, None)
    illegal = ("The message is illegal, maybe msg body or properties length not matched. msg body length limit "
               "1024B, msg properties length limit 32KB.")
    assert answer(S.MESSAGE_ILLEGAL) == answer(S.PROPERTIES_SIZE_EXCEEDED) == (ResponseCode.MESSAGE_ILLEGAL, illegal)
    assert answer(S.CREATE_MAPEDFILE_FAILED) == (ResponseCode.SYSTEM_ERROR, "Create mapped file failed.")
    assert answer(S.SERVICE_NOT_AVAILABLE) == (ResponseCode.SERVICE_NOT_AVAILABLE, "Service not available now.")
    assert answer(S.OS_PAGECACHE_BUSY) == (ResponseCode.SYSTEM_ERROR, "OS page cache busy, please try another machine")
    assert answer(S.UNKNOWN_ERROR) == (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR")
    assert answer(S.LMQ_CONSUME_QUEUE_NUM_EXCEEDED) == (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT")
    assert final_message_answer(None, 1024) == (ResponseCode.SYSTEM_ERROR, "store putMessage return null")
