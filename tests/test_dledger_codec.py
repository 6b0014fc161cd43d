"""DLedger's RPC bodies, entries and ledger files against the Java 4.9.8 group of captures/16-dledger
and store-dump-dledger (three members, a failover and a rejoin)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from golden import CAPTURES, STORE_DUMP_DLEDGER, frames
from hypothesis import given
from hypothesis import strategies as st

from rocketpy.codecs import dledger as dl
from rocketpy.codecs.codes import request_code_name
from rocketpy.codecs.errors import CodecError
from rocketpy.codecs.message import create_offset_msg_id, decode_message
from rocketpy.sniffer.pcap import pair_responses
from rocketpy.store.dledger_ledger import DLedgerLedger, find_ledger_dirs

PCAP = CAPTURES / "16-dledger.pcap"
NODES = ("n0", "n1", "n2")


def _manifest() -> dict:
    return json.loads(PCAP.with_suffix(".json").read_text())


def _store_manifest() -> dict:
    return json.loads((STORE_DUMP_DLEDGER / "manifest.json").read_text())


def _dledger_frames() -> list:
    fs = frames(PCAP)
    pair_responses(fs)
    out = []
    for f in fs:
        cmd = f.command
        code = cmd.request_code if cmd.is_response else cmd.code
        if code is not None and dl.is_dledger_code(code):
            out.append(f)
    return out


def test_every_dledger_frame_decodes_typed_and_reencodes_to_javas_bytes() -> None:
    counts: Counter[str] = Counter()
    for f in _dledger_frames():
        cmd = f.command
        body = cmd.decode_body()
        assert isinstance(body, dl.DLedgerBase), (cmd.name, body)
        assert body.encode() == cmd.body
        if cmd.is_response:
            assert cmd.code == dl.REPLY_HEADER_CODE and not cmd.ext_fields
        else:
            counts[request_code_name(cmd.code)] += 1
    seen = _manifest()["dledger"]["codes"]
    expected = {key.split()[1]: v["requests"] for key, v in seen.items() if v["requests"]}
    assert dict(counts) == expected  # VOTE 18, HEART_BEAT 78, PUSH 250


def test_reply_results_and_push_types_are_the_ones_java_sent() -> None:
    m = _manifest()["dledger"]
    results: Counter[tuple[str, str]] = Counter()
    types: Counter[str] = Counter()
    votes: Counter[str] = Counter()
    for f in _dledger_frames():
        cmd = f.command
        body = cmd.decode_body()
        if not cmd.is_response:
            if isinstance(body, dl.PushEntryRequest):
                types[body.type.name] += 1
            continue
        req = f.request.command.decode_body()
        kind = request_code_name(cmd.request_code)
        if isinstance(req, dl.PushEntryRequest):
            kind = f"PUSH {req.type.name}"
        results[(kind, f"{body.code} {body.response_code.name}")] += 1
        if isinstance(body, dl.VoteResponse):
            votes[body.vote_result.name] += 1
    want = {(k, r): n for k, by in m["responseBodyCodes"].items() for r, n in by.items()}
    assert dict(results) == want
    assert dict(types) == {t: v["requests"] for t, v in m["pushTypes"].items()}
    assert dict(votes) == m["voteResults"]


def test_pushed_entries_are_the_bytes_the_followers_stored() -> None:
    """Every entry a PUSH carries is, encoded, the bytes at its pos in the receiving member's data file."""
    data = {n: (STORE_DUMP_DLEDGER / n / f"dledger-{n}" / "data" / "00000000000000000000").read_bytes() for n in NODES}
    carried = 0
    for f in _dledger_frames():
        cmd = f.command
        if cmd.is_response:
            continue
        body = cmd.decode_body()
        if not isinstance(body, dl.PushEntryRequest) or body.entry is None:
            continue
        entry = dl.DLedgerEntry.from_bean(body.entry)
        raw = entry.encode()
        assert data[body.remote_id][entry.pos : entry.pos + len(raw)] == raw
        assert dl.DLedgerEntry.decode(raw) == entry
        assert body.first_entry_index == body.last_entry_index == entry.index and body.count == 1
        carried += 1
    assert carried == _manifest()["dledger"]["entryChecks"]["entriesCarried"]


