"""``rocketpy store check`` / ``rocketpy store dump`` on the golden stores and damaged copies."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from golden import STORE_DUMP, STORE_DUMP_CRASHED

from rocketpy.cli import main

MANIFEST = json.loads((STORE_DUMP / "manifest.json").read_text())


def tree_digest(root: Path) -> dict[str, tuple[str, int]]:
    return {
        str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_check_golden_is_clean_and_read_only(capsys: pytest.CaptureFixture[str]) -> None:
    before = tree_digest(STORE_DUMP)
    assert main(["store", "check", str(STORE_DUMP)]) == 0
    out = capsys.readouterr().out
    assert "OK" in out and "clean shutdown" in out and "  records: 119\n" in out
    assert not set(out) & set("│┃─━┏┗└┌")  # not a terminal: plain text
    assert tree_digest(STORE_DUMP) == before  # nothing written, not even the lock file


def test_check_crashed_reports_abort(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "check", "--json", str(STORE_DUMP_CRASHED)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and not report["cleanShutdown"]
    assert report["sections"]["CommitLog"]["valid end (max offset)"] == 42878  # numbers stay numbers
    assert report["sections"]["CommitLog"]["CRC checked"] is True


def test_check_reports_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "store"
    shutil.copytree(STORE_DUMP, root)
    path = root / "commitlog" / "00000000000000000000"
    data = bytearray(path.read_bytes())
    # flip a body byte of the second record: its CRC breaks and valid records follow it
    second = struct.unpack_from(">i", data, 0)[0]
    data[second + 100] ^= 0x55
    path.write_bytes(bytes(data))
    cq = root / "consumequeue" / "Ordered_T_golden" / "0" / "00000000000000000000"
    units = bytearray(cq.read_bytes())
    struct.pack_into(">i", units, 8, 7)  # a unit with the wrong size
    cq.write_bytes(bytes(units))
    (root / "config" / "topics.json").write_text("{broken")
    assert main(["store", "check", str(root)]) == 1
    out = capsys.readouterr().out
    assert "DAMAGED" in out and "CRC" in out and "Ordered_T_golden/0@0" in out and "topics.json" in out


def test_dump_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "dump", "--json", str(STORE_DUMP)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == MANIFEST["store"]["records"]
    first = lines[0]
    assert first["topic"] == "ProducerSync_T_golden" and first["commitLogOffset"] == 0
    assert first["offsetMsgId"] == "7F00000100002A9F0000000000000000"
    assert first["body"] == "Hello RocketMQ 0 from run golden" and first["bodyEncoding"] == "utf8"
    assert first["keys"] == "key-0 order-golden-0 k0" and first["tags"] == "TagA"
    assert first["uniqKey"] == "FD00000000000000000000000000000273F05FFD2B276BC71FE40000"
    assert first["properties"]["scenario"] == "ProducerSync"
    assert first["bornHost"] == "127.0.0.1:43610" and first["storeHost"] == "127.0.0.1:10911"
    offsets = [r["commitLogOffset"] for r in lines]
    assert offsets == sorted(offsets)
    compressed = [r for r in lines if r["sysFlag"] & 1]
    assert compressed and all(r["bodyEncoding"] == "base64" for r in compressed)
    base64.b64decode(compressed[0]["body"])


def test_dump_topic_filter_and_decompress(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "dump", "--json", "--decompress", "--topic", "ProducerSync_T_golden", str(STORE_DUMP)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == MANIFEST["store"]["recordsPerTopic"]["ProducerSync_T_golden"]
    assert all(r["topic"] == "ProducerSync_T_golden" for r in lines)
    compressed = [r for r in lines if r["sysFlag"] & 1]
    assert compressed and all(r["bodyEncoding"] == "utf8" for r in compressed)  # inflated to text


def test_dump_table(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["store", "dump", "--limit", "3", str(STORE_DUMP / "commitlog")]) == 0
    out = capsys.readouterr().out
    assert out.count("ProducerSync_T_golden") == 3 and "Hello RocketMQ 0 from run golden" in out


def _damage_second_record(root: Path) -> int:
    """Copy the golden store to ``root`` with the second record's magic code broken; its offset."""
    shutil.copytree(STORE_DUMP, root)
    path = root / "commitlog" / "00000000000000000000"
    data = bytearray(path.read_bytes())
    second = struct.unpack_from(">i", data, 0)[0]
    struct.pack_into(">i", data, second + 4, 0x12345678)
    path.write_bytes(bytes(data))
    return second


