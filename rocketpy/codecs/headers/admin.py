"""Headers of topic, group and consumer administration (mqadmin's commands)."""

from __future__ import annotations

from ..codes import TopicFilterType
from ..errors import CodecError
from .base import CommandHeader, jfield


class CreateTopicRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_TOPIC request: the topic config to create or update."""

    java_class = "org.apache.rocketmq.common.protocol.header.CreateTopicRequestHeader"

    topic: str | None = jfield("String", required=True)
    default_topic: str | None = jfield("String", required=True)
    read_queue_nums: int | None = jfield("Integer", required=True)
    write_queue_nums: int | None = jfield("Integer", required=True)
    perm: int | None = jfield("Integer", required=True)
    topic_filter_type: str | None = jfield("String", required=True)
    topic_sys_flag: int | None = jfield("Integer")
    order: bool | None = jfield("Boolean", required=True, default=False)


    def check_fields(self) -> None:
        """Java's checkFields: topicFilterType must name a TopicFilterType constant."""
        if self.topic_filter_type not in TopicFilterType.__members__:
            raise CodecError(f"{type(self).__name__}: field <topicFilterType> is invalid: {self.topic_filter_type!r}")


class DeleteTopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER request: the topic."""

    java_class = "org.apache.rocketmq.common.protocol.header.DeleteTopicRequestHeader"

    topic: str | None = jfield("String", required=True)


class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    """DELETE_SUBSCRIPTIONGROUP request: the group, optionally with its offsets."""

    java_class = "org.apache.rocketmq.common.protocol.header.DeleteSubscriptionGroupRequestHeader"

    group_name: str | None = jfield("String", required=True)
    remove_offset: bool = jfield("boolean")


class GetAllTopicConfigResponseHeader(CommandHeader):
    """GET_ALL_TOPIC_CONFIG response (no fields; configs are in the body)."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetAllTopicConfigResponseHeader"


class GetBrokerConfigResponseHeader(CommandHeader):
    """GET_BROKER_CONFIG response: the config's data version (the config is the body)."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetBrokerConfigResponseHeader"

    version: str | None = jfield("String", required=True)


class ResetOffsetRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET / RESET_CONSUMER_CLIENT_OFFSET request: reset a group to a time."""

    java_class = "org.apache.rocketmq.common.protocol.header.ResetOffsetRequestHeader"

    topic: str | None = jfield("String", required=True)
    group: str | None = jfield("String", required=True)
    timestamp: int = jfield("long", required=True)
    is_force: bool = jfield("boolean", required=True)


class GetConsumerStatusRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS / GET_CONSUMER_STATUS_FROM_CLIENT request."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetConsumerStatusRequestHeader"

    topic: str | None = jfield("String", required=True)
    group: str | None = jfield("String", required=True)
    client_addr: str | None = jfield("String")


class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """GET_CONSUMER_RUNNING_INFO request, relayed by the broker to one client."""

    java_class = "org.apache.rocketmq.common.protocol.header.GetConsumerRunningInfoRequestHeader"

    consumer_group: str | None = jfield("String", required=True)
    client_id: str | None = jfield("String", required=True)
    jstack_enable: bool = jfield("boolean")


class ConsumeMessageDirectlyResultRequestHeader(CommandHeader):
    """CONSUME_MESSAGE_DIRECTLY request, relayed by the broker to one client."""

    java_class = "org.apache.rocketmq.common.protocol.header.ConsumeMessageDirectlyResultRequestHeader"

    consumer_group: str | None = jfield("String", required=True)
    client_id: str | None = jfield("String")
    msg_id: str | None = jfield("String")
    broker_name: str | None = jfield("String")


class CloneGroupOffsetRequestHeader(CommandHeader):
    """CLONE_GROUP_OFFSET request: copy one group's offsets to another."""

    java_class = "org.apache.rocketmq.common.protocol.header.CloneGroupOffsetRequestHeader"

    src_group: str | None = jfield("String", required=True)
    dest_group: str | None = jfield("String", required=True)
    topic: str | None = jfield("String")
    offline: bool = jfield("boolean")


class QueryCorrectionOffsetHeader(CommandHeader):
    """QUERY_CORRECTION_OFFSET request: the smallest offsets across groups for a topic."""

    java_class = "org.apache.rocketmq.common.protocol.header.QueryCorrectionOffsetHeader"

    filter_groups: str | None = jfield("String")
    compare_group: str | None = jfield("String", required=True)
    topic: str | None = jfield("String", required=True)
