"""Read-only verification of a store directory (Java's or ours): ``rocketpy store check``.

Nothing is written, locked or truncated: files are mapped read-only. Findings are
errors (damage a broker would lose data over or refuse to start on) or warnings
(states recovery repairs by itself, e.g. a ConsumeQueue lagging after a crash).
"""

from __future__ import annotations

import fcntl
import mmap
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..codecs import store_records as sr
from ..codecs.codes import MessageConst, MessageSysFlag, MixAll
from ..codecs.errors import CodecError
from ..codecs.message import MessageExt, decode_message, tags_hash_code
from .config import DelayLevels, MessageStoreConfig
from .config_files import BrokerConfigFiles
from .dledger_ledger import DLedgerLedger, find_ledger_dirs
from .walk import CorruptRegion, last_written, walk_commitlog, written_end

__all__ = ["CheckReport", "check_store", "commitlog_file_size", "iter_store_records", "open_readonly"]

_TRAN_MASK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
_ROLLBACK = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)


@dataclass
class Section:
    """One part of the report: a title, facts, and problems found."""

    title: str
    facts: dict[str, object] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class CheckReport:
    root: str
    clean_shutdown: bool = True
    in_use: bool = False
    sections: list[Section] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [f"{s.title}: {e}" for s in self.sections for e in s.errors]

    @property
    def warnings(self) -> list[str]:
        return [f"{s.title}: {w}" for s in self.sections for w in s.warnings]

    @property
    def ok(self) -> bool:
        return not self.errors


@contextmanager
def open_readonly(path: str) -> Iterator[mmap.mmap | bytes]:
    """The whole file, mapped read-only (an empty file gives b"")."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            yield b""
            return
        mm = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
        try:
            yield mm
        finally:
            mm.close()


def _numeric_files(d: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(d) if n.isdigit() and os.path.isfile(os.path.join(d, n)))
    except FileNotFoundError:
        return []


def commitlog_file_size(commit_dir: str) -> int | None:
    names = _numeric_files(commit_dir)
    return os.path.getsize(os.path.join(commit_dir, names[0])) if names else None


def iter_store_records(
    commit_dir: str, *, check_crc: bool = False, decompress: bool = False
) -> Iterator[tuple[str, MessageExt | sr.BlankRecord | sr.CommitLogCorruption]]:
    """Every record of every CommitLog file in order: (file name, record); a corrupt
    spot is yielded as the CommitLogCorruption and ends that file's walk."""
    for name in _numeric_files(commit_dir):
        with open_readonly(os.path.join(commit_dir, name)) as buf:
            walk = sr.iter_commitlog(buf, int(name), check_crc=check_crc, decompress=decompress, strict=False)
            for rec in walk:
                yield name, rec
            if walk.error is not None:
                yield name, walk.error


def _lock_state(path: str) -> bool:
    """Is the lock file held by a running broker? (Tests the POSIX lock, changes nothing.)"""
    from .message_store import held_by_this_process

    if held_by_this_process(path):
        return True  # and opening the file here would release that process-wide lock
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        # F_GETLK through lockf is not exposed; try a shared lock on a read-only fd: it
        # fails exactly when someone holds the exclusive one.
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, 0)
        fcntl.lockf(fd, fcntl.LOCK_UN, 1, 0)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


@dataclass
class _Rec:
    topic: str
    queue_id: int
    queue_offset: int
    size: int
    sys_flag: int
    tags_code: int
    keys: list[str]
    store_timestamp: int


def _infer_index_dims(size: int, cfg: MessageStoreConfig | None) -> tuple[int, int] | None:
    if cfg is not None:
        return cfg.max_hash_slot_num, cfg.max_index_num
    default = MessageStoreConfig()
    if size == sr.INDEX_HEADER_SIZE + default.max_hash_slot_num * 4 + default.max_index_num * 20:
        return default.max_hash_slot_num, default.max_index_num
    # Java's default keeps maxIndexNum = 4 * maxHashSlotNum; assume that ratio.
    body = size - sr.INDEX_HEADER_SIZE
    if body > 0 and body % 84 == 0:
        return body // 84, body // 84 * 4
    return None


