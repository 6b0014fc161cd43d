"""Finding the files a data source reads, and opening them without reading them whole.

Listing happens on the driver (``DataSourceReader.partitions``); executors open the
files by path, so on a cluster the store or the captures must sit where every executor
reaches them: a filesystem mounted at the same path (NFS, a shared volume), or a URI
that ``pyarrow.fs`` opens (``file://``, ``hdfs://``, ``s3://``, ``gs://``, ...). Plain
paths and ``file://`` files are mapped. On other filesystems a CommitLog split, a record
named by a queue, an index or an id, a ConsumeQueue or IndexFile split, and an IndexFile
lookup read only their byte ranges (:func:`ranged`, :func:`window`).
"""

from __future__ import annotations

import contextlib
import glob
import json
import mmap
import os
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any

_DIGITS = frozenset("0123456789")

# Bytes the readers touched in this process (the benchmark's and the tests' count of what a plan reads).
READ_STATS: Counter[str] = Counter()


def option_paths(options: Mapping[str, str]) -> list[str]:
    """The paths given to ``load()``: ``path`` for one, ``paths`` (a JSON list) for several.

    Spark passes several paths as a JSON array under ``paths``; a comma-separated
    string is accepted too for ``.option("paths", "a,b")``.
    """
    out: list[str] = []
    if options.get("path"):
        out.append(options["path"])
    raw = options.get("paths")
    if raw:
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = [p for p in raw.split(",") if p]
        out.extend([parsed] if isinstance(parsed, str) else parsed)
    if not out:
        raise ValueError("no path given: use .load(path) or .load([path, ...])")
    return out


def _uri_fs(uri: str) -> tuple[Any, str, str]:
    """(pyarrow filesystem, path inside it, prefix that turns such a path back into the URI)."""
    import pyarrow.fs as pafs

    uri = uri.rstrip("/") or uri
    # Listed files are kept as plain text (a retry topic's '%RETRY%' dir, spaces): quote
    # them for the parser, which hands the path back decoded.
    fs, inner = pafs.FileSystem.from_uri(urllib.parse.quote(uri, safe=":/@"))
    if not uri.endswith(inner):
        raise ValueError(f"cannot tell the path inside {uri!r}")
    return fs, inner, uri[: len(uri) - len(inner)]


def _is_uri(p: str) -> bool:
    return "://" in p


def is_remote(path: str) -> bool:
    """Whether ``path`` is a URI of a filesystem that is not local (read by ranges, never mapped)."""
    return _is_uri(path) and not _local_fs(_uri_fs(path)[0])


def _local_fs(fs: Any) -> bool:
    import pyarrow.fs as pafs

    return isinstance(fs, pafs.LocalFileSystem)


def _fs_info(p: str) -> Any:
    fs, inner, _ = _uri_fs(p)
    return fs.get_file_info(inner)


def _isdir(p: str) -> bool:
    if _is_uri(p):
        import pyarrow.fs as pafs

        return _fs_info(p).type == pafs.FileType.Directory
    return os.path.isdir(p)


def _isfile(p: str) -> bool:
    if _is_uri(p):
        import pyarrow.fs as pafs

        return _fs_info(p).type == pafs.FileType.File
    return os.path.isfile(p)


def _listdir(p: str) -> list[str]:
    """Names directly in the directory ``p``."""
    if _is_uri(p):
        import pyarrow.fs as pafs

        fs, inner, _ = _uri_fs(p)
        return [os.path.basename(i.path) for i in fs.get_file_info(pafs.FileSelector(inner))]
    return os.listdir(p)


def file_size(path: str) -> int:
    """The size of a listed file (a path or a URI)."""
    return _fs_info(path).size if _is_uri(path) else os.path.getsize(path)


def expand(paths: list[str]) -> list[str]:
    """Glob each path (a pattern that matches nothing is an error, like Spark's file sources).

    URIs are kept as URIs (globbing them is not supported); a missing one is an error too.
    """
    out: list[str] = []
    for p in paths:
        if _is_uri(p):
            import pyarrow.fs as pafs

            if _fs_info(p).type == pafs.FileType.NotFound:
                raise FileNotFoundError(p)
            out.append(p.rstrip("/") or p)
            continue
        p = os.path.expanduser(p)
        if glob.has_magic(p):
            hits = sorted(glob.glob(p))
            if not hits:
                raise FileNotFoundError(f"no file matches {p}")
            out.extend(hits)
        elif os.path.exists(p):
            out.append(p)
        else:
            raise FileNotFoundError(p)
    return out


DEFAULT_SPLIT_SIZE = 128 << 20
_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30}


