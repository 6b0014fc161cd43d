"""Odd send headers against the official Java 4.9.8 broker: our broker answers them with the same code.

Runs when ROCKETMQ_JAVA_REF names the reference install; skips otherwise. Each header is a plain
SEND_MESSAGE_V2's with one field changed on the wire. (V1's reflective decoding logs and drops a value it
cannot parse, where our dispatcher refuses it up front: see CommandHeader.check_wire_values.)
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode
from rocketpy.codecs.codes import MessageConst
from rocketpy.codecs.headers import SendMessageRequestHeader
from rocketpy.codecs.message import properties_to_string
from rocketpy.remoting import open_remoting_client
from rocketpy.testing import free_broker_port, running_broker

from .servers import java_broker, java_namesrv

pytestmark = pytest.mark.timeout(240)

TOPIC = "TOddHeaders"
#: (request code, ext field, its value on the wire)
CASES = [
    (RequestCode.SEND_MESSAGE_V2, "j", ""),
    (RequestCode.SEND_MESSAGE_V2, "l", ""),
    (RequestCode.SEND_MESSAGE_V2, "j", "3"),
]


def _request(code: int, name: str | None, value: str) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="PG", topic=TOPIC, default_topic="TBW102", default_topic_queue_nums=4, queue_id=0,
        sys_flag=0, born_timestamp=1_700_000_000_000, flag=0,
        properties=properties_to_string({MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "true"}), reconsume_times=0,
        unit_mode=False, batch=False)
    ext = dict(header.to_ext_fields())
    if code == RequestCode.SEND_MESSAGE_V2:
        long_names = ["producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
                      "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes",
                      "batch"]
        ext = {chr(97 + i): ext[n] for i, n in enumerate(long_names) if n in ext}
    if name is not None:
        ext[name] = value
    return RemotingCommand(code=code, ext_fields=ext, body=b"odd")


async def _answers(addr: str) -> list[tuple[int, str]]:
    async with open_remoting_client() as client:
        first = await client.invoke(addr, _request(RequestCode.SEND_MESSAGE, None, ""), 10)
        assert first.code == ResponseCode.SUCCESS, first.remark  # the topic is made (autoCreateTopicEnable)
        out = []
        for code, name, value in CASES:
            resp = await client.invoke(addr, _request(code, name, value), 10)
            out.append((resp.code, 'For input string: ""' if 'For input string: ""' in (resp.remark or "") else ""))
        return out


async def test_empty_reconsume_fields_are_answered_as_java_answers_them(java_ref: Path, tmp_path: Path) -> None:
    async with java_namesrv(java_ref, free_broker_port(), tmp_path) as namesrv:
        port = free_broker_port()
        async with java_broker(java_ref, port, namesrv, tmp_path / "java-store", {"autoCreateTopicEnable": "true"}):
            with trio.fail_after(60):
                java = await _answers(f"127.0.0.1:{port}")
    async with running_broker(str(tmp_path / "ours")) as broker:
        ours = await _answers(broker.address)
    assert ours == java
    # SendMessageRequestHeaderV2.decode() throws on "": Integer.parseInt("")
    assert java == [(ResponseCode.SYSTEM_ERROR, 'For input string: ""')] * 2 + [(ResponseCode.SUCCESS, "")]
