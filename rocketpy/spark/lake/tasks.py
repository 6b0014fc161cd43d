"""An export task: decode some source splits and write them as Parquet parts, in the task itself.

Nothing but the task (a few paths and byte ranges) goes to the executor and nothing but a
few numbers per part comes back: the rows never cross into the JVM. Each part's name is new
for every task attempt, so an attempt killed mid-write leaves a part no manifest will name.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .._columns import arrow_schema
from .store import LakeDir
from .tables import DAMAGE_COLUMNS, TABLES, Columns, Table

# A row group is cut at this many rows or bytes, whichever comes first: big enough for the
# vectorised reader, small enough that min/max statistics prune offset and time ranges.
ROW_GROUP_ROWS = 128 * 1024
ROW_GROUP_BYTES = 64 << 20


@dataclass
class Target:
    """Where and how parts are written (one per export; pickled into every task)."""

    lake: LakeDir
    compression: str = "zstd"
    partition_by: str | None = None  # "topic" or "date" (of store/capture time, UTC)
    message_columns: Columns | None = None  # None: every CommitLog column


@dataclass
class Task:
    """Splits of one kind of source file, decoded and written by one Spark task."""

    seq: int
    kind: str  # commitlog, consumequeue, index, pcap
    options: dict[str, str]
    partitions: list[Any]  # the sources' own InputPartitions: (path, start, end) and what the path says
    weight: int = 0  # bytes, to start the biggest first


@dataclass
class _Part:
    table: str
    rel: str
    writer: Any = None
    sink: Any = None
    held: list[pa.RecordBatch] = field(default_factory=list)
    held_rows: int = 0
    held_bytes: int = 0
    rows: int = 0
    order_lo: Any = None
    order_hi: Any = None
    time_lo: Any = None
    time_hi: Any = None


class PartWriter:
    """The Parquet parts one task writes: one per table (and per partition value)."""

    def __init__(self, target: Target, seq: int) -> None:
        self.target = target
        self.seq = seq
        self.attempt = uuid.uuid4().hex[:12]
        self.parts: dict[tuple[str, str | None], _Part] = {}

    def _schema(self, table: str) -> pa.Schema:
        if table == "messages" and self.target.message_columns is not None:
            return arrow_schema(self.target.message_columns)
        return arrow_schema(TABLES[table].columns)

    def add(self, table: str, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        by = self.target.partition_by
        if by is None:
            self._add(table, None, batch)
            return
        keys = _partition_keys(table, batch, by)
        for value in pc.unique(keys).to_pylist():
            mask = pc.is_null(keys) if value is None else pc.fill_null(pc.equal(keys, value), False)
            self._add(table, value, batch.filter(mask))

    def _add(self, table: str, value: str | None, batch: pa.RecordBatch) -> None:
        part = self.parts.get((table, value))
        if part is None:
            sub = "" if self.target.partition_by is None else f"{self.target.partition_by}={_dir_value(value)}/"
            rel = f"{table}/{sub}part-{self.seq:05d}-{self.attempt}.parquet"
            part = self.parts[(table, value)] = _Part(table, rel)
        part.held.append(batch)
        part.held_rows += batch.num_rows
        part.held_bytes += batch.nbytes
        _extend(part, batch, TABLES[table])
        if part.held_rows >= ROW_GROUP_ROWS or part.held_bytes >= ROW_GROUP_BYTES:
            self._flush(part)

    def _flush(self, part: _Part) -> None:
        if not part.held:
            return
        table = pa.Table.from_batches(part.held)
        if part.writer is None:
            fs, lake = self.target.lake.filesystem, self.target.lake
            where = lake.inner(part.rel)
            fs.create_dir(where.rsplit("/", 1)[0], recursive=True)
            part.sink = fs.open_output_stream(where)
            spec = TABLES[part.table]
            schema = self._schema(part.table)
            # A Bloom filter sized for the rows of a row group like the first (its bytes grow with
            # the distinct values it is sized for: sized for ROW_GROUP_ROWS, those of 45,000-row
            # groups of whole records were a fifth of the file).
            ndv = max(1024, table.num_rows)
            part.writer = pq.ParquetWriter(
                part.sink,
                schema,
                compression=self.target.compression,
                use_dictionary=[c for c in spec.dictionary if c in schema.names],
                write_statistics=_statistics_columns(schema, spec),
                bloom_filter_options={c: {"ndv": ndv, "fpp": 0.01} for c in spec.bloom if c in schema.names},
            )
        part.writer.write_table(table, row_group_size=table.num_rows)
        part.rows += table.num_rows
        part.held, part.held_rows, part.held_bytes = [], 0, 0

    def close(self) -> list[dict[str, Any]]:
        """Finish every part; returns what the manifest says of each."""
        out = []
        for (table, value), part in self.parts.items():
            self._flush(part)
            if part.writer is None:
                continue
            part.writer.close()
            part.sink.close()
            size = self.target.lake.filesystem.get_file_info(self.target.lake.inner(part.rel)).size
            info: dict[str, Any] = {
                "table": table,
                "path": part.rel,
                "rows": part.rows,
                "bytes": int(size or 0),
                "order": [part.order_lo, part.order_hi],
                "time": [part.time_lo, part.time_hi],
            }
            if self.target.partition_by is not None:
                info["partition"] = {self.target.partition_by: value}
            out.append(info)
        return out


def _statistics_columns(schema: pa.Schema, spec: Table) -> list[str]:
    """The Parquet leaf columns given min/max statistics: all but the table's ``no_statistics``
    (bodies and properties: no query prunes by their ranges, their statistics would only cost
    write CPU and footer bytes every reader parses)."""
    return [leaf for name, leaf in _leaf_paths(schema) if name not in spec.no_statistics]


def _leaf_paths(schema: pa.Schema) -> list[tuple[str, str]]:
    """(top-level column, Parquet leaf path) of every leaf column ``schema`` is written as."""
    out: list[tuple[str, str]] = []

    def walk(top: str, path: str, typ: pa.DataType) -> None:
        if pa.types.is_map(typ):
            walk(top, f"{path}.key_value.key", typ.key_type)
            walk(top, f"{path}.key_value.value", typ.item_type)
        elif pa.types.is_list(typ) or pa.types.is_large_list(typ):
            walk(top, f"{path}.list.element", typ.value_type)
        elif pa.types.is_struct(typ):
            for f in typ:
                walk(top, f"{path}.{f.name}", f.type)
        else:
            out.append((top, path))

    for f in schema:
        walk(f.name, f.name, f.type)
    return out


def _extend(part: _Part, batch: pa.RecordBatch, spec: Table) -> None:
    names = batch.schema.names
    if spec.order in names:
        lo, hi = _min_max(batch.column(spec.order))
        part.order_lo = lo if part.order_lo is None or (lo is not None and lo < part.order_lo) else part.order_lo
        part.order_hi = hi if part.order_hi is None or (hi is not None and hi > part.order_hi) else part.order_hi
    if spec.time is not None and spec.time in names:
        lo, hi = _min_max(batch.column(spec.time))
        part.time_lo = lo if part.time_lo is None or (lo is not None and lo < part.time_lo) else part.time_lo
        part.time_hi = hi if part.time_hi is None or (hi is not None and hi > part.time_hi) else part.time_hi


def _min_max(column: pa.Array) -> tuple[Any, Any]:
    mm = pc.min_max(column)
    return mm["min"].as_py(), mm["max"].as_py()


def _dir_value(value: str | None) -> str:
    """A partition value as a directory name (Hive's escaping of the few characters a path cannot hold)."""
    if value is None:
        return "__HIVE_DEFAULT_PARTITION__"
    return "".join(f"%{ord(c):02X}" if c in "\"#%'*/:=?\\\x7f{[]^" or ord(c) < 32 else c for c in value)


def _partition_keys(table: str, batch: pa.RecordBatch, by: str) -> pa.Array:
    names = batch.schema.names
    if by == "topic":
        col = "msg_topic" if table in ("frames", "ha") and "topic" not in names else "topic"
        return batch.column(col) if col in names else pa.nulls(batch.num_rows, pa.string())
    if by == "date":
        spec = TABLES[table]
        if spec.time is None or spec.time not in names:
            return pa.nulls(batch.num_rows, pa.string())
        times = batch.column(spec.time)
        if pa.types.is_floating(times.type):  # a capture's clock: epoch seconds
            stamps = pc.cast(pc.multiply(times, 1000), pa.int64())
        else:
            stamps = times
        # a damaged record's clock can say anything: years outside 1..9999 have no day
        sane = pc.and_(pc.greater_equal(stamps, _MIN_MS), pc.less_equal(stamps, _MAX_MS))
        stamps = pc.if_else(sane, stamps, pa.scalar(None, pa.int64()))
        days = pc.cast(pc.cast(stamps, pa.timestamp("ms")), pa.date32())
        return pc.cast(days, pa.string())
    raise ValueError(f"--partition-by is topic or date, not {by!r}")


_MIN_MS = -62_135_596_800_000  # 0001-01-01
_MAX_MS = 253_402_300_799_999  # 9999-12-31


# -- decoding ----------------------------------------------------------------------------------


def _reader(task: Task, target: Target) -> Any:
    from .. import sources

    if task.kind == "commitlog":
        return sources._CommitLogReader(task.options, _projection(target.message_columns))
    if task.kind == "consumequeue":
        return sources._ConsumeQueueReader(task.options)
    if task.kind == "index":
        return sources._IndexReader(task.options)
    if task.kind == "pcap":
        return sources._PcapReader(task.options)
    raise ValueError(f"unknown source kind {task.kind!r}")


def _projection(columns: Columns | None) -> list[tuple[str, str]] | None:
    from ..commitlog import COMMITLOG_COLUMNS

    if columns is None or list(columns) == COMMITLOG_COLUMNS:
        return None
    return list(columns)


_DAMAGE_NAMES = [n for n, _ in DAMAGE_COLUMNS]


def damage_of(batch: pa.RecordBatch) -> pa.RecordBatch | None:
    """The rows of a messages batch that are damage: corrupt stretches and CRC failures."""
    corrupt = pc.equal(batch.column("record_type"), "corrupt")
    bad_crc = pc.equal(batch.column("crc_ok"), False) if "crc_ok" in batch.schema.names else None
    mask = corrupt if bad_crc is None else pc.or_(corrupt, pc.fill_null(bad_crc, False))
    picked = batch.filter(pc.fill_null(mask, False))
    if picked.num_rows == 0:
        return None
    kind = pc.if_else(pc.equal(picked.column("record_type"), "corrupt"), "corrupt_region", "crc_failure")
    arrays = []
    for name, typ in zip(_DAMAGE_NAMES, arrow_schema(DAMAGE_COLUMNS).types, strict=True):
        if name == "kind":
            arrays.append(kind)
        elif name == "size":
            arrays.append(picked.column("store_size"))
        elif name in picked.schema.names:
            arrays.append(picked.column(name))
        else:
            arrays.append(pa.nulls(picked.num_rows, typ))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(DAMAGE_COLUMNS))


