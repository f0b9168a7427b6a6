"""Shared: entries spread round-robin over the consumers with permits, highest priority first.

Unacknowledged entries of a consumer that leaves, or that asks for redelivery, are queued
for replay and go to whichever consumer has permits next. Dispatch stops to a consumer at its
maxUnackedMessagesPerConsumer (consumer.py). The subscription stops reading at
maxUnackedMessagesPerSubscription, as Pulsar's dispatcher: judged at every change of the count
with the limit in force then, it blocks once the count reaches the limit and unblocks when the
count falls below half of it, or at once when the limit is removed; what a read brought before
still goes out. Messages with a deliver_at_time ahead wait in a DelayedDeliveryTracker while the
topic's delayed delivery policy is active.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from server.policies.topic_limits import unacked_per_subscription

from .dispatcher import Dispatcher, ReadLimits

if TYPE_CHECKING:
    from managed_ledger.position import Position

    from .consumer import Consumer


class SharedDispatcher(Dispatcher):
    __slots__ = ("_next",)

    honours_delays = True

    def __init__(self, subscription, limits: ReadLimits) -> None:
        super().__init__(subscription, limits)
        self._next = 0

    def add_consumer(self, consumer: "Consumer") -> None:
        self.check_room()
        consumer.unacked_limited = self.subscription.durable   # as Pulsar: not for non-durable ones
        self._join(consumer)

    def _join(self, consumer: "Consumer") -> None:
        self.consumers.append(consumer)
        self.read_more()

    def remove_consumer(self, consumer: "Consumer") -> None:
        """Its unacknowledged entries go to the others (their redelivery count unchanged); when
        the last consumer leaves, the counts start again from 0, as Pulsar's tracker is cleared."""
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            self._replay_later(self._take_pending(consumer))
            if not self.consumers:
                self.subscription.redelivery_counts.clear()

    def redeliver(self, consumer: "Consumer", positions: Iterable["Position"] | None) -> None:
        taken = self._take_pending(consumer, positions)
        for position in taken:
            self.subscription.count_redelivery(position)
        self._replay_later(taken)

    def _after_ack(self, consumer: "Consumer") -> None:
        self.read_more()

    def _count_unacked(self, change: int) -> None:
        """Pulsar's addUnAckedMessages: the subscription's block follows every change of the count."""
        topic = self.subscription.topic
        limit = unacked_per_subscription(topic.policies, topic.broker.config)
        if limit <= 0:
            self.blocked_on_unacked = False
        super()._count_unacked(change)
        if 0 < limit <= self.unacked_messages:
            self.blocked_on_unacked = True
        elif self.blocked_on_unacked and self.unacked_messages < limit // 2:
            self.blocked_on_unacked = False

    def _select_consumer(self) -> "Consumer | None":
        """Round-robin within the best (lowest number) priority level that can take messages."""
        ready = [c for c in self.consumers if c.can_take_messages]
        if not ready:
            return None
        best = min(c.priority_level for c in ready)
        level = [c for c in ready if c.priority_level == best]
        self._next = (self._next + 1) % len(level)
        return level[self._next]

    def _permits_available(self) -> int:
        """None while the subscription is blocked on unacknowledged messages: no read starts."""
        if self.blocked_on_unacked:
            return 0
        return sum(c.permits for c in self.consumers if c.can_take_messages)
