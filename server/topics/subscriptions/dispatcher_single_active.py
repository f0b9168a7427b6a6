"""Exclusive and Failover: one active consumer receives everything, in order.

Failover picks the active consumer by priority level then name (for a partition: the
partition index modulo the consumers of the best priority level, sorted by name, so
partitions spread over them) and tells every consumer whether it is active when the active
one changes (a consumer that joins without changing it hears it alone). As in Pulsar, that
announcement waits activeConsumerFailoverDelayTimeMillis: the Go client registers a consumer
only after its SUBSCRIBE succeeded, and drops an announcement that overtakes that. A change of active
consumer, or a redelivery request, rewinds the cursor so the new owner sees every
unacknowledged entry again. As in Pulsar, these types keep no redelivery count (MESSAGE
carries none) and ignore deliver_at_time.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Iterable

from protocol import pulsar_api_pb2 as pb
from server.errors import ConsumerBusy

from .dispatcher import Dispatcher, ReadLimits

if TYPE_CHECKING:
    from managed_ledger.position import Position

    from .consumer import Consumer


class SingleActiveConsumerDispatcher(Dispatcher):
    def __init__(self, subscription, limits: ReadLimits, sub_type: int, partition_index: int,
                 failover_delay_s: float) -> None:
        super().__init__(subscription, limits)
        self.sub_type = sub_type
        self.partition_index = partition_index
        self.failover_delay_s = failover_delay_s
        self.active: "Consumer | None" = None
        self._announcement: asyncio.TimerHandle | None = None

    def add_consumer(self, consumer: "Consumer") -> None:
        if self.sub_type == pb.CommandSubscribe.Exclusive and self.consumers:
            raise ConsumerBusy("Exclusive consumer is already connected")
        self.check_room()
        self.consumers.append(consumer)
        self._pick_active(joined=consumer)

    def remove_consumer(self, consumer: "Consumer") -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            self._take_pending(consumer)
            self._pick_active()

    def redeliver(self, consumer: "Consumer", positions: Iterable["Position"] | None) -> None:
        """Exclusive and Failover always redeliver everything unacknowledged, in order."""
        self._take_pending(consumer)
        if consumer is self.active:
            self.rewind()

    def _pick_active(self, joined: "Consumer | None" = None) -> None:
        if not self.consumers:
            self.active = None
            return
        ordered = sorted(self.consumers, key=lambda c: (c.priority_level, c.name))
        best = [c for c in ordered if c.priority_level == ordered[0].priority_level]
        chosen = best[self.partition_index % len(best)] if self.partition_index >= 0 else best[0]
        changed = chosen is not self.active
        if changed:
            if self.active is not None:
                self._take_pending(self.active)
            self.active = chosen
            self.rewind()
        if self.sub_type != pb.CommandSubscribe.Failover:
            return
        if changed:
            self._announce_later()
        elif joined is not None:
            joined.set_active(joined is chosen)

    def _announce_later(self) -> None:
        """One announcement after the delay covers every change made meanwhile."""
        if self.failover_delay_s <= 0:
            self._announce()
        elif self._announcement is None:
            self._announcement = asyncio.get_running_loop().call_later(self.failover_delay_s, self._announce)

    def _announce(self) -> None:
        """ACTIVE_CONSUMER_CHANGE: every consumer learns whether it is the active one."""
        self._announcement = None
        for consumer in self.consumers:
            consumer.set_active(consumer is self.active)

    def close(self) -> None:
        if self._announcement is not None:
            self._announcement.cancel()
            self._announcement = None
        super().close()

    def _select_consumer(self) -> "Consumer | None":
        active = self.active
        return active if active is not None and active.can_take_messages else None

    def _permits_available(self) -> int:
        active = self.active
        return active.permits if active is not None and active.can_take_messages else 0
