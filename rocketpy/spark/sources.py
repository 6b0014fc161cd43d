"""The Spark data sources: ``rocketmq-pcap``, ``rocketmq-commitlog``, ``rocketmq-consumequeue``, ``rocketmq-index``.

Each lists its files on the driver and makes partitions of them: store files are cut into
byte ranges (``splitSize``), captures stay one per file (TCP reassembly needs all of it),
so a store or a pile of captures spreads across executors; each executor maps or streams
its range and hands Spark Arrow batches.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from ..codecs.store_records import CQ_STORE_UNIT_SIZE
from ..store.walk import written_end
from ._columns import ddl
from ._files import (
    _isdir,
    byte_splits,
    commitlog_files,
    consumequeue_files,
    file_size,
    index_files,
    is_remote,
    option_paths,
    pcap_files,
    split_size,
)
from .commitlog import (
    COMMITLOG_COLUMNS,
    READ_STATS,
    CommitLogOptions,
    _option,
    commitlog_batches,
    commitlog_records_batches,
)
from .consumequeue import CONSUMEQUEUE_COLUMNS, consumequeue_batches, remote_written_end, units_up
from .dledger import is_ledger_file, ledger_written_end
from .index import INDEX_COLUMNS, index_batches, index_lookup
from .pcap import PCAP_COLUMNS, PcapOptions, pcap_batches
from .pushdown import CommitLogFilter, dispatched_end

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
        exact_start: bool = False,
        written: int | None = None,
    ) -> None:
        super().__init__(path)
        self.written = written  # a ConsumeQueue file's written end, when the driver read it
        self.exact_start = exact_start  # start is a known record boundary: no search for one
        self.path = path
        self.topic = topic
        self.queue_id = queue_id
        self.offset = offset
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"FilePartition({self.path!r}, {self.start}, {self.end})"


def _splits(path: str, size: int, **fields: object) -> list[FilePartition]:
    return [FilePartition(path, start=s, end=e, **fields) for s, e in byte_splits(file_size(path), size)]  # type: ignore[arg-type]


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


class RecordsPartition(InputPartition):
    """Named records of one CommitLog file (a message-id filter)."""

    def __init__(self, path: str, base: int, positions: list[int]) -> None:
        super().__init__(path)
        self.path, self.base, self.positions = path, base, positions


class QueuePartition(InputPartition):
    """One ConsumeQueue file: the CommitLog records its units point at."""

    def __init__(self, path: str, topic: str, queue_id: int, files: list[tuple[str, int, int]]) -> None:
        super().__init__(path)
        self.path, self.topic, self.queue_id = path, topic, queue_id
        self.files = files  # (CommitLog file, first offset, size), in offset order


def _file_at(files: list[tuple[str, int, int]], offset: int) -> tuple[str, int] | None:
    i = bisect.bisect_right([base for _, base, _ in files], offset) - 1
    if i < 0:
        return None
    path, base, size = files[i]
    return (path, base) if offset < base + size else None


def _projection(schema: StructType | None) -> list[tuple[str, str]] | None:
    """The CommitLog columns a requested schema (``.schema(...)`` on the reader) names, in its
    order; None for the full schema or one naming other columns."""
    if schema is None:
        return None
    kinds = dict(COMMITLOG_COLUMNS)
    names = [f.name for f in schema.fields]
    if not names or any(n not in kinds for n in names) or names == list(kinds):
        return None
    return [(n, kinds[n]) for n in names]


class _CommitLogReader(_Reader):
    def __init__(
        self,
        options: dict[str, str],
        columns: list[tuple[str, str]] | None = None,
        resume: dict[str, int] | None = None,
    ) -> None:
        super().__init__(options)
        self.filter = CommitLogFilter()
        self.columns = columns  # None: every column
        # file -> position of a record boundary to start at (a lake's incremental export: the
        # rows before it were read already and the file only grew since)
        self.resume = resume or {}

    def _decoded_columns(self) -> list[tuple[str, str]] | None:
        """What to decode: the projection and whatever the pushed filters test."""
        if self.columns is None:
            return None
        names = {n for n, _ in self.columns} | self.filter.columns()
        return [c for c in COMMITLOG_COLUMNS if c[0] in names]

    def _project(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if self.columns is None:
            yield from batches
            return
        names = [n for n, _ in self.columns]
        for batch in batches:
            yield batch.select(names)

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:  # noqa: N802 (Spark's name)
        # Every filter goes back to Spark too: the plan may read more than it matches.
        for f in filters:
            self.filter.take(f)
            yield f

    def partitions(self) -> Sequence[InputPartition]:
        opts = CommitLogOptions.parse(self.options)
        cf = self.filter
        files = [(path, base, file_size(path)) for path, base in commitlog_files(self._paths()) if base < cf.offset_hi]
        files = [f for f in files if f[1] + f[2] > cf.offset_lo]
        named = cf.message_offsets()
        if named is not None:
            by_file: dict[tuple[str, int], list[int]] = {}
            for offset in named:
                hit = _file_at(files, offset)
                if hit is not None:
                    by_file.setdefault(hit, []).append(offset - hit[1])
            return [RecordsPartition(path, base, positions) for (path, base), positions in by_file.items()]
        scan_from = 0
        out: list[InputPartition] = []
        store = self._store_dir()
        keys = cf.index_keys()
        indexes = index_files([store]) if keys and store is not None and _option(self.options, "useIndex", True) else []
        if keys and indexes:
            # The records the IndexFiles name, then a scan past the last indexed record (the
            # broker may have stored records it had not indexed yet).
            found: set[int] = set()
            for path in indexes:
                offsets, indexed_end = index_lookup(path, self.options, keys)
                found.update(offsets)
                scan_from = max(scan_from, indexed_end)
            by_file = {}
            for offset in sorted(found):
                hit = _file_at(files, offset)
                if hit is not None and cf.offset_lo <= offset < min(cf.offset_hi, scan_from):
                    by_file.setdefault(hit, []).append(offset - hit[1])
            out.extend(RecordsPartition(path, base, positions) for (path, base), positions in by_file.items())
        elif cf.topics is not None and store is not None and _option(self.options, "useConsumeQueue", True):
            queues = [
                q
                for q in consumequeue_files([store])
                if q[1] in cf.topics and (cf.queue_ids is None or q[2] in cf.queue_ids)
            ]
            have = {topic for _, topic, _, _ in consumequeue_files([store]) if topic in cf.topics}
            if have == cf.topics:  # a topic without queues (deleted) can only be scanned for
                out.extend(QueuePartition(path, topic, qid, files) for path, topic, qid, _ in queues)
                scan_from = dispatched_end(store)  # past it, records may not be in a queue yet
        if not opts.resync:
            # Without resync one damaged record ends its file's rows; a later split could not know.
            return out + [
                FilePartition(path, offset=base, start=max(0, scan_from - base), exact_start=True)
                for path, base, size in files
                if base + size > scan_from
            ]
        size = split_size(self.options)
        for path, base, length in files:
            if base + length <= scan_from:
                continue
            if is_ledger_file(path) and not is_remote(path):
                # a ledger's data file is created at its full size: no splits past what its index
                # names (or its written bytes); the last split is open, so what came later is read still
                known = ledger_written_end(path, base, length)
                length = max(1, min(length, written_end(path) if known is None else known))
            # Past the dispatch point the scan starts exactly there: it is where a record ends.
            first = max(0, scan_from - base, self.resume.get(path, 0))
            for start, end in byte_splits(length - first, size):
                if base + first + start >= cf.offset_hi:
                    break
                out.append(
                    FilePartition(
                        path,
                        offset=base,
                        start=first + start,
                        end=None if end is None else first + end,
                        exact_start=start == 0,
                    )
                )
        return out

    def _store_dir(self) -> str | None:
        """The one store directory given, if it is one (the ConsumeQueues sit beside the CommitLog)."""
        paths = self._paths()
        if len(paths) == 1 and _isdir(os.path.join(paths[0], "consumequeue")):
            return paths[0]
        return None

    def _read(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        opts = CommitLogOptions.parse(self.options)
        batches = commitlog_batches(
            partition.path,
            partition.offset,
            opts,
            start=partition.start,
            end=partition.end,
            exact_start=partition.exact_start,
            columns=self._decoded_columns(),
        )
        yield from self.filter.apply(batches)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        opts = CommitLogOptions.parse(self.options)
        if isinstance(partition, RecordsPartition):
            batches = commitlog_records_batches(partition.path, partition.base, partition.positions, opts)
            yield from self._project(self.filter.apply(batches))
        elif isinstance(partition, QueuePartition):
            yield from self._project(self.filter.apply(self._read_queue(partition, opts)))
        else:
            yield from self._project(super().read(partition))

    def _read_queue(self, partition: QueuePartition, opts: CommitLogOptions) -> Iterator[pa.RecordBatch]:
        cf = self.filter
        offsets: list[int] = []
        mapped = not is_remote(partition.path)  # a remote file's ranged reads count themselves
        for batch in consumequeue_batches(partition.path, partition.topic, partition.queue_id, 0):
            if mapped:
                READ_STATS["bytes"] += batch.num_rows * CQ_STORE_UNIT_SIZE
            ok = pc.and_(batch.column("valid"), pc.invert(batch.column("pre_blank")))
            offsets.extend(batch.column("commit_log_offset").filter(ok).to_pylist())
        by_file: dict[tuple[str, int], list[int]] = {}
        for offset in offsets:
            if cf.offset_lo <= offset < cf.offset_hi:
                hit = _file_at(partition.files, offset)
                if hit is not None:
                    by_file.setdefault(hit, []).append(offset - hit[1])
        for (path, base), positions in sorted(by_file.items(), key=lambda kv: kv[0][1]):
            yield from commitlog_records_batches(path, base, positions, opts)


class CommitLogDataSource(DataSource):
    """``spark.read.format("rocketmq-commitlog").load(store_dir)``: one row per message record.

    Options: checkCrc (true), decompress (false), includeBody (true), resync (true), splitSize
    (128m: each file is read as byte ranges of this size, one task each; with resync off,
    one task per file), useConsumeQueue (true: a topic filter reads the topic's queues),
    useIndex (true: a uniq_key filter, or keys = array(...), with a topic filter looks the
    key up in the IndexFiles). A schema given to the reader (``.schema("commit_log_offset long,
    topic string")``) that names some of the columns builds only those: bodies and
    properties are not even sliced out unless asked for.
    """

    @classmethod
    def name(cls) -> str:
        return "rocketmq-commitlog"

    def schema(self) -> str:
        return ddl(COMMITLOG_COLUMNS)

    def reader(self, schema: StructType) -> DataSourceReader:
        return _CommitLogReader(_options(self.options), _projection(schema))


# -- ConsumeQueue -----------------------------------------------------------------


class _ConsumeQueueReader(_Reader):
    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.filter = CommitLogFilter()  # only its topic and queue-id conditions apply here

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:  # noqa: N802 (Spark's name)
        # Topic and queue id name files: those prune the listing; Spark checks every filter.
        for f in filters:
            if getattr(f, "attribute", None) in (("topic",), ("queue_id",)):
                self.filter.take(f)
            yield f

    def partitions(self) -> Sequence[InputPartition]:
        wanted = {t for t in self.options.get("topics", "").split(",") if t}
        topics, queue_ids = self.filter.topics, self.filter.queue_ids
        size = split_size(self.options)
        out: list[InputPartition] = []
        for path, topic, qid, offset in consumequeue_files(self._paths()):
            if (wanted and topic not in wanted) or (topics is not None and topic not in topics):
                continue
            if queue_ids is not None and qid not in queue_ids:
                continue
            splits = _splits(path, size, topic=topic, queue_id=qid, offset=offset)
            if len(splits) > 1 and is_remote(path):
                # Where a split's rows end can depend on every byte after it (a zero unit is a
                # row only if something is written later): read the file's never-written tail
                # once here rather than in each split, and drop the splits past the written end.
                written = remote_written_end(path)
                splits = [p for p in splits if units_up(p.start) < written]
                for p in splits:
                    p.written = written
            out.extend(splits)
        return out

    def _read(self, partition: FilePartition) -> Iterator[pa.RecordBatch]:
        yield from consumequeue_batches(
            partition.path,
            partition.topic or "",
            partition.queue_id,
            partition.offset,
            start=partition.start,
            end=partition.end,
            written=partition.written,
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
