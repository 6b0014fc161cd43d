"""``python tools/fuzz/traced_server.py ARGS``: ``rocketpy ARGS`` under watch, for fuzz_servers.py --servers
process. With tracemalloc on (unless ``TRACED_SERVER_TRACEMALLOC=0``), SIGUSR1 dumps a snapshot to
``$TRACED_SERVER_DUMP.<n>`` (n counts from 0). SIGUSR2 writes a report of the C heap to
``$TRACED_SERVER_DUMP.heap.<n>``: glibc's mallinfo2, the anonymous mappings by kind, glibc's mapped blocks,
and pymalloc's arenas (what tracemalloc cannot see: memory freed but still resident); with
``TRACED_SERVER_FROZEN=1`` also the big tables among what start-up made (a walk from the modules whose
own memory shows in the figures after it). With ``TRACED_SERVER_PEAKS=1`` a thread
notes what the server ran at each new high of pymalloc blocks, and the report lists the latest."""

from __future__ import annotations

import array
import collections
import contextlib
import ctypes
import ctypes.util
import gc
import itertools
import linecache
import os
import re
import reprlib
import signal
import sys
import tempfile
import threading
import time
import tracemalloc
import types
from collections.abc import Callable, Iterator
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
    lines = [line for line in text.splitlines() if line.startswith(keep)]
    # per size class: pools, blocks in use, free blocks in those pools (where the free space sits)
    lines += ["class " + " ".join(m.groups()) for m in re.finditer(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$",
                                                                 text, re.M)]
    return "\n".join(lines)


def _big_objects(tracked: list[Any], limit: int = 128 * 1024) -> list[str]:
    """Python objects of ``limit`` bytes or more (glibc maps each on its own) and what holds them; then
    those from pymalloc's limit up to ``limit``, which live in glibc's heap between others, by kind."""
    big: dict[str, int] = {}
    medium: collections.Counter[tuple[type, type | None]] = collections.Counter()
    medium_count: collections.Counter[tuple[type, type | None]] = collections.Counter()
    seen: set[int] = set()
    for holder in tracked:
        for obj in (holder, *gc.get_referents(holder)):
            if id(obj) in seen:
                continue
            try:
                size = sys.getsizeof(obj)
            except TypeError:
                continue
            # a container's items are a block of their own, the object a small one: the block decides
            if size - _HEADER_SIZES.get(type(obj), 0) > PYMALLOC_LIMIT:
                seen.add(id(obj))
                if size >= limit:
                    name = type(obj).__name__
                    if obj is not holder:
                        name += f" in {type(holder).__qualname__}"
                    big[name] = big.get(name, 0) + size
                else:
                    kind = (type(obj), None if obj is holder else type(holder))
                    medium[kind] += size
                    medium_count[kind] += 1
    lines = [f"big {name}: {size // 1024} KiB" for name, size in sorted(big.items(), key=lambda kv: -kv[1])]
    lines.append(f"medium objects (glibc heap): {sum(medium_count.values())}, {sum(medium.values()) // 1024} KiB")
    return lines + [f"medium {cls.__qualname__}{'' if held is None else ' in ' + held.__qualname__}: "
                    f"{medium_count[cls, held]}, {size // 1024} KiB" for (cls, held), size in medium.most_common(12)]


#: pymalloc serves requests up to this many bytes; larger ones go to malloc
PYMALLOC_LIMIT = 512
#: what sys.getsizeof counts of a container beside its separately allocated items (an empty one's size)
_HEADER_SIZES = {cls: sys.getsizeof(cls()) for cls in (list, dict, set, bytearray)} | {
    array.array: sys.getsizeof(array.array("q"))}


def _frozen(tracked: list[Any]) -> list[Any]:
    """The tracked objects reachable from the modules but not among ``tracked`` (gc.get_objects() leaves
    the frozen generation out)."""
    known = {id(obj) for obj in tracked}
    found: list[Any] = []
    seen: set[int] = set()
    todo: list[Any] = [sys.modules]
    while todo:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if id(obj) not in known:
            found.append(obj)
        todo.extend(ref for ref in gc.get_referents(obj) if gc.is_tracked(ref) and id(ref) not in seen)
    return found


