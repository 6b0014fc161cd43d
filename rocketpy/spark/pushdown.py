"""Filters Spark pushes into the CommitLog source, and the reading plans they allow.

A topic filter over a store directory reads the topic's ConsumeQueues and decodes only
the records they point at, plus a plain scan of the CommitLog past the dispatch point
(records the broker stored but had not yet put in a queue). A message-id filter reads
the one record whose offset the id carries. An offset range prunes files and splits.
Every pushed filter is also applied to the rows read (so a plan may over-read but never
yields a row Spark would drop) and handed back to Spark, which checks it again.

The ConsumeQueue shortcut trusts the queues: a record no queue points at (a topic whose
queues were deleted is detected and scanned; a damaged queue is not) is only found with
``useConsumeQueue=false``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codecs.errors import CodecError
from ..codecs.message import decode_offset_msg_id
from ..codecs.store_records import CQ_STORE_UNIT_SIZE, index_key
from ._files import consumequeue_files, file_size, open_binary

__all__ = ["CommitLogFilter", "dispatched_end", "parse_filters"]

_INT64_MAX = (1 << 63) - 1


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _ms(value: Any) -> int:
    """Epoch millis, floored (exact integer arithmetic: a float would lose the last milli)."""
    if isinstance(value, dt.datetime):
        # a naive datetime is taken as local time, as Spark's session clock hands it
        return (value.astimezone(dt.UTC) - _EPOCH) // dt.timedelta(milliseconds=1)
    return int(value)


@dataclass
class CommitLogFilter:
    """The pushed conditions, ANDed: None means no condition on that column."""

    topics: frozenset[str] | None = None
    queue_ids: frozenset[int] | None = None
    tags: frozenset[str] | None = None
    msg_ids: frozenset[str] | None = None
    uniq_keys: frozenset[str] | None = None
    keys_equal: list[tuple[str, ...]] = field(default_factory=list)  # keys = array(...): each must hold
    offset_lo: int = 0  # commit_log_offset >= offset_lo
    offset_hi: int = _INT64_MAX  # commit_log_offset < offset_hi
    time_lo: int | None = None  # store_timestamp >= time_lo (millis)
    time_hi: int | None = None  # store_timestamp <= time_hi
    pushed: list[str] = field(default_factory=list)  # what was taken, for explain-like messages

    @property
    def empty(self) -> bool:
        return not self.pushed

    def _set(self, name: str, values: Iterable[Any]) -> None:
        old = getattr(self, name)
        new = frozenset(values)
        setattr(self, name, new if old is None else old & new)

    def take(self, f: Any) -> bool:
        """Record one pyspark Filter if it is one this source can use; whether it was."""
        from pyspark.sql.datasource import (
            EqualTo,
            GreaterThan,
            GreaterThanOrEqual,
            In,
            LessThan,
            LessThanOrEqual,
        )

        attr = getattr(f, "attribute", None)
        if not attr or len(attr) != 1:
            return False
        col = attr[0]
        sets = {
            "topic": "topics",
            "queue_id": "queue_ids",
            "tags": "tags",
            "msg_id": "msg_ids",
            "uniq_key": "uniq_keys",
        }
        if col == "keys" and isinstance(f, EqualTo):
            # keys = array('a', 'b'): Spark pushes the array as a list (array_contains is not pushed)
            if not isinstance(f.value, (list, tuple)) or not all(isinstance(k, str) for k in f.value):
                return False
            self.keys_equal.append(tuple(f.value))
        elif col in sets and isinstance(f, (EqualTo, In)):
            values = f.value if isinstance(f, In) else (f.value,)
            if any(v is None for v in values):
                return False
            self._set(sets[col], values)
        elif col == "commit_log_offset" and isinstance(
            f, (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)
        ):
            v = int(f.value)
            if isinstance(f, (EqualTo, GreaterThanOrEqual)):
                self.offset_lo = max(self.offset_lo, v)
            if isinstance(f, GreaterThan):
                self.offset_lo = max(self.offset_lo, v + 1)
            if isinstance(f, (EqualTo, LessThanOrEqual)):
                self.offset_hi = min(self.offset_hi, v + 1)
            if isinstance(f, LessThan):
                self.offset_hi = min(self.offset_hi, v)
        elif col in ("store_timestamp", "store_time") and isinstance(
            f, (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)
        ):
            v = _ms(f.value)
            # A timestamp bound may carry microseconds: it is floored to whole millis and
            # strictness dropped (a wider range); Spark, which gets the filter back, is exact.
            if isinstance(f, (EqualTo, GreaterThanOrEqual, GreaterThan)):
                lo = v + 1 if col == "store_timestamp" and isinstance(f, GreaterThan) else v
                self.time_lo = lo if self.time_lo is None else max(self.time_lo, lo)
            if isinstance(f, (EqualTo, LessThanOrEqual, LessThan)):
                hi = v - 1 if col == "store_timestamp" and isinstance(f, LessThan) else v
                self.time_hi = hi if self.time_hi is None else min(self.time_hi, hi)
        else:
            return False
        self.pushed.append(repr(f))
        return True

    def _value_sets(self) -> list[tuple[str, frozenset[Any]]]:
        """(column, values it must be one of) for each value filter pushed."""
        pairs = (
            ("topic", self.topics),
            ("queue_id", self.queue_ids),
            ("tags", self.tags),
            ("msg_id", self.msg_ids),
            ("uniq_key", self.uniq_keys),
        )
        return [(col, values) for col, values in pairs if values is not None]

    def columns(self) -> set[str]:
        """The columns :meth:`mask` reads."""
        out = {"commit_log_offset", "store_timestamp"} if not self.empty else set()
        out.update(col for col, _values in self._value_sets())
        if self.keys_equal:
            out.add("keys")
        return out

    def index_keys(self) -> list[str] | None:
        """The IndexFile keys (``topic#key``) whose records hold every row this filter can keep;
        None when the filter names no key, or no topic (the index hashes the topic with the key)."""
        if self.topics is None:
            return None
        if self.uniq_keys is not None:
            keys: Iterable[str] = self.uniq_keys
        elif self.keys_equal and self.keys_equal[0]:
            keys = self.keys_equal[0][:1]  # a record is indexed under each of its keys: one will do
        else:
            return None
        return sorted(index_key(topic, key) for topic in self.topics for key in keys)

    def message_offsets(self) -> list[int] | None:
        """The CommitLog offsets the msg-id condition names (None: no such condition)."""
        if self.msg_ids is None:
            return None
        out = []
        for mid in self.msg_ids:
            try:
                out.append(decode_offset_msg_id(mid)[2])
            except CodecError:
                continue  # not an offset id: matches no row
        return sorted(o for o in set(out) if self.offset_lo <= o < self.offset_hi)

    def mask(self, batch: pa.RecordBatch) -> pa.Array | None:
        """Which rows of a CommitLog batch meet every condition (None: all)."""
        if self.empty:
            return None
        conds = []
        for col, values in self._value_sets():
            conds.append(pc.is_in(batch.column(col), value_set=pa.array(sorted(values))))
        for wanted in self.keys_equal:
            conds.append(_lists_equal(batch.column("keys"), wanted))
        offsets = batch.column("commit_log_offset")
        if self.offset_lo > 0:
            conds.append(pc.greater_equal(offsets, self.offset_lo))
        if self.offset_hi < _INT64_MAX:
            conds.append(pc.less(offsets, self.offset_hi))
        if self.time_lo is not None:
            conds.append(pc.greater_equal(batch.column("store_timestamp"), self.time_lo))
        if self.time_hi is not None:
            conds.append(pc.less_equal(batch.column("store_timestamp"), self.time_hi))
        if not conds:
            return None
        out = conds[0]
        for c in conds[1:]:
            out = pc.and_kleene(out, c)
        return pc.fill_null(out, False)

    def apply(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            m = self.mask(batch)
            out = batch if m is None else batch.filter(m)
            if out.num_rows:
                yield out


def _lists_equal(column: pa.Array, wanted: tuple[str, ...]) -> pa.Array:
    """Which rows of a list<string> column equal ``wanted`` (order included); null stays null."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    n = len(column)
    lengths = pc.list_value_length(column).fill_null(-1).to_numpy(zero_copy_only=False)
    ok = lengths == len(wanted)
    if ok.any() and wanted:
        flat = column.values.to_numpy(zero_copy_only=False)  # values of every list, nulls as None
        starts = column.offsets.to_numpy()[:-1][ok]
        rows = np.nonzero(ok)[0]
        for i, key in enumerate(wanted):
            rows_ok = flat[starts + i] == key
            ok[rows[~rows_ok]] = False
            rows, starts = rows[rows_ok], starts[rows_ok]
    return pa.array(ok, mask=np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool) if n else None)


