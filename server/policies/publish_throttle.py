"""A publish rate, enforced as Pulsar does: never by refusing a message, by no longer reading
the connections of the producers that publish past it.

A topic counts each run of SENDs it takes (`published`) against the throttles in force for
it: its own rate (topic policy > namespace policy > maxPublishRatePerTopicIn*), its resource
group's (shared by the topics of the group's namespaces) and the broker's
(brokerPublisherThrottlingMax*, shared by every topic). When a run leaves one without permits,
the connections of that topic's producers stop being read (the connection's pause mechanism,
the one the publish buffer uses) until the next period brings permits back; the clients then
just wait on their pending-message windows. What a run took past a topic's rate is paid back by
the next periods with preciseTopicPublishRateLimiterEnable, and forgotten each second without it
(Pulsar's default); a group's is always paid back and the broker's never, as in Pulsar 3.0.7
(rate_limiter.py).
"""

from __future__ import annotations

import asyncio
from typing import Iterable, Protocol

from .rate_limiter import Rate, RatePair

#: The shortest wait before looking again (a refill due "now" may be a float's hair away).
MIN_WAIT_S = 0.001


class Publisher(Protocol):
    """A client connection whose reading can be stopped for a reason and resumed."""

    def pause_publishing(self, reason: object) -> None: ...

    def resume_publishing(self, reason: object) -> None: ...


class PublishingProducer(Protocol):
    @property
    def connection(self) -> Publisher: ...


class PublishThrottle:
    def __init__(self, name: str) -> None:
        self.name = name
        self.limits = RatePair()
        self._paused: set[Publisher] = set()
        self._timer: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        return f"publish rate {self.name}"

    @property
    def limited(self) -> bool:
        return self.limits.limited

    def set_rate(self, rate: Rate) -> None:
        """A new rate applies from now; with none left, paused connections are read again."""
        self.limits.set_rate(rate)
        if not self.limits.limited:
            self.release()

    def published(self, messages: int, size: int, producers: Iterable[PublishingProducer]) -> None:
        """A topic took a run of messages of size bytes from these producers."""
        if self.limits.acquire(messages, size):
            return
        for producer in producers:
            connection = producer.connection
            if connection not in self._paused:
                self._paused.add(connection)
                connection.pause_publishing(self)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(
                max(MIN_WAIT_S, self.limits.refill_in_s()), self._refill)

    def _refill(self) -> None:
        self._timer = None
        wait = self.limits.refill_in_s()
        if wait > 0:
            self._timer = asyncio.get_running_loop().call_later(max(MIN_WAIT_S, wait), self._refill)
        else:
            self.release()

    def release(self) -> None:
        """Read the paused connections again."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        paused, self._paused = self._paused, set()
        for connection in paused:
            connection.resume_publishing(self)
