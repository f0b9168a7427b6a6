"""A broker chore run every N seconds (retention, expiry, quota and compaction checks)."""

from __future__ import annotations

import asyncio
import logging
from typing import AsyncIterator, Awaitable, Callable, Iterable, TypeVar

from log_limits.repeats import RepeatLimitedLog
from managed_ledger.errors import MetadataSessionLostError

log = logging.getLogger(__name__)
_repeats = RepeatLimitedLog(log)

T = TypeVar("T")

#: Items a chore handles before it lets the loop run: a pass over 100,000 topics made in one
#: callback would hold every client's request for its whole length.
TURN = 500


async def in_turns(items: Iterable[T]) -> AsyncIterator[T]:
    """Yield `items`, giving the event loop a turn after every TURN of them."""
    for count, item in enumerate(items, 1):
        yield item
        if count % TURN == 0:
            await asyncio.sleep(0)


class PeriodicTask:
    """Run `chore` every `interval_s` seconds on the loop until stopped; a failing round is
    logged and the next one runs anyway, so one bad topic cannot stop the chore. A round that
    meets the metadata store away (ZooKeeper down or the session lost) logs one line per
    interval, not a traceback."""

    def __init__(self, name: str, interval_s: float, chore: Callable[[], Awaitable[None]]) -> None:
        self.name = name
        self.interval_s = interval_s
        self._chore = chore
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self.interval_s > 0 and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self._chore()
            except MetadataSessionLostError as exc:   # expected while ZooKeeper is away: one line
                _repeats.warning(self.name, "%s skipped: %s", self.name, exc)
            except Exception:
                log.exception("%s failed; trying again in %.0f s", self.name, self.interval_s)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