def split_size(options: Mapping[str, str]) -> int:
    """The ``splitSize`` option in bytes (``4096``, ``64k``, ``128m``, ``1g``); 128 MiB by default."""
    raw = {k.lower(): v for k, v in options.items()}.get("splitsize")
    if raw is None:
        return DEFAULT_SPLIT_SIZE
    text = raw.strip().lower()
    digits = text.rstrip("kmgb")
    unit = text[len(digits) :]
    if not digits.isdigit() or unit not in _SIZE_UNITS or int(digits) <= 0:
        raise ValueError(f"splitSize must be a positive size such as 4096, 64k, 128m or 1g, not {raw!r}")
    return int(digits) * _SIZE_UNITS[unit]


def byte_splits(size: int, split: int) -> list[tuple[int, int | None]]:
    """``[start, end)`` ranges cutting a file of ``size`` bytes; the last one is open (None)
    so a file that grew since it was listed is still read to its end."""
    if size <= split:
        return [(0, None)]
    starts = list(range(0, size, split))
    return [(s, s + split) for s in starts[:-1]] + [(starts[-1], None)]


def _is_offset_name(name: str) -> bool:
    # MappedFileQueue names files by their first offset, 20 digits zero-padded.
    return bool(name) and set(name) <= _DIGITS


def _files_under(path: str) -> list[str]:
    if _is_uri(path):
        import pyarrow.fs as pafs

        fs, inner, prefix = _uri_fs(path)
        infos = fs.get_file_info(pafs.FileSelector(inner, recursive=True))
        return sorted(prefix + i.path for i in infos if i.type == pafs.FileType.File)
    found: list[str] = []
    for root, dirs, files in os.walk(path):
        dirs.sort()
        found.extend(os.path.join(root, f) for f in sorted(files))
    return found


def store_subdir(path: str, name: str) -> str:
    """``path/name`` when ``path`` is a store directory holding it, else ``path``."""
    sub = os.path.join(path, name)
    return sub if _isdir(path) and _isdir(sub) else path


def commitlog_files(paths: list[str]) -> list[tuple[str, int]]:
    """(file, first CommitLog offset) for a store dir, a commitlog dir or single files; for a store
    in DLedger mode (no CommitLog files, a ``dledger-*`` ledger), a ledger or its ``data`` dir, the
    ledger's data files (their offsets are the ledger's: a record sits 48 bytes into its entry).

    The offset comes from the file name as the broker names it; a file given
    explicitly under another name is taken to start at offset 0.
    """
    from .dledger import ledger_data_dirs

    out: list[tuple[str, int]] = []
    for p in expand(paths):
        commit_dir = store_subdir(p, "commitlog")
        ledgers = ledger_data_dirs(p, _listdir, _isdir)
        if ledgers:
            # DLedger mode: the records live in the ledger's data files (as `rocketpy store dump` reads it),
            # and below them, in a store that was plain before (the divided CommitLog), in its old CommitLog
            for d in [*ledgers, *([] if commit_dir == p else [commit_dir])]:
                names = sorted(n for n in _listdir(d) if _is_offset_name(n) and _isfile(os.path.join(d, n)))
                out.extend((os.path.join(d, n), int(n)) for n in names)
            continue
        p = commit_dir
        if _isdir(p):
            names = sorted(n for n in _listdir(p) if _is_offset_name(n) and _isfile(os.path.join(p, n)))
            out.extend((os.path.join(p, n), int(n)) for n in names)
        else:
            name = os.path.basename(p)
            out.append((p, int(name) if _is_offset_name(name) else 0))
    return sorted(out, key=lambda t: (t[1], t[0]))


def consumequeue_files(paths: list[str]) -> list[tuple[str, str, int, int]]:
    """(file, topic, queue id, first byte offset in the queue) under ``consumequeue/<topic>/<queueId>/``.

    Accepts a store dir, the consumequeue dir, a topic dir, a queue dir or a file;
    the topic and queue id are read from the two directory names above each file.
    """
    out: list[tuple[str, str, int, int]] = []
    for p in expand(paths):
        p = store_subdir(p, "consumequeue")
        files = _files_under(p) if _isdir(p) else [p]
        for f in files:
            name = os.path.basename(f)
            qdir = os.path.dirname(f if _is_uri(f) else os.path.abspath(f))
            qid = os.path.basename(qdir)
            topic = os.path.basename(os.path.dirname(qdir))
            if not _is_offset_name(name) or not qid.lstrip("-").isdigit():
                continue
            out.append((f, topic, int(qid), int(name)))
    return sorted(out, key=lambda t: (t[1], t[2], t[3]))


def index_files(paths: list[str]) -> list[str]:
    """IndexFiles (named by creation time, 17 digits) in a store dir, the index dir, or given files."""
    out: list[str] = []
    for p in expand(paths):
        p = store_subdir(p, "index")
        if _isdir(p):
            out.extend(os.path.join(p, n) for n in sorted(_listdir(p)) if _is_offset_name(n))
        else:
            out.append(p)
    return out


PCAP_SUFFIXES = (".pcap", ".pcapng", ".cap", ".dump")