@pytest.mark.parametrize("node", NODES)
def test_ledger_lists_every_entry_and_message_of_the_java_store(node: str) -> None:
    ledger = DLedgerLedger(STORE_DUMP_DLEDGER / node / f"dledger-{node}")
    want = _store_manifest()["nodes"][node]["entries"]
    entries = list(ledger.entries())
    assert [(e.index, e.term, e.pos, e.entry_size) for e in entries] == [
        (w["index"], w["term"], w["pos"], w["size"]) for w in want
    ]
    assert [(u.index, u.pos, u.size, u.term) for u in ledger.index_units()] == [
        (e.index, e.pos, e.entry_size, e.term) for e in entries
    ]
    by_uniq = {msg["msgId"]: msg for msg in _store_manifest()["messages"]}
    for e in entries:
        record = decode_message(e.body, check_crc=True)
        assert record.commit_log_offset == e.body_offset  # pos + 48: what ConsumeQueue units point at
        produced = by_uniq[record.properties["UNIQ_KEY"]]
        assert produced["offsetMsgId"] == create_offset_msg_id(produced["broker"], e.body_offset)
        assert produced["dledgerEntry"]["index"] == e.index and record.body.decode() == produced["body"]
    state = ledger.state()
    assert (state.committed_index, state.end_index, state.current_term) == (49, 49, 2)
    assert ledger.check() == []
    assert find_ledger_dirs(STORE_DUMP_DLEDGER / node) == [ledger.path]


def test_ledger_check_names_a_damaged_entry(tmp_path) -> None:
    src = STORE_DUMP_DLEDGER / "n0" / "dledger-n0"
    dst = tmp_path / "dledger-n0"
    for sub in ("data", "index"):
        (dst / sub).mkdir(parents=True)
        for p in (src / sub).iterdir():
            (dst / sub / p.name).write_bytes(p.read_bytes())
    (dst / "checkpoint").write_text("committedIndex=49\nendIndex=49\n")
    data = bytearray((dst / "data" / "00000000000000000000").read_bytes())
    data[333 + 24 : 333 + 32] = (999).to_bytes(8, "big")  # entry 1's pos no longer where it sits
    (dst / "data" / "00000000000000000000").write_bytes(bytes(data))
    problems = DLedgerLedger(dst).check()
    assert any("says it is at 999" in p for p in problems)
    assert any("past the last entry 0" in p for p in problems)


_entries = st.builds(
    dl.DLedgerEntry,
    index=st.integers(0, 2**63 - 1),
    term=st.integers(0, 2**63 - 1),
    pos=st.integers(0, 2**63 - 1),
    body=st.binary(max_size=300),
    magic=st.just(dl.CURRENT_MAGIC),
    channel=st.integers(-(2**31), 2**31 - 1),
    chain_crc=st.integers(-(2**31), 2**31 - 1),
    body_crc=st.integers(-(2**31), 2**31 - 1),
)


@given(_entries)
def test_entry_round_trips_through_bytes_bean_and_construct(entry: dl.DLedgerEntry) -> None:
    raw = entry.encode()
    assert len(raw) == dl.ENTRY_HEADER_SIZE + len(entry.body)
    parsed = dl.DLEDGER_ENTRY.parse(raw)
    assert (parsed.index, parsed.term, parsed.pos, parsed.body) == (entry.index, entry.term, entry.pos, entry.body)
    assert dl.DLedgerEntry.decode(raw) == dl.DLedgerEntry.decode(dl.DLEDGER_ENTRY.build(parsed))
    bean = entry.to_bean()
    again = dl.DLedgerEntryBean.decode(bean.encode())
    assert dl.DLedgerEntry.from_bean(again).encode() == raw


@given(_entries, st.integers(1, dl.ENTRY_HEADER_SIZE + 10))
def test_a_cut_or_lying_entry_is_a_codec_error(entry: dl.DLedgerEntry, cut: int) -> None:
    raw = entry.encode()
    with pytest.raises(CodecError):
        dl.DLedgerEntry.decode(raw[: max(0, len(raw) - cut)])
    lying = bytearray(raw)
    lying[4:8] = (len(raw) + 1).to_bytes(4, "big")
    with pytest.raises(CodecError):
        dl.DLedgerEntry.decode(bytes(lying))


