"""The load balancer keys of Pulsar's broker.conf (names and defaults of Pulsar 3.0), embedded
in BrokerConfig. Interval keys in minutes take fractions here (tests use seconds)."""

from __future__ import annotations

from dataclasses import dataclass, field

from bookkeeper.config import conf_key

RANGE_EQUALLY_DIVIDE = "range_equally_divide"
TOPIC_COUNT_EQUALLY_DIVIDE = "topic_count_equally_divide"
SPLIT_ALGORITHMS = (RANGE_EQUALLY_DIVIDE, TOPIC_COUNT_EQUALLY_DIVIDE)


@dataclass(frozen=True)
class LoadBalancerConfig:
    report_update_threshold_percentage: float = field(
        default=10.0, metadata=conf_key("loadBalancerReportUpdateThresholdPercentage"))
    report_update_max_interval_minutes: float = field(
        default=15.0, metadata=conf_key("loadBalancerReportUpdateMaxIntervalMinutes"))
    report_update_min_interval_millis: int = field(
        default=5000, metadata=conf_key("loadBalancerReportUpdateMinIntervalMillis"))
    resource_quota_update_interval_minutes: float = field(
        default=15.0, metadata=conf_key("loadBalancerResourceQuotaUpdateIntervalMinutes"))
    auto_bundle_split_enabled: bool = field(default=True, metadata=conf_key("loadBalancerAutoBundleSplitEnabled"))
    auto_unload_split_bundles_enabled: bool = field(
        default=True, metadata=conf_key("loadBalancerAutoUnloadSplitBundlesEnabled"))
    namespace_bundle_max_topics: int = field(default=1000, metadata=conf_key("loadBalancerNamespaceBundleMaxTopics"))
    namespace_bundle_max_sessions: int = field(
        default=1000, metadata=conf_key("loadBalancerNamespaceBundleMaxSessions"))
    namespace_bundle_max_msg_rate: float = field(
        default=30000.0, metadata=conf_key("loadBalancerNamespaceBundleMaxMsgRate"))
    namespace_bundle_max_bandwidth_mbytes: float = field(
        default=100.0, metadata=conf_key("loadBalancerNamespaceBundleMaxBandwidthMbytes"))
    namespace_maximum_bundles: int = field(default=128, metadata=conf_key("loadBalancerNamespaceMaximumBundles"))
    split_interval_minutes: float = field(default=1.0, metadata=conf_key("loadBalancerSplitIntervalMinutes"))
    default_split_algorithm: str = field(
        default=RANGE_EQUALLY_DIVIDE, metadata=conf_key("defaultNamespaceBundleSplitAlgorithm"))
    shedding_enabled: bool = field(default=True, metadata=conf_key("loadBalancerSheddingEnabled"))
    shedding_interval_minutes: float = field(default=1.0, metadata=conf_key("loadBalancerSheddingIntervalMinutes"))
    shedding_grace_period_minutes: float = field(
        default=30.0, metadata=conf_key("loadBalancerSheddingGracePeriodMinutes"))
    threshold_shedder_percentage: float = field(
        default=10.0, metadata=conf_key("loadBalancerBrokerThresholdShedderPercentage"))
    history_resource_percentage: float = field(
        default=0.9, metadata=conf_key("loadBalancerHistoryResourcePercentage"))
    bundle_unload_min_throughput_threshold_mbytes: float = field(
        default=10.0, metadata=conf_key("loadBalancerBundleUnloadMinThroughputThreshold"))
    overloaded_threshold_percentage: float = field(
        default=85.0, metadata=conf_key("loadBalancerBrokerOverloadedThresholdPercentage"))
    cpu_weight: float = field(default=1.0, metadata=conf_key("loadBalancerCPUResourceWeight"))
    memory_weight: float = field(default=1.0, metadata=conf_key("loadBalancerMemoryResourceWeight"))
    direct_memory_weight: float = field(default=1.0, metadata=conf_key("loadBalancerDirectMemoryResourceWeight"))
    bandwidth_in_weight: float = field(default=1.0, metadata=conf_key("loadBalancerBandwithInResourceWeight"))
    bandwidth_out_weight: float = field(default=1.0, metadata=conf_key("loadBalancerBandwithOutResourceWeight"))
    #: 0 (Pulsar: unset): no link speed known, so bandwidth counts for nothing.
    nic_speed_gbps: float = field(default=0.0, metadata=conf_key("loadBalancerOverrideBrokerNicSpeedGbps"))

    @property
    def weights(self) -> tuple[float, float, float, float, float]:
        """cpu, memory, directMemory, bandwidthIn, bandwidthOut."""
        return (self.cpu_weight, self.memory_weight, self.direct_memory_weight,
                self.bandwidth_in_weight, self.bandwidth_out_weight)
