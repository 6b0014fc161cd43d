"""Fixed-size memory-mapped files named by their start offset, and queues of them.

This is the storage primitive under the CommitLog and every ConsumeQueue (Java's
MappedFile / MappedFileQueue). A file is created at its full size (zero filled) and
mapped whole; data is appended at ``wrote_position`` and made durable by ``flush``
(msync), which records ``flushed_position``.

Blocks are allocated (posix_fallocate) before anything is written into them: a store
on a full filesystem must get an error where a file is made or grown, never a SIGBUS
on a write into a page the filesystem cannot back. A file allocates itself whole when
created, or, with ``allocation_chunk``, chunk by chunk ahead of its writes (so a 1 GiB
CommitLog file or a 420 MB index file does not take its whole size on disk the moment
it is made, nor an idle queue's ConsumeQueue file its 6 MB). ``allocated`` is how far
writes may go without :meth:`MappedFile.reserve`, which extends it; whoever writes into
``mm`` directly stays below it. It ends ``ALLOCATED_SLACK`` bytes short of the blocks
known to be there, so a reader looking just past the written end (recovery's "is there
another record/unit here?") reads blocks that exist: on tmpfs even a read of a hole needs
a page, and gets a SIGBUS when the filesystem has none left.

Page-sized writes: the kernel's page cache may hold a mapped file in large folios (up to 2 MiB on
Linux 6.x, ext4 included) when faults read ahead, and then every msync writes each dirty folio whole:
one 256-byte record made a 2 MiB write, and a SYNC_FLUSH send waited for it. A queue made with
``write_pages=True`` (the CommitLog's) asks for no read-ahead (MADV_RANDOM) on the file being written,
so its pages stay 4 KiB and an msync writes what changed (SYNC_FLUSH sends/s x1.4-1.8 at 8 producers
in bench_vs_java); a file that is full goes back to normal read-ahead for its readers.

Writes by pwrite: that file also keeps a descriptor (``write_fd``), and appends go in with pwrite rather
than a copy into the mapping. The page cache is the one the mapping shows, so readers (and recovery, HA,
the consumers) read through ``mm`` as before, and an msync of the range (MS_SYNC: a datasync of the file's
range, however its pages were dirtied) makes them durable. What it saves: a write into the mapping faults
on every new page and again on every page an msync has cleaned (ext4's page_mkwrite), and each msync
write-protects the mapped pages again (a TLB shootdown on the writing CPU); a 16 KiB record crossed four
or five pages. pwrite writes only blocks already allocated (``allocated``, as before), and an error is an
OSError, never a SIGBUS. Those blocks stay unwritten extents until written: zeroing them ahead with O_DIRECT
(so that an msync finds written extents) makes each pwrite that starts inside a block read that block from
disk first, one read per 16 KiB record (46 instead of 8 us of wall time per record in a bench of appends).

Pages dropped behind the writes: a queue made with ``drop_behind`` (the CommitLog's) asks the kernel to drop
(POSIX_FADV_DONTNEED, after MADV_DONTNEED unmapped what readers mapped) the cached pages of what was flushed
more than that many bytes ago, a few MiB at a time, from the flush thread (:meth:`MappedFileQueue.drop_cached`),
so that new appends take the page-cache pages just freed instead of fresh memory. On a VM with free page
reporting (virtio-balloon: Firecracker, QEMU) free memory in 2 MiB blocks goes back to the host, and the first
touch of such a page costs a fault in the host: with the recycled free pages used up, a pwrite of 16 KiB took
2.5x the CPU (17 instead of 7 us in a bench of the appends alone, the broker's CPU per 16 KiB SYNC_FLUSH send 23
-> 37 us and its sends/s down a quarter). A reader of those old records still gets them, from disk. The
CommitLog does this on such a VM only (free_page_reporting); elsewhere, as Java's broker, it leaves the page
cache to the kernel.

Threading: one writer appends (the store's caller, e.g. the trio thread) while a
flush may run in a worker thread (trio.to_thread). Appends never take the file's
lock (a pwrite from Python and the close of ``write_fd`` share a small write lock of
their own, never held over an msync); flush, close and destroy serialise on the file's
lock so a file is never unmapped under an msync. Structural changes of a queue (new/removed files) take the
queue's lock. The files of a ConsumeQueue (``shared_locks``) take both locks from 64 stripes shared by
all such files (see LOCK_STRIPES): closing one may wait for another's msync.
"""

