"""Routes turned into queues: where a producer may write and a consumer may read (sans-IO)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..codecs.bodies import MessageQueue, TopicRouteData
from ..codecs.codes import PermName

MASTER_ID = 0


class QueueCounter:
    """Java's ThreadLocalIndex: a counter that starts at a random point, masked positive."""

    __slots__ = ("value",)

    def __init__(self, start: int | None = None) -> None:
        self.value = random.randrange(1 << 31) if start is None else start

    def next(self) -> int:
        self.value = (self.value + 1) & 0xFFFFFFFF
        return self.value & 0x7FFFFFFF


@dataclass
class TopicPublishInfo:
    """The writable queues of a topic, in route order, and the round-robin position."""

    order_topic: bool = False
    have_route: bool = False
    queues: list[MessageQueue] = field(default_factory=list)
    route: TopicRouteData | None = None
    counter: QueueCounter = field(default_factory=QueueCounter)

    @property
    def ok(self) -> bool:
        return bool(self.queues)

    def select(self, last_broker: str | None = None) -> MessageQueue:
        """The next queue, avoiding ``last_broker`` when another broker has one."""
        n = len(self.queues)
        if last_broker is not None:
            for _ in range(n):
                mq = self.queues[self.counter.next() % n]
                if mq.broker_name != last_broker:
                    return mq
        return self.queues[self.counter.next() % n]

    def write_queue_nums(self, broker_name: str) -> int:
        """How many writable queues ``broker_name`` has for this topic (-1 when none)."""
        for qd in (self.route.queue_datas or []) if self.route else []:
            if qd.broker_name == broker_name:
                return qd.write_queue_nums
        return -1


def publish_info(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    """MQClientInstance.topicRouteData2TopicPublishInfo."""
    info = TopicPublishInfo(route=route)
    if route.order_topic_conf:
        for item in route.order_topic_conf.split(";"):
            name, _, nums = item.partition(":")
            for i in range(int(nums or 0)):
                info.queues.append(MessageQueue(topic=topic, broker_name=name, queue_id=i))
        info.order_topic = True
        return info
    masters = {bd.broker_name: bd.master_addr() for bd in route.broker_datas or []}
    for qd in sorted(route.queue_datas or [], key=lambda q: q.broker_name or ""):
        if not PermName.is_writeable(qd.perm):
            continue
        if masters.get(qd.broker_name) is None:
            continue  # no master: nowhere to write
        for i in range(qd.write_queue_nums):
            info.queues.append(MessageQueue(topic=topic, broker_name=qd.broker_name, queue_id=i))
    info.order_topic = False
    return info


def subscribe_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """MQClientInstance.topicRouteData2TopicSubscribeInfo: the readable queues."""
    out: list[MessageQueue] = []
    for qd in route.queue_datas or []:
        if PermName.is_readable(qd.perm):
            out.extend(MessageQueue(topic=topic, broker_name=qd.broker_name, queue_id=i)
                       for i in range(qd.read_queue_nums))
    return out


def broker_addrs(route: TopicRouteData) -> dict[str, dict[int, str]]:
    return {bd.broker_name: dict(bd.broker_addrs or {}) for bd in route.broker_datas or [] if bd.broker_name}


def route_equal(a: TopicRouteData | None, b: TopicRouteData | None) -> bool:
    """Whether two routes describe the same queues and brokers (order-insensitive)."""
    if a is None or b is None:
        return a is b

    def key(r: TopicRouteData) -> tuple:
        qds = sorted((q.broker_name or "", q.read_queue_nums, q.write_queue_nums, q.perm, q.topic_sys_flag)
                     for q in r.queue_datas or [])
        bds = sorted((b.broker_name or "", b.cluster or "", tuple(sorted((b.broker_addrs or {}).items())))
                     for b in r.broker_datas or [])
        return (r.order_topic_conf, qds, bds)

    return key(a) == key(b)
