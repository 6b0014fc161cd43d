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

import logging

import pytest
from security_helpers import invoke

from rocketpy.codecs import RequestCode, ResponseCode
from rocketpy.codecs.bodies import SubscriptionGroupConfig
from rocketpy.testing import running_broker


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