def pcap_files(paths: list[str]) -> list[str]:
    """Capture files: given files as they are, directories searched for pcap/pcapng files."""
    out: list[str] = []
    for p in expand(paths):
        if _isdir(p):
            out.extend(f for f in _files_under(p) if f.endswith(PCAP_SUFFIXES))
        else:
            out.append(p)
    return out


def read_whole(fs: Any, inner: str) -> bytes:
    """A file of a ``pyarrow.fs`` filesystem as bytes (what a task on another filesystem reads)."""
    with fs.open_input_file(inner) as f:
        return f.read()


def open_binary(path: str) -> Any:
    """A readable, seekable file object, by path or URI."""
    if _is_uri(path):
        fs, inner, _ = _uri_fs(path)
        return fs.open_input_file(inner)
    return open(path, "rb")


@contextlib.contextmanager
def mapped(path: str) -> Iterator[mmap.mmap | bytes]:
    """The file mapped read-only: the OS pages it in as the walk advances, nothing is copied whole.

    An empty file cannot be mapped; it reads as ``b""``. A URI is opened through
    ``pyarrow.fs``: a local one is mapped as a path is, any other is read whole.
    """
    if _is_uri(path):
        fs, inner, _ = _uri_fs(path)
        if not _local_fs(fs):
            yield read_whole(fs, inner)
            return
        path = inner
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            yield b""
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            with contextlib.suppress(AttributeError, OSError):
                mm.madvise(mmap.MADV_SEQUENTIAL)  # records are walked front to back
            yield mm
        finally:
            try:
                mm.close()
            except BufferError:
                # A view of it is still alive (an exception unwound past its release);
                # the mapping goes when that view is collected.
                pass


ReadAt = Callable[[int, int], bytes]


@contextlib.contextmanager
def ranged(path: str) -> Iterator[ReadAt]:
    """``read_at(offset, n)`` over a file (a path or a URI): only the bytes asked for are read
    (``pread`` locally, ``RandomAccessFile.read_at`` through ``pyarrow.fs``); each read is counted."""
    if _is_uri(path):
        fs, inner, _ = _uri_fs(path)
        with fs.open_input_file(inner) as f:

            def read_remote(offset: int, n: int) -> bytes:
                data = f.read_at(n, offset) if n > 0 else b""
                READ_STATS["bytes"] += len(data)
                return bytes(data)

            yield read_remote
        return
    fd = os.open(path, os.O_RDONLY)
    try:

        def read_local(offset: int, n: int) -> bytes:
            data = os.pread(fd, n, offset) if n > 0 else b""
            READ_STATS["bytes"] += len(data)
            return data

        yield read_local
    finally:
        os.close(fd)


@contextlib.contextmanager
def zeroed(size: int) -> Iterator[mmap.mmap | bytes]:
    """A file-sized buffer of zeros, to be filled with some of a file's bytes at their own
    positions: an anonymous mapping, so only the pages written take memory."""
    if size == 0:
        yield b""
        return
    mm = mmap.mmap(-1, size)
    try:
        yield mm
    finally:
        try:
            mm.close()
        except BufferError:
            pass  # a view is still alive (an exception unwound past it); it goes with the view


@contextlib.contextmanager
def window(path: str, size: int, lo: int, hi: int) -> Iterator[mmap.mmap | bytes]:
    """A :func:`zeroed` buffer holding the bytes ``[lo, hi)`` of a file at their own positions."""
    with zeroed(size) as buf:
        if size:
            fill(path, buf, lo, hi)
        yield buf


def coalesced_ranges(starts: Any, width: int, gap: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` byte ranges covering items of ``width`` bytes at the sorted positions
    ``starts`` (a numpy array), joining items at most ``gap`` bytes apart into one range."""
    import numpy as np

    if len(starts) == 0:
        return []
    breaks = np.flatnonzero(np.diff(starts) - width > gap)
    firsts = np.concatenate(([0], breaks + 1))
    lasts = np.concatenate((breaks, [len(starts) - 1]))
    return [(int(starts[a]), int(starts[b]) + width) for a, b in zip(firsts, lasts)]


def fill(path: str, buf: mmap.mmap | bytes, lo: int, hi: int, chunk: int = 8 << 20) -> None:
    """Read ``[lo, hi)`` of the file into the same positions of ``buf`` (ranged reads)."""
    with ranged(path) as read_at:
        fill_from(read_at, buf, lo, hi, chunk)


def fill_from(read_at: ReadAt, buf: mmap.mmap | bytes, lo: int, hi: int, chunk: int = 8 << 20) -> None:
    """:func:`fill` through an open :func:`ranged` reader (several ranges, one open file)."""
    assert isinstance(buf, mmap.mmap)
    for at in range(lo, hi, chunk):
        data = read_at(at, min(chunk, hi - at))
        buf[at : at + len(data)] = data