def check_store(
    root: str,
    config: MessageStoreConfig | None = None,
    *,
    check_crc: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> CheckReport:
    """Verify CommitLog, ConsumeQueues, index, checkpoint and config files of ``root``;
    ``progress(files done, files)`` after each CommitLog file (a progress bar)."""
    report = CheckReport(root=root)
    cfg = config
    commit_dir = (cfg.commit_log_dir if cfg else None) or os.path.join(root, "commitlog")
    delay = DelayLevels((cfg or MessageStoreConfig()).message_delay_level)

    state = Section("shutdown state")
    report.sections.append(state)
    report.clean_shutdown = not os.path.exists(os.path.join(root, "abort"))
    report.in_use = _lock_state(os.path.join(root, "lock"))
    state.facts["abort file"] = "absent (clean shutdown)" if report.clean_shutdown else "present (crashed or running)"
    state.facts["lock"] = "held by a running broker" if report.in_use else "free"
    if report.in_use:
        state.warnings.append("the store is in use: files may change while they are checked")

    records: dict[int, _Rec] = {}
    regions: list[CorruptRegion] = []
    ledgers = find_ledger_dirs(root)
    valid_end = 0
    if not ledgers or _numeric_files(commit_dir):  # DLedger mode may follow a CommitLog of its own
        valid_end = _check_commitlog(report, commit_dir, cfg, delay, records, check_crc, regions, progress)
    for ledger in ledgers:
        valid_end = max(valid_end, _check_dledger(report, ledger, delay, records, check_crc))
    _check_consume_queues(report, root, cfg, records, valid_end, regions)
    _check_index(report, root, cfg, records, valid_end, regions)
    _check_checkpoint(report, root, records)
    _check_config_files(report, root)
    return report


def _check_commitlog(
    report: CheckReport,
    commit_dir: str,
    cfg: MessageStoreConfig | None,
    delay: DelayLevels,
    records: dict[int, _Rec],
    check_crc: bool,
    regions: list[CorruptRegion],
    progress: Callable[[int, int], None] | None = None,
) -> int:
    sec = Section("CommitLog")
    report.sections.append(sec)
    names = _numeric_files(commit_dir)
    sec.facts["directory"] = commit_dir
    sec.facts["files"] = len(names)
    if not names:
        sec.warnings.append("no CommitLog files")
        return 0
    size = cfg.mapped_file_size_commit_log if cfg else os.path.getsize(os.path.join(commit_dir, names[0]))
    sec.facts["file size"] = size
    prev: int | None = None
    count = blanks = 0
    valid_end = int(names[0])
    recovery_end: int | None = None  # where a broker's recovery would stop: the first damage
    for i, name in enumerate(names):
        path = os.path.join(commit_dir, name)
        start = int(name)
        fsize = os.path.getsize(path)
        last = i == len(names) - 1
        if fsize != size:
            sec.errors.append(f"{name}: {fsize} bytes, expected {size} (Java refuses to load it)")
        if name != f"{start:020d}":
            sec.warnings.append(f"{name}: not a 20-digit offset name")
        if prev is not None and start != prev + size:
            sec.errors.append(f"{name}: not contiguous with the previous file (gap or overlap)")
        prev = start
        if start % size:
            sec.errors.append(f"{name}: offset is not a multiple of the file size")
        with open_readonly(path) as buf:
            # one error per damaged region; the walk resynchronises past it, as the Spark audit does
            pending: CorruptRegion | None = None
            file_end = start
            data_end = written_end(path)  # a sparse 1 GiB file: never read its holes
            for item in walk_commitlog(buf, start, check_crc=check_crc, blanks=True, data_end=data_end):
                if isinstance(item, CorruptRegion):
                    regions.append(item)
                    if pending is not None:
                        _damage(sec, name, pending, follows=True, recovery_end=recovery_end)
                    pending = item
                    if recovery_end is None:
                        recovery_end = item.offset
                    continue
                at, rec = item
                if pending is not None:
                    _damage(sec, name, pending, follows=True, recovery_end=recovery_end)
                    pending = None
                if isinstance(rec, sr.BlankRecord):
                    blanks += 1
                    if rec.offset + rec.size != start + fsize:
                        sec.errors.append(f"{name}: blank at {rec.offset} does not reach the end of the file")
                    file_end = start + fsize
                    continue
                count += 1
                if rec.commit_log_offset != at:
                    sec.errors.append(f"record at {at} says its physical offset is {rec.commit_log_offset}")
                records[at] = _rec_of(rec, delay)
                file_end = at + rec.store_size
            if pending is not None:
                if last and not report.clean_shutdown and pending.offset == recovery_end:
                    regions.remove(pending)  # recovery cuts it; queue entries into it are dropped too
                    sec.warnings.append(
                        f"torn tail after a crash, recovery cuts at {pending.offset}: "
                        f"{name}: {pending.reason} at offset {pending.offset}"
                    )
                else:
                    _damage(sec, name, pending, follows=False, recovery_end=recovery_end)
            if progress is not None:
                progress(i + 1, len(names))
            if recovery_end is None:
                valid_end = file_end
                if file_end < start + fsize and not last:
                    sec.warnings.append(f"{name}: data ends before the file does, without a blank record")
                elif file_end < start + fsize and last_written(buf, file_end - start, data_end) > file_end - start:
                    msg = f"{name}: non-zero bytes after the last record at {file_end}"
                    (sec.errors if report.clean_shutdown else sec.warnings).append(msg)
    if recovery_end is not None:
        valid_end = recovery_end
        sec.facts["recovery truncates at"] = recovery_end
    sec.facts["records"] = count
    sec.facts["blank ends"] = blanks
    sec.facts["min offset"] = int(names[0])
    sec.facts["valid end (max offset)"] = valid_end
    sec.facts["CRC checked"] = check_crc
    return valid_end


def _check_dledger(
    report: CheckReport, path: Path, delay: DelayLevels, records: dict[int, _Rec], check_crc: bool
) -> int:
    """A DLedger member's ledger (DLedgerCommitLog): entries, index units and checkpoint agree, and every
    entry's body is one message record whose physical offset is the entry's pos + 48."""
    ledger = DLedgerLedger(path)
    sec = Section(f"DLedger ledger {path.name}")
    report.sections.append(sec)
    sec.errors.extend(ledger.check())
    state = ledger.state()
    count = 0
    first = last = -1
    end = 0
    try:
        for entry in ledger.entries():
            first = entry.index if first == -1 else first
            last = entry.index
            count += 1
            end = entry.body_offset + len(entry.body)
            try:
                msg = decode_message(entry.body, check_crc=check_crc)
            except CodecError as exc:
                sec.errors.append(f"entry {entry.index} at {entry.pos}: its body is not a message record: {exc}")
                continue
            if msg.commit_log_offset != entry.body_offset:
                sec.errors.append(
                    f"entry {entry.index}: the record says its physical offset is {msg.commit_log_offset}, "
                    f"not {entry.body_offset} (pos + 48)"
                )
            records[entry.body_offset] = _rec_of(msg, delay)
    except CodecError as exc:
        sec.errors.append(f"data: {exc}")
    sec.facts["entries"] = count
    sec.facts["first index"] = first
    sec.facts["last index"] = last
    sec.facts["committedIndex"] = state.committed_index
    sec.facts["endIndex"] = state.end_index
    sec.facts["currTerm"] = state.current_term
    sec.facts["voteLeader"] = state.vote_leader or ""
    sec.facts["valid end (max offset)"] = end
    sec.facts["CRC checked"] = check_crc
    return end


def _damage(sec: Section, name: str, region: CorruptRegion, *, follows: bool, recovery_end: int | None) -> None:
    what = f"{name}: {region.reason} at offset {region.offset} ({region.length} bytes)"
    if follows:
        what += "; valid records follow it"
    if region.offset == recovery_end:
        what += ", recovery would truncate here and drop everything after it"
    sec.errors.append(what)


def _rec_of(msg: MessageExt, delay: DelayLevels) -> _Rec:
    props = msg.properties
    tags = props.get(MessageConst.PROPERTY_TAGS)
    tags_code = tags_hash_code(tags) if tags else 0
    if msg.topic == MixAll.RMQ_SYS_SCHEDULE_TOPIC:
        level_text = props.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL)
        if level_text and level_text.lstrip("-").isdigit():
            level = min(int(level_text), delay.max_level)
            if level > 0:
                tags_code = delay.deliver_timestamp(level, msg.store_timestamp)
    keys = [k for k in (props.get(MessageConst.PROPERTY_KEYS) or "").split(MessageConst.KEY_SEPARATOR) if k]
    uniq = props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    if uniq:
        keys.insert(0, uniq)
    return _Rec(
        msg.topic, msg.queue_id, msg.queue_offset, msg.store_size, msg.sys_flag, tags_code, keys, msg.store_timestamp
    )


