"""The load figures the leader decides with, in the JSON shapes Pulsar stores them in
(LocalBrokerData's NamespaceBundleStats and ResourceUsage, BundleData, TimeAverageBrokerData),
so tools reading /loadbalance read what they read from Pulsar.

A bundle's traffic is kept as two running means of the reports that carried it: a short one
(10 samples) that follows bursts, and a long one (1000) the placement ranks brokers by. A bundle
nobody has reported yet counts as Pulsar's default guess (50 msg/s and 100 kB/s each way), so a
burst of placements spreads before the chosen brokers report.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

SHORT_SAMPLES = 10
LONG_SAMPLES = 1000
DEFAULT_MSG_RATE = 50.0
DEFAULT_THROUGHPUT = 100_000.0
RATES = ("msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut")


@dataclass
class ResourceUsage:
    usage: float = 0.0
    limit: float = -1.0

    def percent(self) -> float:
        """Pulsar's percentUsage: 0 when the limit is unknown."""
        return 100.0 * self.usage / self.limit if self.limit > 0 else 0.0

    def to_json(self) -> dict[str, float]:
        return {"usage": self.usage, "limit": self.limit}

    @classmethod
    def from_json(cls, data: Any) -> ResourceUsage:
        data = data or {}
        return cls(float(data.get("usage", 0.0)), float(data.get("limit", -1.0)))


@dataclass
class BundleStats:
    """NamespaceBundleStats: one bundle's traffic and clients on its owner."""

    msgRateIn: float = 0.0
    msgThroughputIn: float = 0.0
    msgRateOut: float = 0.0
    msgThroughputOut: float = 0.0
    consumerCount: int = 0
    producerCount: int = 0
    topics: int = 0
    cacheSize: int = 0

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BundleStats:
        return cls(**{f.name: type(f.default)(data.get(f.name, f.default)) for f in fields(cls)})


@dataclass
class BrokerLoad:
    """What the leader reads of a LocalBrokerData: resource usage and bundle stats."""

    broker: str
    cpu: ResourceUsage = field(default_factory=ResourceUsage)
    memory: ResourceUsage = field(default_factory=ResourceUsage)
    directMemory: ResourceUsage = field(default_factory=ResourceUsage)
    bandwidthIn: ResourceUsage = field(default_factory=ResourceUsage)
    bandwidthOut: ResourceUsage = field(default_factory=ResourceUsage)
    bundles: set[str] = field(default_factory=set)
    last_stats: dict[str, BundleStats] = field(default_factory=dict)
    last_update: int = 0

    @property
    def usages(self) -> tuple[ResourceUsage, ...]:
        return self.cpu, self.memory, self.directMemory, self.bandwidthIn, self.bandwidthOut

    def max_usage(self, weights: tuple[float, ...] = (1.0,) * 5) -> float:
        """getMaxResourceUsageWithWeight: the busiest resource, as a fraction (1.0 = full)."""
        return max(u.percent() * w for u, w in zip(self.usages, weights)) / 100.0

    @property
    def throughput(self) -> float:
        return sum(s.msgThroughputIn + s.msgThroughputOut for s in self.last_stats.values())

    @classmethod
    def from_json(cls, broker: str, data: dict[str, Any]) -> BrokerLoad:
        return cls(broker, *(ResourceUsage.from_json(data.get(name)) for name in
                             ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut")),
                   set(data.get("bundles") or ()),
                   {name: BundleStats.from_json(s) for name, s in (data.get("lastStats") or {}).items()},
                   int(data.get("lastUpdate", 0)))


@dataclass
class TimeAverage:
    """TimeAverageMessageData: a running mean over the last max_samples reports."""

    maxSamples: int
    numSamples: int = 0
    msgThroughputIn: float = DEFAULT_THROUGHPUT
    msgThroughputOut: float = DEFAULT_THROUGHPUT
    msgRateIn: float = DEFAULT_MSG_RATE
    msgRateOut: float = DEFAULT_MSG_RATE

    def update(self, stats: BundleStats) -> None:
        self.numSamples = min(self.numSamples + 1, self.maxSamples)
        n = self.numSamples
        for name in RATES:
            setattr(self, name, ((n - 1) * getattr(self, name) + getattr(stats, name)) / n)

    @property
    def msg_rate(self) -> float:
        return self.msgRateIn + self.msgRateOut

    @property
    def throughput(self) -> float:
        return self.msgThroughputIn + self.msgThroughputOut

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any], max_samples: int) -> TimeAverage:
        found = cls(int(data.get("maxSamples", max_samples)), int(data.get("numSamples", 0)))
        for name in RATES:
            setattr(found, name, float(data.get(name, getattr(found, name))))
        return found


@dataclass
class BundleData:
    short: TimeAverage = field(default_factory=lambda: TimeAverage(SHORT_SAMPLES))
    long: TimeAverage = field(default_factory=lambda: TimeAverage(LONG_SAMPLES))
    topics: int = 0

    def update(self, stats: BundleStats) -> None:
        self.short.update(stats)
        self.long.update(stats)
        self.topics = stats.topics

    def to_json(self) -> dict[str, Any]:
        return {"shortTermData": self.short.to_json(), "longTermData": self.long.to_json(), "topics": self.topics}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BundleData:
        return cls(TimeAverage.from_json(data.get("shortTermData") or {}, SHORT_SAMPLES),
                   TimeAverage.from_json(data.get("longTermData") or {}, LONG_SAMPLES), int(data.get("topics", 0)))


def broker_time_average(bundles: list[BundleData]) -> dict[str, float]:
    """TimeAverageBrokerData: the broker's bundles' means, summed."""
    return {term + name[0].upper() + name[1:]: sum(getattr(getattr(b, part), name) for b in bundles)
            for term, part in (("shortTerm", "short"), ("longTerm", "long")) for name in RATES}


@dataclass
class LoadData:
    """The leader's view: every broker's last report, every bundle's means, the placements
    made since the chosen brokers last reported, and the bundles recently shed."""

    brokers: dict[str, BrokerLoad] = field(default_factory=dict)
    bundles: dict[str, BundleData] = field(default_factory=dict)
    preallocated: dict[str, tuple[str, float]] = field(default_factory=dict)   # bundle -> (broker, when)
    recently_unloaded: dict[str, float] = field(default_factory=dict)          # bundle -> when

    def bundle(self, name: str) -> BundleData:
        return self.bundles.get(name) or BundleData()

    def long_term_rate(self, broker: str) -> float:
        """The broker's bundles' long-term message rates, with the ones placed on it since."""
        load = self.brokers[broker]
        pending = [b for b, (chosen, _) in self.preallocated.items() if chosen == broker and b not in load.bundles]
        return sum(self.bundle(b).long.msg_rate for b in [*load.bundles, *pending])

    def namespace_bundles(self, broker: str, namespace: str) -> int:
        """Bundles of the namespace the broker owns or was given since its last report."""
        owned = {b for b in self.brokers[broker].bundles if namespace_of(b) == namespace}
        owned.update(b for b, (chosen, _) in self.preallocated.items()
                     if chosen == broker and namespace_of(b) == namespace)
        return len(owned)


def namespace_of(bundle: str) -> str:
    """tenant/ns of a bundle name tenant/ns/0x..._0x..."""
    return bundle.rsplit("/", 1)[0]
