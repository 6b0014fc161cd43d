"""The lake's tables: what each holds, the columns it is written with, and how its Parquet is laid out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..commitlog import COMMITLOG_COLUMNS
from ..consumequeue import CONSUMEQUEUE_COLUMNS
from ..index import INDEX_COLUMNS
from ..pcap import PCAP_COLUMNS

Columns = Sequence[tuple[str, str]]


@dataclass(frozen=True)
class Table:
    """One table: its columns, the columns worth a dictionary (few distinct values: a dictionary
    on a high-cardinality column only costs write CPU), the column its rows are ordered by
    (min/max statistics of row groups prune ranges of it), its time column, and the
    columns worth a Bloom filter (ids looked up one at a time)."""

    name: str
    columns: Columns
    dictionary: tuple[str, ...]
    order: str
    time: str | None
    doc: str
    bloom: tuple[str, ...] = ()  # columns looked up by equality: a Bloom filter lets a reader skip row groups
    no_statistics: tuple[str, ...] = ()  # columns no query prunes by range: no min/max written


DAMAGE_COLUMNS: list[tuple[str, str]] = [
    ("file", "string"),
    ("kind", "string"),  # corrupt_region (bytes that are no record) or crc_failure
    ("commit_log_offset", "long"),
    ("size", "int"),  # bytes skipped, or the record's size
    ("topic", "string"),
    ("queue_id", "int"),
    ("queue_offset", "long"),
    ("msg_id", "string"),
    ("store_timestamp", "long"),
    ("error", "string"),
]

_PCAP_DICT = (
    "file",
    "src",
    "dst",
    "client",
    "server",
    "direction",
    "kind",
    "code_name",
    "request_code_name",
    "response_code_name",
    "language",
    "serialize_type",
    "topic",
    "group",
    "ha_role",
    "dledger_result",
    "dledger_push_type",
    "msg_topic",
    "msg_born_host",
    "msg_store_host",
)

TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        Table(
            "messages",
            COMMITLOG_COLUMNS,
            ("file", "record_type", "topic", "tags", "born_host", "store_host", "error"),
            "commit_log_offset",
            "store_timestamp",
            "CommitLog records (rocketmq-commitlog's rows): one per message record or damaged stretch",
            ("uniq_key", "msg_id"),
            ("body", "properties"),
        ),
        Table(
            "damage",
            DAMAGE_COLUMNS,
            ("file", "kind", "topic", "error"),
            "commit_log_offset",
            "store_timestamp",
            "what the CommitLog walk found wrong: corrupt regions and records failing their body CRC",
        ),
        Table(
            "consume_queues",
            CONSUMEQUEUE_COLUMNS,
            ("file", "topic"),
            "queue_offset",
            None,
            "ConsumeQueue units (rocketmq-consumequeue's rows)",
        ),
        Table(
            "index_entries",
            INDEX_COLUMNS,
            ("file",),
            "entry",
            "timestamp",
            "IndexFile entries (rocketmq-index's rows)",
        ),
        Table(
            "frames",
            PCAP_COLUMNS,
            _PCAP_DICT,
            "frame_index",
            "ts",
            "RemotingCommands in captures (rocketmq-pcap's rows with explodeMessages: a row per message carried)",
        ),
        Table(
            "ha",
            PCAP_COLUMNS,
            _PCAP_DICT,
            "frame_index",
            "ts",
            "master/slave HA reports and transfers in captures (rocketmq-pcap's haStream rows, exploded)",
        ),
    )
}

STORE_TABLES = ("messages", "damage", "consume_queues", "index_entries")
PCAP_TABLES = ("frames", "ha")

# The CommitLog header columns: what a query over offsets, topics, queues and times reads
# (``--header-only``); without bodies (``--no-bodies``) only ``body`` is left out.
NOT_HEADER = ("body", "properties", "keys", "tags", "uniq_key")


def message_columns(columns: str) -> list[tuple[str, str]]:
    """The messages table's columns for ``all``, ``no-bodies`` or ``header``."""
    if columns == "all":
        return list(COMMITLOG_COLUMNS)
    if columns == "no-bodies":
        return [c for c in COMMITLOG_COLUMNS if c[0] != "body"]
    if columns == "header":
        return [c for c in COMMITLOG_COLUMNS if c[0] not in NOT_HEADER]
    raise ValueError(f"columns must be all, no-bodies or header, not {columns!r}")
