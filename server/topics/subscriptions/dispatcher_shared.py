"""Shared: entries spread round-robin over the consumers with permits, highest priority first.

Unacknowledged entries of a consumer that leaves, or that asks for redelivery, are queued
for replay and go to whichever consumer has permits next. Dispatch stops to a consumer with
maxUnackedMessagesPerConsumer unacknowledged messages, and to the whole subscription at
maxUnackedMessagesPerSubscription, until acknowledgements bring the count down to half.
Messages with a deliver_at_time ahead wait in a DelayedDeliveryTracker while the topic's
delayed delivery policy is active.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from .dispatcher import Dispatcher, ReadLimits

if TYPE_CHECKING:
    from managed_ledger.position import Position

    from .consumer import Consumer


class SharedDispatcher(Dispatcher):
    honours_delays = True

    def __init__(self, subscription, limits: ReadLimits) -> None:
        super().__init__(subscription, limits)
        config = subscription.topic.broker.config
        self._next = 0
        self._max_unacked_per_consumer = config.max_unacked_messages_per_consumer
        self._max_unacked = config.max_unacked_messages_per_subscription
        self._blocked_on_unacked = False

    def add_consumer(self, consumer: "Consumer") -> None:
        consumer.max_unacked = self._max_unacked_per_consumer
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

    def _subscription_blocked(self) -> bool:
        """Blocked at maxUnackedMessagesPerSubscription, until back down to half of it."""
        if self._blocked_on_unacked:
            self._blocked_on_unacked = self.unacked_messages > self._max_unacked // 2
        elif self._max_unacked:
            self._blocked_on_unacked = self.unacked_messages >= self._max_unacked
        return self._blocked_on_unacked

    def _select_consumer(self) -> "Consumer | None":
        """Round-robin within the best (lowest number) priority level that can take messages."""
        if self._subscription_blocked():
            return None
        ready = [c for c in self.consumers if c.can_take_messages]
        if not ready:
            return None
        best = min(c.priority_level for c in ready)
        level = [c for c in ready if c.priority_level == best]
        self._next = (self._next + 1) % len(level)
        return level[self._next]

    def _permits_available(self) -> int:
        if self._subscription_blocked():
            return 0
        return sum(c.permits for c in self.consumers if c.can_take_messages)
