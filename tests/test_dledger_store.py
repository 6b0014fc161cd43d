"""The DLedger CommitLog under the store (DLedgerMessageStore), without the network: records inside entries,
dispatch of committed entries only, batches as one entry a message, recovery, and the Java 4.9.8 stores of
the golden DLedger group, whose ConsumeQueues our dispatch rebuilds byte for byte."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from rocketpy.codecs.batch import encode_batch
from rocketpy.codecs.dledger import ENTRY_HEADER_SIZE
from rocketpy.codecs.message import decode_message, properties_to_string
from rocketpy.codecs.message_types import Message
from rocketpy.dledger.file_ledger import INDEX_FILE_SIZE
from rocketpy.dledger.store import DLedgerMessageStore
from rocketpy.store.config import MessageStoreConfig
from rocketpy.store.types import MessageExtBatch, MessageExtBrokerInner, PutMessageResult, PutMessageStatus
from rocketpy.testing import message_properties

GOLDEN = Path(__file__).resolve().parent.parent / "protocol" / "golden" / "store-dump-dledger"
pytestmark = pytest.mark.timeout(60)


def config(root: Path, node: str = "n0", **kw: object) -> MessageStoreConfig:
    sizes: dict[str, object] = dict(mapped_file_size_commit_log=64 * 1024, mapped_file_size_consume_queue=6000,
                                     max_hash_slot_num=100, max_index_num=400)
    return MessageStoreConfig(
        store_path_root_dir=str(root), enable_d_leger_commit_log=True, d_leger_self_id=node, d_leger_group="g",
        d_leger_peers=f"{node}-127.0.0.1:1", **{**sizes, **kw},  # type: ignore[arg-type]
    )


class Leader:
    """The member's append as the store sees it: entries written, committed when told."""

    def __init__(self, store: DLedgerMessageStore) -> None:
        self.store = store
        store.commitlog.append_entry = self.append

    def append(self, body: bytes):  # type: ignore[no-untyped-def]
        return self.store.ledger.append_as_leader(body, 1)

    def commit(self) -> None:
        self.store.ledger.update_committed_index(1, self.store.ledger.end_index)


def message(i: int, topic: str = "T", queue_id: int = 0) -> MessageExtBrokerInner:
    props = message_properties("A", f"k{i}", None)
    return MessageExtBrokerInner(topic=topic, body=f"body-{i}".encode() * 20, queue_id=queue_id, properties=props,
                                 properties_string=properties_to_string(props), born_host="127.0.0.1:5000",
                                 store_host="127.0.0.1:10911", born_timestamp=1_700_000_000_000)


def test_records_live_in_entries_and_reach_queues_once_committed(tmp_path: Path) -> None:
    store = DLedgerMessageStore(config(tmp_path))
    store.open()
    leader = Leader(store)
    results = [store.put_message(message(i, queue_id=i % 2)) for i in range(300)]  # crosses data files
    assert all(r.is_ok for r in results)
    # nothing is readable before the quorum: the ConsumeQueues are empty, max_offset is where it was
    assert store.dispatch_committed() == [] and store.get_max_offset_in_queue("T", 0) == 0
    leader.commit()
    assert len(store.dispatch_committed()) == 300
    assert store.get_max_offset_in_queue("T", 0) == 150 and store.get_max_offset_in_queue("T", 1) == 150
    for i, r in enumerate(results):
        entry = store.ledger.get(i)
        assert entry is not None and r.dledger_entry == (1, i)
        assert r.append is not None and r.append.wrote_offset == entry.pos + ENTRY_HEADER_SIZE
        assert int(r.append.msg_id[16:], 16) == entry.pos + ENTRY_HEADER_SIZE  # the offset message id
        msg = store.look_message_by_offset(r.append.wrote_offset)
        assert msg is not None and msg.body == message(i).body and msg.queue_offset == i // 2
        assert msg.commit_log_offset == entry.pos + ENTRY_HEADER_SIZE  # the record's own physical offset field
    found = [decode_message(raw).properties["KEYS"] for raw in store.query_message("T", "k7", 10, 0, 2**62).messages]
    assert found == ["k7"]  # the index holds the key at the record inside the entry
    store.ledger.persist_checkpoint()
    store.close()
    # reopened: the ledger recovers, the ConsumeQueues and the topic queue table come back
    again = DLedgerMessageStore(config(tmp_path))
    again.open()
    assert again.get_max_offset_in_queue("T", 1) == 150
    Leader(again)
    r = again.put_message(message(300, queue_id=1))
    assert r.append is not None and r.append.logics_offset == 150
    again.close()