from __future__ import annotations

import errno
import itertools
import logging
import mmap
import os
import threading
from collections.abc import Callable

from .config import OS_PAGE_SIZE
from .msync import address_of, msync
from .types import StoreError

__all__ = ["MappedFile", "MappedFileQueue", "SyncHook", "allocate", "drop_plan", "offset_to_file_name"]

log = logging.getLogger("rocketpy.store")

#: allocated bytes kept past the writable limit: more than any look past the written end reads
ALLOCATED_SLACK = 64

SyncHook = Callable[[str, int, int], None]
"""Called after each msync with (path, from_position, to_position): tests record flushes with it."""


def offset_to_file_name(offset: int) -> str:
    """UtilAll.offset2FileName: the offset as 20 zero-padded digits."""
    return f"{offset:020d}"


#: how much a call of MappedFileQueue.drop_cached drops at a time, and at most per call
DROP_STEP = 4 * 1024 * 1024
DROP_MOST = 16 * DROP_STEP


def drop_plan(
    dropped: int, flushed: int, behind: int, file_size: int, *, step: int = DROP_STEP, most: int = DROP_MOST
) -> list[tuple[int, int]]:
    """The queue ranges (start, length) whose cached pages go: from ``dropped`` up to ``behind`` bytes short
    of ``flushed``, in ``step``-sized pieces that never cross a file end, ``most`` bytes at most; only whole
    steps (nothing while less than a step lies there)."""
    limit = min(flushed - behind, dropped + most)
    plan: list[tuple[int, int]] = []
    start = dropped
    while True:
        length = min(step, file_size - start % file_size)
        if start + length > limit:
            return plan
        plan.append((start, length))
        start += length


def _first_hole(fd: int, size: int) -> int:
    """Where the first hole of a file begins (its size when it has none, 0 when it cannot be told)."""
    try:
        return min(size, os.lseek(fd, 0, os.SEEK_HOLE))
    except (OSError, AttributeError):
        return 0


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


#: errors of a filesystem that cannot preallocate at all (not of one that is full)
_UNSUPPORTED = (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS)
_unsupported_logged = False


def allocate(fd: int, offset: int, length: int) -> None:
    """Make sure the blocks of [offset, offset + length) exist (OSError, e.g. ENOSPC, when they cannot).

    posix_fallocate: glibc falls back to writing a byte per block where the filesystem has
    no fallocate, so this works almost everywhere, tmpfs included. Where it cannot work at all,
    files stay sparse as before (logged once) rather than every write being refused.
    """
    global _unsupported_logged
    if length <= 0:
        return
    try:
        os.posix_fallocate(fd, offset, length)
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED:
            raise
        if not _unsupported_logged:
            _unsupported_logged = True
            log.warning("this filesystem cannot preallocate store files (%s): a full disk may stop the broker", exc)


#: The locks of ConsumeQueue files, shared by stripe: a broker keeps thousands of them, and two locks of their
#: own each were two objects and two OS semaphores (C heap) per file, left scattered through memory by files made
#: while the broker served. Sharing is safe because no code holds two files' locks of one kind at once (a
#: SyncHook must not flush, close or drop another file); a file's stripe is fixed when it is made. The cost: a
#: close waits for the msync of another file of its stripe, a small ConsumeQueue range. CommitLog, index and
#: DLedger files, few and big, keep locks of their own, so that no msync of theirs waits for another file's.
LOCK_STRIPES = 64
_FILE_LOCKS = tuple(threading.Lock() for _ in range(LOCK_STRIPES))
_WRITE_LOCKS = tuple(threading.Lock() for _ in range(LOCK_STRIPES))
_stripe_turns = itertools.count()  # files take the stripes in turn