def _check_consume_queues(
    report: CheckReport,
    root: str,
    cfg: MessageStoreConfig | None,
    records: dict[int, _Rec],
    valid_end: int,
    regions: list[CorruptRegion],
) -> None:
    sec = Section("ConsumeQueue")
    report.sections.append(sec)
    cq_root = os.path.join(root, "consumequeue")
    # What the CommitLog says each queue should hold: queue offset -> record offset.
    expected: dict[tuple[str, int], dict[int, int]] = {}
    for off, r in records.items():
        if r.sys_flag & _TRAN_MASK in (0, 8):
            expected.setdefault((r.topic, r.queue_id), {})[r.queue_offset] = off
    queues = units = 0
    lagging: list[str] = []
    into: dict[CorruptRegion, int] = {}
    try:
        topics = sorted(os.listdir(cq_root))
    except FileNotFoundError:
        topics = []
    for topic in topics:
        tdir = os.path.join(cq_root, topic)
        if not os.path.isdir(tdir):
            continue
        for qname in sorted(os.listdir(tdir)):
            if not qname.lstrip("-").isdigit():
                continue
            qid = int(qname)
            qdir = os.path.join(tdir, qname)
            names = _numeric_files(qdir)
            if not names:
                continue
            queues += 1
            label = f"{topic}/{qid}"
            fsize = cfg.consume_queue_file_size if cfg else os.path.getsize(os.path.join(qdir, names[0]))
            max_index = -1
            prev: int | None = None
            for name in names:
                path = os.path.join(qdir, name)
                start = int(name)
                if os.path.getsize(path) != fsize:
                    sec.errors.append(f"{label}/{name}: {os.path.getsize(path)} bytes, expected {fsize}")
                    continue
                if prev is not None and start != prev + fsize:
                    sec.errors.append(f"{label}/{name}: not contiguous with the previous file")
                prev = start
                with open_readonly(path) as buf:
                    for i, unit in enumerate(sr.iter_consumequeue(buf)):
                        index = (start + i * sr.CQ_STORE_UNIT_SIZE) // sr.CQ_STORE_UNIT_SIZE
                        max_index = index
                        if unit.is_pre_blank:
                            continue
                        units += 1
                        region = _region_of(regions, unit.commit_log_offset)
                        if region is not None:  # the CommitLog section reports the damage itself
                            into[region] = into.get(region, 0) + 1
                            continue
                        _check_unit(sec, label, topic, qid, index, unit, records, valid_end, report.clean_shutdown)
            exp = expected.get((topic, qid), {})
            if exp and max(exp) > max_index:
                lagging.append(f"{label} ({max(exp) - max_index} behind)")
    orphans = sum(
        len(exp) for (topic, qid), exp in expected.items() if not _numeric_files(os.path.join(cq_root, topic, str(qid)))
    )
    sec.facts["records of queues without files (deleted topics)"] = orphans
    for region, n in into.items():
        sec.errors.append(f"{n} unit(s) point into the damaged CommitLog region at {region.offset}")
    if lagging:
        text = "behind the CommitLog, rebuilt from it on start: " + ", ".join(lagging[:10])
        if len(lagging) > 10:
            text += f" and {len(lagging) - 10} more"
        sec.warnings.append(text)
    sec.facts["queues"] = queues
    sec.facts["units"] = units