def _exception_holders(tracked: list[Any], limit: int = 15) -> list[str]:
    """What keeps exceptions alive (each holds its traceback, whose frames hold their locals): an
    exception's type with what refers to it, the code of the frames that are alive, and the closures
    (a callback left registered keeps what it closed over). Counted by type and code object, named after
    (see :func:`_census`)."""
    holders: collections.Counter[tuple[type, type]] = collections.Counter()
    frames: collections.Counter[types.CodeType] = collections.Counter()
    closures: collections.Counter[types.CodeType] = collections.Counter()
    modules: dict[types.CodeType, str] = {}
    for holder in tracked:
        if isinstance(holder, types.FrameType):
            frames[holder.f_code] += 1
        elif isinstance(holder, types.FunctionType) and holder.__closure__:
            closures[holder.__code__] += 1
            modules.setdefault(holder.__code__, holder.__module__)
        for obj in gc.get_referents(holder):
            if isinstance(obj, BaseException) and not isinstance(holder, BaseException):
                holders[type(obj), type(holder)] += 1
    return ([f"exception {exc.__qualname__} in {held.__qualname__} {n}"
             for (exc, held), n in holders.most_common(limit)]
            + [f"frame {code.co_filename.rsplit('/', 1)[-1]}:{code.co_qualname} {n}"
               for code, n in frames.most_common(limit)]
            + [f"closure {modules[code]}.{code.co_qualname} {n}" for code, n in closures.most_common(limit)])


#: pymalloc's pools (3.11 on 64 bits: 16 KiB, a 48-byte header) and the header's fields
POOL_SIZE = 16 * 1024
_POOL_HEADER = 48
#: an arena (1 MiB) under this full counts as sparse: its blocks keep it resident, and those of an arena
#: under half full could mostly fit in the free blocks of the others
SPARSE_ARENA = 0.5


def _anon_regions() -> list[tuple[int, int]]:
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5 and parts[1].startswith("rw"):  # anonymous: no path
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi))
    return out


@contextlib.contextmanager
def _process_memory() -> Iterator[Callable[[int, int], bytes]]:
    """``read(addr, size)``: this process's memory through /proc/self/mem, not at the address: a region
    another thread unmaps meanwhile (glibc giving back a big block, a worker's stack) is then b"" to
    skip, not a SIGSEGV (which killed a run); so is a short read or an offset beyond a signed 64-bit one."""
    mem = os.open("/proc/self/mem", os.O_RDONLY)

    def read(addr: int, size: int) -> bytes:
        try:
            raw = os.pread(mem, size, addr)
        except (OSError, OverflowError):
            return b""
        return raw if len(raw) == size else b""

    try:
        yield read
    finally:
        os.close(mem)


def _all_types() -> dict[int, type]:
    """Every class by its address, to name what a block's type pointer points at."""
    out: dict[int, type] = {}
    todo: list[type] = [object]
    while todo:
        cls = todo.pop()
        if id(cls) not in out:
            out[id(cls)] = cls
            todo.extend(type.__subclasses__(cls))
    return out


#: where a compact str's characters start: after PyASCIIObject when all are ASCII, else after
#: PyCompactUnicodeObject (3.12 dropped the wstr fields)
_STR_DATA = (48, 72) if sys.version_info < (3, 12) else (40, 56)


