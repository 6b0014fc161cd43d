"""The store against what a Java 4.9.8 broker wrote (protocol/golden/store-dump*).

Reading: every message of the manifests reads back by queue offset, by key and by
offset msg id; the crashed store recovers every acknowledged send. Layout: replaying
the golden records through rocketpy's put path gives byte-identical CommitLog,
ConsumeQueue and IndexFile contents.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from golden import STORE_DUMP, STORE_DUMP_CRASHED

from rocketpy.codecs import store_records as sr
from rocketpy.codecs.codes import MessageConst
from rocketpy.codecs.message import Message, decode_message, encode_batch, string_to_properties
from rocketpy.store import (
    GetMessageStatus,
    MessageExtBatch,
    MessageExtBrokerInner,
    MessageStore,
    MessageStoreConfig,
)
from rocketpy.store.check import check_store

MANIFEST = json.loads((STORE_DUMP / "manifest.json").read_text())
CRASHED = json.loads((STORE_DUMP_CRASHED / "manifest.json").read_text())
SYSTEM_PROPS = {"UNIQ_KEY", "CLUSTER", "KEYS", "TAGS", "WAIT", "DELAY", "REAL_TOPIC", "REAL_QID"}


def golden_config(root: Path, manifest: dict = MANIFEST) -> MessageStoreConfig:
    # The manifest's broker config, with the store moved to our copy.
    return MessageStoreConfig.from_properties(
        manifest["brokerConfig"], store_path_root_dir=str(root), store_path_commit_log=None
    )


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    dst = tmp_path / "store"
    shutil.copytree(STORE_DUMP, dst)
    return dst


@pytest.fixture
def crashed(tmp_path: Path) -> Path:
    dst = tmp_path / "store"
    shutil.copytree(STORE_DUMP_CRASHED, dst)
    return dst


def test_golden_config_matches_manifest(dump: Path) -> None:
    cfg = golden_config(dump)
    assert cfg.mapped_file_size_commit_log == 4194304
    assert cfg.consume_queue_file_size == 60000
    assert (cfg.max_hash_slot_num, cfg.max_index_num) == (1000, 4000)
    assert cfg.file_reserved_time == 48 and cfg.delete_when == "04"


def test_every_message_reads_back(dump: Path) -> None:
    with MessageStore(golden_config(dump)) as store:
        assert store.recovery is not None and store.recovery.clean_shutdown
        store.flush()
        assert store.max_phy_offset == MANIFEST["store"]["commitlogMaxOffset"]
        found = 0
        for sent in (m for msgs in MANIFEST["messagesByTopic"].values() for m in msgs):
            if not sent["mustBePresent"]:
                continue
            for rec in sent["storedRecords"]:
                if rec["topic"] in store.topics():
                    got = store.get_message(rec["topic"], rec["queueId"], rec["queueOffset"], 1)
                    assert got is not None and got.status is GetMessageStatus.FOUND, rec
                    msg = decode_message(got.messages[0])
                else:
                    # A deleted topic (Admin): its queues are gone, its records are not.
                    found_msg = store.look_message_by_offset(rec["physicalOffset"])
                    assert found_msg is not None
                    msg = found_msg
                assert msg.commit_log_offset == rec["physicalOffset"]
                assert msg.offset_msg_id == rec["offsetMsgId"]
                assert msg.uniq_key == sent["msgId"]
                assert msg.keys_string == sent["keys"]
                if rec["topic"] == sent.get("topic", rec["topic"]) and sent["bodyEncoding"] == "utf8":
                    assert msg.decompressed_body().decode() == sent["body"]
                for k, v in sent["userProperties"].items():
                    assert msg.properties[k] == v
                found += 1
        assert found >= MANIFEST["messagesThatMustBePresent"]


def test_consume_queue_counts_match_manifest(dump: Path) -> None:
    with MessageStore(golden_config(dump)) as store:
        for name, info in MANIFEST["store"]["consumeQueues"].items():
            topic, qid = name.rsplit("/", 1)
            assert store.get_min_offset_in_queue(topic, int(qid)) == info["firstQueueOffset"]
            assert store.get_max_offset_in_queue(topic, int(qid)) == info["firstQueueOffset"] + info["entries"]


def test_query_by_key_and_by_offset_msg_id(dump: Path) -> None:
    with MessageStore(golden_config(dump)) as store:
        checked = 0
        for sent in (m for msgs in MANIFEST["messagesByTopic"].values() for m in msgs):
            if not sent["mustBePresent"] or not sent["storedRecords"]:
                continue
            rec = sent["storedRecords"][0]
            by_id = store.look_message_by_msg_id(rec["offsetMsgId"])
            assert by_id is not None and by_id.uniq_key == sent["msgId"]
            # UNIQ_KEY is indexed under the topic it was stored in
            q = store.query_message(rec["topic"], sent["msgId"], 32, 0, 1 << 62)
            assert any(decode_message(r).commit_log_offset == rec["physicalOffset"] for r in q.messages)
            for key in (sent["keys"] or "").split():
                q = store.query_message(rec["topic"], key, 32, 0, 1 << 62)
                hits = [decode_message(r) for r in q.messages]
                assert any(key in m.keys for m in hits), (rec["topic"], key)
            checked += 1
        assert checked > 90


def test_config_files_load(dump: Path) -> None:
    files = MessageStore(golden_config(dump)).config_files
    docs = files.load_all()
    assert all(doc is not None for doc in docs.values())
    topics = docs["topics.json"]
    assert "Trace_T_golden" in topics.topic_config_table  # type: ignore[union-attr]
    assert "Admin_T_golden" not in topics.topic_config_table  # type: ignore[union-attr]
    assert docs["delayOffset.json"].offset_table == {1: 2, 2: 1}  # type: ignore[union-attr]


def test_crashed_store_recovers_every_acknowledged_send(crashed: Path) -> None:
    assert (crashed / "abort").exists()
    with MessageStore(golden_config(crashed, CRASHED)) as store:
        rep = store.recovery
        assert rep is not None and not rep.clean_shutdown
        assert rep.truncated_at == CRASHED["store"]["commitlogMaxOffset"] == store.max_phy_offset
        acked = [a for a in CRASHED["producerAttempts"] if a["acknowledged"]]
        assert len(acked) == CRASHED["acknowledgedCount"]
        for a in acked:
            got = store.get_message(a["topic"], a["queueId"], a["queueOffset"], 1)
            assert got is not None and got.status is GetMessageStatus.FOUND
            msg = decode_message(got.messages[0])
            assert msg.uniq_key == a["msgId"] and msg.body.decode() == a["body"]
            q = store.query_message(a["topic"], a["keys"], 32, 0, 1 << 62)
            assert any(decode_message(r).uniq_key == a["msgId"] for r in q.messages)
        # Java's restart served the crash topic with max offsets 7/6/6/7.
        assert [store.get_max_offset_in_queue(CRASHED["crashTopic"], q) for q in range(4)] == [7, 6, 6, 7]
    # A clean close afterwards: no abort file, and the store checks clean.
    assert not (crashed / "abort").exists()
    assert check_store(str(crashed)).ok


def test_crashed_store_with_lagging_consume_queue_is_rebuilt(crashed: Path) -> None:
    # Make the crash worse: the crash topic's queues lost their last units and the index is gone.
    for q in range(4):
        path = crashed / "consumequeue" / CRASHED["crashTopic"] / str(q) / "00000000000000000000"
        data = bytearray(path.read_bytes())
        data[2 * sr.CQ_STORE_UNIT_SIZE :] = bytes(len(data) - 2 * sr.CQ_STORE_UNIT_SIZE)
        path.write_bytes(bytes(data))
    shutil.rmtree(crashed / "index")
    with MessageStore(golden_config(crashed, CRASHED)) as store:
        assert [store.get_max_offset_in_queue(CRASHED["crashTopic"], q) for q in range(4)] == [7, 6, 6, 7]
        for a in CRASHED["producerAttempts"]:
            if a["acknowledged"]:
                q = store.query_message(a["topic"], a["keys"], 32, 0, 1 << 62)
                assert any(decode_message(r).uniq_key == a["msgId"] for r in q.messages)


# -- layout: replay the golden records through our put path ---------------------------------

BATCH_SUFFIX = "CLUSTER\x01DefaultCluster\x02WAIT\x01true"  # the batch request's own properties


def _inner(msg, **over) -> MessageExtBrokerInner:  # type: ignore[no-untyped-def]
    fields = dict(
        topic=msg.topic,
        queue_id=msg.queue_id,
        body=msg.body,
        flag=msg.flag,
        properties=dict(msg.properties),
        properties_string=msg._raw_properties.decode(),
        sys_flag=msg.sys_flag,
        born_timestamp=msg.born_timestamp,
        born_host=msg.born_host,
        store_host=msg.store_host,
        reconsume_times=msg.reconsume_times,
        prepared_transaction_offset=msg.prepared_transaction_offset,
    )
    fields.update(over)
    return MessageExtBrokerInner(**fields)


def test_replay_gives_java_layout(tmp_path: Path) -> None:
    data = (STORE_DUMP / "commitlog" / "00000000000000000000").read_bytes()
    records = [r for r in sr.iter_commitlog(data, 0) if not isinstance(r, sr.BlankRecord)]
    assert len(records) == MANIFEST["store"]["records"]
    now = [0]
    cfg = golden_config(tmp_path / "ours")
    with MessageStore(cfg, clock=lambda: now[0]) as store:
        i = 0
        while i < len(records):
            msg = records[i]
            now[0] = msg.store_timestamp
            props = msg.properties
            if msg.topic == "SCHEDULE_TOPIC_XXXX" and MessageConst.PROPERTY_REAL_TOPIC in props:
                # Sent to the real topic with DELAY: the store does the rewrite itself.
                orig = {k: v for k, v in props.items() if k not in ("REAL_TOPIC", "REAL_QID")}
                inner = _inner(
                    msg,
                    topic=props["REAL_TOPIC"],
                    queue_id=int(props["REAL_QID"]),
                    properties=orig,
                    properties_string=None,
                )
                result = store.put_message(inner)
                assert inner.topic == "SCHEDULE_TOPIC_XXXX"
                i += 1
            elif msg.topic == "Batch_T_golden":
                group = [r for r in records[i:] if r.topic == msg.topic and r.store_timestamp == msg.store_timestamp]
                entries = []
                for r in group:
                    raw = r._raw_properties.decode()
                    assert raw.endswith("\x02" + BATCH_SUFFIX)
                    own = raw[: -len(BATCH_SUFFIX) - 1]
                    entries.append(Message(body=r.body, flag=r.flag, properties=string_to_properties(own)))
                batch = MessageExtBatch(
                    topic=msg.topic,
                    queue_id=msg.queue_id,
                    body=encode_batch(entries),
                    properties_string=BATCH_SUFFIX,
                    sys_flag=msg.sys_flag,
                    born_timestamp=msg.born_timestamp,
                    born_host=msg.born_host,
                    store_host=msg.store_host,
                )
                result = store.put_messages(batch)
                assert result.append is not None and result.append.msg_num == len(group)
                i += len(group)
            else:
                # A record the schedule service delivered keeps DELAY in its stored string, but
                # Java had cleared it from the map the store looks at (messageTimeup).
                plain = {k: v for k, v in props.items() if k != MessageConst.PROPERTY_DELAY_TIME_LEVEL}
                result = store.put_message(_inner(msg, properties=plain))
                i += 1
            assert result.is_ok, result
        store.flush()
        assert store.max_phy_offset == MANIFEST["store"]["commitlogMaxOffset"]
        # The Admin scenario deleted its topic after writing to it.
        store.delete_topics(["Admin_T_golden"])
        store.flush()

    ours = (tmp_path / "ours" / "commitlog" / "00000000000000000000").read_bytes()
    assert len(ours) == len(data)
    for mine, theirs in zip(
        sr.iter_commitlog(ours, 0), (r for r in sr.iter_commitlog(data, 0)), strict=True
    ):  # field by field first: a failure names the record
        assert mine == theirs
    assert ours == data

    golden_cq = STORE_DUMP / "consumequeue"
    our_cq = tmp_path / "ours" / "consumequeue"
    compared = 0
    for dirpath, _dirs, files in os.walk(golden_cq):
        for name in files:
            rel = Path(dirpath, name).relative_to(golden_cq)
            assert (our_cq / rel).read_bytes() == (golden_cq / rel).read_bytes(), rel
            compared += 1
    assert compared == len(MANIFEST["store"]["consumeQueues"])
    assert sorted(p.relative_to(our_cq) for p in our_cq.rglob("0000*")) == sorted(
        p.relative_to(golden_cq) for p in golden_cq.rglob("0000*")
    )

    (golden_index,) = (STORE_DUMP / "index").iterdir()
    (our_index,) = (tmp_path / "ours" / "index").iterdir()
    assert our_index.read_bytes() == golden_index.read_bytes()
