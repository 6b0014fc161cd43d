"""Issue #46, item 1, as a property: no body sent to UPDATE_BROKER_CONFIG (25) or UPDATE_NAMESRV_CONFIG
(318) ever changes a black-listed key, in memory or in the file, across a restart.

Bodies are made of the ways Properties text can spell a key or hide a line (escapes, ``\\uXXXX``,
continuation lines, ``:`` and blank separators, comments, CR, LF and CRLF, trailing escaped blanks) around
black-listed and ordinary keys, and of random text. Java 4.9.8 fails this property (the issue's
``deleteWhen=04\\nstorePathRootDir=/x``).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from security_helpers import broker_file, invoke, namesrv_file, running_namesrv

from rocketpy.broker.config import BrokerConfig
from rocketpy.codecs.codes import RequestCode
from rocketpy.javacompat import properties
from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.testing import running_broker

#: black-listed keys of one server or the other, and ordinary ones an update may change
BLACK = ["storePathRootDir", "storePathCommitLog", "rocketmqHome", "brokerConfigPath", "configBlackList",
         "listenHost", "listenPort", "aclPlainFile", "adminCredential", "kvConfigPath", "configStorePath",
         "tls.server.mode", "haListenPort", "dLegerPeers"]
ORDINARY = ["deleteWhen", "fileReservedTime", "brokerClusterName", "regionId", "productEnvName",
            "orderMessageEnable", "clusterTest", "brokerPermission"]


def spellings(key: str) -> st.SearchStrategy[str]:
    """Ways a Properties text names ``key``."""
    first, rest = key[0], key[1:]
    return st.sampled_from([
        key, f"\\u{ord(first):04x}{rest}", f"{key[:4]}\\\n   {key[4:]}", f"{key[:3]}\\\r\n\t{key[3:]}",
        "".join(f"\\{c}" if c.isalpha() and i % 3 == 0 else c for i, c in enumerate(key)), f"  {key}",
        key.lower(), key.upper(), f"{key}\\ ", f"{key[:-1]}\\u{ord(key[-1]):04X}",
    ])


VALUE_PIECES = ["/x", "0.0.0.0", "04", "72", "true", "\\n", "\\r", "\\r\\n", "\\u000a", "\\u000D", "\n", "\r\n",
                "\r", "\\\n", "\\\r\n  ", "=", ":", " ", "#", "!", "\\", "\\\\", "\\u2028", "\u2028", "é", "\\u00e9",
                "\\t", "\\f", "\x85", "storePathRootDir=/x", "listenHost=0.0.0.0", "kvConfigPath=/tmp/kv.json"]
SEPARATORS = ["=", ":", " ", " = ", "\t: ", "=\\\n  "]
LINE_ENDS = ["\n", "\r\n", "\r", "\n# a comment\n", "\n\n", "\\\n", "\\\\\n"]


@st.composite
def lines(draw: st.DrawFn) -> str:
    key = draw(st.sampled_from(BLACK + ORDINARY).flatmap(spellings))
    value = "".join(draw(st.lists(st.sampled_from(VALUE_PIECES), max_size=6)))
    return key + draw(st.sampled_from(SEPARATORS)) + value


bodies = st.one_of(
    st.lists(st.tuples(lines(), st.sampled_from(LINE_ENDS)), min_size=1, max_size=6).map(
        lambda parts: "".join(line + end for line, end in parts)),
    st.lists(st.sampled_from([*"=:\\ \t\r\n#!u0aAé", "storePathRootDir", "listenHost", "kvConfigPath",
                              "deleteWhen"]), max_size=30).map("".join),
).map(lambda text: text.encode("utf-8"))

RUNS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def black_view(props: dict[str, str], keys: list[str]) -> dict[str, str | None]:
    return {k: props.get(k) for k in keys}


@pytest.mark.timeout(600)
@RUNS
@given(sent=st.lists(bodies, min_size=1, max_size=5))
async def test_no_update_body_changes_a_black_listed_broker_key(tmp_path_factory, sent):
    tmp_path = tmp_path_factory.mktemp("broker")
    path = broker_file(tmp_path, "aclPlainFile=conf/plain_acl.yml\n")
    async with running_broker(str(tmp_path / "store"), config_path=str(path)) as broker:
        memory = black_view(broker.config.props, BLACK)
        for body in sent:
            await invoke(broker.address, RequestCode.UPDATE_BROKER_CONFIG, body)
            assert black_view(broker.config.props, BLACK) == memory
        # one ordinary update, so that the file is written whatever the bodies were
        assert (await invoke(broker.address, RequestCode.UPDATE_BROKER_CONFIG, b"fileReservedTime=49")).code == 0
        assert black_view(broker.config.props, BLACK) == memory
    written = properties.load_file(path)
    assert {k: v for k, v in black_view(written, BLACK).items() if v is not None} == {
        k: v for k, v in memory.items() if v is not None}
    assert black_view(BrokerConfig.load(str(path)).props, BLACK) == memory  # what mqbroker -c starts with
    async with running_broker(str(tmp_path / "store"), config_path=str(path)) as broker:  # restarted
        assert black_view(broker.config.props, BLACK) == memory


@pytest.mark.timeout(600)
@RUNS
@given(sent=st.lists(bodies, min_size=1, max_size=5))
async def test_no_update_body_changes_a_black_listed_namesrv_key(tmp_path_factory, sent):
    tmp_path = tmp_path_factory.mktemp("namesrv")
    path = namesrv_file(tmp_path, "tls.server.mode=permissive\n")
    async with running_namesrv(path) as ns:
        memory = black_view(ns.config.to_properties(), BLACK)
        for body in sent:
            await invoke(ns.address, RequestCode.UPDATE_NAMESRV_CONFIG, body)
            assert black_view(ns.config.to_properties(), BLACK) == memory
        assert (await invoke(ns.address, RequestCode.UPDATE_NAMESRV_CONFIG, b"clusterTest=false")).code == 0
    written = properties.load_file(path)
    assert {k: v for k, v in black_view(written, BLACK).items() if v is not None} == {
        k: v for k, v in memory.items() if v is not None}
    restarted = NamesrvConfig.from_file(path)  # what mqnamesrv -c starts with
    assert black_view(restarted.to_properties(), BLACK) == memory
    async with running_namesrv(path) as ns:
        assert black_view(ns.config.to_properties(), BLACK) == memory
