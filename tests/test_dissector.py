"""codecs/rocketmq.lua: generated from the codecs, and decoding the golden captures as rocketpy does.

The tshark comparison needs Debian's ``tshark`` (Wireshark 4.0 with Lua); it skips,
saying so, where tshark is not installed.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from golden import PCAPS

from rocketpy.sniffer.cli import main as sniff_main

ROOT = Path(__file__).resolve().parent.parent
LUA = ROOT / "codecs" / "rocketmq.lua"
TSHARK = shutil.which("tshark")
ids = [p.stem for p in PCAPS]

needs_tshark = pytest.mark.skipif(
    TSHARK is None,
    reason="tshark not installed (apt-get install -y tshark) - the Lua dissector is not checked against rocketpy",
)


def test_dissector_is_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_dissector.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_dissector_names_every_code_and_header_field() -> None:
    from rocketpy.codecs import RequestCode, ResponseCode
    from rocketpy.codecs.headers.registry import HEADER_TYPES

    text = LUA.read_text()
    for code in RequestCode:
        assert f'[{int(code)}] = "{code.name}"' in text
    for code in ResponseCode:
        assert f'[{int(code)}] = "{code.name}"' in text
    for cls in HEADER_TYPES:
        assert f"  {cls.__name__} = {{" in text
        for spec in cls.fields_spec:
            assert f'["{spec.java_name}"]' in text
    assert "dissect_tcp_pdus" in text


@functools.cache
def _tshark_version() -> str:
    assert TSHARK is not None
    return subprocess.run([TSHARK, "-v"], capture_output=True, text=True).stdout


def tshark_pdus(pcap: Path, *options: str) -> list[dict[str, Any]]:
    """Every RocketMQ PDU tshark decodes with the dissector, in order, as plain facts."""
    assert TSHARK is not None
    # Wireshark's Lua refuses to run user scripts as root unless init.lua allows it (Debian's does);
    # -o lua settings are not preferences in 4.0, so the script is handed over with -X only.
    cmd = [
        TSHARK,
        "-n",
        "-r",
        str(pcap),
        "-X",
        f"lua_script:{LUA}",
        "-Y",
        "rocketmq",
        "-T",
        "json",
        "--no-duplicate-keys",
        "-J",
        "frame rocketmq",
        *options,
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Lua: Error" not in result.stderr, result.stderr  # the script failed to load
    assert "_ws.lua.error" not in result.stdout, "the dissector raised a Lua error on a packet"
    packets = json.loads(result.stdout or "[]")
    out = []
    for packet in packets:
        layers = packet["_source"]["layers"]
        number = int(layers["frame"]["frame.number"])
        pdus = layers["rocketmq"]
        for pdu in pdus if isinstance(pdus, list) else [pdus]:
            out.append(_pdu_facts(number, pdu))
    return out


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _pdu_facts(number: int, pdu: dict[str, Any]) -> dict[str, Any]:
    header = pdu.get("rocketmq.header_tree") or pdu["rocketmq.header"]  # FT_NONE: children under its name
    ext = None
    if "rocketmq.ext_count" in header:
        tree = header.get("rocketmq.ext_count_tree", {})
        ext = {}
        for item in _as_list(tree.get("rocketmq.ext_tree", [])):
            ext[item["rocketmq.ext.key"]] = item["rocketmq.ext.value"]
        assert len(ext) == int(header["rocketmq.ext_count"])
    serialize = int(pdu["rocketmq.header_info_tree"]["rocketmq.serialize_type"])
    return {
        "frame": number,
        "code": int(header["rocketmq.code"]),
        "opaque": int(header["rocketmq.opaque"]),
        "flag": int(header["rocketmq.flag"]),
        "serialize_type": {0: "JSON", 1: "ROCKETMQ"}[serialize],
        "remark": header.get("rocketmq.remark"),
        "ext_fields": ext,
        "language": header["rocketmq.language"],
        "version": int(header["rocketmq.version"]),
        "body_len": int(pdu["rocketmq.body_length"]),
        "request_code": int(pdu["rocketmq.request_for"]) if "rocketmq.request_for" in pdu else None,
    }


def sniff_json(pcap: Path, capsys: pytest.CaptureFixture[str], ha: bool = False) -> list[dict[str, Any]]:
    """The RemotingCommands ``sniff --json`` reads (or, with ``ha``, its HA units)."""
    capsys.readouterr()
    assert sniff_main(["sniff", "-r", str(pcap), "--json", "--no-progress"]) == 0
    objs = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return [o for o in objs if ("ha" in o) == ha]


def tshark_ha_units(pcap: Path) -> list[dict[str, Any]]:
    """Every HA unit tshark decodes with the dissector, in order, as plain facts."""
    assert TSHARK is not None
    cmd = [
        TSHARK,
        "-n",
        "-r",
        str(pcap),
        "-X",
        f"lua_script:{LUA}",
        "-Y",
        "rocketmq_ha",
        "-T",
        "json",
        "--no-duplicate-keys",
        "-J",
        "frame rocketmq_ha",
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Lua: Error" not in result.stderr, result.stderr
    assert "_ws.lua.error" not in result.stdout, "the dissector raised a Lua error on a packet"
    out = []
    for packet in json.loads(result.stdout or "[]"):
        layers = packet["_source"]["layers"]
        number = int(layers["frame"]["frame.number"])
        for unit in _as_list(layers["rocketmq_ha"]):
            if "rocketmq_ha.report_offset" in unit:
                out.append({"frame": number, "ha": "report", "offset": int(unit["rocketmq_ha.report_offset"])})
                continue
            records = None
            if int(unit["rocketmq_ha.size"]):
                tree = unit.get("rocketmq_ha.records_tree", {})
                records = [str(r) for r in _as_list(tree.get("rocketmq_ha.record", []))]
            out.append(
                {
                    "frame": number,
                    "ha": "transfer",
                    "offset": int(unit["rocketmq_ha.offset"]),
                    "size": int(unit["rocketmq_ha.size"]),
                    "records": records,
                }
            )
    return out


def sniff_ha_facts(pcap: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    out = []
    for o in sniff_json(pcap, capsys, ha=True):
        facts = {"frame": o["frame"], "ha": o["ha"], "offset": o["offset"]}
        if o["ha"] == "transfer":
            records = o["records"]
            facts.update(
                size=o["size"],
                records=None
                if not o["size"]
                else [f"{r['topic']}/{r['queue_id']}@{r['queue_offset']}" for r in records or []],
            )
        out.append(facts)
    return out


@needs_tshark
@pytest.mark.parametrize("pcap", PCAPS, ids=ids)
def test_tshark_with_the_dissector_agrees_with_sniff(pcap: Path, capsys: pytest.CaptureFixture[str]) -> None:
    theirs = tshark_pdus(pcap)
    ours = sniff_json(pcap, capsys)
    assert theirs, f"tshark decoded no RocketMQ PDU with {LUA} (is Lua enabled? {_tshark_version()[:200]})"
    keys = (
        "frame",
        "code",
        "opaque",
        "flag",
        "serialize_type",
        "remark",
        "ext_fields",
        "language",
        "version",
        "body_len",
    )
    mine = [{k: o[k] for k in keys} for o in ours]
    assert [{k: t[k] for k in keys} for t in theirs] == mine
    # and both paired the same responses with the same requests
    assert [t["request_code"] for t in theirs] == [o.get("request_code") for o in ours]


@needs_tshark
@pytest.mark.parametrize("pcap", [PCAPS[1], PCAPS[3], PCAPS[10], PCAPS[13]], ids=lambda p: p.stem)
@pytest.mark.parametrize("shuffle", [False, True], ids=["resegmented", "reordered"])
def test_desegmentation_agrees_with_sniff(
    pcap: Path, shuffle: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Frames cut over several segments (dissect_tcp_pdus), and reordered ones
    (with tshark's tcp.reassemble_out_of_order), decode as in rocketpy."""
    import random

    from test_sniffer_golden import load, mutate, rebuild, tcp_of, write

    def split(run: list[int], pk: list, rng: random.Random) -> list:
        pieces = []
        for i in run:
            ts, buf = pk[i]
            tcp = tcp_of(buf)[1]
            data = bytes(tcp.data)
            cuts = sorted(rng.sample(range(1, len(data)), min(2, len(data) - 1))) if len(data) > 2 else []
            start = 0
            for end in [*cuts, len(data)]:
                pieces.append((ts, rebuild(buf, tcp.seq + start, data[start:end])))
                start = end
        if shuffle:
            rng.shuffle(pieces)
        return pieces

    linktype, packets = load(pcap)
    damaged = write(tmp_path / "split.pcap", linktype, mutate(packets, split, seed=3))
    theirs = tshark_pdus(damaged, "-o", "tcp.reassemble_out_of_order:TRUE")
    ours = sniff_json(damaged, capsys)
    keys = ("frame", "code", "opaque", "flag", "serialize_type", "remark", "ext_fields", "body_len")
    assert [{k: t[k] for k in keys} for t in theirs] == [{k: o[k] for k in keys} for o in ours]


