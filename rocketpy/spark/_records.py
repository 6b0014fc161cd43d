"""CommitLog records decoded in columns: offsets and header fields as numpy arrays, then Arrow.

The walk from one record to the next is inherently sequential (each record's size says
where the next begins), so a tight loop collects only the record offsets; every header
field is then gathered for a whole chunk of records at once from the mapped bytes. The
byte positions of the fields come from ``MESSAGE_RECORD`` (:func:`record_field_at`), one
layout per combination of IPv4/IPv6 hosts. A record the vectorised checks do not pass
plainly (damage, a zero-filled gap, a blank, an odd length) is handed to the forensic
walk (:func:`rocketpy.store.walk.walk_commitlog`), which decides with the construct
codec and resyncs; the columnar walk takes over again at the first record after it.

Bodies and properties (with the tags, keys and UNIQ_KEY read from them) are only sliced
out when the requested columns include them.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from construct import Prefixed

from ..accel import compiled
from ..codecs.codes import MessageSysFlag
from ..codecs.compression import compression_of
from ..codecs.errors import CodecError
from ..codecs.message import (
    MESSAGE_MAGIC_CODE,
    MESSAGE_RECORD,
    decompress_body,
    format_host,
    record_field_at,
)
from ..store.walk import CorruptRegion, walk_bounds, walk_commitlog
from ._arrays import binary_ranges, constant_strings, ms_to_timestamps
from ._columns import arrow_schema
from ._properties import PropertyColumns, property_columns, property_columns_by_row
from .dledger import LEDGER_COLUMNS

__all__ = ["RecordLayout", "columnar_walk", "decode_at", "record_columns", "record_layouts"]

_BORN_V6 = int(MessageSysFlag.BORNHOST_V6_FLAG)
_STORE_V6 = int(MessageSysFlag.STOREHOSTADDRESS_V6_FLAG)
_COMPRESSED = int(MessageSysFlag.COMPRESSED_FLAG)
_TRANSACTION_BITS = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)

# The fixed-position fields, up to the body's length prefix, in declared order.
_FIXED_FIELDS = [sub.name for sub in MESSAGE_RECORD.subcons[: [s.name for s in MESSAGE_RECORD.subcons].index("body")]]
# The width of the length prefix of each variable field (body, topic, properties), as declared.
_PREFIX = {
    sub.name: sub.subcon.lengthfield.sizeof()
    for sub in MESSAGE_RECORD.subcons
    if isinstance(getattr(sub, "subcon", None), Prefixed)
}
_BODY_PREFIX, _TOPIC_PREFIX, _PROPS_PREFIX = _PREFIX["body"], _PREFIX["topic"], _PREFIX["properties"]
assert _TOPIC_PREFIX == 1  # the topic's length is gathered as one byte per record


class RecordLayout:
    """Where each fixed field of a record sits, and its width, for one host-width combination."""

    def __init__(self, sys_flag: int) -> None:
        at = [record_field_at(name, sys_flag) for name in _FIXED_FIELDS]
        self.body_at = record_field_at("body", sys_flag)  # the body's int32 length prefix
        ends = at[1:] + [self.body_at]
        self.fields = {name: (a, e - a) for name, a, e in zip(_FIXED_FIELDS, at, ends)}
        self.head = self.body_at + _BODY_PREFIX  # bytes before the body
        self.min_size = self.head + _TOPIC_PREFIX + _PROPS_PREFIX  # an empty body, topic and properties

    def at(self, name: str) -> int:
        return self.fields[name][0]


def record_layouts() -> tuple[RecordLayout, ...]:
    """Layouts indexed by (1 if the born host is IPv6) | (2 if the store host is IPv6)."""
    return tuple(RecordLayout((_BORN_V6 if v & 1 else 0) | (_STORE_V6 if v & 2 else 0)) for v in range(4))


_LAYOUTS = record_layouts()
_V4 = _LAYOUTS[0]
_SYS_FLAG_AT = _V4.at("sys_flag")
assert all(lay.at("sys_flag") == _SYS_FLAG_AT for lay in _LAYOUTS)  # before the hosts: one place
_MIN_RECORD = min(lay.min_size for lay in _LAYOUTS)
_SIZE_AT, _SIZE_WIDTH = _V4.fields["total_size"]
_MAGIC_AT, _MAGIC_WIDTH = _V4.fields["magic_code"]
_SIZE_MAGIC_LEN = _MAGIC_AT + _MAGIC_WIDTH  # the head every record (and the blank) starts with
_SYS_FLAG_WIDTH = _V4.fields["sys_flag"][1]
_PHYSICAL_WIDTH = _V4.fields["physical_offset"][1]
_PHYSICAL_AT = _V4.at("physical_offset")
assert all(lay.at("physical_offset") == _PHYSICAL_AT for lay in _LAYOUTS)  # before the hosts too

# Two upper-case hex digits per byte value (offset msg ids).
_HEX = np.frombuffer(b"".join(f"{i:02X}".encode() for i in range(256)), dtype=np.uint8).reshape(256, 2)
_V4_MAPPED_PREFIX = np.array([0] * 10 + [0xFF, 0xFF], dtype=np.uint8)


def _at(u8: np.ndarray, dtype: str) -> np.ndarray:
    """A view of the bytes with one ``dtype`` value starting at every byte position (stride 1),
    so a gather of n values at any offsets is one indexing operation."""
    dt = np.dtype(dtype)
    return np.ndarray((max(len(u8) - dt.itemsize + 1, 0),), dtype=dt, buffer=u8, strides=(1,))


def _gather(u8: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes at each of ``pos``: an (n, width) uint8 array."""
    return _at(u8, f"V{width}")[pos].view(np.uint8).reshape(len(pos), width)


