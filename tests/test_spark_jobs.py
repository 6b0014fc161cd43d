"""The Spark jobs (store audit, message trace, traffic report) in local mode.

The audit runs on the golden store, on a copy with injected damage it must find
exactly, and on stores written by rocketpy.store. One local[2] session for the module;
skipped, with the reason, where pyspark or Java is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")
pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install -e '.[spark]')")
if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
    pytest.skip("no Java runtime: Spark needs java on PATH or JAVA_HOME", allow_module_level=True)

from pyspark.sql import functions as F  # noqa: E402

from rocketpy.codecs.store_records import CQ_STORE_UNIT_SIZE  # noqa: E402
from rocketpy.spark.commitlog import CorruptRegion, walk_commitlog  # noqa: E402
from rocketpy.spark.jobs import consumer_lag, message_trace, replica_audit, store_audit, traffic_report  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "protocol" / "golden"
CAPTURES = GOLDEN / "captures"
STORE = GOLDEN / "store-dump"
STORE_MANIFEST = json.loads((STORE / "manifest.json").read_text())
CAPTURE_MANIFESTS = [json.loads(p.read_text()) for p in sorted(CAPTURES.glob("*.json"))]
# The Admin scenario deleted its topic: its 6 records stay in the CommitLog with no queue.
ADMIN_ORPHANS = STORE_MANIFEST["store"]["recordsPerTopic"]["Admin_T_golden"]


def _key(f: dict) -> tuple:
    return (f["kind"], f["topic"], f["queue_id"], f["queue_offset"], f["commit_log_offset"])


# -- store audit ----------------------------------------------------------------------


def test_audit_golden_store(spark, tmp_path):
    result = store_audit.run(spark, str(STORE), str(tmp_path / "out"))
    store = STORE_MANIFEST["store"]
    assert result.summary["records"] == store["records"]
    assert result.summary["commitlogEnd"] == store["commitlogMaxOffset"]
    assert result.summary["corruptRegions"] == 0
    assert result.summary["queueUnits"] == sum(q["entries"] for q in store["consumeQueues"].values())
    # The only findings: the deleted Admin topic's records, flagged as such.
    assert result.kinds() == {"orphan_record": ADMIN_ORPHANS}
    assert {f["topic"] for f in result.findings} == {"Admin_T_golden"}
    assert all("topics.json" in f["detail"] for f in result.findings)
    topics = {t["topic"]: t for t in result.topics}
    assert {t: v["records"] for t, v in topics.items()} == store["recordsPerTopic"]
    units: Counter = Counter()
    for q, v in store["consumeQueues"].items():
        units[q.rsplit("/", 1)[0]] += v["entries"]
    assert {t: v["queue_units"] for t, v in topics.items() if v["queue_units"]} == dict(units)
    # Written as Parquet and summarised.
    assert spark.read.parquet(str(tmp_path / "out" / "findings")).count() == ADMIN_ORPHANS
    assert spark.read.parquet(str(tmp_path / "out" / "topics")).count() == len(store["recordsPerTopic"])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["findingsByKind"] == {"orphan_record": ADMIN_ORPHANS}


def test_audit_crashed_store(spark):
    crashed = GOLDEN / "store-dump-crashed"
    manifest = json.loads((crashed / "manifest.json").read_text())
    result = store_audit.run(spark, str(crashed))
    assert result.summary["records"] == manifest["store"]["records"]
    assert result.summary["commitlogEnd"] == manifest["store"]["commitlogMaxOffset"]
    # SIGKILL left no torn record and every acknowledged send dispatched: only the Admin orphans.
    assert result.kinds() == {"orphan_record": ADMIN_ORPHANS}
    acked = manifest["acknowledgedBeforeKill"]
    found = (
        spark.read.format("rocketmq-commitlog")
        .option("includeBody", "false")
        .load(str(crashed))
        .filter(F.col("uniq_key").isin(*acked))
        .count()
    )
    assert found == manifest["acknowledgedCount"] == len(acked)


def _records(path: Path) -> list[tuple[int, object]]:
    return [x for x in walk_commitlog(path.read_bytes(), 0) if not isinstance(x, CorruptRegion)]


def _find(records, topic: str, queue_id: int, queue_offset: int):
    for at, m in records:
        if (m.topic, m.queue_id, m.queue_offset) == (topic, queue_id, queue_offset):
            return at, m
    raise LookupError((topic, queue_id, queue_offset))


def _cq_file(store: Path, topic: str, queue_id: int) -> Path:
    return store / "consumequeue" / topic / str(queue_id) / ("0" * 20)


def test_audit_finds_injected_damage_exactly(spark, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(STORE, store)
    log = store / "commitlog" / ("0" * 20)
    recs = _records(log)
    data = bytearray(log.read_bytes())
    expected: set[tuple] = set()

    # 1. One body byte flipped: a CRC failure, nothing else.
    at, m = _find(recs, "ProducerSync_T_golden", 0, 0)
    body_at = data.index(m.body, at)
    data[body_at] ^= 0x01
    expected.add(("crc_failure", m.topic, 0, 0, at))

    # 2. A record zeroed: a corrupt region, its queue unit left dangling, a hole in the queue's numbering.
    at, m = _find(recs, "LitePull_TAssign_golden", 0, 5)
    data[at : at + m.store_size] = bytes(m.store_size)
    next_in_queue, _ = _find(recs, "LitePull_TAssign_golden", 0, 6)
    expected |= {
        ("corrupt_region", None, None, None, at),
        ("dangling_entry", m.topic, 0, 5, at),
        ("message_offset_gap", m.topic, 0, 5, next_in_queue),  # reported at the record after the gap
    }

    # 3. A record's own offset field overwritten: misplaced.
    at, m = _find(recs, "Trace_T_golden", 0, 0)
    struct.pack_into(">q", data, at + 28, at + 7)
    expected.add(("misplaced_record", m.topic, 0, 0, at))
    log.write_bytes(bytes(data))

    # 4. A queue unit zeroed mid-queue: a hole, and the record it pointed to orphaned.
    cq = _cq_file(store, "Batch_T_golden", 3)
    units = bytearray(cq.read_bytes())
    units[4 * CQ_STORE_UNIT_SIZE : 5 * CQ_STORE_UNIT_SIZE] = bytes(CQ_STORE_UNIT_SIZE)
    cq.write_bytes(bytes(units))
    at, m = _find(recs, "Batch_T_golden", 3, 4)
    expected |= {("queue_hole", m.topic, 3, 4, 0), ("orphan_record", m.topic, 3, 4, at)}

    # 5. A queue unit pointed one past the end of the CommitLog: dangling, its record orphaned.
    cq = _cq_file(store, "Ordered_T_golden", 0)
    units = bytearray(cq.read_bytes())
    end = STORE_MANIFEST["store"]["commitlogMaxOffset"]
    struct.pack_into(">q", units, 2 * CQ_STORE_UNIT_SIZE, end)
    cq.write_bytes(bytes(units))
    at, m = _find(recs, "Ordered_T_golden", 0, 2)
    expected |= {("dangling_entry", m.topic, 0, 2, end), ("orphan_record", m.topic, 0, 2, at)}

    # 6. A queue file removed: its records orphaned (the topic is still configured).
    _cq_file(store, "Broadcast_T_golden", 2).unlink()
    for q in (0, 1):
        at, m = _find(recs, "Broadcast_T_golden", 2, q)
        expected.add(("orphan_record", m.topic, 2, q, at))

    for at, m in recs:
        if m.topic == "Admin_T_golden":
            expected.add(("orphan_record", m.topic, m.queue_id, m.queue_offset, at))

    result = store_audit.run(spark, str(store))
    found = {_key(f) for f in result.findings}
    assert found == expected
    assert len(result.findings) == len(expected)
    details = {_key(f): f["detail"] for f in result.findings}
    assert "past the end" in details[("dangling_entry", "Ordered_T_golden", 0, 2, end)]
    broadcast_at, _ = _find(recs, "Broadcast_T_golden", 2, 0)
    orphan_detail = details[("orphan_record", "Broadcast_T_golden", 2, 0, broadcast_at)]
    assert orphan_detail == "no consume queue for this topic/queue"  # the topic is still configured
    assert result.summary["corruptRegions"] == 1
    assert result.summary["records"] == STORE_MANIFEST["store"]["records"] - 1


def _write_store(root: Path, messages: list[dict], file_size: int = 64 * 1024) -> None:
    """A store written by rocketpy.store (small files, so the CommitLog spans several)."""
    from rocketpy.store import MessageExtBrokerInner, MessageStore, MessageStoreConfig

    cfg = MessageStoreConfig(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=file_size,
        mapped_file_size_consume_queue=CQ_STORE_UNIT_SIZE * 50,
        max_hash_slot_num=100,
        max_index_num=400,
    )
    st = MessageStore(cfg)
    st.open()
    try:
        for m in messages:
            result = st.put_message(
                MessageExtBrokerInner(
                    topic=m["topic"],
                    body=m["body"],
                    queue_id=m.get("queue_id", 0),
                    properties=m["properties"],
                    born_host="127.0.0.1:50000",
                    store_host="127.0.0.1:10911",
                )
            )
            assert result.status.name == "PUT_OK"
    finally:
        st.close()


def _synthetic_messages(n: int) -> list[dict]:
    return [
        {
            "topic": f"W_T{i % 3}",
            "queue_id": i % 2,
            "body": bytes([65 + i % 26]) * (200 + i),
            "properties": {"KEYS": f"k{i}", "TAGS": "T", "UNIQ_KEY": f"{i:032X}"},
        }
        for i in range(n)
    ]


def test_audit_store_written_by_rocketpy(spark, tmp_path):
    store = tmp_path / "w"
    _write_store(store, _synthetic_messages(300))
    files = sorted((store / "commitlog").iterdir())
    assert len(files) >= 3
    result = store_audit.run(spark, str(store))
    assert result.findings == []
    assert result.summary["records"] == 300
    assert result.summary["queueUnits"] == 300
    assert {t["topic"]: t["records"] for t in result.topics} == {"W_T0": 100, "W_T1": 100, "W_T2": 100}
    # Its IndexFiles read back too: UNIQ_KEY and KEYS of each message, across files.
    assert spark.read.format("rocketmq-index").load(str(store)).count() == 600

    # A CommitLog file lost from the middle: a file gap, and every unit into it dangling.
    lost = _records(files[1])
    files[1].unlink()
    result = store_audit.run(spark, str(store))
    kinds = result.kinds()
    assert kinds["commitlog_file_gap"] == 1
    assert kinds["dangling_entry"] == len(lost) > 0
    assert result.summary["records"] == 300 - len(lost)


# -- message trace --------------------------------------------------------------------------

PUSH_RETRY = next(m for m in CAPTURE_MANIFESTS if m.get("scenario") == "PushRetry")
RETRIED = next(p for p in PUSH_RETRY["produced"] if p["keys"] == "retry-me")


@pytest.fixture(scope="module")
def retry_trace(spark):
    # Start from the offset msg id the producer was told: the trace must widen it to the UNIQ_KEY.
    return message_trace.run(spark, [RETRIED["offsetMsgId"]], captures=[str(CAPTURES)], store=str(STORE))


def test_trace_follows_a_retried_message(retry_trace):
    t = retry_trace
    assert RETRIED["uniqKey"] in t.uniq_keys
    events = Counter(e["event"] for e in t.events)
    # Sent once, stored, pulled three times (first delivery + two retries), sent back twice,
    # each time parked in SCHEDULE_TOPIC_XXXX (delay level 1) then re-put into %RETRY%.
    assert events == {
        "sent": 1,
        "send_result": 1,
        "stored": 1,
        "pulled": 3,
        "sent_back": 2,
        "scheduled": 2,
        "retry": 2,
    }
    sent = t.of("sent")[0]
    assert sent["group"] == "PushRetry_PG_golden" and sent["topic"] == RETRIED["topic"]
    result = t.of("send_result")[0]
    assert result["msg_id"] == RETRIED["offsetMsgId"] and result["queue_offset"] == RETRIED["queueOffset"]
    stored = t.of("stored")[0]
    assert stored["msg_id"] == RETRIED["offsetMsgId"] and stored["queue_id"] == RETRIED["queueId"]
    pulled = t.of("pulled")
    assert {e["group"] for e in pulled} == {"PushRetry_CG_golden"}
    assert [e["topic"] for e in pulled] == [RETRIED["topic"], *["%RETRY%PushRetry_CG_golden"] * 2]
    assert all(e["topic"] == "%RETRY%PushRetry_CG_golden" for e in t.of("retry"))
    assert {e["commit_log_offset"] for e in t.of("sent_back")} == {e["commit_log_offset"] for e in pulled} - {
        pulled[-1]["commit_log_offset"]
    }
    times = [e["time"] for e in t.events]
    assert times == sorted(times)


def test_trace_by_key_from_captures_alone(spark):
    t = message_trace.run(spark, [], keys=["retry-me"], captures=[str(CAPTURES / "05-PushRetry.pcap")])
    assert t.uniq_keys == [RETRIED["uniqKey"]]
    assert Counter(e["event"] for e in t.events) == {"sent": 1, "send_result": 1, "pulled": 3, "sent_back": 2}


def test_trace_transaction_rollback_and_check(spark):
    tx = next(m for m in CAPTURE_MANIFESTS if m.get("scenario") == "Transaction")
    unknown = next(p for p in tx["produced"] if p["keys"] == "tx-UNKNOW")
    t = message_trace.run(
        spark, [unknown["uniqKey"]], captures=[str(CAPTURES / "08-Transaction.pcap")], store=str(STORE)
    )
    kinds = [e["event"] for e in t.events]
    assert kinds[0] == "sent" and "half" in kinds and "check_transaction" in kinds
    ends = t.of("end_transaction")
    assert [e["detail"] for e in ends] == ["unknown", "commit (from a broker check)"]
    assert kinds.index("check_transaction") < kinds.index("stored")


def _shifted(pcap: Path, out: Path, us: int) -> Path:
    """A copy of a classic pcap with every record's time moved by ``us`` microseconds."""
    data = bytearray(pcap.read_bytes())
    assert data[:4] == b"\xd4\xc3\xb2\xa1"  # little-endian, microseconds
    pos = 24
    while pos + 16 <= len(data):
        sec, usec, incl, _ = struct.unpack_from("<IIII", data, pos)
        total = sec * 1_000_000 + usec + us
        struct.pack_into("<II", data, pos, total // 1_000_000, total % 1_000_000)
        pos += 16 + incl
    out.write_bytes(bytes(data))
    return out


def test_trace_puts_a_record_stored_in_its_send_s_millisecond_after_the_send(spark, tmp_path):
    """The broker stamps milliseconds, the capture microseconds: moved 0.8 ms later, the golden capture has the
    third message sent at .069428 and the store has it at .069000. It was listed stored, then sent."""
    from datetime import timedelta

    sync = next(m for m in CAPTURE_MANIFESTS if m.get("scenario") == "ProducerSync")
    third = sync["produced"][2]  # sent at .068628 in the capture, stored at .069 (the first two 13 ms apart)
    capture = _shifted(CAPTURES / "01-ProducerSync.pcap", tmp_path / "sync.pcap", 800)
    t = message_trace.run(spark, [third["uniqKey"]], captures=[str(capture)], store=str(STORE))
    sent, stored = t.of("sent")[0]["time"], t.of("stored")[0]["time"]
    assert stored < sent < stored + timedelta(milliseconds=1)  # the tie: one millisecond, the send later in it
    assert [e["event"] for e in t.events] == ["sent", "stored", "send_result", "pulled"]


def test_trace_finds_dlq_copies(spark, tmp_path):
    uniq = "AB" * 16
    base = {"body": b"x", "properties": {"UNIQ_KEY": uniq, "KEYS": "dead-letter"}}
    _write_store(
        tmp_path / "s",
        [
            {**base, "topic": "Orders"},
            {**base, "topic": "%RETRY%G", "properties": {**base["properties"], "RETRY_TOPIC": "Orders"}},
            {**base, "topic": "%DLQ%G"},
            {"topic": "Orders", "body": b"y", "properties": {"UNIQ_KEY": "CD" * 16}},
        ],
    )
    t = message_trace.run(spark, [], keys=["dead-letter"], store=str(tmp_path / "s"), out=str(tmp_path / "out"))
    assert [e["event"] for e in t.events] == ["stored", "retry", "dlq"]
    assert spark.read.parquet(str(tmp_path / "out" / "events")).count() == 3


# -- traffic report -------------------------------------------------------------------------


def test_traffic_report_matches_manifests(spark, tmp_path):
    r = traffic_report.run(spark, [str(CAPTURES)], str(tmp_path / "out"))
    traffic = [m["traffic"] for m in CAPTURE_MANIFESTS]
    assert r.summary["frames"] == sum(t["frames"] for t in traffic)
    assert r.summary["requests"] == sum(t["requestFrames"] for t in traffic)
    assert r.summary["captures"] == len(traffic)
    assert r.summary["unanswered_requests"] == sum(sum(t["requestsWithoutResponse"].values()) for t in traffic)
    assert r.summary["unpaired_responses"] == 0
    # Latency: one sample per answered request, percentiles ordered.
    answered: Counter = Counter()
    failures: Counter = Counter()
    for t in traffic:
        for req, answers in t["responsesByRequest"].items():
            answered[int(req.split()[0])] += sum(answers.values())
            failures.update({code: n for code, n in answers.items() if not code.startswith("0 ")})
    assert {row["request_code"]: row["count"] for row in r.latency} == dict(answered)
    for row in r.latency:
        assert 0 <= row["p50_ms"] <= row["p90_ms"] <= row["p99_ms"] <= row["max_ms"]
    # Errors over time add up to the non-success answers.
    by_code: Counter = Counter()
    for row in r.errors:
        by_code[f"{row['response_code']} {row['response_code_name']}"] += row["count"]
    assert by_code == failures
    # Messages sent per topic: every produced message, batches counted entry by entry.
    # (a send that failed in the client for want of a route, the master/slave capture's with the master down,
    # never went out; the ACL capture's refused send did)
    produced: Counter = Counter(
        p["topic"]
        for m in CAPTURE_MANIFESTS
        for p in m.get("produced", [])
        if "No route info" not in p.get("error", "")
    )
    # a send that went out and was never answered counts too (the DLedger capture's to the leader just killed,
    # which the client sent again to the new leader)
    for m in CAPTURE_MANIFESTS:
        lost = m["traffic"]["requestsWithoutResponse"].get("310 SEND_MESSAGE_V2", 0)
        if lost:
            produced[m["produced"][0]["topic"]] += lost
    topics = {t["topic"]: t for t in r.topics}
    for topic, n in produced.items():
        assert topics[topic]["messages_sent"] == n, topic
    assert topics["Batch_T_golden"]["send_requests"] == 1
    received: Counter = Counter(
        rc["topic"] for m in CAPTURE_MANIFESTS if m.get("scenario") == "Broadcast" for rc in m["received"]
    )
    assert topics["Broadcast_T_golden"]["messages_pulled"] == received["Broadcast_T_golden"]
    for name in ("topics", "clients", "latency", "errors"):
        assert (tmp_path / "out" / name).is_dir()


# -- the scripts --------------------------------------------------------------------------------

JOBS = ["store_audit", "message_trace", "traffic_report", "consumer_lag", "replica_audit"]


@pytest.mark.parametrize("job", JOBS)
def test_job_script_help(job):
    out = subprocess.run(
        [sys.executable, str(ROOT / "spark" / "jobs" / f"{job}.py"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "--master" in out.stdout


def test_job_mains_in_process(spark, capsys, tmp_path):
    # main() reuses the running session (getOrCreate), as a notebook or a test would.
    pcap = str(CAPTURES / "05-PushRetry.pcap")
    assert traffic_report.main([pcap, "--master", "local[2]", "--log-level", "ERROR"]) == 0
    assert "latency by request code" in capsys.readouterr().out
    assert message_trace.main(["--key", "retry-me", "--captures", pcap, "--json", "--log-level", "ERROR"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["uniqKeys"] == [RETRIED["uniqKey"]]
    assert message_trace.main(["--key", "no-such-key", "--captures", pcap, "--log-level", "ERROR"]) == 1
    assert "nothing found" in capsys.readouterr().out
    store = tmp_path / "s"
    shutil.copytree(STORE, store)
    data = bytearray((store / "commitlog" / ("0" * 20)).read_bytes())
    data[100] ^= 0xFF  # inside the first record's body
    (store / "commitlog" / ("0" * 20)).write_bytes(bytes(data))
    assert store_audit.main([str(store), "--fail-on-findings", "--log-level", "ERROR"]) == 2
    assert "crc_failure" in capsys.readouterr().out


# -- consumer lag ----------------------------------------------------------------------


def test_consumer_lag_of_the_golden_store(spark, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(STORE, store)
    # Batch_CG_golden read all 10 messages of queue 3; say it committed 4: a lag of 6.
    path = store / "config" / "consumerOffset.json"
    text = path.read_text()
    assert '"Batch_T_golden@Batch_CG_golden":{0:0,1:0,2:0,3:10' in text
    path.write_text(
        text.replace(
            '"Batch_T_golden@Batch_CG_golden":{0:0,1:0,2:0,3:10', '"Batch_T_golden@Batch_CG_golden":{0:0,1:0,2:0,3:4'
        )
    )
    result = consumer_lag.run(spark, str(store), str(tmp_path / "out"))
    rows = {(r["group"], r["topic"], r["queue_id"]): r for r in result.rows}
    batch = rows[("Batch_CG_golden", "Batch_T_golden", 3)]
    assert (batch["consumer_offset"], batch["min_offset"], batch["max_offset"], batch["lag"]) == (4, 0, 10, 6)
    assert result.summary["lagByGroup"]["Batch_CG_golden"] == 6
    # Every committed offset is a row; queues with units get the queue's bounds.
    committed = consumer_lag.committed_offsets(str(store))
    assert len(result.rows) == len(committed)
    expected_max = STORE_MANIFEST["store"]["consumeQueues"]
    for (_group, topic, qid), r in rows.items():
        q = expected_max.get(f"{topic}/{qid}")
        if q and q["entries"]:
            assert r["max_offset"] == q["firstQueueOffset"] + q["entries"]
            assert r["lag"] == max(0, r["max_offset"] - r["consumer_offset"])
    assert (tmp_path / "out" / "summary.json").exists()


def test_consumer_lag_main_prints_json_and_refuses_bad_offsets(spark, capsys, tmp_path):
    assert consumer_lag.main([str(STORE), "--json", "--log-level", "ERROR"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {"group", "topic", "queue_id", "lag"} <= set(lines[0])
    store = tmp_path / "store"
    (store / "config").mkdir(parents=True)
    (store / "config" / "consumerOffset.json").write_text("{not json")
    assert consumer_lag.main([str(store)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("cannot read the consumer offsets") and len(err.strip().splitlines()) == 1


# -- replica audit ----------------------------------------------------------------------


def test_replica_audit_finds_what_the_slave_lacks_and_where_it_differs(spark, tmp_path):
    slave = tmp_path / "slave"
    shutil.copytree(STORE, slave)
    log = slave / "commitlog" / "00000000000000000000"
    data = bytearray(log.read_bytes())
    good = [x for x in walk_commitlog(bytes(data), 0) if not isinstance(x, CorruptRegion)]
    cut = good[100][0]
    data[cut:] = bytes(len(data) - cut)  # the slave stopped replicating at record 100
    at, msg = next((a, m) for a, m in good[:100] if m.body)
    data[data.find(msg.body, at)] ^= 0x01  # one replicated body byte went bad
    log.write_bytes(bytes(data))
    result = replica_audit.run(spark, str(STORE), str(slave), str(tmp_path / "out"))
    kinds = Counter(f["kind"] for f in result.findings)
    assert kinds["missing_on_slave"] == len(good) - 100
    assert all("not replicated yet" in f["detail"] for f in result.findings if f["kind"] == "missing_on_slave")
    assert result.summary["slave"]["end"] == cut
    (bad,) = [f for f in result.findings if f["kind"] == "differs"]
    assert bad["commit_log_offset"] == at and bad["detail"] == "fields differ: crc_ok"
    assert set(kinds) == {"missing_on_slave", "differs"}
    assert result.summary["findings"] == len(result.findings)


def test_replica_audit_of_the_java_master_and_slave_finds_nothing(spark):
    ha = GOLDEN / "store-dump-ha"  # vendored from ../shared/store-dump-ha
    if not ha.is_dir():
        pytest.skip(f"no vendored {ha} in this checkout")
    result = replica_audit.run(spark, str(ha / "master"), str(ha / "slave"))
    assert result.summary["findings"] == 0
    assert result.summary["master"]["records"] == result.summary["slave"]["records"] == 20