def _commitlog_tail(batch: pa.RecordBatch, seen: dict[str, Any]) -> None:
    """Track where the last message record ends and the last corrupt row starts (an
    incremental export resumes a grown file at the former if nothing damaged follows it)."""
    offsets, sizes, kinds = batch.column("commit_log_offset"), batch.column("store_size"), batch.column("record_type")
    is_msg = pc.equal(kinds, "message")
    ends = pc.add(pc.filter(offsets, is_msg), pc.cast(pc.filter(sizes, is_msg), pa.int64()))
    if len(ends):
        end = pc.max(ends).as_py()
        seen["msg_end"] = max(seen.get("msg_end") or 0, end)
    corrupt = pc.filter(offsets, pc.invert(is_msg))
    if len(corrupt):
        seen["corrupt_max"] = max(seen.get("corrupt_max") or -1, pc.max(corrupt).as_py())


def _frames_and_ha(batch: pa.RecordBatch) -> Iterator[tuple[str, pa.RecordBatch]]:
    is_ha = pc.fill_null(pc.starts_with(batch.column("kind"), "ha_"), False)
    ha = batch.filter(is_ha)
    frames = batch.filter(pc.invert(is_ha))
    if frames.num_rows:
        yield "frames", frames
    if ha.num_rows:
        yield "ha", ha


