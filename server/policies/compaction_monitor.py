"""The compaction monitor: every brokerServiceCompactionMonitorIntervalInSeconds, compact the
topics whose data after the compaction horizon exceeds brokerServiceCompactionThresholdInBytes,
or the namespace's compaction_threshold (0 = off)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from managed_ledger.position import Position
from server.topics.compaction import CompactionStatus

from .fields import COMPACTION_THRESHOLD
from .monitored_broker import MonitoredBroker
from .periodic import PeriodicTask, in_turns

if TYPE_CHECKING:
    from server.topics.topic import Topic


def compaction_threshold(policies: dict[str, Any], broker_default: int) -> int:
    value = policies.get(COMPACTION_THRESHOLD)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return broker_default


class CompactionMonitor(PeriodicTask):

    def __init__(self, broker: MonitoredBroker) -> None:
        super().__init__("compaction check",
                         broker.config.broker_service_compaction_monitor_interval_in_seconds, self.check)
        self._broker = broker

    async def check(self) -> None:
        async for topic in in_turns(self._broker.topics):
            threshold = compaction_threshold(topic.policies,
                                             self._broker.config.broker_service_compaction_threshold_in_bytes)
            if threshold > 0 and await _uncompacted_bytes(topic) > threshold \
                    and topic.compaction.status is not CompactionStatus.RUNNING:
                await topic.compact()


async def _uncompacted_bytes(topic: "Topic") -> int:
    view = await topic.ledger.compacted_view()
    first = topic.ledger.first_position()
    since = view.horizon if view is not None else Position(first.ledger_id, first.entry_id - 1)
    return topic.ledger.size_after(since)
