"""Bookie settings (bookkeeper.conf names), independent of the layers above."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BookieConfig:
    #: journalDirectory: where journal files live.
    journal_dir: Path
    #: ledgerDirectories: entry logs, the index and the lastMark (default: a "ledgers"
    #: directory beside the journal directory).
    ledger_dir: Path | None = None
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
    #: logSizeLimit (bytes): entry logs rotate past this size.
    entry_log_size_limit: int = 1024 * 1024 * 1024
    #: flushInterval (ms): how often a checkpoint flushes the write cache to the entry logs
    #: and moves the LastLogMark (which lets the journal behind it go).
    flush_interval_ms: int = 60_000
    #: dbStorage_writeCacheMaxSizeMb (in bytes): a checkpoint starts early past this much
    #: unflushed data.
    write_cache_max_size: int = 64 * 1024 * 1024
    #: gcWaitTime (ms): how often garbage collection looks for logs to remove or compact.
    gc_wait_time_ms: int = 60_000
    #: minorCompactionThreshold / minorCompactionInterval (s): compact logs under this live
    #: ratio this often (0 turns it off).
    minor_compaction_threshold: float = 0.2
    minor_compaction_interval_s: float = 3600.0
    #: majorCompactionThreshold / majorCompactionInterval (s).
    major_compaction_threshold: float = 0.5
    major_compaction_interval_s: float = 86400.0

    @property
    def ledger_directory(self) -> Path:
        return self.ledger_dir if self.ledger_dir is not None else self.journal_dir.parent / "ledgers"