def _text(cls: type, obj: int, room: int, read: Callable[[int, int], bytes]) -> str | None:
    """A str or bytes object at ``obj`` with ``room`` bytes of its block from there, read from memory (never
    touched as an object: a block that only looks like one, or that another thread frees meanwhile, must
    not crash the server): its length, its start and the types of the tracked, unfrozen objects that hold
    it. None if its header does not hold up."""
    head = read(obj, 40)
    if not head or not 0 < int.from_bytes(head[0:8], "little") < 1 << 32:  # a refcount, not a pointer
        return None
    length = int.from_bytes(head[16:24], "little", signed=True)
    if cls is bytes:
        start, width, codec = 32, 1, None
    else:
        state = int.from_bytes(head[32:36], "little")
        width, compact, ascii_only = (state >> 2) & 7, (state >> 5) & 1, (state >> 6) & 1
        if not compact or width not in (1, 2, 4) or (ascii_only and width != 1):
            return None
        start = _STR_DATA[0] if ascii_only else _STR_DATA[1]
        codec = {1: "latin-1", 2: "utf-16-le", 4: "utf-32-le"}[width]
    if not 0 <= length <= (room - start) // width:
        return None
    data = read(obj + start, min(length, 120) * width)
    shown: object = data if codec is None else data.decode(codec, "replace")
    holders = sorted({type(o).__qualname__ for o in gc.get_objects()
                      if any(id(r) == obj for r in gc.get_referents(o))} - {"frame"})
    return f"{cls.__qualname__} of {length}, held by {holders or 'nothing tracked'}: {shown!r}"


def _mmapped_chunks() -> list[str]:
    """glibc's mapped blocks (a page that starts a chunk with IS_MMAPPED, of the mmap threshold or more, in
    an anonymous region: neighbouring mappings show as one): their sizes and, where the block starts a
    Python object (after a GC header or not), its type; else its first bytes. Then how many were found and
    their size, to hold against mallinfo2's hblks and hblkhd (a chunk this misses, or a page it takes
    for one, shows there)."""
    types = _all_types()
    lines = []
    total = 0
    try:
        with _process_memory() as read:
            for lo, hi in _anon_regions():
                addr = lo
                while addr + 64 <= hi:
                    raw = read(addr, 64)
                    size = int.from_bytes(raw[8:16], "little") if raw else 0
                    # prev_size 0, flags IS_MMAPPED only, a whole number of pages that fits the region
                    if raw[:8] != bytes(8) or size & 4095 != 2 or not 128 << 10 <= size - 2 <= hi - addr:
                        addr += 4096
                        continue
                    # the type pointer of an object right after the chunk header, or after a GC header
                    plain, tracked = (types.get(int.from_bytes(raw[at:at + 8], "little")) for at in (24, 40))
                    cls = plain or tracked
                    what = cls.__qualname__ if cls is not None else repr(raw[16:64])
                    if plain in (str, bytes):  # (neither has a GC header)
                        what = _text(plain, addr + 16, size - 2 - 16, read) or repr(raw[16:64])
                    lines.append(f"mmapped chunk {(size - 2) // 1024} KiB: {what}")
                    total += size - 2
                    addr += size - 2
    except OSError as exc:
        return [f"mmapped chunks: {exc!r}"]
    return [*lines, f"mmapped chunks found {len(lines)}, {total} bytes"]


def _pools() -> dict[int, tuple[int, int, int, int]]:
    """Every pymalloc pool in use or emptied: address -> (arena index, block size, blocks used, capacity).
    A pool is found by its header, whose fields must agree (an untouched page reads as zeros and fails)."""
    found = {}
    with _process_memory() as read:
        for lo, hi in _anon_regions():
            first = (lo + POOL_SIZE - 1) & ~(POOL_SIZE - 1)
            for addr in range(first, hi - POOL_SIZE + 1, POOL_SIZE):
                raw = read(addr, _POOL_HEADER)
                if not raw:
                    continue
                count, arena = int.from_bytes(raw[0:4], "little"), int.from_bytes(raw[32:36], "little")
                szidx, nextoffset, maxnext = (int.from_bytes(raw[i:i + 4], "little") for i in (36, 40, 44))
                size = (szidx + 1) * 16
                capacity = (POOL_SIZE - _POOL_HEADER) // size
                if szidx < 32 and maxnext == POOL_SIZE - size and nextoffset <= POOL_SIZE and count <= capacity:
                    found[addr] = (arena, size, count, capacity)
    return found


