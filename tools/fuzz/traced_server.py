"""``python tools/fuzz/traced_server.py ARGS``: ``rocketpy ARGS`` under watch, for fuzz_servers.py --servers
process. With tracemalloc on (unless ``TRACED_SERVER_TRACEMALLOC=0``), SIGUSR1 dumps a snapshot to
``$TRACED_SERVER_DUMP.<n>`` (n counts from 0). SIGUSR2 writes a report of the C heap to
``$TRACED_SERVER_DUMP.heap.<n>``: glibc's mallinfo2, the anonymous mappings by kind, and pymalloc's arenas
(what tracemalloc cannot see: memory freed but still resident)."""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import gc
import os
import signal
import sys
import tempfile
import tracemalloc
import types
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


def _exception_holders(limit: int = 15) -> list[str]:
    """What keeps exceptions alive (each holds its traceback, whose frames hold their locals): an
    exception's type with what refers to it, the code of the frames that are alive, and the closures
    (a callback left registered keeps what it closed over)."""
    holders: collections.Counter[str] = collections.Counter()
    frames: collections.Counter[str] = collections.Counter()
    closures: collections.Counter[str] = collections.Counter()
    for holder in gc.get_objects():
        if isinstance(holder, types.FrameType):
            frames[f"{holder.f_code.co_filename.rsplit('/', 1)[-1]}:{holder.f_code.co_qualname}"] += 1
        elif isinstance(holder, types.FunctionType) and holder.__closure__:
            closures[f"{holder.__module__}.{holder.__qualname__}"] += 1
        for obj in gc.get_referents(holder):
            if isinstance(obj, BaseException) and not isinstance(holder, BaseException):
                holders[f"{type(obj).__qualname__} in {type(holder).__qualname__}"] += 1
    return ([f"exception {k} {n}" for k, n in holders.most_common(limit)]
            + [f"frame {k} {n}" for k, n in frames.most_common(limit)]
            + [f"closure {k} {n}" for k, n in closures.most_common(limit)])


#: the most numerous types a heap report counts
CENSUS_TYPES = 40


def _census(objects: list[Any]) -> collections.Counter[str]:
    """gc-tracked objects by type (two reports' counts side by side name what grew)."""
    return collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in objects)


def _heap(signum: int, frame: Any) -> None:
    path = f"{os.environ['TRACED_SERVER_DUMP']}.heap.{_heap_count[0]}"
    try:
        lines = [f"mallinfo2 {k} {v}" for k, v in _mallinfo2().items()]
        lines += [f"anon {k}: {v} KiB" for k, v in _anon_mappings().items()]
        lines.append(_pymalloc_stats())
        lines.append(f"modules {len(sys.modules)}")  # what a request imported lazily stays
        tracked = gc.get_objects()
        # frozen ones (what start-up made: rocketpy.heap.own_process) are not among them
        lines.append(f"gc objects {len(tracked)}; frozen {gc.get_freeze_count()}")
        lines += [f"gc type {name} {n}" for name, n in _census(tracked).most_common(CENSUS_TYPES)]
        del tracked
        # cyclic garbage lives until a collection of its generation: how much the collections found
        lines.append("gc collections " + " ".join(str(g["collections"]) for g in gc.get_stats())
                     + "; collected " + " ".join(str(g["collected"]) for g in gc.get_stats())
                     + "; pending " + " ".join(str(n) for n in gc.get_count()))
        lines += _big_objects()
        lines += _exception_holders()
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
