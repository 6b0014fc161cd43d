"""rocketpy.store.msync: the msync the mapped files flush with (the GIL let go while the disk works)."""

from __future__ import annotations

import errno
import mmap
import os
from pathlib import Path

import pytest

from rocketpy.store import msync as msync_module
from rocketpy.store.mapped_file import MappedFile
from rocketpy.store.msync import address_of, msync

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def mapped(tmp_path: Path):  # type: ignore[no-untyped-def]
    path = tmp_path / "f"
    with open(path, "wb") as f:
        f.truncate(4 * mmap.PAGESIZE)
    with open(path, "r+b") as f:
        mm = mmap.mmap(f.fileno(), 4 * mmap.PAGESIZE)
    yield path, mm
    mm.close()


@pytest.mark.parametrize("through", ["libc", "mmap.flush"])
def test_msync_writes_the_range_and_reports_errors(mapped, monkeypatch, through) -> None:  # type: ignore[no-untyped-def]
    path, mm = mapped
    if through == "mmap.flush":
        monkeypatch.setattr(msync_module, "_msync", None)
    elif msync_module._msync is None:
        pytest.skip("no libc msync here")
    address = address_of(mm)
    assert (address is None) == (through == "mmap.flush")
    mm[mmap.PAGESIZE : mmap.PAGESIZE + 5] = b"hello"
    msync(mm, address, mmap.PAGESIZE, 5)
    with open(path, "rb") as f:
        assert f.read()[mmap.PAGESIZE : mmap.PAGESIZE + 5] == b"hello"
    # an msync the kernel refuses (a start inside a page) is an OSError, never a silent success
    with pytest.raises(OSError) as err:
        msync(mm, address, 1, 5)
    assert err.value.errno == errno.EINVAL


def test_mapped_file_takes_its_address_once_and_can_still_close(tmp_path: Path) -> None:
    """The address is read through a buffer export that is let go at once: the mapping still closes."""
    mf = MappedFile(str(tmp_path / "00000000000000000000"), 8 * mmap.PAGESIZE)
    assert mf.append(b"x" * 100)
    assert mf.flush() == 100
    mf.close()  # BufferError if an export were still alive
    assert not mf.is_available
    with open(mf.path, "rb") as f:
        assert os.fstat(f.fileno()).st_size == 8 * mmap.PAGESIZE and f.read(100) == b"x" * 100
