"""The on-disk DLedger ledger: it opens the Java group's stores, appends and truncates in their layout, and
recovers after a torn write as DLedgerMmapFileStore.recover does."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from golden import STORE_DUMP_DLEDGER

from rocketpy.codecs.dledger import BLANK_MAGIC, DLedgerEntry, DLedgerResponseCode
from rocketpy.dledger.file_ledger import INDEX_FILE_SIZE, FileLedger, load_term, persist_term
from rocketpy.dledger.ledger import LedgerError, MemoryLedger
from rocketpy.store.dledger_ledger import DLedgerLedger

DATA_SIZE = 4 * 1024 * 1024  # mappedFileSizeCommitLog of the golden group


def java_copy(tmp_path: Path, node: str = "n0") -> Path:
    """A copy of a Java member's ledger with its index file at its real length (the dump cut it)."""
    dst = tmp_path / f"dledger-{node}"
    shutil.copytree(STORE_DUMP_DLEDGER / node / f"dledger-{node}", dst)
    for p in dst.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    os.truncate(dst / "index" / "00000000000000000000", INDEX_FILE_SIZE)
    return dst


def test_opens_a_java_ledger_and_lists_what_javas_does(tmp_path: Path) -> None:
    path = java_copy(tmp_path)
    ledger = FileLedger(path, DATA_SIZE)
    ledger.load()
    want = list(DLedgerLedger(path).entries())
    assert (ledger.begin_index, ledger.end_index, ledger.end_term, ledger.committed_index) == (0, 49, 2, 49)
    assert [ledger.get(i) for i in range(50)] == want
    assert ledger.get(50) is None and ledger.get(-1) is None
    ledger.close()


def test_appends_continue_javas_layout_and_reopen(tmp_path: Path) -> None:
    path = java_copy(tmp_path)
    ledger = FileLedger(path, DATA_SIZE)
    ledger.load()
    last = ledger.get(49)
    assert last is not None
    entry = ledger.append_as_leader(b"record-50", term=3)
    assert (entry.index, entry.term, entry.pos) == (50, 3, last.pos + last.entry_size)
    ledger.update_committed_index(3, 50)
    ledger.flush()
    ledger.persist_checkpoint()
    ledger.close()
    assert (path / "checkpoint").read_text() == "committedIndex=50\nendIndex=50\n"
    assert (path / "checkpoint.bak").read_text() == "committedIndex=49\nendIndex=49\n"
    again = FileLedger(path, DATA_SIZE)
    again.load()
    assert (again.end_index, again.end_term, again.committed_index) == (50, 3, 50)
    assert again.get(50) == DLedgerEntry.decode(entry.encode())
    assert DLedgerLedger(path).check() == []  # the read-only reader agrees
    again.close()


def test_a_torn_tail_is_cut_and_a_bad_index_unit_rebuilt(tmp_path: Path) -> None:
    path = java_copy(tmp_path)
    ledger = FileLedger(path, DATA_SIZE)
    ledger.load()
    e49 = ledger.get(49)
    assert e49 is not None
    end = e49.pos + e49.entry_size
    ledger.close()
    data = path / "data" / "00000000000000000000"
    with open(data, "r+b") as f:  # a crash in the middle of entry 50's header (its pos half written)
        torn = DLedgerEntry(index=50, term=2, pos=end, body=b"x" * 200).encode()[:30]
        f.seek(end)
        f.write(torn)
    index = path / "index" / "00000000000000000000"
    with open(index, "r+b") as f:  # and unit 10 scribbled over
        f.seek(10 * 32 + 4)
        f.write(b"\xff" * 8)
    again = FileLedger(path, DATA_SIZE)
    again.load()
    assert (again.end_index, again.end_term) == (49, 2)
    assert [again.get(i) for i in range(50)] == list(DLedgerLedger(java_copy(tmp_path / "fresh")).entries())
    with open(data, "rb") as f:
        f.seek(end)
        assert f.read(60) == bytes(60)  # the torn bytes are gone, not just skipped
    again.close()


def test_entries_that_do_not_fit_start_the_next_file_after_a_blank(tmp_path: Path) -> None:
    ledger = FileLedger(tmp_path / "dledger-n0", 1024, index_file_size=32 * 64)
    ledger.load()
    for i in range(12):
        ledger.append_as_leader(bytes([i]) * 150, term=1)  # 198 bytes each: 5 to a file, then a blank
    assert [e.pos for e in (ledger.get(i) for i in range(12)) if e] == [
        0, 198, 396, 594, 792, 1024, 1222, 1420, 1618, 1816, 2048, 2246]
    first = ledger.data.files[0]
    assert int.from_bytes(first.mm[990:994], "big", signed=True) == BLANK_MAGIC
    assert int.from_bytes(first.mm[994:998], "big") == 1024 - 990
    ledger.close()
    again = FileLedger(tmp_path / "dledger-n0", 1024, index_file_size=32 * 64)
    again.load()
    assert again.end_index == 11 and again.get(11).body == bytes([11]) * 150
    with pytest.raises(LedgerError) as err:
        again.append_as_leader(b"y" * 1000, term=1)
    assert err.value.code is DLedgerResponseCode.DISK_ERROR
    again.close()


def test_follower_appends_and_truncates_like_the_memory_ledger(tmp_path: Path) -> None:
    leader = MemoryLedger()
    for i in range(6):
        leader.append_as_leader(b"m%d" % i, term=1)
    disk = FileLedger(tmp_path / "dledger-n1", 4096, index_file_size=32 * 64)
    disk.load()
    for e in leader.entries[:4]:
        disk.append_as_follower(e)
    with pytest.raises(LedgerError):
        disk.append_as_follower(leader.entries[5])  # out of order
    # a divergent entry 3 of another term is replaced by the leader's
    other = DLedgerEntry(index=3, term=2, pos=leader.entries[3].pos, body=b"other")
    disk.truncate(other)
    assert disk.get(3) == other and disk.end_index == 3
    disk.truncate(leader.entries[2])  # the same entry: kept, everything after it cut
    assert disk.end_index == 2 and disk.get(2) == leader.entries[2] and disk.get(3) is None
    for e in leader.entries[3:]:
        disk.append_as_follower(e)
    assert [disk.get(i) for i in range(6)] == leader.entries
    disk.close()


def test_term_file_round_trips_in_javas_form(tmp_path: Path) -> None:
    assert load_term(tmp_path) == (0, None)
    persist_term(tmp_path, 2, None)
    assert (tmp_path / "currterm").read_text() == "voteLeader=\ncurrTerm=2\n"
    persist_term(tmp_path, 2, "n2")
    assert (tmp_path / "currterm").read_bytes() == (STORE_DUMP_DLEDGER / "n0" / "dledger-n0" / "currterm").read_bytes()
    assert (tmp_path / "currterm.bak").read_bytes() == (
        STORE_DUMP_DLEDGER / "n0" / "dledger-n0" / "currterm.bak").read_bytes()
    assert load_term(tmp_path) == (2, "n2")
