"""Bookie settings (bookkeeper.conf names), independent of the layers above."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BookieConfig:
    #: journalDirectory: where journal files live.
    journal_dir: Path
    #: journalSyncData: fsync each group before acknowledging its adds.
    sync_data: bool = True
    #: journalMaxGroupWaitMSec: longest the first add of a group waits for company.
    max_group_wait_ms: float = 1.0
    #: journalBufferedWritesThreshold: commit a group at once past this many bytes.
    buffered_writes_threshold: int = 512 * 1024
    #: journalMaxSizeMB (in bytes): rotate to a new journal file past this size.
    journal_max_file_size: int = 512 * 1024 * 1024
    #: journalPreAllocSizeMB (in bytes): zero-filled ahead of the writes, so fsyncs need not
    #: grow the file. 0 turns it off.
    journal_preallocation_size: int = 4 * 1024 * 1024
    #: readThreads: threads serving reads from disk.
    read_threads: int = 4
