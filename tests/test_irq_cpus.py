"""irq_cpus: the CPUs that take a disk's completion interrupts, read from a sysfs/procfs tree.

The trees here are laid out as a 2-vCPU Firecracker VM's (virtio-blk vda on 0000:00:02.0, its request
vector fired on CPU 1 only), so the answers are what the group commit's flush thread follows there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocketpy.store.irq_cpus import completion_cpus, completion_cpus_of, parse_cpu_list

INTERRUPTS = """\
           CPU0       CPU1
 28:          0          0  PCI-MSIX-0000:00:01.0   0-edge      virtio0-config
 32:       4256          0  PCI-MSIX-0000:00:01.0   4-edge      virtio0-reporting_vq
 35:          0          0  PCI-MSIX-0000:00:02.0   0-edge      virtio1-config
 36:          0   26814380  PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
NMI:          0          0   Non-maskable interrupts
LOC:    1234567    7654321   Local timer interrupts
"""
VDA = os.makedev(254, 0)


def make_tree(root: Path, *, affinity: dict[int, str] | None = None, interrupts: str = INTERRUPTS) -> dict[str, str]:
    sys_root, proc_root = root / "sys", root / "proc"
    pci = sys_root / "devices/pci0000:00/0000:00:02.0"
    (pci / "virtio1/block/vda").mkdir(parents=True)
    (pci / "msi_irqs").mkdir()
    for irq in (35, 36):
        (pci / "msi_irqs" / str(irq)).write_text("msix\n")
    (sys_root / "devices/virtual/block/zram0").mkdir(parents=True)
    (sys_root / "dev/block").mkdir(parents=True)
    (sys_root / "dev/block/254:0").symlink_to("../../devices/pci0000:00/0000:00:02.0/virtio1/block/vda")
    (sys_root / "dev/block/253:0").symlink_to("../../devices/virtual/block/zram0")
    proc_root.mkdir()
    (proc_root / "interrupts").write_text(interrupts)
    for irq, cpus in (affinity if affinity is not None else {35: "0", 36: "1"}).items():
        (proc_root / "irq" / str(irq)).mkdir(parents=True)
        (proc_root / "irq" / str(irq) / "effective_affinity_list").write_text(cpus + "\n")
    return {"sys_root": str(sys_root), "proc_root": str(proc_root)}


def test_a_virtio_disk_interrupts_one_cpu(tmp_path: Path) -> None:
    # vector 35 (config) never fired: its CPU 0 is not where completions arrive
    assert completion_cpus_of(VDA, **make_tree(tmp_path)) == frozenset({1})


def test_every_fired_vector_counts(tmp_path: Path) -> None:
    busy = INTERRUPTS.replace(" 35:          0          0", " 35:          3          0")
    roots = make_tree(tmp_path, affinity={35: "0", 36: "2-3"}, interrupts=busy)
    assert completion_cpus_of(VDA, **roots) == frozenset({0, 2, 3})


@pytest.mark.parametrize(
    "case",
    ["no block device", "no msi vectors", "unreadable affinity", "no vector fired", "bad affinity"],
)
def test_what_cannot_be_told_is_none(tmp_path: Path, case: str) -> None:
    device = VDA
    affinity: dict[int, str] | None = None
    interrupts = INTERRUPTS
    if case == "no block device":
        device = os.makedev(0, 42)  # tmpfs, overlay: no /sys/dev/block entry
    elif case == "no msi vectors":
        device = os.makedev(253, 0)  # zram: a virtual device, nothing up its tree owns vectors
    elif case == "unreadable affinity":
        affinity = {35: "0"}  # the fired vector's affinity is not there: a partial answer is no answer
    elif case == "no vector fired":
        interrupts = INTERRUPTS.replace("26814380", "       0")
    else:
        affinity = {35: "0", 36: "1-0"}
    assert completion_cpus_of(device, **make_tree(tmp_path, affinity=affinity, interrupts=interrupts)) is None


def test_a_path_is_looked_up_by_its_device(tmp_path: Path) -> None:
    assert completion_cpus(str(tmp_path / "missing")) is None
    # the real system: None, or some of the machine's CPUs (never an error, never an empty set)
    found = completion_cpus(str(tmp_path))
    if found is not None:
        possible = Path("/sys/devices/system/cpu/possible")
        cpus = parse_cpu_list(possible.read_text()) if possible.exists() else set(range(os.cpu_count() or 1))
        assert found and found <= cpus, (found, cpus)


def test_cpu_lists() -> None:
    assert parse_cpu_list("1\n") == {1}
    assert parse_cpu_list("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
    for bad in ("x", "3-1", "-1"):
        with pytest.raises(ValueError):
            parse_cpu_list(bad)