def test_the_earliest_message_time_is_the_first_entrys_record(tmp_path: Path) -> None:
    """brokerStatus' earliestMessageTimeStamp (clusterList's #Hour): the store time of the record in the
    ledger's first entry, -1 while the ledger is empty; after retention, that of the first file left."""
    start = int(time.time() * 1000) - 1_000_000  # files' mtimes are the wall clock's: retention compares them
    ticks = iter(range(start, start + 1_000_000, 1000))  # each store time a second after the last
    store = DLedgerMessageStore(config(tmp_path, file_reserved_time=1), clock=lambda: next(ticks))
    store.open()
    assert store.get_earliest_message_time() == -1
    leader = Leader(store)
    sent = [message(i) for i in range(400)]
    assert all(store.put_message(m).is_ok for m in sent)  # crosses data files
    leader.commit()
    store.dispatch_committed()
    assert store.get_earliest_message_time() == sent[0].store_timestamp == start
    store.flush()
    store.clean_expired(int(time.time() * 1000) + 3 * 3_600_000, force=True)
    first = store.ledger.data.files[0].file_from_offset
    kept = next(m for m in sent if m.commit_log_offset >= first)
    assert kept is not sent[0] and store.get_earliest_message_time() == kept.store_timestamp
    store.close()


def test_a_batch_is_one_entry_a_message_with_its_own_properties(tmp_path: Path) -> None:
    store = DLedgerMessageStore(config(tmp_path))
    store.open()
    leader = Leader(store)
    body = encode_batch([Message("T", b"one", properties={"KEYS": "a"}),
                         Message("T", b"two", properties={"KEYS": "b"})])
    batch = MessageExtBatch(topic="T", body=body, queue_id=0, properties={"p": "v"}, properties_string="p\x01v\x02",
                            born_host="127.0.0.1:5000", store_host="127.0.0.1:10911")
    r = store.put_messages(batch)
    assert r.is_ok and r.append is not None and r.append.msg_num == 2 and r.dledger_entry == (1, 1)
    leader.commit()
    store.dispatch_committed()
    msgs = [store.look_message_by_offset(int(i[16:], 16)) for i in r.append.msg_id.split(",")]
    assert [(m.body, m.queue_offset, m.properties) for m in msgs if m] == [
        (b"one", 0, {"KEYS": "a"}), (b"two", 1, {"KEYS": "b"})]
    store.close()


def test_an_append_the_member_refuses_is_answered_busy(tmp_path: Path) -> None:
    store = DLedgerMessageStore(config(tmp_path))
    store.open()
    r = store.put_message(message(0))  # no member running: not the leader
    assert r.status is PutMessageStatus.OS_PAGECACHE_BUSY
    assert store.ledger.end_index == -1 and store.commitlog.topic_queue_table.get(("T", 0), 0) == 0
    store.close()


@pytest.mark.parametrize("node", ["n0", "n1", "n2"])
def test_java_group_stores_dispatch_to_javas_own_consume_queues(node: str, tmp_path: Path) -> None:
    src = GOLDEN / node
    root = tmp_path / node
    shutil.copytree(src, root)
    index = root / f"dledger-{node}" / "index" / "00000000000000000000"
    os.truncate(index, INDEX_FILE_SIZE)  # the dump cut it to its used bytes
    java_cq = {q: (root / "consumequeue" / "DlTopic" / str(q) / "00000000000000000000").read_bytes()
               for q in range(4)}
    shutil.rmtree(root / "consumequeue")
    shutil.rmtree(root / "index")
    cfg = config(root, node, mapped_file_size_commit_log=4 * 1024 * 1024, mapped_file_size_consume_queue=60000,
                 max_hash_slot_num=1000, max_index_num=4000)
    store = DLedgerMessageStore(cfg)
    report = store.open()
    assert report.dispatched == 50
    ours = {}
    for q in range(4):
        cq = store.find_consume_queue("DlTopic", q)
        assert cq is not None
        cq.flush(0)
        ours[q] = (root / "consumequeue" / "DlTopic" / str(q) / "00000000000000000000").read_bytes()
    assert ours == java_cq
    store.close()


