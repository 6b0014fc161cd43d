"""Retention: which CommitLog, ConsumeQueue and index files go, and when (Java's CleanCommitLogService,
CleanConsumeQueueService and the topic clean-ups of DefaultMessageStore), as a part of MessageStore."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..codecs.codes import MixAll

if TYPE_CHECKING:
    from .commitlog import CommitLog
    from .config import MessageStoreConfig
    from .consume_queue import ConsumeQueue
    from .index import IndexService
    from .running_flags import RunningFlags

__all__ = [
    "DISK_SPACE_CLEAN_FORCIBLY_RATIO",
    "DISK_SPACE_WARNING_LEVEL_RATIO",
    "CleanResult",
    "StoreRetention",
    "disk_used_ratio",
    "is_it_time_to_do",
    "total_physical_memory",
]

log = logging.getLogger("rocketpy.store")

#: the defaults of Java's system properties rocketmq.broker.diskSpaceWarningLevelRatio and
#: diskSpaceCleanForciblyRatio: past the first the store refuses puts, past the second retention
#: deletes files whatever their age (with cleanFileForciblyEnable)
DISK_SPACE_WARNING_LEVEL_RATIO = 0.90
DISK_SPACE_CLEAN_FORCIBLY_RATIO = 0.85


def total_physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def disk_used_ratio(path: str) -> float:
    """UtilAll.getDiskPartitionSpaceUsedPercent: (total - free) / total, -1 when unknown."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1.0
    total = st.f_blocks * st.f_frsize
    if total <= 0:
        return -1.0
    return (total - st.f_bfree * st.f_frsize) / total


def is_it_time_to_do(when: str, now_ms: int) -> bool:
    """UtilAll.isItTimeToDo: is the local hour of ``now_ms`` one of the ';'-separated hours?"""
    hour = datetime.fromtimestamp(now_ms / 1000).hour
    for item in when.split(";"):
        item = item.strip()
        if item.lstrip("-").isdigit() and int(item) == hour:
            return True
    return False


@dataclass
class CleanResult:
    """Files removed by one retention pass."""

    commitlog: list[str] = field(default_factory=list)
    consume_queue: list[str] = field(default_factory=list)
    index: list[str] = field(default_factory=list)


