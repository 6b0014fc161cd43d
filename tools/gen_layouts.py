"""Write rocketpy/_layouts.pxi, the compiled code's layout constants, from rocketpy.codecs.layouts
(``--check`` fails when stale). Rebuild the extension afterwards (``python setup.py build_ext --inplace``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rocketpy.codecs.layouts import render_pxi

TARGET = Path(__file__).resolve().parent.parent / "rocketpy" / "_layouts.pxi"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=f"Write {TARGET.name} from the construct definitions.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the file is stale")
    args = parser.parse_args(argv)
    text = render_pxi()
    if args.check:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET} is stale: run python tools/gen_layouts.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
