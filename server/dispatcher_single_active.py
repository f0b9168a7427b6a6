"""Exclusive and Failover: one active consumer receives everything, in order.

Failover picks the active consumer by priority level then name (for a partition: the
partition index modulo the sorted consumers, so partitions spread over consumers) and tells
every consumer whether it is active. A change of active consumer, or a redelivery request,
rewinds the cursor so the new owner sees every unacknowledged entry again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from protocol import pulsar_api_pb2 as pb

from .dispatcher import Dispatcher
from .errors import ConsumerBusy

if TYPE_CHECKING:
    from managed_ledger.position import Position

    from .consumer import Consumer


class SingleActiveConsumerDispatcher(Dispatcher):
    def __init__(self, subscription, max_read_entries: int, sub_type: int, partition_index: int) -> None:
        super().__init__(subscription, max_read_entries)
        self.sub_type = sub_type
        self.partition_index = partition_index
        self.active: "Consumer | None" = None

    def add_consumer(self, consumer: "Consumer") -> None:
        if self.sub_type == pb.CommandSubscribe.Exclusive and self.consumers:
            raise ConsumerBusy("Exclusive consumer is already connected")
        self.consumers.append(consumer)
        self._pick_active()

    def remove_consumer(self, consumer: "Consumer") -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            self._pick_active()

    def redeliver(self, consumer: "Consumer", positions: Iterable["Position"] | None) -> None:
        """Exclusive and Failover always redeliver everything unacknowledged, in order."""
        for position in consumer.take_pending():
            self.subscription.count_redelivery(position)
        if consumer is self.active:
            self.rewind()

    def _pick_active(self) -> None:
        if not self.consumers:
            self.active = None
            return
        ordered = sorted(self.consumers, key=lambda c: (c.priority_level, c.name))
        index = self.partition_index % len(ordered) if self.partition_index >= 0 else 0
        chosen = ordered[index]
        if self.sub_type == pb.CommandSubscribe.Failover:
            for consumer in self.consumers:
                consumer.set_active(consumer is chosen)
        if chosen is not self.active:
            if self.active is not None:
                self.active.take_pending()
            self.active = chosen
            self.rewind()

    def _select_consumer(self) -> "Consumer | None":
        active = self.active
        return active if active is not None and active.permits > 0 else None

    def _permits_available(self) -> int:
        return self.active.permits if self.active is not None else 0
