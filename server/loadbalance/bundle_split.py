"""Which bundles the leader splits, and where a bundle is cut (Pulsar's BundleSplitterTask and
its split algorithms).

A bundle with two topics or more is split when its owner reports more topics than
loadBalancerNamespaceBundleMaxTopics, more producers and consumers than
loadBalancerNamespaceBundleMaxSessions (0: no limit), or when its long-term mean exceeds
loadBalancerNamespaceBundleMaxMsgRate (msg/s in + out) or
loadBalancerNamespaceBundleMaxBandwidthMbytes (MB/s in + out); never past
loadBalancerNamespaceMaximumBundles bundles in a namespace.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Callable, Iterable

from .config import RANGE_EQUALLY_DIVIDE, TOPIC_COUNT_EQUALLY_DIVIDE, LoadBalancerConfig
from .load_data import LoadData, namespace_of

log = logging.getLogger(__name__)

MB = 1024 * 1024


class BundleSplitter:
    def __init__(self) -> None:
        self._at_maximum: set[str] = set()   # bundles already said to be unsplittable: said once

    def find(self, data: LoadData, config: LoadBalancerConfig, bundle_count: Callable[[str], int]) -> list[str]:
        """The bundles to split now; bundle_count(namespace) is its number of bundles."""
        chosen: list[str] = []
        added: Counter[str] = Counter()
        for load in data.brokers.values():
            for bundle, stats in load.last_stats.items():
                if stats.topics < 2 or bundle in chosen:
                    continue
                long = data.bundles[bundle].long if bundle in data.bundles else None
                rate, throughput = (long.msg_rate, long.throughput) if long is not None else (0.0, 0.0)
                sessions = stats.consumerCount + stats.producerCount
                if not (stats.topics > config.namespace_bundle_max_topics
                        or 0 < config.namespace_bundle_max_sessions < sessions
                        or rate > config.namespace_bundle_max_msg_rate
                        or throughput > config.namespace_bundle_max_bandwidth_mbytes * MB):
                    continue
                namespace = namespace_of(bundle)
                if bundle_count(namespace) + added[namespace] >= config.namespace_maximum_bundles:
                    if bundle not in self._at_maximum:
                        self._at_maximum.add(bundle)
                        log.warning("not splitting bundle %s: namespace %s has loadBalancerNamespaceMaximumBundles "
                                    "(%d) bundles", bundle, namespace, config.namespace_maximum_bundles)
                    continue
                log.info("splitting bundle %s: topics %d/%d, sessions %d/%d, msg rate %.0f/%.0f, "
                         "throughput %.0f/%.0f MB/s", bundle, stats.topics, config.namespace_bundle_max_topics,
                         sessions, config.namespace_bundle_max_sessions, rate, config.namespace_bundle_max_msg_rate,
                         throughput / MB, config.namespace_bundle_max_bandwidth_mbytes)
                chosen.append(bundle)
                added[namespace] += 1
        return chosen


def split_point(algorithm: str, lower: int, upper: int, topic_hashes: Iterable[int]) -> int | None:
    """Where [lower, upper) is cut in two, or None when it cannot be.

    range_equally_divide: the middle of the range. topic_count_equally_divide: between the
    hashes of the middle two topics, so each half gets as many topics."""
    if algorithm == RANGE_EQUALLY_DIVIDE:
        point = lower + (upper - lower) // 2
    elif algorithm == TOPIC_COUNT_EQUALLY_DIVIDE:
        hashes = sorted(topic_hashes)
        if len(hashes) < 2:
            return None
        start, end = hashes[max(len(hashes) // 2 - 1, 0)], hashes[len(hashes) // 2]
        point = start + (end - start) // 2
    else:
        raise ValueError(f"unknown split algorithm {algorithm}")
    return point if lower < point < upper else None
