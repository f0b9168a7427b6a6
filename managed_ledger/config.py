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
    #: In this slice entries are read back from the journal files, and a file is reclaimed
    #: once every ledger in it is deleted, so smaller files give disk space back sooner.
    journal_max_size_mb: float = 256.0
