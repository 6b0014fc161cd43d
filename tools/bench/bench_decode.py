"""CPU cost of decoding a PULL answer's body on the client: ``decode_pulled`` µs per message.

The body is what the broker answers a consumer: 32 records of 1 KiB bodies with the properties the Java
benchmark Producer's messages carry (KEYS, UNIQ_KEY, WAIT, TAGS), the same topic and hosts throughout.
Each form runs in this process for ``--seconds``; the CPU time (``time.process_time``) is divided by the
messages decoded. ``--pure`` also measures the pure-Python reference (ROCKETPY_PURE in a subprocess).

    python tools/bench/bench_decode.py [--seconds 2] [--repeat 3] [--pure]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from rocketpy.codecs.message import MessageExt, encode_message

BATCH = 32


def pull_body(batch: int = BATCH, body_size: int = 1024, tags: str | None = "tag0") -> bytes:
    records = []
    for i in range(batch):
        uniq_key = f"7F000001{os.getpid() & 0xFFFF:04X}18B4AAC21234ABCD{i:04X}"
        props = {"KEYS": "1764201600", "UNIQ_KEY": uniq_key, "WAIT": "true"}
        if tags is not None:
            props["TAGS"] = tags
        m = MessageExt(
            topic="BenchTest",
            body=bytes([i % 251]) * body_size,
            properties=props,
            queue_id=1,
            queue_offset=1000 + i,
            born_timestamp=1764201600000 + i,
            born_host="127.0.0.1:54321",
            store_timestamp=1764201600005 + i,
            store_host="127.0.0.1:10911",
            commit_log_offset=4096 * i,
            body_crc=12345,
        )
        records.append(encode_message(m))
    return b"".join(records)


def measure(seconds: float, tags: list[str] | None) -> float:
    from rocketpy.client.api import decode_pulled

    body = pull_body()
    n = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        for _ in range(50):
            decode_pulled(body, tags)
        n += 50 * BATCH
        now = time.process_time()
        if now >= deadline:
            return (now - start) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pure", action="store_true", help="also measure the pure-Python reference")
    ap.add_argument("--one", choices=("all", "tag"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(measure(args.seconds, None if args.one == "all" else ["tag0"]))
        return
    forms = [("compiled", {})] + ([("pure", {"ROCKETPY_PURE": "1"})] if args.pure else [])
    for name, env in forms:
        for case in ("all", "tag"):
            runs = [
                float(
                    subprocess.run(
                        [sys.executable, __file__, "--one", case, "--seconds", str(args.seconds)],
                        env={**os.environ, **env},
                        check=True,
                        capture_output=True,
                        text=True,
                    ).stdout
                )
                for _ in range(args.repeat)
            ]
            label = "subscription *" if case == "all" else "subscription tag0"
            print(
                f"{name:9} {label:18} {statistics.median(runs):6.2f} µs/msg"
                f"  (runs {', '.join(f'{r:.2f}' for r in runs)})"
            )
    with open("/proc/loadavg") as f:
        print("load average:", " ".join(f.read().split()[:3]))


if __name__ == "__main__":
    main()
