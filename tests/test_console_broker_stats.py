"""GET_BROKER_RUNTIME_INFO's real counters: StoreStatsService's TPS windows and BrokerStats' day marks."""

from __future__ import annotations

import datetime
import re
import time
from types import SimpleNamespace

from rocketpy.broker.store_stats import StoreStats, human_bytes, next_morning_ms
from rocketpy.codecs import ResponseCode
from rocketpy.codecs.bodies import KVTable
from rocketpy.codecs.codes import RequestCode
from rocketpy.testing import broker_client, now_ms, running_broker


def _fake_broker() -> SimpleNamespace:
    return SimpleNamespace(
        stats={"put": 0, "get": 0, "get_found": 0, "get_miss": 0}, store=SimpleNamespace(max_phy_offset=1000)
    )


def test_tps_windows_need_enough_samples():
    broker = _fake_broker()
    t0 = 1_700_000_000_000
    stats = StoreStats(t0, commitlog_base=1000)
    for k in range(12):  # 12 samples one second apart, 5 puts and 2 found reads a second
        broker.stats["put"] = 5 * k
        broker.stats["get_found"] = 2 * k
        broker.stats["get"] = 20 * k
        stats.sample(broker, t0 + 1000 * k)
    info = stats.runtime_info(broker)
    # the 10-sample window is there, the 60 and 600 ones are not yet: empty, as Java prints them
    assert info["putTps"] == "5.0  "
    assert info["getFoundTps"] == "2.0  "
    assert info["getTransferedTps"] == "20.0  "
    assert info["getMissTps"] == "0.0  "
    assert info["getTotalTps"] == "2.0 0.0 0.0"
    assert info["msgPutTotalTodayNow"] == "55" and info["msgGetTotalTodayNow"] == "220"
    broker.store.max_phy_offset = 1000 + 55 * 200
    info = stats.runtime_info(broker)
    assert info["putMessageSizeTotal"] == "11000" and info["putMessageAverageSize"] == "200.0"


def test_human_bytes_like_mixall():
    assert [human_bytes(n) for n in (0, 1023, 1024, 1536, 252 * 1024**3, 5 * 1024**5)] == [
        "0 B", "1023 B", "1.0 KiB", "1.5 KiB", "252.0 GiB", "5.0 PiB"]


def test_midnight_moves_the_morning_marks():
    broker = _fake_broker()
    boot = int(datetime.datetime(2026, 3, 1, 23, 0).timestamp() * 1000)
    stats = StoreStats(boot)
    assert next_morning_ms(boot) == int(datetime.datetime(2026, 3, 2).timestamp() * 1000)
    broker.stats.update(put=40, get=30)
    stats.sample(broker, boot + 1000)  # still the boot day: nothing recorded
    assert stats.runtime_info(broker)["msgPutTotalTodayMorning"] == "0"
    stats.sample(broker, next_morning_ms(boot) + 500)
    broker.stats.update(put=70, get=45)
    info = stats.runtime_info(broker)
    assert (info["msgPutTotalTodayMorning"], info["msgGetTotalTodayMorning"]) == ("40", "30")
    assert (info["msgPutTotalTodayNow"], info["msgPutTotalYesterdayMorning"]) == ("70", "0")
    stats.sample(broker, next_morning_ms(next_morning_ms(boot)) + 1)
    info = stats.runtime_info(broker)
    assert (info["msgPutTotalYesterdayMorning"], info["msgPutTotalTodayMorning"]) == ("40", "70")
    assert (info["msgGetTotalYesterdayMorning"], info["msgGetTotalTodayMorning"]) == ("30", "45")


