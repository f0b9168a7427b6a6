"""The entry cache for tailing reads, shared by every managed ledger of a factory.

As in Pulsar, a managed ledger puts an added entry here only while it has active cursors
(consumers that keep up, see cursor.py), and entries leave once they are older than
managedLedgerCacheEvictionTimeThresholdMillis (checked every managedLedgerCacheEvictionIntervalMs,
while the cache holds anything) or oldest-first once the cache passes its byte budget
(managedLedgerCacheSizeMB). A consumer that keeps up reads entries a few ms old, so it still
never touches disk; a flood nobody reads (or a reader far behind) no longer keeps the budget
resident.

Ledger ids are unique across managed ledgers, so a Position alone is the key. It is stored as a
plain tuple, which equals and hashes as the Position does: the garbage collector stops tracking
a tuple of ints, but scans every named tuple on each full collection (a full cache holds
hundreds of thousands, and each scan stalled the loop for ~100 ms). Ages are kept per tick, not
per entry: each tick closes the slot of the keys added since the previous one, so an add reads
no clock.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

from .position import Position

Key = tuple[int, int]


class EntryCache:
    """Bounded map of recently added entries, evicted by age and by size, oldest first."""

    def __init__(self, max_bytes: int, eviction_interval_ms: float = 10,
                 eviction_threshold_ms: float = 1000) -> None:
        self._max_bytes = max_bytes
        self._interval = eviction_interval_ms / 1000
        self._threshold = eviction_threshold_ms / 1000
        self._entries: dict[Key, bytes] = {}
        self._size = 0
        #: Keys in insertion order: closed slots (closed at, keys), then the open one. Keys of
        #: invalidated entries stay until their slot goes (they are skipped then).
        self._slots: deque[tuple[float, list[Key]]] = deque()
        self._open: list[Key] = []
        #: Keys of the oldest slot (or the open one, without closed slots) evicted by size.
        self._front = 0
        self._timer: asyncio.TimerHandle | None = None
        #: Lookups that found / missed their entry, for metrics.
        self.hits = 0
        self.misses = 0

    @property
    def size(self) -> int:
        return self._size

    def add(self, position: Position, data: bytes) -> None:
        """Cache a just-appended entry (its position is new: nothing to replace)."""
        if len(data) > self._max_bytes:
            return
        key = tuple(position)
        self._entries[key] = data
        self._open.append(key)
        self._size += len(data)
        while self._size > self._max_bytes:
            self._evict_oldest()
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._interval, self._tick)

    def get(self, position: Position) -> bytes | None:
        data = self._entries.get(position)
        if data is None:
            self.misses += 1
        else:
            self.hits += 1
        return data

    def invalidate_ledger(self, ledger_id: int) -> None:
        for key in [key for key in self._entries if key[0] == ledger_id]:
            self._size -= len(self._entries.pop(key))

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._entries.clear()
        self._slots.clear()
        self._open = []
        self._front = self._size = 0

    def _evict_oldest(self) -> None:
        keys = self._slots[0][1] if self._slots else self._open
        key = keys[self._front]
        self._front += 1
        if self._front == len(keys):
            if self._slots:
                self._slots.popleft()
            else:
                self._open = []
            self._front = 0
        data = self._entries.pop(key, None)
        if data is not None:
            self._size -= len(data)

    def _tick(self) -> None:
        """Close the open slot, drop the slots closed longer than the threshold ago."""
        now = time.monotonic()
        if self._open:
            self._slots.append((now, self._open))
            self._open = []
        cutoff = now - self._threshold
        entries = self._entries
        while self._slots and self._slots[0][0] <= cutoff:
            keys = self._slots.popleft()[1]
            for key in keys[self._front:]:
                data = entries.pop(key, None)
                if data is not None:
                    self._size -= len(data)
            self._front = 0
        self._timer = asyncio.get_running_loop().call_later(self._interval, self._tick) \
            if self._slots else None
