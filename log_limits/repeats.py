"""One line per distinct failure per interval.

A condition the system expects (a bookie down, so every add and every producer re-creation
fails) repeats as fast as clients retry: hundreds of identical lines a minute hide everything
else in the log. ``RepeatLimitedLog`` wraps a module's logger: the first line for a key is
written at once; repeats of that key within the interval are only counted, and the next line
written for it after the interval says how many were held back. The caller picks the key that
makes two failures "the same" (usually the error's class and text, not the topic or request).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Hashable

INTERVAL_S = 10.0
MAX_KEYS = 1024   # keys remembered at once (the oldest go first), so memory stays bounded


@dataclass(slots=True)
class _Logged:
    at: float
    held_back: int = 0


class RepeatLimitedLog:
    def __init__(self, logger: logging.Logger, interval_s: float = INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._interval_s = interval_s
        self._clock = clock
        self._logged: dict[Hashable, _Logged] = {}   # in the order last written

    def warning(self, key: Hashable, message: str, *args: object) -> None:
        self.log(logging.WARNING, key, message, *args)

    def error(self, key: Hashable, message: str, *args: object, exc_info: BaseException | None = None) -> None:
        self.log(logging.ERROR, key, message, *args, exc_info=exc_info)

    def log(self, level: int, key: Hashable, message: str, *args: object,
            exc_info: BaseException | None = None) -> None:
        if not self._logger.isEnabledFor(level):
            return
        held_back = self.admit(key)
        if held_back is None:
            return
        if held_back:
            message += " (and %d more like it in the %.0f s before)"
            args = (*args, *held_back)
        self._logger.log(level, message, *args, exc_info=exc_info)

    def admit(self, key: Hashable) -> tuple[int, float] | tuple[()] | None:
        """None to hold this line back; else () or (repeats held back, over seconds)."""
        now = self._clock()
        last = self._logged.pop(key, None)
        if last is not None and now - last.at < self._interval_s:
            last.held_back += 1
            self._logged[key] = last
            return None
        self._forget_oldest()
        self._logged[key] = _Logged(now)
        return (last.held_back, now - last.at) if last is not None and last.held_back else ()

    def _forget_oldest(self) -> None:
        while len(self._logged) >= MAX_KEYS:
            del self._logged[next(iter(self._logged))]


class RepeatFilter(logging.Filter):
    """The same limit for a library's logger we do not call ourselves (kazoo's reconnection
    attempts, a line each every fraction of a second while ZooKeeper is away): a record
    repeating one already written (same logger, template and arguments) within the interval
    is dropped, and the next one written says how many were."""

    def __init__(self, interval_s: float = INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._limit = RepeatLimitedLog(logging.getLogger(__name__), interval_s, clock)

    def filter(self, record: logging.LogRecord) -> bool:
        held_back = self._limit.admit((record.name, record.levelno, record.msg, repr(record.args)))
        if held_back is None:
            return False
        if held_back and isinstance(record.args, tuple):
            record.msg = f"{record.msg} (and %d more like it in the %.0f s before)"
            record.args = (*record.args, *held_back)
        return True
