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


def test_a_server_process_collects_the_cycles_left_behind(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """In a process of its own (the command line's servers) start-up's objects are frozen and the
    periodic scans collect cycles, which an idle server's collector would never reach; anywhere else
    collect_cycles does nothing (it would walk every object of the host). In a child: freezing the
    test process would keep every later cycle of its objects."""
    import subprocess
    import sys
    import textwrap

    child = textwrap.dedent("""
        import gc, weakref
        from rocketpy import heap

        class Stream:  # as trio's TLS stream: an object in a reference cycle
            pass

        def closed():
            s = Stream()
            s.handshake = s
            return weakref.ref(s)

        gc.disable()  # only the calls below collect
        left = closed()
        assert heap.collect_cycles() == 0 and left() is not None
        heap.own_process()
        assert left() is None and gc.get_freeze_count() > 0
        left = closed()
        assert heap.collect_cycles() >= 1 and left() is None
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


async def test_the_periodic_scans_collect_cycles(tmp_path, virtual_clock, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import trio

    from rocketpy.namesrv import NameServer, NamesrvConfig
    from rocketpy.testing import running_broker

    calls: list[str] = []
    monkeypatch.setattr(heap, "collect_cycles", lambda: calls.append("scan") or 0)
    config = NamesrvConfig(listen_port=0, kv_config_path=str(tmp_path / "kv.json"),
                           config_store_path=str(tmp_path / "namesrv.properties"))
    async with trio.open_nursery() as nursery:
        await nursery.start(NameServer(config).run)
        async with running_broker(str(tmp_path / "store")):
            await trio.sleep(11)  # the broker's client scan and the NameServer's broker scan: every 10 s
        nursery.cancel_scope.cancel()
    assert len(calls) >= 2
