"""The dispatch rates one subscription's reads obey, as Pulsar's dispatchers apply them.

A subscription is bound by its topic's rate (shared by all its subscriptions), its own
(subscription override > topic policy > namespace policy > dispatchThrottlingRatePerSubscription*)
and its resource group's. Before a read the dispatcher asks how many entries it may fetch: none
while any of them has no permits left (it reads again when they come back, where Pulsar retries
every second), else no more entries than the fewest message or byte permits fill at the
average entry's size (Pulsar reads as many entries as there are message permits, however
many messages its batches hold). Each entry it sends is taken from each of them
(`dispatched`), and it stops sending once one has no permits left (`allows_more`), so that
subscriptions reading at once from a shared limit (a topic's, a group's) do not each spend it
whole; Pulsar sends whatever a read brought and only the next periods pay for it. An entry's
batch may still overshoot, paid for by the next periods (rate_limiter.py).
"""

from __future__ import annotations

from math import ceil

from .rate_limiter import RatePair


class DispatchThrottle:
    def __init__(self, limits: tuple[RatePair, ...]) -> None:
        self.limits = limits

    def allows_more(self) -> bool:
        return all(pair.has_permits() for pair in self.limits)

    def read_limit(self, entries: int, messages_per_entry: float | None, bytes_per_entry: float | None) -> int:
        """Entries the next read may fetch, at most `entries`; 0 until refill_in_s()."""
        if not self.allows_more():
            return 0
        for pair in self.limits:
            if pair.messages is not None:
                entries = min(entries, ceil(pair.messages.available() / (messages_per_entry or 1.0)))
            if pair.bytes is not None and bytes_per_entry:
                entries = min(entries, ceil(pair.bytes.available() / bytes_per_entry))
        return max(1, entries)

    def refill_in_s(self) -> float:
        return max((pair.refill_in_s() for pair in self.limits), default=0.0)

    def dispatched(self, messages: int, size: int) -> None:
        for pair in self.limits:
            pair.acquire(messages, size)
