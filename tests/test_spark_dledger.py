"""Spark's store source, the lake and the pcap source over DLedger data (the vendored Java 4.9.8 group).

A DLedger broker's CommitLog is its ledger: the rows are the CommitLog source's (the message record
of each entry at ``commit_log_offset = pos + 48``) plus the entry's index and term, whatever the
split size; the pcap source decodes the DLedger RPC on the peer ports as ``rocketpy sniff`` does.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("pyarrow", reason="pyarrow is not installed (pip install -e '.[spark]')")
pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from golden import CAPTURES, STORE_DUMP_DLEDGER  # noqa: E402

from rocketpy.cli import main as cli_main  # noqa: E402
from rocketpy.spark import sources  # noqa: E402
from rocketpy.spark.commitlog import commitlog_batches, commitlog_rows_batches  # noqa: E402
from rocketpy.spark.lake import Lake, export_pcaps, export_store  # noqa: E402
from rocketpy.spark.pcap import PcapOptions, pcap_batches  # noqa: E402
from rocketpy.store.dledger_ledger import DLedgerLedger, find_ledger_dirs  # noqa: E402

pytestmark = pytest.mark.timeout(120)
NODES = ("n0", "n1", "n2")
SPLITS = ("4096", "5000", "64k", "128m")


def _rows(path: Path, **options: str) -> list[dict]:
    reader = sources._CommitLogReader({"path": str(path), **options})
    return [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]


def _dump(store: Path, capsys: pytest.CaptureFixture[str]) -> list[dict]:
    capsys.readouterr()
    assert cli_main(["store", "dump", "--json", str(store)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("node", NODES)
@pytest.mark.parametrize("split", SPLITS)
def test_rows_are_what_store_dump_and_the_ledger_list(node: str, split: str, capsys) -> None:
    store = STORE_DUMP_DLEDGER / node
    rows = _rows(store, splitsize=split)
    dumped = _dump(store, capsys)
    entries = [e for ledger in find_ledger_dirs(store) for e in DLedgerLedger(ledger).entries()]
    assert len(rows) == len(dumped) == len(entries) == 50
    assert {r["record_type"] for r in rows} == {"message"}
    assert all(r["crc_ok"] for r in rows)
    assert [(r["commit_log_offset"], r["dledger_index"], r["dledger_term"], r["store_size"]) for r in rows] == [
        (e.pos + 48, e.index, e.term, len(e.body)) for e in entries
    ]
    assert [
        (
            r["commit_log_offset"],
            r["physical_offset"],
            r["msg_id"],
            r["uniq_key"],
            r["topic"],
            r["queue_id"],
            r["queue_offset"],
            r["tags"],
            r["born_host"],
            r["store_host"],
            r["store_timestamp"],
            r["body"].decode(),
        )
        for r in rows
    ] == [
        (
            d["commitLogOffset"],
            d["commitLogOffset"],
            d["offsetMsgId"],
            d["uniqKey"],
            d["topic"],
            d["queueId"],
            d["queueOffset"],
            d["tags"],
            d["bornHost"],
            d["storeHost"],
            d["storeTimestamp"],
            d["body"],
        )
        for d in dumped
    ]
    # the failover shows: entries 0-29 of term 1 (led by n1), 30-49 of term 2 (led by n2)
    assert [r["dledger_term"] for r in rows] == [1] * 30 + [2] * 20


def test_columns_equal_the_codec_reference_and_the_ledger_dir_reads_alone() -> None:
    data = next((STORE_DUMP_DLEDGER / "n1" / "dledger-n1" / "data").iterdir())
    columns = [r for b in commitlog_batches(str(data), 0) for r in b.to_pylist()]
    reference = [r for b in commitlog_rows_batches(str(data), 0) for r in b.to_pylist()]
    assert columns == reference and len(columns) == 50
    for given in (STORE_DUMP_DLEDGER / "n1" / "dledger-n1", data.parent, data):
        assert _rows(given) == columns


def _damaged(tmp_path: Path, without_index: bool) -> tuple[Path, list]:
    store = tmp_path / "n0"
    shutil.copytree(STORE_DUMP_DLEDGER / "n0", store)
    entries = list(DLedgerLedger(store / "dledger-n0").entries())
    data = store / "dledger-n0" / "data" / "00000000000000000000"
    raw = bytearray(data.read_bytes())
    raw[entries[10].pos : entries[10].pos + 8] = b"\xde\xad\xbe\xef" * 2  # entry 10's header smashed
    body = entries[20].pos + 48
    raw[body + 4 : body + 8] = b"\0\0\0\0"  # entry 20's record has no magic: no message record
    data.write_bytes(bytes(raw))
    if without_index:
        shutil.rmtree(store / "dledger-n0" / "index")
    return store, entries


@pytest.mark.parametrize("without_index", [False, True], ids=["index", "no-index"])
@pytest.mark.parametrize("split", ("4096", "1000", "128m"))
def test_damage_is_a_corrupt_row_and_the_rest_still_reads(tmp_path: Path, without_index: bool, split: str) -> None:
    store, entries = _damaged(tmp_path, without_index)
    rows = _rows(store, splitsize=split)
    corrupt = [r for r in rows if r["record_type"] == "corrupt"]
    assert [(r["commit_log_offset"], r["store_size"]) for r in corrupt] == [
        (entries[10].pos, entries[10].entry_size),
        (entries[20].pos, entries[20].entry_size),
    ]
    good = [r for r in rows if r["record_type"] == "message"]
    assert [r["dledger_index"] for r in good] == [i for i in range(50) if i not in (10, 20)]


def test_topic_filter_through_the_consume_queues_keeps_index_and_term() -> None:
    """ConsumeQueue units name records at pos + 48: the pushed-down topic read finds the same rows."""
    from pyspark.sql.datasource import EqualTo

    store = STORE_DUMP_DLEDGER / "n2"
    reader = sources._CommitLogReader({"path": str(store)})
    list(reader.pushFilters([EqualTo(("topic",), "DlTopic")]))
    parts = reader.partitions()
    assert any(isinstance(p, sources.QueuePartition) for p in parts)
    got = sorted(
        (r for p in parts for b in reader.read(p) for r in b.to_pylist()), key=lambda r: r["commit_log_offset"]
    )
    assert got == _rows(store)


def test_lake_export_holds_the_sources_rows_and_resumes(tmp_path: Path) -> None:
    store = tmp_path / "n2"
    shutil.copytree(STORE_DUMP_DLEDGER / "n2", store)
    lake_dir = tmp_path / "lake"
    first = export_store(str(store), str(lake_dir))
    assert first.rows["messages"] == 50 and first.rows.get("damage", 0) == 0
    lake = Lake(str(lake_dir))
    table = sorted(lake.read_table("messages").to_pylist(), key=lambda r: r["commit_log_offset"])
    assert table == _rows(store)
    assert [r["dledger_index"] for r in table] == list(range(50))
    again = export_store(str(store), str(lake_dir))  # nothing changed: nothing read
    assert again.mode == "incremental" and again.bytes_read == 0


def test_pcap_rows_decode_dledger_as_sniff_does(tmp_path: Path, capsys) -> None:
    from rocketpy.sniffer.cli import main as sniff_main

    pcap = CAPTURES / "16-dledger.pcap"
    rows = [r for b in pcap_batches(str(pcap)) for r in b.to_pylist()]
    capsys.readouterr()
    assert sniff_main(["sniff", "-r", str(pcap), "--json", "--no-progress"]) == 0
    sniffed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    want = Counter((o["opaque"], o["is_response"], o["dledger"]) for o in sniffed if "dledger" in o)
    got = Counter((r["opaque"], r["kind"] == "response", r["summary"]) for r in rows if r["summary"] is not None)
    assert sum(got.values()) == sum(want.values()) == 692
    assert got == want
    manifest = json.loads(pcap.with_suffix(".json").read_text())["dledger"]
    pushes = [r for r in rows if r["kind"] == "request" and r["request_code_name"] == "PUSH"]
    assert Counter(r["dledger_push_type"] for r in pushes) == Counter(
        {k: v["requests"] for k, v in manifest["pushTypes"].items()}
    )
    replies = [r for r in rows if r["kind"] == "response" and r["summary"] is not None]
    assert all(r["code_name"].endswith("(DLedger)") and r["code"] == 200 for r in replies)
    assert {r["dledger_result"] for r in replies} == {"SUCCESS", "NOT_FOLLOWER", "INCONSISTENT_STATE", "TERM_NOT_READY"}
    # exploded, the entries a leader pushes are the messages it stored
    exploded = [r for b in pcap_batches(str(pcap), PcapOptions(explode_messages=True)) for r in b.to_pylist()]
    carried = [r for r in exploded if r["summary"] is not None and r["msg_topic"] is not None]
    assert len(carried) == 109
    assert {r["msg_commit_log_offset"] for r in carried} == {
        e.pos + 48 for e in DLedgerLedger(STORE_DUMP_DLEDGER / "n2" / "dledger-n2").entries()
    }
    lake = tmp_path / "lake"
    export_pcaps([str(pcap)], str(lake))
    frames = Lake(str(lake)).read_table("frames").to_pylist()
    assert sum(1 for r in frames if r["summary"] is not None and r["msg_index"] in (None, 0)) >= 692


@pytest.mark.parametrize("split", ("4096", "1000"))
def test_entries_the_index_does_not_name_yet_are_still_read(tmp_path: Path, split: str) -> None:
    """Splits stop where the index's entries end, the last one open: entries appended after the
    index (the broker writes data, then index) are read by it."""
    store = tmp_path / "n1"
    shutil.copytree(STORE_DUMP_DLEDGER / "n1", store)
    index = store / "dledger-n1" / "index" / "00000000000000000000"
    index.write_bytes(index.read_bytes()[: 20 * 32])  # the index names entries 0-19 only
    reader = sources._CommitLogReader({"path": str(store), "splitsize": split})
    parts = reader.partitions()
    assert parts[-1].end is None and len(parts) < 16  # not one per 4 KiB of the 4 MiB file
    rows = [r for p in parts for b in reader.read(p) for r in b.to_pylist()]
    assert [r["dledger_index"] for r in rows] == list(range(50))


def test_rows_of_a_divided_store_are_its_old_commitlog_then_its_ledger(tmp_path: Path, capsys) -> None:
    """A plain store that became a DLedger member: the old CommitLog's records (no dledger columns), then the
    ledger's entries above the divided offset, as `rocketpy store dump` lists them."""
    from test_dledger_store import make_divided_store

    before, after = make_divided_store(tmp_path, 300, 10)
    rows = [r for r in _rows(tmp_path) if r["record_type"] == "message"]
    assert [r["commit_log_offset"] for r in rows] == [r.append.wrote_offset for r in before + after]
    assert [r["dledger_index"] for r in rows] == [None] * 300 + list(range(10))
    assert [r["commit_log_offset"] for r in rows] == [d["commitLogOffset"] for d in _dump(tmp_path, capsys)]
