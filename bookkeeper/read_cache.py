"""Entries read ahead from the entry logs, so a sequential reader finds the next ones in memory.

As BookKeeper's DbLedgerStorage read-ahead cache: a read that continues a ledger where the last
read of it stopped fetches the following entries too, in the same trip to the read pool, and
keeps them here until asked for, once: the read that takes an entry drops it (the reader has
moved on; kept, a catch-up left the whole budget resident after it ended). A catch-up read of a
backlog larger than the managed ledger's cache then costs one pool hop per READ_AHEAD_BYTES
instead of one per read, and the next entries are answered on the loop. Oldest entries leave
first past the byte budget. Callers hold the storage lock.
"""

from __future__ import annotations

from collections import OrderedDict

#: How far past a sequential read the storage reads ahead (bytes of entry data).
READ_AHEAD_BYTES = 2 * 1024 * 1024
#: Most entries one read-ahead fetches (small entries: bounded by count, not bytes).
READ_AHEAD_ENTRIES = 500
#: Bytes of read-ahead entries kept over all ledgers.
READ_CACHE_BYTES = 16 * 1024 * 1024
#: Ledgers whose last read position is remembered (to tell sequential reads from jumps).
_TRACKED_LEDGERS = 1024


class ReadCache:
    """(ledger, entry) -> data of entries read ahead, bounded in bytes."""

    def __init__(self, max_bytes: int = READ_CACHE_BYTES) -> None:
        self._max_bytes = max_bytes
        self._entries: OrderedDict[tuple[int, int], bytes] = OrderedDict()
        self._size = 0
        self._read_to: OrderedDict[int, int] = OrderedDict()

    @property
    def size(self) -> int:
        return self._size

    def take(self, ledger_id: int, entry_id: int) -> bytes | None:
        """The entry, if it was read ahead; it leaves the cache."""
        data = self._entries.pop((ledger_id, entry_id), None)
        if data is not None:
            self._size -= len(data)
        return data

    def is_sequential(self, ledger_id: int, first: int) -> bool:
        """Does a read starting at ``first`` continue the last read of this ledger?"""
        return self._read_to.get(ledger_id) == first - 1

    def read_to(self, ledger_id: int, last: int) -> None:
        """Entries up to ``last`` were read (asked for or ahead) from the entry logs."""
        self._read_to[ledger_id] = last
        self._read_to.move_to_end(ledger_id)
        if len(self._read_to) > _TRACKED_LEDGERS:
            self._read_to.popitem(last=False)

    def put(self, ledger_id: int, entry_id: int, data: bytes) -> None:
        if len(data) > self._max_bytes:
            return
        previous = self._entries.pop((ledger_id, entry_id), None)
        if previous is not None:
            self._size -= len(previous)
        self._entries[(ledger_id, entry_id)] = data
        self._size += len(data)
        while self._size > self._max_bytes:
            _, evicted = self._entries.popitem(last=False)
            self._size -= len(evicted)

    def drop_ledger(self, ledger_id: int) -> None:
        self._read_to.pop(ledger_id, None)
        for key in [key for key in self._entries if key[0] == ledger_id]:
            self._size -= len(self._entries.pop(key))
