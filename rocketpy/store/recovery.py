"""Bringing a store back to a consistent state on open (DefaultMessageStore.recover).

Clean shutdown (no ``abort`` file): check the last three CommitLog files and cut
after the last valid record (recoverNormally). After a crash: start from the
newest file whose first record is older than the checkpoint (less 3 s), check
every record (CRC when checkCRCOnRecover) and re-dispatch it to the
ConsumeQueues and the index, cut at the first torn or corrupt record
(recoverAbnormally). In both cases ConsumeQueue units pointing past the cut are
dropped, and anything still missing is dispatched afterwards (the reput from the
highest CommitLog offset the ConsumeQueues know).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from ..codecs.message import MESSAGE_MAGIC_CODE, MessageExt, peek_size_magic, peek_store_timestamp
from .commitlog import CommitLog
from .mapped_file import MappedFile
from .types import DispatchRequest

__all__ = ["RecoveryReport", "recover_commitlog", "reput"]

log = logging.getLogger("rocketpy.store")


@dataclass
class RecoveryReport:
    """What recovery found and did."""

    clean_shutdown: bool
    start_file: str | None = None
    records: int = 0  # records checked
    truncated_at: int = 0  # CommitLog offset recovery cut at (the new max offset)
    dropped_bytes: int = 0  # bytes between the cut and the old end of the written area
    stop_reason: str = ""
    index_rebuild_from: int | None = None
    dropped_files: list[str] = field(default_factory=list)  # later CommitLog files deleted by the cut
    dispatched: int = 0  # records dispatched by the reput after recovery


def _first_store_timestamp(mf: MappedFile) -> int | None:
    """The first record's store time, or None when the file does not start with a message."""
    mm = mf.mm
    if peek_size_magic(mm)[1] != MESSAGE_MAGIC_CODE:
        return None
    return peek_store_timestamp(mm)


def _scan(
    commitlog: CommitLog,
    index: int,
    check_crc: bool,
    on_record: Callable[[MessageExt], None] | None,
    report: RecoveryReport,
) -> int:
    """Walk records from file ``index`` on; returns the offset just past the last good one."""
    files = commitlog.mfq.files
    mf = files[index]
    report.start_file = mf.file_name
    process = mf.file_from_offset
    pos = 0
    while True:
        size, msg = commitlog.check_message(mf.mm, pos, check_crc)
        if size > 0 and msg is not None:
            pos += size
            report.records += 1
            if on_record is not None:
                on_record(msg)
        elif size == 0:
            # A blank: the file ends here, go on with the next one (the blank is not data).
            index += 1
            if index >= len(files):
                report.stop_reason = f"blank at the end of the last file {mf.file_name}"
                break
            mf = files[index]
            process = mf.file_from_offset
            pos = 0
        else:
            report.stop_reason = f"no valid record at offset {process + pos} (file {mf.file_name})"
            break
    return process + pos


def recover_commitlog(
    commitlog: CommitLog,
    *,
    clean_shutdown: bool,
    checkpoint_min_timestamp: int,
    dispatch: Callable[[DispatchRequest], None],
    index_rebuild_from: int | None = None,
) -> RecoveryReport:
    """Find the valid end of the CommitLog, cut there, and re-dispatch after a crash."""
    report = RecoveryReport(clean_shutdown=clean_shutdown, index_rebuild_from=index_rebuild_from)
    files = commitlog.mfq.files
    if not files:
        report.stop_reason = "no CommitLog files"
        return report
    check_crc = commitlog.check_crc
    if clean_shutdown:
        process = _scan(commitlog, max(len(files) - 3, 0), check_crc, None, report)
    else:
        start = 0
        for i in range(len(files) - 1, -1, -1):
            ts = _first_store_timestamp(files[i])
            if ts is not None and ts != 0 and ts <= checkpoint_min_timestamp:
                start = i
                break
        if index_rebuild_from is not None:
            # Go back far enough to re-index what the dropped index files held.
            for i, mf in enumerate(files[: start + 1]):
                if mf.file_from_offset <= index_rebuild_from < mf.file_from_offset + commitlog.file_size:
                    start = min(start, i)
                    break

        def on_record(msg: MessageExt) -> None:
            dispatch(commitlog.dispatch_request(msg))

        process = _scan(commitlog, start, check_crc, on_record, report)
    commitlog.mfq.flushed_where = process
    dropped_files = [f.file_name for f in files if f.file_from_offset > process]
    report.dropped_bytes = commitlog.mfq.truncate_dirty_files(process, zero_tail=True)
    report.dropped_files = dropped_files
    report.truncated_at = process
    return report


def reput(commitlog: CommitLog, from_offset: int, dispatch: Callable[[DispatchRequest], None]) -> tuple[int, int]:
    """Dispatch every record from ``from_offset`` to the CommitLog end (ReputMessageService).

    Returns (offset reached, records dispatched). A record that does not parse makes
    the walk skip to the next file, as Java's master does.
    """
    offset = max(from_offset, commitlog.min_offset, 0)
    count = 0
    while offset < commitlog.max_offset:
        mf = commitlog.mfq.find_by_offset(offset)
        if mf is None:
            break
        pos = offset - mf.file_from_offset
        limit = mf.read_position
        next_offset = mf.file_from_offset + limit
        while pos < limit:
            size, msg = commitlog.check_message(mf.mm, pos, False)
            if size > limit - pos:
                return mf.file_from_offset + pos, count  # a record still arriving (a slave's last)
            if size > 0 and msg is not None:
                dispatch(commitlog.dispatch_request(msg))
                count += 1
                pos += size
                next_offset = mf.file_from_offset + pos
            else:
                if size < 0:
                    log.error("[BUG] dispatch hit a bad record at CommitLog offset %d", mf.file_from_offset + pos)
                next_offset = commitlog.roll_next_file(mf.file_from_offset)
                break
        if next_offset <= offset:
            break
        offset = next_offset
    return offset, count
