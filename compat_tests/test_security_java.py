"""Issue #46, item 5: what the official Java 4.9.8 broker lets through with ACL on, beside ours refusing it.

Runs when ROCKETMQ_JAVA_REF names the reference install; skips otherwise. One Java broker (ACL on, its accounts
in a file of the test's, registered with our NameServer under the default allow-list) and one of ours with the
same accounts; the same requests go to both:

* a normal account makes itself admin with UPDATE_AND_CREATE_ACL_CONFIG (Java: SUCCESS, the file rewritten);
* SEND_BATCH_MESSAGE into a topic the account is denied (Java: SUCCESS, stored);
* GET_MAX_OFFSET and VIEW_MESSAGE_BY_ID of that topic (Java: SUCCESS, the body read);
* 8 bytes to the HA port (Java: the CommitLog streamed back).

tests/security/ has each finding against our broker alone, with the Java behaviour in each docstring.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import yaml

from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode
from rocketpy.codecs.acl_signature import sign_request
from rocketpy.codecs.batch import encode_batch
from rocketpy.codecs.codes import MessageConst
from rocketpy.codecs.ha import build_offset_report
from rocketpy.codecs.headers import CreateAccessConfigRequestHeader, CreateTopicRequestHeader
from rocketpy.codecs.headers.query import GetMaxOffsetRequestHeader, ViewMessageRequestHeader
from rocketpy.codecs.message import decode_offset_msg_id
from rocketpy.codecs.message_types import Message
from rocketpy.namesrv.server import NameServer
from rocketpy.remoting import open_remoting_client
from rocketpy.testing import BrokerTestClient, free_broker_port, message_properties, running_broker

from .servers import java_broker

pytestmark = pytest.mark.timeout(240)

ACCOUNTS = """\
accounts:
  - accessKey: normalUser
    secretKey: normalSecret1
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - open=PUB|SUB
  - accessKey: adminUser
    secretKey: adminSecret1
    admin: true
"""
NORMAL = ("normalUser", "normalSecret1")
ADMIN = ("adminUser", "adminSecret1")


async def signed(c: BrokerTestClient, code: int, header: Any = None, body: bytes | None = None,
                 account: tuple[str, str] = NORMAL) -> RemotingCommand:  # fmt: skip
    cmd = RemotingCommand.request(code, header, body)
    sign_request(cmd, *account)
    return await c.client.invoke(c.addr, cmd, 10.0)


async def read_as_a_slave(port: int, seconds: float = 3.0) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    got = bytearray()
    try:
        await stream.send_all(build_offset_report(0))
        with trio.move_on_after(seconds):
            while chunk := await stream.receive_some(65536):
                got += chunk
    except trio.BrokenResourceError:
        pass
    finally:
        await stream.aclose()
    return bytes(got)


async def probe(c: BrokerTestClient, acl_file: Path, ha_port: int) -> dict[str, Any]:
    """The four findings against one broker: what each request was answered, and what it let through."""
    create = CreateTopicRequestHeader(topic="secret", default_topic="TBW102", read_queue_nums=4, write_queue_nums=4,
                                      perm=6, topic_filter_type="SINGLE_TAG", topic_sys_flag=0, order=False)
    assert (await signed(c, RequestCode.UPDATE_AND_CREATE_TOPIC, create, account=ADMIN)).code == ResponseCode.SUCCESS
    header = c.send_header("secret", message_properties(None, "k", None))
    sent = await signed(c, RequestCode.SEND_MESSAGE_V2, header, b"the hidden body", account=ADMIN)
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    offset = decode_offset_msg_id(sent.ext_fields["msgId"])[2]
    out: dict[str, Any] = {}

    promote = CreateAccessConfigRequestHeader(access_key="normalUser", secret_key="normalSecret1", admin=True)
    out["make_admin"] = (await signed(c, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, promote)).code
    entry = next(a for a in yaml.safe_load(acl_file.read_text())["accounts"] if a["accessKey"] == "normalUser")
    out["admin_in_file"] = entry["admin"]
    if entry["admin"]:  # put it back: the other probes are a normal account's
        demote = CreateAccessConfigRequestHeader(access_key="normalUser", secret_key="normalSecret1", admin=False,
                                                 default_topic_perm="DENY", topic_perms="open=PUB|SUB")  # fmt: skip
        assert (await signed(c, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, demote, account=ADMIN)).code == 0

    msgs = [Message(topic="secret", body=b"b%d" % i, properties=message_properties(None, f"k{i}", None))
            for i in range(3)]  # fmt: skip
    batch = c.send_header("secret", {MessageConst.PROPERTY_WAIT_STORE_MSG_OK: "true"}, batch=True)
    out["batch"] = (await signed(c, RequestCode.SEND_BATCH_MESSAGE, batch, encode_batch(msgs))).code
    max_offset = await signed(c, RequestCode.GET_MAX_OFFSET, GetMaxOffsetRequestHeader(topic="secret", queue_id=0))
    out["max_offset"] = max_offset.code
    view = await signed(c, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=offset))
    out["view"] = (view.code, b"the hidden body" in (view.body or b""))
    out["ha_leaks"] = b"the hidden body" in await read_as_a_slave(ha_port)
    return out


async def test_java_lets_through_what_ours_refuses(java_ref: Path, namesrv: NameServer, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    java_home = tmp_path / "java"
    java_home.mkdir()
    java_acl = java_home / "plain_acl.yml"
    java_acl.write_text(ACCOUNTS)
    # the file is ROCKETMQ_HOME (the reference install) + this property: climb out of it
    up = "/.." * len(java_ref.resolve().parts[1:])
    monkeypatch.setenv("JAVA_OPT_EXT", f"-Drocketmq.acl.plain.file={up}{java_acl}")
    port = free_broker_port()
    async with java_broker(java_ref, port, namesrv.address, java_home / "store",
                           {"aclEnable": "true", "brokerName": "broker-java", "autoCreateTopicEnable": "false"}):
        # a Java broker on this host registers with our NameServer under its default allow-list
        async with open_remoting_client() as client:
            with trio.fail_after(30):
                while "broker-java" not in str(namesrv.routes.cluster_view()):
                    await trio.sleep(0.2)
            java = await probe(BrokerTestClient(client, f"127.0.0.1:{port}"), java_acl, port + 1)
    assert java == {"make_admin": 0, "admin_in_file": True, "batch": 0, "max_offset": 0, "view": (0, True),
                    "ha_leaks": True}  # fmt: skip

    home = tmp_path / "ours"
    (home / "conf").mkdir(parents=True)
    ours_acl = home / "conf" / "plain_acl.yml"
    ours_acl.write_text(ACCOUNTS)
    # haAllowedAddresses leaves out this host (its default lets loopback in) to show the refusal
    async with running_broker(str(tmp_path / "ours-store"), aclEnable="true", rocketmqHome=str(home),
                              haAllowedAddresses="10.9.9.9", autoCreateTopicEnable="false") as broker:  # fmt: skip
        async with open_remoting_client() as client:
            ours = await probe(BrokerTestClient(client, broker.address), ours_acl, broker.ha.service.port)
    assert ours == {"make_admin": ResponseCode.SYSTEM_ERROR, "admin_in_file": False, "batch": ResponseCode.SYSTEM_ERROR,
                    "max_offset": ResponseCode.SYSTEM_ERROR, "view": (ResponseCode.SYSTEM_ERROR, False),
                    "ha_leaks": False}  # fmt: skip
