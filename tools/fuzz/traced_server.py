"""``python tools/fuzz/traced_server.py ARGS``: ``rocketpy ARGS`` with tracemalloc on; SIGUSR1 dumps a
snapshot to ``$TRACED_SERVER_DUMP.<n>`` (n counts from 0), for fuzz_servers.py --servers process
--tracemalloc to diff."""

from __future__ import annotations

import os
import signal
import sys
import tracemalloc
from typing import Any

from rocketpy.cli import main

_count = [0]


def _dump(signum: int, frame: Any) -> None:
    path = f"{os.environ['TRACED_SERVER_DUMP']}.{_count[0]}"
    tracemalloc.take_snapshot().dump(path + ".tmp")
    os.replace(path + ".tmp", path)
    _count[0] += 1


if __name__ == "__main__":
    tracemalloc.start(int(os.environ.get("TRACED_SERVER_FRAMES", "6")))
    signal.signal(signal.SIGUSR1, _dump)
    sys.argv[0] = "rocketpy"
    sys.exit(main())
