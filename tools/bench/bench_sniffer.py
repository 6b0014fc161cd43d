"""Sniffer throughput (MB/s, packets/s, commands/s) on a large synthetic capture.

The capture is the golden captures' packets repeated, each repetition with its
client ports and TCP sequence numbers rewritten (so every repetition is a new set
of connections, some of them joined mid-stream as in the originals) and its
timestamps moved on.

Run: python tools/bench/bench_sniffer.py [--size MB] [--modes stats,json,lines] [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import struct
import sys
import time
from pathlib import Path

from rocketpy.sniffer.cli import main as sniff_main
from rocketpy.sniffer.pcap import PacketReader, read_packets
from rocketpy.sniffer.reassembly import CapturedFrame, Tracker

GOLDEN = Path(__file__).resolve().parents[2] / "protocol" / "golden" / "captures"
_REC = struct.Struct("<IIII")


def _templates() -> list[tuple[float, bytearray, int, int, int]]:
    """(relative ts, frame, offset of the TCP header, which port is the client's: 0 src / 2 dst, …)."""
    out = []
    t0_all = 0.0
    for pcap in sorted(GOLDEN.glob("*.pcap")):
        with open(pcap, "rb") as f:
            reader = PacketReader(f)
            first = None
            last = 0.0
            for ts, linktype, buf in reader:
                assert linktype == 1, "golden captures are Ethernet"
                if first is None:
                    first = ts
                frame = bytearray(buf)
                if struct.unpack_from(">H", frame, 12)[0] != 0x0800 or frame[23] != 6:
                    continue
                tcp = 14 + (frame[14] & 0x0F) * 4
                sport, dport = struct.unpack_from(">HH", frame, tcp)
                # the client's end is the ephemeral port (the master/slave capture has servers off the defaults)
                client = 0 if sport > dport else 2
                last = ts - first
                out.append((t0_all + last, frame, tcp, client, sport if client == 0 else dport))
            t0_all += last + 1.0
    return out


def build(path: Path, size: int) -> tuple[int, float]:
    """Write ~``size`` bytes of capture; (packets, seconds it took)."""
    start = time.perf_counter()
    templates = _templates()
    span = templates[-1][0] + 1.0
    packets = 0
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        written, rep = 24, 0
        while written < size:
            seq_shift = (rep * 7_654_321) % (1 << 32)
            base_ts = 1_800_000_000 + rep * span
            ports: dict[int, int] = {}
            for rel, frame, tcp, client, port in templates:
                new_port = ports.setdefault(port, 20000 + (rep * 53 + len(ports)) % 40000)
                buf = bytearray(frame)
                struct.pack_into(">H", buf, tcp + client, new_port)
                seq, ack = struct.unpack_from(">II", buf, tcp + 4)
                struct.pack_into(">II", buf, tcp + 4, (seq + seq_shift) % (1 << 32), (ack + seq_shift) % (1 << 32))
                ts = base_ts + rel
                sec = int(ts)
                f.write(_REC.pack(sec, int((ts - sec) * 1e6), len(buf), len(buf)))
                f.write(buf)
                written += 16 + len(buf)
                packets += 1
            rep += 1
    return packets, time.perf_counter() - start


def bench_core(path: Path) -> dict[str, float]:
    """Reading, reassembly and decoding alone (every frame decoded to a RemotingCommand)."""
    start, cpu = time.perf_counter(), time.process_time()
    tracker = Tracker()
    packets = frames = 0
    with open(path, "rb") as f:
        for pkt in read_packets(f, PacketReader(f)):
            packets += 1
            for ev in tracker.packet(pkt):
                frames += isinstance(ev, CapturedFrame)
    frames += sum(isinstance(ev, CapturedFrame) for ev in tracker.finish())
    return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu, "packets": packets,
            "frames": frames}


def bench_cli(path: Path, args: list[str]) -> tuple[float, float]:
    """The whole ``rocketpy sniff`` (pairing, filters, output) with stdout thrown away. (wall, CPU) s."""
    start, cpu = time.perf_counter(), time.process_time()
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        rc = sniff_main(["sniff", "-r", str(path), "--no-progress", *args])
    assert rc == 0
    return time.perf_counter() - start, time.process_time() - cpu


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=float, default=50, help="capture size in MB (default 50; try 1000)")
    p.add_argument("--modes", default="core,stats,json,lines", help="comma-separated: core,stats,json,lines")
    p.add_argument("--path", default="/tmp/rocketpy-bench-sniffer.pcap")
    p.add_argument("--keep", action="store_true", help="keep the capture (reused when big enough)")
    args = p.parse_args()
    path = Path(args.path)
    size = int(args.size * 1e6)
    if not (path.exists() and abs(path.stat().st_size - size) < size * 0.01 + 10_000):
        packets, took = build(path, size)
        print(f"built {path}: {path.stat().st_size / 1e6:.1f} MB, {packets} packets in {took:.1f} s")
    mb = path.stat().st_size / 1e6
    modes = args.modes.split(",")
    try:
        # rates are per CPU second: on a shared machine wall time says more about the neighbours
        print(f"{'':32}  {'wall s':>7}  {'CPU s':>7}  {'MB/s':>7}  {'packets/s':>9}  {'commands/s':>10}")
        frames = 0
        if "core" in modes:
            r = bench_core(path)
            frames, cpu = int(r["frames"]), r["cpu"]
            print(f"{'core (read+reassemble+decode)':32}  {r['seconds']:7.2f}  {cpu:7.2f}  {mb / cpu:7.1f}  "
                  f"{r['packets'] / cpu:9.0f}  {frames / cpu:10.0f}   ({frames} commands)")
        for mode, extra in (("stats", ["-q", "--stats"]), ("json", ["--json"]), ("lines", [])):
            if mode in modes:
                wall, cpu = bench_cli(path, extra)
                rate = f"{frames / cpu:10.0f}" if frames else ""
                label = "sniff " + (" ".join(extra) or "(lines)")
                print(f"{label:32}  {wall:7.2f}  {cpu:7.2f}  {mb / cpu:7.1f}  {'':9}  {rate}")
    finally:
        if not args.keep:
            path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
