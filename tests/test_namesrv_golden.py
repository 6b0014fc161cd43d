"""Replay the Java NameServer's captured traffic into ours and compare the answers byte for byte.

Every request sent to port 9876 in the golden captures (broker registrations, plain
and compressed, route lookups in JSON and ROCKETMQ headers, cluster info, topic
lists, topic deletion) goes to one of our NameServers, in capture order, over one
connection per captured connection; each answer must equal the Java one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from rocketpy.codecs import RequestCode, ResponseCode
from rocketpy.namesrv import NameServer, NamesrvConfig
from rocketpy.remoting.connection import CommandReader
from rocketpy.sniffer.pcap import read_packets
from rocketpy.testing import wait_until
from tests.golden import CAPTURES, PCAPS, frames

NAMESRV_PORT = 9876
#: a oneway registration this recent may not be applied yet when Java answers a lookup
RACE_WINDOW = 0.1

pytestmark = pytest.mark.skipif(not PCAPS, reason="golden captures not present")


def namesrv_exchanges(pcap: Path) -> list[tuple]:
    """(request frame, response frame or None) for traffic to the NameServer, in capture order."""
    all_frames = frames(pcap)
    by_key = {}
    for f in all_frames:
        if f.command is not None and f.from_server and f.src[1] == NAMESRV_PORT:
            by_key.setdefault((f.conn, f.command.opaque), f)
    out = []
    for f in all_frames:
        if f.command is None or f.from_server or f.dst[1] != NAMESRV_PORT:
            continue
        out.append((f, by_key.get((f.conn, f.command.opaque))))
    return out


def closes_before(pcap: Path) -> dict[tuple, float]:
    """When each connection to the NameServer was first closed (FIN or RST), client side first: a broker
    killed with kill -9 leaves the NameServer nothing but that (Java then drops its routes)."""
    out: dict[tuple, float] = {}
    with open(pcap, "rb") as f:
        for pkt in read_packets(f):
            if pkt.fin_or_rst and NAMESRV_PORT in (pkt.src[1], pkt.dst[1]):
                conn = (pkt.dst, pkt.src) if pkt.src[1] == NAMESRV_PORT else (pkt.src, pkt.dst)
                out.setdefault(conn, pkt.ts)
    return out


async def replay(pcaps: list[Path], tmp_path: Path) -> tuple[int, list[str]]:
    config = NamesrvConfig(listen_port=0, kv_config_path=str(tmp_path / "kv.json"))
    same, diffs = 0, []
    async with trio.open_nursery() as nursery:
        ns: NameServer = await nursery.start(NameServer(config).run)
        streams: dict[tuple, tuple[trio.SocketStream, CommandReader]] = {}
        last_oneway_register = -1.0
        for pcap in pcaps:
            closes = closes_before(pcap)
            for req, resp in namesrv_exchanges(pcap):
                for (name, conn), (stream, _) in list(streams.items()):
                    if name == pcap.name and closes.get(conn, req.ts) < req.ts:
                        local = f"127.0.0.1:{stream.socket.getsockname()[1]}"
                        await stream.aclose()  # the capture's connection closed here: ours too
                        del streams[(name, conn)]
                        # a broker registered over it is gone once the NameServer has seen the close
                        await wait_until(lambda gone=local: all(
                            getattr(live.channel, "remote_addr", None) != gone
                            for live in ns.routes.broker_live_table.values()
                        ))
                key = (pcap.name, req.conn)
                if key not in streams:
                    streams[key] = (await trio.open_tcp_stream("127.0.0.1", ns.port), CommandReader())
                stream, reader = streams[key]
                await stream.send_all(req.raw)
                cmd = req.command
                if cmd.is_oneway:
                    if cmd.code == RequestCode.REGISTER_BROKER:
                        last_oneway_register = req.ts
                    continue
                got = []
                with trio.fail_after(5):
                    while not got:
                        data = await stream.receive_some()
                        assert data, f"{pcap.name}: connection closed"
                        got = reader.feed(data)
                if resp is None:
                    continue  # the capture ended before Java answered
                ours = got[0].encode()
                if ours == resp.raw:
                    same += 1
                    continue
                java = resp.command
                if (
                    java.code == ResponseCode.TOPIC_NOT_EXIST
                    and got[0].code == ResponseCode.SUCCESS
                    and req.ts - last_oneway_register < RACE_WINDOW
                ):
                    continue  # Java had not applied the oneway registration yet
                diffs.append(f"{pcap.name} opaque {cmd.opaque} code {cmd.code}:\n  java {resp.raw!r}\n  ours {ours!r}")
        for stream, _ in streams.values():
            await stream.aclose()
        nursery.cancel_scope.cancel()
    return same, diffs


#: the master/slave and DLedger captures ran against NameServers of their own (no broker-a in them):
#: each is replayed alone
HA_PCAP = CAPTURES / "15-ha-master-slave.pcap"
DLEDGER_PCAP = CAPTURES / "16-dledger.pcap"


async def test_replay_every_capture(tmp_path: Path) -> None:
    same, diffs = await replay([p for p in PCAPS if p not in (HA_PCAP, DLEDGER_PCAP)], tmp_path)
    assert not diffs, "\n".join(diffs[:5])
    assert same >= 150


async def test_replay_master_slave_capture(tmp_path: Path) -> None:
    """A master and a slave of one broker name register, the master unregisters: every answer as Java's
    (routes listing both addresses, then the slave alone; the slave's registration reply naming the master)."""
    same, diffs = await replay([HA_PCAP], tmp_path)
    assert not diffs, "\n".join(diffs[:5])
    assert same >= 40


async def test_replay_dledger_capture(tmp_path: Path) -> None:
    """Three DLedger members register as their roles change (leader as brokerId 0, followers as their node
    number + 1, oneway), the leader dies and another takes brokerId 0: every answer as Java's."""
    same, diffs = await replay([DLEDGER_PCAP], tmp_path)
    assert not diffs, "\n".join(diffs[:5])
    assert same >= 40


async def test_replay_register_then_routes(tmp_path: Path) -> None:
    """The registration of 00-broker-register alone is enough for 09-Admin's first lookups."""
    register = CAPTURES / "00-broker-register.pcap"
    (req, resp), *_ = namesrv_exchanges(register)
    assert req.command.code == RequestCode.REGISTER_BROKER and resp.command.code == 0
    config = NamesrvConfig(listen_port=0, kv_config_path=str(tmp_path / "kv.json"))
    async with trio.open_nursery() as nursery:
        ns: NameServer = await nursery.start(NameServer(config).run)
        stream = await trio.open_tcp_stream("127.0.0.1", ns.port)
        reader = CommandReader()
        await stream.send_all(req.raw)
        with trio.fail_after(5):
            (answer,) = reader.feed(await stream.receive_some())
        assert answer.encode() == resp.raw
        checked = 0
        for areq, aresp in namesrv_exchanges(CAPTURES / "09-Admin.pcap"):
            topic = (areq.command.ext_fields or {}).get("topic")
            if areq.command.code != RequestCode.GET_ROUTEINFO_BY_TOPIC or topic != "TBW102" or aresp is None:
                continue
            await stream.send_all(areq.raw)
            got: list = []
            with trio.fail_after(5):
                while not got:
                    got = reader.feed(await stream.receive_some())
            assert got[0].encode() == aresp.raw
            checked += 1
        assert checked >= 2
        await stream.aclose()
        nursery.cancel_scope.cancel()
