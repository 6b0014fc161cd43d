"""The C heap of a long-running server: keep its resident size near what is in use.

A broker that reads frames of up to 16 MiB from many short connections allocates and frees large
buffers all day. glibc's malloc serves a buffer of 128 KiB or more with its own mapping and returns it
on free, but each such free raises the threshold (up to 32 MiB), after which large buffers come from
the heap and, once freed, stay resident between live objects: the process grows with the traffic it
has seen, not with what it holds (a fuzzing run took a broker from 36 to 66 MiB of anonymous memory
with its tables unchanged). :func:`tune` fixes the threshold and caps the per-thread arenas the worker
threads (config writes, flushes) would create; :func:`trim` hands free pages back to the system (the
servers call it from their periodic scans). Both do nothing where the C library is not glibc.

The Python heap has the same trouble with cyclic garbage: trio's TLS stream makes a reference cycle
(and its OpenSSL buffers go with it), as does a caught exception kept in a local. The collector frees
such cycles only when enough new objects were made since its last pass, which an idle server never
reaches: what the last connections left would stay. :func:`own_process` (the command line's servers,
one per process) freezes what start-up made, so that :func:`collect_cycles`, called from the periodic
scans, looks only at what came after and costs little.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
from typing import Any

log = logging.getLogger("rocketpy.heap")

# mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

#: buffers from this size up get their own mapping, returned to the system when freed
MMAP_THRESHOLD = 128 * 1024
#: arenas for all threads; glibc's default is 8 per core
ARENA_MAX = 2


def _glibc() -> Any | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.malloc_trim  # noqa: B018 - glibc only: musl and macOS have no malloc_trim
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()
_tuned = False


def tune() -> bool:
    """Fix the mmap threshold and cap the arenas (once per process); False where this is not glibc."""
    global _tuned
    if _LIBC is None:
        return False
    if not _tuned:
        _tuned = True
        for param, value in ((M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD),
                             (M_ARENA_MAX, ARENA_MAX)):
            if not _LIBC.mallopt(param, value):
                log.info("mallopt(%d, %d) refused", param, value)
    return True


def trim() -> bool:
    """malloc_trim(0): free pages of every arena go back to the system; True if any did."""
    return bool(_LIBC.malloc_trim(0)) if _LIBC is not None else False


_own_process = False


def own_process() -> None:
    """The process runs servers and nothing else (``rocketpy broker``, ``namesrv``, ``serve``), called
    once they are up: what they made to start lives as long as the process, so after one collection it
    is frozen (gc.freeze) out of the collector's passes, and :func:`collect_cycles` is switched on.
    Not for a process that starts servers among other work (tests): frozen objects that later die in a
    cycle are never collected."""
    global _own_process
    gc.collect()
    gc.freeze()
    _own_process = True


def collect_cycles() -> int:
    """A full collection, in a process that called :func:`own_process` (elsewhere nothing: there a pass
    would walk every object of the host): the cycles closed connections left go back within one scan,
    busy or idle. Returns the objects it found unreachable."""
    return gc.collect() if _own_process else 0
