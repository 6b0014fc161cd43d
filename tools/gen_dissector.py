"""Write codecs/rocketmq.lua, the Wireshark dissector, from rocketpy.codecs (``--check`` fails when stale)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rocketpy.sniffer.lua import render

TARGET = Path(__file__).resolve().parent.parent / "codecs" / "rocketmq.lua"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=f"Write {TARGET.name} (the Wireshark dissector) from rocketpy.codecs.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET} is stale: run python tools/gen_dissector.py", file=sys.stderr)
            return 1
        return 0
    TARGET.parent.mkdir(parents=True, exist_ok=True)
    TARGET.write_text(text)
    print(f"wrote {TARGET} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
