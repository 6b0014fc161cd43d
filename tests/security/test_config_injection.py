"""Issue #46, item 1: a line break in a config update's value got past the black list.

UPDATE_BROKER_CONFIG (25) and UPDATE_NAMESRV_CONFIG (318) bodies are read as Java's Properties.load reads
them, escapes resolved; the black list is checked on the keys that gives, but a value with an escaped
line break (``deleteWhen=04\\nstorePathRootDir=/x``) was written to the config file unescaped and came back
as lines of its own at the next start. The Java 4.9.8 servers do the same (the issue saw it on both:
``mqbroker -p`` shows the injected keys after a restart, and the NameServer's next PUT_KV_CONFIG writes to
the injected ``kvConfigPath``); ours refuse such an update as Java refuses a black-listed key and write
their files escaped.
"""

from __future__ import annotations

import logging

import pytest
from security_helpers import (
    BLACK_LIST_REMARK,
    broker_config,
    broker_file,
    invoke,
    namesrv_file,
    running_namesrv,
)

from rocketpy.broker.config import BrokerConfig
from rocketpy.codecs import ResponseCode
from rocketpy.codecs.codes import RequestCode
from rocketpy.codecs.headers import PutKVConfigRequestHeader
from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.testing import running_broker


@pytest.mark.parametrize("line_break", ["\\n", "\\r", "\\r\\n", "\\u000a", "\\u000D", "\\u2028", "\\u0085"])
async def test_an_escaped_line_break_does_not_write_black_listed_keys_into_the_broker_file(tmp_path, line_break):
    """The issue's body: Java 4.9.8 answers 0, and its -c file then holds ``storePathRootDir=/x`` and
    ``brokerConfigPath=/z`` as lines of their own. Ours answer NO_PERMISSION with Java's remark, as for
    ``storePathRootDir=/x`` alone, and change nothing (U+2028 and NEL are no line break to Properties,
    but they are to other readers of lines: refused too)."""
    path = broker_file(tmp_path)
    before = path.read_text()
    body = (f"deleteWhen=04{line_break}storePathRootDir=/x{line_break}rocketmqHome=/y{line_break}"
            "brokerConfigPath=/z").encode()
    async with running_broker(str(tmp_path / "store"), config_path=str(path)) as broker:
        answer = await invoke(broker.address, RequestCode.UPDATE_BROKER_CONFIG, body)
        assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION, BLACK_LIST_REMARK)
        assert (await broker_config(broker.address))["deleteWhen"] == "04"
    assert path.read_text() == before
    restarted = BrokerConfig.load(str(path))  # what mqbroker -c runs with after a restart
    assert restarted.store.store_path_root_dir == str(tmp_path / "store")
    assert "brokerConfigPath" not in restarted.props and restarted.props["deleteWhen"] == "04"


async def test_an_escaped_line_break_does_not_move_the_namesrv_kv_file(tmp_path):
    """The issue's UPDATE_NAMESRV_CONFIG body ``productEnvName=x\\nkvConfigPath=...``: Java 4.9.8 answers 0
    and writes ``kvConfigPath`` as a line of its own, so after a restart PUT_KV_CONFIG writes attacker-chosen
    text to that path. Ours refuse it (NO_PERMISSION, Java's remark) and the KV file stays where it was."""
    path = namesrv_file(tmp_path)
    evil = tmp_path / "evil.json"
    body = f"productEnvName=x\\nkvConfigPath={evil}".encode()
    async with running_namesrv(path) as ns:
        answer = await invoke(ns.address, RequestCode.UPDATE_NAMESRV_CONFIG, body)
        assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION, BLACK_LIST_REMARK)
        assert ns.config.product_env_name == "center"
    assert NamesrvConfig.from_file(path).kv_config_path == str(tmp_path / "kvConfig.json")
    async with running_namesrv(path) as ns:  # restarted
        put = PutKVConfigRequestHeader(namespace="ns", key="k", value="attacker's text")
        assert (await invoke(ns.address, RequestCode.PUT_KV_CONFIG, b"", put)).code == ResponseCode.SUCCESS
    assert not evil.exists() and "attacker's text" in (tmp_path / "kvConfig.json").read_text()


