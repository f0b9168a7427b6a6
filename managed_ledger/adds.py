"""Appends in flight: the callback an append completes with, and the count termination waits on.

The SEND path appends with a callback rather than a future (a future costs a done-callback and
a loop handle per message); ``append`` wraps the same path in a future for everyone else.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable

from .position import Position

#: Called once a run of appends completes: (its first position, None) when all of it is
#: durable, else (None, error).
AddCallback = Callable[[Position | None, BaseException | None], None]


@dataclass(slots=True)
class QueuedAdd:
    """A run of adds waiting for a writable ledger (Pulsar's OpAddEntry before it is sent)."""

    entries: list[bytes]
    on_done: AddCallback
    started: float


class InFlightAdds:
    """Counts appends not completed yet; ``drained()`` waits until there are none."""

    __slots__ = ("_waiters", "count")

    def __init__(self) -> None:
        self.count = 0
        self._waiters: list[asyncio.Future[None]] | tuple[()] = ()   # a list once one waits (memory)

    def completed(self, count: int) -> None:
        self.count -= count
        if not self.count and self._waiters:
            waiters, self._waiters = self._waiters, ()
            for waiter in waiters:
                settle(waiter, None, None)

    async def drained(self) -> None:
        if self.count:
            if not self._waiters:
                self._waiters = []
            self._waiters.append(asyncio.get_running_loop().create_future())
            await self._waiters[-1]


def settle(future: asyncio.Future, result: object, error: BaseException | None) -> None:
    """Complete future with result or error, unless it is already done (cancelled)."""
    if not future.done():
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)
