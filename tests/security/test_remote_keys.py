"""Issue #46, item 2: keys that name a path, an address to bind, the ACL file, a credential or TLS were
settable by UPDATE_BROKER_CONFIG (25) and UPDATE_NAMESRV_CONFIG (318).

``listenHost=0.0.0.0`` was saved, so the next start bound every interface; ``aclPlainFile=/nonexistent``
was saved, so the next start failed. The Java 4.9.8 servers take every key but their black list
(broker: brokerConfigPath, rocketmqHome, configBlackList and configBlackList's own; NameServer:
configBlackList, configStorePath, kvConfigPath, rocketmqHome), and have no listenHost or aclPlainFile: ours
refuse the keys of ``REMOTE_REFUSED_KEYS`` on both servers too, as Java refuses a black-listed key
(NO_PERMISSION, ``Can not update config in black list.``), the whole request with them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from security_helpers import BLACK_LIST_REMARK, broker_file, invoke, namesrv_file, running_namesrv

from rocketpy.broker.config import BrokerConfig
from rocketpy.codecs import ResponseCode
from rocketpy.codecs.codes import RequestCode
from rocketpy.javacompat import properties
from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.testing import running_broker

#: what README documents: Java's black list and ours (REMOTE_REFUSED_KEYS), every tls.* key besides
BROKER_KEYS = ["brokerConfigPath", "rocketmqHome", "configBlackList", "storePathRootDir", "storePathCommitLog",
               "storePathDLedgerCommitLog", "readOnlyCommitLogStorePaths", "listenHost", "listenPort",
               "haListenPort", "dLegerPeers", "aclPlainFile", "adminCredential", "messageStorePlugIn"]
TLS_KEYS = ["tls.server.mode", "tls.enable", "tls.test.mode.enable", "tls.server.keyPath", "tls.server.certPath",
            "tls.server.keyPassword", "tls.server.trustCertPath", "tls.client.keyPassword", "tls.config.file"]
NAMESRV_KEYS = ["configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome", "listenHost", "listenPort"]
README = Path(__file__).resolve().parents[2] / "README.md"
SAMPLES = {"listenHost": "0.0.0.0", "listenPort": "10", "haListenPort": "10", "aclPlainFile": "/nonexistent",
           "adminCredential": "guessed", "dLegerPeers": "n0-10.0.0.1:1", "tls.server.mode": "disabled"}


@pytest.mark.parametrize("key", BROKER_KEYS + TLS_KEYS)
async def test_the_broker_refuses_each_key_it_keeps_from_remote_updates(tmp_path, key):
    """Each key of REMOTE_REFUSED_KEYS (and Java's own black list): refused with NO_PERMISSION and Java's
    remark, the whole request with it, nothing changed in memory or in the file."""
    path = broker_file(tmp_path, "listenHost=127.0.0.1\ntls.server.mode=permissive\n")
    before = path.read_text()
    body = f"fileReservedTime=49\n{key}={SAMPLES.get(key, '/tmp/evil')}\n".encode()
    async with running_broker(str(tmp_path / "store"), config_path=str(path)) as broker:
        props = dict(broker.config.props)
        answer = await invoke(broker.address, RequestCode.UPDATE_BROKER_CONFIG, body)
        assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION, BLACK_LIST_REMARK)
        assert broker.config.props == props and broker.config.store.file_reserved_time == 72
    assert path.read_text() == before


@pytest.mark.parametrize("key", NAMESRV_KEYS + TLS_KEYS)
async def test_the_namesrv_refuses_each_key_it_keeps_from_remote_updates(tmp_path, key):
    """On the NameServer: its bind address and port, and every tls.* key (even one the file has, which
    Java's Configuration would merge), refused with Java's answer, the whole request with it."""
    path = namesrv_file(tmp_path, "tls.server.mode=permissive\n")
    before = path.read_text()
    body = f"orderMessageEnable=true\n{key}={SAMPLES.get(key, '/tmp/evil')}\n".encode()
    async with running_namesrv(path) as ns:
        settings = ns.config.to_properties()
        answer = await invoke(ns.address, RequestCode.UPDATE_NAMESRV_CONFIG, body)
        assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION, BLACK_LIST_REMARK)
        assert ns.config.to_properties() == settings
    assert path.read_text() == before


async def test_a_remote_listen_host_or_acl_file_never_reaches_the_next_start(tmp_path):
    """The issue's two: after ``listenHost=0.0.0.0`` and ``aclPlainFile=/nonexistent`` (each alone, on 25
    and 318) a restarted broker still binds loopback and has no ACL file set, a restarted NameServer still
    binds loopback."""
    path = broker_file(tmp_path)
    async with running_broker(str(tmp_path / "store"), config_path=str(path)) as broker:
        for body in (b"listenHost=0.0.0.0", b"aclPlainFile=/nonexistent"):
            assert (await invoke(broker.address, RequestCode.UPDATE_BROKER_CONFIG, body)).code != 0
    restarted = BrokerConfig.load(str(path))
    assert restarted.listen_host == "127.0.0.1" and "aclPlainFile" not in restarted.props
    ns_path = namesrv_file(tmp_path)
    async with running_namesrv(ns_path) as ns:
        assert (await invoke(ns.address, RequestCode.UPDATE_NAMESRV_CONFIG, b"listenHost=0.0.0.0")).code != 0
    assert NamesrvConfig.from_file(ns_path).listen_host == "127.0.0.1"
    assert properties.load_file(ns_path)["listenHost"] == "127.0.0.1"


def test_the_lists_are_the_servers_and_readme_documents_them():
    """The keys above are on the servers' lists (ours all of them), and README's broker configuration section
    names each."""
    from rocketpy.broker.configuration import JAVA_BLACK_LISTED, REMOTE_REFUSED_KEYS
    from rocketpy.namesrv import config as namesrv_config

    ours = {k for k in REMOTE_REFUSED_KEYS if not k.startswith("tls.")}
    assert ours <= set(BROKER_KEYS) <= ours | JAVA_BLACK_LISTED and set(TLS_KEYS) <= REMOTE_REFUSED_KEYS.keys()
    ns_ours = namesrv_config.REMOTE_REFUSED_KEYS.keys()
    assert ns_ours <= set(NAMESRV_KEYS) <= set(namesrv_config.ALWAYS_BLACK_LISTED) | ns_ours
    text = README.read_text()
    section = text[text.index("## Broker configuration"):]
    section = section[: section.index("\n## ", 4)]
    missing = [k for k in {*BROKER_KEYS, *NAMESRV_KEYS} if f"`{k}`" not in section]
    assert not missing and "`tls.*`" in section