def test_retention_deletes_old_committed_data_files_and_the_ledger_starts_after_them(tmp_path: Path) -> None:
    store = DLedgerMessageStore(config(tmp_path, file_reserved_time=1))
    store.open()
    leader = Leader(store)
    results = [store.put_message(message(i)) for i in range(400)]
    leader.commit()
    store.dispatch_committed()
    store.flush()  # only flushed bytes may go
    files_before = len(store.ledger.data.files)
    assert files_before >= 3
    far = store.clock() + 3 * 3_600_000  # past fileReservedTime + 1 hours
    gone = store.clean_expired(far, force=True).commitlog
    assert len(gone) == files_before - 1  # everything but the file being written
    first = store.ledger.data.files[0].file_from_offset
    assert store.ledger.begin_index > 0 and store.ledger.get(store.ledger.begin_index - 1) is None
    assert store.get_min_offset_in_queue("T", 0) > 0  # the ConsumeQueue moved past them too
    kept = [r for r in results if r.append is not None and r.append.wrote_offset >= first]
    msg = store.look_message_by_offset(kept[0].append.wrote_offset)  # type: ignore[union-attr]
    assert msg is not None
    store.ledger.persist_checkpoint()
    store.close()
    again = DLedgerMessageStore(config(tmp_path, file_reserved_time=1))
    again.open()  # recovers from the first file left
    assert again.ledger.end_index == 399 and again.ledger.begin_index == store.ledger.begin_index
    Leader(again)
    assert again.put_message(message(400)).is_ok
    again.close()


def test_retention_keeps_entries_not_yet_committed(tmp_path: Path) -> None:
    store = DLedgerMessageStore(config(tmp_path, file_reserved_time=1))
    store.open()
    Leader(store)
    for i in range(400):
        store.put_message(message(i))  # written, never committed
    store.flush()
    far = store.clock() + 3 * 3_600_000
    assert store.clean_expired(far, force=True).commitlog == []
    assert store.ledger.begin_index == 0
    store.close()


def plain_config(root: Path) -> MessageStoreConfig:
    """The plain store ``config`` becomes a DLedger member of: the same sizes, no DLedger."""
    cfg = config(root)
    cfg.enable_d_leger_commit_log = False
    cfg.d_leger_self_id = cfg.d_leger_group = cfg.d_leger_peers = None
    return cfg


def pull_all(store: DLedgerMessageStore, topic: str, queue_id: int, offset: int = 0) -> list[bytes]:
    bodies: list[bytes] = []
    while True:
        got = store.get_message(topic, queue_id, offset, 32)
        assert got is not None
        if not got.messages:
            return bodies
        bodies += [decode_message(raw).body for raw in got.messages]
        offset = got.next_begin_offset


def make_divided_store(root: Path, old: int = 300, new: int = 10) -> tuple[list[PutMessageResult],
                                                                          list[PutMessageResult]]:
    """A plain store of ``old`` messages that became a DLedger member (n0) and took ``new`` more, closed; the
    put results of both."""
    from rocketpy.store import MessageStore

    plain = MessageStore(plain_config(root))
    plain.open()
    before = [plain.put_message(message(i, queue_id=i % 2)) for i in range(old)]
    plain.close()
    store = DLedgerMessageStore(config(root))
    store.open()
    leader = Leader(store)
    after = [store.put_message(message(i, queue_id=i % 2)) for i in range(old, old + new)]
    leader.commit()
    store.dispatch_committed()
    store.ledger.persist_checkpoint()
    store.close()
    assert all(r.is_ok for r in before + after)
    return before, after


