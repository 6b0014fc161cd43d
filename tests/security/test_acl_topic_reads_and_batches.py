"""Issue #46, item 5: with ACL on, batch sends and reads are checked against their topic's permissions
(``aclStrictBatchSend``, ``aclStrictReads``, default true).

Java 4.9.8's PlainAccessValidator.parse names a resource only for SEND_MESSAGE(_V2), CONSUMER_SEND_MSG_BACK,
PULL_MESSAGE, QUERY_MESSAGE, HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP and
UPDATE_CONSUMER_OFFSET: SEND_BATCH_MESSAGE writes into a topic the account is denied, and VIEW_MESSAGE_BY_ID,
QUERY_CONSUME_QUEUE and the offset queries read one; QUERY_MESSAGE is checked against its topic, but the
index matches keys by hash, so a key made to share the hash of another topic's key answers that topic's
messages. compat_tests/test_security_java.py runs the batch and offset requests against the Java broker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rocketpy.codecs import RemotingCommand, ResponseCode
from rocketpy.codecs.acl_signature import sign_request
from rocketpy.codecs.batch import encode_batch
from rocketpy.codecs.codes import MessageConst, RequestCode
from rocketpy.codecs.headers.query import (
    GetEarliestMsgStoretimeRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryMessageRequestHeader,
    SearchOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from rocketpy.codecs.message import decode_offset_msg_id
from rocketpy.codecs.message_types import Message
from rocketpy.codecs.record import decode_messages
from rocketpy.testing import broker_client, message_properties, running_broker

ACCOUNTS = """\
accounts:
  - accessKey: normalUser
    secretKey: normalSecret1
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - open=PUB|SUB
      - secret=DENY
  - accessKey: adminUser
    secretKey: adminSecret1
    admin: true
