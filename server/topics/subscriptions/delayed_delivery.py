"""Delayed delivery on Shared and Key_Shared: entries whose deliver_at_time lies ahead are held.

While the topic's delayed delivery policy is active (topic > namespace > the broker's
delayedDeliveryEnabled), a dispatcher asks `hold(position, deliver_at_ms)` for each entry it
read whose top-level metadata carries deliver_at_time; a held entry is skipped (it stays
unacknowledged in the cursor). A timer hands the due positions back through `on_due`, and the
dispatcher replays them. While it is not, such entries are delivered at once, as in Pulsar
(those held already are still delivered when due).

The timer fires at the earliest due time, but never more often than once per tick (the policy's
tickTime, else delayedDeliveryTickTimeMillis), so a message is never delivered early and at most
one tick late. Nothing is persisted: after a restart the cursor re-reads every unacknowledged entry from
mark-delete, and holding them again rebuilds the index.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from dataclasses import dataclass
from typing import Callable

from managed_ledger.position import Position

DueCallback = Callable[[list[Position]], None]
#: The loop clock and the wall clock may disagree by a little: never wake just before the time.
CLOCK_SLACK_S = 0.002


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class DelayedDeliveryPolicy:
    """The topic's policy in force: whether deliver_at_time is honoured, and the tick."""

    active: bool
    tick_ms: int


class DelayedDeliveryTracker:
    """Held positions ordered by their delivery time; one timer for the earliest."""

    def __init__(self, tick_ms: int, on_due: DueCallback) -> None:
        self._tick_s = tick_ms / 1000
        self._on_due = on_due
        self._heap: list[tuple[int, Position]] = []
        self._held: set[Position] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at_ms: int | None = None
        self._last_fired = 0.0

    def __len__(self) -> int:
        return len(self._held)

    def set_tick(self, tick_ms: int) -> None:
        """The policy's tick changed: it spaces the timer's next firings."""
        self._tick_s = tick_ms / 1000

    def hold(self, position: Position, deliver_at_ms: int) -> bool:
        """True when the entry must wait (it is then tracked); False to deliver it now."""
        if deliver_at_ms <= now_ms():
            return False
        if position not in self._held:
            self._held.add(position)
            heapq.heappush(self._heap, (deliver_at_ms, position))
            self._schedule()
        return True

    def clear(self) -> None:
        """Forget everything held (the cursor was rewound: re-reading tracks them again)."""
        self._heap.clear()
        self._held.clear()
        self._cancel_timer()

    def _due(self) -> list[Position]:
        cutoff = now_ms()
        due = []
        while self._heap and self._heap[0][0] <= cutoff:
            _, position = heapq.heappop(self._heap)
            self._held.discard(position)
            due.append(position)
        return due

    def _schedule(self) -> None:
        if not self._heap:
            self._cancel_timer()
            return
        next_at = self._heap[0][0]
        if self._timer is not None and self._timer_at_ms is not None and self._timer_at_ms <= next_at:
            return
        self._cancel_timer()
        loop = asyncio.get_running_loop()
        until_due = (next_at - now_ms()) / 1000 + CLOCK_SLACK_S
        until_next_tick = self._last_fired + self._tick_s - loop.time()
        wait_s = max(until_due, until_next_tick, 0.0)
        self._timer_at_ms = next_at
        self._timer = loop.call_later(wait_s, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_at_ms = None
        self._last_fired = asyncio.get_running_loop().time()
        due = self._due()
        self._schedule()
        if due:
            self._on_due(due)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._timer_at_ms = None
