"""``rocketpy store check`` and ``store dump`` on DLedger-mode stores (the Java group of store-dump-dledger)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from golden import STORE_DUMP_DLEDGER

from rocketpy import cli
from rocketpy.store.check import check_store

NODES = ("n0", "n1", "n2")


def _messages() -> list[dict]:
    return json.loads((STORE_DUMP_DLEDGER / "manifest.json").read_text())["messages"]


@pytest.mark.parametrize("node", NODES)
def test_check_reads_the_ledger_and_the_queues_that_point_into_it(node: str) -> None:
    report = check_store(str(STORE_DUMP_DLEDGER / node))
    assert report.ok, report.errors
    sections = {s.title: s.facts for s in report.sections}
    ledger = sections[f"DLedger ledger dledger-{node}"]
    assert (ledger["entries"], ledger["first index"], ledger["last index"], ledger["committedIndex"]) == (50, 0, 49, 49)
    assert sections["ConsumeQueue"]["units"] == 50
    assert "CommitLog" not in sections  # DLedger mode: no CommitLog of its own here


def test_dump_lists_every_message_with_its_dledger_offsets(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["store", "dump", str(STORE_DUMP_DLEDGER / "n2"), "--json"]) == 0
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    want = _messages()
    assert [(g["uniqKey"], g["offsetMsgId"], g["commitLogOffset"], g["body"]) for g in got] == [
        (w["msgId"], w["offsetMsgId"], w["physicalOffset"], w["body"]) for w in want
    ]


def test_check_names_a_damaged_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "n0"
    shutil.copytree(STORE_DUMP_DLEDGER / "n0", store)
    for p in store.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    data = store / "dledger-n0" / "data" / "00000000000000000000"
    raw = bytearray(data.read_bytes())
    raw[333 + 48 + 20] ^= 0xFF  # a byte inside entry 1's message record (its queue offset field)
    data.write_bytes(bytes(raw))
    assert cli.main(["store", "check", str(store)]) == 1
    out = capsys.readouterr().out
    assert "DAMAGED" in out and "DlTopic/1@0: points at a record of DlTopic/1@-72057594037927936 (offset 381)" in out


def test_check_and_dump_read_a_divided_store_old_commitlog_then_ledger(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A plain store that became a DLedger member: check verifies the old CommitLog (sealed by a blank) and
    the ledger above it, with the queues pointing into both; dump lists the old records, then the new."""
    from test_dledger_store import make_divided_store

    before, after = make_divided_store(tmp_path, 300, 10)
    report = check_store(str(tmp_path))
    assert report.ok, report.errors
    sections = {s.title: s.facts for s in report.sections}
    assert sections["CommitLog"]["records"] == 300
    assert sections["DLedger ledger dledger-n0"]["entries"] == 10
    assert sections["ConsumeQueue"]["units"] == 310
    capsys.readouterr()
    assert cli.main(["store", "dump", str(tmp_path), "--json"]) == 0
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [g["commitLogOffset"] for g in got] == [r.append.wrote_offset for r in before + after]  # type: ignore[union-attr]
    assert cli.main(["store", "dump", str(tmp_path), "--json", "--limit", "302"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 302
