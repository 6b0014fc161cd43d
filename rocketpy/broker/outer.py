"""Talking to NameServers (BrokerOuterAPI): REGISTER_BROKER at start and every
registerNameServerPeriod (clamped to 10-60 s like Java), oneway re-registration after a
topic is auto-created, UNREGISTER_BROKER at shutdown."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

import trio

from ..codecs import RemotingCommand
from ..codecs.bodies import RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper, body_crc32
from ..codecs.codes import PermName, RequestCode
from ..codecs.headers import RegisterBrokerRequestHeader, UnRegisterBrokerRequestHeader
from ..remoting import open_remoting_client

if TYPE_CHECKING:
    from .controller import BrokerController

log = logging.getLogger("rocketpy.broker")

#: BrokerController.start: the periodic registerBrokerAll's initial delay
FIRST_PERIODIC_REGISTRATION_S = 10.0


class _PermittedTopics(Mapping[str, TopicConfig]):
    """The topic table as a broker without read or write permission advertises it: each config copied with
    its perm masked by the broker's, one at a time as the body is written."""

    def __init__(self, table: Mapping[str, TopicConfig], permission: int) -> None:
        self.table = table
        self.permission = permission

    def __getitem__(self, name: str) -> TopicConfig:
        tc = self.table[name]
        copy = type(tc).from_json(tc.to_json())
        copy.perm = tc.perm & self.permission
        return copy

    def __iter__(self) -> Iterator[str]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)


class BrokerOuterAPI:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.registrations = 0  # successful REGISTER_BROKER answers, for tests and logs

    def _topics(self) -> Mapping[str, TopicConfig]:
        """The topic table as registered: the live one (the body is written at once on the trio thread, so it
        cannot change meanwhile), or, for a broker without read or write permission, a view of it that way."""
        cfg = self.broker.config
        table = self.broker.topics.table
        if not PermName.is_writeable(cfg.broker_permission) or not PermName.is_readable(cfg.broker_permission):
            return _PermittedTopics(table, cfg.broker_permission)
        return table

    def _request(self) -> RemotingCommand:
        cfg = self.broker.config
        wrapper = TopicConfigSerializeWrapper(topic_config_table={}, data_version=self.broker.topics.data_version)
        body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=[])
        data = body.encode_with_topics(self._topics(), compress=cfg.compressed_register)
        header = RegisterBrokerRequestHeader(
            broker_name=cfg.broker_name,
            broker_addr=self.broker.broker_addr,
            cluster_name=cfg.broker_cluster_name,
            ha_server_addr=self.broker.ha.ha_server_addr(),
            broker_id=cfg.broker_id,
            compressed=cfg.compressed_register,
            body_crc32=body_crc32(data),
        )
        return RemotingCommand.request(RequestCode.REGISTER_BROKER, header, data)

    async def register_all(self, oneway: bool = False) -> None:
        client = self.broker.client
        addrs = self.broker.config.namesrv_addrs
        if client is None or not addrs:
            return
        timeout = self.broker.config.register_broker_timeout_mills / 1000

        async def one(addr: str) -> None:
            try:
                if oneway:
                    await client.invoke_oneway(addr, self._request())
                    return
                answer = await client.invoke(addr, self._request(), timeout)
                if answer.code == 0:
                    self.registrations += 1
                    log.info("register broker[%d]to name server %s OK", self.broker.config.broker_id, addr)
                    self.broker.ha.on_register_result(answer)
                else:
                    log.warning("register broker to name server %s failed: %d %s", addr, answer.code, answer.remark)
            except Exception as exc:
                log.warning("register broker to name server %s failed: %s", addr, exc)

        async with trio.open_nursery() as nursery:
            for addr in addrs:
                nursery.start_soon(one, addr)

    async def register_loop(self) -> None:
        period = max(10_000, min(self.broker.config.register_name_server_period, 60_000)) / 1000
        if self.broker.dledger is not None:
            # DLedger: the role changes register first; the periodic registration starts after 10 s
            await trio.sleep(FIRST_PERIODIC_REGISTRATION_S)
        await self.register_all()
        while True:
            await trio.sleep(period)
            await self.register_all()

    async def unregister_all(self) -> None:
        """UNREGISTER_BROKER to every NameServer, on connections of its own: it runs at
        shutdown, after the broker's nursery (and the client living in it) is gone."""
        cfg = self.broker.config
        if not cfg.namesrv_addrs:
            return
        header = UnRegisterBrokerRequestHeader(
            broker_name=cfg.broker_name,
            broker_addr=self.broker.broker_addr,
            cluster_name=cfg.broker_cluster_name,
            broker_id=cfg.broker_id,
        )
        async with open_remoting_client(ssl_context=self.broker.client_ssl) as client:
            for addr in cfg.namesrv_addrs:
                try:
                    await client.invoke(addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header), 3.0)
                except Exception as exc:
                    log.warning("unregister broker from name server %s failed: %s", addr, exc)
