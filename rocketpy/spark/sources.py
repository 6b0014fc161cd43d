"""The Spark data sources: ``rocketmq-pcap``, ``rocketmq-commitlog``, ``rocketmq-consumequeue``, ``rocketmq-index``.

Each lists its files on the driver and makes partitions of them: store files are cut into
byte ranges (``splitSize``), captures stay one per file (TCP reassembly needs all of it),
so a store or a pile of captures spreads across executors; each executor maps or streams
its range and hands Spark Arrow batches.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ._columns import ddl
from ._files import (
    byte_splits,
    commitlog_files,
    consumequeue_files,
    index_files,
    option_paths,
    pcap_files,
    split_size,
)
from .commitlog import COMMITLOG_COLUMNS, CommitLogOptions, commitlog_batches
from .consumequeue import CONSUMEQUEUE_COLUMNS, consumequeue_batches
from .index import INDEX_COLUMNS, index_batches
from .pcap import PCAP_COLUMNS, PcapOptions, pcap_batches

__all__ = [
    "CommitLogDataSource",
    "ConsumeQueueDataSource",
    "IndexDataSource",
    "PcapDataSource",
]


class FilePartition(InputPartition):
    """One file or a byte range of it (and what its path says about it): the unit of parallelism."""

    def __init__(
        self,
        path: str,
        topic: str | None = None,
        queue_id: int = 0,
        offset: int = 0,
        start: int = 0,
        end: int | None = None,
    ) -> None:
        super().__init__(path)
        self.path = path
        self.topic = topic
        self.queue_id = queue_id
        self.offset = offset
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"FilePartition({self.path!r}, {self.start}, {self.end})"


def _splits(path: str, size: int, **fields: object) -> list[FilePartition]:
    return [FilePartition(path, start=s, end=e, **fields) for s, e in byte_splits(os.path.getsize(path), size)]  # type: ignore[arg-type]


def _options(raw: object) -> dict[str, str]:
    # Spark hands options with lowercased keys; copy them out of its mapping for pickling.
    return {str(k).lower(): str(v) for k, v in dict(raw).items()}  # type: ignore[call-overload]


class _Reader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options

    def _paths(self) -> list[str]:
        return option_paths(self.options)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        # With no files at all, Spark still runs one task with a partition of its own.
        if isinstance(partition, FilePartition):
            yield from self._read(partition)

    def _read(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError


# -- CommitLog ------------------------------------------------------------------


class _CommitLogReader(_Reader):
    def partitions(self) -> Sequence[InputPartition]:
        opts = CommitLogOptions.parse(self.options)
        files = commitlog_files(self._paths())
        if not opts.resync:
            # Without resync one damaged record ends its file's rows; a later split could not know.
            return [FilePartition(path, offset=base) for path, base in files]
        size = split_size(self.options)
        return [p for path, base in files for p in _splits(path, size, offset=base)]

    def _read(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        opts = CommitLogOptions.parse(self.options)
        yield from commitlog_batches(partition.path, partition.offset, opts, start=partition.start, end=partition.end)


class CommitLogDataSource(DataSource):
    """``spark.read.format("rocketmq-commitlog").load(store_dir)``: one row per message record.

    Options: checkCrc (true), decompress (false), includeBody (true), resync (true), splitSize
    (128m: each file is read as byte ranges of this size, one task each; with resync off,
    one task per file).
    """

    @classmethod
    def name(cls) -> str:
        return "rocketmq-commitlog"

    def schema(self) -> str:
        return ddl(COMMITLOG_COLUMNS)

    def reader(self, schema: StructType) -> DataSourceReader:
        return _CommitLogReader(_options(self.options))


# -- ConsumeQueue -----------------------------------------------------------------


class _ConsumeQueueReader(_Reader):
    def partitions(self) -> Sequence[InputPartition]:
        wanted = {t for t in self.options.get("topics", "").split(",") if t}
        size = split_size(self.options)
        return [
            p
            for path, topic, qid, offset in consumequeue_files(self._paths())
            if not wanted or topic in wanted
            for p in _splits(path, size, topic=topic, queue_id=qid, offset=offset)
        ]

    def _read(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        yield from consumequeue_batches(
            partition.path,
            partition.topic or "",
            partition.queue_id,
            partition.offset,
            start=partition.start,
            end=partition.end,
        )


class ConsumeQueueDataSource(DataSource):
    """``spark.read.format("rocketmq-consumequeue").load(store_dir)``: one row per queue unit.

    Option topics: a comma-separated list to read only those topics' files; splitSize (128m)
    cuts a file into tasks of whole units.
    """

    @classmethod
    def name(cls) -> str:
        return "rocketmq-consumequeue"

    def schema(self) -> str:
        return ddl(CONSUMEQUEUE_COLUMNS)

    def reader(self, schema: StructType) -> DataSourceReader:
        return _ConsumeQueueReader(_options(self.options))


# -- IndexFile --------------------------------------------------------------------


class _IndexReader(_Reader):
    def partitions(self) -> Sequence[InputPartition]:
        size = split_size(self.options)
        return [p for path in index_files(self._paths()) for p in _splits(path, size)]

    def _read(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        yield from index_batches(partition.path, self.options, start=partition.start, end=partition.end)


class IndexDataSource(DataSource):
    """``spark.read.format("rocketmq-index").load(store_dir)``: one row per IndexFile entry.

    Options maxHashSlotNum and maxIndexNum as in the broker config (derived from the
    file size when absent); splitSize (128m) cuts a file into tasks of whole entries.
    """

    @classmethod
    def name(cls) -> str:
        return "rocketmq-index"

    def schema(self) -> str:
        return ddl(INDEX_COLUMNS)

    def reader(self, schema: StructType) -> DataSourceReader:
        return _IndexReader(_options(self.options))


# -- Captures -------------------------------------------------------------------------


class _PcapReader(_Reader):
    def partitions(self) -> Sequence[InputPartition]:
        return [FilePartition(path) for path in pcap_files(self._paths())]

    def _read(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        yield from pcap_batches(partition.path, PcapOptions.parse(self.options))


class PcapDataSource(DataSource):
    """``spark.read.format("rocketmq-pcap").load(paths)``: one row per RemotingCommand.

    Connections are recognised by their content on any port. Options: explodeMessages (false:
    one row per message carried by SEND, batch, PULL, QUERY/VIEW and CHECK_TRANSACTION_STATE
    commands, and with haStream by HA transfers), ports (only connections with one of these
    ports at an end, comma-separated; default any), pairTimeoutSeconds (300), haStream (false:
    also a row per master/slave HA offset report and transfer).
    """

    @classmethod
    def name(cls) -> str:
        return "rocketmq-pcap"

    def schema(self) -> str:
        return ddl(PCAP_COLUMNS)

    def reader(self, schema: StructType) -> DataSourceReader:
        return _PcapReader(_options(self.options))


ALL_SOURCES: tuple[type[DataSource], ...] = (
    PcapDataSource,
    CommitLogDataSource,
    ConsumeQueueDataSource,
    IndexDataSource,
)
