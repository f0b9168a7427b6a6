"""This broker's topics by owned bundle: the NamespaceBundleStats of its load report and the
map `broker-stats/topics` answers (namespace -> bundle -> domain -> topic -> stats)."""

from __future__ import annotations

from typing import Any, Callable, Protocol

from server.loadbalance.load_data import BundleStats
from server.topics.topic_name import TopicName

from .bundles import Bundle
from .ownership import Ownership


class LiveTopic(Protocol):
    name: TopicName
    producers: Any
    subscriptions: dict[str, Any]
    stats: Any


class OwnedBundleStats:
    def __init__(self, topics: Callable[[], list[LiveTopic]], ownership: Ownership, window_s: float) -> None:
        """topics: the loaded topics (persistent and not); window_s: statsUpdateFrequencyInSecs."""
        self._topics = topics
        self._ownership = ownership
        self._window_s = window_s

    def by_bundle(self) -> dict[Bundle, list[Any]]:
        """Every owned bundle with its loaded topics (a topic of a bundle being given up or
        split elsewhere is left out)."""
        found: dict[Bundle, list[Any]] = {bundle: [] for bundle in self._ownership.owned()}
        for topic in self._topics():
            bundle = self._ownership.bundles.bundle_of(topic.name)
            if bundle in found:
                found[bundle].append(topic)
        return found

    def bundle_stats(self) -> dict[str, BundleStats]:
        stats: dict[str, BundleStats] = {}
        for bundle, topics in self.by_bundle().items():
            total = stats[str(bundle)] = BundleStats(topics=len(topics))
            for topic in topics:
                rates = topic.stats.rates(self._window_s)
                total.msgRateIn += rates.msg_rate_in
                total.msgThroughputIn += rates.msg_throughput_in
                total.msgRateOut += rates.msg_rate_out
                total.msgThroughputOut += rates.msg_throughput_out
                total.producerCount += len(topic.producers)
                total.consumerCount += sum(len(s.consumers) for s in topic.subscriptions.values())
        return stats