def _int(u8: np.ndarray, pos: np.ndarray, width: int, dtype: str) -> np.ndarray:
    """The big-endian signed integers of ``width`` bytes at ``pos``, as native ``dtype``."""
    return _at(u8, f">i{width}")[pos].astype(dtype)


def _strings(keys: np.ndarray, decode: Callable[[bytes], str]) -> pa.Array:
    """One string per row from rows of key bytes, each distinct key decoded once (dictionary)."""
    n, width = keys.shape
    if n == 0:
        return pa.array([], pa.string())
    # Arrow's hash-based dictionary encoding: linear, where sorting the keys is not.
    raw = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), n, [None, pa.py_buffer(np.ascontiguousarray(keys))])
    encoded = raw.dictionary_encode()
    values = pa.array([decode(u) for u in encoded.dictionary.to_pylist()], pa.string())
    return pa.DictionaryArray.from_arrays(encoded.indices, values).cast(pa.string())


def _topic_text(key: bytes) -> str:
    return key[1 : 1 + key[0]].decode("utf-8", "replace")


def _host_decoder(width: int) -> Callable[[bytes], str]:
    def decode(key: bytes) -> str:
        return format_host(key[:width], int.from_bytes(key[width:], "big", signed=True))

    return decode


class _Decoded:
    """The fixed fields of a chunk of records, and which of them passed the plain checks."""

    def __init__(self, u8: np.ndarray, pos: np.ndarray, limit: int) -> None:
        n = len(pos)
        self.pos = pos
        self.size = _int(u8, pos + _SIZE_AT, _SIZE_WIDTH, "int32")
        self.sys_flag = _int(u8, pos + _SYS_FLAG_AT, _SYS_FLAG_WIDTH, "int32")
        self.variant = ((self.sys_flag & _BORN_V6) != 0).astype(np.int8) | (
            ((self.sys_flag & _STORE_V6) != 0).astype(np.int8) << 1
        )
        body_at = np.empty(n, np.int64)
        for v in np.unique(self.variant):
            body_at[self.variant == v] = _LAYOUTS[int(v)].body_at
        head = body_at + _BODY_PREFIX
        size = self.size.astype(np.int64)
        # As the codec's plain path (parse_record_fields) checks before it trusts a record.
        ok = (size >= head) & (pos + size <= limit)
        safe = np.where(ok, pos, 0)
        blen = _int(u8, safe + body_at, _BODY_PREFIX, "int64")
        bend = head + blen
        ok &= (blen >= 0) & (bend < size)
        safe = np.where(ok, pos, 0)
        tlen = u8[safe + np.where(ok, bend, 0)].astype(np.int64)
        tend = bend + _TOPIC_PREFIX + tlen
        ok &= (tlen <= 127) & (tend + _PROPS_PREFIX <= size)
        safe = np.where(ok, pos, 0)
        plen = _int(u8, safe + np.where(ok, tend, 0), _PROPS_PREFIX, "int64")
        ok &= (plen >= 0) & (tend + _PROPS_PREFIX + plen == size)
        self.ok = ok
        self.body_start = pos + head
        self.body_len = blen
        self.topic_at = pos + bend  # the topic's length byte
        self.topic_len = tlen
        self.props_start = pos + tend + _PROPS_PREFIX
        self.props_len = plen

    _ARRAYS = ("pos", "size", "sys_flag", "variant", "body_start", "body_len", "topic_at", "topic_len")

    def cut(self, k: int) -> None:
        """Keep the first ``k`` records only."""
        self.keep(slice(0, k))

    def keep(self, rows: Any) -> None:
        """Keep the records ``rows`` (a slice or a boolean mask) selects."""
        for name in self._ARRAYS + ("props_start", "props_len", "ok"):
            setattr(self, name, getattr(self, name)[rows])