@needs_tshark
def test_tshark_decodes_the_ha_stream_as_sniff_does(capsys: pytest.CaptureFixture[str]) -> None:
    pcap = next(p for p in PCAPS if p.stem == "15-ha-master-slave")
    theirs = tshark_ha_units(pcap)
    assert len(theirs) == 50
    assert theirs == sniff_ha_facts(pcap, capsys)
    assert theirs[2] == {"frame": 70, "ha": "transfer", "offset": 0, "size": 290, "records": ["HaTopic/0@0"]}


@needs_tshark
def test_heuristic_finds_rocketmq_on_any_port(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The master/slave capture moved to ports no preference names, mixed with other traffic:
    the heuristic dissector finds every frame and HA unit that rocketpy finds, and nothing else."""
    import random

    from test_sniffer_flows import MOVED, moved, other_traffic
    from test_sniffer_golden import load, write

    pcap = next(p for p in PCAPS if p.stem == "15-ha-master-slave")
    linktype, packets = load(pcap)
    noise = other_traffic(random.Random(5), packets[0][0])
    path = write(tmp_path / "moved.pcap", linktype, sorted(moved(packets, MOVED) + noise, key=lambda p: p[0]))
    theirs = tshark_pdus(path)
    ours = sniff_json(path, capsys)
    assert len(theirs) == len(ours) == 335
    keys = ("frame", "code", "opaque", "flag", "remark", "ext_fields", "body_len")
    assert [{k: t[k] for k in keys} for t in theirs] == [{k: o[k] for k in keys} for o in ours]
    assert tshark_ha_units(path) == sniff_ha_facts(path, capsys)


def _dledger_facts(pdu: dict[str, Any]) -> dict[str, Any] | None:
    tree = pdu.get("rocketmq.dledger_tree")
    if tree is None:
        return None
    return {"class": pdu["rocketmq.dledger"], "summary": tree["rocketmq.dledger.summary"]}


@needs_tshark
def test_tshark_names_and_decodes_dledger_on_any_port(capsys: pytest.CaptureFixture[str]) -> None:
    """The DLedger capture (Raft RPC on the peer ports 4091x, which no preference names): tshark
    with the dissector names every DLedger code and says of each body what ``rocketpy sniff`` says."""
    from rocketpy.codecs.dledger import BODIES, DLedgerRequestCode

    pcap = next(p for p in PCAPS if p.stem == "16-dledger")
    assert TSHARK is not None
    result = subprocess.run(
        [TSHARK, "-n", "-r", str(pcap), "-X", f"lua_script:{LUA}", "-Y", "rocketmq.dledger", "-T", "json",
         "--no-duplicate-keys", "-J", "frame rocketmq"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "_ws.lua.error" not in result.stdout
    theirs = []
    for packet in json.loads(result.stdout):
        layers = packet["_source"]["layers"]
        for pdu in _as_list(layers["rocketmq"]):
            facts = _dledger_facts(pdu)
            if facts is not None:
                header = pdu.get("rocketmq.header_tree") or pdu["rocketmq.header"]
                facts.update(frame=int(layers["frame"]["frame.number"]), opaque=int(header["rocketmq.opaque"]))
                theirs.append(facts)
    ours = [o for o in sniff_json(pcap, capsys) if "dledger" in o]
    assert len(ours) == 692  # every DLedger frame of the capture (the manifest's count)
    assert [(t["frame"], t["opaque"], t["summary"]) for t in theirs] == [
        (o["frame"], o["opaque"], o["dledger"]) for o in ours
    ]
    classes = {t["class"] for t in theirs}
    assert classes == {"VoteRequest", "VoteResponse", "HeartBeatRequest", "HeartBeatResponse",
                       "PushEntryRequest", "PushEntryResponse"}
    text = LUA.read_text()
    for code in DLedgerRequestCode:  # named, and its bodies known, even where the capture has none
        assert f'[{int(code)}] = "{code.name}"' in text
        assert f'[{int(code)}] = {{"{BODIES[code][0].__name__}", "{BODIES[code][1].__name__}"}}' in text
    assert any(t["summary"].startswith("TRUNCATE index=0 ") for t in theirs)
    assert any(t["summary"].startswith("INCONSISTENT_STATE(406) ") for t in theirs)
