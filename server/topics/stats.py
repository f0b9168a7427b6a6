"""Per-topic counters: cheap increments on the hot path, read by /metrics and the admin API.

Rates are measured, not estimated: each read compares the counters with a snapshot taken at
the start of the current window (statsUpdateFrequencyInSecs long, as Pulsar's stats interval),
so a rate is the average over the last full window, or over the time since load before that.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone


def pulsar_time(millis: int) -> str:
    """A time as Pulsar's DateFormatter shows it in stats and headers: ISO-8601 with
    milliseconds and the UTC offset."""
    moment = datetime.fromtimestamp(millis / 1000, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Rates:
    msg_rate_in: float = 0.0
    msg_throughput_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_out: float = 0.0
    #: Messages a consumer asked to have again (subscriptions and consumers only).
    msg_rate_redeliver: float = 0.0


_ZEROS = (0,) * 5


@dataclass(slots=True)
class TopicStats:
    messages_in: int = 0
    bytes_in: int = 0
    messages_out: int = 0
    bytes_out: int = 0
    #: Unacknowledged messages taken back on a consumer's request (Pulsar's msgRedeliver).
    messages_redelivered: int = 0
    #: Stored entries whose metadata does not parse, skipped by dispatchers.
    unreadable_entries: int = 0
    #: when the current window began, and the counters then (a topic and each subscription
    #: hold one, so no snapshot object)
    _window_at: float = field(default_factory=time.monotonic)
    _window_counters: tuple[int, ...] = _ZEROS
    _last_rates: Rates | None = None

    def published(self, messages: int, size: int) -> None:
        self.messages_in += messages
        self.bytes_in += size

    def dispatched(self, messages: int, size: int) -> None:
        self.messages_out += messages
        self.bytes_out += size

    def redelivered(self, messages: int) -> None:
        self.messages_redelivered += messages

    def _counters(self) -> tuple[int, ...]:
        return self.messages_in, self.bytes_in, self.messages_out, self.bytes_out, self.messages_redelivered

    def rates(self, window_s: float) -> Rates:
        """Per-second rates over the last complete window (or since load, before the first)."""
        now = time.monotonic()
        elapsed = now - self._window_at
        if elapsed >= window_s or self._last_rates is None:
            current = self._counters()
            measured = Rates(*((now_v - then_v) / elapsed if elapsed > 0 else 0.0
                               for now_v, then_v in zip(current, self._window_counters)))
            if elapsed >= window_s:
                self._window_at, self._window_counters = now, current
                self._last_rates = measured
            return measured
        return self._last_rates
