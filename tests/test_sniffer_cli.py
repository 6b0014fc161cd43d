"""``rocketpy sniff`` from the command line: lines, -V, --json, --stats, filters, stdin, errors."""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from golden import CAPTURES, PCAPS, manifest

from rocketpy.codecs.codes import request_code_name
from rocketpy.sniffer.cli import add_parsers, main

SYNC = CAPTURES / "01-ProducerSync.pcap"
BINARY = CAPTURES / "10-SerializeRocketMQ.pcap"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_add_parsers_registers_sniff_and_proxy() -> None:
    parser = argparse.ArgumentParser()
    add_parsers(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["sniff", "-r", "x.pcap", "--code", "SEND_MESSAGE_V2", "--port", "9876,10911"])
    assert callable(args.func) and args.read == "x.pcap"
    args = parser.parse_args(["proxy", "--listen", "127.0.0.1:19876", "--upstream", "127.0.0.1:9876"])
    assert callable(args.func)


def test_rocketpy_cli_runs_sniff(capsys: pytest.CaptureFixture[str]) -> None:
    from rocketpy import cli

    assert cli.main(["sniff", "-r", str(SYNC), "--json", "-c", "2"]) == 0
    objs = json_lines(capsys.readouterr().out)
    assert [(o["name"], o["opaque"]) for o in objs] == [("GET_ROUTEINFO_BY_TOPIC", 0), ("SUCCESS", 0)]


