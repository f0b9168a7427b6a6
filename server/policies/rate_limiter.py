"""The rate limiter behind every publish and dispatch limit: Pulsar 3.0.7's RateLimiter as its
dispatch and precise publish limiters build it (isDispatchOrPrecisePublishRateLimiter).

`permits` may be taken per `period_s`. A take is never refused: what goes past the permits is
owed, and each period that starts pays `permits` of the debt (a full limiter stays full), so
over many periods the rate is the limit however large one take was, and a burst is at most
one period's permits. That is what lets callers count a whole run of SENDs, or a whole read,
at once instead of asking per message. A limiter that is not `precise` forgets at each period
what the last one took, as Pulsar's default publish limiter resets its counters every second:
what a period took past the limit is then never paid back.

Periods are counted when the limiter is consulted, from its first use (when Pulsar starts its
renewal task), so an idle limiter costs nothing and needs no timer of its own.
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


class RateLimiter:
    def __init__(self, permits: int, period_s: float = 1.0, clock: Clock = time.monotonic,
                 extra: Callable[[], float] | None = None, precise: bool = True) -> None:
        self.precise = precise
        self._base = permits
        self._extra = extra
        self.permits = permits + int(extra()) if extra else permits
        self.period_s = period_s
        self._clock = clock
        self._acquired = 0
        self._period_start: float | None = None

    def _renew(self) -> float:
        """Pay the debt of the periods started since the last look; the time now."""
        now = self._clock()
        start = self._period_start
        if start is None:
            self._period_start = now
        elif now - start >= self.period_s:
            periods = int((now - start) / self.period_s)
            self._period_start = start + periods * self.period_s
            self._acquired = max(0, self._acquired - periods * self.permits) if self.precise else 0
            if self._extra is not None:
                self.permits = self._base + int(self._extra())
        return now

    def acquire(self, count: int) -> bool:
        """Take count permits; whether some are left after them."""
        self._renew()
        self._acquired += count
        return self._acquired < self.permits

    def available(self) -> int:
        self._renew()
        return max(0, self.permits - self._acquired)

    def refill_in_s(self) -> float:
        """Seconds until some permits are available (0: there are some now)."""
        now = self._renew()
        owed = self._acquired - self.permits
        if owed < 0:
            return 0.0
        assert self._period_start is not None
        periods = owed // self.permits + 1 if self.precise else 1
        return self._period_start + periods * self.period_s - now

    def set_rate(self, permits: int, period_s: float, extra: Callable[[], float] | None, precise: bool) -> None:
        """A new rate for what is owed and taken so far (as Pulsar's setRate); a period starts."""
        self._renew()
        self._base, self._extra, self.period_s, self.precise = permits, extra, period_s, precise
        self.permits = permits + int(extra()) if extra else permits
        self._period_start = self._clock()


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
