"""Write protocol/PROTOCOL.md from rocketpy.codecs (``--check`` fails when it is stale)."""

from __future__ import annotations

import sys
from pathlib import Path

from rocketpy.codecs.reference import render

TARGET = Path(__file__).resolve().parent.parent / "protocol" / "PROTOCOL.md"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET} is stale: run python tools/gen_protocol.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
