"""Deduplication snapshots by time: every brokerDeduplicationSnapshotFrequencyInSeconds, each
deduplicated topic whose last snapshot is older than its deduplicationSnapshotInterval (topic >
namespace > brokerDeduplicationSnapshotIntervalSeconds; 0 = by entries only) and that was written
to since takes one, as Pulsar's deduplication snapshot monitor does; so a topic written to
slowly is recovered from a recent snapshot rather than by replaying many entries."""

from __future__ import annotations

from typing import Any

from server.config import BrokerConfig

from .catalog import DEDUPLICATION_SNAPSHOT_INTERVAL
from .monitored_broker import MonitoredBroker
from .periodic import PeriodicTask, in_turns


def snapshot_interval_s(policies: dict[str, Any], config: BrokerConfig) -> int:
    value = policies.get(DEDUPLICATION_SNAPSHOT_INTERVAL)
    return config.broker_deduplication_snapshot_interval_seconds if value is None else value


class DeduplicationSnapshotMonitor(PeriodicTask):
    def __init__(self, broker: MonitoredBroker) -> None:
        super().__init__("deduplication snapshot check",
                         broker.config.broker_deduplication_snapshot_frequency_in_seconds, self.check)
        self._broker = broker

    async def check(self) -> None:
        async for topic in in_turns(self._broker.topics):
            if topic.deduplication is not None:
                await topic.deduplication.snapshot_if_due(snapshot_interval_s(topic.policies, self._broker.config))
