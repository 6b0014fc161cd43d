"""The send lane: a plain SEND_MESSAGE(_V2) from its frame's bytes to the mapped CommitLog and back to an
encoded answer, with no message object (the accelerated build's fast form of :mod:`.send`).

:func:`.send.send_message` is the reference: it decides every send as Java does. The lane takes only the
common case (an existing, valid topic; no delay, transaction, batch or retry bookkeeping; the properties
plain) and passes everything else on (None), and then the frame is decoded and goes to the handler.
``tests/test_send_fast.py`` holds the two to the same answers and the same store bytes.

The lane is the broker's :class:`~rocketpy.remoting.dispatch.FastPath` (registered beside the handlers in
``processors.register_all``). Its per-frame work is compiled (``_speedups.SendCore``: ``takes`` and
``answer``); this module holds what that code consults, in Python:

* per property-name sequence, how the stored properties string is laid out (:class:`_PropsPlan`, Java's
  HashMap order with CLUSTER added and WAIT dropped);
* topics seen valid, the broker's identity (store host, msgId prefix, the answer's tail and its JSON
  template cut from the general path's own answer), each connection's born host;
* SYNC_FLUSH answers held for the group commit, and :meth:`SendLane.settle`: the store's deferred
  ConsumeQueue/IndexFile dispatch, the put counter, the slaves and the long polls woken.

Without the accelerated build there is no lane (:func:`available`): every send takes the general path.
"""

from __future__ import annotations

import logging
import struct
from typing import TYPE_CHECKING, Any

from ...accel import compiled
from ...codecs import CodecError, RemotingCommand, ResponseCode, SerializeType
from ...codecs.codes import MessageConst, MixAll
from ...codecs.message import host_bytes, offset_msg_id_prefix
from ...javacompat.hashmap import hashmap_dict, hashmap_key_order
from ...store.types import PutMessageStatus
from ..responses import respond
from .common import host_of
from .send import send_extra, validate_topic

if TYPE_CHECKING:
    from ...remoting.connection import Connection
    from ...store.services import FlushedAnswer
    from ..context import BrokerContext
    from ..controller import BrokerController

log = logging.getLogger("rocketpy.broker")

_SEND_V2 = 310
_INT32 = struct.Struct(">i")
_CODE = struct.Struct(">h")
_TAGS = MessageConst.PROPERTY_TAGS
_KEYS = MessageConst.PROPERTY_KEYS
_UNIQ = MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
_WAIT = MessageConst.PROPERTY_WAIT_STORE_MSG_OK
_CLUSTER = MessageConst.PROPERTY_CLUSTER
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
#: the version answers carry (RemotingCommand's default: the broker's own, V4_9_8)
_VERSION = int(RemotingCommand(code=0).version)
#: the compiled lane (accel), else None
_SendCore = compiled("SendCore")


def available() -> bool:
    """Whether this build has the lane (the accelerated build, ROCKETPY_PURE not set)."""
    return _SendCore is not None


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