def _region_of(regions: list[CorruptRegion], offset: int) -> CorruptRegion | None:
    for r in regions:  # few: one per damaged stretch
        if r.offset <= offset < r.offset + r.length:
            return r
    return None


def _check_unit(
    sec: Section,
    label: str,
    topic: str,
    qid: int,
    index: int,
    unit: sr.ConsumeQueueEntry,
    records: dict[int, _Rec],
    valid_end: int,
    clean: bool,
) -> None:
    off = unit.commit_log_offset
    rec = records.get(off)
    if rec is None:
        if off >= valid_end:
            msg = f"{label}@{index}: points at {off}, past the CommitLog's valid end {valid_end}"
            (sec.errors if clean else sec.warnings).append(msg + ("" if clean else " (recovery drops it)"))
        elif records and off < min(records):
            pass  # the CommitLog file it pointed into was deleted by retention
        else:
            sec.errors.append(f"{label}@{index}: no record starts at CommitLog offset {off}")
        return
    if rec.size != unit.size:
        sec.errors.append(f"{label}@{index}: size {unit.size}, the record is {rec.size} bytes")
    if rec.topic != topic or rec.queue_id != qid or rec.queue_offset != index:
        sec.errors.append(
            f"{label}@{index}: points at a record of {rec.topic}/{rec.queue_id}@{rec.queue_offset} (offset {off})"
        )
    if rec.tags_code != unit.tags_code:
        sec.errors.append(f"{label}@{index}: tagsCode {unit.tags_code}, the record gives {rec.tags_code}")


