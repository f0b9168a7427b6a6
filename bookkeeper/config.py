"""Bookie settings, each under the bookkeeper.conf key it is read from (field metadata "key",
times "scale" where the file counts in megabytes and the bookie in bytes)."""

from __future__ import annotations

from dataclasses import dataclass, field

MB = 1024 * 1024
#: metadataStoreUrl of a ZooKeeper store (Pulsar's `zk:host:port[/chroot]`).
ZK_URL_PREFIX = "zk:"


def conf_key(key: str, scale: int = 1) -> dict[str, object]:
    """Field metadata naming the configuration-file key of a setting."""
    return {"key": key, "scale": scale}


@dataclass(frozen=True)
class BookieConfig:
    """How the bookie commits, checkpoints and compacts; where is the caller's choice."""

    #: fsync each group before acknowledging its adds (off trades durability for speed).
    sync_data: bool = field(default=True, metadata=conf_key("journalSyncData"))
    #: longest the first add of a group waits for company.
    max_group_wait_ms: float = field(default=1.0, metadata=conf_key("journalMaxGroupWaitMSec"))
    #: commit a group at once past this many bytes.
    buffered_writes_threshold: int = field(
        default=512 * 1024, metadata=conf_key("journalBufferedWritesThreshold"))
    #: rotate to a new journal file past this size; files wholly before the last checkpoint's
    #: mark are deleted.
    journal_max_file_size: int = field(default=256 * MB, metadata=conf_key("journalMaxSizeMB", MB))
    #: zero-filled ahead of the writes, so fsyncs need not grow the file. 0 turns it off.
    #: Small slices: the fsync that carries a slice's zeros pays for them (4 MiB was a
    #: 15-30 ms stall every 4 MiB of journal, the p99 of unbatched sends at 25k msg/s).
    journal_preallocation_size: int = field(
        default=MB // 4, metadata=conf_key("journalPreAllocSizeMB", MB))
    #: drop journal pages from the page cache once synced: they are read only by recovery,
    #: and new writes then reuse pages the kernel just freed instead of fresh memory.
    journal_remove_from_page_cache: bool = field(
        default=True, metadata=conf_key("journalRemoveFromPageCache"))
    #: threads serving reads from disk.
    read_threads: int = field(default=4, metadata=conf_key("numReadWorkerThreads"))
    #: entry logs rotate past this size.
    entry_log_size_limit: int = field(default=1024 * MB, metadata=conf_key("logSizeLimit"))
    #: an entry log being written is fdatasynced every this many bytes (0: only when a
    #: checkpoint completes). On one disk the journal's fsync waits for whatever entry-log
    #: data the filesystem commits with it: one sync of a whole 32 MiB write cache held a
    #: journal fsync 45 ms, the p99 of unbatched sends at a fixed rate. Pulsar's bookkeeper.conf
    #: ships 256 MiB; small steps suit a bookie whose journal shares the disk.
    flush_entry_log_bytes: int = field(default=MB, metadata=conf_key("flushEntrylogBytes"))
    #: how often a checkpoint flushes the write cache to the entry logs and moves the
    #: LastLogMark (which lets the journal behind it go).
    flush_interval_ms: int = field(default=60_000, metadata=conf_key("flushInterval"))
    #: a checkpoint starts early past this much unflushed data. Not above the broker's entry
    #: cache (managedLedgerCacheSizeMB): the unflushed entries are then the newest ones, which
    #: that cache holds anyway, and only a flush's swapped-out cache adds memory (the
    #: reference Pulsar of the benchmarks runs with 32 too).
    write_cache_max_size: int = field(
        default=32 * MB, metadata=conf_key("dbStorage_writeCacheMaxSizeMb", MB))
    #: how often garbage collection looks for logs to remove or compact.
    gc_wait_time_ms: int = field(default=60_000, metadata=conf_key("gcWaitTime"))
    #: compact logs under this live ratio this often, in seconds (0 turns it off).
    minor_compaction_threshold: float = field(default=0.2, metadata=conf_key("minorCompactionThreshold"))
    minor_compaction_interval_s: float = field(default=3600.0, metadata=conf_key("minorCompactionInterval"))
    major_compaction_threshold: float = field(default=0.5, metadata=conf_key("majorCompactionThreshold"))
    major_compaction_interval_s: float = field(default=86400.0, metadata=conf_key("majorCompactionInterval"))


@dataclass(frozen=True)
class BookKeeperClientConfig:
    """The client of a real BookKeeper cluster (used when its metadata service uri is set);
    keys as in Pulsar's broker.conf."""

    #: zk+hierarchical://host:port[;host:port]/ledgers; empty keeps the embedded bookie.
    metadata_service_uri: str = field(default="", metadata=conf_key("bookkeeperMetadataServiceUri"))
    #: an add or read not answered by a bookie in this time counts as a failure of that bookie.
    timeout_seconds: float = field(default=30.0, metadata=conf_key("bookkeeperClientTimeoutInSeconds"))
    #: ask the next replica of an entry when the first has not answered in this time
    #: (Pulsar's default 0 turns it off; here 0 means 1 s, reads always have a fallback).
    speculative_read_timeout_ms: int = field(
        default=1000, metadata=conf_key("bookkeeperClientSpeculativeReadTimeoutInMillis"))
    #: a writer idle this long after adds sends its LAC to its bookies (WRITE_LAC), so readers
    #: on other brokers see its last entry; 0 (Pulsar's default) never sends one.
    explicit_lac_interval_ms: int = field(
        default=0, metadata=conf_key("bookkeeperExplicitLacIntervalInMills"))
