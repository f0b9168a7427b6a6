"""An action run in the background one pass at a time: asking again while a pass runs makes
exactly one more pass after it, however often it was asked (trimming is asked for by every
cursor write and rollover, and its passes must not overlap).

The action is a function of its owner (an unbound method and its object), not a bound method: a
bound method is an 80-byte object per topic, kept for the topic's life."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable, Generic, TypeVar

Owner = TypeVar("Owner")


class CoalescedTask(Generic[Owner]):
    __slots__ = ("_action", "_again", "_owner", "_stopped", "_task")

    def __init__(self, action: Callable[[Owner], Awaitable[Any]], owner: Owner) -> None:
        self._action = action
        self._owner = owner
        self._task: asyncio.Task | None = None
        self._again = False
        self._stopped = False

    def request(self) -> None:
        if self._stopped:
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def run_now(self) -> None:
        """Request a pass and wait until the passes in progress are done."""
        self.request()
        await self.wait()

    async def stop(self) -> None:
        """No more passes; wait for the one running."""
        self._stopped = True
        await self.wait()

    async def wait(self) -> None:
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        self._again = True
        while self._again and not self._stopped:
            self._again = False
            await self._action(self._owner)
