"""Namespaces (Java's ClientConfig.namespace and NamespaceUtil): a client with a namespace names its topics and
groups ``<namespace>%<name>`` on the wire, ``%RETRY%<namespace>%<group>`` for retry topics, and shows its
users the names without it. System topics and groups (RMQ_SYS_*, TBW102, CID_RMQ_SYS_*) are never prefixed.
"""

from __future__ import annotations

from ..codecs.bodies import MessageQueue
from ..codecs.codes import MixAll

__all__ = ["SEPARATOR", "queue_with_namespace", "queue_without_namespace", "strip_namespace", "with_namespace",
           "without_namespace"]

SEPARATOR = "%"
_RETRY, _DLQ = MixAll.RETRY_GROUP_TOPIC_PREFIX, MixAll.DLQ_GROUP_TOPIC_PREFIX


def _system(resource: str) -> bool:
    return MixAll.is_system_topic(resource) or MixAll.is_sys_consumer_group(resource)


def _split_prefix(resource: str) -> tuple[str, str]:
    """(``%RETRY%``, ``%DLQ%`` or "", the rest)."""
    if resource.startswith(_RETRY):
        return _RETRY, resource[len(_RETRY):]
    if resource.startswith(_DLQ):
        return _DLQ, resource[len(_DLQ):]
    return "", resource


def with_namespace(namespace: str | None, resource: str) -> str:
    """NamespaceUtil.wrapNamespace: ``resource`` in ``namespace`` (unchanged when already in it, or a system
    resource, or no namespace)."""
    if not namespace or not resource or _system(resource):
        return resource
    prefix, rest = _split_prefix(resource)
    if rest.startswith(namespace + SEPARATOR):
        return resource
    return f"{prefix}{namespace}{SEPARATOR}{rest}"


def without_namespace(resource: str, namespace: str | None) -> str:
    """NamespaceUtil.withoutNamespace(resource, namespace): the name a user of ``namespace`` gave it; a
    resource of another namespace is left as it is."""
    if not resource or not namespace:
        return resource
    _, rest = _split_prefix(resource)
    if rest.startswith(namespace + SEPARATOR):
        return strip_namespace(resource)
    return resource


def strip_namespace(resource: str) -> str:
    """NamespaceUtil.withoutNamespace(resource): the name without whatever namespace it is in (the trace
    records name topics and groups so)."""
    if not resource or _system(resource):
        return resource
    prefix, rest = _split_prefix(resource)
    index = rest.find(SEPARATOR)
    if index > 0:
        return prefix + rest[index + 1:]
    return resource


def queue_with_namespace(namespace: str | None, mq: MessageQueue) -> MessageQueue:
    """ClientConfig.queueWithNamespace: the queue of the topic in ``namespace`` (a new one; the given is kept)."""
    if not namespace:
        return mq
    return MessageQueue.of(with_namespace(namespace, mq.topic or ""), mq.broker_name, mq.queue_id)


def queue_without_namespace(namespace: str | None, mq: MessageQueue) -> MessageQueue:
    """The queue as a user of ``namespace`` names it (MQAdminImpl.parsePublishMessageQueues and friends)."""
    if not namespace:
        return mq
    return MessageQueue.of(without_namespace(mq.topic or "", namespace), mq.broker_name, mq.queue_id)