@pytest.mark.parametrize("pcap", PCAPS, ids=[p.stem for p in PCAPS])
def test_json_lines_carry_every_command_with_its_pairing(pcap: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traffic = manifest(pcap)["traffic"]
    rc, out, _ = run(capsys, "sniff", "-r", str(pcap), "--json")
    assert rc == 0
    lines = json_lines(out)
    objs = [o for o in lines if "ha" not in o]  # HA units have their own objects (tests/test_ha_golden.py)
    ha = manifest(pcap).get("haStream")
    expected_ha = ha["slaveReports"]["count"] + ha["masterFrames"]["count"] if ha else 0
    assert len(lines) - len(objs) == expected_ha
    assert len(objs) == traffic["frames"]
    required = {"ts", "src", "dst", "code", "name", "opaque", "flag", "is_response", "serialize_type", "remark",
                "ext_fields", "body_len"}
    assert all(required <= o.keys() for o in objs)
    requests = Counter(f"{o['code']} {o['name']}" for o in objs if not o["is_response"])
    assert dict(requests) == traffic["requests"]
    by_request: dict[str, Counter[str]] = {}
    waiting: dict[tuple[str, str, int], dict] = {}  # requests by (src, dst, opaque), as the lines come
    for o in objs:
        if not o["is_response"]:
            if not o["is_oneway"]:
                waiting[(o["src"], o["dst"], o["opaque"])] = o
            continue
        request = waiting.pop((o["dst"], o["src"], o["opaque"]), None)
        assert o["paired"] is (request is not None)
        if o["paired"]:
            assert request is not None and o["request_code"] == request["code"]
            key = f"{o['request_code']} {request_code_name(o['request_code'])}"
            by_request.setdefault(key, Counter())[f"{o['code']} {o['name']}"] += 1
            # both times are rounded to the microsecond, the latency to a thousandth of a millisecond
            assert o["latency_ms"] == pytest.approx((o["ts"] - request["ts"]) * 1000, abs=0.0021)
    assert {k: dict(v) for k, v in by_request.items()} == traffic["responsesByRequest"]
    assert sum(o["is_response"] and not o["paired"] for o in objs) == traffic["unpairedResponses"]


def test_lines_name_codes_pair_and_time(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "sniff", "-r", str(SYNC))
    assert rc == 0
    lines = out.splitlines()
    assert len(lines) == manifest(SYNC)["traffic"]["frames"]
    send = next(ln for ln in lines if "SEND_MESSAGE_V2(310)" in ln)
    assert "topic=ProducerSync_T_golden" in send and "group=ProducerSync_PG_golden" in send
    answer = next(ln for ln in lines if "↩ SEND_MESSAGE_V2" in ln)
    assert "SUCCESS(0)" in answer and answer.rstrip().endswith(" ms")
    assert any("TOPIC_NOT_EXIST(17) ↩ GET_ROUTEINFO_BY_TOPIC" in ln for ln in lines)
    assert any("UPDATE_CONSUMER_OFFSET(15) oneway" in ln for ln in lines)


def test_verbose_shows_typed_header_and_messages(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "sniff", "-r", str(SYNC), "-V", "--code", "SEND_MESSAGE_V2,PULL_MESSAGE")
    assert rc == 0
    assert "header SendMessageRequestHeaderV2" in out
    assert "b (topic) = ProducerSync_T_golden" in out
    assert "keys=['key-0', 'order-golden-0', 'k0'] tags=TagA" in out  # a SEND's message, from its header
    assert "header PullMessageResponseHeader" in out
    assert "msgId=7F00000100002A9F0000000000000000" in out  # messages inside a PULL response
    assert "'Hello RocketMQ 0 from run golden'" in out
    assert "… (9006 bytes)" in out  # the zlib-compressed SEND body, shown inflated


def test_verbose_json_has_header_and_body(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "sniff", "-r", str(SYNC), "--json", "-V", "--code", "PULL_MESSAGE")
    pulls = [o for o in json_lines(out) if o["is_response"] and o["code"] == 0]
    assert pulls
    msgs = pulls[0]["body"]
    assert msgs[0]["topic"] == "ProducerSync_T_golden" and msgs[0]["tags"] == "TagA"
    assert pulls[0]["header"]["class"] == "PullMessageResponseHeader"


def test_binary_headers_decode(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "sniff", "-r", str(BINARY), "--json")
    kinds = Counter(o["serialize_type"] for o in json_lines(out))
    assert dict(kinds) == manifest(BINARY)["traffic"]["serializeTypes"]


def test_filters(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "sniff", "-r", str(SYNC), "--json", "--code", "310")
    objs = json_lines(out)
    assert {o["name"] for o in objs} == {"SEND_MESSAGE_V2", "SUCCESS"}  # requests and their responses
    assert len(objs) == 20
    _, out, _ = run(capsys, "sniff", "-r", str(SYNC), "--json", "--code", "TOPIC_NOT_EXIST")
    assert [o["code"] for o in json_lines(out)] == [17, 17, 17]
    _, out, _ = run(capsys, "sniff", "-r", str(SYNC), "--json", "--topic", "%RETRY%ProducerSync_CG_golden")
    assert {o["topic"] for o in json_lines(out)} == {"%RETRY%ProducerSync_CG_golden"}
    _, out, _ = run(capsys, "sniff", "-r", str(SYNC), "--json", "--group", "ProducerSync_CG_golden")
    objs = json_lines(out)
    assert objs and {o["group"] for o in objs} == {"ProducerSync_CG_golden"}
    _, out, _ = run(capsys, "sniff", "-r", str(SYNC), "--json", "--port", "9876")
    assert {o["dst"] for o in json_lines(out) if not o["is_response"]} == {"127.0.0.1:9876"}
    _, out, _ = run(capsys, "sniff", "-r", str(SYNC), "--json", "-c", "3")
    assert len(out.splitlines()) == 3
    rc, _, err = run(capsys, "sniff", "-r", str(SYNC), "--code", "NO_SUCH_CODE")
    assert rc == 2 and "NO_SUCH_CODE" in err


def test_stats(capsys: pytest.CaptureFixture[str]) -> None:
    traffic = manifest(SYNC)["traffic"]
    rc, out, _ = run(capsys, "sniff", "-r", str(SYNC), "--stats", "-q")
    assert rc == 0
    for title in ("Requests by code", "Responses", "Error responses", "Bytes per topic"):
        assert title in out
    assert "GET_ROUTEINFO_BY_TOPIC" in out and "17 TOPIC_NOT_EXIST" in out and "ProducerSync_T_golden" in out
    rc, out, _ = run(capsys, "sniff", "-r", str(SYNC), "--stats", "--json", "-q")
    stats = json.loads(out)["stats"]
    assert stats["frames"] == traffic["frames"]
    assert stats["requests"] == {k.split(" ", 1)[1]: v for k, v in traffic["requests"].items()}
    assert stats["errors"] == {"GET_ROUTEINFO_BY_TOPIC 17 TOPIC_NOT_EXIST": 3}
    assert stats["unanswered_requests"] == {"PULL_MESSAGE": 5}
    lat = stats["latency_ms"]["SEND_MESSAGE_V2"]
    assert lat["count"] == 10 and 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]
    assert stats["topics"]["ProducerSync_T_golden"]["bytes"] > 0


