"""Which bundles the leader takes off overloaded brokers: Pulsar's ThresholdShedder.

Each broker's usage is its busiest resource (weighted by the loadBalancer*ResourceWeight keys),
smoothed over the rounds (loadBalancerHistoryResourcePercentage of the past, the rest the new
report). A broker above the cluster's mean by more than loadBalancerBrokerThresholdShedderPercentage
sheds its busiest bundles (short-term throughput) until what it gives up covers the excess
(plus a 5 % margin) of its throughput, at least one bundle, none shed in the grace period.
Nothing is shed when that throughput is below loadBalancerBundleUnloadMinThroughputThreshold
(MB/s), nor from a broker with one bundle (a sole hot bundle is to be split, not moved).
"""

from __future__ import annotations

import logging

from .config import LoadBalancerConfig
from .load_data import LoadData

log = logging.getLogger(__name__)

MB = 1024 * 1024
MARGIN = 0.05


class ThresholdShedder:
    def __init__(self) -> None:
        self._usage: dict[str, float] = {}   # broker -> smoothed usage (fraction)
        self._sole_bundle_warned: set[str] = set()

    def find(self, data: LoadData, config: LoadBalancerConfig) -> dict[str, list[str]]:
        """broker -> the bundles to unload from it."""
        mean = self._mean_usage(data, config)
        if mean == 0:
            return {}
        threshold = config.threshold_shedder_percentage / 100.0
        selected: dict[str, list[str]] = {}
        for broker, load in data.brokers.items():
            usage = self._usage[broker]
            if usage < mean + threshold:
                self._sole_bundle_warned.discard(broker)
                continue
            to_offload = load.throughput * (usage - mean - threshold + MARGIN)
            if to_offload < config.bundle_unload_min_throughput_threshold_mbytes * MB:
                continue
            if len(load.bundles) <= 1:
                if broker not in self._sole_bundle_warned:
                    self._sole_bundle_warned.add(broker)
                    log.warning("broker %s is overloaded (%.0f %%) by its sole bundle: nothing to shed",
                                broker, usage * 100)
                continue
            log.info("shedding load of broker %s: usage %.0f %% > mean %.0f %% + %.0f %%; offloading at "
                     "least %.2f MB/s", broker, usage * 100, mean * 100, threshold * 100, to_offload / MB)
            hottest = sorted(((data.bundles[b].short.throughput, b) for b in load.bundles
                              if b in data.bundles and b not in data.recently_unloaded), reverse=True)
            marked = 0.0
            for throughput, bundle in hottest:
                if marked >= to_offload and broker in selected:
                    break
                selected.setdefault(broker, []).append(bundle)
                marked += throughput
        return selected

    def _mean_usage(self, data: LoadData, config: LoadBalancerConfig) -> float:
        history = config.history_resource_percentage
        usage: dict[str, float] = {}
        for broker, load in data.brokers.items():
            latest, past = load.max_usage(config.weights), self._usage.get(broker)
            usage[broker] = latest if past is None else past * history + (1 - history) * latest
        self._usage = usage   # brokers gone are forgotten
        return sum(self._usage.values()) / len(self._usage) if self._usage else 0.0
