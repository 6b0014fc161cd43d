"""Write protocol/PROTOCOL.md from rocketpy.codecs (``--check`` fails when it is stale)."""

from __future__ import annotations

import sys

from generated import ROOT, generator_main

from rocketpy.codecs.reference import render

if __name__ == "__main__":
    sys.exit(generator_main(sys.argv[1:], ROOT / "protocol" / "PROTOCOL.md", render, "the protocol reference"))
