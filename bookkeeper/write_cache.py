"""The write cache: entries durable in the journal but not yet in an entry log.

Group completions put entries here (on the event loop) right after the journal fsync; a
checkpoint swaps the cache for an empty one and the storage thread writes the old one out,
sorted by ledger so that each ledger's entries sit together in the log. Until the index points
at the written copies, reads (tailing or not) are served from here.
"""

from __future__ import annotations

from array import array
from typing import Callable, Iterator

from .give_way import STEP_ENTRIES


class CachedLedger:
    """A contiguous run of one ledger's entries, from ``first_entry_id``, with the CRCs the
    journal computed for their records (the flush writes the same records to the entry log)."""

    __slots__ = ("first_entry_id", "entries", "crcs", "total_size")

    def __init__(self, first_entry_id: int) -> None:
        self.first_entry_id = first_entry_id
        self.entries: list[bytes] = []
        self.crcs = array("I")
        self.total_size = 0

    @property
    def last_entry_id(self) -> int:
        return self.first_entry_id + len(self.entries) - 1


class WriteCache:
    def __init__(self) -> None:
        self._ledgers: dict[int, CachedLedger] = {}
        #: Bytes of entry data held.
        self.size = 0

    @property
    def is_empty(self) -> bool:
        return not self._ledgers

    def put(self, ledger_id: int, first_entry_id: int, entries: list[bytes], crcs: array) -> None:
        """Hold the next entries of a ledger (the caller checked they come next)."""
        cached = self._ledgers.get(ledger_id)
        if cached is None:
            cached = self._ledgers[ledger_id] = CachedLedger(first_entry_id)
        cached.entries += entries
        cached.crcs += crcs
        size = sum(map(len, entries))
        cached.total_size += size
        self.size += size

    def get(self, ledger_id: int) -> CachedLedger | None:
        return self._ledgers.get(ledger_id)

    def entry(self, ledger_id: int, entry_id: int) -> bytes | None:
        cached = self._ledgers.get(ledger_id)
        if cached is None or not cached.first_entry_id <= entry_id <= cached.last_entry_id:
            return None
        return cached.entries[entry_id - cached.first_entry_id]

    def clear(self, pause: Callable[[], None] | None = None) -> None:
        """Free the entries, a step at a time with ``pause`` between (freeing a full cache at
        once holds the interpreter for several ms)."""
        for cached in self._ledgers.values():
            while cached.entries:
                del cached.entries[-STEP_ENTRIES:]
                if pause is not None:
                    pause()
        self._ledgers = {}
        self.size = 0

    def drop(self, ledger_id: int) -> None:
        cached = self._ledgers.pop(ledger_id, None)
        if cached is not None:
            self.size -= cached.total_size

    def ledgers_in_order(self) -> Iterator[tuple[int, CachedLedger]]:
        for ledger_id in sorted(self._ledgers):
            yield ledger_id, self._ledgers[ledger_id]
