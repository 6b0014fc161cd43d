"""The Spark data sources: ``rocketmq-pcap``, ``rocketmq-commitlog``, ``rocketmq-consumequeue``, ``rocketmq-index``.

Each lists its files on the driver and makes one partition per file, so a store or a
pile of captures spreads across executors; each executor maps or streams its file and
hands Spark Arrow batches built by the codecs in :mod:`rocketpy.codecs`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from ._columns import ddl
from ._files import commitlog_files, consumequeue_files, index_files, option_paths, pcap_files
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
    """One file (and what its path says about it): the unit of parallelism."""

    def __init__(self, path: str, topic: str | None = None, queue_id: int = 0, offset: int = 0) -> None:
        super().__init__(path)
        self.path = path
        self.topic = topic
        self.queue_id = queue_id
        self.offset = offset

    def __repr__(self) -> str:
        return f"FilePartition({self.path!r})"


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
        return [FilePartition(path, offset=base) for path, base in commitlog_files(self._paths())]

    def _read(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        yield from commitlog_batches(partition.path, partition.offset, CommitLogOptions.parse(self.options))


class CommitLogDataSource(DataSource):
    """``spark.read.format("rocketmq-commitlog").load(store_dir)``: one row per message record.

    Options: checkCrc (true), decompress (false), includeBody (true), resync (true).
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
        return [
            FilePartition(path, topic, qid, offset)
            for path, topic, qid, offset in consumequeue_files(self._paths())
            if not wanted or topic in wanted
        ]

    def _read(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        yield from consumequeue_batches(partition.path, partition.topic or "", partition.queue_id, partition.offset)


class ConsumeQueueDataSource(DataSource):
    """``spark.read.format("rocketmq-consumequeue").load(store_dir)``: one row per queue unit.

    Option topics: a comma-separated list to read only those topics' files.
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
        return [FilePartition(path) for path in index_files(self._paths())]

    def _read(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        yield from index_batches(partition.path, self.options)


class IndexDataSource(DataSource):
    """``spark.read.format("rocketmq-index").load(store_dir)``: one row per IndexFile entry.

    Options maxHashSlotNum and maxIndexNum as in the broker config (derived from the
    file size when absent).
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
