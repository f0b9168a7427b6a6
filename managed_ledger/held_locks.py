"""Locks that exist only while held or awaited.

A broker holds thousands of topics, managed ledgers and cursors, each serializing a few rare
operations (making a cursor, persisting metadata, a flush). An idle asyncio.Lock each would cost
some 100 bytes a holder; a LockTable keeps a holder's lock only from its first acquire to its
last release.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import AsyncIterator


class LockTable:
    __slots__ = ("_locks",)

    def __init__(self) -> None:
        self._locks: dict[object, list] = {}   # holder -> [its lock, tasks holding or waiting]

    @contextlib.asynccontextmanager
    async def held(self, holder: object) -> AsyncIterator[None]:
        entry = self._locks.get(holder)
        if entry is None:
            entry = self._locks[holder] = [asyncio.Lock(), 0]
        entry[1] += 1
        try:
            async with entry[0]:
                yield
        finally:
            entry[1] -= 1
            if not entry[1]:
                del self._locks[holder]

    def __len__(self) -> int:
        return len(self._locks)
