"""Issue #46, item 3 (continued): the other admin bodies decoded whole into a table are bounded too.

Java 4.9.8 bounds only the frame (16 MiB). Its broker files any UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body as
one group (a 15 MiB group name lands in subscriptionGroup.json); its NameServer decodes any REGISTER_BROKER
and files every topic of it: 1,000,000 topics compressed are a 2.6 MB frame, 29 MB once inflated, 8.8 s of
decoding on our event loop. Ours refuse a body over its key (subscriptionGroupMaxBodySize in broker.conf;
registerBrokerMaxBodySize, registerBrokerMaxTopics, queryDataVersionMaxBodySize in namesrv.properties; 0
lifts one, as Java) with SYSTEM_ERROR naming the key and one log line, keep nothing of it, and go on serving;
a real broker of 10,000 topics still registers.
"""

from __future__ import annotations

import json
import logging
import struct
import zlib
from pathlib import Path

import pytest
from security_helpers import invoke, namesrv_file, running_namesrv

from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode
from rocketpy.codecs.bodies import SubscriptionGroupConfig
from rocketpy.codecs.bodies.register import (
    DataVersion,
    RegisterBrokerBody,
    TopicConfig,
    TopicConfigSerializeWrapper,
    body_crc32,
)
from rocketpy.codecs.codes import MQVersion
from rocketpy.codecs.headers.namesrv import QueryDataVersionRequestHeader, RegisterBrokerRequestHeader
from rocketpy.javacompat.properties import ConfigError
from rocketpy.namesrv import NamesrvConfig
from rocketpy.testing import BrokerTestClient, broker_client, running_broker, wait_until


def refusals(caplog: pytest.LogCaptureFixture, code: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if f"process request refused: code {code} " in r.getMessage()]


# -- the broker: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP ------------------------------------------------------


async def test_a_subscription_group_body_over_its_limit_is_refused_and_kept_nowhere(tmp_path, caplog):
    """A group of a 70,000-character name (Java 4.9.8: filed and written to subscriptionGroup.json): ours
    answer SYSTEM_ERROR naming subscriptionGroupMaxBodySize (64 KiB), log one line, file nothing, and take
    the next group."""
    big = SubscriptionGroupConfig(group_name="G" * 70_000).encode()
    async with running_broker(str(tmp_path)) as broker:
        with caplog.at_level(logging.WARNING, logger="rocketpy"):
            answer = await invoke(broker.address, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, big)
        assert (answer.code, answer.remark) == (
            ResponseCode.SYSTEM_ERROR,
            f"UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body of {len(big)} bytes is over subscriptionGroupMaxBodySize=65536",
        )
        assert "G" * 70_000 not in broker.groups.table
        version = broker.groups.data_version.counter
        small = SubscriptionGroupConfig(group_name="GID_SMALL").encode()
        answer = await invoke(broker.address, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, small)
        assert answer.code == ResponseCode.SUCCESS
        assert "GID_SMALL" in broker.groups.table and broker.groups.data_version.counter == version + 1
    saved = (tmp_path / "config" / "subscriptionGroup.json").read_text()
    assert "GID_SMALL" in saved and "G" * 1000 not in saved
    logged = refusals(caplog, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)
    assert len(logged) == 1 and "is over subscriptionGroupMaxBodySize=65536" in logged[0]


async def test_a_subscription_group_limit_of_zero_takes_what_java_takes(tmp_path):
    big = SubscriptionGroupConfig(group_name="G" * 70_000).encode()
    async with running_broker(str(tmp_path), subscriptionGroupMaxBodySize=0) as broker:
        answer = await invoke(broker.address, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, big)
        assert answer.code == ResponseCode.SUCCESS and "G" * 70_000 in broker.groups.table


# -- the NameServer: REGISTER_BROKER, QUERY_DATA_VERSION ---------------------------------------------------


def topics(count: int, name_length: int = 8) -> dict[str, TopicConfig]:
    names = [f"T{i:0{name_length - 1}d}" for i in range(count)]
    return {n: TopicConfig(topic_name=n, read_queue_nums=8, write_queue_nums=8, perm=6) for n in names}


