"""When a dispatcher retries a failed read: Pulsar's readFailureBackoff, set by the
dispatcherReadFailureBackoff* keys.

Storage that fails (bookies down, an entry lost) keeps failing for a while: retrying at once
would spin, retrying rarely would leave consumers waiting long after it is back. So the first
retry comes after `initial_s`, each next one after twice the previous, up to `max_s`. A
`mandatory_stop_s` above 0 guarantees one retry that long after the first failure (the delay
that would carry past it is shortened, once per run of failures). A read that succeeds starts
the sequence over."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True, slots=True)
class BackoffTimes:
    """Pulsar's defaults: 15 s doubling up to 60 s, no mandatory stop."""
    initial_s: float = 15.0
    max_s: float = 60.0
    mandatory_stop_s: float = 0.0


class ReadBackoff:
    __slots__ = ("_clock", "_first_failure", "_next_s", "_stop_made", "_times")

    def __init__(self, times: BackoffTimes, clock: Callable[[], float] = time.monotonic) -> None:
        self._times = times
        self._clock = clock
        self._next_s = times.initial_s
        self._first_failure: float | None = None
        self._stop_made = False

    def next_delay(self) -> float:
        """Seconds to wait before retrying the read that just failed."""
        times = self._times
        delay, self._next_s = self._next_s, min(times.max_s, 2 * self._next_s)
        now = self._clock()
        if self._first_failure is None:
            self._first_failure = now
        elapsed = now - self._first_failure
        if not self._stop_made and elapsed + delay > times.mandatory_stop_s:
            self._stop_made = True
            delay = times.mandatory_stop_s - elapsed
        return max(times.initial_s, delay)
