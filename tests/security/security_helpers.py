"""Servers and requests the security tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio

from rocketpy.codecs import RemotingCommand
from rocketpy.codecs.codes import RequestCode
from rocketpy.javacompat import properties
from rocketpy.namesrv.config import NamesrvConfig
from rocketpy.namesrv.server import NameServer
from rocketpy.testing import broker_client

BLACK_LIST_REMARK = "Can not update config in black list."  # AdminBrokerProcessor / DefaultRequestProcessor


def broker_file(tmp_path: Path, extra: str = "") -> Path:
    """A broker's -c file holding what the test broker runs with (running_broker reads it)."""
    path = tmp_path / "broker.conf"
    path.write_text(f"brokerName=broker-a\nlistenHost=127.0.0.1\nstorePathRootDir={tmp_path / 'store'}\n"
                    f"deleteWhen=04\n{extra}", encoding="latin-1")
    return path


def namesrv_file(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "namesrv.properties"
    path.write_text(f"listenHost=127.0.0.1\nlistenPort=0\nkvConfigPath={tmp_path / 'kvConfig.json'}\n{extra}",
                    encoding="latin-1")
    return path


@asynccontextmanager
async def running_namesrv(path: Path) -> AsyncIterator[NameServer]:
    """A NameServer started as ``mqnamesrv -c path`` starts it (configStorePath: that file)."""
    async with trio.open_nursery() as nursery:
        ns: NameServer = await nursery.start(NameServer(NamesrvConfig.from_file(path)).run)
        try:
            yield ns
        finally:
            nursery.cancel_scope.cancel()


async def invoke(addr: str, code: int, body: bytes, header: object = None) -> RemotingCommand:
    async with broker_client(addr) as c:
        return await c.invoke(code, header, body)


async def broker_config(addr: str) -> dict[str, str]:
    answer = await invoke(addr, RequestCode.GET_BROKER_CONFIG, b"")
    return properties.loads(answer.body.decode())
