"""A tiny fake broker for the NameServer compat tests.

It registers one topic with a NameServer (REGISTER_BROKER, the way a 4.9.8 broker
does) and answers what a producer sends it: HEART_BEAT, SEND_MESSAGE(_V2),
UNREGISTER_CLIENT, minimally but correctly; a push consumer gets its group's client
ids, offset 0 and empty pulls (PULL_NOT_FOUND after a short pause). A real client's send can only reach it
through the route our NameServer gave that client, so a successful send proves the
route was right. Every request it receives is kept in :attr:`StubBroker.requests`.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging

import trio

from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode
from rocketpy.codecs.bodies.consumer import GetConsumerListByGroupResponseBody
from rocketpy.codecs.bodies.heartbeat import HeartbeatData
from rocketpy.codecs.bodies.register import DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper
from rocketpy.codecs.headers.consumer import QueryConsumerOffsetResponseHeader
from rocketpy.codecs.headers.namesrv import RegisterBrokerRequestHeader
from rocketpy.codecs.headers.pull import PullMessageResponseHeader
from rocketpy.codecs.headers.query import GetMaxOffsetResponseHeader, GetMinOffsetResponseHeader
from rocketpy.codecs.headers.send import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketpy.codecs.message import create_offset_msg_id, string_to_properties
from rocketpy.remoting import Dispatcher, RemotingServer, RequestContext, open_remoting_client

log = logging.getLogger("compat.stub")

SEND_CODES = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2)
#: seconds an empty pull is held, so a consumer does not spin
PULL_PAUSE = 0.1


@dataclasses.dataclass
class ReceivedSend:
    """One SEND_MESSAGE(_V2) as the stub decoded it."""

    code: int
    version: int
    language: str
    topic: str | None
    queue_id: int | None
    producer_group: str | None
    properties: dict[str, str]
    body: bytes
    sys_flag: int | None
    ext_fields: dict[str, str]


class StubBroker:
    """A broker stand-in: one topic, ``queues`` read/write queues, SEND answered SUCCESS."""

    def __init__(
        self,
        topic: str,
        *,
        queues: int = 4,
        cluster: str = "CompatCluster",
        broker_name: str = "compat-stub-broker",
        extra_topics: tuple[str, ...] = ("TBW102",),
    ) -> None:
        self.topic = topic
        self.queues = queues
        self.cluster = cluster
        self.broker_name = broker_name
        self.extra_topics = extra_topics
        self.requests: list[RemotingCommand] = []
        self.sends: list[ReceivedSend] = []
        self.register_response: RemotingCommand | None = None
        self.server: RemotingServer | None = None
        #: the VIP channel (port - 2), where the Java client sends by default
        self.vip_server: RemotingServer | None = None
        self._offsets = itertools.count()
        #: consumer group -> client ids seen in heartbeats
        self.consumers: dict[str, list[str]] = {}

    @property
    def address(self) -> str:
        assert self.server is not None, "stub not serving"
        return self.server.address

    # -- answers ---------------------------------------------------------------------
    async def _handle(self, ctx: RequestContext, request: RemotingCommand) -> RemotingCommand | None:
        self.requests.append(request)
        code = request.code
        if code in SEND_CODES:
            return self._send(request)
        if code == RequestCode.HEART_BEAT:
            if request.body:
                data = HeartbeatData.decode(request.body)
                for consumer in data.consumer_data_set:
                    ids = self.consumers.setdefault(consumer.group_name or "", [])
                    if data.client_id and data.client_id not in ids:
                        ids.append(data.client_id)
            return request.response(ResponseCode.SUCCESS)
        if code in (RequestCode.UNREGISTER_CLIENT, RequestCode.CHECK_CLIENT_CONFIG,
                    RequestCode.UPDATE_CONSUMER_OFFSET):
            return request.response(ResponseCode.SUCCESS)
        if code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
            group = (request.ext_fields or {}).get("consumerGroup", "")
            body = GetConsumerListByGroupResponseBody(consumer_id_list=self.consumers.get(group, []))
            return request.response(ResponseCode.SUCCESS, body=body.encode())
        if code == RequestCode.QUERY_CONSUMER_OFFSET:
            return request.response(ResponseCode.SUCCESS, header=QueryConsumerOffsetResponseHeader(offset=0))
        if code == RequestCode.GET_MAX_OFFSET:
            return request.response(ResponseCode.SUCCESS, header=GetMaxOffsetResponseHeader(offset=0))
        if code == RequestCode.GET_MIN_OFFSET:
            return request.response(ResponseCode.SUCCESS, header=GetMinOffsetResponseHeader(offset=0))
        if code == RequestCode.PULL_MESSAGE:
            await trio.sleep(PULL_PAUSE)
            header = PullMessageResponseHeader(
                suggest_which_broker_id=0, next_begin_offset=0, min_offset=0, max_offset=0
            )
            return request.response(ResponseCode.PULL_NOT_FOUND, header=header, remark="stub: no message")
        return request.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=f" request type {code} not supported")

    def _send(self, request: RemotingCommand) -> RemotingCommand:
        if request.code == RequestCode.SEND_MESSAGE_V2:
            header = request.decode_header(SendMessageRequestHeaderV2).to_v1()
        else:
            header = request.decode_header(SendMessageRequestHeader)
        language = request.language.name if hasattr(request.language, "name") else str(request.language)
        self.sends.append(
            ReceivedSend(
                code=request.code,
                version=request.version,
                language=language,
                topic=header.topic,
                queue_id=header.queue_id,
                producer_group=header.producer_group,
                properties=string_to_properties(header.properties),
                body=request.body or b"",
                sys_flag=header.sys_flag,
                ext_fields=dict(request.ext_fields or {}),
            )
        )
        if header.topic != self.topic or header.queue_id is None or not 0 <= header.queue_id < self.queues:
            return request.response(
                ResponseCode.SYSTEM_ERROR, remark=f"stub: unexpected topic/queue {header.topic}/{header.queue_id}"
            )
        offset = next(self._offsets)
        response_header = SendMessageResponseHeader(
            msg_id=create_offset_msg_id(self.address, 1000 + offset * 100),
            queue_id=header.queue_id,
            queue_offset=offset,
        )
        return request.response(ResponseCode.SUCCESS, header=response_header)

    # -- registration ------------------------------------------------------------------
    def register_body(self) -> RegisterBrokerBody:
        table = {self.topic: TopicConfig(topic_name=self.topic, read_queue_nums=self.queues,
                                         write_queue_nums=self.queues)}
        for name in self.extra_topics:
            table[name] = TopicConfig(topic_name=name, read_queue_nums=self.queues, write_queue_nums=self.queues)
        wrapper = TopicConfigSerializeWrapper(topic_config_table=table, data_version=DataVersion())
        return RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=[])

    async def run(self, namesrv_addr: str, *, task_status: trio.TaskStatus[StubBroker] = trio.TASK_STATUS_IGNORED
                  ) -> None:
        """Serve on 127.0.0.1, register with ``namesrv_addr``, and stay until cancelled.

        The registering connection stays open: the NameServer drops a broker whose
        connection closes.
        """
        from .servers import broker_ports

        dispatcher = Dispatcher(default=self._handle)
        self.server = RemotingServer(dispatcher)
        self.vip_server = RemotingServer(dispatcher)
        async with trio.open_nursery() as nursery:
            _, port = broker_ports()
            await nursery.start(self.server.serve, "127.0.0.1", port)
            await nursery.start(self.vip_server.serve, "127.0.0.1", port - 2)
            async with open_remoting_client() as client:
                body = self.register_body().encode(compress=False)
                header = RegisterBrokerRequestHeader(
                    broker_name=self.broker_name,
                    broker_addr=self.address,
                    cluster_name=self.cluster,
                    ha_server_addr=f"127.0.0.1:{self.server.port + 1}",
                    broker_id=0,
                    compressed=False,
                    body_crc32=0,
                )
                request = RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body)
                response = await client.invoke(namesrv_addr, request, timeout=5)
                self.register_response = response
                if response.code != ResponseCode.SUCCESS:
                    raise RuntimeError(f"REGISTER_BROKER failed: {response.code} {response.remark}")
                task_status.started(self)
                await trio.sleep_forever()
