"""Broker configuration under Pulsar's standalone.conf key names, so users can reuse their files."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from bookkeeper.config import conf_key
from managed_ledger.config import StorageConfig
from server.loadbalance.config import LoadBalancerConfig
from server.security.config import SecurityConfig

from .config_rules import check, known_keys, split_names, unknown_key_warning

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class BrokerConfig:
    """Every field carries the standalone.conf key it is read from (metadata "key")."""

    #: An empty value in the file turns the plain port off (0), as in Pulsar (e.g. TLS only).
    broker_service_port: int = field(default=6650, metadata={**conf_key("brokerServicePort"), "empty": 0})
    web_service_port: int = field(default=8080, metadata={**conf_key("webServicePort"), "empty": 0})
    #: 0 (Pulsar: unset): no TLS port.
    broker_service_port_tls: int = field(default=0, metadata=conf_key("brokerServicePortTls"))
    web_service_port_tls: int = field(default=0, metadata=conf_key("webServicePortTls"))
    #: (pulsard's own key) the web console at / and /console/ on the web ports (server/console/).
    web_console_enabled: bool = field(default=True, metadata=conf_key("pulsardWebConsoleEnabled"))
    bind_address: str = field(default="127.0.0.1", metadata=conf_key("bindAddress"))
    advertised_address: str = field(default="", metadata=conf_key("advertisedAddress"))
    #: `name:url` entries, comma-separated (server/advertised_listeners.py reads them).
    advertised_listeners: str = field(default="", metadata=conf_key("advertisedListeners"))
    internal_listener_name: str = field(default="", metadata=conf_key("internalListenerName"))
    cluster_name: str = field(default="standalone", metadata=conf_key("clusterName"))
    #: cluster mode: the bundles (units of ownership) of every namespace
    default_number_of_namespace_bundles: int = field(
        default=4, metadata=conf_key("defaultNumberOfNamespaceBundles"))
    max_message_size: int = field(default=5 * 1024 * 1024, metadata=conf_key("maxMessageSize"))
    keep_alive_interval_seconds: int = field(default=30, metadata=conf_key("keepAliveIntervalSeconds"))
    allow_auto_topic_creation: bool = field(default=True, metadata=conf_key("allowAutoTopicCreation"))
    allow_auto_topic_creation_type: str = field(
        default="non-partitioned", metadata=conf_key("allowAutoTopicCreationType"))
    allow_auto_subscription_creation: bool = field(
        default=True, metadata=conf_key("allowAutoSubscriptionCreation"))
    default_num_partitions: int = field(default=1, metadata=conf_key("defaultNumPartitions"))
    batch_index_ack_enabled: bool = field(
        default=False, metadata=conf_key("acknowledgmentAtBatchIndexLevelEnabled"))
    broker_deduplication_enabled: bool = field(default=False, metadata=conf_key("brokerDeduplicationEnabled"))
    broker_deduplication_entries_interval: int = field(
        default=1000, metadata=conf_key("brokerDeduplicationEntriesInterval"))
    broker_deduplication_max_number_of_producers: int = field(
        default=10000, metadata=conf_key("brokerDeduplicationMaxNumberOfProducers"))
    #: 0 = no limit (Pulsar's defaults); namespace and topic policies override them.
    max_producers_per_topic: int = field(default=0, metadata=conf_key("maxProducersPerTopic"))
    max_consumers_per_topic: int = field(default=0, metadata=conf_key("maxConsumersPerTopic"))
    max_consumers_per_subscription: int = field(default=0, metadata=conf_key("maxConsumersPerSubscription"))
    max_subscriptions_per_topic: int = field(default=0, metadata=conf_key("maxSubscriptionsPerTopic"))
    #: Comma-separated subscription types a subscribe may use (see enabled_subscription_types).
    subscription_types_enabled: str = field(
        default="Exclusive,Shared,Failover,Key_Shared", metadata=conf_key("subscriptionTypesEnabled"))
    #: a deduplicated topic's state is also snapshotted this long after the last snapshot
    #: (0: by entries only), checked every brokerDeduplicationSnapshotFrequencyInSeconds.
    broker_deduplication_snapshot_interval_seconds: int = field(
        default=120, metadata=conf_key("brokerDeduplicationSnapshotIntervalSeconds"))
    broker_deduplication_snapshot_frequency_in_seconds: int = field(
        default=120, metadata=conf_key("brokerDeduplicationSnapshotFrequencyInSeconds"))
    max_unacked_messages_per_consumer: int = field(
        default=50000, metadata=conf_key("maxUnackedMessagesPerConsumer"))
    max_unacked_messages_per_subscription: int = field(
        default=200000, metadata=conf_key("maxUnackedMessagesPerSubscription"))
    delayed_delivery_enabled: bool = field(default=True, metadata=conf_key("delayedDeliveryEnabled"))
    delayed_delivery_tick_time_millis: int = field(
        default=1000, metadata=conf_key("delayedDeliveryTickTimeMillis"))
    active_consumer_failover_delay_time_millis: int = field(
        default=1000, metadata=conf_key("activeConsumerFailoverDelayTimeMillis"))
    dispatcher_max_read_batch_size: int = field(default=100, metadata=conf_key("dispatcherMaxReadBatchSize"))
    dispatcher_max_read_size_bytes: int = field(
        default=5 * 1024 * 1024, metadata=conf_key("dispatcherMaxReadSizeBytes"))
    #: a failed read is retried after the initial time, doubling up to the max; a mandatory stop
    #: above 0 guarantees a retry that long after the first failure (Pulsar's keys and defaults).
    dispatcher_read_failure_backoff_initial_time_in_ms: int = field(
        default=15000, metadata=conf_key("dispatcherReadFailureBackoffInitialTimeInMs"))
    dispatcher_read_failure_backoff_max_time_in_ms: int = field(
        default=60000, metadata=conf_key("dispatcherReadFailureBackoffMaxTimeInMs"))
    dispatcher_read_failure_backoff_mandatory_stop_time_in_ms: int = field(
        default=0, metadata=conf_key("dispatcherReadFailureBackoffMandatoryStopTimeInMs"))
    #: permits count messages, not entries, when sizing reads and sending (see ReadLimits).
    precise_dispatcher_flow_control: bool = field(
        default=False, metadata=conf_key("preciseDispatcherFlowControl"))
    stats_update_frequency_in_secs: int = field(default=60, metadata=conf_key("statsUpdateFrequencyInSecs"))
    #: False: /metrics sums the topic metrics per namespace (no topic or subscription label),
    #: as Pulsar does; what a broker with tens of thousands of topics wants.
    expose_topic_level_metrics_in_prometheus: bool = field(
        default=True, metadata=conf_key("exposeTopicLevelMetricsInPrometheus"))
    #: Rate limits where no topic or namespace policy sets one (0 = none), per topic, per
    #: subscription, per consumer and over the broker (server/policies/rate_limits.py).
    max_publish_rate_per_topic_in_messages: int = field(
        default=0, metadata=conf_key("maxPublishRatePerTopicInMessages"))
    max_publish_rate_per_topic_in_bytes: int = field(default=0, metadata=conf_key("maxPublishRatePerTopicInBytes"))
    #: true: what a topic published past its rate in one second is paid back by the next ones;
    #: false (Pulsar's default): each second starts afresh.
    precise_topic_publish_rate_limiter_enable: bool = field(
        default=False, metadata=conf_key("preciseTopicPublishRateLimiterEnable"))
    broker_publisher_throttling_max_message_rate: int = field(
        default=0, metadata=conf_key("brokerPublisherThrottlingMaxMessageRate"))
    broker_publisher_throttling_max_byte_rate: int = field(
        default=0, metadata=conf_key("brokerPublisherThrottlingMaxByteRate"))
    dispatch_throttling_rate_per_topic_in_msg: int = field(
        default=0, metadata=conf_key("dispatchThrottlingRatePerTopicInMsg"))
    dispatch_throttling_rate_per_topic_in_byte: int = field(
        default=0, metadata=conf_key("dispatchThrottlingRatePerTopicInByte"))
    dispatch_throttling_rate_per_subscription_in_msg: int = field(
        default=0, metadata=conf_key("dispatchThrottlingRatePerSubscriptionInMsg"))
    dispatch_throttling_rate_per_subscription_in_byte: int = field(
        default=0, metadata=conf_key("dispatchThrottlingRatePerSubscriptionInByte"))
    subscribe_throttling_rate_per_consumer: int = field(
        default=0, metadata=conf_key("subscribeThrottlingRatePerConsumer"))
    subscribe_rate_period_per_consumer_in_second: int = field(
        default=30, metadata=conf_key("subscribeRatePeriodPerConsumerInSecond"))
    subscription_key_shared_use_consistent_hashing: bool = field(
        default=False, metadata=conf_key("subscriptionKeySharedUseConsistentHashing"))
    subscription_key_shared_consistent_hashing_replica_points: int = field(
        default=100, metadata=conf_key("subscriptionKeySharedConsistentHashingReplicaPoints"))
    key_shared_look_ahead_msg_in_replay_threshold_per_consumer: int = field(
        default=2000, metadata=conf_key("keySharedLookAheadMsgInReplayThresholdPerConsumer"))
    key_shared_look_ahead_msg_in_replay_threshold_per_subscription: int = field(
        default=20000, metadata=conf_key("keySharedLookAheadMsgInReplayThresholdPerSubscription"))
    #: Transactions (server/transactions/): off by default, as in Pulsar. On, the coordinators'
    #: assign topic gets its partitions (1 standalone, 16 in a cluster, as Pulsar's standalone
    #: and initialize-cluster-metadata make), each one a transaction coordinator.
    transaction_coordinator_enabled: bool = field(default=False, metadata=conf_key("transactionCoordinatorEnabled"))
    #: Open transactions one coordinator holds at most (0 = no limit).
    max_active_transactions_per_coordinator: int = field(
        default=0, metadata=conf_key("maxActiveTransactionsPerCoordinator"))
    #: How long a coordinator waits for one participant to end a transaction before it retries.
    transaction_buffer_client_operation_timeout_in_mills: int = field(
        default=3000, metadata=conf_key("transactionBufferClientOperationTimeoutInMills"))
    #: A topic's transaction buffer snapshot (server/transactions/buffer/) is taken after this
    #: many moves of its max-read position, and at most this often otherwise.
    transaction_buffer_snapshot_max_transaction_count: int = field(
        default=1000, metadata=conf_key("transactionBufferSnapshotMaxTransactionCount"))
    transaction_buffer_snapshot_min_time_in_millis: int = field(
        default=5000, metadata=conf_key("transactionBufferSnapshotMinTimeInMillis"))
    #: dataDir, the managedLedger* keys, default retention and the bookie's bookkeeper.conf keys.
    storage: StorageConfig = field(
        default_factory=lambda: StorageConfig(Path("./data"), min_ledger_rollover_minutes=10.0))
    retention_check_interval_in_seconds: float = field(
        default=120.0, metadata=conf_key("retentionCheckIntervalInSeconds"))
    backlog_quota_check_enabled: bool = field(default=True, metadata=conf_key("backlogQuotaCheckEnabled"))
    backlog_quota_check_interval_in_seconds: float = field(
        default=60.0, metadata=conf_key("backlogQuotaCheckIntervalInSeconds"))
    backlog_quota_default_limit_bytes: int = field(
        default=-1, metadata=conf_key("backlogQuotaDefaultLimitBytes"))
    backlog_quota_default_limit_second: int = field(
        default=-1, metadata=conf_key("backlogQuotaDefaultLimitSecond"))
    backlog_quota_default_retention_policy: str = field(
        default="producer_request_hold", metadata=conf_key("backlogQuotaDefaultRetentionPolicy"))
    broker_service_compaction_threshold_in_bytes: int = field(
        default=0, metadata=conf_key("brokerServiceCompactionThresholdInBytes"))
    broker_service_compaction_monitor_interval_in_seconds: float = field(
        default=60.0, metadata=conf_key("brokerServiceCompactionMonitorIntervalInSeconds"))
    topic_compaction_retain_null_key: bool = field(
        default=False, metadata=conf_key("topicCompactionRetainNullKey"))
    #: Bytes of SENDs awaiting their receipts, over the broker, before publishers stop being read.
    max_message_publish_buffer_size: int = field(
        default=64 * 1024 * 1024, metadata=conf_key("maxMessagePublishBufferSizeInMB", 1024 * 1024))
    broker_delete_inactive_topics_enabled: bool = field(
        default=True, metadata=conf_key("brokerDeleteInactiveTopicsEnabled"))
    broker_delete_inactive_topics_frequency_seconds: float = field(
        default=60.0, metadata=conf_key("brokerDeleteInactiveTopicsFrequencySeconds"))
    broker_delete_inactive_topics_mode: str = field(
        default="delete_when_no_subscriptions", metadata=conf_key("brokerDeleteInactiveTopicsMode"))
    #: Unset (negative): the check frequency, as in Pulsar.
    broker_delete_inactive_topics_max_inactive_duration_seconds: float = field(
        default=-1.0, metadata=conf_key("brokerDeleteInactiveTopicsMaxInactiveDurationSeconds"))
    #: a durable subscription without consumers, inactive this long, is deleted (0: never;
    #: fractions allowed), checked every subscriptionExpiryCheckIntervalInMinutes (0: never).
    subscription_expiration_time_minutes: float = field(
        default=0.0, metadata=conf_key("subscriptionExpirationTimeMinutes"))
    subscription_expiry_check_interval_in_minutes: float = field(
        default=5.0, metadata=conf_key("subscriptionExpiryCheckIntervalInMinutes"))
    ttl_duration_default_in_seconds: int = field(default=0, metadata=conf_key("ttlDurationDefaultInSeconds"))
    message_expiry_check_interval_in_minutes: float = field(
        default=5.0, metadata=conf_key("messageExpiryCheckIntervalInMinutes"))
    #: The broker-wide default of server/schema_compatibility.py's strategies (Pulsar's FULL).
    schema_compatibility_strategy: str = field(default="FULL", metadata=conf_key("schemaCompatibilityStrategy"))
    #: TLS, authentication and authorization keys (server/security/).
    security: SecurityConfig = field(default_factory=SecurityConfig)
    #: cluster mode: the loadBalancer* keys (server/loadbalance/).
    load_balancer: LoadBalancerConfig = field(default_factory=LoadBalancerConfig)

    @property
    def max_frame_size(self) -> int:
        """Pulsar lets a frame exceed maxMessageSize by a 10 KiB padding for the command headers."""
        return self.max_message_size + 10 * 1024

    @property
    def enabled_subscription_types(self) -> tuple[str, ...]:
        return split_names(self.subscription_types_enabled)

    @property
    def service_url(self) -> str:
        return f"pulsar://{self.advertised_host}:{self.broker_service_port}"

    @property
    def service_url_tls(self) -> str | None:
        if not self.broker_service_port_tls:
            return None
        return f"pulsar+ssl://{self.advertised_host}:{self.broker_service_port_tls}"

    @property
    def advertised_host(self) -> str:
        host = self.advertised_address or self.bind_address
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1"
        return f"[{host}]" if ":" in host else host

    def with_settings(self, settings: dict[str, str]) -> BrokerConfig:
        """A copy with fields set from standalone.conf style key/value pairs: empty values are
        ignored (but for the keys an empty value turns off), unknown keys warned about (with the
        nearest known key), a value that is not allowed raises ValueError naming its key."""
        config = self
        for key, raw in settings.items():
            updated = _with_setting(config, key, raw)
            if updated is None:
                log.warning(unknown_key_warning(key, list(known_keys(self))))
            else:
                config = updated
        return config


def _with_setting(config: T, key: str, raw: str) -> T | None:
    """config with the field keyed ``key`` (its own or an embedded configuration's) read from
    raw; None when no field has that key."""
    for spec in dataclasses.fields(config):
        value = getattr(config, spec.name)
        if spec.metadata.get("key") == key:
            if raw == "":
                return dataclasses.replace(config, **{spec.name: spec.metadata["empty"]}) \
                    if "empty" in spec.metadata else config
            read = _read(key, raw, type(value), spec.metadata.get("scale", 1))
            check(key, read)
            return dataclasses.replace(config, **{spec.name: read})
        if dataclasses.is_dataclass(value):
            inner = _with_setting(value, key, raw)
            if inner is not None:
                return dataclasses.replace(config, **{spec.name: inner})
    return None


def _read(key: str, raw: str, kind: type, scale: int) -> object:
    """The value of a setting; scaled ones (megabytes in the file, bytes in use) allow fractions."""
    if scale == 1:
        return _convert(key, raw, kind)
    return kind(_convert(key, raw, float) * scale)


def _convert(key: str, raw: str, kind: type) -> object:
    try:
        if kind is bool:
            if raw.lower() not in ("true", "false"):
                raise ValueError(raw)
            return raw.lower() == "true"
        return kind(raw)
    except ValueError:
        raise ValueError(f"{key}: cannot read {raw!r} as {kind.__name__}") from None


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
