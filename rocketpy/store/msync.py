"""msync(MS_SYNC) of part of a mapping, with the GIL released while the disk works.

CPython's ``mmap.flush`` holds the GIL for the whole msync (python/cpython#44098): a group
commit round then stops the event loop for as long as the disk takes, so nothing arriving
meanwhile is read, appended or asked to be flushed, and the next round starts late. The same
system call made through ctypes (which lets the GIL go around every foreign call) keeps the
event loop serving during the sync; the bytes are made durable exactly as before (Java's
MappedByteBuffer.force is the same msync).

The mapping's address is taken once, when the file is mapped (:func:`address_of`); the caller
keeps the mapping alive for the call (MappedFile flushes and unmaps under one lock). Where libc's
msync cannot be found, ``mmap.flush`` does the work, holding the GIL as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
from collections.abc import Callable

__all__ = ["address_of", "msync", "msync_address"]

_MS_SYNC = getattr(mmap, "MS_SYNC", 4)  # Linux's value; the module exposes it from Python 3.13 on


def _libc_msync() -> Callable[[int, int, int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        fn = libc.msync
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    fn.restype = ctypes.c_int
    return fn


_msync = _libc_msync()


def address_of(mm: mmap.mmap) -> int | None:
    """The address of ``mm``'s first byte (None when :func:`msync` will use ``mm.flush``)."""
    if _msync is None:
        return None
    anchor = ctypes.c_char.from_buffer(mm)  # a buffer export, released as soon as the address is read
    try:
        return ctypes.addressof(anchor)
    finally:
        del anchor


def msync(mm: mmap.mmap, address: int | None, start: int, length: int) -> None:
    """Write ``mm[start:start + length]`` to disk and wait for it (``start`` page-aligned); OSError on
    failure. ``address`` is :func:`address_of` ``mm``, which must stay mapped until this returns."""
    if address is None or _msync is None:
        mm.flush(start, length)
        return
    err = msync_address(address + start, length)
    if err:
        raise OSError(err, os.strerror(err))


def msync_address(address: int, length: int) -> int:
    """msync(MS_SYNC) of ``length`` bytes at ``address`` (page-aligned, in a mapping the caller keeps):
    0 when done, the errno on failure, -1 when libc's msync is not there (nothing was synced)."""
    if _msync is None:
        return -1
    if _msync(address, length, _MS_SYNC) != 0:
        return ctypes.get_errno()
    return 0
