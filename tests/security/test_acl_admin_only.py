"""Issue #46, item 5: with ACL on, only admin accounts administer the ACL (``aclStrictAdmin``, default true).

Java 4.9.8 (PlainPermissionManager.checkPerm) needs ``admin: true`` only for the five codes of
Permission.ADMIN_CODE (topic and group create/delete, UPDATE_BROKER_CONFIG). UPDATE_AND_CREATE_ACL_CONFIG (50),
DELETE_ACL_CONFIG (51) and UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53) need only a valid signature: a normal account
rewrites its own entry with ``admin=true``, deletes the other accounts, or adds its address to the global
white list, after which unsigned DELETE_TOPIC_IN_BROKER and UPDATE_BROKER_CONFIG succeed from it.
compat_tests/test_security_java.py runs the same requests against the Java broker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from rocketpy.codecs import RemotingCommand, ResponseCode
from rocketpy.codecs.acl_signature import sign_request
from rocketpy.codecs.bodies import TopicConfig
from rocketpy.codecs.codes import RequestCode
from rocketpy.codecs.headers import (
    CreateAccessConfigRequestHeader,
    CreateTopicRequestHeader,
    DeleteAccessConfigRequestHeader,
    DeleteTopicRequestHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from rocketpy.testing import broker_client, running_broker

ACCOUNTS = """\
accounts:
  - accessKey: normalUser
    secretKey: normalSecret1
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - open=PUB|SUB
  - accessKey: otherUser
    secretKey: otherSecret1
    admin: false
  - accessKey: adminUser
    secretKey: adminSecret1
    admin: true
  - accessKey: whiteUser
    secretKey: whiteSecret1
    whiteRemoteAddress: 127.0.0.1
    admin: false
    defaultTopicPerm: PUB
