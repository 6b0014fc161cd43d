"""KV config namespaces (KVConfigManager), persisted to kvConfig.json in Java's format.

The file is the compact fastjson form of KVConfigSerializeWrapper,
``{"configTable":{"namespace":{"key":"value"}}}``, written through ``.tmp`` with the
previous content kept as ``.bak`` (MixAll.string2File), so a Java NameServer and
ours can read each other's file. A change updates the table at once (readers see it) and
is written by :meth:`KVConfigManager.save` from a worker thread, never on the event loop.
"""

from __future__ import annotations

import logging
import os

import trio

from ..codecs import CodecError, fastjson
from ..javacompat.files import string_to_file
from ..javacompat.hashmap import JavaHashMap

log = logging.getLogger("rocketpy.namesrv")

#: NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG
NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


class KVConfigError(RuntimeError):
    """kvConfig.json exists but cannot be read as a KV table."""


class KVConfigManager:
    """Namespace -> key -> value, in java.util.HashMap order; saved (:meth:`save`) after each change."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = os.fspath(path) if path is not None else None
        # a value may be null (Java's HashMap keeps it): PUT_KV_CONFIG without a value, or null in the file
        self.table: JavaHashMap[str, JavaHashMap[str, str | None]] = JavaHashMap()
        #: bumped on every change, so cached answers that embed KV values can tell
        self.version = 0
        self.loaded = False
        # one write at a time, each of the table as it is when the write begins: the last write wins
        self._write_lock = trio.Lock()

    # -- disk ---------------------------------------------------------------------
    def load(self) -> None:
        """Read the file if present; a broken file is an error (Java's NameServer does not start)."""
        self.loaded = True
        if self.path is None or not os.path.exists(self.path):
            return
        try:
            with open(self.path, "rb") as f:
                doc = fastjson.loads(f.read())
        except (OSError, CodecError) as exc:
            raise KVConfigError(f"cannot read KV config {self.path}: {exc}") from exc
        if doc is None:
            return
        if not isinstance(doc, dict):
            raise KVConfigError(f"KV config {self.path} is not a JSON object")
        table = doc.get("configTable")
        if table is None:
            return
        if not isinstance(table, dict):
            raise KVConfigError(f"KV config {self.path}: configTable is not an object")
        for namespace, entries in table.items():
            if not isinstance(entries, dict):
                raise KVConfigError(f"KV config {self.path}: namespace {namespace!r} is not an object")
            kv: JavaHashMap[str, str | None] = JavaHashMap()
            for key, value in entries.items():
                kv[str(key)] = value if isinstance(value, str) or value is None else fastjson.dumps(value)
            self.table[str(namespace)] = kv
        self.version += 1
        log.info("load KV config table OK: %s", self.path)

    def to_json(self) -> bytes:
        """KVConfigSerializeWrapper.toJson(): compact, maps in HashMap order."""
        doc = {"configTable": {ns: self.table[ns].java_view() for ns in self.table.java_keys()}}
        return fastjson.dump_bytes(doc)

    def persist(self) -> None:
        """Write the file now, on this thread (tools and tests; servers :meth:`save`)."""
        if self.path is not None:
            _write_logged(self.path, self.to_json())

    async def save(self) -> None:
        """Write the table as it is now from a worker thread; returns once it is on disk (or logged)."""
        if self.path is None:
            return
        async with self._write_lock:
            data = self.to_json()  # the snapshot, taken on the trio thread
            await trio.to_thread.run_sync(_write_logged, self.path, data)

    # -- operations -----------------------------------------------------------------
    def put(self, namespace: str, key: str, value: str | None) -> None:
        kv = self.table.get(namespace)
        if kv is None:
            kv = self.table[namespace] = JavaHashMap()
            log.info("putKVConfig create new Namespace %s", namespace)
        kv[key] = value
        self.version += 1

    def delete(self, namespace: str, key: str) -> None:
        kv = self.table.get(namespace)
        if kv is not None:
            value = kv.pop(key, None)
            log.info("deleteKVConfig delete a config item, Namespace: %s Key: %s Value: %s", namespace, key, value)
        self.version += 1

    def get(self, namespace: str | None, key: str | None) -> str | None:
        # keys are never null (put takes str, load str()s them): a null namespace or key finds nothing
        kv = None if namespace is None else self.table.get(namespace)
        return None if kv is None or key is None else kv.get(key)

    def list_namespace(self, namespace: str | None) -> bytes | None:
        """KVTable JSON of one namespace, or None when it does not exist."""
        kv = None if namespace is None else self.table.get(namespace)
        if kv is None:
            return None
        return fastjson.dump_bytes({"table": kv.java_view()})


def _write_logged(path: str, data: bytes) -> None:
    try:
        write_file_safely(path, data)
    except OSError as exc:
        log.error("persist kvconfig Exception, %s: %s", path, exc)


def write_file_safely(path: str, data: bytes) -> None:
    """MixAll.string2File (``.tmp``, the old file kept as ``.bak``, rename), with string paths (see
    :mod:`rocketpy.javacompat.files` for why not pathlib)."""
    string_to_file(data, path, sync=False)  # Java's NameServer writes without an fsync
