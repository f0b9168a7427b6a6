"""The rate limiter behind every publish and dispatch limit: a token bucket of `permits` per
`period_s` (Pulsar's precise publish and dispatch limiters), or per-period counters (its
default publish limiter).

A take is never refused: what goes past the permits is owed. A `precise` limiter is a bucket
that holds at most one period's permits and fills continuously at permits / period_s; what was
owed is paid back before any permit is available again, so over any window of W seconds at
most W / period_s periods' permits plus one bucket go through, however large one take was.
That is what lets callers count a whole run of SENDs, or a whole read, at once instead of
asking per message. Pulsar 3.0.7 hands a period's permits back all at once at its start
(3.2 and later fill continuously, as here): the bound is the same, but a limited client then
comes back in one burst per period, which a single-threaded broker serves at the expense of
every other client's latency. One that waits here comes back once a tenth of a period's
permits are in (`refill_in_s`), so bursts stay small without waking it for every permit.

A limiter that is not precise counts per period and forgets at each period what the last one
took, as Pulsar's default publish limiter resets its counters every second: what a period took
past the limit is never paid back.

Time is counted when the limiter is consulted, from its first use, so an idle limiter costs
nothing and needs no timer of its own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

Clock = Callable[[], float]


@dataclass(frozen=True)
class Rate:
    """messages and bytes per period (<= 0: that one is not limited); `relative`: the messages
    limit is on top of a measured rate, read again at each period (Pulsar's relativeToPublishRate)."""

    messages: int = 0
    size: int = 0
    period_s: float = 1.0
    relative: bool = False
    precise: bool = True

    @property
    def limited(self) -> bool:
        return self.messages > 0 or self.size > 0


#: A limited client is let back once this share of a period's permits is in.
RESUME_SHARE = 0.1


class RateLimiter:
    def __init__(self, permits: int, period_s: float = 1.0, clock: Clock = time.monotonic,
                 extra: Callable[[], float] | None = None, precise: bool = True) -> None:
        self._clock = clock
        self._base, self._extra, self.period_s, self.precise = permits, extra, period_s, precise
        self.permits = permits + int(extra()) if extra else permits
        #: Permits left now: negative while some are owed.
        self._left = float(self.permits)
        self._looked_at: float | None = None
        self._period_start = 0.0

    def _renew(self) -> float:
        """Bring the permits up to now; the time now."""
        now = self._clock()
        if self._looked_at is None:
            self._looked_at = self._period_start = now
            return now
        if now - self._period_start >= self.period_s:
            self._period_start += int((now - self._period_start) / self.period_s) * self.period_s
            if not self.precise:
                self._left = float(self.permits)
            if self._extra is not None:
                self.permits = self._base + int(self._extra())
        if self.precise:
            self._left = min(float(self.permits), self._left + (now - self._looked_at) * self.permits / self.period_s)
        self._looked_at = now
        return now

    def acquire(self, count: int) -> bool:
        """Take count permits; whether some are left after them."""
        self._renew()
        self._left -= count
        return self._left >= 1

    def available(self) -> int:
        self._renew()
        return max(0, int(self._left))

    def refill_in_s(self) -> float:
        """Seconds until a limited client may come back (0: now)."""
        now = self._renew()
        if self._left >= 1:
            return 0.0
        if not self.precise:
            return self._period_start + self.period_s - now
        wanted = max(1.0, RESUME_SHARE * self.permits)
        return (wanted - self._left) * self.period_s / self.permits

    def set_rate(self, permits: int, period_s: float, extra: Callable[[], float] | None, precise: bool) -> None:
        """A new rate for what is owed and taken so far (as Pulsar's setRate)."""
        self._renew()
        self._base, self._extra, self.period_s, self.precise = permits, extra, period_s, precise
        self.permits = permits + int(extra()) if extra else permits
        self._left = min(self._left, float(self.permits))


class RatePair:
    """A limit on messages and one on bytes, taken together; either may be off. `measured`
    gives the rates (messages/s, bytes/s) a relative limit is on top of."""

    def __init__(self, clock: Clock = time.monotonic,
                 measured: Callable[[], tuple[float, float]] | None = None) -> None:
        self.rate = Rate()
        self._clock = clock
        self._measured = measured
        self.messages: RateLimiter | None = None
        self.bytes: RateLimiter | None = None

    @property
    def limited(self) -> bool:
        return self.messages is not None or self.bytes is not None

    def set_rate(self, rate: Rate) -> None:
        """Apply rate, keeping what each limiter that stays has taken."""
        if rate == self.rate:
            return
        self.rate = rate
        measured = self._measured if rate.relative else None
        self.messages = self._limiter(self.messages, rate.messages, rate,
                                      (lambda: measured()[0]) if measured is not None else None)
        self.bytes = self._limiter(self.bytes, rate.size, rate,
                                   (lambda: measured()[1]) if measured is not None else None)

    def _limiter(self, current: RateLimiter | None, permits: int, rate: Rate,
                 extra: Callable[[], float] | None) -> RateLimiter | None:
        if permits <= 0:
            return None
        if current is None:
            return RateLimiter(permits, rate.period_s, self._clock, extra, rate.precise)
        current.set_rate(permits, rate.period_s, extra, rate.precise)
        return current

    def acquire(self, messages: int, size: int) -> bool:
        """Take both; whether both have permits left."""
        left = True
        if self.messages is not None:
            left = self.messages.acquire(messages)
        if self.bytes is not None:
            left = self.bytes.acquire(size) and left
        return left

    def has_permits(self) -> bool:
        return (self.messages is None or self.messages.available() > 0) and \
            (self.bytes is None or self.bytes.available() > 0)

    def refill_in_s(self) -> float:
        """Seconds until both have permits again."""
        return max((limiter.refill_in_s() for limiter in (self.messages, self.bytes) if limiter is not None),
                   default=0.0)