"""
NORMAL = ("normalUser", "normalSecret1")
ADMIN = ("adminUser", "adminSecret1")
NEED_ADMIN = "Need admin permission for request code={code}, but accessKey={ak} is not"


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


def accounts(home: Path) -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load((home / "conf" / "plain_acl.yml").read_text())
    return {a["accessKey"]: a for a in doc["accounts"]}


def _refused(resp: RemotingCommand, code: int, ak: str = "normalUser") -> bool:
    return resp.code == ResponseCode.SYSTEM_ERROR and NEED_ADMIN.format(code=code, ak=ak) in (resp.remark or "")


async def test_a_normal_account_cannot_make_itself_admin(acl_home, tmp_path):
    """Java: SUCCESS, and plain_acl.yml then says ``admin: true`` for normalUser, who may create topics."""
    async with running_broker(str(tmp_path / "s"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        async with broker_client(broker.address) as c:
            promote = CreateAccessConfigRequestHeader(access_key="normalUser", secret_key="normalSecret1", admin=True)
            resp = await signed(c, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, promote)
            assert _refused(resp, 50)
            assert accounts(acl_home)["normalUser"]["admin"] is False
            # nor add an account of its own
            mine = CreateAccessConfigRequestHeader(access_key="sneakyUser", secret_key="sneakySecret1", admin=True)
            assert _refused(await signed(c, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, mine), 50)
            assert "sneakyUser" not in accounts(acl_home)
            create = CreateTopicRequestHeader(topic="Mine", default_topic="TBW102", read_queue_nums=4,
                                              write_queue_nums=4, perm=6)  # fmt: skip
            assert _refused(await signed(c, RequestCode.UPDATE_AND_CREATE_TOPIC, create), 17)
            # an admin account still administers
            resp = await signed(c, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, mine, account=ADMIN)
            assert resp.code == ResponseCode.SUCCESS and accounts(acl_home)["sneakyUser"]["admin"] is True


async def test_a_normal_account_cannot_delete_accounts(acl_home, tmp_path):
    """Java: DELETE_ACL_CONFIG from any signed account answers SUCCESS and removes the entry (the admin's too)."""
    async with running_broker(str(tmp_path / "s"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        async with broker_client(broker.address) as c:
            for victim in ("adminUser", "otherUser"):
                delete = DeleteAccessConfigRequestHeader(access_key=victim)
                resp = await signed(c, RequestCode.DELETE_ACL_CONFIG, delete)
                assert _refused(resp, 51)
            assert {"adminUser", "otherUser"} <= accounts(acl_home).keys()
            delete = DeleteAccessConfigRequestHeader(access_key="otherUser")
            resp = await signed(c, RequestCode.DELETE_ACL_CONFIG, delete, account=ADMIN)
            assert resp.code == ResponseCode.SUCCESS and "otherUser" not in accounts(acl_home)


async def test_a_normal_account_cannot_white_list_its_address(acl_home, tmp_path):
    """Java: UPDATE_GLOBAL_WHITE_ADDRS_CONFIG from any signed account answers SUCCESS; the address then skips
    every check, and unsigned DELETE_TOPIC_IN_BROKER and UPDATE_BROKER_CONFIG succeed from it."""
    async with running_broker(str(tmp_path / "s"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        broker.topics.update(TopicConfig(topic_name="Victim", read_queue_nums=4, write_queue_nums=4, perm=6))
        async with broker_client(broker.address) as c:
            white = UpdateGlobalWhiteAddrsConfigRequestHeader(
                global_white_addrs="127.0.0.1", acl_file_full_path=str(acl_home / "conf" / "plain_acl.yml")
            )
            assert _refused(await signed(c, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, white), 53)
            doc = yaml.safe_load((acl_home / "conf" / "plain_acl.yml").read_text())
            assert not doc.get("globalWhiteRemoteAddresses")
            resp = await c.invoke(RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic="Victim"))
            assert resp.code == ResponseCode.SYSTEM_ERROR and "No accessKey is configured" in (resp.remark or "")
            assert broker.topics.get("Victim") is not None
            resp = await c.invoke(RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerPermission=2\n")
            assert resp.code == ResponseCode.SYSTEM_ERROR and broker.config.broker_permission == 6


async def test_an_accounts_white_address_is_no_admin_flag(acl_home, tmp_path):
    """Java: an account's own ``whiteRemoteAddress`` skips the signature and every check after it, so a normal
    account listed for its address may call every admin code unsigned. Here the address stands for the
    signature only: the admin codes still need ``admin: true``; its topics' permissions are left as Java's."""
    async with running_broker(str(tmp_path / "s"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        async with broker_client(broker.address) as c:

            async def unsigned(code: int, header: Any = None) -> RemotingCommand:
                cmd = RemotingCommand.request(code, header)
                cmd.ext_fields = {**(cmd.ext_fields or {}), "AccessKey": "whiteUser"}
                return await c.client.invoke(c.addr, cmd, 5.0)

            promote = CreateAccessConfigRequestHeader(access_key="whiteUser", secret_key="whiteSecret1", admin=True)
            assert _refused(await unsigned(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, promote), 50, "whiteUser")
            create = CreateTopicRequestHeader(topic="Mine", default_topic="TBW102", read_queue_nums=4,
                                              write_queue_nums=4, perm=6)  # fmt: skip
            assert _refused(await unsigned(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 17, "whiteUser")
            assert accounts(acl_home)["whiteUser"]["admin"] is False
            # what it may do unsigned stays: a request with no admin code
            resp = await unsigned(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
            assert resp.code == ResponseCode.SUCCESS


async def test_acl_info_carries_no_secret(acl_home, tmp_path):
    """GET_BROKER_CLUSTER_ACL_INFO (52) stays open to every account, as in Java: its answer is the ACL files'
    names and versions and the broker's identity, never an account or a secret key (4.9.8 has no code that
    answers the accounts; 4.7's GET_BROKER_CLUSTER_ACL_CONFIG did)."""
    async with running_broker(str(tmp_path / "s"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        async with broker_client(broker.address) as c:
            resp = await signed(c, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
            assert resp.code == ResponseCode.SUCCESS
            assert sorted(resp.ext_fields or {}) == ["allAclFileVersion", "brokerAddr", "brokerName", "clusterName",
                                                     "version"]  # fmt: skip
            text = repr(resp.ext_fields) + repr(resp.body)
            assert "Secret1" not in text and "normalUser" not in text


async def test_java_behaviour_with_acl_strict_admin_false(acl_home, tmp_path):
    """``aclStrictAdmin=false``: Java's checks, for a deployment whose tools sign the ACL codes with normal
    accounts; the switch cannot be turned off remotely."""
    async with running_broker(str(tmp_path / "s"), aclEnable="true", rocketmqHome=str(acl_home),
                              aclStrictAdmin="false") as broker:  # fmt: skip
        async with broker_client(broker.address) as c:
            promote = CreateAccessConfigRequestHeader(access_key="normalUser", secret_key="normalSecret1", admin=True)
            assert (await signed(c, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, promote)).code == ResponseCode.SUCCESS
            assert accounts(acl_home)["normalUser"]["admin"] is True
    async with running_broker(str(tmp_path / "s2"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        async with broker_client(broker.address) as c:
            for key in ("aclStrictAdmin", "aclStrictBatchSend", "aclStrictReads", "haAllowedAddresses"):
                body = f"{key}=false\n".encode()
                resp = await signed(c, RequestCode.UPDATE_BROKER_CONFIG, None, body, account=ADMIN)
                assert resp.code == ResponseCode.NO_PERMISSION and resp.remark == "Can not update config in black list."
            assert broker.acl is not None and broker.acl.strict.admin