async def test_runtime_info_counts_sends_and_pulls(tmp_path):
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            t0 = now_ms()
            rates = StoreStats(t0, broker.store.max_phy_offset)  # our own sampler: the broker's runs on the clock
            rates.sample(broker, t0)
            for i in range(6):
                await c.send("TRt", f"m{i}".encode(), queue_id=0)
            r, msgs = await c.pull("GRt", "TRt", 0, 0)
            assert r.code == ResponseCode.SUCCESS and len(msgs) == 6
            r, _ = await c.pull("GRt", "TRt", 0, 6)  # nothing new: a miss
            assert r.code == ResponseCode.PULL_NOT_FOUND
            for k in range(1, 11):
                rates.sample(broker, t0 + 1000 * k)
            r = await c.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
            table = KVTable.decode(r.body).table
            mine = rates.runtime_info(broker)
    assert table["msgPutTotalTodayNow"] == "6" and table["msgGetTotalTodayNow"] == "6"
    assert table["msgPutTotalTodayMorning"] == "0"  # no midnight since boot
    assert int(table["putMessageSizeTotal"]) == int(mine["putMessageSizeTotal"]) > 6 * 10
    assert {"putTps", "getFoundTps", "getMissTps", "getTotalTps", "getTransferedTps"} <= table.keys()
    assert re.fullmatch(r"Total : \d+\.\d [KMGTPE]iB, Free : [\d.]+ ([KMGTPE]i)?B\.", table["commitLogDirCapacity"])
    assert 0.0 <= float(table["commitLogDiskRatio"]) <= 1.0
    assert mine["putTps"].split(" ")[0] == "0.6" and mine["getTransferedTps"].split(" ")[0] == "0.6"
    assert mine["getFoundTps"].split(" ")[0] == "0.1" and mine["getMissTps"].split(" ")[0] == "0.1"
    assert mine["getTotalTps"].split(" ")[0] == "0.2"


async def test_put_and_get_sizes_count_the_stored_bytes(tmp_path):
    from rocketpy.broker.stats import GROUP_GET_SIZE, TOPIC_PUT_SIZE
    from rocketpy.codecs.bodies import BrokerStatsData
    from rocketpy.codecs.headers import ViewBrokerStatsDataRequestHeader

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            await c.send("TSize", b"first", queue_id=0)
            await c.update_offset("GSize", "TSize", 0, 0)
            t0 = now_ms()
            broker.stats_manager.sample(broker, at_ms=t0)  # first sight: the marks, nothing counted
            for i in range(5):
                await c.send("TSize", b"x" * (10 * i), queue_id=0)
            _, msgs = await c.pull("GSize", "TSize", 0, 0)
            sizes = [m.store_size for m in msgs]
            await c.update_offset("GSize", "TSize", 0, 4)  # consumed the first four
            broker.stats_manager.sample(broker, at_ms=t0 + 10_001)

            async def view(name: str, key: str) -> int:
                r = await c.invoke(RequestCode.VIEW_BROKER_STATS_DATA,
                                   ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key))
                assert r.code == ResponseCode.SUCCESS, r.remark
                return BrokerStatsData.decode(r.body).stats_minute.sum

            assert await view(TOPIC_PUT_SIZE, "TSize") == sum(sizes[1:])  # the five sent after the first round
            assert await view(GROUP_GET_SIZE, "TSize@GSize") == sum(sizes[0:4])
            await c.update_offset("GSize", "TSize", 0, 1)  # a reset back: not counted as consumed
            broker.stats_manager.sample(broker, at_ms=t0 + 20_002)
            assert await view(GROUP_GET_SIZE, "TSize@GSize") == sum(sizes[0:4])


def test_put_latency_as_store_stats_service():
    from rocketpy.broker.store_stats import PutLatency

    lat = PutLatency()
    info = lat.runtime_info()
    # before the first minute Java answers null and 0.00 (nothing rotated yet)
    assert info["putMessageDistributeTime"] == "null" and info["putLatency99"] == "0.00"
    for ms, count in ((0, 18), (1, 5), (9, 6), (10, 1), (9999, 1), (10000, 1)):
        lat.put(ms, count)
    lat.get(7)
    lat.get(3)
    assert lat.runtime_info()["putMessageDistributeTime"] == "null"  # the current minute is not shown
    lat.rotate()
    info = lat.runtime_info()
    assert info["putMessageDistributeTime"] == (
        "[<=0ms]:18 [0~10ms]:11 [10~50ms]:1 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 [1~2s]:0 "
        "[2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:1 [10s~]:1 ")
    assert info["putMessageEntireTimeMax"] == "10000" and info["getMessageEntireTimeMax"] == "7"
    # 32 puts: index int(32 * 0.99) = 31 lands in the 9000-10000 ms bucket (the 31st and 32nd put),
    # interpolated by the count before it
    assert info["putLatency99"] == "9500.00" and info["putLatency999"] == "9500.00"
    lat.put(0, 100)
    lat.rotate()
    assert lat.runtime_info()["putLatency99"] == "0.99"  # all in the first (0-1 ms) bucket: 99/100 of 1 ms


