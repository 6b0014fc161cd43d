"""A generated broker store (CommitLog files and their ConsumeQueues) for tests and benchmarks.

Records are made by ``encode_message`` and laid out as the broker lays them out: back to
back, a blank record where the next one does not fit, zeros after. One record in
``rare_every`` goes to the topic ``RARE_TOPIC`` (a small topic to filter for); the rest
round-robin over four topics. Every record gets its ConsumeQueue unit.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..codecs.message import MessageExt, UniqIdGenerator, body_crc, encode_message
from ..codecs.store_records import build_blank_record, build_consumequeue_entry, index_key
from ..javacompat.lang import java_string_hash

RARE_TOPIC = "Rare_T"
QUEUES = 4


def synthesise_store(
    store: Path, total: int, file_size: int, body_size: int, rare_every: int = 100, index: bool = False
) -> tuple[int, int, int]:
    """Fill ``ceil(total / file_size)`` CommitLog files under ``store/commitlog`` and write the
    queues under ``store/consumequeue`` (and with ``index`` one IndexFile under ``store/index``
    holding every record's UNIQ_KEY and key, as the broker's IndexService writes them);
    returns (records, record bytes, rare-topic record bytes)."""
    commitlog = store / "commitlog"
    commitlog.mkdir(parents=True, exist_ok=True)
    ids = UniqIdGenerator(ip="10.0.0.1", pid=4242, class_loader_hash=7)
    # Varied but cheap bodies: a slice of a random pool, so CRCs differ record to record.
    pool = os.urandom(body_size * 2)
    records = written = rare = 0
    queues: dict[tuple[str, int], bytearray] = {}
    tag_codes = {t: java_string_hash(t) for t in ("TagA", "TagB")}
    indexed: list[tuple[str, str, str, int, int]] = []  # (topic, uniq key, key, offset, store time)
    for n in range(max(1, -(-total // file_size))):
        base = n * file_size
        pos = 0
        with open(commitlog / f"{base:020d}", "wb") as f:
            while True:
                topic = RARE_TOPIC if records % rare_every == 0 else f"Bench_T{records % 4}"
                queue_id = records % QUEUES
                unit = queues.setdefault((topic, queue_id), bytearray())
                start = records % body_size
                body = pool[start : start + body_size]
                tags = "TagA" if records % 2 else "TagB"
                msg = MessageExt(
                    topic=topic,
                    body=body,
                    properties={"UNIQ_KEY": ids.next_id(), "KEYS": f"order-{records}", "TAGS": tags},
                    queue_id=queue_id,
                    queue_offset=len(unit) // 20,
                    born_timestamp=1_700_000_000_000 + records,
                    store_timestamp=1_700_000_000_001 + records,
                    born_host="10.0.0.1:50000",
                    store_host="10.0.0.2:10911",
                    commit_log_offset=base + pos,
                    body_crc=body_crc(body),
                )
                raw = encode_message(msg)
                if pos + len(raw) + 8 > file_size:
                    break  # does not fit with room for the blank: close the file like the broker
                f.write(raw)
                unit += build_consumequeue_entry(base + pos, len(raw), tag_codes[tags])
                pos += len(raw)
                written += len(raw)
                rare += len(raw) if topic == RARE_TOPIC else 0
                if index:
                    uniq = msg.uniq_key or ""
                    indexed.append((topic, uniq, f"order-{records}", base + pos - len(raw), msg.store_timestamp))
                records += 1
            f.write(build_blank_record(file_size - pos))
            f.truncate(file_size)  # the rest reads as zeros, as in a preallocated file
    for (topic, queue_id), units in queues.items():
        qdir = store / "consumequeue" / topic / str(queue_id)
        qdir.mkdir(parents=True, exist_ok=True)
        (qdir / f"{0:020d}").write_bytes(bytes(units))
    if indexed:
        _write_index(store / "index", indexed)
    return records, written, rare


def _write_index(where: Path, entries: list[tuple[str, str, str, int, int]]) -> None:
    """One IndexFile (4 entries per slot, as the reader assumes without options) of ``entries``."""
    from ..store.index import IndexFile, index_file_name

    where.mkdir(parents=True, exist_ok=True)
    slots = max(64, len(entries) // 2 + 1)
    f = IndexFile(str(where / index_file_name(entries[0][4])), slots, 4 * slots)
    try:
        for topic, uniq, key, offset, ts in entries:
            for k in (uniq, key):
                if not f.put_key(index_key(topic, k), offset, ts):
                    raise ValueError("the synthetic IndexFile is full")
        f.flush()
    finally:
        f.close()
