"""The JSON files a broker (and name server, and client) keep on disk.

The broker's ConfigManager writes ``toJson(true)``, fastjson's PrettyFormat: encode
these with ``pretty=True`` (what :func:`encode_config_file` does). The same documents
travel compactly on the wire for the slave-sync requests (GET_ALL_TOPIC_CONFIG...).

| file (under ``store/config``) | class |
|---|---|
| topics.json | TopicConfigSerializeWrapper |
| subscriptionGroup.json | SubscriptionGroupWrapper |
| consumerOffset.json | ConsumerOffsetSerializeWrapper |
| delayOffset.json | DelayOffsetSerializeWrapper |
| consumerFilter.json | ConsumerFilterManagerData |

The name server's ``kvConfig.json`` is KVConfigSerializeWrapper (compact), a client's
``offsets.json`` (broadcasting consumers) is OffsetSerializeWrapper (pretty).
"""

from __future__ import annotations

from .admin import SubscriptionGroupWrapper
from .base import BOOL, INT, LONG, STR, JsonBody, array_of, bfield, map_of, obj
from .consumer import ConsumerOffsetSerializeWrapper, MessageQueue
from .register import TopicConfigSerializeWrapper


class DelayOffsetSerializeWrapper(JsonBody):
    """config/delayOffset.json and the GET_ALL_DELAY_OFFSET reply: delay level -> offset
    reached in SCHEDULE_TOPIC_XXXX."""

    java_class = "org.apache.rocketmq.store.schedule.DelayOffsetSerializeWrapper"

    offset_table: dict[int, int] = bfield(map_of(INT, LONG), default={})


class BloomFilterData(JsonBody):
    """Bit positions of a consumer's bloom filter (SQL92 filtering with bit maps)."""

    java_class = "org.apache.rocketmq.filter.util.BloomFilterData"

    bit_pos: list[int] | None = bfield(array_of(INT))
    bit_num: int = bfield(INT, default=0)


class ConsumerFilterData(JsonBody):
    """A group's filter expression on a topic (the compiled expression is transient).
    ``dead`` is Java's isDead() getter, deadTime >= bornTime; computed when None."""

    java_class = "org.apache.rocketmq.broker.filter.ConsumerFilterData"

    consumer_group: str | None = bfield(STR)
    topic: str | None = bfield(STR)
    expression: str | None = bfield(STR)
    expression_type: str | None = bfield(STR)
    born_time: int = bfield(LONG, default=0)
    dead_time: int = bfield(LONG, default=0)
    bloom_filter_data: BloomFilterData | None = bfield(obj(BloomFilterData))
    client_version: int = bfield(LONG, default=0)
    dead: bool | None = bfield(BOOL, computed=lambda s: s.dead_time >= s.born_time)


class FilterDataMapByTopic(JsonBody):
    """A topic's filters by consumer group (ConsumerFilterManager.FilterDataMapByTopic)."""

    java_class = "org.apache.rocketmq.broker.filter.ConsumerFilterManager$FilterDataMapByTopic"

    group_filter_data: dict[str, ConsumerFilterData] = bfield(map_of(STR, obj(ConsumerFilterData)), default={})
    topic: str | None = bfield(STR)


class ConsumerFilterManagerData(JsonBody):
    """config/consumerFilter.json: what ConsumerFilterManager writes of itself."""

    java_class = "org.apache.rocketmq.broker.filter.ConsumerFilterManager"

    filter_data_by_topic: dict[str, FilterDataMapByTopic] = bfield(map_of(STR, obj(FilterDataMapByTopic)), default={})


class KVConfigSerializeWrapper(JsonBody):
    """The name server's kvConfig.json: namespace -> key -> value."""

    java_class = "org.apache.rocketmq.namesrv.kvconfig.KVConfigSerializeWrapper"

    config_table: dict[str, dict[str, str]] | None = bfield(map_of(STR, map_of(STR, STR)))


class OffsetSerializeWrapper(JsonBody):
    """A client's local offsets.json (LocalFileOffsetStore, broadcasting consumers)."""

    java_class = "org.apache.rocketmq.client.consumer.store.OffsetSerializeWrapper"

    offset_table: dict[MessageQueue, int] = bfield(map_of(obj(MessageQueue), LONG), default={})


#: broker config file name -> the class of its content
CONFIG_FILES: dict[str, type[JsonBody]] = {
    "topics.json": TopicConfigSerializeWrapper,
    "subscriptionGroup.json": SubscriptionGroupWrapper,
    "consumerOffset.json": ConsumerOffsetSerializeWrapper,
    "delayOffset.json": DelayOffsetSerializeWrapper,
    "consumerFilter.json": ConsumerFilterManagerData,
}


def config_file_class(name: str) -> type[JsonBody]:
    """The class for a config file name (a ``.bak`` copy has the same content)."""
    base = name.rsplit("/", 1)[-1]
    if base.endswith(".bak"):
        base = base[: -len(".bak")]
    try:
        return CONFIG_FILES[base]
    except KeyError:
        raise KeyError(f"not a broker config file: {name}") from None


def decode_config_file(name: str, data: bytes | str) -> JsonBody:
    """Parse a broker config file by its name."""
    return config_file_class(name).decode(data)


def encode_config_file(doc: JsonBody) -> bytes:
    """The bytes ConfigManager.persist() writes: ``toJson(true)``, no trailing newline."""
    return doc.encode(pretty=True)


__all__ = [
    "CONFIG_FILES",
    "BloomFilterData",
    "ConsumerFilterData",
    "ConsumerFilterManagerData",
    "DelayOffsetSerializeWrapper",
    "FilterDataMapByTopic",
    "KVConfigSerializeWrapper",
    "OffsetSerializeWrapper",
    "config_file_class",
    "decode_config_file",
    "encode_config_file",
]
