"""Storage settings, each under the standalone.conf key it is read from (field metadata "key");
the bookie's own settings are embedded as they are."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bookkeeper.config import BookieConfig, BookKeeperClientConfig, conf_key

from .interned import interned


@dataclass(frozen=True)
class StorageConfig:
    #: metadata/ (the metadata store) and bookie/ (journal, entry logs, index) live here.
    data_dir: Path = field(metadata=conf_key("dataDir"))
    #: roll over to a new ledger after this many entries.
    max_entries_per_ledger: int = field(default=50000, metadata=conf_key("managedLedgerMaxEntriesPerLedger"))
    max_size_per_ledger_mb: int = field(default=2048, metadata=conf_key("managedLedgerMaxSizePerLedgerMbytes"))
    #: a ledger is not rolled over (full or not) before it is this old (fractions allowed).
    min_ledger_rollover_minutes: float = field(
        default=0.0, metadata=conf_key("managedLedgerMinLedgerRolloverTimeMinutes"))
    #: a ledger holding entries is rolled over once this old, so retention can act on a topic
    #: that stopped receiving.
    max_ledger_rollover_minutes: float = field(
        default=240.0, metadata=conf_key("managedLedgerMaxLedgerRolloverTimeMinutes"))
    #: retention of consumed data until the broker applies the namespace's policy (see
    #: retention.py for the -1/0/>0 table).
    retention_time_minutes: int = field(default=0, metadata=conf_key("defaultRetentionTimeInMinutes"))
    retention_size_mb: int = field(default=0, metadata=conf_key("defaultRetentionSizeInMB"))
    #: (pulsard's own key) how often dirty cursor state is persisted.
    cursor_flush_interval_ms: int = field(default=200, metadata=conf_key("managedLedgerCursorFlushIntervalMs"))
    #: most memory kept for tailing reads (see entry_cache.py). A consumer that keeps up reads
    #: entries a few ms old; 32 MiB is more than half a second of the fastest batched flood
    #: here, and entries are the same objects as the write cache's, so a budget above that
    #: cache's only adds resident memory under load.
    cache_size_mb: int = field(default=32, metadata=conf_key("managedLedgerCacheSizeMB"))
    #: cached entries older than this leave the cache (a reader that keeps up read them long
    #: before); checked this often while the cache holds entries.
    cache_eviction_time_threshold_ms: int = field(
        default=1000, metadata=conf_key("managedLedgerCacheEvictionTimeThresholdMillis"))
    cache_eviction_interval_ms: int = field(
        default=10, metadata=conf_key("managedLedgerCacheEvictionIntervalMs"))
    #: a cursor this many entries or more behind the last one does not count as active: adds
    #: are cached for active cursors only.
    cursor_backlogged_threshold: int = field(
        default=1000, metadata=conf_key("managedLedgerCursorBackloggedThreshold"))
    #: where managed-ledger and cursor state lives: empty for the embedded store
    #: (<dataDir>/metadata), or zk:host:port[,host:port][/chroot] for ZooKeeper.
    metadata_store_url: str = field(default="", metadata=conf_key("metadataStoreUrl"))
    #: the store of tenants, namespaces and policies; empty means the same as metadataStoreUrl.
    configuration_metadata_store_url: str = field(
        default="", metadata=conf_key("configurationMetadataStoreUrl"))
    #: ZooKeeper session timeout: how long a dead broker keeps its ephemeral nodes (its
    #: bundles); ZooKeeper bounds it to 2..20 ticks.
    metadata_store_session_timeout_ms: int = field(
        default=10000, metadata=conf_key("metadataStoreSessionTimeoutMillis"))
    #: ledgers on a BookKeeper cluster (bookkeeperMetadataServiceUri set): E bookies per
    #: ledger, Qw copies of each entry, acknowledged after Qa.
    ensemble_size: int = field(default=2, metadata=conf_key("managedLedgerDefaultEnsembleSize"))
    write_quorum: int = field(default=2, metadata=conf_key("managedLedgerDefaultWriteQuorum"))
    ack_quorum: int = field(default=2, metadata=conf_key("managedLedgerDefaultAckQuorum"))
    #: a cursor persists its mark-delete position at most this often per second (0: no limit);
    #: acknowledgements in between are persisted when the rate allows (see cursor.py).
    mark_delete_rate_limit: float = field(default=1.0, metadata=conf_key("managedLedgerDefaultMarkDeleteRateLimit"))
    #: the longest a cursor's acknowledged state waits to be persisted, whatever the rate limit
    #: (Pulsar flushes the cursors its rate limiter held back this often).
    cursor_position_flush_seconds: int = field(
        default=60, metadata=conf_key("managedLedgerCursorPositionFlushSeconds"))
    #: a cursor skips (and acknowledges) an entry none of whose copies can be read, instead of
    #: retrying it until a bookie holding it is back (Pulsar's key and default).
    auto_skip_non_recoverable_data: bool = field(
        default=False, metadata=conf_key("autoSkipNonRecoverableData"))
    #: (pulsard's own keys) cluster mode: how often each broker looks for orphan ledgers and
    #: deletes them (0: never), and how old a ledger must be to count (orphan_ledgers.py).
    orphan_ledger_check_interval_minutes: float = field(
        default=60.0, metadata=conf_key("pulsardOrphanLedgerCheckIntervalMinutes"))
    orphan_ledger_min_age_minutes: float = field(
        default=60.0, metadata=conf_key("pulsardOrphanLedgerMinAgeMinutes"))
    bookie: BookieConfig = BookieConfig()
    bookkeeper_client: BookKeeperClientConfig = BookKeeperClientConfig()

    @property
    def uses_bookkeeper_cluster(self) -> bool:
        return bool(self.bookkeeper_client.metadata_service_uri)

    @property
    def embedded(self) -> bool:
        """The embedded bookie and metadata store: one broker, which may sweep orphan ledgers
        itself while nothing is open (at start after a crash, at a clean stop)."""
        return not self.uses_bookkeeper_cluster and not self.metadata_store_url

    @property
    def default_persistence(self) -> PersistencePolicy:
        """The managedLedgerDefault* keys: what a topic gets without a persistence policy."""
        return interned(PersistencePolicy(self.ensemble_size, self.write_quorum, self.ack_quorum,
                                          self.mark_delete_rate_limit))


@dataclass(frozen=True, slots=True)
class PersistencePolicy:
    """How one managed ledger stores its data (Pulsar's PersistencePolicies): each new ledger on
    E bookies, Qw copies of each entry, acknowledged after Qa (a BookKeeper cluster acts on
    them; the embedded bookie keeps one copy), and its cursors' mark-delete persists per second
    at most (0: no limit)."""

    ensemble_size: int
    write_quorum: int
    ack_quorum: int
    mark_delete_rate: float