class SendLane:
    """The broker's fast path for plain SEND_MESSAGE and SEND_MESSAGE_V2 (see the module docstring)."""

    def __init__(self, broker: BrokerController) -> None:
        if _SendCore is None:
            raise RuntimeError("the send lane needs the accelerated build (rocketpy._speedups)")
        self.broker = broker
        self.store = broker.store
        #: what SendCore consults: plans by the property names' bytes (\x02-joined) as
        #: (order, tags at, keys at, UNIQ_KEY at, WAIT at), or None for the general path
        self.plans: dict[bytes, tuple[Any, ...] | None] = {}
        #: topics seen valid and existing, as their UTF-8 bytes
        self.topics: dict[str, bytes] = {}
        #: (store ip, store port, msgId prefix, binary answer tail, CLUSTER entry, JSON answer template)
        self.identity: tuple[Any, ...] = (b"", 0, b"", b"", b"", ((b"",), ()))
        self.pending_puts = 0
        self.version = _VERSION
        self._store_host = ""
        self._cluster_entry = b""
        self._binary_tail = b""
        core = _SendCore(self)
        # the connection calls these per frame: the compiled methods directly, no Python frame between
        self.takes = core.takes
        self.answer = core.answer
        #: SYNC_FLUSH answers of the current receive, held until the disk has them (see settle)
        self._held: list[bytes] = []
        self._held_ctx: BrokerContext | None = None
        self._held_until = 0

    # -- what SendCore consults ------------------------------------------------------------------
    def _refresh_identity(self) -> None:
        """Refresh what derives from the broker's config (cheap; the config may change at run time)."""
        broker = self.broker
        host = broker.store_host
        store_ip, store_port, prefix = self.identity[:3]
        if host != self._store_host:
            self._store_host = host
            store_ip, store_port = host_bytes(host)
            prefix = offset_msg_id_prefix(store_ip, store_port).encode()
        cluster_entry = f"{_CLUSTER}\x01{broker.config.broker_cluster_name}".encode()
        # Java adds these with addExtField: they follow the header's fields in HashMap order
        tail = b"".join(_entry(k, v) for k, v in hashmap_dict(send_extra(broker)).items() if v is not None)
        if cluster_entry != self._cluster_entry or tail != self._binary_tail:
            self._cluster_entry = cluster_entry
            self._binary_tail = tail
            self.plans.clear()
        self.identity = (store_ip, store_port, prefix, tail, cluster_entry, self._json_template())

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

    def plan(self, names: bytes) -> tuple[Any, ...] | None:
        """The plan for the \x02-joined property names (UnicodeDecodeError when not UTF-8); SendCore keeps
        it in :attr:`plans`."""
        self._refresh_identity()
        if len(self.plans) >= _MAX_CACHE:  # bounded: a client may send any names
            self.plans.clear()
        plan = _plan_for(tuple(names.decode().split("\x02")))
        if plan is None:
            return None
        return (plan.order, plan.tags, plan.keys, plan.uniq, plan.wait_at)

    def first_sight(self, topic: str) -> bytes | None:
        """A topic not yet seen here: valid and existing, it takes the lane from now on; otherwise the
        general path answers (and may create it)."""
        if (
            topic not in self.broker.topics.table
            or MixAll.is_not_allowed_send_topic(topic)
            or topic.startswith(MixAll.RETRY_GROUP_TOPIC_PREFIX)
            or validate_topic(topic) is not None
        ):
            return None
        topic_b = topic.encode()
        if len(topic_b) > 127:
            return None
        if len(self.topics) >= _MAX_CACHE:
            # begun again rather than refused: after 4,096 topics ever sent to (deleted ones too), no new
            # topic took the lane any more
            self.topics.clear()
        self._refresh_identity()
        self.topics[topic] = topic_b
        return topic_b

    def born_host(self, ctx: BrokerContext) -> tuple[bytes, int] | None:
        """The connection's peer as a record holds it, kept on the connection; None when unparsable."""
        attributes = ctx.connection.attributes
        born_host = attributes.get("born_host")
        if born_host is None:
            try:
                born_host = attributes["born_host"] = host_bytes(host_of(ctx))
            except CodecError:
                return None
        return born_host

    def hold_answer(self, ctx: BrokerContext, answer: bytes) -> None:
        """Keep a SYNC_FLUSH answer until the group commit covers what was appended (see settle)."""
        self._held.append(answer)
        self._held_ctx = ctx
        self._held_until = self.store.commitlog.max_offset

    # -- the transport's side (FastPath) ---------------------------------------------------------
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
        # the put times (StoreStatsService's distribution): each append was a copy into the mapped CommitLog,
        # under a millisecond, which Java's millisecond clock counts as [<=0ms]; one call per receive
        broker.store_stats.latency.put(0, self.pending_puts)
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

    @property
    def count(self) -> int:
        return len(self.answers)

    def deliver_from_thread(self) -> bool:
        return self.connection.write_from_thread(b"".join(self.answers))

    def absorb(self, later: FlushedAnswer) -> bool:
        if type(later) is not _StoredAnswers or later.connection is not self.connection:
            return False
        self.answers += later.answers  # the later receive's answers after this one's: the order they came in
        self.offset = max(self.offset, later.offset)
        return True

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