"""
NORMAL = ("normalUser", "normalSecret1")
ADMIN = ("adminUser", "adminSecret1")


@pytest.fixture
def acl_home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(ACCOUNTS)
    return home


async def signed(c: Any, code: int, header: Any = None, body: bytes | None = None,
                 account: tuple[str, str] = NORMAL) -> RemotingCommand:  # fmt: skip
    cmd = RemotingCommand.request(code, header, body)
    sign_request(cmd, *account)
    return await c.client.invoke(c.addr, cmd, 5.0)


def _denied(resp: RemotingCommand, topic: str = "secret") -> bool:
    return resp.code == ResponseCode.SYSTEM_ERROR and f"No default permission for topic:{topic}" in (resp.remark or "")


async def send(c: Any, topic: str, body: bytes, keys: str | None = None, account: tuple[str, str] = ADMIN) -> str:
    """A message sent as ``account``; its offset msg id."""
    header = c.send_header(topic, message_properties(None, keys, None))
    resp = await signed(c, RequestCode.SEND_MESSAGE_V2, header, body, account=account)
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    return str(resp.ext_fields["msgId"])


def batch(c: Any, topic: str) -> tuple[Any, bytes]:
    msgs = [Message(topic=topic, body=b"b%d" % i, properties=message_properties(None, f"k{i}", None)) for i in range(3)]
    header = c.send_header(topic, {MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "true"}, batch=True)
    return header, encode_batch(msgs)


async def test_a_batch_cannot_write_into_a_denied_topic(acl_home, tmp_path):
    """Java: SEND_BATCH_MESSAGE into ``secret`` (topicPerms secret=DENY) answers SUCCESS and stores the three
    messages; here it is refused as a SEND_MESSAGE_V2 to that topic is."""
    async with running_broker(str(tmp_path / "s"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        async with broker_client(broker.address) as c:
            await send(c, "secret", b"first")  # the topic exists
            assert _denied(await signed(c, RequestCode.SEND_MESSAGE_V2, *batch(c, "secret")))
            assert _denied(await signed(c, RequestCode.SEND_BATCH_MESSAGE, *batch(c, "secret")))
            assert broker.store.get_max_offset_in_queue("secret", 0) == 1
            resp = await signed(c, RequestCode.SEND_BATCH_MESSAGE, *batch(c, "open"))
            assert resp.code == ResponseCode.SUCCESS
            assert broker.store.get_max_offset_in_queue("open", 0) == 3


def reads(topic: str) -> list[tuple[int, Any]]:
    return [
        (RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic=topic, queue_id=0)),
        (RequestCode.GET_MIN_OFFSET, GetMinOffsetRequestHeader(topic=topic, queue_id=0)),
        (RequestCode.GET_EARLIEST_MSG_STORETIME, GetEarliestMsgStoretimeRequestHeader(topic=topic, queue_id=0)),
        (RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, SearchOffsetRequestHeader(topic=topic, queue_id=0, timestamp=0)),
        (RequestCode.QUERY_CONSUME_QUEUE, QueryConsumeQueueRequestHeader(topic=topic, queue_id=0, index=0, count=4)),
    ]


async def test_queue_and_offset_reads_of_a_denied_topic_are_refused(acl_home, tmp_path):
    """Java: each answers SUCCESS for ``secret`` (offsets, store times, the consume queue's entries: where each
    message is and its tag's hash)."""
    async with running_broker(str(tmp_path / "s"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        async with broker_client(broker.address) as c:
            await send(c, "secret", b"hidden")
            await send(c, "open", b"seen")
            for code, header in reads("secret"):
                assert _denied(await signed(c, code, header)), code
            for code, header in reads("open"):
                assert (await signed(c, code, header)).code == ResponseCode.SUCCESS, code
            # a retry topic is its group's, as for a pull: a consumer's GET_MAX_OFFSET of %RETRY%its-group passes
            header = GetMaxOffsetRequestHeader(topic="%RETRY%anyGroup", queue_id=0)
            assert (await signed(c, RequestCode.GET_MAX_OFFSET, header)).code == ResponseCode.SUCCESS


async def test_a_message_of_a_denied_topic_is_not_read_by_id(acl_home, tmp_path):
    """Java: VIEW_MESSAGE_BY_ID needs no permission: any account reads any message from its offset (in every
    msgId), or whatever bytes lie at an offset inside one."""
    async with running_broker(str(tmp_path / "s"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        async with broker_client(broker.address) as c:
            hidden = decode_offset_msg_id(await send(c, "secret", b"the hidden body"))[2]
            seen = decode_offset_msg_id(await send(c, "open", b"seen"))[2]
            resp = await signed(c, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=hidden))
            assert _denied(resp) and b"hidden" not in (resp.body or b"")
            # an offset inside the record whose first four bytes read as a size Java would answer that many bytes of
            inside = next(o for o in range(hidden + 1, seen) if broker.store.select_one_message_by_offset(o))
            resp = await signed(c, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=inside))
            assert resp.code == ResponseCode.SYSTEM_ERROR and not resp.body
            assert f"No message starts at offset {inside}" in (resp.remark or "")
            resp = await signed(c, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=seen))
            assert resp.code == ResponseCode.SUCCESS and decode_messages(resp.body)[0].body == b"seen"
            resp = await signed(c, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=10**9))
            assert resp.code == ResponseCode.SYSTEM_ERROR
            assert "can not find message by the offset" in (resp.remark or "")
            # an admin account reads every topic
            view = ViewMessageRequestHeader(offset=hidden)
            resp = await signed(c, RequestCode.VIEW_MESSAGE_BY_ID, view, account=ADMIN)
            assert resp.code == ResponseCode.SUCCESS


def java_hash(text: str) -> int:
    h = 0
    for unit in text.encode("utf-16-be").hex(" ", 2).split():
        h = (h * 31 + int(unit, 16)) & 0xFFFFFFFF
    return h


def colliding_key(topic: str, other_topic: str, other_key: str) -> str:
    """A key whose index entry ``topic#key`` has the Java hash of ``other_topic#other_key``."""
    target = java_hash(f"{other_topic}#{other_key}")
    rest = (target - java_hash(f"{topic}#k") * 31**7 - sum(48 * 31**i for i in range(7))) % 2**32
    digits = []
    for _ in range(7):  # 31**7 > 2**32: seven base-31 digits, written as '0'..'N'
        rest, digit = divmod(rest, 31)
        digits.append(chr(48 + digit))
    key = "k" + "".join(reversed(digits))
    assert java_hash(f"{topic}#{key}") == target
    return key


async def test_a_key_query_answers_only_its_topics_messages(acl_home, tmp_path):
    """Java: QUERY_MESSAGE of ``open`` by a key made to share the index hash of a ``secret`` message's key
    answers that message (the broker compares hashes; the Java client drops it, a hostile one keeps it)."""
    async with running_broker(str(tmp_path / "s"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        async with broker_client(broker.address) as c:
            await send(c, "secret", b"the hidden body", keys="order-42")
            forged = colliding_key("open", "secret", "order-42")
            await send(c, "open", b"mine", keys=forged, account=NORMAL)
            query = QueryMessageRequestHeader(topic="open", key=forged, max_num=32, begin_timestamp=0,
                                              end_timestamp=2**62)  # fmt: skip
            resp = await signed(c, RequestCode.QUERY_MESSAGE, query)
            assert resp.code == ResponseCode.SUCCESS
            assert [m.topic for m in decode_messages(resp.body)] == ["open"]
            query.topic = "secret"
            assert _denied(await signed(c, RequestCode.QUERY_MESSAGE, query))


async def test_java_behaviour_with_the_switches_off(acl_home, tmp_path):
    """``aclStrictBatchSend=false`` / ``aclStrictReads=false``: Java's checks."""
    async with running_broker(str(tmp_path / "s"), aclEnable="true", rocketmqHome=str(acl_home),
                              aclStrictBatchSend="false", aclStrictReads="false") as broker:  # fmt: skip
        async with broker_client(broker.address) as c:
            hidden = decode_offset_msg_id(await send(c, "secret", b"the hidden body"))[2]
            assert (await signed(c, RequestCode.SEND_BATCH_MESSAGE, *batch(c, "secret"))).code == ResponseCode.SUCCESS
            for code, header in reads("secret"):
                assert (await signed(c, code, header)).code == ResponseCode.SUCCESS, code
            resp = await signed(c, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=hidden))
            assert resp.code == ResponseCode.SUCCESS and b"hidden" in (resp.body or b"")