def test_a_plain_store_becomes_a_dledger_member_as_the_divided_commitlog(tmp_path: Path) -> None:
    """DLedgerCommitLog's divided CommitLog: the first start in DLedger mode seals the old CommitLog's last
    file with a blank and starts the ledger where that file ends; old records stay where they were (pull,
    lookup by offset and key, queue offsets), new ones go into entries above the divided offset."""
    from rocketpy.store import MessageStore

    plain = MessageStore(plain_config(tmp_path))
    plain.open()
    old = [plain.put_message(message(i, queue_id=i % 2)) for i in range(300)]  # crosses CommitLog files
    assert all(r.is_ok for r in old)
    first_time = old[0].append.store_timestamp  # type: ignore[union-attr]
    plain.close()
    commitlog = sorted((tmp_path / "commitlog").iterdir())
    last_end = int(commitlog[-1].name) + 64 * 1024
    wrote = max(r.append.wrote_offset + r.append.wrote_bytes for r in old)  # type: ignore[union-attr]

    store = DLedgerMessageStore(config(tmp_path))
    store.open()
    assert store.commitlog.divided_offset == last_end
    assert [p.name for p in (tmp_path / "dledger-n0" / "data").iterdir()] == [f"{last_end:020d}"]
    raw = commitlog[-1].read_bytes()  # sealed: a blank from the last record to the end of the file
    rel = wrote - int(commitlog[-1].name)
    assert raw[rel : rel + 8] == (len(raw) - rel).to_bytes(4, "big") + (-875286124).to_bytes(4, "big", signed=True)
    # the old records, as a plain store serves them
    assert store.get_max_offset_in_queue("T", 0) == store.get_max_offset_in_queue("T", 1) == 150
    assert pull_all(store, "T", 0) == [message(i).body for i in range(0, 300, 2)]
    r7 = old[7].append
    assert r7 is not None
    looked = store.look_message_by_offset(r7.wrote_offset)
    assert looked is not None and looked.body == message(7).body and looked.queue_offset == 3
    assert [decode_message(m).properties["KEYS"] for m in store.query_message("T", "k7", 10, 0, 2**62).messages] == [
        "k7"]
    assert store.min_phy_offset == 0 and store.get_earliest_message_time() == first_time
    # new messages: entries above the divided offset, queue offsets going on
    leader = Leader(store)
    new = [store.put_message(message(i, queue_id=i % 2)) for i in range(300, 310)]
    assert all(r.is_ok and r.append is not None for r in new)
    assert new[0].append.wrote_offset == last_end + ENTRY_HEADER_SIZE  # type: ignore[union-attr]
    assert new[0].append.logics_offset == 150  # type: ignore[union-attr]
    leader.commit()
    assert len(store.dispatch_committed()) == 10
    assert pull_all(store, "T", 0, 148) == [message(i).body for i in (296, 298, 300, 302, 304, 306, 308)]
    store.ledger.persist_checkpoint()
    store.close()

    again = DLedgerMessageStore(config(tmp_path))
    again.open()  # the ledger is there: the divided offset is its first file's, nothing sealed again
    assert again.commitlog.divided_offset == last_end and commitlog[-1].read_bytes() == raw
    assert pull_all(again, "T", 1) == [message(i).body for i in range(1, 310, 2)]
    assert again.get_max_offset_in_queue("T", 0) == 155
    Leader(again)
    assert again.put_message(message(310)).append.logics_offset == 155  # type: ignore[union-attr]
    again.close()


def test_retention_deletes_the_old_commitlog_first_and_keeps_the_ledger(tmp_path: Path) -> None:
    from rocketpy.store import MessageStore

    plain = MessageStore(plain_config(tmp_path))
    plain.open()
    assert all(plain.put_message(message(i)).is_ok for i in range(200))
    plain.close()
    store = DLedgerMessageStore(config(tmp_path, file_reserved_time=1))
    store.open()
    leader = Leader(store)
    assert all(store.put_message(message(i)).is_ok for i in range(200, 400))  # ledger files too
    leader.commit()
    store.dispatch_committed()
    store.flush()
    ledger_files = len(store.ledger.data.files)
    assert ledger_files >= 2
    far = int(time.time() * 1000) + 3 * 3_600_000
    divided = store.commitlog.divided_offset
    while (tmp_path / "commitlog").exists() and any((tmp_path / "commitlog").iterdir()):
        gone = store.clean_expired(far, force=True).commitlog
        assert gone and all("/commitlog/" in g for g in gone)  # the old CommitLog's files, its last one too
        assert len(store.ledger.data.files) == ledger_files
    assert store.min_phy_offset == divided and store.get_min_offset_in_queue("T", 0) == 200
    assert pull_all(store, "T", 0, 200)[0] == message(200).body
    gone = store.clean_expired(far, force=True).commitlog  # then the ledger's own, as before
    assert gone and all("/dledger-n0/" in g for g in gone)
    store.close()