def test_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(SYNC.read_bytes())))
    rc, out, _ = run(capsys, "sniff", "-r", "-", "--json")
    assert rc == 0 and len(out.splitlines()) == manifest(SYNC)["traffic"]["frames"]


def test_progress_bar_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "sniff", "-r", str(SYNC), "--progress", "-q", "--stats")
    assert rc == 0 and "Requests by code" in out


def test_errors_are_clear(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, _, err = run(capsys, "sniff", "-r", str(tmp_path / "missing.pcap"))
    assert rc == 2 and "missing.pcap" in err
    junk = tmp_path / "junk.pcap"
    junk.write_bytes(b"this is not a capture")
    rc, _, err = run(capsys, "sniff", "-r", str(junk))
    assert rc == 2 and "not a pcap or pcapng" in err
    rc, _, err = run(capsys, "proxy", "--listen", "nowhere", "--upstream", "127.0.0.1:9876")
    assert rc == 2 and "HOST:PORT" in err


def test_live_capture_without_privilege_says_so(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def refuse(*args: object, **kwargs: object) -> socket.socket:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(socket, "socket", refuse)
    rc, _, err = run(capsys, "sniff", "-i", "lo")
    assert rc == 2
    assert "CAP_NET_RAW" in err and "rocketpy proxy" in err
    assert "capturing on" not in err  # nothing was captured


def test_a_wrong_interface_is_one_line_before_anything_is_captured(capsys: pytest.CaptureFixture[str]) -> None:
    """``sniff -i nosuchif0`` said "capturing on nosuchif0 (any port), Ctrl-C stops" before its error; the name
    is checked first (privileged or not), and the error is the only line."""
    rc, out, err = run(capsys, "sniff", "-i", "nosuchif0")
    assert rc == 2 and out == ""
    assert err.splitlines() == [err.strip()], err
    assert "'nosuchif0': no such interface" in err and " lo" in err  # the interfaces there are
    assert "capturing on" not in err


def test_terminal_output_is_coloured_and_notes_show_inline() -> None:
    from rich.console import Console

    from rocketpy.sniffer.pcap import read_pcap
    from rocketpy.sniffer.reassembly import StreamNote
    from rocketpy.sniffer.render import LineOutput

    buf = io.StringIO()
    out = LineOutput(Console(file=buf, force_terminal=True, width=300, soft_wrap=True), verbose=True)
    frames = read_pcap(str(SYNC))
    out.frame(frames[0])
    out.note(StreamNote(frames[0].ts + 1, frames[0].src, frames[0].dst, "gap", 1460, number=9))
    text = buf.getvalue()
    assert "\x1b[" in text  # styled
    assert "GET_ROUTEINFO_BY_TOPIC(105)" in text and "topic = TBW102" in text
    assert "[gap: 1460 bytes not captured]" in text


def test_undecodable_frames_are_shown_not_fatal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A frame whose length is right but whose header is garbage is reported; the next frame decodes."""
    import dpkt

    from rocketpy.codecs import RemotingCommand

    bad = b"\x00\x00\x00\x0c\x00\x00\x00\x04{{{{" + b"\x00" * 4
    good = RemotingCommand(code=34, opaque=5).encode()
    tcp = dpkt.tcp.TCP(sport=40000, dport=10911, seq=1, flags=dpkt.tcp.TH_ACK, data=bad + good)
    ip = dpkt.ip.IP(src=b"\x7f\x00\x00\x01", dst=b"\x7f\x00\x00\x01", p=6, data=tcp)
    ip.len = len(bytes(ip))
    eth = dpkt.ethernet.Ethernet(data=ip, type=dpkt.ethernet.ETH_TYPE_IP)
    path = tmp_path / "bad.pcap"
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f)
        w.writepkt(bytes(eth), 1.0)
    rc, out, _ = run(capsys, "sniff", "-r", str(path))
    assert rc == 0
    lines = out.splitlines()
    assert "undecodable frame" in lines[0] or "skipped" in lines[0]
    assert "HEART_BEAT(34)" in lines[-1]


def test_times_count_from_the_first_packet_even_when_filtered(capsys: pytest.CaptureFixture[str]) -> None:
    _, everything, _ = run(capsys, "sniff", "-r", str(SYNC))
    _, filtered, _ = run(capsys, "sniff", "-r", str(SYNC), "--code", "310", "-c", "1")
    first = filtered.splitlines()[0]
    number = first.split()[0]
    same = next(ln for ln in everything.splitlines() if ln.split()[0] == number)
    assert first.split()[1] == same.split()[1] and float(first.split()[1]) > 0  # as tshark: capture-relative


def test_truncated_capture_warns_and_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(SYNC.read_bytes()[:-10])
    rc, out, err = run(capsys, "sniff", "-r", str(cut))
    assert rc == 1 and out.strip()  # what was whole is still shown
    assert "warning: the capture is cut short" in err and err.count("\n") == 1


def test_write_keeps_the_packets_that_pass_the_filter(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    written = tmp_path / "sends.pcap"
    rc, _, _ = run(capsys, "sniff", "-r", str(SYNC), "--code", "310", "-w", str(written))
    assert rc == 0
    rc, out, _ = run(capsys, "sniff", "-r", str(written), "--json")
    objs = json_lines(out)
    assert rc == 0 and {o["name"] for o in objs} == {"SEND_MESSAGE_V2", "SUCCESS"} and len(objs) == 20


def _has_box_characters(text: str) -> bool:
    return any("\u2500" <= ch <= "\u257f" for ch in text)


def test_stats_tables_plain_when_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    """--stats into a pipe or file: columns only, no box characters, one title line per table."""
    rc, out, _ = run(capsys, "sniff", "-r", str(SYNC), "--stats", "-q")
    assert rc == 0 and not _has_box_characters(out)
    lines = out.splitlines()
    assert "Requests by code" in lines and "Bytes per topic" in lines
    header = lines[lines.index("Requests by code") + 1]
    assert header.split() == ["request", "count", "oneway", "unanswered", "p50", "ms", "p90", "ms", "p99", "ms",
                              "max", "ms"]


def test_stats_tables_keep_boxes_on_a_terminal_and_show_names_as_data() -> None:
    from rich.console import Console

    from rocketpy.sniffer.stats import Stats

    stats = Stats()
    stats.topics["[red]T[/red]"] = [1, 10]
    terminal = Console(file=io.StringIO(), force_terminal=True, width=120)
    stats.render(terminal)
    assert _has_box_characters(terminal.file.getvalue())  # type: ignore[attr-defined]
    piped = Console(file=io.StringIO(), width=120)
    stats.render(piped)
    text = piped.file.getvalue()  # type: ignore[attr-defined]
    assert not _has_box_characters(text) and "[red]T[/red]" in text


class _RecordsOf:
    """Stands in for live.LiveRecords (whose socket needs root): the records of a capture file, then the
    silences a live capture yields between packets."""

    def __init__(self, interface: str, *_: object) -> None:
        from rocketpy.sniffer.pcap import PacketReader

        with open(SYNC, "rb") as f:
            self._records = list(PacketReader(f))
        self.closed = False

    def __enter__(self) -> _RecordsOf:
        return self

    def __exit__(self, *exc: object) -> None:
        self.closed = True

    def __iter__(self) -> Iterator[tuple[float, int, bytes] | None]:
        for record in self._records:
            yield record
            yield None


def test_live_capture_is_written_with_w(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``sniff -i IFACE -w FILE`` writes the packets of the commands it shows, as ``sniff -r`` does (it
    ignored -w, silently)."""
    from rocketpy.sniffer import live

    monkeypatch.setattr(live, "LiveRecords", _RecordsOf)
    written = tmp_path / "live.pcap"
    rc, live_out, _ = run(capsys, "sniff", "-i", "lo", "--code", "310", "--json", "-w", str(written))
    assert rc == 0 and written.exists()
    rc, read_out, _ = run(capsys, "sniff", "-r", str(written), "--json")
    shown = [(o["name"], o["opaque"]) for o in json_lines(live_out)]
    assert rc == 0 and [(o["name"], o["opaque"]) for o in json_lines(read_out)] == shown and len(shown) == 20
    run(capsys, "sniff", "-r", str(SYNC), "--code", "310", "-w", str(tmp_path / "file.pcap"))
    assert (tmp_path / "file.pcap").read_bytes() == written.read_bytes()  # the same records as from the file


def test_live_capture_that_cannot_start_writes_no_file(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from rocketpy.sniffer import live

    def refuse(interface: str, *_: object) -> None:
        raise live.CaptureError(f"capturing on {interface} needs root or CAP_NET_RAW")

    monkeypatch.setattr(live, "LiveRecords", refuse)
    rc, _, err = run(capsys, "sniff", "-i", "eth9", "-w", str(tmp_path / "x.pcap"))
    assert rc == 2 and err == "rocketpy: capturing on eth9 needs root or CAP_NET_RAW\n"
    assert not (tmp_path / "x.pcap").exists()


def test_pcap_writer_keeps_one_link_type(tmp_path: Path) -> None:
    """A classic pcap has one link type: a bare-IP record after Ethernet ones (``-i any`` with a tun device)
    is written behind an Ethernet header, an Ethernet one in a bare-IP file without its own."""
    from rocketpy.sniffer.packet import LINKTYPE_ETHERNET, LINKTYPE_RAW, parse_tcp
    from rocketpy.sniffer.pcap import PacketReader, PcapWriter

    with open(SYNC, "rb") as f:
        ts, linktype, frame = next(iter(PacketReader(f)))
    assert linktype == LINKTYPE_ETHERNET
    ip = frame[14:]
    expected = parse_tcp(ts, linktype, frame)
    assert expected is not None
    for first, second in (((LINKTYPE_ETHERNET, frame), (LINKTYPE_RAW, ip)),
                          ((LINKTYPE_RAW, ip), (LINKTYPE_ETHERNET, frame))):
        path = tmp_path / f"{first[0]}.pcap"
        writer = PcapWriter(str(path))
        writer.write(ts, *first)
        writer.write(ts + 0.9999996, *second)
        writer.write(ts, 1234, b"not IP")  # left out
        writer.close()
        with open(path, "rb") as f:
            back = list(PacketReader(f))
        assert [r[1] for r in back] == [first[0]] * 2
        for rts, rlink, rframe in back:
            got = parse_tcp(rts, rlink, rframe)
            assert got is not None and (got.src, got.dst, got.seq, got.payload) == (
                expected.src, expected.dst, expected.seq, expected.payload)
        assert back[1][0] - back[0][0] == pytest.approx(0.999999, abs=1e-6)
