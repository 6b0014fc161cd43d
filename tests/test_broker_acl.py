"""Plain ACL: signatures against the golden capture 11-Acl, the Java client's traffic replayed
to our broker with the same plain_acl.yml, permission rules, address patterns, the YAML
subset, and the ACL admin codes over real sockets."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import trio
import yaml

from rocketpy.broker.acl import (
    PUB,
    SUB,
    AclError,
    PlainAccessValidator,
    PlainPermissionManager,
    address_matcher,
    check_permission,
    expand_ip,
    parse_perm,
    parse_request,
    sign,
    sign_request,
    signing_content,
)
from rocketpy.codecs import RemotingCommand, ResponseCode
from rocketpy.codecs.bodies import ConsumerData, HeartbeatData, SubscriptionData
from rocketpy.codecs.codes import RequestCode
from rocketpy.codecs.headers import (
    CreateAccessConfigRequestHeader,
    CreateTopicRequestHeader,
    DeleteAccessConfigRequestHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from rocketpy.sniffer.pcap import pair_responses, read_pcap
from rocketpy.testing import broker_client, running_broker

ROOT = Path(__file__).resolve().parent.parent
CAPTURES = ROOT / "protocol" / "golden" / "captures"
PCAP = CAPTURES / "11-Acl.pcap"
GOLDEN_YML = CAPTURES / "broker-conf" / "plain_acl.yml"
GOOD_SECRET = "acceptanceSK123"
SIGNATURE_REFUSED = (
    "org.apache.rocketmq.acl.common.AclException: Check signature failed for accessKey=acceptanceAK, "
    "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:684)"
)


@pytest.fixture(scope="module")
def golden_pairs():
    return [(q.command, r.command if r else None, q) for q, r in pair_responses(read_pcap(str(PCAP)))]


# ---------------------------------------------------------------------------
# The golden capture
# ---------------------------------------------------------------------------


def test_signatures_of_the_capture(golden_pairs):
    signed = [(req, resp) for req, resp, _ in golden_pairs if req.ext_fields and "Signature" in req.ext_fields]
    assert len(signed) > 30
    reproduced = refused = 0
    for req, resp in signed:
        mine = sign(req.ext_fields, req.body, GOOD_SECRET)
        if resp is not None and resp.remark == SIGNATURE_REFUSED:
            assert mine != req.ext_fields["Signature"]  # the wrong-secret producer
            refused += 1
        elif mine == req.ext_fields["Signature"]:
            reproduced += 1
    assert refused == 3  # its SEND_MESSAGE_V2 and two UNREGISTER_CLIENTs
    # every request of the right-secret clients (routes, sends, heartbeats, pulls, offsets ...)
    assert reproduced == len(signed) - refused - 3  # less the bad producer's 3 route requests to the NameServer


def test_signing_content_order_and_body():
    ext = {"b": "2", "AccessKey": "ak", "a": "1", "Signature": "zzz", "_UNIQUE_KEY_QUERY": "true"}
    assert signing_content(ext, b"BODY") == b"aktrue12" + b"BODY"  # TreeMap order: "A" < "_" < "a"
    assert signing_content(ext, None, skip=("Signature", "_UNIQUE_KEY_QUERY")) == b"ak12"
    cmd = RemotingCommand(code=310, ext_fields={"b": "T"}, body=b"x")
    sign_request(cmd, "ak", "secret", security_token="tok")
    assert cmd.ext_fields["AccessKey"] == "ak" and cmd.ext_fields["SecurityToken"] == "tok"
    assert cmd.ext_fields["Signature"] == sign({"b": "T", "AccessKey": "ak", "SecurityToken": "tok"}, b"x", "secret")


async def test_capture_replayed_to_our_broker(tmp_path, golden_pairs):
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    shutil.copy(GOLDEN_YML, home / "conf" / "plain_acl.yml")
    async with running_broker(str(tmp_path / "store"), aclEnable="true", rocketmqHome=str(home)) as broker:
        async with broker_client(broker.address) as c:
            compared = 0
            for req, resp, frame in golden_pairs:
                if frame.dst[1] != 10911 or resp is None or req.code == RequestCode.PULL_MESSAGE:
                    continue
                replay = RemotingCommand(
                    code=req.code,
                    language=req.language,
                    version=req.version,
                    ext_fields=dict(req.ext_fields or {}),
                    body=req.body,
                    serialize_type=req.serialize_type,
                )
                ours = await c.client.invoke(c.addr, replay, 5.0)
                assert ours.code == resp.code, (req.code, ours.remark, resp.remark)
                if resp.code == ResponseCode.SYSTEM_ERROR:
                    assert ours.remark == resp.remark
                    assert ours.ext_fields == resp.ext_fields
                compared += 1
            assert compared >= 15


# ---------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------

RULES_YML = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: userAccess
    secretKey: userSecret1
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      # a group is checked as its retry topic
      - groupA=DENY
      - groupB=PUB|SUB
  - accessKey: adminAccess
    secretKey: adminSecret1
    whiteRemoteAddress: 192.168.1.*
    admin: true
"""


