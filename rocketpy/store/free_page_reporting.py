"""Whether this machine gives its free memory back to a host (virtio-balloon free page reporting).

On such a VM (Firecracker, QEMU with ``free-page-reporting=on``) free memory in 2 MiB blocks is reported to
the host, which takes it back; the first touch of such a page then costs a fault in the host. A page cache
that keeps growing into free memory pays that on every new page: a 16 KiB CommitLog append cost 2.5 times the
CPU (see ``mapped_file``). There the CommitLog drops its pages long flushed, so that appends reuse them; on
other machines fresh memory is cheap and the page cache is left to the kernel, as Java's broker leaves it.

It reads ``/sys/bus/virtio/devices/*``: a balloon device (virtio id 5) bound to its driver, with feature bit
VIRTIO_BALLOON_F_REPORTING (5) negotiated. Anything it cannot read says no.
"""

from __future__ import annotations

import functools
import os

__all__ = ["reports_free_pages", "reports_free_pages_here"]

VIRTIO_ID_BALLOON = 5
VIRTIO_BALLOON_F_REPORTING = 5


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def reports_free_pages(sysfs: str = "/sys") -> bool:
    """Whether a virtio balloon under ``sysfs`` reports free pages to the host."""
    devices = os.path.join(sysfs, "bus", "virtio", "devices")
    try:
        names = os.listdir(devices)
    except OSError:
        return False
    for name in names:
        dev = os.path.join(devices, name)
        try:
            device_id = int(_read(os.path.join(dev, "device")) or "-1", 16)
        except ValueError:
            continue
        if device_id != VIRTIO_ID_BALLOON or not os.path.exists(os.path.join(dev, "driver")):
            continue
        # the negotiated features, one character per bit, bit 0 first
        features = _read(os.path.join(dev, "features"))
        if len(features) > VIRTIO_BALLOON_F_REPORTING and features[VIRTIO_BALLOON_F_REPORTING] == "1":
            return True
    return False


@functools.cache
def reports_free_pages_here() -> bool:
    """reports_free_pages of this machine, read once per process."""
    return reports_free_pages()