def parse_filters(filters: Iterable[Any]) -> CommitLogFilter:
    """A :class:`CommitLogFilter` from pyspark filters (the ones it cannot use are left out)."""
    cf = CommitLogFilter()
    for f in filters:
        cf.take(f)
    return cf


def _last_written_unit(path: str) -> int:
    """End byte of a queue file's last non-zero unit, by bisection (units are written in order;
    a zeroed hole can only make the answer earlier, which makes the caller scan more)."""
    size = file_size(path) // CQ_STORE_UNIT_SIZE
    with open_binary(path) as f:

        def written(i: int) -> bool:
            f.seek(i * CQ_STORE_UNIT_SIZE)
            return any(f.read(CQ_STORE_UNIT_SIZE))

        lo, hi = 0, size  # units [0, lo) written as far as we know; [hi, size) not
        while lo < hi:
            mid = (lo + hi) // 2
            if written(mid):
                lo = mid + 1
            else:
                hi = mid
        return lo * CQ_STORE_UNIT_SIZE


def dispatched_end(store: str) -> int:
    """The CommitLog offset up to which the broker had put records into queues: the greatest
    ``offset + size`` among the last units of every queue (dispatch walks the CommitLog in order)."""
    last_file: dict[tuple[str, int], tuple[int, str]] = {}
    for path, topic, qid, offset in consumequeue_files([store]):
        if last_file.get((topic, qid), (-1, ""))[0] < offset:
            last_file[(topic, qid)] = (offset, path)
    best = 0
    for _, path in last_file.values():
        end = _last_written_unit(path)
        if end == 0:
            continue
        with open_binary(path) as f:
            f.seek(end - CQ_STORE_UNIT_SIZE)
            unit = np.frombuffer(f.read(CQ_STORE_UNIT_SIZE), dtype=[("o", ">i8"), ("s", ">i4"), ("t", ">i8")])
        o, s = int(unit["o"][0]), int(unit["s"][0])
        if o >= 0 and 0 < s < 0x7FFFFFFF:
            best = max(best, o + s)
    return best
