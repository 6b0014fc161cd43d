"""The ``checkpoint`` file: store timestamps of what was last flushed.

Three longs at the head of one 4 KiB page (layout in codecs.store_records): the
store time of the last flushed CommitLog record, ConsumeQueue unit and full
IndexFile. Abnormal recovery starts from the CommitLog file whose first record is
older than these (less 3 s), and drops index files newer than the index stamp.
"""

from __future__ import annotations

import os

from ..codecs import store_records as sr

__all__ = ["StoreCheckpoint"]


class StoreCheckpoint:
    """Mutable in-memory stamps, written to the file by :meth:`flush`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
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

    def flush(self) -> None:
        """Write the page and force it to disk (Java maps it and calls force())."""
        data = sr.build_checkpoint(self.snapshot())
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, data, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
