"""Transactional messages (TransactionalMessageServiceImpl + the check service).

A prepared message is stored as a *half* message in RMQ_SYS_TRANS_HALF_TOPIC queue 0,
its real topic and queue kept in properties. END_TRANSACTION commit stores the real
message and writes an *op* record (tag ``d``, body = the half message's queue offset)
to RMQ_SYS_TRANS_OP_HALF_TOPIC; rollback writes only the op record. Every
transactionCheckInterval the check walks the half queue from the CID_RMQ_SYS_TRANS
offset: resolved halves are skipped, halves younger than transactionTimeOut stop the
walk, others are appended again (TRANSACTION_CHECK_TIMES + 1) and the producer group
gets CHECK_TRANSACTION_STATE; after transactionCheckMax checks, or once born longer ago
than fileReservedTime, a half is discarded to TRANS_CHECK_MAX_TIME_TOPIC.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from ..clock import now_ms
from ..codecs import RemotingCommand
from ..codecs.codes import MessageConst, MessageSysFlag, MixAll, PermName, RequestCode
from ..codecs.headers import CheckTransactionStateRequestHeader
from ..codecs.message import MessageExt, UniqIdGenerator, encode_message
from ..javacompat.hashmap import hashmap_dict, property_key_order
from ..javacompat.lang import parse_java_int, to_int64
from ..store.types import MessageExtBrokerInner, PutMessageResult

if TYPE_CHECKING:
    from .controller import BrokerController

log = logging.getLogger("rocketpy.broker")

HALF = MixAll.RMQ_SYS_TRANS_HALF_TOPIC
OP = MixAll.RMQ_SYS_TRANS_OP_HALF_TOPIC
CHECK_GROUP = MixAll.CID_SYS_RMQ_TRANS
REMOVE_TAG = MixAll.REMOVETAG
_TRAN_MASK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
_RW = int(PermName.PERM_WRITE | PermName.PERM_READ)
MAX_PROCESS_TIME_LIMIT_MS = 60_000


def _java_int_or(text: str, default: int, bits: int = 32) -> int:
    value = parse_java_int(text, bits)
    return default if value is None else value


def _props_string(props: dict[str, str]) -> str:
    from ..codecs.message import properties_to_string

    return properties_to_string({k: props[k] for k in property_key_order(tuple(props))})


class TransactionalMessageService:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self._uniq = UniqIdGenerator()
        self.checks_sent = 0
        #: where this process's checks left the half and op queues
        self._walked: dict[str, int] = {}

    # -- prepare / end -------------------------------------------------------------------
    async def prepare_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """parseHalfMessageInner + store: the half message goes to the half topic, queue 0."""
        props = msg.properties
        props[MessageConst.PROPERTY_REAL_TOPIC] = msg.topic
        props[MessageConst.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
        msg.sys_flag &= ~_TRAN_MASK
        msg.topic = HALF
        msg.queue_id = 0
        # unlike a plain send, the half keeps WAIT in its stored string (Java rebuilds it from the map)
        msg.properties_string = _props_string(props)
        return await self.broker.put_message(msg)

    def half_message(self, commit_log_offset: int) -> MessageExt | None:
        return self.broker.store.look_message_by_offset(commit_log_offset)

    async def write_op(self, half: MessageExt) -> None:
        """Mark ``half`` resolved: an op record pointing at its half-queue offset."""
        props = {
            MessageConst.PROPERTY_TAGS: REMOVE_TAG,
            MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "false",
            MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: self._uniq.next_id(),
        }
        props = hashmap_dict(props)
        op = MessageExtBrokerInner(
            topic=OP,
            body=str(half.queue_offset).encode(),
            properties=props,
            properties_string=_props_string(
                {k: v for k, v in props.items() if k != MessageConst.PROPERTY_WAIT_STORE_MSG_OK}
            ),
            queue_id=half.queue_id,
            born_timestamp=now_ms(),
            born_host=self.broker.store_host,
            store_host=self.broker.store_host,
        )
        result = await self.broker.put_message(op)
        if not result.is_ok:
            log.error("transaction op message put failed: %s", result.status)

    def end_message(self, half: MessageExt) -> MessageExtBrokerInner:
        """endMessageTransaction: the real message back from its half (stored string keeps REAL_*)."""
        props = dict(half.properties)
        stored = _props_string(props)
        topic = props.pop(MessageConst.PROPERTY_REAL_TOPIC, "")
        qid = int(props.pop(MessageConst.PROPERTY_REAL_QUEUE_ID, "0"))
        props.pop(MessageConst.PROPERTY_TRANSACTION_PREPARED, None)
        props[MessageConst.PROPERTY_WAIT_STORE_MSG_OK] = "false"
        return MessageExtBrokerInner(
            topic=topic,
            body=half.body,
            flag=half.flag,
            properties=props,
            properties_string=stored,
            queue_id=qid,
            sys_flag=half.sys_flag,
            born_timestamp=half.born_timestamp,
            born_host=half.born_host,
            store_host=half.store_host,
            reconsume_times=half.reconsume_times,
        )

    # -- back-check ----------------------------------------------------------------------
    async def run_check(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        cfg = self.broker.config
        self._walked.clear()  # a master again after a term as slave starts from the stored offsets
        while True:
            await trio.sleep(cfg.transaction_check_interval / 1000)
            try:
                await self.check(cfg.transaction_time_out, cfg.transaction_check_max)
            except Exception:
                log.exception("transaction check failed")

    def _start_offset(self, topic: str) -> int:
        """Where a check starts in ``topic``: the CID_RMQ_SYS_TRANS offset, or the queue's first message when
        there is none (as Java's), but never back over what this process's checks have walked.

        Every half behind that point was put back (or discarded, or resolved) already. Java's check walks
        them again after the group's offsets are deleted (DELETE_SUBSCRIPTIONGROUP with removeOffset) or
        set back (UPDATE_CONSUMER_OFFSET), and puts back a copy of each copy: each time, the half queue
        doubled (4.5 million copies of one half in a 30-minute fuzz run, still growing after it), and a
        producer asked twice may commit twice. After a restart the stored offset is taken as it is."""
        store = self.broker.store
        stored = self.broker.offsets.query(CHECK_GROUP, topic, 0)
        off = stored if stored >= 0 else store.get_min_offset_in_queue(topic, 0)
        walked = self._walked.get(topic, -1)
        end = store.get_max_offset_in_queue(topic, 0)
        # one beyond the queue is taken back to its end, as Java's check goes on from the next offset an
        # overflowing read gives (else, set back later, it would pass for a queue made anew below); Java
        # leaves one beyond an empty queue where it is
        off = min(off, end)
        if off < walked <= end:  # (a queue made anew starts over)
            off = walked
        if off != stored:
            self.broker.offsets.commit(CHECK_GROUP, topic, 0, off)
        self._walked[topic] = off  # an offset set forward skips what it passes, for good
        return off

    def _commit(self, topic: str, offset: int) -> None:
        self.broker.offsets.commit(CHECK_GROUP, topic, 0, offset)
        self._walked[topic] = offset

    def _read(self, topic: str, offset: int) -> MessageExt | None:
        cq = self.broker.store.find_consume_queue(topic, 0)
        unit = cq.get_unit(offset) if cq is not None else None
        if unit is None:
            return None
        msg = self.broker.store.look_message_by_offset(unit.commit_log_offset, unit.size)
        return msg

    async def check(self, timeout_ms: int, check_max: int) -> None:
        store = self.broker.store
        if store.find_consume_queue(HALF, 0) is None:
            return
        self.broker.topics.create_in_send_back(HALF, 1, _RW, 0)
        start = now_ms()
        reserved_ms = self.broker.config.store.file_reserved_time * 3_600_000
        half_offset = self._start_offset(HALF)
        op_offset = self._start_offset(OP)
        # op records: which halves are resolved
        removed: dict[int, int] = {}
        done_ops: list[int] = []
        op_max = store.get_max_offset_in_queue(OP, 0)
        for o in range(op_offset, op_max):
            if (o - op_offset) % 256 == 255:
                await trio.lowlevel.checkpoint()  # a long op queue must not hold the event loop
            op = self._read(OP, o)
            if op is None:
                continue
            if op.tags != REMOVE_TAG:
                done_ops.append(o)
                continue
            try:
                ref = int(op.body.decode())
            except ValueError:
                done_ops.append(o)
                continue
            if ref < half_offset:
                done_ops.append(o)
            else:
                removed[ref] = o
        half_max = store.get_max_offset_in_queue(HALF, 0)
        i = half_offset
        while i < half_max:
            # Java's check has a thread of its own; here the pass (up to a minute over thousands of half
            # messages whose producers are gone) gives every other connection its turn between messages
            await trio.lowlevel.checkpoint()
            if now_ms() - start > MAX_PROCESS_TIME_LIMIT_MS:
                break
            if i in removed:
                done_ops.append(removed.pop(i))
                i += 1
                continue
            msg = self._read(HALF, i)
            if msg is None:
                i += 1
                continue
            # needDiscard (a count Integer.parseInt refuses is -1: checked again, as 0 next time), or
            # needSkip: born before the oldest files kept
            counted = msg.properties.get(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES)
            times = None if counted is None else _java_int_or(counted, -1)
            if times is not None and times >= check_max:
                await self._discard(msg)
                i += 1
                continue
            # needDiscard has counted this check before needSkip looks (a skipped half goes counted)
            msg.properties[MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES] = str(1 if times is None else times + 1)
            age = to_int64(now_ms() - msg.born_timestamp)  # a long's difference, as Java's
            if age > reserved_ms:
                await self._discard(msg)
                i += 1
                continue
            if msg.store_timestamp >= start:
                break
            immunity = timeout_ms
            custom = msg.properties.get(MessageConst.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
            if custom is not None:
                seconds = _java_int_or(custom, -1, bits=64)
                if seconds != -1:  # getImmunityTime: -1, or what Long.parseLong refuses, is the timeout
                    immunity = to_int64(seconds * 1000)
                if age < immunity:
                    if await self._pass_immune(msg, removed, done_ops):
                        i += 1
                        continue
                    if age > -1:
                        # where Java spends up to a minute pulling op records and trying this half
                        # again, the walk stops here until the next check
                        break
                    # born in the future: checked, as Java's isNeedCheck has it
            elif 0 <= age < immunity:
                break
            if not await self._put_back(msg):
                break
            await self._send_check(msg)
            i += 1
        if i != half_offset:
            self._commit(HALF, i)
        new_op = op_offset
        done = set(done_ops)
        while new_op in done:
            new_op += 1
        if new_op != op_offset:
            self._commit(OP, new_op)

    async def _pass_immune(self, msg: MessageExt, removed: dict[int, int], done_ops: list[int]) -> bool:
        """checkPrepareQueueOffset: a half still within its own CHECK_IMMUNITY_TIME_IN_SECONDS is not
        checked. True if it is done with: resolved by an op record naming the offset it was first stored
        at (its TRAN_PREPARED_QUEUE_OFFSET), or put back with that offset (renewImmunityHalfMessageInner).
        False if that offset is unreadable or the put failed."""
        props = msg.properties
        prepared = props.get(MessageConst.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET)
        if prepared is not None:
            first = _java_int_or(prepared, -1, bits=64)
            if first == -1:
                return False
            if first in removed:
                done_ops.append(removed.pop(first))
                return True
        else:
            props[MessageConst.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET] = str(msg.queue_offset)
        # Java's copy shares the half's properties, where setWaitStoreMsgOK(false) has put WAIT before
        # this copy's properties string is made again: the copy is stored with WAIT=false
        props[MessageConst.PROPERTY_WAIT_STORE_MSG_OK] = "false"
        return await self._put_back(msg)

    async def _put_back(self, msg: MessageExt) -> bool:
        """Append the half again (renewHalfMessageInner); ``msg`` takes the copy's offsets."""
        inner = MessageExtBrokerInner(
            topic=msg.topic,
            body=msg.body,
            flag=msg.flag,
            properties=dict(msg.properties),
            properties_string=_props_string(msg.properties),
            queue_id=msg.queue_id,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_host=msg.store_host,
            reconsume_times=msg.reconsume_times,
        )
        inner.properties[MessageConst.PROPERTY_WAIT_STORE_MSG_OK] = "false"
        result = await self.broker.put_message(inner)
        if not result.is_ok or result.append is None:
            log.error("PutBackToHalfQueueReturnResult write failed, topic: %s, queueId: %d", msg.topic, msg.queue_id)
            return False
        msg.queue_offset = result.append.logics_offset
        msg.commit_log_offset = result.append.wrote_offset
        msg.store_timestamp = result.append.store_timestamp
        return True

    async def _discard(self, msg: MessageExt) -> None:
        topic = MixAll.RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC
        self.broker.topics.create_in_send_back(topic, 1, _RW, 0)
        props = dict(msg.properties)
        inner = MessageExtBrokerInner(
            topic=topic,
            body=msg.body,
            flag=msg.flag,
            properties=props,
            properties_string=_props_string(props),
            queue_id=0,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_host=msg.store_host,
            reconsume_times=msg.reconsume_times,
        )
        inner.properties[MessageConst.PROPERTY_WAIT_STORE_MSG_OK] = "false"
        await self.broker.put_message(inner)
        log.info("half message discarded after too many checks: %s", msg.uniq_key)

    async def _send_check(self, msg: MessageExt) -> None:
        group = msg.properties.get(MessageConst.PROPERTY_PRODUCER_GROUP, "")
        channel: Any = self.broker.producers.available_channel(group)
        if channel is None:
            log.warning("Check transaction failed, channel is null. groupId=%s", group)
            return
        offset_msg_id = msg.msg_id
        uniq = msg.uniq_key
        view = MessageExt(
            topic=msg.properties.get(MessageConst.PROPERTY_REAL_TOPIC, msg.topic),
            body=msg.body,
            flag=msg.flag,
            properties=dict(msg.properties),
            queue_id=int(msg.properties.get(MessageConst.PROPERTY_REAL_QUEUE_ID, "0")),
            queue_offset=msg.queue_offset,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_timestamp=msg.store_timestamp,
            store_host=msg.store_host,
            commit_log_offset=msg.commit_log_offset,
            body_crc=msg.body_crc,
            reconsume_times=msg.reconsume_times,
            prepared_transaction_offset=msg.prepared_transaction_offset,
        )
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=msg.queue_offset,
            commit_log_offset=msg.commit_log_offset,
            msg_id=uniq,
            transaction_id=uniq,
            offset_msg_id=offset_msg_id,
        )
        request = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, header, encode_message(view))
        try:
            await channel.invoke_oneway(request)
            self.checks_sent += 1
        except Exception as exc:
            log.warning("Check transaction failed, %s: %s", group, exc)
