"""The send hot path: a plain SEND_MESSAGE(_V2) from its header fields to the mapped CommitLog and back
to an encoded answer, with no message object.

Only the common case is taken here; anything else (a new or unknown topic, retry topics, delay,
transactions, batches, SYNC_FLUSH waits, a full file, odd properties) returns None and goes through
:func:`send.send_message`, which decides it exactly as Java does. Every record and answer made here is
the one the general path makes (``tests/test_send_fast.py`` checks them against each other).

ConsumeQueue and IndexFile dispatch is deferred to :meth:`FastSend.settle` (Java's
ReputMessageService dispatches behind the CommitLog too); the connection calls it once per receive,
before answering and before any other handler can look at the queues.
"""

from __future__ import annotations

import logging
import struct
from typing import TYPE_CHECKING, Any

from ...accel import compiled
from ...codecs import CodecError, RemotingCommand, ResponseCode, SerializeType
from ...codecs.codes import MessageConst, MessageSysFlag, MixAll, PermName
from ...codecs.frame import ROCKETMQ_FIXED_UNIT
from ...codecs.message import host_bytes, offset_msg_id_prefix, tags_hash_code
from ...javacompat.hashmap import hashmap_dict, hashmap_key_order
from ...store.types import PutMessageStatus
from ..responses import respond
from .common import host_of
from .send import send_extra, send_header_values, validate_topic

if TYPE_CHECKING:
    from ...remoting.connection import Connection
    from ..context import BrokerContext
    from ..controller import BrokerController

