"""MixAll.string2File and file2String: config files written whole, the previous one kept as ``.bak``.

Paths are strings throughout: pathlib interns every name it parses (sys.intern), and names made anew
for each write (``.tmp``, ``.bak``) that die after it leave a slot each in CPython's table of interned
strings; under a stream of writes (PUT_KV_CONFIG) the table doubled, 0.9 MiB kept for good.
"""

from __future__ import annotations

import contextlib
import os

__all__ = ["file_to_string", "string_to_file"]


def file_to_string(path: str) -> str | None:
    """MixAll.file2String: the whole file as text, None when it does not exist."""
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def _write(path: str, data: bytes, sync: bool = True) -> None:
    """``data`` into a new ``path``, on disk before this returns (``sync``); on failure (a full disk)
    the partial file is removed and the OSError raised."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    try:
        with open(path, "wb") as f:
            f.write(data)
            f.flush()
            # Java's FileWriter does not fsync; the broker's files do, so the rename below never exposes
            # an empty file
            if sync:
                os.fsync(f.fileno())
    except OSError:
        with contextlib.suppress(OSError):
            os.remove(path)
        raise


def _sync_dir(path: str) -> None:
    try:
        fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _keep_as_backup(path: str, bak: str) -> None:
    """The current ``path`` becomes ``bak`` (what Java's copy leaves): a second link to the same
    blocks, so this needs no space; a copy through a temporary where links are not supported."""
    tmp = bak + ".tmp"
    try:
        os.remove(tmp)
    except FileNotFoundError:
        pass
    try:
        os.link(path, tmp)
    except FileNotFoundError:
        return
    except OSError:
        with open(path, "rb") as f:
            _write(tmp, f.read())
    os.replace(tmp, bak)


def string_to_file(text: str | bytes, path: str, *, sync: bool = True) -> None:
    """MixAll.string2File: write ``.tmp``, keep the previous content as ``.bak``, rename.

    Each step replaces a whole file atomically, so a failure (OSError, e.g. a full disk) at any
    point leaves the previous ``path`` (or, past the last step, the new one) and a readable ``.bak``.
    ``sync=False`` leaves the flushing to the system, as Java's FileWriter does (the NameServer's files:
    a write per PUT_KV_CONFIG, whose answer waits for it).
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    tmp = path + ".tmp"
    _write(tmp, data, sync)
    try:
        _keep_as_backup(path, path + ".bak")
    except OSError:
        with contextlib.suppress(OSError):  # the first failure is the one to report
            os.remove(tmp)
        raise
    os.replace(tmp, path)
    if sync:
        _sync_dir(path)