def _pool_census(tracked: list[Any], limit: int = 25) -> list[str]:
    """Where pymalloc's resident space goes: arenas by how full they are, and the gc-tracked objects (and
    what they refer to directly) that sit in sparse arenas: the survivors that keep arenas from being freed."""
    pools = _pools()
    arenas: dict[int, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for arena, size, count, _capacity in pools.values():
        entry = arenas[arena]
        entry[0 if count else 1] += 1
        entry[2] += size * count
    lines = [f"pools used {sum(1 for p in pools.values() if p[2])}, empty {sum(1 for p in pools.values() if not p[2])}"
             f" ({len(pools) * POOL_SIZE // 1024} KiB: the rest of the anonymous memory outside the brk heap is"
             " not pymalloc's)"]
    for low, high in ((0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.01)):
        in_band = [a for a in arenas.values() if low <= a[2] / (1 << 20) < high]
        lines.append(f"arenas {int(low * 100)}-{min(100, int(high * 100))}% used: {len(in_band)}, "
                     f"{sum(a[2] for a in in_band)} bytes in blocks")
    # an arena goes back to the system only when all its pools are empty: the blocks in the emptiest
    # arenas are the ones that keep them resident
    sparse_arenas = {index for index, entry in arenas.items() if entry[2] < (1 << 20) * SPARSE_ARENA}
    sparse = {addr for addr, (arena, _s, count, _c) in pools.items() if count and arena in sparse_arenas}
    lines.append(f"arenas under {int(SPARSE_ARENA * 100)}% used: {len(sparse_arenas)}, their pools {len(sparse)}, "
                 f"{sum(pools[a][1] * pools[a][2] for a in sparse)} bytes in blocks")
    # keyed by types and deduplicated among the hits only: a key or an id per object walked would put
    # thousands of blocks on the heap being measured
    kinds: collections.Counter[tuple[type, type | None]] = collections.Counter()
    hits: set[int] = set()
    # the holders with the most referents there, kept by identity (a few, not one entry per holder)
    holders: list[tuple[int, Any]] = []
    for holder in tracked:
        held_here = 0
        for obj in (holder, *gc.get_referents(holder)):
            if id(obj) & ~(POOL_SIZE - 1) in sparse and id(obj) not in hits:
                hits.add(id(obj))
                kinds[type(obj), None if obj is holder else type(holder)] += 1
                held_here += 1
        if held_here >= SPARSE_HOLDER_MIN:
            holders.append((held_here, holder))
    holders.sort(key=lambda h: -h[0])
    return lines + [f"sparse {cls.__qualname__}{'' if held is None else ' in ' + held.__qualname__} {n}"
                    for (cls, held), n in kinds.most_common(limit)] + [
        f"sparse holder {type(h).__qualname__} of {_size(h)} holds {n} there: {_sample(h)}" for n, h in holders[:5]]


#: a holder with at least this many referents in sparse arenas is named in the heap report
SPARSE_HOLDER_MIN = 50


def _size(holder: Any) -> str:
    try:
        return str(len(holder))
    except TypeError:
        return "?"


#: the containers whose first items the heap report shows
_SAMPLED = (list, tuple, set, frozenset, collections.deque)


def _sample(holder: Any) -> str:
    """Enough of a container to tell which one it is: its first items (of a built-in container only:
    iterating anything else would run the server's code from the report, and exhaust a generator the
    server still reads) and who holds it."""
    if isinstance(holder, dict):
        items: list[Any] = list(itertools.islice(holder.items(), 3))
    elif isinstance(holder, _SAMPLED):
        items = list(itertools.islice(holder, 3))
    else:
        items = []
    owners = [type(r).__qualname__ for r in gc.get_referrers(holder)][:4]
    return f"{reprlib.repr(items)} held by {owners}"


#: the most numerous types a heap report counts
CENSUS_TYPES = 40


def _type_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _census(objects: list[Any]) -> list[tuple[str, int]]:
    """gc-tracked objects by type, the most numerous first (two reports' counts side by side name what
    grew). Counted by type object and named after: a name made per object would put thousands of short
    strings on pymalloc's heap at once, and the pools they take stay with the server (the report would
    make the fragmentation it measures)."""
    return [(_type_name(cls), n) for cls, n in collections.Counter(map(type, objects)).most_common(CENSUS_TYPES)]


#: with TRACED_SERVER_PEAKS=1: a new high this many pymalloc blocks above the last one is recorded
PEAK_STEP = 2000
#: the latest highs a heap report lists
PEAK_LINES = 12
_peaks: collections.deque[str] = collections.deque(maxlen=PEAK_LINES)
#: frames every request or task runs under, left out of a peak's stack
_PLUMBING = ("cli.py", "broker/cli.py", "namesrv/cli.py", "remoting/server.py", "remoting/connection.py",
             "remoting/dispatch.py")


def _watch_peaks(main_thread: int, stop: threading.Event, period: float = 0.0005) -> None:
    """Samples the count of pymalloc blocks; at each new high, what the main thread was running (its
    rocketpy frames, innermost first). A burst of short-lived objects takes pools that the objects made
    meanwhile keep resident: this names the code that made the burst."""
    high = sys.getallocatedblocks()
    started = time.monotonic()
    while not stop.wait(period):
        blocks = sys.getallocatedblocks()
        if blocks < high + PEAK_STEP:
            continue
        high = blocks
        frame = sys._current_frames().get(main_thread)
        stack = []
        while frame is not None:
            code = frame.f_code
            path = code.co_filename.rsplit("/rocketpy/", 1)
            if len(path) == 2 and not path[1].startswith(_PLUMBING):
                stack.append(f"{path[1]}:{frame.f_lineno} {code.co_name}")
            frame = frame.f_back
        if len(stack) > 8:  # where it was, and the handler or task it was in
            stack[4:-4] = ["..."]
        _peaks.append(f"peak {time.monotonic() - started:.1f} s {blocks} blocks: " + " < ".join(stack))


_first_modules: set[str] = set()


def _heap(signum: int, frame: Any) -> None:
    path = f"{os.environ['TRACED_SERVER_DUMP']}.heap.{_heap_count[0]}"
    try:
        lines = [f"mallinfo2 {k} {v}" for k, v in _mallinfo2().items()]
        lines += [f"anon {k}: {v} KiB" for k, v in _anon_mappings().items()]
        lines.append(_pymalloc_stats())
        lines.append(f"modules {len(sys.modules)}")  # what a request imported lazily stays
        if not _first_modules:
            _first_modules.update(sys.modules)
        else:
            lines.append("modules since the first report " + " ".join(sorted(set(sys.modules) - _first_modules)))
        # source files read for a traceback or a warning stay in linecache for good
        lines.append("linecache " + " ".join(sorted("/".join(name.split("/")[-2:]) for name in linecache.cache)))
        tracked = gc.get_objects()  # one walk for every count below
        # frozen ones (what start-up made: rocketpy.heap.own_process) are not among them
        lines.append(f"gc objects {len(tracked)}; frozen {gc.get_freeze_count()}")
        lines += [f"gc type {name} {n}" for name, n in _census(tracked)]
        # cyclic garbage lives until a collection of its generation: how much the collections found
        lines.append("gc collections " + " ".join(str(g["collections"]) for g in gc.get_stats())
                     + "; collected " + " ".join(str(g["collected"]) for g in gc.get_stats())
                     + "; pending " + " ".join(str(n) for n in gc.get_count()))
        lines += _big_objects(tracked)
        lines += _mmapped_chunks()
        # start-up's tables are frozen, out of gc.get_objects(): a table that grew under the traffic and
        # was emptied keeps its size (sets and dicts never shrink on removal); found from the modules
        if os.environ.get("TRACED_SERVER_FROZEN", "0") != "0":  # a walk of every object: costs memory
            lines += ["frozen " + line for line in _big_objects(_frozen(tracked))]
        lines += _exception_holders(tracked)
        lines += _pool_census(tracked)
        del tracked
        lines += list(_peaks)
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
    if os.environ.get("TRACED_SERVER_PEAKS", "0") != "0":
        threading.Thread(target=_watch_peaks, args=(threading.get_ident(), threading.Event()), daemon=True).start()
    sys.argv[0] = "rocketpy"
    sys.exit(main())
