"""The master/slave capture (15-ha-master-slave) and its stores (store-dump-ha), observed.

Every HA transfer of the capture decodes; concatenated by offset they are the master's CommitLog;
the slave's store equals the master's up to the replicated offset; report and transfer cadence,
acknowledgements and the remoting frames per server port are the manifest's.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from golden import CAPTURES, GOLDEN, manifest

from rocketpy.codecs.store_records import iter_commitlog
from rocketpy.sniffer.cli import main as sniff_main
from rocketpy.sniffer.hastream import HaPairer, HaUnit
from rocketpy.sniffer.pcap import read_packets
from rocketpy.sniffer.reassembly import CapturedFrame, StreamNote, Tracker

HA_PCAP = CAPTURES / "15-ha-master-slave.pcap"
STORE_HA = GOLDEN / "store-dump-ha"
COMMITLOG = Path("commitlog") / "00000000000000000000"


@cache
def events(ports: tuple[int, ...] | None = None) -> list[CapturedFrame | StreamNote | HaUnit]:
    tracker, pairer = Tracker(ports), HaPairer()
    out: list[CapturedFrame | StreamNote | HaUnit] = []
    with open(HA_PCAP, "rb") as f:
        for pkt in read_packets(f):
            out += tracker.packet(pkt)
    out += tracker.finish()
    for ev in out:
        if isinstance(ev, HaUnit):
            pairer.add(ev)
    return out


def units(kind: str | None = None) -> list[HaUnit]:
    return [e for e in events() if isinstance(e, HaUnit) and (kind is None or e.kind == kind)]


def ha_manifest() -> dict:
    return manifest(HA_PCAP)["haStream"]


def commitlog(store: str) -> bytes:
    return (STORE_HA / store / COMMITLOG).read_bytes()


def test_no_stream_trouble_and_every_remoting_frame_read() -> None:
    evs = events()
    assert [e for e in evs if isinstance(e, StreamNote)] == []
    frames = [e for e in evs if isinstance(e, CapturedFrame)]
    assert len(frames) == manifest(HA_PCAP)["traffic"]["frames"] == 335
    assert all(f.command is not None for f in frames)


def requests_by_server_port(frames: list) -> dict[str, dict[str, int]]:
    by_port: dict[str, Counter[str]] = {}
    for fr in frames:
        if isinstance(fr, CapturedFrame) and fr.command is not None and not fr.command.is_response:
            by_port.setdefault(str(fr.conn[1][1]), Counter())[f"{fr.command.code} {fr.command.name}"] += 1
    return {p: dict(c) for p, c in by_port.items()}


def test_remoting_frames_per_server_port_match_manifest() -> None:
    """The slave's 11911 and the master's VIP 10909 are read like the default ports."""
    assert requests_by_server_port(events()) == manifest(HA_PCAP)["traffic"]["requestsByServerPort"]


def test_every_transfer_decodes_with_its_records() -> None:
    m = ha_manifest()["masterFrames"]
    transfers = units("transfer")
    assert len(transfers) == m["count"] == 25
    data = [t for t in transfers if t.data]
    assert len(data) == m["dataFrames"] == 20
    assert len(transfers) - len(data) == m["heartbeatFrames"] == 5
    assert all(279 <= t.size <= 294 for t in data)
    assert [len(t.records or []) for t in data] == [1] * 20
    # contiguous: each data transfer starts where the previous one ended, from 0 to 5656
    assert data[0].offset == m["firstOffset"] == 0
    assert all(b.offset == a.end for a, b in zip(data, data[1:], strict=False))
    assert data[-1].end == m["maxOffset"] == 5656
    detail = m["dataFramesDetail"]
    assert [(t.offset, t.size) for t in data] == [(d["offset"], d["size"]) for d in detail]
    assert [
        [(r.commit_log_offset, r.store_size, r.topic, r.queue_id, r.queue_offset) for r in t.records or []]
        for t in data
    ] == [
        [(r["physicalOffset"], r["size"], r["topic"], r["queueId"], r["queueOffset"]) for r in d["records"]]
        for d in detail
    ]


def test_transfers_concatenated_by_offset_are_the_masters_commitlog() -> None:
    master = commitlog("master")
    stream = bytearray()
    for t in sorted((t for t in units("transfer") if t.data), key=lambda t: t.offset):
        assert t.offset == len(stream)
        stream += t.data
        assert t.data == master[t.offset : t.end]
    assert bytes(stream) == master[: len(stream)]
    assert not any(master[len(stream) :])  # nothing written past what was replicated


def test_slave_store_equals_master_up_to_the_replicated_offset() -> None:
    replicated = max(r.offset for r in units("report"))
    assert replicated == 5656
    master, slave = commitlog("master"), commitlog("slave")
    assert slave[:replicated] == master[:replicated]
    assert not any(slave[replicated:])
    walk = iter_commitlog(slave)
    records = list(walk)
    assert len(records) == 20 and walk.end_offset == replicated
    store = json.loads((STORE_HA / "manifest.json").read_text())
    assert [(m.commit_log_offset, m.msg_id) for m in records] == [
        (msg["physicalOffset"], msg["offsetMsgId"]) for msg in store["messages"]
    ]
    for q in range(4):  # and the ConsumeQueues the slave built from them
        rel = Path("consumequeue") / "HaTopic" / str(q) / "00000000000000000000"
        assert (STORE_HA / "slave" / rel).read_bytes() == (STORE_HA / "master" / rel).read_bytes()


def test_records_carried_are_the_messages_produced() -> None:
    produced = [p for p in manifest(HA_PCAP)["produced"] if p.get("sendStatus") == "SEND_OK"]
    assert len(produced) == 20
    records = [r for t in units("transfer") for r in t.records or []]
    assert [(r.topic, r.queue_id, r.queue_offset, r.commit_log_offset, r.msg_id) for r in records] == [
        (p["topic"], p["queueId"], p["queueOffset"], p["physicalOffset"], p["offsetMsgId"]) for p in produced
    ]


def test_report_kinds_and_acknowledgements_match_manifest() -> None:
    m = ha_manifest()
    reports = units("report")
    assert len(reports) == m["slaveReports"]["count"] == 25
    assert dict(Counter(r.role for r in reports)) == m["slaveReports"]["byKind"]
    assert sorted({r.offset for r in reports}) == m["slaveReports"]["distinctOffsets"]
    # every data transfer is answered with exactly its end offset, within milliseconds
    for t in units("transfer"):
        if t.data:
            assert t.peer is not None and t.peer.offset == t.end
            assert t.latency is not None and 0 < t.latency < 0.005
    # the manifest times an answer from the transfer's header segment, the sniffer from its last byte
    want = [d["ackAfterMillis"] for d in m["masterFrames"]["dataFramesDetail"]]
    got = [t.latency * 1000 for t in units("transfer") if t.data and t.latency is not None]
    assert len(got) == len(want) == 20
    assert all(0 <= w - g < 1.5 for g, w in zip(got, want, strict=True))


def test_cadence_matches_manifest() -> None:
    """The slave reports first, 5 s after connecting; both sides write again after 5 s idle."""
    m = ha_manifest()
    opened = m["connection"]["openedAtMillis"] / 1000
    reports, transfers = units("report"), units("transfer")
    assert reports[0].ts - opened == pytest.approx(m["slaveReports"]["firstAtSecondsAfterConnect"], abs=0.002)
    assert transfers[0].ts - opened == pytest.approx(m["masterFrames"]["firstFrameAtSecondsAfterConnect"], abs=0.002)
    assert reports[0].ts < transfers[0].ts  # the master says nothing before the slave's first report
    assert transfers[0].offset == 0 and transfers[0].size == 0
    idle = [r for r in reports if r.role in ("initial", "keepalive")]
    gaps = [b.ts - a.ts for a, b in zip(idle, idle[1:], strict=False)]
    assert gaps == pytest.approx(m["slaveReports"]["keepaliveIntervalsSeconds"], abs=0.002)
    beats = [t for t in transfers if not t.data]
    beat_gaps = [b.ts - a.ts for a, b in zip(beats, beats[1:], strict=False)]
    assert beat_gaps == pytest.approx(m["masterFrames"]["heartbeatIntervalsSeconds"], abs=0.002)
    assert all(t.offset == 5656 for t in beats[1:])  # the idle master's heartbeat: its current offset
    # when idle, each side writes again 5 s after its own last write
    for seq in (reports, transfers):
        for a, b in zip(seq, seq[1:], strict=False):
            if b.role in ("keepalive", "heartbeat") and a.ts > opened + 6:
                assert b.ts - a.ts == pytest.approx(5.0, abs=0.03)


def test_port_narrows_to_the_connections_on_it() -> None:
    only_ha = events((10912,))
    assert {type(e) for e in only_ha} == {HaUnit}
    assert len(only_ha) == 50
    slave = events((11911,))
    assert {type(e) for e in slave} == {CapturedFrame}
    assert requests_by_server_port(slave) == {"11911": manifest(HA_PCAP)["traffic"]["requestsByServerPort"]["11911"]}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert sniff_main(["sniff", "-r", str(HA_PCAP), "--no-progress", *argv]) == 0
    return capsys.readouterr().out


def test_sniff_lines_show_the_ha_stream(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys)
    lines = out.splitlines()
    assert len(lines) == 335 + 50
    assert any("127.0.0.1:39776 → 127.0.0.1:10912  HA report offset=0  initial" in ln for ln in lines)
    assert any("127.0.0.1:39776 ← 127.0.0.1:10912  HA heartbeat offset=0" in ln for ln in lines)
    data = next(ln for ln in lines if "HA transfer offset=290 " in ln)
    assert "size=279 end=569  [HaTopic/1@0]" in data
    assert any("HA report offset=569  ack  " in ln and ln.rstrip().endswith(" ms") for ln in lines)
    assert sum("keepalive" in ln for ln in lines) == 4


def test_sniff_verbose_lists_the_records(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "-V", "--port", "10912")
    assert out.count("1 CommitLog record(s)") == 20
    assert "[0] topic=HaTopic queue_id=0 queue_offset=0 commit_log_offset=0" in out
    assert "msgId=7F00000100002A9F0000000000000000" in out
    assert "'HA message 0 via SYNC_MASTER broker-ha'" in out


def test_sniff_json_and_stats(capsys: pytest.CaptureFixture[str]) -> None:
    objs = [json.loads(ln) for ln in run(capsys, "--json", "--port", "10912", "--stats").splitlines()]
    stats = objs.pop()["stats"]
    assert [o["ha"] for o in objs].count("report") == 25 and len(objs) == 50
    first = next(o for o in objs if o["ha"] == "transfer" and o["size"])
    assert first["records"] == [
        {
            "topic": "HaTopic",
            "queue_id": 0,
            "queue_offset": 0,
            "commit_log_offset": 0,
            "store_size": 290,
            "msg_id": "7F00000100002A9F0000000000000000",
        }
    ]
    ack = next(o for o in objs if o["ha"] == "report" and o["role"] == "ack")
    assert ack["offset"] == 290 and ack["acks_offset"] == 0 and ack["paired"] and ack["latency_ms"] > 0
    ha = stats["ha"]
    assert ha["connections"] == 1 and ha["bytes"] == 5656
    assert ha["units"] == {
        "report ack": 20,
        "report initial": 1,
        "report keepalive": 4,
        "transfer data": 20,
        "transfer heartbeat": 5,
    }
    assert ha["records_by_topic"] == {"HaTopic": 20}
    assert ha["ack_latency_ms"]["count"] == 20
    text = run(capsys, "-q", "--stats")
    assert "HA replication (1 connection(s), 5656 CommitLog bytes)" in text
    assert "last reported offset 5656" in text


def test_topic_filter_keeps_the_transfers_of_the_topic(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "--topic", "HaTopic")
    assert out.count("HA transfer") == 20 and "HA report" not in out
    assert "HA " not in run(capsys, "--code", "SEND_MESSAGE_V2")


def test_spark_source_rows() -> None:
    """rocketmq-pcap: the 335 RemotingCommands by default; with haStream the 50 HA units, paired, and
    with explodeMessages one row per CommitLog record a transfer carries."""
    import pyarrow as pa

    from rocketpy.spark.pcap import PcapOptions, pcap_batches

    def rows(**opts: object) -> list[dict]:
        return pa.Table.from_batches(list(pcap_batches(str(HA_PCAP), PcapOptions(**opts)))).to_pylist()  # type: ignore[arg-type]

    plain = rows()
    assert len(plain) == 335 and {r["kind"] for r in plain} == {"request", "response"}
    ha = [r for r in rows(ha_stream=True) if r["kind"].startswith("ha_")]
    assert len(ha) == 50
    assert Counter((r["kind"], r["ha_role"]) for r in ha) == {
        ("ha_report", "initial"): 1,
        ("ha_report", "ack"): 20,
        ("ha_report", "keepalive"): 4,
        ("ha_transfer", "data"): 20,
        ("ha_transfer", "heartbeat"): 5,
    }
    assert {(r["client"], r["server"]) for r in ha} == {("127.0.0.1:39776", "127.0.0.1:10912")}
    data = [r for r in ha if r["ha_role"] == "data"]
    assert all(r["paired"] and r["ha_records"] == 1 and 0 < r["latency_ms"] < 5 for r in data)
    assert sum(r["ha_size"] for r in data) == 5656
    exploded = [r for r in rows(ha_stream=True, explode_messages=True) if r["kind"] == "ha_transfer" and r["msg_topic"]]
    produced = [p for p in manifest(HA_PCAP)["produced"] if p.get("sendStatus") == "SEND_OK"]
    assert [
        (r["msg_topic"], r["msg_queue_id"], r["msg_queue_offset"], r["msg_commit_log_offset"], r["msg_id"])
        for r in exploded
    ] == [(p["topic"], p["queueId"], p["queueOffset"], p["physicalOffset"], p["offsetMsgId"]) for p in produced]


@pytest.mark.parametrize("cuts", [(100, 1000, 1001, 2900, 5000), (7, 290, 291, 4000), tuple(range(97, 5656, 97))])
def test_records_cut_between_transfers(cuts: tuple[int, ...]) -> None:
    """Transfers are byte ranges of the CommitLog (a batch may end mid-record): each record is listed
    once, by the transfer that completes it; a decoder joining mid-record finds the next record start."""
    from rocketpy.codecs.ha import build_transfer_header
    from rocketpy.sniffer.hastream import HaDecoder

    master = commitlog("master")[:5656]
    bounds = [0, *cuts, 5656]
    stream = b"".join(build_transfer_header(a, b - a) + master[a:b] for a, b in zip(bounds, bounds[1:], strict=False))
    decoder = HaDecoder(from_master=True)
    got = decoder.feed(0.0, ("127.0.0.1", 10912), ("127.0.0.1", 40000), stream)
    records = [r for t in got for r in t.records or []]
    assert [r.commit_log_offset for r in records] == [m.commit_log_offset for m in iter_commitlog(master)]
    # joined after the first cut: the first transfer starts mid-record
    late = HaDecoder(from_master=True)
    tail = stream[12 + cuts[0] :]
    units = late.feed(0.0, ("127.0.0.1", 10912), ("127.0.0.1", 40000), tail)
    seen = [r.commit_log_offset for t in units for r in t.records or []]
    expected = [m.commit_log_offset for m in iter_commitlog(master) if m.commit_log_offset >= cuts[0]]
    assert seen == expected
