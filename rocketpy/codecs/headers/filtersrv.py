"""Headers of the retired filter-server protocol; 4.9.8 keeps the classes."""

from __future__ import annotations

from .base import CommandHeader, jfield


class RegisterFilterServerRequestHeader(CommandHeader):
    """REGISTER_FILTER_SERVER request; no 4.9.8 component sends or handles it."""

    java_class = "org.apache.rocketmq.common.protocol.header.filtersrv.RegisterFilterServerRequestHeader"

    filter_server_addr: str | None = jfield("String", required=True)


class RegisterFilterServerResponseHeader(CommandHeader):
    """REGISTER_FILTER_SERVER response; no 4.9.8 component sends or handles it."""

    java_class = "org.apache.rocketmq.common.protocol.header.filtersrv.RegisterFilterServerResponseHeader"

    broker_name: str | None = jfield("String", required=True)
    broker_id: int = jfield("long", required=True)


class RegisterMessageFilterClassRequestHeader(CommandHeader):
    """REGISTER_MESSAGE_FILTER_CLASS request, still sent by the 4.9.8 client API."""

    java_class = "org.apache.rocketmq.common.protocol.header.filtersrv.RegisterMessageFilterClassRequestHeader"

    consumer_group: str | None = jfield("String", required=True)
    topic: str | None = jfield("String", required=True)
    class_name: str | None = jfield("String", required=True)
    class_crc: int | None = jfield("Integer", required=True, java="classCRC")