_SEND_V1 = 10
_SEND_V2 = 310
_BORN_V6 = int(MessageSysFlag.BORNHOST_V6_FLAG)
_STORE_V6 = int(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
_TRAN_MASK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
_INT32 = struct.Struct(">i")
_CODE = struct.Struct(">h")
log = logging.getLogger("rocketpy.broker")
_PREFIX = struct.Struct(">iI")
_RESPONSE_FIXED = ROCKETMQ_FIXED_UNIT
_ROCKETMQ = int(SerializeType.ROCKETMQ)
_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_TAGS = MessageConst.PROPERTY_TAGS
_KEYS = MessageConst.PROPERTY_KEYS
_UNIQ = MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
_WAIT = MessageConst.PROPERTY_WAIT_STORE_MSG_OK
_CLUSTER = MessageConst.PROPERTY_CLUSTER
_WAIT_FALSE = f"{_WAIT.lower()}\x01false"
#: properties that send the message down the general path (delay rewrite, transactions, retry bookkeeping)
_GENERAL_PATH_PROPS = frozenset(
    {
        MessageConst.PROPERTY_DELAY_TIME_LEVEL,
        MessageConst.PROPERTY_TRANSACTION_PREPARED,
        MessageConst.PROPERTY_RETRY_TOPIC,
        MessageConst.PROPERTY_REAL_TOPIC,
    }
)
_MAX_CACHE = 4096
_RAW_CODES = (_CODE.pack(_SEND_V1), _CODE.pack(_SEND_V2))
#: the version answers carry (RemotingCommand's default: the broker's own, V4_9_8)
_VERSION = int(RemotingCommand(code=0).version)
#: the compiled answer builder (accel), else FastSend.binary_answer
_send_answer = compiled("send_answer")
#: the compiled lane on undecoded frames (accel), else frames are decoded and offered to FastSend.handle
_SendCore = compiled("SendCore")


class _PropsPlan:
    """How one sequence of property names becomes the stored properties string.

    Java reads the client's string into a HashMap, puts CLUSTER, drops WAIT, and writes the map
    back in bucket order; for a given name sequence that is a fixed permutation of the entries.
    """

    __slots__ = ("order", "tags", "keys", "uniq", "wait_at")

    def __init__(self, names: tuple[str, ...]) -> None:
        where = {n: i for i, n in enumerate(names)}
        cluster_at = len(names)  # the CLUSTER entry is appended after the client's ones
        with_cluster = {**where, _CLUSTER: cluster_at}
        with_cluster.pop(_WAIT, None)
        self.order = tuple(with_cluster[n] for n in hashmap_key_order(tuple(with_cluster)))
        self.tags = where.get(_TAGS)
        self.keys = where.get(_KEYS)
        self.uniq = where.get(_UNIQ)
        self.wait_at = where.get(_WAIT)


def _plan_for(names: tuple[str, ...]) -> _PropsPlan | None:
    if _CLUSTER in names or "" in names or len(set(names)) != len(names) or not _GENERAL_PATH_PROPS.isdisjoint(names):
        return None
    return _PropsPlan(names)


class FastSend:
    """The broker's fast lane for SEND_MESSAGE and SEND_MESSAGE_V2 (see the module docstring)."""

    codes = frozenset({_SEND_V1, _SEND_V2})

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.store = broker.store
        self._plans: dict[tuple[str, ...], _PropsPlan | None] = {}
        self._topics: dict[str, bytes] = {}
        self._tags: dict[str, int] = {}
        self._binary_tail = b""
        self._cluster_entry = ""
        self._store_host = ""
        self._store_ip = b""
        self._store_port = 0
        self._msg_id_prefix = ""
        self._msg_id_prefix_b = b""
        self.pending_puts = 0
        self.version = _VERSION
        #: what SendCore reads of the plans and the identity: plans by the names' bytes (\x02-joined),
        #: and (store ip, store port, msgId prefix, answer tail, CLUSTER entry) as bytes
        self._raw_plans: dict[bytes, tuple[Any, ...] | None] = {}
        self._raw_state: tuple[Any, ...] = (b"", 0, b"", b"", b"", ((b"",), ()))
        #: the lane on whole frames (compiled); the connection hands it ROCKETMQ-header sends undecoded
        self.core = _SendCore(self) if _SendCore is not None else None
        if self.core is not None:
            # the connection calls these per frame: the compiled twins directly, no Python frame between
            self.takes_frame = self.core.takes  # type: ignore[method-assign]
            self.handle_frame = self.core.handle  # type: ignore[method-assign]
        #: SYNC_FLUSH answers of the current receive, held until the disk has them (see settle)
        self._held: list[bytes] = []
        self._held_ctx: BrokerContext | None = None
        self._held_until = 0

    # -- the answer ----------------------------------------------------------------------------
    def _identity(self) -> None:
        """Refresh what derives from the broker's config (cheap check; the config may change at run time)."""
        broker = self.broker
        host = broker.store_host
        if host != self._store_host:
            self._store_host = host
            self._store_ip, self._store_port = host_bytes(host)
            self._msg_id_prefix = offset_msg_id_prefix(self._store_ip, self._store_port)
            self._msg_id_prefix_b = self._msg_id_prefix.encode()
        cluster_entry = f"{_CLUSTER}\x01{broker.config.broker_cluster_name}"
        extra = send_extra(broker)
        # Java adds these with addExtField: they follow the header's fields in HashMap order
        tail = b"".join(_entry(k, v) for k, v in hashmap_dict(extra).items() if v is not None)
        if cluster_entry != self._cluster_entry or tail != self._binary_tail:
            self._cluster_entry = cluster_entry
            self._binary_tail = tail
            self._plans.clear()
            self._raw_plans.clear()
        self._raw_state = (
            self._store_ip,
            self._store_port,
            self._msg_id_prefix_b,
            self._binary_tail,
            self._cluster_entry.encode(),
            self._json_template(),
        )

    def _json_template(self) -> tuple[tuple[bytes, ...], tuple[int, ...]]:
        """The JSON answer as literal pieces and the slots between them (0 msgId, 1 queueId, 2 queueOffset,
        3 opaque), cut out of the general path's own answer to a request with marker values."""
        marks = (b"@@rocketpy-msgId@@", b"@@rocketpy-queueId@@", b"@@rocketpy-queueOffset@@", b"-1717986919")
        stub = RemotingCommand(code=_SEND_V2, opaque=int(marks[3]), serialize_type=SerializeType.JSON)
        header = {"msgId": marks[0].decode(), "queueId": marks[1].decode(), "queueOffset": marks[2].decode()}
        text = respond(stub, 0, None, header=header, extra=send_extra(self.broker), fast=True).encode()[8:]
        found = sorted((text.index(m), slot, m) for slot, m in enumerate(marks))
        pieces, slots, at = [], [], 0
        for pos, slot, m in found:
            pieces.append(text[at:pos])
            slots.append(slot)
            at = pos + len(m)
        pieces.append(text[at:])
        return tuple(pieces), tuple(slots)

    def _plan(self, names: tuple[str, ...]) -> _PropsPlan | None:
        try:
            return self._plans[names]
        except KeyError:
            pass
        self._identity()
        if len(self._plans) >= _MAX_CACHE:  # bounded: a client may send any names
            self._plans.clear()
        plan = self._plans[names] = _plan_for(names)
        return plan

    def raw_plan(self, names: bytes) -> tuple[Any, ...] | None:
        """SendCore's plan for the \x02-joined property names (UnicodeDecodeError when not UTF-8)."""
        plan = self._plan(tuple(names.decode().split("\x02")))
        if len(self._raw_plans) >= _MAX_CACHE:
            self._raw_plans.clear()
        if plan is None:
            return None
        return (plan.order, plan.tags, plan.keys, plan.uniq, plan.wait_at)

    def _born_host(self, ctx: BrokerContext) -> tuple[bytes, int] | None:
        attributes = ctx.connection.attributes
        born_host = attributes.get("born_host")
        if born_host is None:
            try:
                born_host = attributes["born_host"] = host_bytes(host_of(ctx))
            except CodecError:
                return None
        return born_host  # type: ignore[no-any-return]

    def hold_answer(self, ctx: BrokerContext, answer: bytes) -> None:
        """Keep a SYNC_FLUSH answer until the group commit covers what was appended (see settle)."""
        self._held.append(answer)
        self._held_ctx = ctx
        self._held_until = self.store.commitlog.max_offset

    def takes_frame(self, frame: bytes) -> bool:
        """Whether the connection may hand ``frame`` to :meth:`handle_frame` undecoded: a send, with a
        ROCKETMQ binary header or a JSON one as fastjson writes it (the rest is checked there)."""
        if self.core is None or len(frame) < 29:
            return False
        if frame[4] == _ROCKETMQ:
            return frame[8:10] in _RAW_CODES
        return frame[4] == 0 and (frame.startswith(b'{"code":310,', 8) or frame.startswith(b'{"code":10,', 8))

    def handle_frame(self, ctx: BrokerContext, frame: bytes) -> bytes | None:
        """:meth:`handle` on the frame's bytes (the compiled SendCore): the answer, or None to decode the
        frame and take the general path."""
        assert self.core is not None
        return self.core.handle(ctx, frame)  # type: ignore[no-any-return]

    # -- the lane ------------------------------------------------------------------------------
    def handle(self, ctx: BrokerContext, request: RemotingCommand) -> bytes | None:
        """The encoded answer to ``request`` (b"" for a oneway one), or None: take the general path."""
        values = send_header_values(request)
        if values is None:
            return None
        (_group, topic, _dtopic, _dnums, qid, sflag, born, flag, props, rt, unit, _mrt, batch) = values
        if (
            not props
            or (batch is not None and batch.lower() == "true")
            or (unit is not None and unit.lower() == "true")
        ):
            return None
        broker = self.broker
        topic_b = self._topics.get(topic)
        if topic_b is None:
            topic_b = self._first_sight(topic)
            if topic_b is None:
                return None
        tc = broker.topics.table.get(topic)
        if tc is None or not PermName.is_writeable(broker.config.broker_permission):
            return None
        try:
            queue_id = int(qid)
            sys_flag = int(sflag)
            born_ts = int(born)
            msg_flag = int(flag)
            reconsume = int(rt) if rt else 0
        except ValueError:
            return None
        if not (_I32_MIN <= sys_flag <= _I32_MAX and _I32_MIN <= msg_flag <= _I32_MAX
                and _I32_MIN <= reconsume <= _I32_MAX and _I64_MIN <= born_ts <= _I64_MAX):
            return None  # beyond its Java type: the general path refuses it as Java does (the writer cannot)
        if queue_id < 0 or queue_id >= max(tc.write_queue_nums, tc.read_queue_nums):
            return None
        if sys_flag & _TRAN_MASK:
            return None
        # the client's properties: split once, plan by the sequence of names
        if props[-1] == "\x02":
            props = props[:-1]
        entries = props.split("\x02")
        plan = self._plan(tuple([e.partition("\x01")[0] for e in entries]))
        if (
            plan is None
            or props.count("\x01") != len(entries)
            or "\x01\x02" in props
            or props[-1] == "\x01"
            or "\x02\x01" in props
            or props[0] == "\x01"
        ):
            return None  # entries without a name, a value or a separator: Java drops them, so does the general path
        hold = False
        if broker.answers_after_store():
            wait_at = plan.wait_at
            if wait_at is None or entries[wait_at].lower() != _WAIT_FALSE:
                # the producer waits for the disk: the answer is held until the group commit covers it;
                # a SYNC_MASTER's wait for its slave is the general path's (per message, as Java decides it)
                if request.serialize_type != _ROCKETMQ or ctx.nursery is None or request.flag & 2:
                    return None
                if broker.ha.is_sync_master:
                    return None
                hold = True
        entries.append(self._cluster_entry)
        stored = "\x02".join([entries[i] for i in plan.order]).encode()
        body = request.body or b""
        if len(stored) > 32767 or len(body) > broker.config.store.max_message_size:
            return None
        born_host = ctx.connection.attributes.get("born_host") or self._born_host(ctx)
        if born_host is None:
            return None
        born_ip, born_port = born_host
        sys_flag &= ~(_BORN_V6 | _STORE_V6)
        if len(born_ip) == 16:
            sys_flag |= _BORN_V6
        if len(self._store_ip) == 16:
            sys_flag |= _STORE_V6
        tags_code = 0
        if plan.tags is not None:
            tags = entries[plan.tags][5:]
            cached = self._tags.get(tags) if tags else 0
            if cached is None:
                cached = tags_hash_code(tags)
                if len(self._tags) < _MAX_CACHE:
                    self._tags[tags] = cached
            tags_code = cached
        keys = entries[plan.keys][5:] if plan.keys is not None else None
        uniq = entries[plan.uniq][9:] if plan.uniq is not None else None
        done = self.store.append_plain(
            tags_code, keys, uniq, topic, queue_id, topic_b, msg_flag, sys_flag, born_ts, born_ip, born_port,
            self._store_ip, self._store_port, reconsume, body, stored,
        )  # fmt: skip
        if done is None:
            return None
        self.pending_puts += 1
        if request.flag & 2:  # oneway: nothing to answer
            return b""
        phys, queue_offset, _ts = done
        if request.serialize_type == _ROCKETMQ:
            if _send_answer is not None:
                answer: bytes = _send_answer(
                    _VERSION, request.opaque, self._msg_id_prefix_b, phys, queue_id, queue_offset, self._binary_tail
                )
            else:
                answer = self.binary_answer(request.opaque, phys, queue_id, queue_offset)
            if hold:
                self.hold_answer(ctx, answer)
                return b""
            return answer
        msg_id = f"{self._msg_id_prefix}{phys:016X}"
        header = {"msgId": msg_id, "queueId": str(queue_id), "queueOffset": str(queue_offset)}
        return respond(request, 0, None, header=header, extra=send_extra(broker), fast=True).encode()

    def _first_sight(self, topic: str) -> bytes | None:
        """A topic not yet seen here: valid and existing, it takes the fast lane from now on; otherwise
        the general path answers (and may create it)."""
        if (
            topic not in self.broker.topics.table
            or MixAll.is_not_allowed_send_topic(topic)
            or topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX)
            or validate_topic(topic) is not None
            or len(self._topics) >= _MAX_CACHE
        ):
            return None
        topic_b = topic.encode()
        if len(topic_b) > 127:
            return None
        self._identity()
        self._topics[topic] = topic_b
        return topic_b

    def binary_answer(self, opaque: int, phys: int, queue_id: int, queue_offset: int) -> bytes:
        """The answer with a ROCKETMQ header (the pure twin of the compiled ``send_answer``)."""
        # SendMessageResponseHeader is a FastCodesHeader: msgId, queueId, queueOffset first, then the
        # broker's added fields; the remark is null
        tail = self._binary_tail
        mid = f"{self._msg_id_prefix}{phys:016X}".encode()
        qid = str(queue_id).encode()
        qoff = str(queue_offset).encode()
        ext_len = 41 + len(mid) + len(qid) + len(qoff) + len(tail)
        hlen = 21 + ext_len
        return b"".join(
            (
                _PREFIX.pack(4 + hlen, (_ROCKETMQ << 24) | hlen),
                _RESPONSE_FIXED.pack(0, 0, _VERSION, opaque, 1),
                b"\x00\x00\x00\x00",
                _INT32.pack(ext_len),
                b"\x00\x05msgId",
                _INT32.pack(len(mid)),
                mid,
                b"\x00\x07queueId",
                _INT32.pack(len(qid)),
                qid,
                b"\x00\x0bqueueOffset",
                _INT32.pack(len(qoff)),
                qoff,
                tail,
            )
        )

    def settle(self) -> None:
        """Dispatch the appended messages and wake the long polls waiting for them; answers held for the
        disk go to the group commit, which sends them once it covers them."""
        if self._held:
            ctx, self._held_ctx = self._held_ctx, None
            assert ctx is not None
            self.broker.answer_when_stored(_StoredAnswers(self._held_until, ctx.connection, self._held))
            self._held = []
        if not self.pending_puts:
            return
        broker = self.broker
        broker.stats["put"] += self.pending_puts
        self.pending_puts = 0
        done = self.store.settle()
        broker.ha.on_put()  # the slaves' transfer tasks stream what was appended
        hold = broker.hold
        if hold.table:
            # one wake-up per queue and tags hash of the receive (the held pulls read the queue again anyway)
            for topic, queue_id, tags_code in {(d[0], d[1], d[4]): None for d in done}:
                hold.notify_arrival(topic, queue_id, tags_code)



