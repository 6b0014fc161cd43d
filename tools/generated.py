"""The command line every generator in tools/ shares: write the generated file, or ``--check`` that it is current."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def generator_main(argv: list[str], target: Path, render: Callable[[], str], what: str) -> int:
    """Write ``render()`` to ``target``; with ``--check``, write nothing and exit 1 when it differs."""
    script = Path(sys.argv[0]).name
    parser = argparse.ArgumentParser(description=f"Write {target.name} ({what}).")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not target.exists() or target.read_text() != text:
            print(f"{target} is stale: run python tools/{script}", file=sys.stderr)
            return 1
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    print(f"wrote {target} ({len(text)} bytes)")
    return 0
