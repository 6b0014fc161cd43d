"""The ``checkpoint`` file: store timestamps of what was last flushed.

Three longs at the head of one 4 KiB page (layout in codecs.store_records): the
store time of the last flushed CommitLog record, ConsumeQueue unit and full
IndexFile. Abnormal recovery starts from the CommitLog file whose first record is
older than these (less 3 s), and drops index files newer than the index stamp.
"""

from __future__ import annotations

import logging
import os

from ..codecs import store_records as sr

log = logging.getLogger("rocketpy.store")

__all__ = ["StoreCheckpoint"]


class StoreCheckpoint:
    """Mutable in-memory stamps, written to the file by :meth:`flush`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        self._failing = False
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        if os.path.exists(path):
            with open(path, "rb") as f:
                data = f.read(24)
            if len(data) == 24:
                cp = sr.parse_checkpoint(data)
                self.physic_msg_timestamp = cp.physic_msg_timestamp
                self.logics_msg_timestamp = cp.logics_msg_timestamp
                self.index_msg_timestamp = cp.index_msg_timestamp

    def snapshot(self) -> sr.StoreCheckpoint:
        return sr.StoreCheckpoint(self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp)

    @property
    def min_timestamp(self) -> int:
        return self.snapshot().min_timestamp

    @property
    def min_timestamp_index(self) -> int:
        return self.snapshot().min_timestamp_index

    def flush(self) -> bool:
        """Write the page and force it to disk (Java maps it and calls force()); False when the disk
        refused (logged once a streak: the old stamps stay, recovery just starts earlier)."""
        data = sr.build_checkpoint(self.snapshot())
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, data, 0)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            if not self._failing:
                log.error("cannot write the checkpoint %s: %s", self.path, exc.strerror or exc)
            self._failing = True
            return False
        if self._failing:
            log.info("checkpoint %s written again", self.path)
        self._failing = False
        return True
