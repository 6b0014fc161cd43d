"""Write codecs/rocketmq.lua, the Wireshark dissector, from rocketpy.codecs (``--check`` fails when stale)."""

from __future__ import annotations

import sys

from generated import ROOT, generator_main

from rocketpy.sniffer.lua import render

if __name__ == "__main__":
    sys.exit(generator_main(sys.argv[1:], ROOT / "codecs" / "rocketmq.lua", render, "the Wireshark dissector"))