def decode_at(u8: np.ndarray, positions: np.ndarray, base: int) -> _Decoded | None:
    """The records at ``positions`` (sorted, distinct) of a file at CommitLog offset ``base``,
    keeping those that sit where their stored physical offset says (a position without a
    record's size and magic holds none); None when one of them needs the codec to decide
    (its lengths are not plainly right)."""
    n = len(u8)
    pos = positions[(positions >= 0) & (positions + _MIN_RECORD <= n)]
    size = _int(u8, pos + _SIZE_AT, _SIZE_WIDTH, "int64")
    magic = _int(u8, pos + _MAGIC_AT, _MAGIC_WIDTH, "int64")
    # what the codec refuses before looking further (_check_record_at): no record there
    pos = pos[(magic == MESSAGE_MAGIC_CODE) & (size >= _MIN_RECORD) & (pos + size <= n)]
    d = _Decoded(u8, pos, n)
    if not d.ok.all():
        return None
    d.keep(_int(u8, pos + _PHYSICAL_AT, _PHYSICAL_WIDTH, "int64") == pos + base)
    return d


_INT_FIELDS = {
    "body_crc": "int32",
    "queue_id": "int32",
    "flag": "int32",
    "queue_offset": "int64",
    "physical_offset": "int64",
    "born_timestamp": "int64",
    "store_timestamp": "int64",
    "reconsume_times": "int32",
    "prepared_transaction_offset": "int64",
}
_PROPERTY_COLUMNS = frozenset({"uniq_key", "tags", "keys", "properties"})
_ENTRY_COLUMNS = frozenset(name for name, _ in LEDGER_COLUMNS)  # only a DLedger entry has them


