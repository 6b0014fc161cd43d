"""Loading and saving the broker's config files through the store's ConfigFile
(``.tmp`` + ``.bak`` like Java's MixAll.string2File). A failed write is logged, never raised,
so a full disk cannot take a running broker down; a file that cannot be read stops the broker
at start (see :func:`load_json`).

One rule for every config file of a running broker (topics, subscription groups, consumer
and delay offsets): a change marks its table dirty; :class:`ConfigWriter` snapshots dirty
tables on the trio thread and encodes and writes them (fsync included) from a worker thread,
never on the event loop; the broker flushes everything on shutdown.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

import trio

from ..codecs.bodies.base import JsonBody
from ..codecs.bodies.store_config import encode_config_file
from ..store.config_files import ConfigFile, string_to_file

log = logging.getLogger("rocketpy.broker")

B = TypeVar("B", bound=JsonBody)


def load_json(path: str, cls: type[B]) -> B | None:
    """The document of ``path`` (or its ``.bak``), None when there is none. A file that does not parse
    with no ``.bak`` that does raises ConfigFileUnreadable (an OSError naming the file): the broker stops
    with that line instead of starting on an empty table."""
    return ConfigFile(path, cls).load()  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True)
class TableSnapshot:
    """A config table as it was when taken (on the trio thread), to be encoded elsewhere (a worker thread).

    ``doc`` is the table's document with its table property ``attr`` left empty, ``entries`` the table's
    entries: :meth:`encode` writes them one at a time into that property (JsonBody.encode_streamed), so the
    whole table's JSON tree and the writer's pieces for it never exist at once, only the text."""

    doc: JsonBody
    attr: str
    entries: Mapping[Any, Any]

    def encode(self) -> bytes:
        """The config file's bytes (``toJson(true)``), the same as encode_config_file of the whole document."""
        return self.doc.encode_streamed(self.attr, self.entries, pretty=True)


#: config files whose last write failed (logged once until a write succeeds again)
_FAILING: set[str] = set()


def persist_json(path: str, doc: JsonBody | TableSnapshot) -> bool:
    """Write ``doc`` to ``path``; False (logged) when the disk refused it, the previous file intact."""
    try:
        string_to_file(doc.encode() if isinstance(doc, TableSnapshot) else encode_config_file(doc), path)
    except OSError as exc:
        if path not in _FAILING:
            _FAILING.add(path)
            log.error("persist %s failed, the previous file is kept: %s", path, exc)
        return False
    if path in _FAILING:
        _FAILING.discard(path)
        log.info("persist %s succeeded again", path)
    return True


def persist_text(path: str, text: str | bytes) -> bool:
    """MixAll.string2File of ``text``; False, and one line logged, when the disk refused it (the
    previous file is kept). Each failure is logged: a caller asked for this write."""
    try:
        string_to_file(text, path)
    except OSError as exc:
        log.error("persist string2File error, %s: %s", path, exc)
        return False
    return True


class ConfigTable(Protocol):
    """A table persisted as one config file: its path (None: memory only), dirty flag and snapshot."""

    path: str | None
    dirty: bool

    def snapshot(self) -> TableSnapshot:
        """The table as it is now, safe to encode in another thread while the table changes."""
        ...


class ConfigWriter:
    """Writes dirty config tables from a worker thread, one file at a time."""

    def __init__(self, tables: Sequence[ConfigTable]) -> None:
        self.tables = list(tables)
        self._wakeup = trio.Event()
        self._lock = trio.Lock()

    def wake(self) -> None:
        """A table changed: write it soon (the run loop does)."""
        self._wakeup.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        while True:
            await self._wakeup.wait()
            self._wakeup = trio.Event()
            await self.write_dirty()

    async def write_dirty(self, tables: Sequence[ConfigTable] | None = None) -> None:
        """Write every dirty table (of ``tables``, default all); returns once they are on disk."""
        async with self._lock:
            for table in self.tables if tables is None else tables:
                if not table.dirty or table.path is None:
                    continue
                # snapshot here, on the trio thread: handlers keep changing the table meanwhile; the worker
                # thread encodes it (streamed) and writes it
                table.dirty = False
                snapshot = table.snapshot()
                # not abandoned on cancel: a write once begun completes, so shutdown finds no .tmp
                if not await trio.to_thread.run_sync(persist_json, table.path, snapshot):
                    table.dirty = True  # retried at the next write

    async def flush_all(self) -> None:
        """Shutdown: write every table whether changed or not (Java persists all of them)."""
        for table in self.tables:
            table.dirty = True
        await self.write_dirty()