class MappedFile:
    """One mapped file of ``file_size`` bytes whose name is its start offset."""

    # (slots: a store holds a MappedFile per file for as long as it runs)
    __slots__ = (
        "path", "file_size", "file_from_offset", "wrote_position", "flushed_position", "store_timestamp",
        "first_create_in_queue", "_sync_hook", "_lock", "_write_lock", "_closed", "allocation_chunk", "write_fd",
        "allocated", "_allocated_end", "mm", "_address",
    )  # fmt: skip

    def __init__(
        self,
        path: str,
        file_size: int,
        *,
        sync_hook: SyncHook | None = None,
        allocation_chunk: int = 0,
        initial_allocation: int | None = None,
        shared_locks: bool = False,
    ) -> None:
        """Map ``path``, creating it when it does not exist, with ``initial_allocation`` bytes
        allocated (default: the first ``allocation_chunk``, or the whole file without one); an
        existing file is mapped as it is, ``allocated`` up to its first hole. OSError when the file
        cannot be made, and then nothing is left behind."""
        self.path = path
        self.file_size = file_size
        self.file_from_offset = int(os.path.basename(path))
        self.wrote_position = 0
        self.flushed_position = 0
        self.store_timestamp = 0  # of the last record appended (CommitLog only)
        self.first_create_in_queue = False
        self._sync_hook = sync_hook
        if shared_locks:
            stripe = next(_stripe_turns) % LOCK_STRIPES
            self._lock, self._write_lock = _FILE_LOCKS[stripe], _WRITE_LOCKS[stripe]
        else:
            self._lock, self._write_lock = threading.Lock(), threading.Lock()
        # _lock: held over an msync, a drop of cached pages and the unmapping (never the put path).
        # _write_lock: held by a pwrite from Python (it lets the GIL go) and by the descriptor's close: a put
        # racing a close must never write into whatever file the descriptor number is given to next.
        self._closed = False
        self.allocation_chunk = allocation_chunk
        #: the descriptor appends pwrite into while this is the file being written (advise_writing), else -1
        self.write_fd = -1
        self.allocated = 0  # writes below this need no reserve()
        self._allocated_end = 0  # the blocks known to exist: [0, this)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        made = False
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            made = True
        except FileExistsError:
            fd = os.open(path, os.O_RDWR)
        try:
            if os.fstat(fd).st_size < file_size:
                # Like RandomAccessFile + map: the file gets its full size, zero filled.
                os.ftruncate(fd, file_size)
            if made:
                if initial_allocation is None:
                    initial_allocation = allocation_chunk if allocation_chunk > 0 else file_size
                end = min(initial_allocation, file_size)
                allocate(fd, 0, end)
                self._set_allocated(end)
            else:
                self._set_allocated(_first_hole(fd, file_size))
            self.mm = mmap.mmap(fd, file_size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            self._address = address_of(self.mm)  # for msync without the GIL
        except BaseException:
            os.close(fd)
            if made:
                _remove_quietly(path)
            raise
        os.close(fd)

    # -- state -----------------------------------------------------------------

    @property
    def file_name(self) -> str:
        return os.path.basename(self.path)

    @property
    def read_position(self) -> int:
        """How far readers may read (no transient store pool: the wrote position)."""
        return self.wrote_position

    def is_full(self) -> bool:
        return self.wrote_position == self.file_size

    def advise_writing(self, writing: bool) -> None:
        """While this file is written: small page-cache pages (no read-ahead) and appends by pwrite (see
        the module docstring); once it is only read, normal read-ahead and no descriptor kept. Where
        madvise is missing or the file cannot be opened again, writes go through the mapping as before."""
        if self._closed:
            return
        if writing and self.write_fd < 0:
            try:
                self.write_fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
            except OSError as exc:
                log.warning("cannot open %s for writing (writes go through the mapping): %s", self.path, exc)
        elif not writing:
            self._close_write_fd()
        advice = getattr(mmap, "MADV_RANDOM" if writing else "MADV_NORMAL", None)
        if advice is None:
            return
        try:
            self.mm.madvise(advice)
        except (OSError, ValueError) as exc:  # advice only: the file works the same without it
            log.debug("madvise on %s: %s", self.path, exc)

    def _close_write_fd(self) -> None:
        with self._write_lock:  # (a pwrite under way ends first; the compiled appender keeps the GIL throughout)
            fd, self.write_fd = self.write_fd, -1
        if fd >= 0:
            os.close(fd)

    @property
    def is_available(self) -> bool:
        return not self._closed

    def set_positions(self, pos: int) -> None:
        self.wrote_position = pos
        self.flushed_position = pos

    def last_modified_ms(self) -> int:
        try:
            return int(os.stat(self.path).st_mtime * 1000)
        except OSError:
            return 0

    # -- writing -----------------------------------------------------------------

    def reserve(self, end: int) -> None:
        """Make sure the blocks below ``end`` exist before anything is written there (OSError when
        the filesystem cannot give them): a chunk ahead, or the whole file."""
        if end <= self.allocated:
            return
        chunk = self.allocation_chunk
        done = self._allocated_end
        target = min(max(end + ALLOCATED_SLACK, done + chunk) if chunk > 0 else self.file_size, self.file_size)
        # (not under the file's lock: that one is held through a flush's msync, and this runs on the put path)
        if self._closed:
            raise OSError(errno.EBADF, "mapped file is closed", self.path)
        fd = os.open(self.path, os.O_RDWR)
        try:
            allocate(fd, done, target - done)
        finally:
            os.close(fd)
        self._set_allocated(target)

    def _set_allocated(self, end: int) -> None:
        self._allocated_end = end
        self.allocated = self.file_size if end >= self.file_size else max(0, end - ALLOCATED_SLACK)

    def append(self, data: bytes) -> bool:
        """Append at the wrote position; False when it does not fit (OSError when its blocks cannot
        be allocated)."""
        pos = self.wrote_position
        end = pos + len(data)
        if end > self.file_size:
            return False
        if end > self.allocated:
            self.reserve(end)
        self._write(pos, data)
        self.wrote_position = end
        return True

    def write_at(self, pos: int, data: bytes) -> None:
        """Write ``data`` at ``pos`` (OSError when its blocks cannot be allocated or written)."""
        end = pos + len(data)
        if end > self.allocated:
            self.reserve(end)
        self._write(pos, data)

    def _write(self, pos: int, data: bytes) -> None:
        with self._write_lock:
            fd = self.write_fd
            if fd < 0:
                self.mm[pos : pos + len(data)] = data
                return
            done = os.pwrite(fd, data, pos)
        if done != len(data):  # (allocated blocks: not expected; the caller then has not moved its position)
            raise OSError(errno.EIO, f"short write ({done} of {len(data)} bytes) at {pos}", self.path)

    def zero_from(self, pos: int) -> int:
        """Zero the bytes after ``pos``, chunk by chunk, until a chunk is already all zero.

        Recovery calls this past a truncation point so that stale records beyond it
        can never be mistaken for valid ones by a later recovery. Data is written
        front to back, so the first all-zero MiB marks the never-written tail.
        Returns how many bytes after ``pos`` held data (up to the last non-zero byte).
        """
        chunk = 1 << 20
        p = pos
        extent = 0
        end = min(self.file_size, self._allocated_end)  # past the first hole there is no data to clear
        while p < end:
            n = min(chunk, end - p)
            block = self.mm[p : p + n]
            if block.count(0) == n:
                break
            extent = p + len(block.rstrip(b"\x00")) - pos
            self.reserve(p + n)  # a file made elsewhere may have holes among its data
            self.mm[p : p + n] = bytes(n)
            p += n
        return extent

    # -- reading -----------------------------------------------------------------

    def read(self, pos: int, size: int) -> bytes | None:
        """``size`` bytes at ``pos`` if they lie below the read position."""
        if pos < 0 or size < 0 or pos + size > self.read_position:
            return None
        return self.mm[pos : pos + size]

    def read_from(self, pos: int) -> bytes | None:
        """Everything from ``pos`` up to the read position."""
        rp = self.read_position
        if pos < 0 or pos >= rp:
            return None
        return self.mm[pos:rp]

    def view(self) -> memoryview:
        return memoryview(self.mm)

    # -- flushing ------------------------------------------------------------------

    def _able_to_flush(self, least_pages: int) -> bool:
        flush, write = self.flushed_position, self.read_position
        if self.is_full():
            return write > flush
        if least_pages > 0:
            return write // OS_PAGE_SIZE - flush // OS_PAGE_SIZE >= least_pages
        return write > flush

    def flush(self, least_pages: int = 0) -> int:
        """msync what was written since the last flush; returns the flushed position."""
        if not self._able_to_flush(least_pages):
            return self.flushed_position
        with self._lock:
            if self._closed:
                return self.flushed_position
            # Capture before msync: everything below it was fully written when read.
            value = self.read_position
            start = (self.flushed_position // mmap.PAGESIZE) * mmap.PAGESIZE
            if value > start:
                msync(self.mm, self._address, start, value - start)
                if self._sync_hook is not None:
                    self._sync_hook(self.path, start, value)
            self.flushed_position = value
        return value

    def dirty_range(self) -> tuple[int, int, int] | None:
        """(address, start, stop): what :meth:`flush` would msync now (``start`` page-aligned), for a
        caller that syncs it by address and then says so with :meth:`note_synced`; None when nothing
        is to sync or the mapping has no address."""
        stop = self.read_position
        if self._address is None or self._closed or stop <= self.flushed_position:
            return None
        return self._address, (self.flushed_position // mmap.PAGESIZE) * mmap.PAGESIZE, stop

    def note_synced(self, start: int, stop: int) -> bool:
        """``[start, stop)`` of the mapping was msynced (by address, from :meth:`dirty_range`) with
        every byte below ``stop`` written before: the flushed position moves there. False, and nothing
        changes, when the file was closed meanwhile (the address may then have meant another mapping)."""
        with self._lock:
            if self._closed:
                return False
            if self._sync_hook is not None:
                self._sync_hook(self.path, start, stop)
            if start <= self.flushed_position < stop:
                self.flushed_position = stop
            return True

    # -- page cache ------------------------------------------------------------------

    def drop_cached(self, pos: int, length: int) -> bool:
        """Let the kernel drop the cached pages of ``length`` bytes at ``pos`` (flushed data: advice only);
        False when the file is closed. The range is unmapped from this process first (MADV_DONTNEED: the
        next read maps it again, from disk): fadvise leaves a page alone while it is mapped, and every page
        a reader touched is."""
        with self._lock:  # (not while close() unmaps)
            if self._closed:
                return False
            dontneed = getattr(mmap, "MADV_DONTNEED", None)
            if dontneed is not None:
                self.mm.madvise(dontneed, pos, length)
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.posix_fadvise(fd, pos, length, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        return True

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._close_write_fd()
                self.mm.close()

    def destroy(self) -> bool:
        """Unmap and delete the file."""
        self.close()
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("cannot delete %s: %s", self.path, exc)
            return False
        return True

    def __repr__(self) -> str:
        return f"MappedFile({self.path!r}, wrote={self.wrote_position}, flushed={self.flushed_position})"


class MappedFileQueue:
    """The files of one directory, contiguous by offset: a CommitLog or a ConsumeQueue."""

    __slots__ = (
        "store_path", "mapped_file_size", "allocation_chunk", "write_pages", "drop_behind", "_dropped_where",
        "_drop_lock", "files", "flushed_where", "store_timestamp", "_sync_hook", "_lock", "shared_locks",
    )  # fmt: skip

    def __init__(
        self,
        store_path: str,
        mapped_file_size: int,
        *,
        sync_hook: SyncHook | None = None,
        allocation_chunk: int = 0,
        write_pages: bool = False,
        drop_behind: int = 0,
        shared_locks: bool = False,
    ) -> None:
        self.store_path = store_path
        #: the files take their locks from the shared stripes (a ConsumeQueue's: see LOCK_STRIPES)
        self.shared_locks = shared_locks
        self.mapped_file_size = mapped_file_size
        self.allocation_chunk = allocation_chunk
        #: the file being written keeps 4 KiB page-cache pages (see the module docstring)
        self.write_pages = write_pages
        #: cached pages more than this many bytes behind ``flushed_where`` are dropped (0: never; see the
        #: module docstring and drop_cached)
        self.drop_behind = drop_behind
        self._dropped_where = -1  # pages below this were dropped (-1: not started)
        self._drop_lock = threading.Lock()
        self.files: list[MappedFile] = []
        self.flushed_where = 0
        self.store_timestamp = 0  # of the last record covered by a full flush
        self._sync_hook = sync_hook
        self._lock = threading.RLock()

    # -- loading ---------------------------------------------------------------------

    def load(self, *, repair_short_last: bool = False) -> None:
        """Map every file of the directory, positions at the file end (recovery sets them).

        Java refuses to start when a file's length differs from the configured size;
        so do we, except that ``repair_short_last`` lets a crashed store's last file be
        extended (zero filled) instead.
        """
        try:
            names = sorted(os.listdir(self.store_path))
        except FileNotFoundError:
            return
        names = [n for n in names if n.isdigit() and os.path.isfile(os.path.join(self.store_path, n))]
        for i, name in enumerate(names):
            path = os.path.join(self.store_path, name)
            size = os.path.getsize(path)
            if size != self.mapped_file_size:
                last = i == len(names) - 1
                if not (repair_short_last and last and size < self.mapped_file_size):
                    raise StoreError(
                        f"{path} is {size} bytes, but the configured mapped file size is "
                        f"{self.mapped_file_size}; check mappedFileSize* settings"
                    )
                log.warning("%s is short (%d bytes): extending it to %d", path, size, self.mapped_file_size)
            mf = self._open(path)
            mf.set_positions(self.mapped_file_size)
            self.files.append(mf)
        if self.write_pages and self.files:
            self.files[-1].advise_writing(True)

    # -- lookup ------------------------------------------------------------------------

    def first_file(self) -> MappedFile | None:
        files = self.files
        return files[0] if files else None

    def last_file(self) -> MappedFile | None:
        files = self.files
        return files[-1] if files else None

    def get_last_mapped_file(self, start_offset: int = 0, create: bool = True) -> MappedFile | None:
        """The file to append to; a new one when the last is full or there is none."""
        last = self.last_file()
        create_offset = -1
        if last is None:
            create_offset = start_offset - start_offset % self.mapped_file_size
        elif last.is_full():
            create_offset = last.file_from_offset + self.mapped_file_size
        if create_offset != -1 and create:
            mf = self._create(create_offset)
            if self.write_pages and last is not None:
                last.advise_writing(False)
            return mf
        return last

    def _create(self, offset: int) -> MappedFile:
        """A new file at ``offset`` (OSError, e.g. ENOSPC, when its blocks cannot be allocated)."""
        mf = self._open(os.path.join(self.store_path, offset_to_file_name(offset)))
        if self.write_pages:
            mf.advise_writing(True)
        with self._lock:
            if not self.files:
                mf.first_create_in_queue = True
            self.files.append(mf)
        return mf

    def _open(self, path: str) -> MappedFile:
        return MappedFile(
            path, self.mapped_file_size, sync_hook=self._sync_hook, allocation_chunk=self.allocation_chunk,
            shared_locks=self.shared_locks,
        )

    def find_by_offset(self, offset: int, return_first_on_not_found: bool = False) -> MappedFile | None:
        files = self.files
        if not files:
            return None
        first, last = files[0], files[-1]
        if first.file_from_offset <= offset < last.file_from_offset + self.mapped_file_size:
            index = offset // self.mapped_file_size - first.file_from_offset // self.mapped_file_size
            if 0 <= index < len(files):
                mf = files[index]
                if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                    return mf
            for mf in files:
                if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                    return mf
        return first if return_first_on_not_found else None

    def get_mapped_file_by_time(self, timestamp: int) -> MappedFile | None:
        """The first file modified at or after ``timestamp``, else the last."""
        files = list(self.files)
        if not files:
            return None
        for mf in files:
            if mf.last_modified_ms() >= timestamp:
                return mf
        return files[-1]

    @property
    def min_offset(self) -> int:
        first = self.first_file()
        return first.file_from_offset if first is not None else -1

    @property
    def max_offset(self) -> int:
        last = self.last_file()
        return last.file_from_offset + last.read_position if last is not None else 0

    def remain_to_flush(self) -> int:
        return self.max_offset - self.flushed_where

    # -- truncation and deletion --------------------------------------------------------

    def truncate_dirty_files(self, offset: int, *, zero_tail: bool = False) -> int:
        """Cut the queue at ``offset``: the file holding it ends there, later files go.

        With ``zero_tail`` the cut file's bytes past ``offset`` are zeroed; returns how
        many of them held data.
        """
        removed: list[MappedFile] = []
        dropped = 0
        for mf in list(self.files):
            tail = mf.file_from_offset + self.mapped_file_size
            if tail > offset:
                if offset >= mf.file_from_offset:
                    pos = offset % self.mapped_file_size
                    if zero_tail:
                        dropped += mf.zero_from(pos)
                    mf.set_positions(pos)
                else:
                    mf.destroy()
                    removed.append(mf)
        if removed:
            with self._lock:
                self.files = [f for f in self.files if f not in removed]
        return dropped

    def delete_last_file(self) -> None:
        last = self.last_file()
        if last is not None:
            last.destroy()
            with self._lock:
                self.files = [f for f in self.files if f is not last]

    def _drop(self, gone: list[MappedFile]) -> None:
        if gone:
            with self._lock:
                self.files = [f for f in self.files if f not in gone]

    def delete_expired_by_time(
        self,
        expired_ms: int,
        now_ms: int,
        *,
        clean_immediately: bool = False,
        batch_max: int = 10,
        keep_from: int | None = None,
    ) -> list[str]:
        """deleteExpiredFileByTime: oldest first, never the last file, stop at the first one kept.

        ``keep_from``: a file holding any byte at or past this offset stays (the caller's bytes
        not yet flushed or dispatched), and so does every later one.
        """
        files = list(self.files)
        gone: list[MappedFile] = []
        for mf in files[:-1]:
            if keep_from is not None and mf.file_from_offset + self.mapped_file_size > keep_from:
                break
            if now_ms >= mf.last_modified_ms() + expired_ms or clean_immediately:
                if not mf.destroy():
                    break
                gone.append(mf)
                if len(gone) >= batch_max:
                    break
            else:
                break  # never leave a hole in the middle of the queue
        self._drop(gone)
        return [mf.path for mf in gone]

    def delete_expired_by_offset(self, offset: int, unit_size: int) -> list[str]:
        """deleteExpiredFileByOffset: drop ConsumeQueue files whose last unit points below ``offset``."""
        files = list(self.files)
        gone: list[MappedFile] = []
        for mf in files[:-1]:
            last_unit = mf.read(self.mapped_file_size - unit_size, 8)
            if last_unit is None:
                if mf.is_available:
                    break
                destroy = True
            else:
                destroy = int.from_bytes(last_unit, "big", signed=True) < offset
            if not destroy or not mf.destroy():
                break
            gone.append(mf)
        self._drop(gone)
        return [mf.path for mf in gone]

    def reset_offset(self, offset: int) -> bool:
        last = self.last_file()
        if last is not None and last.file_from_offset + last.wrote_position - offset > self.mapped_file_size * 2:
            return False
        for mf in reversed(list(self.files)):
            if offset >= mf.file_from_offset:
                mf.set_positions(offset % self.mapped_file_size)
                break
            mf.destroy()
            self._drop([mf])
        return True

    # -- flushing -----------------------------------------------------------------------

    def flush(self, least_pages: int = 0) -> bool:
        """Flush the file holding ``flushed_where``; True when nothing new was flushed."""
        mf = self.find_by_offset(self.flushed_where, self.flushed_where == 0)
        if mf is None:
            return True
        ts = mf.store_timestamp
        where = mf.file_from_offset + mf.flush(least_pages)
        unchanged = where == self.flushed_where
        self.flushed_where = where
        if least_pages == 0:
            self.store_timestamp = ts
        return unchanged

    def dirty_range(self, offset: int) -> tuple[MappedFile, int, int, int] | None:
        """(file, address, start, stop): the range to msync for ``flushed_where >= offset`` when it lies
        in the one file holding ``flushed_where`` (see MappedFile.dirty_range), else None."""
        mf = self.find_by_offset(self.flushed_where, self.flushed_where == 0)
        if mf is None or offset > mf.file_from_offset + mf.read_position:
            return None
        dirty = mf.dirty_range()
        return None if dirty is None else (mf, *dirty)

    def note_synced(self, mf: MappedFile, start: int, stop: int, stamp: int) -> None:
        """``mf``'s ``[start, stop)`` was msynced (see MappedFile.note_synced), the last record below
        ``stop`` stored at ``stamp``: ``flushed_where`` moves on when it was inside that range."""
        if not mf.note_synced(start, stop):
            return
        begin = mf.file_from_offset
        if begin + start <= self.flushed_where < begin + stop:
            self.flushed_where = begin + stop
            self.store_timestamp = stamp

    def drop_cached(self) -> int:
        """Drop the cached pages of what was flushed more than ``drop_behind`` bytes ago, up to DROP_MOST
        bytes a call (the flush thread's, after a round: fadvise lets the GIL go); the bytes dropped. Where it
        starts is ``drop_behind`` short of the flushed offset the first call sees, so a restarted store's old
        files are left as they are. Advice only: a file gone or an error skips its range."""
        behind = self.drop_behind
        if behind <= 0:
            return 0
        dropped = self._dropped_where
        if dropped >= 0 and self.flushed_where - behind < dropped + min(DROP_STEP, self.mapped_file_size):
            return 0  # (the common case, after each group commit round: not a step to drop yet)
        if not self._drop_lock.acquire(blocking=False):
            return 0
        try:
            flushed = self.flushed_where
            if self._dropped_where < 0:
                start = max(0, self.min_offset, flushed - behind)
                self._dropped_where = start - start % DROP_STEP
            done = 0
            for start, length in drop_plan(self._dropped_where, flushed, behind, self.mapped_file_size):
                mf = self.find_by_offset(start)
                if mf is not None and mf.is_available:
                    try:
                        if mf.drop_cached(start - mf.file_from_offset, length):
                            done += length
                    except (OSError, ValueError, AttributeError) as exc:  # (no posix_fadvise: not Linux)
                        log.debug("cannot drop cached pages of %s: %s", mf.path, exc)
                self._dropped_where = start + length
            return done
        finally:
            self._drop_lock.release()

    def flush_until(self, offset: int) -> bool:
        """Flush until ``flushed_where >= offset`` (crossing into the next file if needed)."""
        for _ in range(len(self.files) + 1):
            if self.flushed_where >= offset:
                return True
            before = self.flushed_where
            self.flush(0)
            if self.flushed_where == before:
                break
        return self.flushed_where >= offset

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        for mf in list(self.files):
            mf.close()

    def destroy(self) -> None:
        for mf in list(self.files):
            mf.destroy()
        with self._lock:
            self.files = []
        self.flushed_where = 0
        self._dropped_where = -1
        try:
            os.rmdir(self.store_path)
        except OSError:
            pass
