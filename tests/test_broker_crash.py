"""The broker as a separate process: clean restart, and SIGKILL under SYNC_FLUSH load
loses no acknowledged message."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import trio

from rocketpy.codecs import ResponseCode
from rocketpy.testing import broker_client, free_broker_port, free_port, pull_queues, read_until, wait_until

CONF = """\
brokerName = broker-a
brokerIP1 = 127.0.0.1
listenPort = 0
listenHost = 127.0.0.1
vipChannelEnable = false
flushDiskType = {flush}
mappedFileSizeCommitLog = 1048576
mappedFileSizeConsumeQueue = 60000
maxHashSlotNum = 1000
maxIndexNum = 4000
storePathRootDir = {store}
"""


async def _start(conf: str, log: str | None = None) -> tuple[trio.Process, str]:
    """``rocketpy broker -c conf`` until it serves: (the process, its address); its log appended to ``log``."""
    with open(log or os.devnull, "ab") as err:
        proc = await trio.lowlevel.open_process(
            [sys.executable, "-m", "rocketpy.cli", "broker", "-c", conf],
            stdout=subprocess.PIPE,
            stderr=err,
        )
    with trio.fail_after(20):
        buf = await read_until(proc.stdout, b"serving on", "broker")
    line = next(ln for ln in buf.decode().splitlines() if "serving on" in ln)
    return proc, line.rsplit(" ", 1)[1]


async def _stop(proc: trio.Process, sig: int) -> None:
    proc.send_signal(sig)
    with trio.fail_after(20):
        await proc.wait()


async def test_restart_after_clean_stop(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF.format(flush="ASYNC_FLUSH", store=tmp_path / "store"))
    proc, addr = await _start(str(conf))
    try:
        async with broker_client(addr) as c:
            for i in range(20):
                assert (await c.send("TClean", b"m%d" % i, queue_id=i % 2)).code == 0
            await c.update_offset("G", "TClean", 0, 7)
    finally:
        await _stop(proc, signal.SIGTERM)
    assert proc.returncode == 0
    assert not os.path.exists(tmp_path / "store" / "abort")  # clean shutdown
    proc, addr = await _start(str(conf))
    try:
        got = await pull_queues(addr, "TClean", 2)
        assert sorted(got.values()) == sorted(b"m%d" % i for i in range(20))
        async with broker_client(addr) as c:
            assert (await c.query_offset("G", "TClean", 0)).ext_fields == {"offset": "7"}
    finally:
        await _stop(proc, signal.SIGTERM)


async def test_kill_9_under_load_loses_no_acknowledged_message(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF.format(flush="SYNC_FLUSH", store=tmp_path / "store"))
    proc, addr = await _start(str(conf))
    acked: dict[tuple[int, int], bytes] = {}
    try:
        async with broker_client(addr) as c:

            async def producer(n: int) -> None:
                i = 0
                while True:
                    body = b"p%d-%d-" % (n, i) + b"x" * 200
                    try:
                        r = await c.send("TCrash", body, queue_id=n % 4)
                    except Exception:
                        return  # the broker is gone
                    if r.code == ResponseCode.SUCCESS:
                        acked[(int(r.ext_fields["queueId"]), int(r.ext_fields["queueOffset"]))] = body
                    i += 1

            async with trio.open_nursery() as nursery:
                for n in range(8):
                    nursery.start_soon(producer, n)
                await wait_until(lambda: len(acked) >= 300, timeout=20)
                proc.send_signal(signal.SIGKILL)
                with trio.fail_after(10):
                    await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert os.path.exists(tmp_path / "store" / "abort")  # it did crash
    proc, addr = await _start(str(conf))
    try:
        got = await pull_queues(addr, "TCrash", 4)
    finally:
        await _stop(proc, signal.SIGTERM)
    missing = [k for k, body in acked.items() if got.get(k) != body]
    assert not missing, f"{len(missing)} of {len(acked)} acknowledged messages lost: {missing[:5]}"


async def test_serve_command_end_to_end(tmp_path):
    """``rocketpy serve``: NameServer + broker in one process; clients find the broker by route."""
    from rocketpy.codecs import RemotingCommand
    from rocketpy.codecs.bodies import TopicRouteData
    from rocketpy.codecs.codes import RequestCode
    from rocketpy.codecs.headers import GetRouteInfoRequestHeader

    ns_port, broker_port = free_port(), free_broker_port()  # its HA port (+1) must be free as well
    proc = await trio.lowlevel.open_process(
        [
            sys.executable,
            "-m",
            "rocketpy.cli",
            "serve",
            "--namesrv-port",
            str(ns_port),
            "--broker-port",
            str(broker_port),
            "--store",
            str(tmp_path / "store"),
            "--no-vip",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        with trio.fail_after(20):
            await read_until(proc.stdout, b"rocketpy serve:", "rocketpy serve")
        async with broker_client(f"127.0.0.1:{broker_port}") as c:
            assert (await c.send("TServe", b"hi")).code == 0
            req = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="TServe"))
            resp = RemotingCommand(code=-1)

            async def routed() -> bool:  # the serving process registers the topic on its next heartbeat
                nonlocal resp
                resp = await c.client.invoke(f"127.0.0.1:{ns_port}", req)
                return resp.code == 0

            await wait_until(routed, timeout=10, tick=0.05)
            route = TopicRouteData.decode(resp.body)
            assert route.broker_datas[0].broker_addrs[0] == f"127.0.0.1:{broker_port}"
    finally:
        await _stop(proc, signal.SIGINT)
    assert proc.returncode == 0
    assert not os.path.exists(tmp_path / "store" / "abort")
    assert os.path.exists(tmp_path / "store" / "config" / "topics.json")
