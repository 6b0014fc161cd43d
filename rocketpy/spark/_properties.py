"""Message properties of a chunk of records decoded with Arrow compute instead of a dict per row.

The properties string is ``name\\x01value`` entries joined by ``\\x02``
(:func:`rocketpy.codecs.message.string_to_properties`). The strings of a whole chunk are
split with Arrow kernels into the map column and the TAGS, KEYS and UNIQ_KEY columns. What
those kernels would not read as the codec does (bytes that are not UTF-8, a name given
twice) makes the chunk go through the codec's parser row by row instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..codecs.codes import MessageConst
from ..codecs.message import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR, string_to_properties
from ._arrays import binary_ranges

__all__ = ["PropertyColumns", "property_columns"]

_KEYS = MessageConst.PROPERTY_KEYS
_TAGS = MessageConst.PROPERTY_TAGS
_UNIQ = MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
_KEY_SEPARATOR = MessageConst.KEY_SEPARATOR
_MAP = pa.map_(pa.string(), pa.string())
_LIST = pa.list_(pa.string())

PropertyColumns = dict[str, pa.Array]  # "properties", "tags", "keys", "uniq_key"


def _has_repeats(ids: np.ndarray) -> bool:
    """Whether a value occurs twice in ``ids`` (non-negative): a count per value while the
    values are small (a chunk's rows times its distinct names), else a sort."""
    if not len(ids):
        return False
    if int(ids.max()) < 1 << 24:
        return bool(np.bincount(ids).max() > 1)
    return len(np.unique(ids)) != len(ids)


def _by_row(n: int, rows: np.ndarray, values: pa.Array) -> pa.Array:
    """A column of ``n`` rows holding ``values[i]`` at ``rows[i]`` and null elsewhere."""
    where = np.full(n, -1, dtype=np.int64)
    where[rows] = np.arange(len(rows))
    return pc.take(values, pa.array(where, mask=where < 0))


def _split_keys(n: int, raw: pa.Array) -> pa.Array:
    """KEYS split on spaces, empty pieces dropped; a row without KEYS has no keys (not null)."""
    lists = pc.split_pattern(raw.fill_null(""), _KEY_SEPARATOR)
    flat = lists.flatten()
    parent = pc.list_parent_indices(lists).to_numpy()
    keep = pc.not_equal(flat, "").to_numpy(zero_copy_only=False)
    counts = np.bincount(parent[keep], minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), flat.filter(pa.array(keep)))


def property_columns(u8: np.ndarray, start: np.ndarray, length: np.ndarray) -> PropertyColumns | None:
    """The property columns of the records whose properties are at ``start``/``length`` in
    ``u8``; None when the chunk needs the codec's parser (see the module doc)."""
    n = len(start)
    raw = binary_ranges(u8, start, length)
    try:
        text = raw.cast(pa.string())
    except pa.ArrowInvalid:
        return None  # not UTF-8: the codec decodes with replacement characters
    entries = pc.split_pattern(text, PROPERTY_SEPARATOR)
    flat = entries.flatten()
    parent = pc.list_parent_indices(entries).to_numpy()
    has_sep = pc.greater_equal(pc.find_substring(flat, NAME_VALUE_SEPARATOR), 0)
    flat, parent = flat.filter(has_sep), parent[has_sep.to_numpy(zero_copy_only=False)]
    pairs = pc.split_pattern(flat, NAME_VALUE_SEPARATOR, max_splits=1)
    names, values = pc.list_element(pairs, 0), pc.list_element(pairs, 1)
    # an entry with an empty name or value is dropped, as the codec drops it
    keep = pc.and_(pc.not_equal(names, ""), pc.not_equal(values, ""))
    names, values = names.filter(keep), values.filter(keep)
    parent = parent[keep.to_numpy(zero_copy_only=False)]
    codes = pc.dictionary_encode(names)
    ids = codes.indices.to_numpy().astype(np.int64)
    pair_ids = parent.astype(np.int64) * max(len(codes.dictionary), 1) + ids
    if _has_repeats(pair_ids):
        return None  # a name given twice in one record: the codec keeps its first place, last value
    counts = np.bincount(parent, minlength=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    out: PropertyColumns = {"properties": pa.MapArray.from_arrays(pa.array(offsets), names, values)}
    for column, name in (("tags", _TAGS), ("uniq_key", _UNIQ), ("keys", _KEYS)):
        hit = pc.equal(names, name)
        out[column] = _by_row(n, parent[hit.to_numpy(zero_copy_only=False)], values.filter(hit))
    out["keys"] = _split_keys(n, out["keys"])
    return out


def property_columns_by_row(props: Sequence[bytes]) -> PropertyColumns:
    """The same columns from the codec's parser, a dict per row (the reference, and the way
    for chunks :func:`property_columns` declines)."""
    dicts: list[dict[str, str]] = [string_to_properties(raw.decode("utf-8", "replace")) if raw else {} for raw in props]
    keys: list[Any] = [[k for k in p[_KEYS].split(_KEY_SEPARATOR) if k] if p.get(_KEYS) else [] for p in dicts]
    return {
        "properties": pa.array(dicts, _MAP),
        "tags": pa.array([p.get(_TAGS) for p in dicts], pa.string()),
        "uniq_key": pa.array([p.get(_UNIQ) for p in dicts], pa.string()),
        "keys": pa.array(keys, _LIST),
    }
