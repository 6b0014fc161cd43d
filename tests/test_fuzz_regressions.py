"""Regression tests for what tools/fuzz/fuzz_servers.py found, one per finding."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketpy.javacompat.hashmap import hashmap_order
from rocketpy.javacompat.lang import java_hash
from rocketpy.namesrv import NameServer, NamesrvConfig
from rocketpy.remoting import open_remoting_client
from rocketpy.testing import wait_until


@pytest.fixture
async def namesrv(tmp_path: Path, nursery: trio.Nursery) -> AsyncIterator[NameServer]:
    config = NamesrvConfig(
        listen_port=0,
        kv_config_path=str(tmp_path / "kvConfig.json"),
        config_store_path=str(tmp_path / "namesrv.properties"),
    )
    yield await nursery.start(NameServer(config).run)
    nursery.cancel_scope.cancel()


def test_java_hash_of_null_is_zero() -> None:
    # java.util.HashMap files a null key in bucket 0
    assert java_hash(None) == 0
    assert hashmap_order(["b", None, "a"])[0] is None


@pytest.mark.parametrize("missing", ["clusterName", "brokerName", "brokerAddr"])
async def test_register_broker_without_a_name_is_refused(
    namesrv: NameServer, missing: str, caplog: pytest.LogCaptureFixture
) -> None:
    # finding: a REGISTER_BROKER without clusterName filed the broker under None; when its
    # connection closed, the NameServer's cleanup raised TypeError (no hash for None)
    ext = {"brokerName": "b-fz", "brokerAddr": "127.0.0.1:1", "clusterName": "C", "haServerAddr": "x", "brokerId": "0"}
    del ext[missing]
    async with open_remoting_client() as client:
        answer = await client.invoke(namesrv.address, RemotingCommand(code=RequestCode.REGISTER_BROKER, ext_fields=ext))
        assert answer.code == ResponseCode.SYSTEM_ERROR
        assert missing in (answer.remark or "")
    await wait_until(lambda: namesrv.remoting is None or not namesrv.remoting.connections, timeout=5)
    assert "b-fz" not in namesrv.routes.broker_addr_table
    assert None not in namesrv.routes.cluster_addr_table
    assert not [r for r in caplog.records if "hook failed" in r.getMessage()]


@pytest.mark.parametrize("fast", [True, False], ids=["fast lane", "general path"])
@pytest.mark.parametrize(
    ("field", "value"),
    [("bornTimestamp", str(2**64)), ("queueId", str(2**40)), ("flag", str(2**31)), ("sysFlag", str(2**33)),
     ("reconsumeTimes", str(2**31)), ("bornTimestamp", "9" * 400)],
)
async def test_send_with_a_field_beyond_its_java_type_is_refused(
    tmp_path: Path, field: str, value: str, fast: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # finding: a SEND_MESSAGE_V2 whose bornTimestamp was 400 digits reached the CommitLog record builder,
    # which raised struct.error; Java's Long.parseLong refuses the field (the send fails with SYSTEM_ERROR).
    # Same on the fast lane (a reconsumeTimes beyond int32 made its record writer raise OverflowError)
    from rocketpy.testing import broker_client, running_broker

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address, serialize_type=SerializeType.ROCKETMQ) as c:
            assert (await c.send("TFz", b"before")).code == ResponseCode.SUCCESS
            for v2 in (True, False):
                header = c.send_header("TFz", {"KEYS": "k1"})
                ext = (header if v2 else header.to_v1()).to_ext_fields()
                wire = {"bornTimestamp": "g", "queueId": "e", "flag": "h", "sysFlag": "f", "reconsumeTimes": "j"}
                if not fast:
                    ext[wire["queueId"] if v2 else "queueId"] = "-1"  # the general path (it picks the queue)
                ext[wire[field] if v2 else field] = value
                code = RequestCode.SEND_MESSAGE_V2 if v2 else RequestCode.SEND_MESSAGE
                request = RemotingCommand(code=code, ext_fields=ext, body=b"bad", serialize_type=SerializeType.ROCKETMQ)
                answer = await c.client.invoke(c.addr, request)
                assert answer.code == ResponseCode.SYSTEM_ERROR, (v2, answer.code, answer.remark)
                assert "For input string" in (answer.remark or ""), answer.remark  # NumberFormatException
            after = await c.send("TFz", b"after")
            assert after.code == ResponseCode.SUCCESS and after.ext_fields["queueOffset"] == "1"  # nothing half-made
    assert not [r for r in caplog.records if "fast lane failed" in r.getMessage()]
    assert not [r for r in caplog.records if r.exc_info and "int too large" in str(r.exc_info[1])]