@pytest.fixture
def acl_home(tmp_path):
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(RULES_YML)
    return home


def _check(manager, code, ext, body=None, addr="127.0.0.1:5555", secret="userSecret1", ak="userAccess"):
    cmd = RemotingCommand(code=code, ext_fields=dict(ext), body=body)
    sign_request(cmd, ak, secret)
    manager.validate(parse_request(code, cmd.ext_fields, cmd.body, addr))


def _refusal(manager, *args, **kw) -> str:
    with pytest.raises(AclError) as info:
        _check(manager, *args, **kw)
    return info.value.remote_desc


def test_permissions(acl_home):
    m = PlainPermissionManager(str(acl_home))
    _check(m, RequestCode.SEND_MESSAGE_V2, {"a": "PG", "b": "topicB"})
    assert "No default permission for topic:topicC" in _refusal(m, RequestCode.SEND_MESSAGE_V2, {"b": "topicC"})
    assert _refusal(m, RequestCode.SEND_MESSAGE_V2, {"b": "topicA"}).endswith(
        "No default permission for topic:topicA, "
        "org.apache.rocketmq.acl.plain.PlainPermissionManager.checkPerm(PlainPermissionManager.java:611)"
    )
    assert "(PlainPermissionManager.java:606)" in _refusal(m, RequestCode.SEND_MESSAGE_V2, {"b": "other"})
    # pull: the topic and the group
    _check(m, RequestCode.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "groupB"})
    _check(m, RequestCode.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "anyGroup"})  # defaultGroupPerm SUB
    assert "group:groupA" in _refusal(m, RequestCode.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "groupA"})
    # sending to a retry topic needs SUB on the group
    _check(m, RequestCode.SEND_MESSAGE_V2, {"a": "groupB", "b": "%RETRY%groupB"})
    assert "group:groupA" in _refusal(m, RequestCode.SEND_MESSAGE_V2, {"a": "groupA", "b": "%RETRY%groupA"})
    # the trace topic needs nothing when published to
    _check(m, RequestCode.SEND_MESSAGE_V2, {"a": "PG", "b": "RMQ_SYS_TRACE_TOPIC"})
    # heartbeats: every group and subscribed topic
    hb = HeartbeatData(
        client_id="c",
        consumer_data_set=[ConsumerData(group_name="groupB", subscription_data_set=[SubscriptionData(topic="topicA")])],
    ).encode()
    assert "topic:topicA" in _refusal(m, RequestCode.HEART_BEAT, {}, hb)
    assert "PlainAccessValidator.parse" in _refusal(m, RequestCode.HEART_BEAT, {}, b"[not json")
    # admin codes
    refused = _refusal(m, RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "x"})
    assert "Need admin permission for request code=17, but accessKey=userAccess is not" in refused
    _check(m, RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "x"}, ak="adminAccess", secret="adminSecret1")
    # updateBrokerConfig: an admin account only, with ACL on (without, the broker's configBlackList decides)
    refused = _refusal(m, RequestCode.UPDATE_BROKER_CONFIG, {}, b"fileReservedTime=72\n")
    assert "Need admin permission for request code=25, but accessKey=userAccess is not" in refused
    _check(m, RequestCode.UPDATE_BROKER_CONFIG, {}, b"fileReservedTime=72\n", ak="adminAccess", secret="adminSecret1")
    # who is asking
    assert _refusal(m, 105, {}, secret="wrong").startswith(
        "org.apache.rocketmq.acl.common.AclException: Check signature failed for accessKey=userAccess, "
    )
    assert "No acl config for nobody" in _refusal(m, 105, {}, ak="nobody")
    with pytest.raises(AclError, match="No accessKey is configured"):
        m.validate(parse_request(105, {"topic": "x"}, None, "127.0.0.1:1"))
    with pytest.raises(AclError, match="No accessKey is configured"):
        m.validate(parse_request(105, None, None, "127.0.0.1:1"))
    # white addresses skip the signature (and the permissions)
    m.validate(parse_request(RequestCode.UPDATE_AND_CREATE_TOPIC, None, None, "10.10.103.7:999"))
    _check(m, RequestCode.UPDATE_AND_CREATE_TOPIC, {}, ak="adminAccess", secret="bad", addr="192.168.1.20:1")


