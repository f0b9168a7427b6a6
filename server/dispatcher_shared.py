"""Shared: entries spread round-robin over the consumers with permits, highest priority first.

Unacknowledged entries of a consumer that leaves, or that asks for redelivery, are queued
for replay and go to whichever consumer has permits next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from .dispatcher import Dispatcher

if TYPE_CHECKING:
    from managed_ledger.position import Position

    from .consumer import Consumer


class SharedDispatcher(Dispatcher):
    def __init__(self, subscription, max_read_entries: int) -> None:
        super().__init__(subscription, max_read_entries)
        self._next = 0

    def add_consumer(self, consumer: "Consumer") -> None:
        self.consumers.append(consumer)
        self.read_more()

    def remove_consumer(self, consumer: "Consumer") -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            self._replay_later(consumer.take_pending())

    def redeliver(self, consumer: "Consumer", positions: Iterable["Position"] | None) -> None:
        taken = consumer.take_pending(positions)
        for position in taken:
            self.subscription.count_redelivery(position)
        self._replay_later(taken)

    def _select_consumer(self) -> "Consumer | None":
        """Round-robin within the best (lowest number) priority level that has permits."""
        ready = [c for c in self.consumers if c.permits > 0]
        if not ready:
            return None
        best = min(c.priority_level for c in ready)
        level = [c for c in ready if c.priority_level == best]
        self._next = (self._next + 1) % len(level)
        return level[self._next]

    def _permits_available(self) -> int:
        return sum(c.permits for c in self.consumers)