class _StoredAnswers:
    """A receive's SYNC_FLUSH answers, sent once the group commit covers ``offset`` (a FlushedAnswer):
    by the flush thread itself on a plain socket, else by a trio task."""

    __slots__ = ("answers", "connection", "offset")

    def __init__(self, offset: int, connection: Connection, answers: list[bytes]) -> None:
        self.offset = offset
        self.connection = connection
        self.answers = answers

    def deliver_from_thread(self) -> bool:
        return self.connection.write_from_thread(b"".join(self.answers))

    async def deliver(self, status: PutMessageStatus) -> None:
        answers = self.answers
        if status is not PutMessageStatus.PUT_OK:
            # FLUSH_DISK_TIMEOUT, with the same header (what put_error and send_response answer)
            code = _CODE.pack(int(ResponseCode.FLUSH_DISK_TIMEOUT))
            answers = [a[:8] + code + a[10:] for a in answers]
        try:
            await self.connection.send_bytes(b"".join(answers))
        except Exception as exc:
            log.warning("send answers to %s lost: %s", self.connection.remote_addr, exc)


def _entry(key: str, value: str) -> bytes:
    kb, vb = key.encode(), value.encode()
    return struct.pack(">h", len(kb)) + kb + _INT32.pack(len(vb)) + vb
