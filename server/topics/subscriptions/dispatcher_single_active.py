"""Exclusive and Failover: one active consumer receives everything, in order.

The active consumer is picked as Pulsar picks it (active_consumer.py). When it changes on a
Failover subscription, nothing is dispatched for activeConsumerFailoverDelayTimeMillis (Pulsar's
scheduled readMoreEntries): the previous consumer may still be working through what it got, and
a failing one may come back. Then every consumer is told whether it is the active one, and the
cursor rewinds so the new owner sees every unacknowledged entry again; one wait covers every
change made during it. A consumer that joins without changing the active one hears it at once,
alone. On Exclusive the switch is immediate. As in Pulsar, these types keep no redelivery count
(MESSAGE carries none) and ignore deliver_at_time.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Iterable

from protocol import pulsar_api_pb2 as pb
from server.errors import ConsumerBusy

from .active_consumer import pick_active
from .dispatcher import Dispatcher, ReadLimits

if TYPE_CHECKING:
    from managed_ledger.position import Position

    from .consumer import Consumer


class SingleActiveConsumerDispatcher(Dispatcher):
    __slots__ = ("_switching", "active", "failover_delay_s", "partition_index", "sub_type")

    def __init__(self, subscription, limits: ReadLimits, sub_type: int, partition_index: int,
                 failover_delay_s: float) -> None:
        super().__init__(subscription, limits)
        self.sub_type = sub_type
        self.partition_index = partition_index
        self.failover_delay_s = failover_delay_s
        self.active: "Consumer | None" = None
        #: While the failover delay runs: nothing is dispatched.
        self._switching: asyncio.TimerHandle | None = None

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

    def replay_released(self, positions: list["Position"]) -> None:
        """As Pulsar's: an abort redelivers nothing here (order is kept only by redelivering
        everything, which the active consumer asks for); the released entries come with its next
        redelivery request or reconnection."""

    def _pick_active(self, joined: "Consumer | None" = None) -> None:
        chosen = pick_active(self.consumers, self.partition_index, str(self.subscription.topic.name))
        if chosen is self.active:
            if joined is not None and self._failover:
                joined.set_active(joined is chosen)
            return
        if self.active is not None:
            self._take_pending(self.active)
        self.active = chosen
        if chosen is None:
            return
        if not self._failover or self.failover_delay_s <= 0:
            self._switch()
        elif self._switching is None:
            self._switching = asyncio.get_running_loop().call_later(self.failover_delay_s, self._switch)

    @property
    def _failover(self) -> bool:
        return self.sub_type == pb.CommandSubscribe.Failover

    def _switch(self) -> None:
        """The active consumer takes over: Failover consumers learn who it is, then it is sent
        everything unacknowledged."""
        self._switching = None
        if self._failover:
            for consumer in self.consumers:
                consumer.set_active(consumer is self.active)
        self.rewind()

    def close(self) -> None:
        if self._switching is not None:
            self._switching.cancel()
            self._switching = None
        super().close()

    def _select_consumer(self) -> "Consumer | None":
        active = self.active
        return active if active is not None and active.can_take_messages and self._switching is None else None

    def _permits_available(self) -> int:
        active = self._select_consumer()
        return active.permits if active is not None else 0