def _check_index(
    report: CheckReport,
    root: str,
    cfg: MessageStoreConfig | None,
    records: dict[int, _Rec],
    valid_end: int,
    regions: list[CorruptRegion],
) -> None:
    sec = Section("index")
    report.sections.append(sec)
    idx_dir = os.path.join(root, "index")
    names = _numeric_files(idx_dir)
    sec.facts["files"] = len(names)
    indexed: set[tuple[int, int]] = set()
    entries = beyond = 0
    into: dict[CorruptRegion, int] = {}
    for name in names:
        path = os.path.join(idx_dir, name)
        size = os.path.getsize(path)
        dims = _infer_index_dims(size, cfg)
        if dims is None:
            sec.errors.append(f"{name}: {size} bytes fits no maxHashSlotNum/maxIndexNum; pass --config")
            continue
        slots, num = dims
        need = sr.INDEX_HEADER_SIZE + slots * 4 + num * 20
        if size < need:
            sec.errors.append(f"{name}: {size} bytes, {need} expected for {slots} slots / {num} entries")
            continue
        with open_readonly(path) as buf:
            try:
                view = sr.IndexFileView(buf, slots, num)
            except CodecError as exc:
                sec.errors.append(f"{name}: {exc}")
                continue
            h = view.header
            sec.facts[f"{name}"] = f"{max(h.index_count - 1, 0)} entries, {h.hash_slot_count} slots used"
            if h.index_count > num or h.hash_slot_count > slots:
                sec.errors.append(f"{name}: header counts exceed the file ({h.index_count} entries)")
                continue
            for number, e in view.entries():
                entries += 1
                if e.prev_index < 0 or e.prev_index >= number:
                    sec.errors.append(f"{name}: entry {number} chains forward to {e.prev_index}")
                rec = records.get(e.phy_offset)
                if rec is None:
                    region = _region_of(regions, e.phy_offset)
                    if region is not None:
                        into[region] = into.get(region, 0) + 1
                    elif e.phy_offset >= valid_end and not report.clean_shutdown:
                        beyond += 1  # a crash: recovery drops and rebuilds this file
                    elif records and e.phy_offset >= min(records):
                        sec.errors.append(f"{name}: entry {number} points at {e.phy_offset}, not a record")
                    continue
                if not any(sr.index_key_hash(sr.index_key(rec.topic, k)) == e.key_hash for k in rec.keys):
                    sec.errors.append(f"{name}: entry {number} hash matches no key of the record at {e.phy_offset}")
                indexed.add((e.phy_offset, e.key_hash))
    missing = 0
    for off, rec in records.items():
        if rec.sys_flag & _TRAN_MASK == _ROLLBACK:
            continue
        for k in rec.keys:
            if (off, sr.index_key_hash(sr.index_key(rec.topic, k))) not in indexed:
                missing += 1
                break
    sec.facts["entries"] = entries
    for region, n in into.items():
        sec.errors.append(f"{n} entries point into the damaged CommitLog region at {region.offset}")
    if beyond:
        sec.warnings.append(f"{beyond} entries point past the CommitLog's valid end (rebuilt on start)")
    sec.facts["records with a key not indexed"] = missing
    if missing and names:
        sec.warnings.append(f"{missing} records have keys missing from the index (rebuilt only after a crash)")


