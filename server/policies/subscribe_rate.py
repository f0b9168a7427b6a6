"""Subscribe rate: how often one consumer may subscribe to a topic, as Pulsar's
SubscribeRateLimiter counts it.

A consumer is known by its client's host, its name and its consumer id (what a reconnecting
consumer presents again), so the limit stops a consumer that reconnects in a loop, not many
consumers. Each may subscribe `per_consumer` times in a period of `period_s` seconds (the
counts start over every period); past that SUBSCRIBE fails with NotAllowed and Pulsar's
message. The rate: topic policy > namespace policy > subscribeThrottlingRatePerConsumer /
subscribeRatePeriodPerConsumerInSecond; persistent topics only, as in Pulsar.
"""

from __future__ import annotations

import time

from server.errors import NotAllowed

from .rate_limiter import Clock

REFUSAL = "Subscribe limited by subscribe rate limit per consumer."


class SubscribeRateLimiter:
    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self.rate: tuple[int, float] = (0, 0.0)
        self._counts: dict[tuple[str, str, int], int] = {}
        self._period_start = clock()

    def set_rate(self, per_consumer: int, period_s: float) -> None:
        if (per_consumer, period_s) != self.rate:
            self.rate = (per_consumer, period_s)
            self._counts.clear()
            self._period_start = self._clock()

    def check(self, host: str, consumer_name: str, consumer_id: int) -> None:
        """Count one subscribe of this consumer; NotAllowed when it is one too many."""
        per_consumer, period_s = self.rate
        if per_consumer <= 0:
            return
        now = self._clock()
        if now - self._period_start >= period_s:
            self._counts.clear()
            self._period_start = now
        key = (host, consumer_name, consumer_id)
        count = self._counts.get(key, 0)
        if count >= per_consumer:
            raise NotAllowed(REFUSAL)
        self._counts[key] = count + 1