def record_columns(
    buf: Any,
    u8: np.ndarray,
    d: _Decoded,
    path: str,
    base: int,
    columns: Sequence[tuple[str, str]],
    *,
    check_crc: bool,
    decompress: bool,
    include_body: bool,
    given: Mapping[str, pa.Array] | None = None,
) -> pa.RecordBatch:
    """The rows of the decoded records ``d`` (all passed the checks) as one batch of ``columns``;
    ``given``: columns the caller has (a DLedger entry's index and term), the rest null unless decoded."""
    n = len(d.pos)
    pos = d.pos
    want = {name for name, _ in columns}
    ints: dict[str, np.ndarray] = {name: np.empty(n, dtype) for name, dtype in _INT_FIELDS.items()}
    hosts: dict[str, pa.Array] = {}
    msg_id: pa.Array | None = None
    variants = [int(v) for v in np.unique(d.variant)]
    host_parts: dict[str, list[tuple[np.ndarray, pa.Array]]] = {"born_host": [], "store_host": []}
    id_parts: list[tuple[np.ndarray, list[str | None] | pa.Array]] = []
    for v in variants:
        lay = _LAYOUTS[v]
        rows = np.nonzero(d.variant == v)[0] if len(variants) > 1 else np.arange(n)
        p = pos[rows]
        for name, dtype in _INT_FIELDS.items():
            at, width = lay.fields[name]
            ints[name][rows] = _int(u8, p + at, width, dtype)
        for host in ("born_host", "store_host"):
            if host not in want and not (host == "store_host" and "msg_id" in want):
                continue
            at, width = lay.fields[host]
            raw = _gather(u8, p + at, width + lay.fields[host.replace("host", "port")][1])  # address and port
            if host in want:
                host_parts[host].append((rows, _strings(raw, _host_decoder(width))))
            if host == "store_host" and "msg_id" in want:
                id_parts.append(
                    (rows, _offset_ids(raw, _gather(u8, p + lay.at("physical_offset"), _PHYSICAL_WIDTH), width))
                )
    for host, parts in host_parts.items():
        if parts:
            hosts[host] = _scatter(n, parts, pa.string())
    if id_parts:
        msg_id = _scatter(n, id_parts, pa.string())

    bodies: list[bytes] | None = None
    body_column: pa.Array | None = None
    body_size = d.body_len.astype(np.int32)
    errors: list[str | None] | None = None
    need_bodies = "body" in want and include_body
    compressed = (d.sys_flag & _COMPRESSED) != 0
    inflate = decompress and bool((compressed & (d.body_len > 0)).any())
    if inflate:
        bs, bl = d.body_start.tolist(), d.body_len.tolist()
        bodies = [buf[s : s + n_] for s, n_ in zip(bs, bl)]
    elif need_bodies:
        body_column = binary_ranges(buf, d.body_start, d.body_len)
    crc_ok: pa.Array
    if check_crc and "crc_ok" in want:
        got = _body_crcs(buf, d.body_start, d.body_len)
        crc_ok = pa.array((d.body_len == 0) | ((got & 0x7FFFFFFF) == ints["body_crc"]))
    else:
        crc_ok = pa.nulls(n, pa.bool_())
    if inflate and bodies is not None:
        errors = [None] * n
        sizes = body_size.copy()
        for i in np.nonzero(compressed & (d.body_len > 0))[0].tolist():
            try:
                bodies[i] = decompress_body(bodies[i], compression_of(int(d.sys_flag[i])))
                sizes[i] = len(bodies[i])
            except CodecError as exc:
                errors[i] = str(exc)
        body_size = sizes

    props: PropertyColumns | None = None
    if want & _PROPERTY_COLUMNS:
        props = property_columns(u8, d.props_start, d.props_len)
        if props is None:
            props = property_columns_by_row(
                [buf[s : s + n_] for s, n_ in zip(d.props_start.tolist(), d.props_len.tolist())]
            )

    topic = None
    if "topic" in want:
        width = int(d.topic_len.max()) + 1 if n else 1
        # clamped: a short topic's row may reach past the end of the buffer
        keys = u8[np.minimum(d.topic_at[:, None] + np.arange(width), len(u8) - 1)]
        # bytes past a topic's own length belong to the next field: zero them before comparing
        keys[np.arange(width) > d.topic_len[:, None]] = 0
        topic = _strings(keys, _topic_text)

    def column(name: str, kind: str) -> pa.Array:
        if given is not None and name in given:
            return given[name]
        if name in _ENTRY_COLUMNS:
            return pa.nulls(n, pa.int64())
        if name == "file":
            return constant_strings(path, n)
        if name == "record_type":
            return constant_strings("message", n)
        if name == "commit_log_offset":
            return pa.array(pos + base)
        if name == "store_size":
            return pa.array(d.size)
        if name == "topic":
            return topic
        if name in ints:
            return pa.array(ints[name])
        if name == "msg_id":
            return msg_id
        if name in hosts:
            return hosts[name]
        if name == "sys_flag":
            return pa.array(d.sys_flag)
        if name == "transaction_type":
            return pa.array(d.sys_flag & _TRANSACTION_BITS)
        if name == "compressed":
            return pa.array(compressed)
        if name == "born_time":
            return ms_to_timestamps(ints["born_timestamp"])
        if name == "store_time":
            return ms_to_timestamps(ints["store_timestamp"])
        if name == "crc_ok":
            return crc_ok
        if name == "body_size":
            return pa.array(body_size)
        if name == "body":
            if not need_bodies:
                return pa.nulls(n, pa.binary())
            return body_column if body_column is not None else pa.array(bodies, pa.binary())
        if name == "error":
            return pa.array(errors, pa.string()) if errors is not None else pa.nulls(n, pa.string())
        assert props is not None
        return props[name]

    schema = arrow_schema(columns)
    return pa.RecordBatch.from_arrays([column(name, kind) for name, kind in columns], schema=schema)


def _offset_ids(store: np.ndarray, offset: np.ndarray, width: int) -> list[str | None] | pa.Array:
    """Offset msg ids (store ip, port, CommitLog offset in upper-case hex) of one host width."""
    if width == 16:
        # an IPv4-mapped address is written as the IPv4 one (32 characters, not 56)
        mapped = (store[:, :12] == _V4_MAPPED_PREFIX).all(axis=1)
        out: list[str | None] = []
        for row, is_mapped, off in zip(store, mapped.tolist(), offset):
            raw = (bytes(row[12:]) if is_mapped else bytes(row)) + bytes(off)
            out.append(raw.hex().upper())
        return out
    both = np.concatenate([store, offset], axis=1)
    hexed = np.ascontiguousarray(_HEX[both].reshape(len(both), -1))
    k = hexed.shape[1]
    ends = np.arange(0, (len(both) + 1) * k, k, dtype=np.int32)
    return pa.StringArray.from_buffers(len(both), pa.py_buffer(ends), pa.py_buffer(hexed))


def _scatter(n: int, parts: list[tuple[np.ndarray, Any]], type_: pa.DataType) -> pa.Array:
    """Parts computed for row subsets (one per host-width combination) put back in row order."""
    if len(parts) == 1:
        arr = parts[0][1]
        return arr if isinstance(arr, pa.Array) else pa.array(arr, type_)
    out: list[Any] = [None] * n
    for rows, values in parts:
        vals = values.to_pylist() if isinstance(values, pa.Array) else values
        for i, v in zip(rows.tolist(), vals):
            out[i] = v
    return pa.array(out, type_)


