"""rocketpy.heap: freed large buffers do not stay resident in a long-running server."""

from __future__ import annotations

import pytest

from rocketpy import heap


def rss_anon_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("RssAnon:"))


@pytest.mark.skipif(not heap.tune(), reason="the C library is not glibc")
def test_freed_frame_buffers_go_back_to_the_system() -> None:
    # what a broker does all day: large frame buffers, freed, between smaller objects that stay (an
    # answer, a table entry). glibc's default kept ~21 MiB of this resident, pinned by the survivors
    before = rss_anon_kib()
    kept = []
    for round_ in range(3):
        buffers = []
        for _ in range(100):
            buffers.append(b"x" * (300 * 1024))
            kept.append(bytes([round_]) * 2000)  # a survivor, from malloc (pymalloc takes only <= 512 B)
        del buffers
    heap.trim()
    grown = rss_anon_kib() - before
    assert grown < 4 * 1024, f"{grown} KiB still resident after 90 MiB of buffers were freed"
    assert len(kept) == 300