def registration(table: dict[str, TopicConfig], *, compressed: bool = False, broker: str = "broker-big",
                 version: int = MQVersion.V4_9_8) -> RemotingCommand:
    """A broker's REGISTER_BROKER of ``table``, as BrokerOuterAPI writes it."""
    wrapper = TopicConfigSerializeWrapper(topic_config_table={}, data_version=DataVersion(timestamp=1, counter=1))
    if version >= MQVersion.V3_0_11:
        body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=[])
        raw = body.encode_with_topics(table, compress=compressed)
    else:  # the wrapper itself
        wrapper.topic_config_table = table
        raw = wrapper.encode()
    header = RegisterBrokerRequestHeader(
        broker_name=broker, broker_addr="127.0.0.1:30911", cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.1:30912", broker_id=0, compressed=compressed, body_crc32=body_crc32(raw),
    )  # fmt: skip
    request = RemotingCommand.request(RequestCode.REGISTER_BROKER, header, raw)
    request.version = version
    return request


def million_topics() -> RemotingCommand:
    """The compressed registration of 1,000,000 topics, as RegisterBrokerBody.encode(true) writes it, its
    lines written here (a million TopicConfigs take seconds to make)."""
    def chunk(data: bytes) -> bytes:
        return struct.pack(">i", len(data)) + data

    version = DataVersion(timestamp=1, counter=1).encode()
    lines = b"".join(chunk(b"T%07d 8 8 6 SINGLE_TAG" % i) for i in range(1_000_000))
    raw = zlib.compress(chunk(version) + struct.pack(">i", 1_000_000) + lines + chunk(b"[]"), 9)
    request = registration({}, compressed=True)
    request.body = raw
    assert request.ext_fields is not None
    request.ext_fields["bodyCrc32"] = str(body_crc32(raw))
    return request


async def register(c: BrokerTestClient, request: RemotingCommand) -> RemotingCommand:
    """``request`` on ``c``'s connection (a registered broker leaves the routes when its connection closes)."""
    return await c.client.invoke(c.addr, request, 10.0)


async def test_a_registration_over_the_body_size_is_refused_undecoded(tmp_path, caplog):
    """25,000 topics of 127-character names, 9.5 MB of JSON (Java 4.9.8 files them all): SYSTEM_ERROR naming
    registerBrokerMaxBodySize (8 MiB), one log line, no broker filed; the next registration is taken."""
    request = registration(topics(25_000, 127))
    assert len(request.body or b"") > 9_000_000
    async with running_namesrv(namesrv_file(tmp_path)) as ns, broker_client(ns.address) as c:
        with caplog.at_level(logging.WARNING, logger="rocketpy"):
            answer = await register(c, request)
        assert (answer.code, answer.remark) == (
            ResponseCode.SYSTEM_ERROR,
            f"REGISTER_BROKER body of {len(request.body or b'')} bytes is over registerBrokerMaxBodySize=8388608",
        )
        assert ns.routes.broker_addr_table.get("broker-big") is None and not ns.routes.topic_queue_table
        assert (await register(c, registration(topics(10)))).code == ResponseCode.SUCCESS
        assert len(ns.routes.topic_queue_table) == 10
    assert len(refusals(caplog, RequestCode.REGISTER_BROKER)) == 1


async def test_a_compressed_registration_of_a_million_topics_is_refused_as_it_inflates(tmp_path, caplog):
    """The issue's hostile broker: 1,000,000 topics compressed (2.6 MB on the wire, 29 MB inflated; within
    the 64 MiB every compressed registration had as its bound before). Refused once 8 MiB are inflated, before
    a topic is read."""
    request = million_topics()
    assert len(request.body or b"") < 3_000_000
    async with running_namesrv(namesrv_file(tmp_path)) as ns, broker_client(ns.address) as c:
        with caplog.at_level(logging.WARNING, logger="rocketpy"):
            answer = await register(c, request)
        assert (answer.code, answer.remark) == (
            ResponseCode.SYSTEM_ERROR, "REGISTER_BROKER body inflates past registerBrokerMaxBodySize=8388608 bytes")
        assert ns.routes.broker_addr_table.get("broker-big") is None and not ns.routes.topic_queue_table
    assert len(refusals(caplog, RequestCode.REGISTER_BROKER)) == 1


@pytest.mark.parametrize(("compressed", "version"), [
    (True, MQVersion.V4_9_8), (False, MQVersion.V4_9_8), (False, MQVersion.V3_0_10),
], ids=["compressed", "plain", "wrapper-only"])
async def test_a_registration_of_too_many_topics_files_none(tmp_path, caplog, compressed, version):
    """50,001 topics (within 8 MiB, 2 MB inflated compressed, 7.6 MB plain): SYSTEM_ERROR naming
    registerBrokerMaxTopics (50,000), nothing filed, in each form a broker registers in."""
    request = registration(topics(50_001), compressed=compressed, version=version)
    async with running_namesrv(namesrv_file(tmp_path)) as ns, broker_client(ns.address) as c:
        with caplog.at_level(logging.WARNING, logger="rocketpy"):
            answer = await register(c, request)
        assert (answer.code, answer.remark) == (
            ResponseCode.SYSTEM_ERROR, "REGISTER_BROKER with 50001 topics is over registerBrokerMaxTopics=50000")
        assert ns.routes.broker_addr_table.get("broker-big") is None and not ns.routes.topic_queue_table
    assert len(refusals(caplog, RequestCode.REGISTER_BROKER)) == 1