def test_a_reply_to_an_unknown_code_or_a_bad_body_is_a_codec_error() -> None:
    with pytest.raises(CodecError):
        dl.decode_request_body(12345, b"{}")
    with pytest.raises(CodecError):
        dl.decode_reply_body(int(dl.DLedgerRequestCode.VOTE), b'{"term":"x"}')
    with pytest.raises(CodecError):
        dl.DLedgerEntryBean.decode(b'{"body":"not base64!"}')


def test_sniff_says_what_each_dledger_frame_did(capsys: pytest.CaptureFixture[str]) -> None:
    from rocketpy import cli

    assert cli.main(["sniff", "-r", str(PCAP)]) == 0
    lines = capsys.readouterr().out.splitlines()
    compare = next(i for i, line in enumerate(lines) if "PUSH(51004)" in line and "COMPARE index=0" in line)
    reply = next(line for line in lines[compare:] if "↩ PUSH" in line)
    assert "INCONSISTENT_STATE(406) term=1 end=-1" in reply
    assert any("VOTE(51001)" in line and "term=0 ledgerEnd=-1/-1 n1→n2" in line for line in lines)
    assert any("REJECT_EXPIRED_LEDGER_TERM" in line for line in lines)


_I32 = st.integers(-(2**31), 2**31 - 1)
_I64 = st.integers(-(2**63), 2**63 - 1)


@given(index=_I64, term=_I64, pos=_I64, magic=_I32, channel=_I32, chain=_I32, crc=_I32, body=st.binary(max_size=64))
def test_the_entry_struct_form_is_the_construct_definition(index, term, pos, magic, channel, chain, crc, body):  # type: ignore[no-untyped-def]
    from rocketpy.codecs.dledger import DLEDGER_ENTRY

    e = dl.DLedgerEntry(index=index, term=term, pos=pos, body=body, magic=magic, channel=channel, chain_crc=chain,
                     body_crc=crc)
    raw = e.encode()
    assert raw == DLEDGER_ENTRY.build(dict(magic=magic, size=48 + len(body), index=index, term=term, pos=pos,
                                           channel=channel, chain_crc=chain, body_crc=crc, body_size=len(body),
                                           body=body))
    assert dl.DLedgerEntry.decode(b"pad" + raw, 3) == e


@given(magic=_I32, pos=_I64, size=_I32, index=_I64, term=_I64)
def test_the_index_unit_struct_form_is_the_construct_definition(magic, pos, size, index, term):  # type: ignore[no-untyped-def]
    from rocketpy.codecs.dledger import DLEDGER_INDEX_UNIT, IndexUnit

    u = IndexUnit(magic, pos, size, index, term)
    assert u.encode() == DLEDGER_INDEX_UNIT.build(dict(magic=magic, pos=pos, size=size, index=index, term=term))
    assert IndexUnit.decode(u.encode()) == u


_NAMES = st.one_of(st.none(), st.text(max_size=6), st.sampled_from(["n0", "broker-dl", "a\"b", "x\\y", "é"]))


@given(code=_I32, commit=_I64, term=_I64, total=_I64, group=_NAMES, leader=_NAMES, local=_NAMES, remote=_NAMES,
       kind=st.sampled_from(list(dl.PushType)), entry=st.booleans(), index=_I64, pos=_I64, body=st.binary(max_size=40))
def test_the_push_templates_write_what_the_general_writer_writes(code, commit, term, total, group, leader, local,  # type: ignore[no-untyped-def]
                                                                  remote, kind, entry, index, pos, body):
    from rocketpy.codecs.bodies.base import JsonBody

    bean = dl.DLedgerEntry(index=index, term=term, pos=pos, body=body).to_bean() if entry else None
    req = dl.PushEntryRequest(code=code, commit_index=commit, term=term, total_size=total, group=group,
                              leader_id=leader, local_id=local, remote_id=remote, type=kind, entry=bean)
    raw = req.encode()
    assert raw == JsonBody.encode(req)  # the template, where it applies, equals the general writer
    back = dl.PushEntryRequest.decode(raw)
    assert (back.entry, back.commit_index, back.remote_id, back.type) == (bean, commit, remote, kind)
    resp = dl.PushEntryResponse(code=code, term=term, group=group, leader_id=leader, local_id=local,
                                remote_id=remote, index=None if entry else index, begin_index=pos, end_index=total,
                                count=int(entry))
    assert resp.encode() == JsonBody.encode(resp)
    assert dl.PushEntryResponse.decode(resp.encode()) == resp