async def test_the_broker_file_gives_back_every_value_it_was_written_with(tmp_path):
    """After an update the whole configuration is written again. Java's properties2String writes values
    as they are, so a backslash is read back as an escape (``C:\\rocketmq\\region`` became ``C:rocketmq``, a
    carriage return, ``egion``), and non-ASCII text is written in UTF-8 but read back as ISO-8859-1; ours
    are escaped (properties.store) and read back as they were."""
    region = "C:\\rocketmq\\région \\n"
    path = broker_file(tmp_path, "regionId=C:\\\\rocketmq\\\\r\\u00e9gion \\\\n\n")
    async with running_broker(str(tmp_path / "store"), config_path=str(path)) as broker:
        assert broker.config.region_id == region
        answer = await invoke(broker.address, RequestCode.UPDATE_BROKER_CONFIG, b"fileReservedTime=72")
        assert answer.code == ResponseCode.SUCCESS
    assert path.read_bytes().isascii()
    restarted = BrokerConfig.load(str(path))
    assert restarted.region_id == region and restarted.store.file_reserved_time == 72


async def test_the_namesrv_file_gives_back_every_value_it_was_written_with(tmp_path):
    """As for the broker: Java's NameServer writes its properties unescaped (and in UTF-8, read back as
    ISO-8859-1); ours escaped."""
    env = "C:\\env\\été"
    path = namesrv_file(tmp_path, "productEnvName=C:\\\\env\\\\\\u00e9t\\u00e9\n")
    async with running_namesrv(path) as ns:
        assert ns.config.product_env_name == env
        answer = await invoke(ns.address, RequestCode.UPDATE_NAMESRV_CONFIG, b"orderMessageEnable=true")
        assert answer.code == ResponseCode.SUCCESS
    restarted = NamesrvConfig.from_file(path)
    assert restarted.product_env_name == env and restarted.order_message_enable is True


async def test_a_body_properties_load_refuses_is_answered_as_java_answers_it(tmp_path):
    """``a=\\uZZZZ``: Properties.load throws, MixAll.string2Properties returns null, and Java 4.9.8's
    AdminBrokerProcessor answers SYSTEM_ERROR ``string2Properties error`` (the NameServer too)."""
    async with running_broker(str(tmp_path / "store")) as broker:
        answer = await invoke(broker.address, RequestCode.UPDATE_BROKER_CONFIG, b"a=\\uZZZZ")
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, "string2Properties error")
    async with running_namesrv(namesrv_file(tmp_path)) as ns:
        answer = await invoke(ns.address, RequestCode.UPDATE_NAMESRV_CONFIG, b"a=\\uZZZZ")
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, "string2Properties error")


async def test_a_namesrv_update_over_its_size_is_refused_unread(tmp_path, caplog):
    """Reading a body of short lines takes about 0.5 s a MiB on the event loop: one 16 MiB frame held the
    NameServer for seconds. Bodies over updateNamesrvConfigMaxBodySize (64 KiB; 0 lifts it, as Java, which
    has no such bound) are answered SYSTEM_ERROR naming it, with one log line, and change nothing."""
    body = b"orderMessageEnable=true\n" * 3000
    async with running_namesrv(namesrv_file(tmp_path)) as ns:
        with caplog.at_level(logging.WARNING, logger="rocketpy"):
            answer = await invoke(ns.address, RequestCode.UPDATE_NAMESRV_CONFIG, body)
        assert answer.code == ResponseCode.SYSTEM_ERROR
        assert answer.remark == f"UPDATE_NAMESRV_CONFIG body of {len(body)} bytes is over " \
                                "updateNamesrvConfigMaxBodySize=65536"
        assert ns.config.order_message_enable is False
    assert len([r for r in caplog.records if "process request refused: code 318" in r.getMessage()]) == 1
    async with running_namesrv(namesrv_file(tmp_path, "updateNamesrvConfigMaxBodySize=0\n")) as ns:
        assert (await invoke(ns.address, RequestCode.UPDATE_NAMESRV_CONFIG, body)).code == ResponseCode.SUCCESS
