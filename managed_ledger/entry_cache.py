"""The entry cache for tailing reads, shared by every managed ledger of a factory.

Entries go in as their adds complete and leave oldest-first once the cache passes its byte
budget (managedLedgerCacheSizeMB), so consumers that keep up with producers never touch disk.
Ledger ids are unique across managed ledgers, so a Position alone is the key. It is stored as a
plain tuple, which equals and hashes as the Position does: the garbage collector stops tracking
a tuple of ints, but scans every named tuple on each full collection (a full cache holds
hundreds of thousands, and each scan stalled the loop for ~100 ms).
"""

from __future__ import annotations

from collections import OrderedDict

from .position import Position


class EntryCache:
    """Bounded, insertion-ordered map of recently added entries."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._entries: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self._size = 0
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
        self._entries[tuple(position)] = data
        self._size += len(data)
        while self._size > self._max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._size -= len(evicted)

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
