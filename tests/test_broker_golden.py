"""Against the Java broker's artefacts: its store served by our broker, and the shape of
our answers next to the Java broker's answers in the golden captures."""

from __future__ import annotations

import base64
import json
import shutil

import pytest
from golden import CAPTURES, STORE_DUMP

from rocketpy.codecs import RemotingCommand, ResponseCode
from rocketpy.codecs.codes import RequestCode
from rocketpy.codecs.headers import GetConsumerListByGroupRequestHeader
from rocketpy.javacompat.properties import loads as load_properties
from rocketpy.sniffer.pcap import pair_responses, read_pcap
from rocketpy.testing import broker_client, running_broker

pytestmark = pytest.mark.skipif(not STORE_DUMP.exists(), reason="golden store dump not vendored")


def _manifest() -> dict:
    return json.loads((STORE_DUMP / "manifest.json").read_text())


def _golden_props(store: str) -> dict[str, str]:
    props = load_properties(_manifest()["brokerConfig"])
    for key in ("listenPort", "namesrvAddr", "storePathCommitLog"):
        props.pop(key, None)
    props["storePathRootDir"] = store
    return props


async def test_serves_every_message_of_the_java_store(tmp_path):
    store = tmp_path / "store"
    shutil.copytree(STORE_DUMP, store)
    manifest = _manifest()
    checked = 0
    async with running_broker(str(store), **_golden_props(str(store))) as broker:
        async with broker_client(broker.address) as c:
            for topic, messages in manifest["messagesByTopic"].items():
                for m in messages:
                    if not m["mustBePresent"]:
                        continue
                    for rec in m["storedRecords"]:
                        resp, msgs = await c.pull(
                            "GOLDEN_CHECK", rec["topic"], rec["queueId"], rec["queueOffset"], max_nums=1
                        )
                        if rec["topic"] not in broker.topics.table:
                            # deleted by the Admin scenario: Java answers the same
                            assert resp.code == ResponseCode.TOPIC_NOT_EXIST, rec
                            continue
                        assert resp.code == ResponseCode.SUCCESS, (rec, resp.remark)
                        (got,) = msgs
                        assert got.uniq_key == m["msgId"], rec
                        assert got.commit_log_offset == rec["physicalOffset"]
                        if rec["topic"] == topic:
                            body = got.decompressed_body()
                            if m["bodyEncoding"] == "utf8":
                                assert body == m["body"].encode()
                            elif m["bodyEncoding"] == "base64":
                                assert body == base64.b64decode(m["body"])
                            assert got.tags == m["tags"]
                        checked += 1
    assert checked >= manifest["messagesThatMustBePresent"]


def _golden_pairs(name: str, code: int) -> list:
    out = []
    for req, resp in pair_responses(read_pcap(str(CAPTURES / name))):
        if req.command is not None and req.command.code == code and resp is not None and resp.dst[1] != 10911:
            out.append((req.command, resp.command))
    return out


async def test_replayed_requests_get_java_shaped_answers(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address, client_id="192.0.2.2@29680#2108318263039") as c:
            # SEND_MESSAGE_V2: same codes, same ext field order
            for req, java in _golden_pairs("01-ProducerSync.pcap", RequestCode.SEND_MESSAGE_V2)[:3]:
                ours = await c.client.invoke(c.addr, _copy(req))
                assert ours.code == java.code and ours.remark == java.remark
                assert list(ours.ext_fields) == list(java.ext_fields)
                assert ours.ext_fields["queueId"] == java.ext_fields["queueId"]
            # HEART_BEAT, then GET_CONSUMER_LIST_BY_GROUP
            (hb_req, hb_java), *_ = _golden_pairs("01-ProducerSync.pcap", RequestCode.HEART_BEAT)
            ours = await c.client.invoke(c.addr, _copy(hb_req))
            assert (ours.code, ours.remark, ours.ext_fields, ours.body) == (0, None, None, None)
            assert (hb_java.code, hb_java.ext_fields) == (0, None)
            req, java = _golden_pairs("01-ProducerSync.pcap", RequestCode.GET_CONSUMER_LIST_BY_GROUP)[0]
            ours = await c.client.invoke(c.addr, _copy(req))
            assert (ours.code, ours.ext_fields, ours.remark) == (java.code, java.ext_fields, java.remark)
            assert ours.body == java.body
            # QUERY_CONSUMER_OFFSET for a new group on a queue with its messages in memory
            req, java = _golden_pairs("01-ProducerSync.pcap", RequestCode.QUERY_CONSUMER_OFFSET)[0]
            ours = await c.client.invoke(c.addr, _copy(req))
            assert (ours.code, ours.ext_fields, ours.remark) == (java.code, java.ext_fields, java.remark)
            # PULL_MESSAGE FOUND: header names and order
            pulls = [(q, a) for q, a in _golden_pairs("01-ProducerSync.pcap", RequestCode.PULL_MESSAGE) if a.code == 0]
            req, java = pulls[0]
            ours = await c.client.invoke(c.addr, _copy(req))
            assert ours.code == 0 and ours.remark == java.remark == "FOUND"
            assert list(ours.ext_fields) == list(java.ext_fields)
            # UNREGISTER_CLIENT answers an empty header map, like Java
            req, java = _golden_pairs("01-ProducerSync.pcap", RequestCode.UNREGISTER_CLIENT)[0]
            ours = await c.client.invoke(c.addr, _copy(req))
            assert (ours.code, ours.ext_fields, ours.remark) == (java.code, java.ext_fields, java.remark)
            r = await c.invoke(
                RequestCode.GET_CONSUMER_LIST_BY_GROUP,
                GetConsumerListByGroupRequestHeader(consumer_group="Acl_CG_golden"),
            )
            (_, java_err), *_ = [
                p for p in _golden_pairs("11-Acl.pcap", RequestCode.GET_CONSUMER_LIST_BY_GROUP) if p[1].code != 0
            ]
            assert (r.code, r.remark, r.ext_fields) == (java_err.code, java_err.remark, java_err.ext_fields)


def _copy(cmd):
    from rocketpy.codecs import RemotingCommand

    return RemotingCommand.decode(cmd.encode())


async def test_replayed_rocketmq_binary_session(tmp_path):
    """The ROCKETMQ-serialized session replayed request by request: same codes, remarks and
    header field order (FastCodesHeader fields first, then the ext map)."""
    pairs = []
    for req, resp in pair_responses(read_pcap(str(CAPTURES / "10-SerializeRocketMQ.pcap"))):
        cmd = req.command
        if cmd is None or resp is None or resp.src[1] != 10911 or cmd.serialize_type != 1:
            continue
        if cmd.code in (
            RequestCode.SEND_MESSAGE_V2,
            RequestCode.HEART_BEAT,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP,
            RequestCode.QUERY_CONSUMER_OFFSET,
            RequestCode.PULL_MESSAGE,
            RequestCode.UNREGISTER_CLIENT,
        ):
            pairs.append((cmd, resp.command))
    assert len(pairs) >= 6
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            for req, java in pairs:
                if req.code == RequestCode.PULL_MESSAGE and java.code != 0:
                    continue
                ours = RemotingCommand.decode((await c.client.invoke(c.addr, _copy(req), 20)).encode())
                assert ours.code == java.code, (req.code, ours.remark)
                assert ours.remark == java.remark, req.code
                assert list(ours.ext_fields or {}) == list(java.ext_fields or {}), req.code
                if req.code == RequestCode.SEND_MESSAGE_V2:
                    assert ours.ext_fields["queueId"] == java.ext_fields["queueId"]
