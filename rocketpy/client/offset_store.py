"""Where a consumer keeps its progress: on the broker (clustering) or in a local file (broadcasting).

The local file is Java's LocalFileOffsetStore format, so a Java and a Python
broadcasting consumer with the same client id and group read each other's file:
``<dir>/<clientId>/<group>/offsets.json`` (``dir`` defaults to ``~/.rocketmq_offsets``
or the ``rocketmq.client.localOffsetStoreDir`` setting), pretty fastjson, with a
``.bak`` copy of the previous content.
"""

from __future__ import annotations

import enum
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ..codecs.bodies import MessageQueue
from ..codecs.bodies.store_config import OffsetSerializeWrapper
from ..codecs.errors import CodecError
from ..javacompat.files import string_to_file
from ..remoting import RemotingError
from .errors import MQBrokerError, MQClientError
from .route import MASTER_ID

if TYPE_CHECKING:
    from .instance import ClientInstance

log = logging.getLogger("rocketpy.client")

LOCAL_OFFSET_STORE_DIR_ENV = "ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR"


class ReadOffsetType(enum.Enum):
    READ_FROM_MEMORY = 0
    READ_FROM_STORE = 1
    MEMORY_FIRST_THEN_STORE = 2


class OffsetStore:
    """The in-memory part shared by both stores."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.table: dict[MessageQueue, int] = {}

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool = False) -> None:
        old = self.table.get(mq)
        if old is None or not increase_only or offset > old:
            self.table[mq] = offset

    def memory_offset(self, mq: MessageQueue) -> int:
        """The offset held in memory, or -1 (read_offset's READ_FROM_MEMORY, without awaiting)."""
        return self.table.get(mq, -1)

    def remove_offset(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)

    def clone_table(self, topic: str) -> dict[MessageQueue, int]:
        return {mq: off for mq, off in self.table.items() if mq.topic == topic}

    async def load(self) -> None:
        pass

    async def read_offset(self, mq: MessageQueue, kind: ReadOffsetType) -> int:
        raise NotImplementedError

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        raise NotImplementedError

    async def persist(self, mq: MessageQueue) -> None:
        raise NotImplementedError

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int) -> None:
        pass


class RemoteBrokerOffsetStore(OffsetStore):
    """Clustering: offsets live on the broker that hosts the queue."""

    def __init__(self, client: ClientInstance, group: str) -> None:
        super().__init__(group)
        self.client = client

    async def _broker(self, mq: MessageQueue) -> str:
        """The master of the queue's broker, else (master gone) any member: RemoteBrokerOffsetStore."""
        found = self.client.find_broker_address_in_subscribe(mq.broker_name or "", MASTER_ID, True)
        if found is None:
            await self.client.update_topic_route(mq.topic or "")
            found = self.client.find_broker_address_in_subscribe(mq.broker_name or "", MASTER_ID, False)
        if found is None:
            raise MQClientError(f"The broker[{mq.broker_name}] not exist")
        return found[0]

    async def read_offset(self, mq: MessageQueue, kind: ReadOffsetType) -> int:
        if kind in (ReadOffsetType.READ_FROM_MEMORY, ReadOffsetType.MEMORY_FIRST_THEN_STORE):
            off = self.table.get(mq)
            if off is not None:
                return off
            if kind == ReadOffsetType.READ_FROM_MEMORY:
                return -1
        try:
            off = await self.client.api.query_consumer_offset(await self._broker(mq), self.group, mq)
        except MQBrokerError:
            return -1  # QUERY_NOT_FOUND and friends: no offset yet
        except (MQClientError, RemotingError) as exc:
            log.warning("fetchConsumeOffsetFromBroker exception, %s: %s", mq, exc)
            return -2
        self.update_offset(mq, off)
        return off

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        wanted = set(mqs)
        for mq, off in list(self.table.items()):
            if mq in wanted:
                await self.update_consume_offset_to_broker(mq, off)
        for mq in [mq for mq in self.table if mq not in wanted]:
            del self.table[mq]  # not ours any more (Java removes unused offsets here)

    async def persist(self, mq: MessageQueue) -> None:
        off = self.table.get(mq)
        if off is not None:
            await self.update_consume_offset_to_broker(mq, off)

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int) -> None:
        try:
            await self.client.api.update_consumer_offset_oneway(await self._broker(mq), self.group, mq, offset)
        except (MQClientError, RemotingError) as exc:
            log.warning("updateConsumeOffsetToBroker %s failed: %s", mq, exc)


def default_local_dir() -> Path:
    configured = os.environ.get(LOCAL_OFFSET_STORE_DIR_ENV)
    return Path(configured) if configured else Path.home() / ".rocketmq_offsets"


class LocalFileOffsetStore(OffsetStore):
    """Broadcasting: each client keeps its own offsets in a file."""

    def __init__(self, client_id: str, group: str, base_dir: str | os.PathLike[str] | None = None) -> None:
        super().__init__(group)
        base = Path(base_dir) if base_dir is not None else default_local_dir()
        self.path = base / client_id / group / "offsets.json"
        self._bak = Path(str(self.path) + ".bak")  # made once: pathlib interns every name it parses
        self._write_lock = anyio.Lock()  # one write at a time: they share the .tmp and .bak names

    async def load(self) -> None:
        wrapper = self._read(self.path) or self._read(self._bak)
        if wrapper is not None:
            self.table.update(wrapper.offset_table)

    @staticmethod
    def _read(path: Path) -> OffsetSerializeWrapper | None:
        try:
            text = path.read_text("utf-8")
        except OSError:
            return None
        if not text.strip():
            return None
        try:
            return OffsetSerializeWrapper.decode(text)
        except CodecError as exc:
            log.warning("readLocalOffset %s: %s", path, exc)
            return None

    async def read_offset(self, mq: MessageQueue, kind: ReadOffsetType) -> int:
        if kind != ReadOffsetType.READ_FROM_STORE:
            off = self.table.get(mq)
            if off is not None:
                return off
            if kind == ReadOffsetType.READ_FROM_MEMORY:
                return -1
        wrapper = self._read(self.path) or self._read(self._bak)
        if wrapper is None or mq not in wrapper.offset_table:
            return -1
        off = wrapper.offset_table[mq]
        self.update_offset(mq, off)
        return off

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        wanted = set(mqs)
        if not wanted:
            return
        table = {mq: off for mq, off in self.table.items() if mq in wanted}
        text = OffsetSerializeWrapper(offset_table=table).encode(pretty=True)
        # MixAll.string2File, off the event loop (it waits for the disk)
        async with self._write_lock:
            await anyio.to_thread.run_sync(string_to_file, text, str(self.path))

    async def persist(self, mq: MessageQueue) -> None:
        pass  # Java persists broadcasting offsets only all together
