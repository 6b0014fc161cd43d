"""Write protocol/PROTOCOL.md from rocketpy.codecs (``--check`` fails when it is stale)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rocketpy.codecs.reference import render

TARGET = Path(__file__).resolve().parent.parent / "protocol" / "PROTOCOL.md"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=f"Write {TARGET.name} (the protocol reference) from rocketpy.codecs.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET} is stale: run python tools/gen_protocol.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