def test_perm_helpers():
    assert parse_perm(" PUB|SUB ") == PUB | SUB and parse_perm("SUB|PUB") == PUB | SUB
    assert parse_perm(None) == parse_perm("WHAT") == parse_perm("DENY") == 1
    assert check_permission(SUB, PUB | SUB) and not check_permission(PUB, SUB) and not check_permission(SUB, 1 | SUB)
    assert check_permission(2, SUB) and not check_permission(2, 1)  # ANY


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("*", ["1.2.3.4", "::1"], []),
        ("", [], ["1.2.3.4"]),
        ("192.168.0.1", ["192.168.0.1"], ["192.168.0.2"]),
        ("192.168.0.1,10.0.0.1", ["10.0.0.1"], ["10.0.0.2"]),
        ("192.168.1.{1,2,3}", ["192.168.1.2"], ["192.168.1.4"]),
        ("192.168.*.*", ["192.168.9.9"], ["192.169.0.1"]),
        ("192.168.1-10.*", ["192.168.5.1"], ["192.168.11.1"]),
        ("192.168.1.100-200", ["192.168.1.150"], ["192.168.1.99", "192.168.2.150"]),
        ("::1", ["0:0:0:0:0:0:0:1"], ["::2"]),
        ("1050::0005:0600:300c:*", ["1050:0:0:0:5:600:300c:326b"], ["1050:0:0:0:5:600:300d:1"]),
        ("1050::0005:0600:300c:1-ff", ["1050::5:600:300c:a"], ["1050::5:600:300c:100"]),
    ],
)
def test_address_patterns(pattern, yes, no):
    match = address_matcher(pattern)
    for ip in yes:
        assert match(ip), ip
    for ip in no:
        assert not match(ip), ip


@pytest.mark.parametrize("bad", ["192.168.*", "256.1.1.1", "192.168.1.{1,x}", "1.2.3.4-", "10.*", "192.168.300-400.*"])
def test_bad_address_patterns(bad):
    with pytest.raises(AclError):
        address_matcher(bad)


def test_expand_ip():
    assert expand_ip("::1", 8) == "0000:0000:0000:0000:0000:0000:0000:0001"
    assert expand_ip("1050::5:600:300c", 7) == "1050:0000:0000:0000:0005:0600:300C"