def test_check_reports_one_damaged_record_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    second = _damage_second_record(tmp_path / "store")
    assert main(["store", "check", "--json", str(tmp_path / "store")]) == 1
    report = json.loads(capsys.readouterr().out)
    commitlog = [e for e in report["errors"] if e.startswith("CommitLog:")]
    assert len(commitlog) == 1 and f"at offset {second}" in commitlog[0] and "valid records follow" in commitlog[0]
    # the queue unit of the broken record is one line, and every later unit still resolves
    cq = [e for e in report["errors"] if e.startswith("ConsumeQueue:")]
    assert cq == [f"ConsumeQueue: 1 unit(s) point into the damaged CommitLog region at {second}"]
    assert report["sections"]["CommitLog"]["records"] == 118
    assert len(report["errors"]) <= 3  # CommitLog, ConsumeQueue, index: once each


def test_dump_goes_on_past_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    second = _damage_second_record(tmp_path / "store")
    assert main(["store", "dump", "--json", str(tmp_path / "store")]) == 1
    captured = capsys.readouterr()
    lines = [json.loads(line) for line in captured.out.splitlines()]
    assert len(lines) == MANIFEST["store"]["records"] - 1
    assert second not in [r["commitLogOffset"] for r in lines]
    assert captured.err.count("damaged region") == 1 and f"offset {second}" in captured.err


def test_not_a_store_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "check", str(tmp_path)]) == 2
    assert "not a RocketMQ store" in capsys.readouterr().err
    assert main(["store", "dump", str(tmp_path)]) == 2
    assert "not a RocketMQ store" in capsys.readouterr().err
    assert main(["store", "check", str(tmp_path / "missing")]) == 2


def test_check_reads_config_as_java_and_refuses_a_bad_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--config is read as Java's Properties.load reads a .conf (continuation lines, escapes); an unreadable
    or malformed one is one line on stderr and exit 2, not a traceback."""
    good = tmp_path / "broker.conf"
    good.write_bytes(b"# the golden broker's sizes\nmappedFileSizeCommitLog = 41\\\n  94304\n"
                     b"mappedFileSizeConsumeQueue=60000\nmaxHashSlotNum=\\u0031000\nmaxIndexNum=4000\n")
    assert main(["store", "check", "--config", str(good), str(STORE_DUMP)]) == 0
    assert "OK" in capsys.readouterr().out
    bad = tmp_path / "bad.conf"
    bad.write_bytes(b"a=\\u12\n")
    for config in (bad, tmp_path / "missing.conf"):
        assert main(["store", "check", "--config", str(config), str(STORE_DUMP)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"rocketpy store check: cannot read --config {config}:") and err.count("\n") == 1
        assert "Traceback" not in err


def test_dump_and_check_print_markup_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from test_store import make_config, make_msg

    from rocketpy.store.message_store import MessageStore

    topic, root = "T[red]x", tmp_path / "st[bold]ore"
    with MessageStore(make_config(root)) as store:
        for body in (b"[/oops] x", b"[red]c[/red]"):
            assert store.put_message(make_msg(topic, 0, body, tags="[bold]t")).is_ok
    assert main(["store", "dump", str(root)]) == 0
    out = capsys.readouterr().out
    assert "[/oops] x" in out and "[red]c[/red]" in out and "[bold]t" in out and topic in out
    assert main(["store", "check", str(root)]) in (0, 1)
    assert "st[bold]ore" in capsys.readouterr().out


def test_sparse_commitlog_is_read_only_up_to_its_written_end(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from rocketpy.store.walk import written_end

    root = tmp_path / "store"
    shutil.copytree(STORE_DUMP, root)
    path = root / "commitlog" / "00000000000000000000"
    data = path.read_bytes()
    used = len(data.rstrip(b"\x00"))
    path.write_bytes(data[:used])
    with path.open("r+b") as f:
        f.truncate(len(data))  # the rest becomes a hole, as in a preallocated 1 GiB file
    end = written_end(str(path))
    if os.stat(path).st_blocks * 512 >= len(data):
        pytest.skip("this file system keeps no holes")
    assert used <= end < len(data)
    assert main(["store", "check", str(root)]) == 0 and "OK" in capsys.readouterr().out
