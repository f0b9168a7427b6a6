"""Storage settings, named after Pulsar's standalone.conf keys they come from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StorageConfig:
    data_dir: Path
    #: journalSyncData: fsync before acknowledging an add (turning it off trades durability for speed).
    journal_sync_data: bool = True
    #: journalMaxGroupWaitMSec: longest an add waits for others to share its fsync.
    journal_max_group_wait_ms: float = 1.0
    #: journalBufferedWritesThreshold (bytes): a group is committed at once past this size.
    journal_buffered_writes_threshold: int = 512 * 1024
    #: managedLedgerMaxEntriesPerLedger: roll over to a new ledger after this many entries.
    max_entries_per_ledger: int = 50000
    #: managedLedgerMaxSizePerLedgerMbytes
    max_size_per_ledger_mb: int = 2048
    #: managedLedgerCursorFlushIntervalMs (pulsard's own): how often dirty cursor state is persisted.
    cursor_flush_interval_ms: int = 200
    #: managedLedgerCacheSizeMB: memory kept for tailing reads.
    cache_size_mb: int = 64
    #: journalMaxSizeMB (bookkeeper.conf): journal files rotate past this size (fractions allowed).
    #: Files wholly before the last checkpoint's mark are deleted.
    journal_max_size_mb: float = 256.0
    #: logSizeLimit (bookkeeper.conf, bytes): entry logs rotate past this size.
    log_size_limit: int = 1024 * 1024 * 1024
    #: flushInterval (bookkeeper.conf, ms): checkpoint period (write cache -> entry logs).
    flush_interval_ms: int = 60_000
    #: dbStorage_writeCacheMaxSizeMb (bookkeeper.conf): unflushed data that starts a checkpoint early.
    write_cache_max_size_mb: float = 64.0
    #: gcWaitTime (bookkeeper.conf, ms): garbage collection period.
    gc_wait_time_ms: int = 60_000
    #: minorCompactionThreshold / minorCompactionInterval (s) (bookkeeper.conf).
    minor_compaction_threshold: float = 0.2
    minor_compaction_interval_s: float = 3600.0
    #: majorCompactionThreshold / majorCompactionInterval (s) (bookkeeper.conf).
    major_compaction_threshold: float = 0.5
    major_compaction_interval_s: float = 86400.0
