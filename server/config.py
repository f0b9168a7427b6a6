"""Broker configuration under Pulsar's standalone.conf key names, so users can reuse their files."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path

from managed_ledger.config import StorageConfig

log = logging.getLogger(__name__)


@dataclass
class BrokerConfig:
    """Every field carries the standalone.conf key it is read from (metadata "key")."""

    broker_service_port: int = field(default=6650, metadata={"key": "brokerServicePort"})
    web_service_port: int = field(default=8080, metadata={"key": "webServicePort"})
    bind_address: str = field(default="127.0.0.1", metadata={"key": "bindAddress"})
    advertised_address: str = field(default="", metadata={"key": "advertisedAddress"})
    cluster_name: str = field(default="standalone", metadata={"key": "clusterName"})
    max_message_size: int = field(default=5 * 1024 * 1024, metadata={"key": "maxMessageSize"})
    keep_alive_interval_seconds: int = field(default=30, metadata={"key": "keepAliveIntervalSeconds"})
    allow_auto_topic_creation: bool = field(default=True, metadata={"key": "allowAutoTopicCreation"})
    allow_auto_topic_creation_type: str = field(
        default="non-partitioned", metadata={"key": "allowAutoTopicCreationType"}
    )
    default_num_partitions: int = field(default=1, metadata={"key": "defaultNumPartitions"})
    batch_index_ack_enabled: bool = field(
        default=False, metadata={"key": "acknowledgmentAtBatchIndexLevelEnabled"}
    )
    broker_deduplication_enabled: bool = field(default=False, metadata={"key": "brokerDeduplicationEnabled"})
    broker_deduplication_entries_interval: int = field(
        default=1000, metadata={"key": "brokerDeduplicationEntriesInterval"}
    )
    broker_deduplication_max_number_of_producers: int = field(
        default=10000, metadata={"key": "brokerDeduplicationMaxNumberOfProducers"}
    )
    max_unacked_messages_per_consumer: int = field(
        default=50000, metadata={"key": "maxUnackedMessagesPerConsumer"}
    )
    max_unacked_messages_per_subscription: int = field(
        default=200000, metadata={"key": "maxUnackedMessagesPerSubscription"}
    )
    delayed_delivery_enabled: bool = field(default=True, metadata={"key": "delayedDeliveryEnabled"})
    delayed_delivery_tick_time_millis: int = field(
        default=1000, metadata={"key": "delayedDeliveryTickTimeMillis"}
    )
    active_consumer_failover_delay_time_millis: int = field(
        default=1000, metadata={"key": "activeConsumerFailoverDelayTimeMillis"}
    )
    dispatcher_max_read_batch_size: int = field(default=100, metadata={"key": "dispatcherMaxReadBatchSize"})
    stats_update_frequency_in_secs: int = field(default=60, metadata={"key": "statsUpdateFrequencyInSecs"})
    subscription_key_shared_use_consistent_hashing: bool = field(
        default=False, metadata={"key": "subscriptionKeySharedUseConsistentHashing"}
    )
    subscription_key_shared_consistent_hashing_replica_points: int = field(
        default=100, metadata={"key": "subscriptionKeySharedConsistentHashingReplicaPoints"}
    )
    key_shared_look_ahead_msg_in_replay_threshold_per_consumer: int = field(
        default=2000, metadata={"key": "keySharedLookAheadMsgInReplayThresholdPerConsumer"}
    )
    key_shared_look_ahead_msg_in_replay_threshold_per_subscription: int = field(
        default=20000, metadata={"key": "keySharedLookAheadMsgInReplayThresholdPerSubscription"}
    )
    data_dir: str = field(default="./data", metadata={"key": "dataDir"})
    journal_sync_data: bool = field(default=True, metadata={"key": "journalSyncData"})
    journal_max_group_wait_ms: float = field(default=1.0, metadata={"key": "journalMaxGroupWaitMSec"})
    journal_buffered_writes_threshold: int = field(
        default=512 * 1024, metadata={"key": "journalBufferedWritesThreshold"}
    )
    journal_max_size_mb: float = field(default=256.0, metadata={"key": "journalMaxSizeMB"})
    log_size_limit: int = field(default=1024 * 1024 * 1024, metadata={"key": "logSizeLimit"})
    flush_interval_ms: int = field(default=60_000, metadata={"key": "flushInterval"})
    write_cache_max_size_mb: float = field(
        default=64.0, metadata={"key": "dbStorage_writeCacheMaxSizeMb"}
    )
    gc_wait_time_ms: int = field(default=60_000, metadata={"key": "gcWaitTime"})
    minor_compaction_threshold: float = field(default=0.2, metadata={"key": "minorCompactionThreshold"})
    minor_compaction_interval_s: float = field(default=3600.0, metadata={"key": "minorCompactionInterval"})
    major_compaction_threshold: float = field(default=0.5, metadata={"key": "majorCompactionThreshold"})
    major_compaction_interval_s: float = field(default=86400.0, metadata={"key": "majorCompactionInterval"})
    max_entries_per_ledger: int = field(default=50000, metadata={"key": "managedLedgerMaxEntriesPerLedger"})
    max_size_per_ledger_mb: int = field(default=2048, metadata={"key": "managedLedgerMaxSizePerLedgerMbytes"})
    cursor_flush_interval_ms: int = field(default=200, metadata={"key": "managedLedgerCursorFlushIntervalMs"})
    cache_size_mb: int = field(default=64, metadata={"key": "managedLedgerCacheSizeMB"})
    min_ledger_rollover_minutes: float = field(
        default=10.0, metadata={"key": "managedLedgerMinLedgerRolloverTimeMinutes"}
    )
    max_ledger_rollover_minutes: float = field(
        default=240.0, metadata={"key": "managedLedgerMaxLedgerRolloverTimeMinutes"}
    )
    default_retention_time_in_minutes: int = field(default=0, metadata={"key": "defaultRetentionTimeInMinutes"})
    default_retention_size_in_mb: int = field(default=0, metadata={"key": "defaultRetentionSizeInMB"})
    retention_check_interval_in_seconds: float = field(
        default=120.0, metadata={"key": "retentionCheckIntervalInSeconds"}
    )
    backlog_quota_check_enabled: bool = field(default=True, metadata={"key": "backlogQuotaCheckEnabled"})
    backlog_quota_check_interval_in_seconds: float = field(
        default=60.0, metadata={"key": "backlogQuotaCheckIntervalInSeconds"}
    )
    backlog_quota_default_limit_bytes: int = field(default=-1, metadata={"key": "backlogQuotaDefaultLimitBytes"})
    backlog_quota_default_limit_second: int = field(default=-1, metadata={"key": "backlogQuotaDefaultLimitSecond"})
    backlog_quota_default_retention_policy: str = field(
        default="producer_request_hold", metadata={"key": "backlogQuotaDefaultRetentionPolicy"}
    )
    broker_service_compaction_threshold_in_bytes: int = field(
        default=0, metadata={"key": "brokerServiceCompactionThresholdInBytes"}
    )
    broker_service_compaction_monitor_interval_in_seconds: float = field(
        default=60.0, metadata={"key": "brokerServiceCompactionMonitorIntervalInSeconds"}
    )
    ttl_duration_default_in_seconds: int = field(default=0, metadata={"key": "ttlDurationDefaultInSeconds"})
    message_expiry_check_interval_in_minutes: float = field(
        default=5.0, metadata={"key": "messageExpiryCheckIntervalInMinutes"}
    )

    @property
    def max_frame_size(self) -> int:
        """Pulsar lets a frame exceed maxMessageSize by a 10 KiB padding for the command headers."""
        return self.max_message_size + 10 * 1024

    @property
    def service_url(self) -> str:
        host = self.advertised_address or self.bind_address
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"pulsar://{host}:{self.broker_service_port}"

    def storage(self) -> StorageConfig:
        return StorageConfig(
            data_dir=Path(self.data_dir),
            journal_sync_data=self.journal_sync_data,
            journal_max_group_wait_ms=self.journal_max_group_wait_ms,
            journal_buffered_writes_threshold=self.journal_buffered_writes_threshold,
            journal_max_size_mb=self.journal_max_size_mb,
            log_size_limit=self.log_size_limit,
            flush_interval_ms=self.flush_interval_ms,
            write_cache_max_size_mb=self.write_cache_max_size_mb,
            gc_wait_time_ms=self.gc_wait_time_ms,
            minor_compaction_threshold=self.minor_compaction_threshold,
            minor_compaction_interval_s=self.minor_compaction_interval_s,
            major_compaction_threshold=self.major_compaction_threshold,
            major_compaction_interval_s=self.major_compaction_interval_s,
            max_entries_per_ledger=self.max_entries_per_ledger,
            max_size_per_ledger_mb=self.max_size_per_ledger_mb,
            cursor_flush_interval_ms=self.cursor_flush_interval_ms,
            cache_size_mb=self.cache_size_mb,
            min_ledger_rollover_minutes=self.min_ledger_rollover_minutes,
            max_ledger_rollover_minutes=self.max_ledger_rollover_minutes,
            retention_time_minutes=self.default_retention_time_in_minutes,
            retention_size_mb=self.default_retention_size_in_mb,
        )

    def apply(self, settings: dict[str, str]) -> None:
        """Set fields from standalone.conf style key/value pairs; unknown keys are ignored."""
        by_key = {f.metadata["key"]: f for f in dataclasses.fields(self)}
        for key, raw in settings.items():
            spec = by_key.get(key)
            if spec is None:
                log.debug("ignoring unknown configuration key %s", key)
                continue
            if raw == "":
                continue
            setattr(self, spec.name, _convert(key, raw, type(getattr(self, spec.name))))


def _convert(key: str, raw: str, kind: type) -> object:
    try:
        if kind is bool:
            if raw.lower() not in ("true", "false"):
                raise ValueError(raw)
            return raw.lower() == "true"
        return kind(raw)
    except ValueError:
        raise ValueError(f"configuration key {key}: cannot read {raw!r} as {kind.__name__}") from None


def read_conf_file(path: Path) -> dict[str, str]:
    """Parse a Java properties style file (key=value, # comments), as Pulsar's conf files are."""
    settings: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, sep, value = line.partition("=")
        if sep:
            settings[key.strip()] = value.strip()
    return settings