def run_task(task: Task, target: Target) -> dict[str, Any]:
    """Decode ``task``'s splits and write their parts; returns the parts, what was read, and
    when the task ran with the CPU it took (where an export's time goes)."""
    started, cpu0 = time.time(), time.process_time()
    reader = _reader(task, target)
    writer = PartWriter(target, task.seq)
    read: list[dict[str, Any]] = []
    for partition in task.partitions:
        seen: dict[str, Any] = {"path": partition.path, "start": partition.start, "end": partition.end}
        rows = 0
        for batch in reader.read(partition):
            rows += batch.num_rows
            if task.kind == "commitlog":
                writer.add("messages", batch)
                _commitlog_tail(batch, seen)
                damage = damage_of(batch)
                if damage is not None:
                    writer.add("damage", damage)
            elif task.kind == "consumequeue":
                writer.add("consume_queues", batch)
            elif task.kind == "index":
                writer.add("index_entries", batch)
            else:
                for table, part in _frames_and_ha(batch):
                    writer.add(table, part)
        seen["rows"] = rows
        read.append(seen)
    parts = writer.close()
    timing = {"start": started, "end": time.time(), "cpu": time.process_time() - cpu0, "pid": os.getpid()}
    return {"seq": task.seq, "kind": task.kind, "parts": parts, "read": read, "timing": timing}
