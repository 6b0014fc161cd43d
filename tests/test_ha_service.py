"""The HA stream's timing and wire rules on memory streams, with trio's autojump clock."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
import trio
import trio.testing

from rocketpy.codecs.ha import HaTransferReader, build_offset_report, build_transfer_header
from rocketpy.store import MessageStore, MessageStoreConfig, PutMessageStatus
from rocketpy.store.ha import HAClient, HAService
from rocketpy.store.types import MessageExtBrokerInner
from rocketpy.testing import wait_until

FILE = 64 * 1024


def make_store(root: Path, **over: object) -> MessageStore:
    values: dict[str, object] = dict(
        store_path_root_dir=str(root),
        mapped_file_size_commit_log=FILE,
        mapped_file_size_consume_queue=300 * 20,
        max_hash_slot_num=64,
        max_index_num=256,
        ha_transfer_batch_size=1000,
    )
    values.update(over)
    store = MessageStore(MessageStoreConfig(**values))  # type: ignore[arg-type]
    store.open()
    return store


def put(store: MessageStore, n: int, size: int = 300) -> None:
    for i in range(n):
        msg = MessageExtBrokerInner(
            topic="T",
            queue_id=i % 2,
            body=f"b{i}-".encode().ljust(size, b"x"),
            properties={"KEYS": f"k{i}", "TAGS": "A"},
            born_timestamp=1,
            born_host="10.0.0.1:5555",
            store_host="10.0.0.2:10911",
        )
        assert store.put_message(msg).is_ok


@pytest.fixture
def master(tmp_path: Path):  # type: ignore[no-untyped-def]
    s = make_store(tmp_path / "m")
    yield s
    s.close()


@pytest.fixture
def slave_store(tmp_path: Path):  # type: ignore[no-untyped-def]
    s = make_store(tmp_path / "s")
    yield s
    s.close()


async def read_units(stream: trio.abc.Stream, reader: HaTransferReader, n: int) -> list:
    units: list = []
    while len(units) < n:
        data = await stream.receive_some(65536)
        assert data, "closed"
        units += reader.feed(data)
    return units


async def test_master_streams_from_last_file_after_first_report(master, virtual_clock):
    put(master, 300)  # ~100 KB: two CommitLog files
    end = master.max_phy_offset
    assert end > FILE
    service = HAService(master)
    slave_side, master_side = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(service.run_connection, master_side, "test")
        # nothing before the slave's first report
        with trio.move_on_after(5.5):
            assert await slave_side.receive_some(100) is None
        assert service.connection_count == 1
        t0 = trio.current_time()
        await slave_side.send_all(build_offset_report(0))
        reader = HaTransferReader()
        units = await read_units(slave_side, reader, 1)
        # 5 s passed since the connection opened: a heartbeat at the start of the last file first
        assert (units[0].phy_offset, units[0].data) == (FILE, b"")
        units += await read_units(slave_side, reader, 1)
        while units[-1].phy_offset + len(units[-1].data) < end:
            units += await read_units(slave_side, reader, 1)
        data_units = [u for u in units if u.data]
        assert data_units[0].phy_offset == FILE
        pos = FILE
        for u in data_units:
            assert u.phy_offset == pos and 0 < len(u.data) <= 1000
            assert u.phy_offset // FILE == (u.phy_offset + len(u.data) - 1) // FILE
            pos += len(u.data)
        assert pos == end
        assert b"".join(u.data for u in data_units) == master.commitlog.get_message(FILE, end - FILE)
        assert trio.current_time() - t0 < 1
        # idle: a heartbeat with the next offset 5 s after the last write
        t1 = trio.current_time()
        hb = await read_units(slave_side, reader, 1)
        assert (hb[0].phy_offset, hb[0].data) == (end, b"")
        assert 4.9 < trio.current_time() - t1 < 5.2
        # new data is pushed at once
        await slave_side.send_all(build_offset_report(end))
        put(master, 1)
        service.notify_new_data()
        t2 = trio.current_time()
        new = await read_units(slave_side, reader, 1)
        assert new[0].phy_offset == end and new[0].data and trio.current_time() - t2 < 0.1
        assert service.push2slave_max_offset == end
        nursery.cancel_scope.cancel()


async def test_master_housekeeping_closes_silent_slave(master, virtual_clock):
    service = HAService(master)
    slave_side, master_side = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(service.run_connection, master_side, "test")
        await slave_side.send_all(build_offset_report(0))
        t0 = trio.current_time()
        reader = HaTransferReader()
        while True:
            data = await slave_side.receive_some(65536)
            if not data:
                break
            reader.feed(data)
        assert 19.9 < trio.current_time() - t0 < 20.5
        await trio.testing.wait_all_tasks_blocked()
        assert service.connection_count == 0


@pytest.mark.parametrize(
    "reports",
    [
        [-5],  # a negative first report
        [0, 10**12],  # an acknowledgement beyond the master's CommitLog
    ],
)
async def test_master_closes_on_bad_reports(master, virtual_clock, reports):
    put(master, 2)
    service = HAService(master)
    slave_side, master_side = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(service.run_connection, master_side, "test")
        for r in reports:
            await slave_side.send_all(struct.pack(">q", r))
            await trio.testing.wait_all_tasks_blocked()
        with trio.fail_after(1):
            while await slave_side.receive_some(65536):
                pass
        await trio.testing.wait_all_tasks_blocked()
        assert service.connection_count == 0


async def test_wait_transfer_and_slave_ok(master, virtual_clock):
    service = HAService(master)
    assert not service.is_slave_ok(100)  # no connection
    assert await service.submit_replica(0, 100) is PutMessageStatus.SLAVE_NOT_AVAILABLE
    slave_side, master_side = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(service.run_connection, master_side, "test")
        await trio.testing.wait_all_tasks_blocked()
        assert service.is_slave_ok(100)
        # more than haSlaveFallbehindMax behind: not in sync
        assert not service.is_slave_ok(master.config.ha_slave_fallbehind_max)
        t0 = trio.current_time()
        assert await service.wait_transfer(50) is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        assert trio.current_time() - t0 == pytest.approx(3.0)  # slaveTimeout

        results: list[PutMessageStatus] = []

        async def waiter(offset: int) -> None:
            results.append(await service.wait_transfer(offset))

        put(master, 1)
        nursery.start_soon(waiter, 40)
        nursery.start_soon(waiter, 80)
        await trio.testing.wait_all_tasks_blocked()
        service.notify_transfer_some(50)
        await trio.testing.wait_all_tasks_blocked()
        assert results == [PutMessageStatus.PUT_OK]
        service.notify_transfer_some(80)
        await trio.testing.wait_all_tasks_blocked()
        assert results == [PutMessageStatus.PUT_OK] * 2
        nursery.cancel_scope.cancel()


async def test_slave_reports_appends_and_closes_on_mismatch(master, slave_store, virtual_clock):
    put(master, 20)
    end = master.max_phy_offset
    data = master.commitlog.get_message(0, end)
    client = HAClient(slave_store)
    slave_side, master_side = trio.testing.memory_stream_pair()
    done = trio.Event()

    async def run() -> None:
        await client.run_session(slave_side)
        done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        t0 = trio.current_time()
        first = await master_side.receive_some(8)
        # Java's slave sends its first report one heartbeat interval after connecting
        assert first == build_offset_report(0) and trio.current_time() - t0 == pytest.approx(5.0, abs=0.01)
        # split a record across transfers and the transfers across reads
        cut = 1300
        await master_side.send_all(build_transfer_header(0, cut) + data[:cut] + build_transfer_header(cut, 100)[:5])
        ack = await master_side.receive_some(8)
        assert ack == build_offset_report(cut)
        # the partial record is not dispatched yet
        size = struct.unpack(">i", data[:4])[0]
        assert size * 3 < cut < size * 4  # records have equal sizes: three whole ones and a part
        assert slave_store.get_max_offset_in_queue("T", 0) == 2
        assert slave_store.get_max_offset_in_queue("T", 1) == 1
        await master_side.send_all(build_transfer_header(cut, end - cut)[5:] + data[cut:])
        ack = await master_side.receive_some(8)
        assert ack == build_offset_report(end)
        assert slave_store.commitlog.get_message(0, end) == data
        assert slave_store.get_max_offset_in_queue("T", 0) == 10
        assert slave_store.get_max_offset_in_queue("T", 1) == 10
        # idle: the same offset again 5 s after the last report
        t1 = trio.current_time()
        assert await master_side.receive_some(8) == build_offset_report(end)
        assert trio.current_time() - t1 == pytest.approx(5.0, abs=0.01)
        # a heartbeat at the right offset is fine; a transfer at another offset closes the connection
        await master_side.send_all(build_transfer_header(end, 0))
        await trio.testing.wait_all_tasks_blocked()
        assert not done.is_set()
        await master_side.send_all(build_transfer_header(end + 8, 0))
        with trio.fail_after(1):
            await done.wait()


async def test_slave_closes_on_absurd_transfer_size(slave_store, virtual_clock):
    client = HAClient(slave_store)
    slave_side, master_side = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.run_session, slave_side)
        await master_side.send_all(struct.pack(">qi", 0, 0x7FFFFFFF))
        await wait_until(lambda: not client.connected and client.sessions > 0, timeout=1)
        assert slave_store.max_phy_offset == 0
        nursery.cancel_scope.cancel()


async def test_slave_reconnects_every_5s_when_master_unreachable(slave_store, virtual_clock, monkeypatch):
    attempts: list[float] = []

    async def refuse(host: str, port: int) -> trio.abc.Stream:
        attempts.append(trio.current_time())
        raise OSError("connection refused")

    monkeypatch.setattr(trio, "open_tcp_stream", refuse)
    client = HAClient(slave_store)
    async with trio.open_nursery() as nursery:
        await nursery.start(client.run)
        client.update_master_address("127.0.0.1:1")
        await trio.sleep(16)
        nursery.cancel_scope.cancel()
    assert len(attempts) == 4
    assert [round(b - a, 3) for a, b in zip(attempts, attempts[1:])] == [5.0, 5.0, 5.0]


async def test_slave_synchronize_schedule_and_ports(virtual_clock):
    from types import SimpleNamespace

    from rocketpy.broker.ha import SlaveSynchronize
    from rocketpy.codecs import RemotingCommand
    from rocketpy.codecs.codes import RequestCode

    calls: list[tuple[float, str, int]] = []

    class Client:
        async def invoke(self, addr: str, request: RemotingCommand, timeout: float) -> RemotingCommand:
            calls.append((trio.current_time(), addr, request.code))
            return RemotingCommand(code=1, remark="not in this test")

    broker = SimpleNamespace(client=Client(), broker_addr="127.0.0.1:11911")
    sync = SlaveSynchronize(broker)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sync.run)
        await trio.sleep(5)
        assert calls == []  # no master known yet: nothing is asked
        sync.master_addr = "127.0.0.1:10911"
        await trio.sleep(20)
        nursery.cancel_scope.cancel()
    times = sorted({round(t, 3) for t, _, _ in calls})
    assert times == [13.0, 23.0]  # first cycle 3 s after start, then every 10 s
    assert [(a, c) for _, a, c in calls[:4]] == [
        ("127.0.0.1:10909", RequestCode.GET_ALL_TOPIC_CONFIG),  # the master's VIP port
        ("127.0.0.1:10911", RequestCode.GET_ALL_CONSUMER_OFFSET),
        ("127.0.0.1:10911", RequestCode.GET_ALL_DELAY_OFFSET),
        ("127.0.0.1:10911", RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG),
    ]


async def test_master_drops_a_slave_that_never_reads(master, virtual_clock, caplog):
    put(master, 50)
    service = HAService(master)
    slave_side, master_side = trio.testing.lockstep_stream_pair()  # a send completes only when read
    async with trio.open_nursery() as nursery:
        nursery.start_soon(service.run_connection, master_side, "test")

        async def keep_reporting() -> None:
            try:
                while True:
                    await slave_side.send_all(build_offset_report(0))
                    await trio.sleep(5)
            except trio.BrokenResourceError:
                pass  # the master closed the connection

        nursery.start_soon(keep_reporting)
        await trio.testing.wait_all_tasks_blocked()
        assert service.connection_count == 1
        t0 = trio.current_time()
        await wait_until(lambda: service.connection_count == 0, timeout=60, tick=0.5)
        # the reports kept the read side alive: it is the stuck write that ended the connection
        assert 19.5 < trio.current_time() - t0 < 21
        assert any("has not read" in r.getMessage() for r in caplog.records)
        nursery.cancel_scope.cancel()
