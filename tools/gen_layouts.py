"""Write rocketpy/_layouts.pxi, the compiled code's layout constants, from rocketpy.codecs.layouts
(``--check`` fails when stale). Rebuild the extension afterwards (``python setup.py build_ext --inplace``)."""

from __future__ import annotations

import sys

from generated import ROOT, generator_main

from rocketpy.codecs.layouts import render_pxi

if __name__ == "__main__":
    target = ROOT / "rocketpy" / "_layouts.pxi"
    sys.exit(generator_main(sys.argv[1:], target, render_pxi, "the construct layouts' numbers"))