def _check_checkpoint(report: CheckReport, root: str, records: dict[int, _Rec]) -> None:
    sec = Section("checkpoint")
    report.sections.append(sec)
    path = os.path.join(root, "checkpoint")
    if not os.path.exists(path):
        sec.warnings.append("no checkpoint file (recovery will scan from the first CommitLog file)")
        return
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        data = f.read(24)
    if size != sr.CHECKPOINT_FILE_SIZE:
        sec.warnings.append(f"{size} bytes, Java maps {sr.CHECKPOINT_FILE_SIZE}")
    try:
        cp = sr.parse_checkpoint(data)
    except CodecError as exc:
        sec.errors.append(str(exc))
        return
    sec.facts["physicMsgTimestamp"] = cp.physic_msg_timestamp
    sec.facts["logicsMsgTimestamp"] = cp.logics_msg_timestamp
    sec.facts["indexMsgTimestamp"] = cp.index_msg_timestamp
    newest = max((r.store_timestamp for r in records.values()), default=0)
    if newest and cp.min_timestamp > newest:
        sec.warnings.append("checkpoint is newer than every record (clock change?)")


def _check_config_files(report: CheckReport, root: str) -> None:
    sec = Section("config files")
    report.sections.append(sec)
    files = BrokerConfigFiles(root)
    for name, cf in files.files.items():
        if not cf.exists():
            sec.facts[name] = "absent"
            continue
        state = []
        for path in (cf.path, cf.bak_path):
            if not os.path.exists(path):
                state.append(f"{os.path.basename(path)} absent")
                continue
            try:
                with open(path, "rb") as f:
                    data = f.read()
                if data:
                    cf.doc_class.decode(data)
                state.append(f"{os.path.basename(path)} ok")
            except CodecError as exc:
                if path == cf.path:
                    sec.errors.append(f"{name}: does not parse ({exc}); a broker falls back to the .bak")
                else:
                    sec.warnings.append(f"{name}.bak: does not parse ({exc})")
                state.append(f"{os.path.basename(path)} BAD")
        sec.facts[name] = ", ".join(state)