async def test_runtime_info_has_every_key_java_reports(tmp_path):
    """Every key of the reference broker's brokerStatus (golden 24), and clusterList's columns without nulls."""
    from pathlib import Path

    golden = Path(__file__).parent / "data" / "mqadmin" / "24-brokerStatus.txt"
    java_keys = {line.split(":")[0].strip() for line in golden.read_text().splitlines()[2:]}
    java_keys = {k for k in java_keys if not k.startswith("commitLogDiskRatio_")}
    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            began = time.perf_counter()
            for i in range(3):
                await c.send("TKeys", f"m{i}".encode(), queue_id=0)
            sends_ms = (time.perf_counter() - began) * 1000
            r = await c.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
            table = KVTable.decode(r.body).table
        put_max_ms = broker.store_stats.latency.put_max_ms
    assert java_keys - table.keys() == set()
    assert table["sendThreadPoolQueueCapacity"] == "10000" and table["pullThreadPoolQueueCapacity"] == "100000"
    assert table["sendThreadPoolQueueHeadWaitTimeMills"].isdigit() and table["pageCacheLockTimeMills"] == "0"
    # the longest of the three puts, in whole milliseconds: within the time the sends took
    assert table["putMessageEntireTimeMax"] == str(put_max_ms) and 0 <= put_max_ms <= sends_ms
    assert table["putLatency99"] == "0.00"
    assert table["remainTransientStoreBufferNumbs"] == "2147483647"


def test_human_bytes_round_half_up_as_string_format():
    # Java's %.1f rounds the exact value half up: 1.25 KiB is 1.3 KiB (Python's format would say 1.2)
    assert human_bytes(1280) == "1.3 KiB" and human_bytes(1792) == "1.8 KiB"


def test_disk_ratios_as_util_all(tmp_path, monkeypatch):
    """getDiskPartitionSpaceUsedPercent: used over (used + usable), rounded up to two decimals; -1.0 without the
    path; commitLogDirCapacity of the root directory with the space an unprivileged user may still take."""
    import os

    from rocketpy.broker import store_stats

    gib = 1024**3
    fake = SimpleNamespace(f_blocks=100, f_frsize=gib, f_bfree=30, f_bavail=20)  # used 70, usable 20: 70/90
    monkeypatch.setattr(store_stats.os, "statvfs", lambda path: fake)
    (tmp_path / "commitlog").mkdir()
    info = store_stats.disk_info(str(tmp_path), str(tmp_path / "commitlog"), str(tmp_path / "consumequeue"))
    assert info["commitLogDiskRatio"] == "0.78" and info[f"commitLogDiskRatio_{tmp_path / 'commitlog'}"] == "0.78"
    assert info["consumeQueueDiskRatio"] == "-1.0"  # not made yet
    assert info["commitLogDirCapacity"] == "Total : 100.0 GiB, Free : 20.0 GiB."
    assert os.path.exists(tmp_path)


def test_put_times_total_and_failures_as_store_stats_service():
    broker = _fake_broker()
    stats = StoreStats(1_700_000_000_000, commitlog_base=1000)
    info = stats.runtime_info(broker)
    # Java answers 1 before the first put (totalTimes is never 0) and divides the size by it
    assert info["putMessageTimesTotal"] == "1" and info["putMessageAverageSize"] == "0.0"
    stats.latency.failed += 2
    assert stats.runtime_info(broker)["putMessageFailedTimes"] == "2"