class StoreRetention:
    """MessageStore's retention and topic clean-up methods (mixed into MessageStore)."""

    # MessageStore's, used here
    config: MessageStoreConfig
    commitlog: CommitLog
    clock: Callable[[], int]
    _disk_usage: Callable[[str], float]
    running_flags: RunningFlags
    _allocation_failed: bool
    _last_physical_min_offset: int
    pending: list[Any]

    if TYPE_CHECKING:

        @property
        def consume_queues(self) -> dict[str, dict[int, ConsumeQueue]]: ...

        @property
        def index(self) -> IndexService | None: ...

        def _all_queues(self) -> Iterator[ConsumeQueue]: ...

        def _sync_flags(self) -> None: ...

        def settle(self) -> list[Any]: ...

    def delete_topics(self, topics: Iterable[str]) -> int:
        """Destroy the ConsumeQueues of ``topics`` (their CommitLog records stay)."""
        n = 0
        for topic in list(topics):
            queues = self.consume_queues.pop(topic, None)
            if not queues:
                continue
            for cq in queues.values():
                cq.destroy()
                self.commitlog.remove_queue_from_topic_queue_table(cq.topic, cq.queue_id)
                n += 1
            try:
                os.rmdir(os.path.join(self.config.consume_queue_dir, topic))
            except OSError:
                pass
        return n

    def clean_unused_topic(self, keep: Iterable[str]) -> int:
        """cleanUnusedTopic: drop queues of topics not in ``keep`` (system queues stay)."""
        keep_set = set(keep) | {MixAll.RMQ_SYS_SCHEDULE_TOPIC, MixAll.RMQ_SYS_TRANS_OP_HALF_TOPIC}
        gone = [t for t in self.consume_queues if t not in keep_set and not t.startswith(MixAll.LMQ_PREFIX)]
        return self.delete_topics(gone)

    def clean_expired_consumer_queue(self) -> list[tuple[str, int]]:
        """Destroy queues whose every unit points below the CommitLog min offset."""
        min_offset = self.commitlog.min_offset
        gone: list[tuple[str, int]] = []
        for topic, queues in list(self.consume_queues.items()):
            if topic == MixAll.RMQ_SYS_SCHEDULE_TOPIC:
                continue
            for qid, cq in list(queues.items()):
                last = cq.get_last_offset()
                if last != -1 and last < min_offset:
                    self.commitlog.remove_queue_from_topic_queue_table(topic, qid)
                    cq.destroy()
                    del queues[qid]
                    gone.append((topic, qid))
            if not queues:
                del self.consume_queues[topic]
        return gone

    def _space_check(self) -> tuple[bool, bool]:
        """(space to delete, clean immediately) as CleanCommitLogService.isSpaceToDelete, which also
        marks the disk full past diskSpaceWarningLevelRatio (puts refused) and OK again below it."""
        ratio = self.config.disk_max_used_space_ratio / 100.0
        flags = self.running_flags
        full = immediately = False
        for kind, path in (("physic", self.config.commit_log_dir), ("logics", self.config.consume_queue_dir)):
            used = self._disk_usage(path)
            where = f", storePathPhysic={path}" if kind == "physic" else ""
            if used > DISK_SPACE_WARNING_LEVEL_RATIO:
                if flags.set_disk_full(True):  # said once, as RunningFlags.getAndMakeDiskFull
                    log.error("%s disk maybe full soon %s, so mark disk full%s", kind, used, where)
                immediately = True
            elif used > DISK_SPACE_CLEAN_FORCIBLY_RATIO:
                immediately = True
            elif not self._allocation_failed and flags.set_disk_full(False):
                log.info("%s disk space OK %s, so mark disk ok%s", kind, used, where)
            if used < 0 or used > ratio:
                log.info("%s disk maybe full soon, so reclaim space, %s%s", kind, used, where)
                full = True
        self._sync_flags()
        return full, immediately

    def _deletable_below(self) -> int:
        """CommitLog bytes below this may go: flushed, and dispatched to the ConsumeQueues and index
        (so none of them is left pointing into a deleted file that recovery would still need)."""
        limit = self.commitlog.flushed_where
        for cq in self._all_queues():
            if cq.failed_from is not None:
                limit = min(limit, cq.failed_from)
        if self.index is not None and self.index.failed_from is not None:
            limit = min(limit, self.index.failed_from)
        return limit

    def clean_expired(self, now_ms: int | None = None, *, force: bool = False) -> CleanResult:
        """One retention pass (CleanCommitLogService + CleanConsumeQueueService).

        CommitLog files (never the current one) are deleted once older than
        fileReservedTime hours, when the local hour is in deleteWhen, the disk is
        fuller than diskMaxUsedSpaceRatio, or ``force``; then ConsumeQueue and index
        files wholly below the new CommitLog min offset go too.
        """
        now = self.clock() if now_ms is None else now_ms
        out = CleanResult()
        cfg = self.config
        time_up = is_it_time_to_do(cfg.delete_when, now)
        space_full, immediately = self._space_check()
        if time_up or space_full or force:
            at_once = cfg.clean_file_forcibly_enable and immediately
            if self.pending:
                self.settle()
            out.commitlog = self.commitlog.delete_expired_files(
                cfg.file_reserved_time * 3_600_000, now, clean_immediately=at_once, keep_from=self._deletable_below()
            )
        min_offset = self.commitlog.min_offset
        if min_offset > self._last_physical_min_offset:
            self._last_physical_min_offset = min_offset
            for cq in self._all_queues():
                out.consume_queue.extend(cq.delete_expired_file(min_offset))
            if self.index is not None:
                out.index = self.index.delete_expired_file(min_offset)
        return out
