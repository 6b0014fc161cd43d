"""``rocketpy admin clusterList`` for a broker name with a master and a slave, as mqadmin 4.9.8 shows it.

mqadmin has no role column: each address of a broker name is a row with its brokerId (#BID), 0
being the master and the others its slaves, rows ordered by broker name then id. Two stand-in
brokers register on our NameServer (ids 0 and 1, the slave first) and answer runtime-info requests.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from rocketpy.cli import main
from rocketpy.codecs import RemotingCommand, RequestCode, ResponseCode
from rocketpy.codecs.bodies import KVTable
from rocketpy.codecs.bodies.register import DataVersion, RegisterBrokerBody, TopicConfigSerializeWrapper
from rocketpy.codecs.headers.namesrv import RegisterBrokerRequestHeader
from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.namesrv.server import NameServer
from rocketpy.remoting import Dispatcher, RemotingServer, RequestContext, open_remoting_client


@dataclass
class HaCluster:
    namesrv: str
    master: str
    slave: str
    register_replies: dict[int, RemotingCommand]


def _runtime(broker_id: int) -> dict[str, str]:
    return {
        "brokerVersionDesc": "V4_9_8",
        "putTps": f"{1.5 if broker_id == 0 else 0.0} 0.0 0.0",
        "getTransferedTps": f"{0.25 * (broker_id + 1)} 0.0 0.0",
        "sendThreadPoolQueueSize": "0",
        "pullThreadPoolQueueSize": "0",
        "sendThreadPoolQueueHeadWaitTimeMills": "0",
        "pullThreadPoolQueueHeadWaitTimeMills": "0",
        "pageCacheLockTimeMills": "0",
        "commitLogDiskRatio": "0.25",
        "msgPutTotalYesterdayMorning": "0",
        "msgPutTotalTodayMorning": "0",
        "msgPutTotalTodayNow": "20" if broker_id == 0 else "0",
        "msgGetTotalYesterdayMorning": "0",
        "msgGetTotalTodayMorning": "0",
        "msgGetTotalTodayNow": str(20 * (broker_id + 1)),
    }


async def _broker(nursery: trio.Nursery, ns: str, broker_id: int, replies: dict[int, RemotingCommand]) -> str:
    async def handle(ctx: RequestContext, request: RemotingCommand) -> RemotingCommand:
        if request.code == RequestCode.GET_BROKER_RUNTIME_INFO:
            return request.response(ResponseCode.SUCCESS, body=KVTable(table=_runtime(broker_id)).encode())
        return request.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark="stand-in broker")

    server = RemotingServer(Dispatcher(default=handle))
    await nursery.start(server.serve, "127.0.0.1", 0)
    addr = server.address
    ready = trio.Event()

    async def register() -> None:  # the registering connection stays open: the NameServer keeps the broker
        async with open_remoting_client() as client:
            wrapper = TopicConfigSerializeWrapper(topic_config_table={}, data_version=DataVersion())
            body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=[])
            header = RegisterBrokerRequestHeader(
                broker_name="broker-ha",
                broker_addr=addr,
                cluster_name="DefaultCluster",
                ha_server_addr=f"127.0.0.1:{server.port + 1}",
                broker_id=broker_id,
                compressed=False,
                body_crc32=0,
            )
            request = RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body.encode(compress=False))
            replies[broker_id] = await client.invoke(ns, request, timeout=5)
            ready.set()
            await trio.sleep_forever()

    nursery.start_soon(register)
    await ready.wait()
    return addr


@pytest.fixture(scope="module")
def ha_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HaCluster]:
    tmp = tmp_path_factory.mktemp("ns")
    started: list[HaCluster] = []
    ready, stop = threading.Event(), threading.Event()

    async def host() -> None:
        config = NamesrvConfig(
            listen_port=0, kv_config_path=str(tmp / "kv.json"), config_store_path=str(tmp / "namesrv.properties")
        )
        async with trio.open_nursery() as nursery:
            ns = await nursery.start(NameServer(config).run, "127.0.0.1", 0)
            replies: dict[int, RemotingCommand] = {}
            slave = await _broker(nursery, ns.address, 1, replies)  # the slave first: order comes from the ids
            master = await _broker(nursery, ns.address, 0, replies)
            started.append(HaCluster(ns.address, master, slave, replies))
            ready.set()
            await trio.to_thread.run_sync(stop.wait)  # until the fixture's teardown sets it
            nursery.cancel_scope.cancel()

    thread = threading.Thread(target=trio.run, args=(host,), daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield started[0]
    finally:
        stop.set()
        thread.join(10)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, list[list[str]]]:
    """mqadmin's plain layout: the header line, and each row's cells (no cell holds a space)."""
    capsys.readouterr()
    assert main(list(argv)) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    return header, [ln.split() for ln in lines if ln.strip()]


GOLDEN = Path(__file__).parent / "data" / "mqadmin"


def golden_header(name: str) -> str:
    """The header line mqadmin printed (tests/data/mqadmin/)."""
    return next(GOLDEN.glob(f"{name}-*.txt")).read_text().splitlines()[2]


def test_master_and_slave_rows_by_broker_id(ha_cluster: HaCluster, capsys: pytest.CaptureFixture[str]) -> None:
    header, rows = run(capsys, "admin", "clusterList", "-n", ha_cluster.namesrv)
    assert header == golden_header("04")
    assert [r[:5] for r in rows] == [
        ["DefaultCluster", "broker-ha", "0", ha_cluster.master, "V4_9_8"],  # the master
        ["DefaultCluster", "broker-ha", "1", ha_cluster.slave, "V4_9_8"],  # its slave
    ]
    assert [r[5:] for r in rows] == [
        ["1.50(0,0ms)", "0.25(0,0ms)", "0", "0.00", "0.2500"],
        ["0.00(0,0ms)", "0.50(0,0ms)", "0", "0.00", "0.2500"],
    ]
    # registered before its master, the slave was told of no master yet (Java's answer: no masterAddr);
    # the master's reply never names one (tests/test_namesrv_golden.py replays the real exchange)
    assert "masterAddr" not in (ha_cluster.register_replies[1].ext_fields or {})
    assert "masterAddr" not in (ha_cluster.register_replies[0].ext_fields or {})


def test_more_stats_rows(ha_cluster: HaCluster, capsys: pytest.CaptureFixture[str]) -> None:
    header, rows = run(capsys, "admin", "clusterList", "-n", ha_cluster.namesrv, "-m")
    assert header == golden_header("14")
    assert rows == [
        ["DefaultCluster", "broker-ha", "0", "0", "20", "20"],
        ["DefaultCluster", "broker-ha", "0", "0", "0", "40"],
    ]


def test_cluster_filter(ha_cluster: HaCluster, capsys: pytest.CaptureFixture[str]) -> None:
    _header, rows = run(capsys, "admin", "clusterList", "-n", ha_cluster.namesrv, "-c", "OtherCluster")
    assert rows == []