async def test_runtime_info_counts_the_send_lanes_put_times_and_send_backs(tmp_path):
    """Every put has its time counted (the send lane's too) and SNDBCK_PUT_NUMS counts the send-backs by the
    topic the message was sent to, from the first one."""
    from rocketpy.broker.stats import SNDBCK_PUT_NUMS
    from rocketpy.codecs.bodies import BrokerStatsData
    from rocketpy.codecs.headers import ViewBrokerStatsDataRequestHeader

    async with running_broker(str(tmp_path)) as broker:
        async with broker_client(broker.address) as c:
            for i in range(7):
                r = await c.send("TLane", f"m{i}".encode(), queue_id=0)
                assert r is not None and r.code == ResponseCode.SUCCESS
            broker.store_stats.latency.rotate()  # the minute's end
            r = await c.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
            table = KVTable.decode(r.body).table
            counts = [int(part.split(":")[1]) for part in table["putMessageDistributeTime"].split()]
            assert sum(counts) == 7 and table["putMessageTimesTotal"] == "7"
            assert float(table["putLatency99"]) <= 1.0  # in-memory appends: all in the first bucket
            _, msgs = await c.pull("GBack", "TLane", 0, 0)
            for m in msgs[:3]:
                r = await c.send_back("GBack", m, delay_level=1)
                assert r.code == ResponseCode.SUCCESS, r.remark
            broker.stats_manager.sample(broker)
            r = await c.invoke(RequestCode.VIEW_BROKER_STATS_DATA,
                               ViewBrokerStatsDataRequestHeader(stats_name=SNDBCK_PUT_NUMS, stats_key="TLane@GBack"))
            assert r.code == ResponseCode.SUCCESS, r.remark
            assert BrokerStatsData.decode(r.body).stats_minute.sum == 3


async def test_runtime_info_flush_backlog_in_mixall_units(tmp_path):
    async with running_broker(str(tmp_path), flushDiskType="ASYNC_FLUSH", flushIntervalCommitLog="600000") as broker:
        async with broker_client(broker.address) as c:
            await c.send("TFlush", b"x" * 3000, queue_id=0)
            r = await c.invoke(RequestCode.GET_BROKER_RUNTIME_INFO)
            table = KVTable.decode(r.body).table
            left = broker.store.max_phy_offset - broker.store.flushed_offset
    assert table["remainHowManyDataToFlush"] == human_bytes(left) and left >= 3000  # "3.1 KiB", not "3190 B"
    assert table["dispatchBehindBytes"] == "0"


def test_dispatch_behind_bytes_of_a_slave():
    from rocketpy.broker.processors.admin import _dispatch_behind_bytes

    store = SimpleNamespace(max_phy_offset=5000, dispatch_behind_bytes=lambda: 0)
    slave = SimpleNamespace(store=store, ha=SimpleNamespace(client=SimpleNamespace(reput_offset=4200)))
    assert _dispatch_behind_bytes(slave) == 800  # a replicated record not complete yet
    slave.ha.client.reput_offset = -1  # nothing replicated yet
    assert _dispatch_behind_bytes(slave) == 0
    dledger = SimpleNamespace(store=SimpleNamespace(max_phy_offset=9, dispatch_behind_bytes=lambda: 120),
                              ha=SimpleNamespace(client=None))
    assert _dispatch_behind_bytes(dledger) == 120


async def test_queue_figures_are_the_event_loops_wait():
    """The thread-pool queue head waits: how late the loop woke the sampler; the sizes: the tasks that were ready
    to run with it (busy connections yield and are ready again at once)."""
    import time

    import trio

    from rocketpy.broker.store_stats import LoopWait

    loop = LoopWait()
    assert loop.runtime_info()["sendThreadPoolQueueHeadWaitTimeMills"] == "0"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(loop.sleep, 0.01)
        await trio.sleep(0.001)  # the sampler has its deadline
        time.sleep(0.15)  # a handler that holds the loop: the sampler waits behind it
    info = loop.runtime_info()
    assert 100 <= int(info["sendThreadPoolQueueHeadWaitTimeMills"]) < 2000
    assert info["pullThreadPoolQueueHeadWaitTimeMills"] == info["queryThreadPoolQueueHeadWaitTimeMills"]

    done = False
    seen = []

    async def busy() -> None:
        while not done:
            time.sleep(0.0005)
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        for _ in range(8):
            nursery.start_soon(busy)
        for _ in range(5):
            await loop.sleep(0.002)
            seen.append(int(loop.runtime_info()["sendThreadPoolQueueSize"]))
        done = True
    assert max(seen) >= 1 and all(n <= 8 for n in seen), seen
