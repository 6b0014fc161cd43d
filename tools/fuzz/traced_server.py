"""``python tools/fuzz/traced_server.py ARGS``: ``rocketpy ARGS`` under watch, for fuzz_servers.py --servers
process. With tracemalloc on (unless ``TRACED_SERVER_TRACEMALLOC=0``), SIGUSR1 dumps a snapshot to
``$TRACED_SERVER_DUMP.<n>`` (n counts from 0). SIGUSR2 writes a report of the C heap to
``$TRACED_SERVER_DUMP.heap.<n>``: glibc's mallinfo2, the anonymous mappings by kind, and pymalloc's arenas
(what tracemalloc cannot see: memory freed but still resident)."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import signal
import sys
import tempfile
import tracemalloc
from typing import Any

from rocketpy.cli import main

_count = [0]
_heap_count = [0]


def _dump(signum: int, frame: Any) -> None:
    path = f"{os.environ['TRACED_SERVER_DUMP']}.{_count[0]}"
    tracemalloc.take_snapshot().dump(path + ".tmp")
    os.replace(path + ".tmp", path)
    _count[0] += 1


_MALLINFO2 = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
              "keepcost")


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO2]


def _libc() -> Any:
    return ctypes.CDLL(ctypes.util.find_library("c"))


def _mallinfo2() -> dict[str, int]:
    try:
        fn = _libc().mallinfo2
    except (OSError, AttributeError):  # not glibc, or before 2.33
        return {}
    fn.restype = _Mallinfo2
    info = fn()
    return {f: getattr(info, f) for f in _MALLINFO2}


def _anon_mappings() -> dict[str, int]:
    """Resident anonymous KiB by kind of mapping: [heap] (brk), big ones (thread arenas' 64 MiB heaps),
    1 MiB ones (pymalloc arenas in 3.11), the rest."""
    out: dict[str, int] = {}
    kind = None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                path = head[5] if len(head) > 5 else ""
                size = hi - lo
                if path == "[heap]":
                    kind = "brk heap"
                elif path:
                    kind = None
                elif size >= 32 << 20:
                    kind = "anon >=32 MiB (thread arenas)"
                elif size == 1 << 20:
                    kind = "anon 1 MiB (pymalloc arenas)"
                else:
                    kind = "anon other"
            elif kind and head[0] == "Anonymous:":
                out[kind] = out.get(kind, 0) + int(head[1])
    return out


def _pymalloc_stats() -> str:
    """pymalloc's arena and block counts (sys._debugmallocstats' text), written to a file of their own:
    fd 2 is the server's log, which the log listener thread writes to at any time (a redirected fd 2
    would swallow its lines, tracebacks among them)."""
    libc = _libc()
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    stats = ctypes.pythonapi._PyObject_DebugMallocStats  # what sys._debugmallocstats calls with stderr
    stats.argtypes = [ctypes.c_void_p]
    with tempfile.NamedTemporaryFile("r") as tmp:
        out = libc.fopen(os.fsencode(tmp.name), b"w")
        if not out:
            raise OSError(f"fopen {tmp.name} failed")
        try:
            stats(out)
        finally:
            libc.fclose(out)
        text = tmp.read()
    keep = ("# arenas", "# bytes in allocated blocks", "# bytes in available blocks", "# bytes lost",
            "# unused pools", "# bytes in", "Total")
    return "\n".join(line for line in text.splitlines() if line.startswith(keep))


def _big_objects(limit: int = 128 * 1024) -> list[str]:
    """Python objects of ``limit`` bytes or more (glibc maps each on its own) and what holds them."""
    out: dict[str, int] = {}
    seen: set[int] = set()
    for holder in gc.get_objects():
        for obj in (holder, *gc.get_referents(holder)):
            if id(obj) in seen:
                continue
            try:
                size = sys.getsizeof(obj)
            except TypeError:
                continue
            if size >= limit:
                seen.add(id(obj))
                name = type(obj).__name__ if obj is holder else f"{type(obj).__name__} in {type(holder).__qualname__}"
                out[name] = out.get(name, 0) + size
    return [f"big {name}: {size // 1024} KiB" for name, size in sorted(out.items(), key=lambda kv: -kv[1])]


def _heap(signum: int, frame: Any) -> None:
    path = f"{os.environ['TRACED_SERVER_DUMP']}.heap.{_heap_count[0]}"
    try:
        lines = [f"mallinfo2 {k} {v}" for k, v in _mallinfo2().items()]
        lines += [f"anon {k}: {v} KiB" for k, v in _anon_mappings().items()]
        lines.append(_pymalloc_stats())
        lines.append(f"modules {len(sys.modules)}")  # what a request imported lazily stays
        lines.append(f"gc objects {len(gc.get_objects())}")
        lines += _big_objects()
    except Exception as exc:  # a signal handler's exception would surface in the server's event loop
        lines = [f"heap report failed: {exc!r}"]
    try:
        with open(path + ".tmp", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.replace(path + ".tmp", path)
    except OSError:
        pass  # the fuzzer waits for the report a while, then goes on without it
    _heap_count[0] += 1


if __name__ == "__main__":
    if os.environ.get("TRACED_SERVER_TRACEMALLOC", "1") != "0":
        tracemalloc.start(int(os.environ.get("TRACED_SERVER_FRAMES", "6")))
        signal.signal(signal.SIGUSR1, _dump)
    signal.signal(signal.SIGUSR2, _heap)
    sys.argv[0] = "rocketpy"
    sys.exit(main())