_SIZE_MAGIC = struct.Struct(">ii")


def _next_positions_pure(buf: Any, pos: int, stop: int, max_rows: int, max_bytes: int) -> tuple[np.ndarray, int]:
    """Positions of the records from ``pos`` whose size and magic look right (before ``stop``)."""
    unpack = _SIZE_MAGIC.unpack_from
    magic_ok, least = MESSAGE_MAGIC_CODE, _MIN_RECORD
    # bounded so that every size-and-magic read and every record fits in the buffer
    stop = min(stop, len(buf) - _SIZE_MAGIC_LEN + 1, pos + max_bytes)
    total = len(buf)
    out: list[int] = []
    append = out.append
    for _ in range(max_rows):
        if pos >= stop:
            break
        size, magic = unpack(buf, pos)
        if magic != magic_ok or size < least or pos + size > total:
            break
        append(pos)
        pos += size
    return np.array(out, dtype=np.int64), pos


_c_positions = compiled("record_positions")


def _next_positions(buf: Any, pos: int, stop: int, max_rows: int, max_bytes: int) -> tuple[np.ndarray, int]:
    """What :func:`_next_positions_pure` gives, from the compiled loop when it is built."""
    if _c_positions is None or not len(buf):
        return _next_positions_pure(buf, pos, stop, max_rows, max_bytes)
    out = np.empty(max_rows, dtype=np.int64)
    count, after = _c_positions(buf, pos, min(stop, pos + max_bytes), max_rows, MESSAGE_MAGIC_CODE, _MIN_RECORD, out)
    return out[:count], after


def _body_crcs_pure(buf: Any, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``zlib.crc32`` of each body ``buf[start : start + length]``."""
    view = memoryview(buf)
    try:
        return np.fromiter(
            (zlib.crc32(view[s : s + n]) for s, n in zip(starts.tolist(), lengths.tolist())),
            dtype=np.int64,
            count=len(starts),
        )
    finally:
        view.release()


_c_crcs = compiled("crc32_ranges")


def _body_crcs(buf: Any, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """What :func:`_body_crcs_pure` gives, from the compiled loop when it is built."""
    if _c_crcs is None or not len(buf):
        return _body_crcs_pure(buf, starts, lengths)
    out = np.empty(len(starts), dtype=np.int64)
    _c_crcs(buf, np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(lengths, np.int64), out)
    return out


def columnar_walk(
    buf: Any,
    base: int,
    *,
    resync: bool = True,
    data_end: int | None = None,
    start: int = 0,
    end: int | None = None,
    exact_start: bool = False,
    max_rows: int = 16384,
    max_bytes: int = 32 << 20,
) -> Generator[tuple[str, Any], None, None]:
    """The records of one CommitLog file (or of the split ``[start, end)``) in the order of
    :func:`walk_commitlog`, which gives the same records: ``("columns", decoded chunk)`` for
    runs of plainly good records, ``("walk", item)`` for what the forensic walk decided.

    The caller must let go of a chunk (it holds views of ``buf``) before ``buf`` closes.
    """
    bounds = walk_bounds(buf, base, start, end, data_end, exact_start)
    if bounds is None:
        return
    pos, end, n = bounds
    stop = n if end is None else min(n, end)
    u8 = np.frombuffer(buf, dtype=np.uint8) if len(buf) else np.empty(0, np.uint8)
    try:
        while True:
            positions, after = _next_positions(buf, pos, stop, max_rows, max_bytes)
            if len(positions):
                d = _Decoded(u8, positions, len(buf))
                bad = np.nonzero(~d.ok)[0]
                k = int(bad[0]) if len(bad) else len(positions)
                if k:
                    d.cut(k)
                    yield "columns", d
                if k < len(positions):
                    pos = int(positions[k])
                else:
                    pos = after
                    if len(positions) >= max_rows or pos - int(positions[0]) >= max_bytes:
                        continue  # a full chunk: more of the same follows
            if pos >= n:
                return
            # The forensic walk decides about the record at ``pos``; the columns resume at the
            # first record after it.
            resumed = None
            walk = walk_commitlog(buf, base, resync=resync, data_end=data_end, start=pos, end=end, exact_start=True)
            for item in walk:
                if not isinstance(item, CorruptRegion) and item[0] - base > pos:
                    resumed = item[0] - base
                    break
                yield "walk", item
            walk.close()
            if resumed is None:
                return
            pos = resumed
    finally:
        del u8