async def test_registration_limits_of_zero_take_what_java_takes(tmp_path):
    """registerBrokerMaxTopics=0 and registerBrokerMaxBodySize=0: no limit (a compressed body still inflates
    to 64 MiB at most)."""
    path = namesrv_file(tmp_path, "registerBrokerMaxTopics=0\nregisterBrokerMaxBodySize=0\n")
    async with running_namesrv(path) as ns, broker_client(ns.address) as c:
        answer = await register(c, registration(topics(50_001), compressed=True))
        assert answer.code == ResponseCode.SUCCESS and len(ns.routes.topic_queue_table) == 50_001


@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "compressed"])
@pytest.mark.timeout(120)
async def test_a_real_broker_of_10000_topics_registers(tmp_path, compressed):
    """Our broker with 10,000 topics of 127-character names (Java's longest; 3,821,402 bytes of JSON, 29,397
    compressed inflating to 1,480,350) registers under the defaults, every topic filed."""
    async with running_namesrv(namesrv_file(tmp_path)) as ns:
        async with running_broker(str(tmp_path / "store"), compressedRegister=str(compressed).lower()) as broker:
            broker.topics.table.update(topics(10_000, 127))
            size = len(broker.outer._request().body or b"")
            broker.config.namesrv_addr = ns.address
            before = broker.outer.registrations  # the broker's own periodic registration may run as well
            await broker.outer.register_all()
            assert broker.outer.registrations > before
            await wait_until(lambda: "broker-a" in ns.routes.broker_addr_table)
            assert sum(1 for t in ns.routes.topic_queue_table if len(t) == 127) == 10_000
    limit = NamesrvConfig().limit("registerBrokerMaxBodySize")
    assert size < limit / 2 if not compressed else size < 100_000


async def test_a_data_version_over_its_limit_is_refused(tmp_path, caplog):
    """QUERY_DATA_VERSION's body is a DataVersion of some 40 bytes: one of 100,000 (Java 4.9.8 decodes any)
    is refused naming queryDataVersionMaxBodySize (64 KiB)."""
    body = json.dumps({"counter": 1, "timestamp": 1, "pad": "x" * 100_000}).encode()
    header = QueryDataVersionRequestHeader(broker_name="broker-a", broker_addr="127.0.0.1:30911",
                                           cluster_name="DefaultCluster", broker_id=0)
    async with running_namesrv(namesrv_file(tmp_path)) as ns:
        with caplog.at_level(logging.WARNING, logger="rocketpy"):
            answer = await invoke(ns.address, RequestCode.QUERY_DATA_VERSION, body, header)
        assert (answer.code, answer.remark) == (
            ResponseCode.SYSTEM_ERROR,
            f"QUERY_DATA_VERSION body of {len(body)} bytes is over queryDataVersionMaxBodySize=65536")
        small = DataVersion(timestamp=1, counter=1).encode()
        assert (await invoke(ns.address, RequestCode.QUERY_DATA_VERSION, small, header)).code == ResponseCode.SUCCESS
    assert len(refusals(caplog, RequestCode.QUERY_DATA_VERSION)) == 1


def test_a_limit_that_is_no_number_stops_the_namesrv(tmp_path: Path):
    """As every other setting of a -c file: a typo must not silently start the server without a limit."""
    with pytest.raises(ConfigError, match="registerBrokerMaxTopics='lots' is not an integer"):
        NamesrvConfig.from_file(namesrv_file(tmp_path, "registerBrokerMaxTopics=lots\n"), strict=True)


def test_the_inflated_bound_is_the_keys(tmp_path: Path):
    """The codec itself: a compressed body is inflated no further than it is given (the key's limit)."""
    from rocketpy.codecs.bodies.register import RegisterBodyOverLimit

    bomb = zlib.compress(b"\0" * 10_000, 9)
    with pytest.raises(RegisterBodyOverLimit) as over:
        RegisterBrokerBody.decode(bomb, True, max_inflated=1024)
    assert (over.value.what, over.value.amount) == ("inflated", 1024)
