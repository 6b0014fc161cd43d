"""Which CPUs take the completion interrupts of the disk under a path (Linux sysfs and procfs).

The group commit's flush thread sleeps in msync until the disk's completion interrupt wakes it. Where
that interrupt is delivered to one CPU (a single-queue device: virtio-blk in a small VM, a SATA
controller), a thread sleeping on another CPU is woken through a second CPU, by an inter-processor
interrupt; in a VM each of those hops may first wake a halted virtual CPU. Measured here (a 2-vCPU
Firecracker VM, virtio-blk, interrupts on CPU 1): msync of one page with 100 us between calls took
93-138 us on average from CPU 1 against 204-472 us from CPU 0, and the Java broker's own 1-producer
SYNC_FLUSH rate went 1,110 -> 3,511 sends/s with its GroupCommitService thread moved from CPU 0 to 1.
``GroupCommitService`` keeps its thread on these CPUs (see ``services._follow_completions``).

Nothing here changes the system: it reads ``/sys/dev/block/MAJ:MIN`` up to the device that owns MSI
vectors (``msi_irqs``), the vectors that have fired (``/proc/interrupts``) and their effective
affinity (``/proc/irq/N/effective_affinity_list``). Anything it cannot tell (no block device behind
the path: tmpfs, overlay; a device-mapper or md device; no MSI vectors; another OS) gives None.
"""

from __future__ import annotations

import os

__all__ = ["completion_cpus", "completion_cpus_of", "parse_cpu_list"]


def parse_cpu_list(text: str) -> frozenset[int]:
    """A kernel CPU list (``0-2,5``) as a set; ValueError when malformed."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        first, last = int(lo), int(hi or lo)
        if first < 0 or last < first:
            raise ValueError(f"bad CPU range {part!r}")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def _fired(interrupts: str) -> set[int]:
    """The numbered interrupts of a /proc/interrupts text with a non-zero count on some CPU."""
    lines = interrupts.splitlines()
    if not lines:
        return set()
    ncpu = len(lines[0].split())  # the header: one column per CPU
    fired = set()
    for line in lines[1:]:
        name, _, rest = line.partition(":")
        if not name.strip().isdigit():
            continue  # NMI, LOC...: not device vectors
        counts = rest.split()[:ncpu]
        if any(c.isdigit() and int(c) for c in counts):
            fired.add(int(name))
    return fired


def completion_cpus_of(device: int, *, sys_root: str = "/sys", proc_root: str = "/proc") -> frozenset[int] | None:
    """The CPUs the fired MSI vectors of the block device ``device`` (an ``st_dev``) are delivered to;
    None when that cannot be told (see the module docstring)."""
    try:
        node = os.path.realpath(os.path.join(sys_root, "dev", "block", f"{os.major(device)}:{os.minor(device)}"))
        if not os.path.isdir(node):
            return None
        top = os.path.realpath(os.path.join(sys_root, "devices"))
        while node.startswith(top + os.sep) and not os.path.isdir(os.path.join(node, "msi_irqs")):
            node = os.path.dirname(node)
        vectors_dir = os.path.join(node, "msi_irqs")
        if not os.path.isdir(vectors_dir):
            return None
        vectors = {int(n) for n in os.listdir(vectors_dir) if n.isdigit()}
        with open(os.path.join(proc_root, "interrupts")) as f:
            vectors &= _fired(f.read())
        cpus: set[int] = set()
        for irq in vectors:
            for name in ("effective_affinity_list", "smp_affinity_list"):
                path = os.path.join(proc_root, "irq", str(irq), name)
                if os.path.exists(path):
                    with open(path) as f:
                        cpus |= parse_cpu_list(f.read())
                    break
            else:
                return None  # a vector whose CPUs cannot be read: the answer would be partial
    except (OSError, ValueError):
        return None
    return frozenset(cpus) or None


def completion_cpus(path: str, **roots: str) -> frozenset[int] | None:
    """:func:`completion_cpus_of` the device holding ``path``."""
    try:
        device = os.stat(path).st_dev
    except OSError:
        return None
    return completion_cpus_of(device, **roots)