def test_files_reload_and_dir(acl_home):
    m = PlainPermissionManager(str(acl_home))
    (acl_home / "conf" / "acl").mkdir()
    (acl_home / "conf" / "acl" / "more.yml").write_text(
        "accounts:\n- accessKey: extraAccess\n  secretKey: extraSecret\n  defaultTopicPerm: PUB\n"
    )
    assert m.reload_if_changed(now=1e12)
    _check(m, RequestCode.SEND_MESSAGE_V2, {"b": "t"}, ak="extraAccess", secret="extraSecret")
    assert not m.reload_if_changed(now=1e12)  # not again within the watch interval
    (acl_home / "conf" / "acl" / "more.yml").write_text("accounts: [\n")  # broken: the old accounts stay
    os.utime(acl_home / "conf" / "acl" / "more.yml", (1, 1))
    assert not m.reload_if_changed(now=2e12)
    _check(m, RequestCode.SEND_MESSAGE_V2, {"b": "t"}, ak="extraAccess", secret="extraSecret")
    (acl_home / "conf" / "acl" / "more.yml").unlink()
    (acl_home / "conf" / "plain_acl.yml").write_text("accounts:\n- accessKey: short\n  secretKey: x\n")
    with pytest.raises(AclError, match="The accessKey=short and secretKey=x cannot be null and length should longer"):
        PlainPermissionManager(str(acl_home))


def test_acl_yaml_reads_like_snakeyaml(tmp_path):
    """ACL files are YAML 1.1 as SnakeYAML reads them: `y`/`n` stay strings, yes/no/on/off are booleans,
    quotes, comments, flow collections and anchors all work; a write reads back the same."""
    path = tmp_path / "plain_acl.yml"
    path.write_text(
        "# c\n---\nglobalWhiteRemoteAddresses: ['10.0.0.*', \"192.168.1.1\"]\n"
        "accounts:\n- accessKey: y\n  secretKey: &s n12345678\n  admin: yes\n  whiteRemoteAddress: ~\n"
        "  topicPerms: [a=PUB, 'b=SUB']\n- {accessKey: off, secretKey: *s, admin: off}\n"
        "dataVersion:\n- {counter: 1, timestamp: 2}\n"
    )
    doc = PlainPermissionManager.read(str(path))
    assert doc == {
        "globalWhiteRemoteAddresses": ["10.0.0.*", "192.168.1.1"],
        "accounts": [
            {"accessKey": "y", "secretKey": "n12345678", "admin": True, "whiteRemoteAddress": None,
             "topicPerms": ["a=PUB", "b=SUB"]},
            {"accessKey": False, "secretKey": "n12345678", "admin": False},
        ],
        "dataVersion": [{"counter": 1, "timestamp": 2}],
    }
    path.write_text("accounts: [\n")
    with pytest.raises(AclError):
        PlainPermissionManager.read(str(path))


# ---------------------------------------------------------------------------
# Over sockets: the hook and the admin codes
# ---------------------------------------------------------------------------


async def _signed(c, code, header=None, body=None, ak="adminAccess", sk="adminSecret1"):
    cmd = RemotingCommand.request(code, header, body)
    sign_request(cmd, ak, sk)
    return await c.client.invoke(c.addr, cmd, 5.0)


async def test_acl_admin_codes(acl_home, tmp_path):
    path = acl_home / "conf" / "plain_acl.yml"
    async with running_broker(str(tmp_path / "store"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        async with broker_client(broker.address) as c:
            # unsigned: refused before any processor (unknown codes too)
            r = await c.invoke(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
            assert r.code == ResponseCode.SYSTEM_ERROR and "No accessKey is configured" in r.remark
            r = await c.invoke(9999)
            assert r.code == ResponseCode.SYSTEM_ERROR
            r = await _signed(c, 9999)
            assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
            # non-admin: no topic creation
            r = await _signed(
                c,
                RequestCode.UPDATE_AND_CREATE_TOPIC,
                CreateTopicRequestHeader(
                    topic="TNew", default_topic="TBW102", read_queue_nums=4, write_queue_nums=4, perm=6
                ),
                ak="userAccess",
                sk="userSecret1",
            )
            assert r.code == ResponseCode.SYSTEM_ERROR
            assert "Need admin permission for request code=17, but accessKey=userAccess is not" in r.remark

            r = await _signed(c, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
            assert r.code == ResponseCode.SUCCESS
            assert r.ext_fields["brokerName"] == "broker-a" and r.ext_fields["clusterName"] == "DefaultCluster"
            assert str(path) in r.ext_fields["allAclFileVersion"]
            assert '"counter":0' in r.ext_fields["version"]

            create = CreateAccessConfigRequestHeader(
                access_key="newAccess1",
                secret_key="newSecret1",
                admin=False,
                default_topic_perm="PUB",
                default_group_perm="SUB",
                topic_perms="tA=SUB,tB=DENY",
            )
            r = await _signed(c, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, create)
            assert r.code == ResponseCode.SUCCESS and r.remark is None
            doc = yaml.safe_load(path.read_text())
            assert doc["accounts"][-1]["accessKey"] == "newAccess1"
            assert doc["accounts"][-1]["topicPerms"] == ["tA=SUB", "tB=DENY"]
            assert doc["dataVersion"][0]["counter"] == 1
            r = await _signed(c, 105, None, ak="newAccess1", sk="newSecret1")  # usable at once
            assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

            bad = CreateAccessConfigRequestHeader(access_key="short", secret_key="newSecret1")
            r = await _signed(c, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, bad)
            assert r.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
            assert (
                r.remark
                == "The accessKey=short and secretKey=newSecret1 cannot be null and length should longer than 6"
            )
            bad = CreateAccessConfigRequestHeader(access_key="newAccess2", secret_key="newSecret2", topic_perms="tA")
            r = await _signed(c, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, bad)
            assert (
                r.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED and "Parse Resource format error" in r.remark
            )

            # update in place keeps the other settings
            r = await _signed(
                c,
                RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
                CreateAccessConfigRequestHeader(access_key="newAccess1", secret_key="newSecret9"),
            )
            assert r.code == ResponseCode.SUCCESS
            entry = yaml.safe_load(path.read_text())["accounts"][-1]
            assert entry["secretKey"] == "newSecret9" and entry["topicPerms"] == ["tA=SUB", "tB=DENY"]

            r = await _signed(
                c, RequestCode.DELETE_ACL_CONFIG, DeleteAccessConfigRequestHeader(access_key="newAccess1")
            )
            assert r.code == ResponseCode.SUCCESS
            r = await _signed(c, 105, None, ak="newAccess1", sk="newSecret9")
            assert r.code == ResponseCode.SYSTEM_ERROR and "No acl config for newAccess1" in r.remark
            r = await _signed(
                c, RequestCode.DELETE_ACL_CONFIG, DeleteAccessConfigRequestHeader(access_key="newAccess1")
            )
            assert r.code == ResponseCode.DELETE_ACL_CONFIG_FAILED
            assert r.remark == "The accesskey[newAccess1] corresponding to accessConfig has been deleted failed."

            white = UpdateGlobalWhiteAddrsConfigRequestHeader(
                global_white_addrs="127.0.0.1,10.0.0.*", acl_file_full_path=str(path)
            )
            r = await _signed(c, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, white)
            assert r.code == ResponseCode.SUCCESS
            assert yaml.safe_load(path.read_text())["globalWhiteRemoteAddresses"] == ["127.0.0.1", "10.0.0.*"]
            r = await c.invoke(RequestCode.GET_BROKER_CLUSTER_ACL_INFO)  # we are white now: no signature needed
            assert r.code == ResponseCode.SUCCESS and '"counter":4' in r.ext_fields["allAclFileVersion"]
            white.acl_file_full_path = "/etc/passwd"
            r = await c.invoke(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, white)
            assert r.code == ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED


async def test_acl_files_are_written_and_reloaded_off_the_event_loop(acl_home, tmp_path, virtual_clock):
    """The ACL admin codes write and re-read the YAML from a worker thread, and the broker's watcher picks
    up files changed on disk every WATCH_INTERVAL_S (Java's AclFileWatchService), also from a worker
    thread: a request is never kept waiting behind file I/O on the event loop."""
    import threading

    from rocketpy.broker.acl import PlainPermissionManager
    from rocketpy.broker.acl.manager import WATCH_INTERVAL_S
    from rocketpy.testing import wait_until

    io_threads: list[str] = []
    loop_thread = threading.current_thread().name
    real_read, real_write = PlainPermissionManager.read, PlainPermissionManager._write

    def read(path):  # type: ignore[no-untyped-def]
        io_threads.append(threading.current_thread().name)
        return real_read(path)

    def write(self, path, doc):  # type: ignore[no-untyped-def]
        io_threads.append(threading.current_thread().name)
        return real_write(self, path, doc)

    async with running_broker(str(tmp_path / "store"), aclEnable="true", rocketmqHome=str(acl_home)) as broker:
        PlainPermissionManager.read = staticmethod(read)  # type: ignore[method-assign]
        PlainPermissionManager._write = write  # type: ignore[method-assign]
        try:
            async with broker_client(broker.address) as c:
                create = CreateAccessConfigRequestHeader(access_key="threadAccess", secret_key="threadSecret1")
                r = await _signed(c, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, create)
                assert r.code == ResponseCode.SUCCESS
                r = await _signed(c, 105, None, ak="threadAccess", sk="threadSecret1")
                assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED  # reloaded: usable at once
                assert io_threads and loop_thread not in io_threads
                io_threads.clear()

                # a file added on disk: refused until the watcher's next look, then accepted
                (acl_home / "conf" / "acl").mkdir(exist_ok=True)
                (acl_home / "conf" / "acl" / "more.yml").write_text(
                    "accounts:\n- accessKey: diskAccess\n  secretKey: diskSecret1\n  admin: true\n"
                )
                r = await _signed(c, 105, None, ak="diskAccess", sk="diskSecret1")
                assert r.code == ResponseCode.SYSTEM_ERROR and "No acl config for diskAccess" in r.remark
                start = trio.current_time()

                async def accepted() -> bool:
                    r = await _signed(c, 105, None, ak="diskAccess", sk="diskSecret1")
                    return r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

                await wait_until(accepted, timeout=3 * WATCH_INTERVAL_S, tick=0.5)
                assert trio.current_time() - start <= WATCH_INTERVAL_S + 1
                assert io_threads and loop_thread not in io_threads
        finally:
            PlainPermissionManager.read = staticmethod(real_read)  # type: ignore[method-assign]
            PlainPermissionManager._write = real_write  # type: ignore[method-assign]


async def test_acl_codes_without_acl(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            r = await c.invoke(
                RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
                CreateAccessConfigRequestHeader(access_key="newAccess1", secret_key="newSecret1"),
            )
            assert r.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED and r.remark is None
            r = await c.invoke(RequestCode.DELETE_ACL_CONFIG, DeleteAccessConfigRequestHeader(access_key="newAccess1"))
            assert r.code == ResponseCode.DELETE_ACL_CONFIG_FAILED
            assert broker.acl is None


def test_validator_hook_form(acl_home):
    v = PlainAccessValidator.for_home(str(acl_home))

    class Ctx:
        remote_addr = "10.10.103.1:1234"

    v(Ctx(), RemotingCommand(code=17))  # white: passes
    Ctx.remote_addr = "127.0.0.1:1234"
    with pytest.raises(AclError):
        v(Ctx(), RemotingCommand(code=17))
